"""Variant (r) of Hopper attention in Gluon (tools/probe_attention_wgmma.py): the reference's
warp-specialized kernel (references/_attention_hopper.py) with one "empty" barrier per ring
slot instead of two: a consumer hands K_{j-1} and V_{j-1} back together, after P_{j-1} V_{j-1},
so each key block costs a warpgroup one arrive (one warpgroup-wide bar.sync and one barrier
operation) instead of two. At d = 64 a key block's work is half that at d = 128, so such fixed
costs weigh twice as much. K_j is then refilled one block later than in the reference, hence
3 stages as well as 2.

A diagnostic, not adopted.
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
                    kv_empty, head, row0, n_blocks):
    """One warp: each consumer's Q rows, then K_j and V_j into the ring as slots come free."""
    ROWS: gl.constexpr = q_desc.block_type.shape[1]
    GROUPS: gl.constexpr = q_smem.type.shape[0]
    BLOCK_N: gl.constexpr = k_desc.block_type.shape[1]
    STAGES: gl.constexpr = k_smem.type.shape[0]
    for g in gl.static_range(GROUPS):
        mbarrier.expect(q_bars.index(g), q_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(q_desc, [head, row0 + g * ROWS, 0], q_bars.index(g),
                                        q_smem.index(g))
    for j in range(n_blocks):
        stage = j % STAGES
        phase = (j // STAGES) & 1
        # "empty" barriers start with their previous phase complete: the first round passes.
        mbarrier.wait(kv_empty.index(stage), phase ^ 1)
        mbarrier.expect(k_ready.index(stage), k_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(k_desc, [head, j * BLOCK_N, 0], k_ready.index(stage),
                                        k_smem.index(stage))
        mbarrier.expect(v_ready.index(stage), v_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(v_desc, [head, j * BLOCK_N, 0], v_ready.index(stage),
                                        v_smem.index(stage))


@gluon_jit
def _consume(g: gl.constexpr, q_desc, k_desc, o_desc, q_smem, k_smem, v_smem, q_bars, k_ready,
             v_ready, kv_empty, head, row0, n_ctx, n_blocks, mask_from, diag_shift, qk_scale):
    """Consumer warpgroup g: its 64 rows (row0 + 64 g ...) against every key block."""
    dtype: gl.constexpr = q_desc.dtype
    ROWS: gl.constexpr = q_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = k_desc.block_type.shape[1]
    HEAD_DIM: gl.constexpr = k_desc.block_type.shape[2]
    STAGES: gl.constexpr = k_smem.type.shape[0]
    # Hopper MMA accumulator layouts (4 warps stacked on rows, 16 rows each); P is fed to the
    # second product from registers, as the A operand.
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

    # Block 0: S_0 and its softmax, with no P V yet to overlap.
    mbarrier.wait(q_bars.index(g), 0)
    mbarrier.wait(k_ready.index(0), 0)
    s_tok = warpgroup_mma(q_tile, k_smem.index(0).reshape([BLOCK_N, HEAD_DIM]).permute((1, 0)),
                          zero_s, use_acc=False, is_async=True)
    s = warpgroup_mma_wait(0, deps=[s_tok])
    if BLOCK_N > mask_from:
        keep = (cols < n_ctx)[None, :] & (cols[None, :] <= rows[:, None] + diag_shift)
        s = gl.where(keep, s, -float("inf"))
    m_i = gl.max(s, axis=1) * qk_scale  # running max, log2 units
    p = gl.exp2(s * qk_scale - m_i[:, None])
    l_i = gl.sum(p, axis=1)  # running denominator
    acc = gl.zeros([ROWS, HEAD_DIM], gl.float32, O_LAYOUT)  # running numerator

    for j in range(1, n_blocks):
        stage = j % STAGES
        prev = (j - 1) % STAGES
        mbarrier.wait(k_ready.index(stage), (j // STAGES) & 1)
        s_tok = warpgroup_mma(q_tile,
                              k_smem.index(stage).reshape([BLOCK_N, HEAD_DIM]).permute((1, 0)),
                              zero_s, use_acc=False, is_async=True)
        mbarrier.wait(v_ready.index(prev), ((j - 1) // STAGES) & 1)
        p_op = gl.convert_layout(p.to(dtype), P_LAYOUT)
        o_tok = warpgroup_mma(p_op, v_smem.index(prev).reshape([BLOCK_N, HEAD_DIM]), acc,
                              is_async=True)
        s = warpgroup_mma_wait(1, deps=[s_tok])  # S_j is done; P V may still run
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
        # A side-effecting instruction, so that ptxas cannot hoist the next wait above the
        # softmax (l_i passes through it to pin it after the exponentials).
        l_i = gl.inline_asm_elementwise("nanosleep.u32 0;\n mov.f32 $0, $1;", "=f,f", [l_i],
                                        dtype=gl.float32, is_pure=False, pack=1)
        acc, p_op = warpgroup_mma_wait(0, deps=[o_tok, p_op])
        mbarrier.arrive(kv_empty.index(prev), count=1)  # K_{j-1} and V_{j-1} are read
        # Rescale the numerator by alpha, as the denominator was: both, or the answer is wrong.
        acc = acc * gl.convert_layout(alpha, ROW_O)[:, None]

    last = (n_blocks - 1) % STAGES
    mbarrier.wait(v_ready.index(last), ((n_blocks - 1) // STAGES) & 1)
    p_op = gl.convert_layout(p.to(dtype), P_LAYOUT)
    o_tok = warpgroup_mma(p_op, v_smem.index(last).reshape([BLOCK_N, HEAD_DIM]), acc,
                          is_async=True)
    acc, p_op = warpgroup_mma_wait(0, deps=[o_tok, p_op])
    mbarrier.arrive(kv_empty.index(last), count=1)
    out = acc / gl.convert_layout(l_i, ROW_O)[:, None]
    # This warpgroup's Q slot holds its output on the way out (Q is no longer needed).
    q_smem.index(g).reshape([ROWS, HEAD_DIM]).store(out.to(dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(o_desc, [head, row0 + g * ROWS, 0], q_smem.index(g))
    tma.store_wait(0)


@gluon_jit
def _consumer_1(q_desc, k_desc, o_desc, q_smem, k_smem, v_smem, q_bars, k_ready, v_ready,
                kv_empty, head, row0, n_ctx, n_blocks, mask_from, diag_shift, qk_scale):
    """Consumer warpgroup 1 (a partition is a function; warpgroup 0 is the default one)."""
    _consume(1, q_desc, k_desc, o_desc, q_smem, k_smem, v_smem, q_bars, k_ready, v_ready,
             kv_empty, head, row0, n_ctx, n_blocks, mask_from, diag_shift, qk_scale)


@gluon_jit
def attention_wgmma_kernel(
    q_desc, k_desc, v_desc, o_desc, n_ctx, qk_scale,
    HEAD_DIM: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
    IS_CAUSAL: gl.constexpr, STAGES: gl.constexpr, num_warps: gl.constexpr,
):
    dtype: gl.constexpr = q_desc.dtype
    ROWS: gl.constexpr = q_desc.block_type.shape[1]
    gl.static_assert(not IS_CAUSAL or BLOCK_N == BLOCK_M, "causal needs BLOCK_N == BLOCK_M")
    gl.static_assert(num_warps == 4, "the default partition is consumer warpgroup 0")
    head = gl.program_id(1)
    if IS_CAUSAL:
        # Bottom row blocks see the most keys: they start first (as in the lesson's kernel).
        start_m = gl.num_programs(0) - 1 - gl.program_id(0)
        row0 = start_m * BLOCK_M
        hi = gl.minimum(row0 + BLOCK_M, n_ctx)
        mask_from = row0  # only the diagonal block (the last) needs the causal mask
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
    kv_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for g in gl.static_range(2):
        mbarrier.init(q_bars.index(g), count=1)
    for s in gl.static_range(STAGES):
        mbarrier.init(k_ready.index(s), count=1)
        mbarrier.init(v_ready.index(s), count=1)
        mbarrier.init(kv_empty.index(s), count=2)  # both consumers hand a slot back

    consumer_args = (q_desc, k_desc, o_desc, q_smem, k_smem, v_smem, q_bars, k_ready, v_ready,
                     kv_empty, head, row0, n_ctx, n_blocks, mask_from, diag_shift, qk_scale)
    gl.warp_specialize([
        (_consume, (0,) + consumer_args),  # the default partition: this program's 4 warps
        (_consumer_1, consumer_args),
        (_load_partition, (q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bars, k_ready,
                           v_ready, kv_empty, head, row0, n_blocks)),
    ], [4, 1], [232, 24])  # warps and registers of consumer 1 and the loader (see MAXNREG)


SPLIT_Q = True  # q and o descriptors of 64 rows
MAXNREG = 168
TILES = {64: [(128, 128, 4, 2), (128, 128, 4, 3)], 128: [(128, 128, 4, 2)]}
