"""Streaming attention's Hopper path: the same online softmax, warp specialized, in Gluon.

Not an exercise. `streaming_attention.attention` takes this path on its own for large 16-bit
problems at d = 128 on an H100/H200 (compute capability 9.0), and `warp_specialize=True`
forces it; everything else runs the Triton kernel the lesson builds. The lesson's section 7
says why it exists and what it measured; this docstring says how it works.

Why: Triton 3.6 compiles the lesson's kernel so that each warpgroup waits for Q K^T right after
issuing it, so the softmax of a key block never runs while the tensor cores work (0.80x of
SDPA-cuDNN at d = 128). Gluon (`triton.experimental.gluon`) is Triton's lower-level dialect: the
kernel names its layouts, its shared-memory buffers, its barriers, and issues Hopper's
asynchronous warpgroup MMAs (wgmma) itself, choosing where to wait for each.

How, per program (BLOCK_M = 64 * GROUPS query rows of one head, GROUPS = 2):
- a one-warp *loader* partition copies Q once, then K_j and V_j for every key block j, with
  TMA into a ring of STAGES shared-memory slots. Each slot has a "ready" barrier (the copy
  engine completes it when the bytes land) and an "empty" barrier (every consumer arrives on
  it when done reading; the loader waits on it before reusing the slot);
- GROUPS *consumer* warpgroups (4 warps each) own 64 query rows each and walk every key block,
  with no barrier between them inside the loop, so they drift apart and take turns on the
  tensor cores. Each runs, for block j:

      issue S_j = Q K_j^T                (async)
      issue O += P_{j-1} V_{j-1}         (async: P of the previous block, in registers)
      wait for S_j (one MMA left in flight), hand K_j's slot back
      softmax of S_j: mask, running max, alpha, P_j = exp2(S_j * scale - m), l   <- overlaps P V
      wait for P V, hand V_{j-1}'s slot back, O *= alpha

  and after the loop the last O += P V, O / l, and a TMA store through its Q slot.
- The `nanosleep.u32 0` before the second wait: without it ptxas moves that wait up to just
  after the first, ahead of the softmax, and nothing overlaps (tests/test_gpu_compile.py pins
  both facts; tools/probe_attention_wgmma.py measured six placements of the waits).

Masking is the lesson's: key j of row i is kept when j < N and, causal, j <= i. Blocks that
cannot need it skip the comparisons (`mask_from`). Rows past N load as zeros and are never
stored (TMA clips both).

Limits: 16-bit q, k, v of one shape (H, N, d), d = 64 or 128, unit feature stride and 16-byte
aligned strides and start (TMA's rules), compute capability 9.0 exactly (wgmma is sm_90a's),
and a Triton with Gluon (3.5 or newer). `device_problem()` and `tma_stride_problem()` say
which one a call breaks.
"""

from __future__ import annotations

import torch

from ._gpu import capability, cdiv, device_index

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
except ImportError:  # a Triton without Gluon: device_problem() says so and nothing below is compiled
    gluon = None

ROWS = 64  # query rows per consumer warpgroup: one wgmma M tile of 4 warps x 16 rows
GROUPS = 2  # consumer warpgroups per program
BLOCK_M = ROWS * GROUPS
BLOCK_N = 128  # keys per step; causal needs BLOCK_N == BLOCK_M: the diagonal is one block
STAGES = 2  # K and V slots in the ring (3 measured no faster at d = 128, with 224 KiB)
HEAD_DIMS = (64, 128)
# Registers per thread at launch: 12 warps (two consumer warpgroups and the loader's, whose
# one warp is allocated a warpgroup's registers) x 32 threads x 168 fit in 64 K. Inside, the
# consumers raise theirs to 232 and the loader drops to 24 (Hopper's setmaxnreg).
MAXNREG = 168


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
def _consume(g: gl.constexpr, q_desc, k_desc, o_desc, q_smem, k_smem, v_smem, q_bars, k_ready,
             v_ready, k_empty, v_empty, head, row0, n_ctx, n_blocks, mask_from, diag_shift,
             qk_scale):
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
    mbarrier.arrive(k_empty.index(0), count=1)
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
        # A side-effecting instruction, so that ptxas cannot hoist the next wait above the
        # softmax (l_i passes through it to pin it after the exponentials).
        l_i = gl.inline_asm_elementwise("nanosleep.u32 0;\n mov.f32 $0, $1;", "=f,f", [l_i],
                                        dtype=gl.float32, is_pure=False, pack=1)
        acc, p_op = warpgroup_mma_wait(0, deps=[o_tok, p_op])
        mbarrier.arrive(v_empty.index(prev), count=1)  # V_{j-1} is read
        # Rescale the numerator by alpha, as the denominator was: both, or the answer is wrong.
        acc = acc * gl.convert_layout(alpha, ROW_O)[:, None]

    last = (n_blocks - 1) % STAGES
    mbarrier.wait(v_ready.index(last), ((n_blocks - 1) // STAGES) & 1)
    p_op = gl.convert_layout(p.to(dtype), P_LAYOUT)
    o_tok = warpgroup_mma(p_op, v_smem.index(last).reshape([BLOCK_N, HEAD_DIM]), acc,
                          is_async=True)
    acc, p_op = warpgroup_mma_wait(0, deps=[o_tok, p_op])
    mbarrier.arrive(v_empty.index(last), count=1)
    out = acc / gl.convert_layout(l_i, ROW_O)[:, None]
    # This warpgroup's Q slot holds its output on the way out (Q is no longer needed).
    q_smem.index(g).reshape([ROWS, HEAD_DIM]).store(out.to(dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(o_desc, [head, row0 + g * ROWS, 0], q_smem.index(g))
    tma.store_wait(0)


@_kernel
def _consumer_1(q_desc, k_desc, o_desc, q_smem, k_smem, v_smem, q_bars, k_ready, v_ready, k_empty,
                v_empty, head, row0, n_ctx, n_blocks, mask_from, diag_shift, qk_scale):
    """Consumer warpgroup 1 (a partition is a function; warpgroup 0 is the default one)."""
    _consume(1, q_desc, k_desc, o_desc, q_smem, k_smem, v_smem, q_bars, k_ready, v_ready, k_empty,
             v_empty, head, row0, n_ctx, n_blocks, mask_from, diag_shift, qk_scale)


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


def tma_stride_problem(t: torch.Tensor) -> str | None:
    """Why a TMA descriptor cannot describe `t`'s layout as it is, or None when it can. Both
    attention paths ask this (the Triton kernel's TMA loads too).

    cuTensorMapEncodeTiled's rules: the innermost stride is 1, every other stride is a multiple
    of 16 bytes, and the start is 16-byte aligned. A stride of 0 is such a multiple: k and v
    expand()ed over the heads (shared by every head) ran right through all three TMA paths on
    the H200 (tools/probe_tma_stride0.py), and checks/streaming_attention.py keeps them so.
    """
    size = t.element_size()
    if t.stride(-1) != 1 or any((s * size) % 16 for s in t.stride()[:-1]) or t.data_ptr() % 16:
        return (f"TMA needs a unit innermost stride, other strides that are multiples of 16 "
                f"bytes and a 16-byte aligned start; got strides {t.stride()} of {t.dtype} at "
                f"address {t.data_ptr()} (mod 16: {t.data_ptr() % 16})")
    return None


def device_problem(q: torch.Tensor) -> str | None:
    """Why this path cannot run on q's device, dtype and head dim, or None if it can. The other
    condition, that TMA can describe q, k and v, is `tma_stride_problem`: the launcher asks it
    once per call for both of attention's paths (streaming_attention._tma_problem)."""
    if gluon is None:
        return "it needs a Triton with Gluon (triton.experimental.gluon, Triton 3.5 or newer)"
    if q.device.type != "cuda" or capability(device_index(q)) != (9, 0):
        return (f"it runs Hopper's warpgroup MMAs: it needs a GPU of compute capability 9.0 "
                f"(H100, H200), got {q.device}")
    if q.dtype not in (torch.float16, torch.bfloat16):
        return f"it runs float16 and bfloat16, got {q.dtype}"
    if q.shape[-1] not in HEAD_DIMS:
        return f"it runs head dims {HEAD_DIMS}, got {q.shape[-1]}"
    return None


def programs(heads: int, n_ctx: int) -> int:
    """Programs in the grid of a call on `heads` heads of N rows."""
    return heads * cdiv(n_ctx, BLOCK_M)


def launch(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor, causal: bool,
           qk_scale: float) -> None:
    """Write attention of (H, N, d) q, k, v into `out` (H, N, d); device_problem(q) must be None and
    tma_stride_problem(t) None for each of q, k, v."""
    heads, n_ctx, head_dim = q.shape
    layout_dtype = gl.bfloat16 if q.dtype == torch.bfloat16 else gl.float16

    def descriptor(t: torch.Tensor, rows: int):
        block = [1, rows, head_dim]
        return TensorDescriptor(t, list(t.shape), list(t.stride()), block,
                                gl.NVMMASharedLayout.get_default_for(block, layout_dtype))

    attention_ws_kernel[(cdiv(n_ctx, BLOCK_M), heads)](
        descriptor(q, ROWS), descriptor(k, BLOCK_N), descriptor(v, BLOCK_N),
        descriptor(out, ROWS), n_ctx, qk_scale,
        IS_CAUSAL=causal, STAGES=STAGES, num_warps=4, maxnreg=MAXNREG)
