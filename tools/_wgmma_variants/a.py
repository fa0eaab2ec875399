"""Variant (a) of Hopper attention in Gluon (tools/probe_attention_wgmma.py): S_j = Q K_j^T and O
+= P_{j-1} V_{j-1} issued together, then wait for S_j (one group left), the softmax of S_j, wait
for P V, rescale O. With NANOSLEEP_BEFORE_WAIT it is variant (h) (tools/_wgmma_variants/h.py).

A diagnostic, not adopted: see the probe's docstring for what was measured.
"""

from __future__ import annotations

from tools._gluon_hopper import (
    fence_async_shared,
    gl,
    gluon_jit,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)


@gluon_jit
def attention_wgmma_kernel(
    q_desc, k_desc, v_desc, o_desc,  # TMA descriptors over (H, N, d): blocks (1, BLOCK_M | BLOCK_N, d)
    n_ctx, qk_scale,
    HEAD_DIM: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
    IS_CAUSAL: gl.constexpr, STAGES: gl.constexpr, num_warps: gl.constexpr,
    NANOSLEEP_BEFORE_WAIT: gl.constexpr,  # variant (h): see below
):
    dtype: gl.constexpr = q_desc.dtype
    # Accumulator layouts of the two products: warps stacked along the rows (16 rows per warp,
    # 64 per warpgroup), one instruction spanning the whole width.
    S_LAYOUT: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                      instr_shape=[16, BLOCK_N, 16])
    O_LAYOUT: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                      instr_shape=[16, HEAD_DIM, 16])
    P_LAYOUT: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=O_LAYOUT, k_width=2)
    ROW_S: gl.constexpr = gl.SliceLayout(1, S_LAYOUT)
    ROW_O: gl.constexpr = gl.SliceLayout(1, O_LAYOUT)

    head = gl.program_id(1)
    if IS_CAUSAL:
        start_m = gl.num_programs(0) - 1 - gl.program_id(0)
    else:
        start_m = gl.program_id(0)
    row0 = start_m * BLOCK_M

    q_smem = gl.allocate_shared_memory(dtype, [1, BLOCK_M, HEAD_DIM], q_desc.layout)
    k_smem = gl.allocate_shared_memory(dtype, [STAGES, 1, BLOCK_N, HEAD_DIM], k_desc.layout)
    v_smem = gl.allocate_shared_memory(dtype, [STAGES, 1, BLOCK_N, HEAD_DIM], v_desc.layout)
    q_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    k_bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    mbarrier.init(q_bar, count=1)
    for s in gl.static_range(STAGES):
        mbarrier.init(k_bars.index(s), count=1)
        mbarrier.init(v_bars.index(s), count=1)

    if IS_CAUSAL:
        hi = gl.minimum(row0 + BLOCK_M, n_ctx)
        mask_from = row0  # key blocks reaching past the first row need the causal mask
    else:
        hi = n_ctx
        mask_from = (n_ctx // BLOCK_N) * BLOCK_N  # only the ragged last block needs a mask
    n_blocks = gl.cdiv(hi, BLOCK_N)

    # Prologue: Q and the first STAGES key and value blocks are in flight at once.
    mbarrier.expect(q_bar, q_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(q_desc, [head, row0, 0], q_bar, q_smem)
    for s in gl.static_range(STAGES):
        load = s < n_blocks
        mbarrier.expect(k_bars.index(s), k_desc.block_type.nbytes, pred=load)
        tma.async_copy_global_to_shared(k_desc, [head, s * BLOCK_N, 0], k_bars.index(s),
                                        k_smem.index(s), pred=load)
        mbarrier.expect(v_bars.index(s), v_desc.block_type.nbytes, pred=load)
        tma.async_copy_global_to_shared(v_desc, [head, s * BLOCK_N, 0], v_bars.index(s),
                                        v_smem.index(s), pred=load)

    q_tile = q_smem.reshape([BLOCK_M, HEAD_DIM])
    cols = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, S_LAYOUT))
    rows = row0 + gl.arange(0, BLOCK_M, layout=ROW_S)
    zero_s = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, S_LAYOUT)

    # Block 0: scores, first statistics and probabilities (nothing to overlap with yet).
    mbarrier.wait(q_bar, 0)
    mbarrier.wait(k_bars.index(0), 0)
    s_tok = warpgroup_mma(q_tile, k_smem.index(0).reshape([BLOCK_N, HEAD_DIM]).permute((1, 0)),
                          zero_s, use_acc=False, is_async=True)
    s = warpgroup_mma_wait(0, deps=[s_tok])
    if BLOCK_N > mask_from:
        keep = cols[None, :] < n_ctx
        if IS_CAUSAL:
            keep = keep & (rows[:, None] >= cols[None, :])
        s = gl.where(keep, s, -float("inf"))
    # K_0 is read by every warp: its stage takes block STAGES.
    gl.thread_barrier()
    mbarrier.expect(k_bars.index(0), k_desc.block_type.nbytes, pred=STAGES < n_blocks)
    tma.async_copy_global_to_shared(k_desc, [head, STAGES * BLOCK_N, 0], k_bars.index(0),
                                    k_smem.index(0), pred=STAGES < n_blocks)
    m_i = gl.max(s, axis=1) * qk_scale
    p = gl.exp2(s * qk_scale - m_i[:, None])
    l_i = gl.sum(p, axis=1)
    acc = gl.zeros([BLOCK_M, HEAD_DIM], gl.float32, O_LAYOUT)

    # Steady state, block j: issue S_j = Q K_j^T and O += P_{j-1} V_{j-1} together; the
    # softmax of S_j runs while the tensor cores still work on P_{j-1} V_{j-1}.
    for j in range(1, n_blocks):
        stage = j % STAGES
        prev = (j - 1) % STAGES
        mbarrier.wait(k_bars.index(stage), (j // STAGES) & 1)
        s_tok = warpgroup_mma(q_tile, k_smem.index(stage).reshape([BLOCK_N, HEAD_DIM]).permute((1, 0)),
                              zero_s, use_acc=False, is_async=True)
        mbarrier.wait(v_bars.index(prev), ((j - 1) // STAGES) & 1)
        p_op = gl.convert_layout(p.to(dtype), P_LAYOUT)
        o_tok = warpgroup_mma(p_op, v_smem.index(prev).reshape([BLOCK_N, HEAD_DIM]), acc,
                              is_async=True)
        s = warpgroup_mma_wait(1, deps=[s_tok])
        start_n = j * BLOCK_N
        if start_n + BLOCK_N > mask_from:
            keep = (start_n + cols)[None, :] < n_ctx
            if IS_CAUSAL:
                keep = keep & (rows[:, None] >= (start_n + cols)[None, :])
            s = gl.where(keep, s, -float("inf"))
        m_new = gl.maximum(m_i, gl.max(s, axis=1) * qk_scale)
        alpha = gl.exp2(m_i - m_new)
        p = gl.exp2(s * qk_scale - m_new[:, None])
        l_i = l_i * alpha + gl.sum(p, axis=1)
        m_i = m_new
        if NANOSLEEP_BEFORE_WAIT:
            # A side-effecting instruction between the softmax and the wait: ptxas does not
            # move the wait above it, so the exponentials stay ahead of the wait (without it,
            # ptxas places the wait right after the previous one and the overlap is lost).
            l_i = gl.inline_asm_elementwise("nanosleep.u32 0;\n mov.f32 $0, $1;", "=f,f",
                                            [l_i], dtype=gl.float32, is_pure=False, pack=1)
        acc, p_op = warpgroup_mma_wait(0, deps=[o_tok, p_op])
        acc = acc * gl.convert_layout(alpha, ROW_O)[:, None]
        # K_j and V_{j-1} are read: every warp is past them before their stages are refilled.
        gl.thread_barrier()
        nxt = j + STAGES
        load = nxt < n_blocks
        mbarrier.expect(k_bars.index(stage), k_desc.block_type.nbytes, pred=load)
        tma.async_copy_global_to_shared(k_desc, [head, nxt * BLOCK_N, 0], k_bars.index(stage),
                                        k_smem.index(stage), pred=load)
        nxt_v = j - 1 + STAGES
        load_v = nxt_v < n_blocks
        mbarrier.expect(v_bars.index(prev), v_desc.block_type.nbytes, pred=load_v)
        tma.async_copy_global_to_shared(v_desc, [head, nxt_v * BLOCK_N, 0], v_bars.index(prev),
                                        v_smem.index(prev), pred=load_v)

    # Epilogue: the last block's P V, then one division per row.
    last = (n_blocks - 1) % STAGES
    mbarrier.wait(v_bars.index(last), ((n_blocks - 1) // STAGES) & 1)
    p_op = gl.convert_layout(p.to(dtype), P_LAYOUT)
    o_tok = warpgroup_mma(p_op, v_smem.index(last).reshape([BLOCK_N, HEAD_DIM]), acc,
                          is_async=True)
    acc, p_op = warpgroup_mma_wait(0, deps=[o_tok, p_op])
    out = acc / gl.convert_layout(l_i, ROW_O)[:, None]

    mbarrier.invalidate(q_bar)
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(k_bars.index(s))
        mbarrier.invalidate(v_bars.index(s))
    # Q's shared memory holds the output tile on its way out (same block shape and layout).
    q_smem.reshape([BLOCK_M, HEAD_DIM]).store(out.to(dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(o_desc, [head, row0, 0], q_smem)
    tma.store_wait(0)


CONSTEXPRS = {"NANOSLEEP_BEFORE_WAIT": False}  # what the probe passes for this variant
