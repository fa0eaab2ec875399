"""Variant (w3) of Hopper attention in Gluon (tools/probe_attention_wgmma.py): the reference's
warp-specialized kernel (references/_attention_hopper.py, variant (w) adopted) with THREE
consumer warpgroups, 192 query rows per program, for d = 64. There a key block's softmax
(one exp2 per score) takes about as long on the SFU as its two products on the tensor cores,
so a third warpgroup gives the scheduler more softmax to run beside the products. Causal
works for any BLOCK_M here: the blocks from the program's first row on are masked, and a
warpgroup's rows skip nothing (keys right of its diagonal are masked, not skipped).

A diagnostic, not adopted.
"""

from __future__ import annotations

from references._attention_hopper import _consume, _load_partition
from tools._gluon_hopper import gl, gluon_jit, mbarrier


@gluon_jit
def _consumer_1(q_desc, k_desc, o_desc, q_smem, k_smem, v_smem, q_bars, k_ready, v_ready, k_empty,
                v_empty, head, row0, n_ctx, n_blocks, mask_from, diag_shift, qk_scale):
    _consume(1, q_desc, k_desc, o_desc, q_smem, k_smem, v_smem, q_bars, k_ready, v_ready, k_empty,
             v_empty, head, row0, n_ctx, n_blocks, mask_from, diag_shift, qk_scale)


@gluon_jit
def _consumer_2(q_desc, k_desc, o_desc, q_smem, k_smem, v_smem, q_bars, k_ready, v_ready, k_empty,
                v_empty, head, row0, n_ctx, n_blocks, mask_from, diag_shift, qk_scale):
    _consume(2, q_desc, k_desc, o_desc, q_smem, k_smem, v_smem, q_bars, k_ready, v_ready, k_empty,
             v_empty, head, row0, n_ctx, n_blocks, mask_from, diag_shift, qk_scale)


@gluon_jit
def attention_wgmma_kernel(
    q_desc, k_desc, v_desc, o_desc, n_ctx, qk_scale,
    HEAD_DIM: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
    IS_CAUSAL: gl.constexpr, STAGES: gl.constexpr, num_warps: gl.constexpr,
):
    gl.static_assert(BLOCK_M == 192, "variant (w3): three warpgroups of 64 rows")
    gl.static_assert(num_warps == 4, "variant (w3): the default partition is one warpgroup")
    dtype: gl.constexpr = q_desc.dtype
    ROWS: gl.constexpr = 64
    head = gl.program_id(1)
    if IS_CAUSAL:
        start_m = gl.num_programs(0) - 1 - gl.program_id(0)
        row0 = start_m * BLOCK_M
        hi = gl.minimum(row0 + BLOCK_M, n_ctx)
        mask_from = row0  # every block from the program's first row on may need the mask
        diag_shift = 0
    else:
        row0 = gl.program_id(0) * BLOCK_M
        hi = n_ctx
        mask_from = (n_ctx // BLOCK_N) * BLOCK_N
        diag_shift = n_ctx
    n_blocks = gl.cdiv(hi, BLOCK_N)

    q_smem = gl.allocate_shared_memory(dtype, [3, 1, ROWS, HEAD_DIM], q_desc.layout)
    k_smem = gl.allocate_shared_memory(dtype, [STAGES, 1, BLOCK_N, HEAD_DIM], k_desc.layout)
    v_smem = gl.allocate_shared_memory(dtype, [STAGES, 1, BLOCK_N, HEAD_DIM], v_desc.layout)
    q_bars = gl.allocate_shared_memory(gl.int64, [3, 1], mbarrier.MBarrierLayout())
    k_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for g in gl.static_range(3):
        mbarrier.init(q_bars.index(g), count=1)
    for s in gl.static_range(STAGES):
        mbarrier.init(k_ready.index(s), count=1)
        mbarrier.init(v_ready.index(s), count=1)
        mbarrier.init(k_empty.index(s), count=3)  # all three warpgroups hand a stage back
        mbarrier.init(v_empty.index(s), count=3)

    consumer_args = (q_desc, k_desc, o_desc, q_smem, k_smem, v_smem, q_bars, k_ready, v_ready,
                     k_empty, v_empty, head, row0, n_ctx, n_blocks, mask_from, diag_shift,
                     qk_scale)
    gl.warp_specialize([
        (_consume, (0,) + consumer_args),
        (_consumer_1, consumer_args),
        (_consumer_2, consumer_args),
        (_load_partition, (q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bars, k_ready,
                           v_ready, k_empty, v_empty, head, row0, n_blocks)),
    ], [4, 4, 1], [160, 160, 24])


SPLIT_Q = True  # q and o descriptors of 64 rows
MAXNREG = 128  # 16 warps (3 x 4 + the loader's warpgroup) x 32 x 128 = 64K registers
TILES = {64: [(192, 128, 4, 2), (192, 128, 4, 3), (192, 64, 4, 4)]}
