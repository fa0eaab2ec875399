"""Variant (v2): v.py (FlashAttention-3-style pipelining of the reference Hopper kernel) at
d = 64 only (d = 128 is refused by a static_assert; TILES has the d = 64 entry only), with
the softmax split in two halves so that the warpgroup works while P V finishes. A
diagnostic, written and compiled without a GPU: never run, never timed.

What differs from v.py. v.py's step j: issue S_{j+1}, issue P_{j-1} V_{j-1}, the whole
softmax of S_j, wait(0) for both, O *= alpha_j: the warpgroup idles from the end of its
softmax until both products are done. Here the softmax is split: _row_max (mask, running
max m, alpha) and _exps (P = exp2(S scale - m), l), and the row-max half of S_{j+1} runs
between the two waits (nothing is in flight at the back edge, as in v.py):

    issue S_{j+1} = Q K_{j+1}^T         (async)
    issue O += P_{j-1} V_{j-1}          (async)
    exponentials of S_j -> P_j, l_j     (m_j, alpha_j were computed in the step before)
    wait(1): S_{j+1} only (the older group; P V runs on), hand K_{j+1} back
    mask and row max of S_{j+1} -> m_{j+1}, alpha_{j+1}    <- overlaps the end of P V
    wait(0): P V, hand V_{j-1} back, O *= alpha_j

Both halves end in a nanosleep (as v.py's softmax does), so ptxas keeps each wait below its
half. Same launch(), descriptors, loader and math otherwise (online softmax, the rescale of O
and l by alpha, masking via mask_from / diag_shift with the same run-time check, causal and
not, ragged N); block 0's row max runs after its wait, step 0 (exponentials of S_0, row max
of S_1) and step n_blocks - 1 (P V of the block before, exponentials) are peeled as in v.py.

ptxas (Triton 3.6, sm_90a, maxnreg 168, consumer registers 232; /tmp/compile_v.py), d = 64,
bf16 and fp16, causal and not: no warning, 0 bytes spilled, 80 KiB shared. Key loop (both
consumers): HGMMA 64x128 x4 (S_{j+1}), HGMMA 64x64 x8 (P V) with the 64 EX2 of S_j
interleaved among them, NANOSLEEP x2, WARPGROUP.DEPBAR 0x1, the row-max half (consumer 0,
causal bf16: 320 instructions, 64 FMNMX, 4 SHFL, and the mask: 128 FSEL, ~70 ISETP, 31
LOP3), NANOSLEEP x2, WARPGROUP.DEPBAR 0x0, then 62 IMAD.MOV (the back-edge copy of S_{j+1}
is still there: its destination holds P_j in floats until P_j is packed into P_{j-1}'s
registers, which happens after the wait), 32 F2FP, 32 FMUL (O *= alpha), 2 EX2 (alpha).
726 instructions in the loop (v.py: 716).

Found in the SASS, in v.py too: the mask's run-time check (`if start_n + BLOCK_N >
mask_from`) is if-converted, so every step of the loop runs the mask (128 FSEL, ~70 ISETP,
~32 LOP3: about 230 of the loop's ~720 instructions) although only block n_blocks - 1 can
need it (causal: n_blocks = row0 / BLOCK_N + 1, mask_from = row0; not causal: (n_blocks -
1) BLOCK_N <= (N // BLOCK_N) BLOCK_N = mask_from). Tried and dropped here: a constexpr
MASK = False in the loop with step n_blocks - 2 peeled (its row max is the last block's):
no warning, the mask is gone from the loop, but consumer 0 spilled 32 bytes (24 with the
row and column indices made inside _row_max instead of kept live); consumer 1 did not spill.

Tried and dropped (idea: keep P V in flight across the back edge, GEMM-style): S_{j+1}
waited for at the step's end with wait(1) and P_{j-1} V_{j-1} left in flight, waited for by
wait(1) after the next step's issue of S_{j+2}, then O *= alpha. ptxas serializes every
wgmma: "non wgmma instructions reading accumulator registers of a wgmma between start and
end of the pipeline stage" (the FMULs of O after a wait(1) that retires a group issued in
the previous trip; ptxas accepts that wait only within one trip, as in the reference).
Making that mid-step wait a wait(0) instead gives "insufficient register resources"
(S_j, S_{j+1}, P_{j-1} in flight, P_j and O: 224 registers live); waiting for P V before
the issue of S_{j+2} puts the two waits next to each other, i.e. v.py. Also: LLVM folds the
loop-carried P's phi of two float -> bf16 conversions into a phi of the float values (64
registers instead of 32, converted at the top of the next step); an opaque inline-asm copy
of P after the conversion stops it (not needed in this file: P is consumed in its step).
"""
from __future__ import annotations

import torch

from references._gpu import cdiv

try:
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import (
        fence_async_shared,
        mbarrier,
        tma,
        warpgroup_mma,
        warpgroup_mma_wait,
    )
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
except ImportError:  # a Triton without Gluon: problem() says so and nothing below is compiled
    gluon = None

ROWS = 64  # query rows per consumer warpgroup: one wgmma M tile of 4 warps x 16 rows
GROUPS = 2  # consumer warpgroups per program
BLOCK_M = ROWS * GROUPS
BLOCK_N = 128  # keys per step; causal needs BLOCK_N == BLOCK_M: the diagonal is one block
STAGES = 2  # K and V slots in the ring
HEAD_DIMS = (64,)  # d = 128 is refused (static_assert in the kernel)
# Registers per thread at launch: 12 warps (two consumer warpgroups and the loader's, whose
# one warp is allocated a warpgroup's registers) x 32 threads x 168 fit in 64 K. Inside, the
# consumers raise theirs to 232 and the loader drops to 24 (Hopper's setmaxnreg).
MAXNREG = 168
# tools/probe_attention_wgmma.py times a module at each of its TILES; this one has one shape,
# and launch() takes its tile from the constants above.
TILES = {64: [(BLOCK_M, BLOCK_N, 4, STAGES)]}


def _kernel(fn):
    return gluon.jit(fn) if gluon is not None else None


@_kernel
def _load_partition(q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bars, k_ready, v_ready,
                    k_empty, v_empty, head, row0, n_blocks):
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
        mbarrier.wait(k_empty.index(stage), phase ^ 1)
        mbarrier.expect(k_ready.index(stage), k_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(k_desc, [head, j * BLOCK_N, 0], k_ready.index(stage),
                                        k_smem.index(stage))
        mbarrier.wait(v_empty.index(stage), phase ^ 1)
        mbarrier.expect(v_ready.index(stage), v_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(v_desc, [head, j * BLOCK_N, 0], v_ready.index(stage),
                                        v_smem.index(stage))


@_kernel
def _row_max(s, start_n, cols, rows, n_ctx, mask_from, diag_shift, qk_scale, m_i,
             BLOCK_N: gl.constexpr, FIRST: gl.constexpr):
    """First half of the online softmax of S_j (keys start_n ...): the mask (when the block
    may need it, checked at run time as in v.py), the running max m_j and alpha_j =
    exp2(m_{j-1} - m_j). FIRST: block 0, no previous max (alpha is unused). Returns the
    masked S_j, m_j and alpha_j; m_j passes through a nanosleep, so that ptxas keeps the
    next wait below this half."""
    if start_n + BLOCK_N > mask_from:
        keep = (((start_n + cols) < n_ctx)[None, :]
                & ((start_n + cols)[None, :] <= rows[:, None] + diag_shift))
        s = gl.where(keep, s, -float("inf"))
    if FIRST:
        m_new = gl.max(s, axis=1) * qk_scale
        alpha = m_new  # unused
    else:
        m_new = gl.maximum(m_i, gl.max(s, axis=1) * qk_scale)
        alpha = gl.exp2(m_i - m_new)
    m_new = gl.inline_asm_elementwise("nanosleep.u32 0;\n mov.f32 $0, $1;", "=f,f", [m_new],
                                      dtype=gl.float32, is_pure=False, pack=1)
    return s, m_new, alpha


@_kernel
def _exps(s, m_i, l_i, alpha, FIRST: gl.constexpr, dtype: gl.constexpr,
          P_LAYOUT: gl.constexpr):
    """Second half: P_j = exp2(S_j * scale - m_j) (S_j already masked and scaled by the
    caller's qk_scale below), l_j = l_{j-1} alpha_j + sum P_j. Returns P_j as the A operand
    of P V in registers, and l_j, pinned by a nanosleep below the exponentials."""
    p = gl.exp2(s - m_i[:, None])
    if FIRST:
        l_new = gl.sum(p, axis=1)
    else:
        l_new = l_i * alpha + gl.sum(p, axis=1)
    p_op = gl.convert_layout(p.to(dtype), P_LAYOUT)
    l_new = gl.inline_asm_elementwise("nanosleep.u32 0;\n mov.f32 $0, $1;", "=f,f", [l_new],
                                      dtype=gl.float32, is_pure=False, pack=1)
    return p_op, l_new


@_kernel
def _issue_s(q_tile, k_smem, k_ready, j, zero_s):
    """Wait for K_j and issue S_j = Q K_j^T (async)."""
    BLOCK_N: gl.constexpr = k_smem.type.shape[2]
    HEAD_DIM: gl.constexpr = k_smem.type.shape[3]
    STAGES: gl.constexpr = k_smem.type.shape[0]
    mbarrier.wait(k_ready.index(j % STAGES), (j // STAGES) & 1)
    return warpgroup_mma(q_tile,
                         k_smem.index(j % STAGES).reshape([BLOCK_N, HEAD_DIM]).permute((1, 0)),
                         zero_s, use_acc=False, is_async=True)


@_kernel
def _issue_pv(p_op, v_smem, v_ready, j, acc):
    """Wait for V_j and issue O += P_j V_j (async), P_j from registers."""
    BLOCK_N: gl.constexpr = v_smem.type.shape[2]
    HEAD_DIM: gl.constexpr = v_smem.type.shape[3]
    STAGES: gl.constexpr = v_smem.type.shape[0]
    mbarrier.wait(v_ready.index(j % STAGES), (j // STAGES) & 1)
    return warpgroup_mma(p_op, v_smem.index(j % STAGES).reshape([BLOCK_N, HEAD_DIM]), acc,
                         is_async=True)


@_kernel
def _step(j, s, p_op, acc, m_i, l_i, alpha, q_tile, k_smem, v_smem, k_ready, v_ready,
          k_empty, v_empty, zero_s, cols, rows, n_ctx, mask_from, diag_shift, qk_scale,
          dtype: gl.constexpr, P_LAYOUT: gl.constexpr, ROW_O: gl.constexpr):
    """Key block j, 1 <= j < n_blocks - 1. On entry: S_j in registers (waited for, masked),
    m_j and alpha_j already computed from it (the row max half ran in the step before),
    l_{j-1}, P_{j-1} in registers, acc = O_{j-2} in the scale of m_{j-1}; nothing in flight.
    Issues S_{j+1} and O += P_{j-1} V_{j-1}; the exponentials of S_j overlap both; waits for
    S_{j+1} (the older group; P V stays in flight) and runs the row max half of S_{j+1}
    while P V finishes; waits for P V; O *= alpha_j. Nothing is in flight on return."""
    STAGES: gl.constexpr = k_smem.type.shape[0]
    BLOCK_N: gl.constexpr = k_smem.type.shape[2]
    s_tok = _issue_s(q_tile, k_smem, k_ready, j + 1, zero_s)
    o_tok = _issue_pv(p_op, v_smem, v_ready, j - 1, acc)
    p_new, l_i = _exps(s * qk_scale, m_i, l_i, alpha, False, dtype, P_LAYOUT)
    s_next = warpgroup_mma_wait(1, deps=[s_tok])  # S_{j+1} is done; P_{j-1} V_{j-1} runs on
    mbarrier.arrive(k_empty.index((j + 1) % STAGES), count=1)  # K_{j+1} is read
    s_next, m_next, alpha_next = _row_max(s_next, (j + 1) * BLOCK_N, cols, rows, n_ctx,
                                          mask_from, diag_shift, qk_scale, m_i, BLOCK_N,
                                          False)
    acc, p_done = warpgroup_mma_wait(0, deps=[o_tok, p_op])
    mbarrier.arrive(v_empty.index((j - 1) % STAGES), count=1)  # V_{j-1} is read
    acc = acc * gl.convert_layout(alpha, ROW_O)[:, None]
    return s_next, p_new, acc, m_next, l_i, alpha_next


@_kernel
def _consume(g: gl.constexpr, q_desc, k_desc, o_desc, q_smem, k_smem, v_smem, q_bars,
             k_ready, v_ready, k_empty, v_empty, head, row0, n_ctx, n_blocks, mask_from,
             diag_shift, qk_scale):
    """Consumer warpgroup g: its 64 rows (row0 + 64 g ...) against every key block."""
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

    # Block 0: S_0, waited for at once (nothing to overlap it with), and its row max.
    mbarrier.wait(q_bars.index(g), 0)
    s_tok = _issue_s(q_tile, k_smem, k_ready, 0, zero_s)
    s = warpgroup_mma_wait(0, deps=[s_tok])
    mbarrier.arrive(k_empty.index(0), count=1)
    s, m_i, alpha = _row_max(s, 0, cols, rows, n_ctx, mask_from, diag_shift, qk_scale,
                             qk_scale, BLOCK_N, True)

    if n_blocks > 1:
        # Step 0: issue S_1, the exponentials of S_0 while it runs, wait, row max of S_1.
        s_tok = _issue_s(q_tile, k_smem, k_ready, 1, zero_s)
        p_op, l_i = _exps(s * qk_scale, m_i, m_i, alpha, True, dtype, P_LAYOUT)
        s = warpgroup_mma_wait(0, deps=[s_tok])
        mbarrier.arrive(k_empty.index(1 % STAGES), count=1)
        s, m_i, alpha = _row_max(s, BLOCK_N, cols, rows, n_ctx, mask_from, diag_shift,
                                 qk_scale, m_i, BLOCK_N, False)
        acc = gl.zeros([ROWS, HEAD_DIM], gl.float32, O_LAYOUT)  # running numerator
        # Steps 1 .. n_blocks - 2, one per trip; nothing in flight across the back edge.
        for j in range(1, n_blocks - 1):
            s, p_op, acc, m_i, l_i, alpha = _step(
                j, s, p_op, acc, m_i, l_i, alpha, q_tile, k_smem, v_smem, k_ready, v_ready,
                k_empty, v_empty, zero_s, cols, rows, n_ctx, mask_from, diag_shift, qk_scale,
                dtype, P_LAYOUT, ROW_O)
        # Step n_blocks - 1: no S left to issue; P V of the block before overlaps the
        # exponentials.
        j_last = n_blocks - 1
        o_tok = _issue_pv(p_op, v_smem, v_ready, j_last - 1, acc)
        p_new, l_i = _exps(s * qk_scale, m_i, l_i, alpha, False, dtype, P_LAYOUT)
        acc, p_done = warpgroup_mma_wait(0, deps=[o_tok, p_op])
        mbarrier.arrive(v_empty.index((j_last - 1) % STAGES), count=1)
        acc = acc * gl.convert_layout(alpha, ROW_O)[:, None]
        p_op = p_new
    else:
        p_op, l_i = _exps(s * qk_scale, m_i, m_i, alpha, True, dtype, P_LAYOUT)
        acc = gl.zeros([ROWS, HEAD_DIM], gl.float32, O_LAYOUT)

    last = n_blocks - 1
    o_tok = _issue_pv(p_op, v_smem, v_ready, last, acc)
    acc, p_op = warpgroup_mma_wait(0, deps=[o_tok, p_op])
    mbarrier.arrive(v_empty.index(last % STAGES), count=1)
    out = acc / gl.convert_layout(l_i, ROW_O)[:, None]
    # This warpgroup's Q slot holds its output on the way out (Q is no longer needed).
    q_smem.index(g).reshape([ROWS, HEAD_DIM]).store(out.to(dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(o_desc, [head, row0 + g * ROWS, 0], q_smem.index(g))
    tma.store_wait(0)


@_kernel
def _consumer_1(q_desc, k_desc, o_desc, q_smem, k_smem, v_smem, q_bars, k_ready, v_ready,
                k_empty, v_empty, head, row0, n_ctx, n_blocks, mask_from, diag_shift, qk_scale):
    """Consumer warpgroup 1 (a partition is a function; warpgroup 0 is the default one)."""
    _consume(1, q_desc, k_desc, o_desc, q_smem, k_smem, v_smem, q_bars, k_ready, v_ready,
             k_empty, v_empty, head, row0, n_ctx, n_blocks, mask_from, diag_shift, qk_scale)


@_kernel
def attention_ws_kernel(
    q_desc, k_desc, v_desc, o_desc,  # TMA descriptors over (H, N, d); q and o blocks of 64 rows
    n_ctx,  # N
    qk_scale,  # scale * log2(e)
    IS_CAUSAL: gl.constexpr, STAGES: gl.constexpr, num_warps: gl.constexpr,
):
    dtype: gl.constexpr = q_desc.dtype
    ROWS: gl.constexpr = q_desc.block_type.shape[1]
    HEAD_DIM: gl.constexpr = q_desc.block_type.shape[2]
    BLOCK_N: gl.constexpr = k_desc.block_type.shape[1]
    BLOCK_M: gl.constexpr = 2 * ROWS
    gl.static_assert(HEAD_DIM == 64, "v2 is written for d = 64 only (P in registers)")
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
    k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for g in gl.static_range(2):
        mbarrier.init(q_bars.index(g), count=1)
    for s in gl.static_range(STAGES):
        mbarrier.init(k_ready.index(s), count=1)
        mbarrier.init(v_ready.index(s), count=1)
        mbarrier.init(k_empty.index(s), count=2)  # both consumers hand a slot back
        mbarrier.init(v_empty.index(s), count=2)

    consumer_args = (q_desc, k_desc, o_desc, q_smem, k_smem, v_smem, q_bars, k_ready, v_ready,
                     k_empty, v_empty, head, row0, n_ctx, n_blocks, mask_from, diag_shift,
                     qk_scale)
    gl.warp_specialize([
        (_consume, (0,) + consumer_args),  # the default partition: this program's 4 warps
        (_consumer_1, consumer_args),
        (_load_partition, (q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bars, k_ready,
                           v_ready, k_empty, v_empty, head, row0, n_blocks)),
    ], [4, 1], [232, 24])  # warps and registers of consumer 1 and the loader (see MAXNREG)


def launch(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor, causal: bool,
           qk_scale: float) -> None:
    """Write attention of (H, N, d) q, k, v into `out` (H, N, d); d must be 64."""
    heads, n_ctx, head_dim = q.shape
    if head_dim not in HEAD_DIMS:
        raise ValueError(f"v2 runs head dims {HEAD_DIMS}, got {head_dim}")
    layout_dtype = gl.bfloat16 if q.dtype == torch.bfloat16 else gl.float16

    def descriptor(t: torch.Tensor, rows: int):
        block = [1, rows, head_dim]
        return TensorDescriptor(t, list(t.shape), list(t.stride()), block,
                                gl.NVMMASharedLayout.get_default_for(block, layout_dtype))

    attention_ws_kernel[(cdiv(n_ctx, BLOCK_M), heads)](
        descriptor(q, ROWS), descriptor(k, BLOCK_N), descriptor(v, BLOCK_N),
        descriptor(out, ROWS), n_ctx, qk_scale,
        IS_CAUSAL=causal, STAGES=STAGES, num_warps=4, maxnreg=MAXNREG)
