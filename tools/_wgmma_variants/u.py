"""Variant (u) of Hopper attention in Gluon (tools/probe_attention_wgmma.py): (c)'s step
function, with S_{j+1} = Q K_{j+1}^T issued right after S_j is waited for, before the softmax
of S_j, so that the softmax overlaps both P_{j-1} V_{j-1} and S_{j+1} on the tensor cores
(FlashAttention-3's intra-warpgroup pipelining), and the key loop unrolled by two. In (c)
ptxas serialized every product: with one step per iteration, the product in flight across
the loop's back edge needs a register copy, which reads its accumulator before the wait.
Unrolled by two, the two score tiles can take turns in two sets of registers with no copy.
The `nanosleep` of (h) keeps the wait for P V below the softmax.

A diagnostic, not adopted; written without a GPU: `sass` output only (see the probe).
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

    # Block 0: issue S_0 = Q K_0^T, then run step 0 (softmax only: no P V before it).
    mbarrier.wait(q_bar, 0)
    mbarrier.wait(k_bars.index(0), 0)
    s_tok = warpgroup_mma(q_tile, k_smem.index(0).reshape([BLOCK_N, HEAD_DIM]).permute((1, 0)),
                          gl.zeros([BLOCK_M, BLOCK_N], gl.float32, S_LAYOUT), use_acc=False,
                          is_async=True)
    acc = gl.zeros([BLOCK_M, HEAD_DIM], gl.float32, O_LAYOUT)
    m_i = gl.full([BLOCK_M], -float("inf"), gl.float32, ROW_S)
    l_i = gl.zeros([BLOCK_M], gl.float32, ROW_S)
    p_a = gl.zeros([BLOCK_M, BLOCK_N], dtype, P_LAYOUT)
    p_a, s_tok, acc, m_i, l_i = _wgmma_step(
        0, s_tok, p_a, acc, m_i, l_i, q_tile, k_smem, v_smem, k_bars, v_bars, k_desc, v_desc,
        head, rows, cols, n_ctx, n_blocks, mask_from, qk_scale, HEAD_DIM, BLOCK_N, IS_CAUSAL,
        STAGES, False, S_LAYOUT, P_LAYOUT, ROW_O)
    # Blocks 1 .. n_blocks - 1, two per iteration (see the module docstring), then the odd one.
    n_rest = n_blocks - 1
    for pair in range(n_rest // 2):
        j = 1 + 2 * pair
        p_a, s_tok, acc, m_i, l_i = _wgmma_step(
            j, s_tok, p_a, acc, m_i, l_i, q_tile, k_smem, v_smem, k_bars, v_bars, k_desc,
            v_desc, head, rows, cols, n_ctx, n_blocks, mask_from, qk_scale, HEAD_DIM, BLOCK_N,
            IS_CAUSAL, STAGES, True, S_LAYOUT, P_LAYOUT, ROW_O)
        p_a, s_tok, acc, m_i, l_i = _wgmma_step(
            j + 1, s_tok, p_a, acc, m_i, l_i, q_tile, k_smem, v_smem, k_bars, v_bars, k_desc,
            v_desc, head, rows, cols, n_ctx, n_blocks, mask_from, qk_scale, HEAD_DIM, BLOCK_N,
            IS_CAUSAL, STAGES, True, S_LAYOUT, P_LAYOUT, ROW_O)
    if n_rest % 2 == 1:
        p_a, s_tok, acc, m_i, l_i = _wgmma_step(
            n_blocks - 1, s_tok, p_a, acc, m_i, l_i, q_tile, k_smem, v_smem, k_bars, v_bars,
            k_desc, v_desc, head, rows, cols, n_ctx, n_blocks, mask_from, qk_scale, HEAD_DIM,
            BLOCK_N, IS_CAUSAL, STAGES, True, S_LAYOUT, P_LAYOUT, ROW_O)

    # Epilogue: the last block's P V (the S issued past the last block is discarded), then one
    # division per row.
    last = (n_blocks - 1) % STAGES
    mbarrier.wait(v_bars.index(last), ((n_blocks - 1) // STAGES) & 1)
    o_tok = warpgroup_mma(p_a, v_smem.index(last).reshape([BLOCK_N, HEAD_DIM]), acc,
                          is_async=True)
    acc, s_unused, p_a = warpgroup_mma_wait(0, deps=[o_tok, s_tok, p_a])
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


@gluon_jit
def _wgmma_step(j, s_tok, p_prev, acc, m_i, l_i, q_tile, k_smem, v_smem, k_bars, v_bars, k_desc,
                v_desc, head, rows, cols, n_ctx, n_blocks, mask_from, qk_scale,
                HEAD_DIM: gl.constexpr, BLOCK_N: gl.constexpr, IS_CAUSAL: gl.constexpr,
                STAGES: gl.constexpr, HAS_PREV: gl.constexpr, S_LAYOUT: gl.constexpr,
                P_LAYOUT: gl.constexpr, ROW_O: gl.constexpr):
    """Key block j. In flight on entry: S_j = Q K_j^T (s_tok). Issues O += P_{j-1} V_{j-1},
    waits for S_j, issues S_{j+1} (past the last block it reads a stale stage and is
    discarded), runs the softmax of S_j while the tensor cores work on both, and returns with
    S_{j+1} in flight. acc is returned in the scale of block j's running max, ready for
    P_j V_j."""
    dtype: gl.constexpr = k_desc.dtype
    stage = j % STAGES
    prev = (j - 1 + STAGES) % STAGES
    if HAS_PREV:
        mbarrier.wait(v_bars.index(prev), ((j - 1) // STAGES) & 1)
        o_tok = warpgroup_mma(p_prev, v_smem.index(prev).reshape([BLOCK_N, HEAD_DIM]), acc,
                              is_async=True)
        s = warpgroup_mma_wait(1, deps=[s_tok])
    else:
        s = warpgroup_mma_wait(0, deps=[s_tok])
    # S_{j+1} now, into registers of its own: the softmax below overlaps it.
    nxt = j + 1
    nxt_stage = nxt % STAGES
    mbarrier.wait(k_bars.index(nxt_stage), (nxt // STAGES) & 1, pred=nxt < n_blocks)
    s_tok = warpgroup_mma(q_tile,
                          k_smem.index(nxt_stage).reshape([BLOCK_N, HEAD_DIM]).permute((1, 0)),
                          gl.zeros_like(s), use_acc=False, is_async=True)
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
    p_next = gl.convert_layout(p.to(dtype), P_LAYOUT)
    if HAS_PREV:
        # (variant h) pins the wait below the softmax; P V done, S_{j+1} still in flight.
        l_i = gl.inline_asm_elementwise("nanosleep.u32 0;\n mov.f32 $0, $1;", "=f,f", [l_i],
                                        dtype=gl.float32, is_pure=False, pack=1)
        acc, p_prev = warpgroup_mma_wait(1, deps=[o_tok, p_prev])
    acc = acc * gl.convert_layout(alpha, ROW_O)[:, None]
    # K_j (and V_{j-1}) are read by every warp before their stages are refilled.
    gl.thread_barrier()
    refill = j + STAGES
    mbarrier.expect(k_bars.index(stage), k_desc.block_type.nbytes, pred=refill < n_blocks)
    tma.async_copy_global_to_shared(k_desc, [head, refill * BLOCK_N, 0], k_bars.index(stage),
                                    k_smem.index(stage), pred=refill < n_blocks)
    if HAS_PREV:
        refill_v = j - 1 + STAGES
        mbarrier.expect(v_bars.index(prev), v_desc.block_type.nbytes, pred=refill_v < n_blocks)
        tma.async_copy_global_to_shared(v_desc, [head, refill_v * BLOCK_N, 0],
                                        v_bars.index(prev), v_smem.index(prev),
                                        pred=refill_v < n_blocks)
    return p_next, s_tok, acc, m_new, l_i


TILES = {64: [(64, 128, 4, 2), (64, 128, 4, 3), (64, 64, 4, 3)],
         128: [(64, 64, 4, 3), (64, 128, 4, 2)]}
