"""Variant (w) of Hopper attention in Gluon (tools/probe_attention_wgmma.py): warp specialized.
A one-warp loader partition fills a ring of K and V stages; two consumer warpgroups, each
with its own 64 query rows, run the loop of variant (h) on the shared stages and hand each
stage back through an "empty" barrier that both must arrive on. No barrier across the whole
program inside the loop, so the two warpgroups drift apart and take turns on the tensor cores.
BLOCK_M is the rows of both warpgroups (128); causal needs BLOCK_N == BLOCK_M, so that the
diagonal is one key block, which both warpgroups mask.

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
def _load_partition(q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bars, k_ready, v_ready,
                    k_empty, v_empty, head, row0, n_blocks):
    """One warp: Q for both warpgroups, then K_j and V_j into the ring as stages come free."""
    ROWS: gl.constexpr = q_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = k_desc.block_type.shape[1]
    STAGES: gl.constexpr = k_smem.type.shape[0]
    for g in gl.static_range(2):
        mbarrier.expect(q_bars.index(g), q_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(q_desc, [head, row0 + g * ROWS, 0], q_bars.index(g),
                                        q_smem.index(g))
    for j in range(n_blocks):
        stage = j % STAGES
        phase = (j // STAGES) & 1
        # "empty" barriers start with their previous phase complete: the first round passes.
        mbarrier.wait(k_empty.index(stage), phase ^ 1)
        mbarrier.expect(k_ready.index(stage), k_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(k_desc, [head, j * BLOCK_N, 0], k_ready.index(stage),
                                        k_smem.index(stage))
        mbarrier.wait(v_empty.index(stage), phase ^ 1)
        mbarrier.expect(v_ready.index(stage), v_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(v_desc, [head, j * BLOCK_N, 0], v_ready.index(stage),
                                        v_smem.index(stage))


@gluon_jit
def _consume(g: gl.constexpr, q_desc, k_desc, o_desc, q_smem, k_smem, v_smem, q_bars, k_ready,
             v_ready, k_empty, v_empty, head, row0, n_ctx, n_blocks, mask_from, diag_shift,
             qk_scale):
    """One warpgroup: its 64 rows against every key block, as in variant (h)."""
    dtype: gl.constexpr = q_desc.dtype
    ROWS: gl.constexpr = q_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = k_desc.block_type.shape[1]
    HEAD_DIM: gl.constexpr = k_desc.block_type.shape[2]
    STAGES: gl.constexpr = k_smem.type.shape[0]
    S_LAYOUT: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                      instr_shape=[16, BLOCK_N, 16])
    O_LAYOUT: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                      instr_shape=[16, HEAD_DIM, 16])
    P_LAYOUT: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=O_LAYOUT, k_width=2)
    ROW_S: gl.constexpr = gl.SliceLayout(1, S_LAYOUT)
    ROW_O: gl.constexpr = gl.SliceLayout(1, O_LAYOUT)

    q_tile = q_smem.index(g).reshape([ROWS, HEAD_DIM])
    cols = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, S_LAYOUT))
    zero_s = gl.zeros([ROWS, BLOCK_N], gl.float32, S_LAYOUT)
    # Key j is kept when j < N and j <= row + diag_shift: diag_shift is 0 when causal and N
    # otherwise (one formula, no compile-time flag to pass into the partitions).
    rows = row0 + g * ROWS + gl.arange(0, ROWS, layout=ROW_S)

    mbarrier.wait(q_bars.index(g), 0)
    mbarrier.wait(k_ready.index(0), 0)
    s_tok = warpgroup_mma(q_tile, k_smem.index(0).reshape([BLOCK_N, HEAD_DIM]).permute((1, 0)),
                          zero_s, use_acc=False, is_async=True)
    s = warpgroup_mma_wait(0, deps=[s_tok])
    mbarrier.arrive(k_empty.index(0), count=1)
    if BLOCK_N > mask_from:
        keep = (cols < n_ctx)[None, :] & (cols[None, :] <= rows[:, None] + diag_shift)
        s = gl.where(keep, s, -float("inf"))
    m_i = gl.max(s, axis=1) * qk_scale
    p = gl.exp2(s * qk_scale - m_i[:, None])
    l_i = gl.sum(p, axis=1)
    acc = gl.zeros([ROWS, HEAD_DIM], gl.float32, O_LAYOUT)

    for j in range(1, n_blocks):
        stage = j % STAGES
        prev = (j - 1) % STAGES
        mbarrier.wait(k_ready.index(stage), (j // STAGES) & 1)
        s_tok = warpgroup_mma(q_tile, k_smem.index(stage).reshape([BLOCK_N, HEAD_DIM]).permute((1, 0)),
                              zero_s, use_acc=False, is_async=True)
        mbarrier.wait(v_ready.index(prev), ((j - 1) // STAGES) & 1)
        p_op = gl.convert_layout(p.to(dtype), P_LAYOUT)
        o_tok = warpgroup_mma(p_op, v_smem.index(prev).reshape([BLOCK_N, HEAD_DIM]), acc,
                              is_async=True)
        s = warpgroup_mma_wait(1, deps=[s_tok])
        mbarrier.arrive(k_empty.index(stage), count=1)  # K_j is read
        start_n = j * BLOCK_N
        if start_n + BLOCK_N > mask_from:
            keep = (((start_n + cols) < n_ctx)[None, :]
                    & ((start_n + cols)[None, :] <= rows[:, None] + diag_shift))
            s = gl.where(keep, s, -float("inf"))
        m_new = gl.maximum(m_i, gl.max(s, axis=1) * qk_scale)
        alpha = gl.exp2(m_i - m_new)
        p = gl.exp2(s * qk_scale - m_new[:, None])
        l_i = l_i * alpha + gl.sum(p, axis=1)
        m_i = m_new
        # (variant h) a side-effecting instruction keeps ptxas from hoisting the wait.
        l_i = gl.inline_asm_elementwise("nanosleep.u32 0;\n mov.f32 $0, $1;", "=f,f", [l_i],
                                        dtype=gl.float32, is_pure=False, pack=1)
        acc, p_op = warpgroup_mma_wait(0, deps=[o_tok, p_op])
        mbarrier.arrive(v_empty.index(prev), count=1)  # V_{j-1} is read
        acc = acc * gl.convert_layout(alpha, ROW_O)[:, None]

    last = (n_blocks - 1) % STAGES
    mbarrier.wait(v_ready.index(last), ((n_blocks - 1) // STAGES) & 1)
    p_op = gl.convert_layout(p.to(dtype), P_LAYOUT)
    o_tok = warpgroup_mma(p_op, v_smem.index(last).reshape([BLOCK_N, HEAD_DIM]), acc,
                          is_async=True)
    acc, p_op = warpgroup_mma_wait(0, deps=[o_tok, p_op])
    mbarrier.arrive(v_empty.index(last), count=1)
    out = acc / gl.convert_layout(l_i, ROW_O)[:, None]
    # This warpgroup's Q tile holds its output on the way out.
    q_smem.index(g).reshape([ROWS, HEAD_DIM]).store(out.to(dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(o_desc, [head, row0 + g * ROWS, 0], q_smem.index(g))
    tma.store_wait(0)


@gluon_jit
def _consumer_1(q_desc, k_desc, o_desc, q_smem, k_smem, v_smem, q_bars, k_ready, v_ready, k_empty,
                v_empty, head, row0, n_ctx, n_blocks, mask_from, diag_shift, qk_scale):
    _consume(1, q_desc, k_desc, o_desc, q_smem, k_smem, v_smem, q_bars, k_ready, v_ready, k_empty,
             v_empty, head, row0, n_ctx, n_blocks, mask_from, diag_shift, qk_scale)


@gluon_jit
def attention_wgmma_kernel(
    q_desc, k_desc, v_desc, o_desc,  # TMA descriptors over (H, N, d): q and o blocks of 64 rows
    n_ctx, qk_scale,
    HEAD_DIM: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
    IS_CAUSAL: gl.constexpr, STAGES: gl.constexpr, num_warps: gl.constexpr,
):
    gl.static_assert(not IS_CAUSAL or BLOCK_N == BLOCK_M,
                     "variant (w): causal needs BLOCK_N == BLOCK_M (one diagonal block)")
    gl.static_assert(num_warps == 4, "variant (w): the default partition is one warpgroup")
    dtype: gl.constexpr = q_desc.dtype
    ROWS: gl.constexpr = BLOCK_M // 2
    head = gl.program_id(1)
    if IS_CAUSAL:
        # Bottom row blocks see the most keys: they start first.
        start_m = gl.num_programs(0) - 1 - gl.program_id(0)
        row0 = start_m * BLOCK_M
        hi = gl.minimum(row0 + BLOCK_M, n_ctx)
        mask_from = row0  # the diagonal block (the last) needs the causal mask
        diag_shift = 0
    else:
        row0 = gl.program_id(0) * BLOCK_M
        hi = n_ctx
        mask_from = (n_ctx // BLOCK_N) * BLOCK_N  # only the ragged last block needs a mask
        diag_shift = n_ctx
    n_blocks = gl.cdiv(hi, BLOCK_N)

    q_smem = gl.allocate_shared_memory(dtype, [2, 1, ROWS, HEAD_DIM], q_desc.layout)
    k_smem = gl.allocate_shared_memory(dtype, [STAGES, 1, BLOCK_N, HEAD_DIM], k_desc.layout)
    v_smem = gl.allocate_shared_memory(dtype, [STAGES, 1, BLOCK_N, HEAD_DIM], v_desc.layout)
    q_bars = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    k_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for g in gl.static_range(2):
        mbarrier.init(q_bars.index(g), count=1)
    for s in gl.static_range(STAGES):
        mbarrier.init(k_ready.index(s), count=1)
        mbarrier.init(v_ready.index(s), count=1)
        mbarrier.init(k_empty.index(s), count=2)  # both warpgroups hand a stage back
        mbarrier.init(v_empty.index(s), count=2)

    consumer_args = (q_desc, k_desc, o_desc, q_smem, k_smem, v_smem, q_bars, k_ready, v_ready,
                     k_empty, v_empty, head, row0, n_ctx, n_blocks, mask_from, diag_shift,
                     qk_scale)
    gl.warp_specialize([
        (_consume, (0,) + consumer_args),
        (_consumer_1, consumer_args),
        (_load_partition, (q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bars, k_ready,
                           v_ready, k_empty, v_empty, head, row0, n_blocks)),
    ], [4, 1], [232, 24])


SPLIT_Q = True  # the launcher builds q and o descriptors of BLOCK_M // 2 rows
MAXNREG = 168  # 12 warps (4 + 4 + the loader's warpgroup) x 32 x 168 fits 64K registers
# (block_m, block_n, num_warps of the default partition, stages) the probe runs for this variant
TILES = {128: [(128, 128, 4, 2)], 64: [(128, 128, 4, 2)]}  # 3 and 4 stages: no faster
