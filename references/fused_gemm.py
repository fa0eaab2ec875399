"""Fused GEMM: C = relu(A @ B + bias), float32 epilogue, grouped tile order.

What you will practise
- Tile decomposition: one program owns one BLOCK_M x BLOCK_N tile of C and walks K in BLOCK_K
  steps, accumulating `tl.dot` products in a float32 register tile. The last tiles own the tails
  in M, N and K; masks keep them from reading or writing past the edges.
- The precision contract: float16/bfloat16 operands, float32 accumulation, the bias added and the
  ReLU applied in float32, and ONE rounding to the operand dtype, at the store. Rounding the
  accumulator first (what `torch.relu(a @ b + bias)` does in half precision) loses the low bits
  exactly where bias and product cancel.
- Grouped ("swizzled") tile order: programs that run at the same time share rows of A and columns
  of B, so the panels they load are still in L2 when the neighbours ask for them.
- Speed knobs: block sizes, GROUP_M, num_warps, num_stages, all keyword arguments, validated;
  `CONFIGS` lists candidates for a sweep and `default_config` chooses by shape.

Two kernels, one contract
- `gemm_bias_relu_kernel`: the lesson's kernel. Pointer-based, masked, one program per tile, any
  strides (transposed and sliced operands work without a copy). Runs everywhere, the CPU
  interpreter included. The exercises live here and in the three helpers it calls
  (`_tile_coords`, `_epilogue`, `_store_tile`), which the persistent kernel calls too.
- `gemm_bias_relu_persistent_kernel`: an optional Hopper path. A persistent grid (one program per
  SM, each looping over tiles in grouped order) that loads A and B through TMA tensor
  descriptors, which also zero-fill the tails so the K loop needs no masks, and stores C through
  one too when C's rows are 16-byte aligned (in two half-width boxes). Chosen automatically on
  compute capability 9.x when TMA can describe the operands (16-byte aligned base and row
  stride, unit stride in one dimension); `persistent=` and `tma_store=` force it on or off.
  When the tiles leave a partly filled last wave worth more than the sharing costs (8192^3 on
  the H200, not 4096^3), it deals that wave's K-steps out to all programs instead (Stream-K:
  partial sums in a workspace, the last program to arrive adds them up in K order);
  `stream_k=` forces it on or off.
  Both kernels share the tile order and the epilogue, so the exercises shape both.

Limitations
- float16 and bfloat16 only, both operands of one dtype; bias float32 of shape (N,) or None
  (any stride: a strided bias is copied once into N contiguous floats before the launch).
- Under Triton's CPU interpreter a bfloat16 `tl.dot` multiplies raw bit patterns, so there (and
  only there) both operands are upcast to float32 before `tl.dot` (exact: a bfloat16 product
  fits float32). Real GPUs run the bfloat16 tensor-core path.
- The persistent path builds its descriptors on the device, in scratch memory Triton requests
  through `triton.set_allocator`; the launcher installs a torch allocator for it (a process-wide
  setting) when that path runs.
- Operands whose strides are not 16-byte aligned (odd K or N) cannot use TMA nor vectorized
  loads: every element is loaded on its own, far below the aligned speed.
- A bounded teaching implementation: no split-K for very skinny outputs (Stream-K only
  evens out the last wave), no warp
  specialization, no fp8. Defaults and CONFIGS target one NVIDIA H200; speed
  is whatever the benchmark results (and the validation report) measured there.
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from ._gpu import capability, cdiv, descriptor_scratch, device_index, sm_count
from ._validate import (
    check_device,
    check_int_range,
    check_power_of_two,
    check_same,
    check_tensor,
    interpreting,
    type_name,
)

_DTYPES = (torch.float16, torch.bfloat16)

# A program's float32 accumulator tile is spread over its 32 * num_warps threads. Beyond 128
# values per thread (128 registers of the 255 a thread may have) the tile spills to local memory
# and the kernel crawls, so such configurations are refused with a clear error.
_MAX_ACC_PER_THREAD = 128
# Stream-K adds up a shared tile's partial sums at most this many rows at a time (see
# _add_partials_and_finish): 64 x 256 float32 is 64 registers per thread over 8 warps, twice
# that while the next partial loads.
_MAX_FIXUP_ROWS = 64

# On compute capability 9.x with TMA-compatible operands, `persistent=None` picks the persistent
# TMA kernel when this is True and the pointer kernel when it is False. Set from the H200 sweep.
PREFER_PERSISTENT = True
# In the persistent kernel, `tma_store=None` stores C through a TMA descriptor (when C's rows are
# 16-byte aligned) if this is True, with masked pointer stores if False.
PREFER_TMA_STORE = True
# In the persistent kernel, `stream_k=None` shares the tiles of a partly filled last wave among all
# programs (Stream-K) when this is True and it saves enough (see stream_k_tiles).
PREFER_STREAM_K = True
# What Stream-K's sharing costs, in K-steps of a 128 x 256 x 64 tile (0.83 us each at 4096^3 on
# the H200): storing the partial sums, counting in, loading the others' partials, and the
# second pipeline fill and epilogue of a run that spans two tiles took about 30 us, 36 steps
# (tools/probe_gemm_tiles.py --stream-k-parts). `stream_k=None` shares only when the idle part of
# the last wave is worth at least this many steps: 8192^3 (62 steps) yes, 4096^3 (8) no.
_STREAM_K_MIN_SAVED_STEPS = 48

# Candidate launch configurations for a benchmark sweep (each usable as **kwargs). All fit the
# register rule above. Shared memory per stage is (block_m + block_n) * block_k * 2 bytes and a
# Hopper SM offers 227 KiB to one program: 4 stages of 48 KiB (128x256x64) fit, 5 do not, and the
# epilogue may need scratch too, so some 4-stage entries can fail to compile (OutOfResources):
# the sweep records that as a result, it is not a bug. The block_k = 32 and 16 entries are for
# operands whose strides are not 16-byte aligned (odd K or N): every element is then loaded on
# its own and each thread keeps one address per element of its A and B tiles, so the fewer
# elements per thread, the better (the first H200 sweep: 128x128x64 with 4 warps, 64 + 64
# elements per thread, ran 6x slower than with 8 warps on 4095 x 4097 x 4093).
CONFIGS = [
    # default_config's for large aligned problems, then the same tile in GROUP_M = 8 bands
    dict(block_m=128, block_n=256, block_k=64, group_m=16, num_warps=8, num_stages=3),
    dict(block_m=128, block_n=256, block_k=64, group_m=8, num_warps=8, num_stages=3),
    dict(block_m=128, block_n=256, block_k=64, group_m=8, num_warps=8, num_stages=4),
    dict(block_m=128, block_n=256, block_k=64, group_m=4, num_warps=8, num_stages=4),
    dict(block_m=128, block_n=256, block_k=64, group_m=16, num_warps=8, num_stages=4),
    dict(block_m=256, block_n=128, block_k=64, group_m=8, num_warps=8, num_stages=3),
    dict(block_m=256, block_n=128, block_k=64, group_m=8, num_warps=8, num_stages=4),
    dict(block_m=128, block_n=128, block_k=64, group_m=8, num_warps=4, num_stages=4),
    dict(block_m=128, block_n=128, block_k=64, group_m=8, num_warps=8, num_stages=4),
    dict(block_m=128, block_n=128, block_k=128, group_m=8, num_warps=8, num_stages=3),
    dict(block_m=64, block_n=256, block_k=64, group_m=8, num_warps=4, num_stages=4),
    dict(block_m=64, block_n=128, block_k=64, group_m=8, num_warps=4, num_stages=4),
    dict(block_m=64, block_n=64, block_k=64, group_m=8, num_warps=4, num_stages=4),
    dict(block_m=128, block_n=256, block_k=32, group_m=8, num_warps=8, num_stages=4),
    dict(block_m=128, block_n=128, block_k=32, group_m=8, num_warps=8, num_stages=3),
    dict(block_m=128, block_n=128, block_k=32, group_m=8, num_warps=4, num_stages=4),
    dict(block_m=64, block_n=128, block_k=32, group_m=8, num_warps=4, num_stages=4),
    dict(block_m=64, block_n=64, block_k=32, group_m=8, num_warps=4, num_stages=4),
    dict(block_m=128, block_n=128, block_k=16, group_m=8, num_warps=8, num_stages=4),
]


@triton.jit
def _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    """Grouped order: linear tile id -> (pid_m, pid_n), the tile's row and column in C."""
    # EXERCISE tile_coords: map tile_id to (pid_m, pid_n) in grouped order. Tiles come in
    # bands of GROUP_M tile rows; inside a band the ids run down a column of GROUP_M tiles, then
    # move one column right. The last band may hold fewer than GROUP_M rows. With GROUP_M = 1
    # this is plain row-major order: pid_m = tile_id // num_pid_n, pid_n = tile_id % num_pid_n.
    num_pid_in_group = GROUP_M * num_pid_n  # tiles in one band
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)  # the last band may be shorter
    local = tile_id % num_pid_in_group  # position inside the band
    pid_m = first_pid_m + local % group_size_m
    pid_n = local // group_size_m
    # END EXERCISE
    return pid_m, pid_n


@triton.jit
def _epilogue(
    acc,  # (BLOCK_M, BLOCK_N) float32 accumulator: sum_k A[m, k] * B[k, n]
    bias_ptr,  # bias (N,) float32; read only if HAS_BIAS
    offs_m, offs_n,  # (BLOCK_M,), (BLOCK_N,) int32: the tile's rows and columns of C (this
    # epilogue only needs the columns; a per-row scale would use the rows)
    N,  # size
    OUT_DTYPE: tl.constexpr,  # C's dtype (float16 or bfloat16)
    HAS_BIAS: tl.constexpr, APPLY_RELU: tl.constexpr,
):
    """bias + ReLU in float32, then the one rounding: returns the tile in OUT_DTYPE."""
    # EXERCISE gemm_bias_relu: the epilogue, in float32. If HAS_BIAS: add the bias (float32, one
    # per column: bias[n] belongs to column n, so broadcast it down the rows; columns past N load
    # 0). Without HAS_BIAS, bias_ptr is None: never load it. If APPLY_RELU: apply the ReLU. Only
    # then round ONCE to OUT_DTYPE.
    if HAS_BIAS:
        bias = tl.load(bias_ptr + offs_n[None, :], mask=offs_n[None, :] < N, other=0.0)  # (1, BLOCK_N)
        acc = acc + bias
    if APPLY_RELU:
        acc = tl.maximum(acc, 0.0)
    c = acc.to(OUT_DTYPE)  # (BLOCK_M, BLOCK_N)
    # END EXERCISE
    return c


@triton.jit
def _store_tile(
    c_ptr, c,  # pointer to C (M, N); the (BLOCK_M, BLOCK_N) tile to store, already in C's dtype
    offs_m, offs_n,  # (BLOCK_M,), (BLOCK_N,) int32: the rows and columns of C this tile owns
    M, N,  # sizes
    stride_cm, stride_cn,  # strides of C
):
    # EXERCISE gemm_bias_relu: store the tile, masked to the rows < M and columns < N that exist
    # (the tail tiles overhang the matrix). Widen the offsets to int64 before they multiply a
    # stride: M * stride_cm may pass 2^31. That matters only once C has more than 2^31 elements
    # (an int32 offset wraps there): no check builds such a C, neither the interpreter-size ones
    # nor the GPU ones, so no check will tell you if you skip it.
    rows = offs_m.to(tl.int64)[:, None]  # (BLOCK_M, 1)
    cols = offs_n.to(tl.int64)[None, :]  # (1, BLOCK_N)
    c_mask = (rows < M) & (cols < N)  # (BLOCK_M, BLOCK_N)
    tl.store(c_ptr + rows * stride_cm + cols * stride_cn, c, mask=c_mask)
    # END EXERCISE


@triton.jit
def gemm_bias_relu_kernel(
    a_ptr, b_ptr, bias_ptr, c_ptr,  # pointers: A (M, K), B (K, N), bias (N,) fp32 or None, C (M, N)
    M, N, K,  # sizes
    stride_am, stride_ak,  # strides of A, in elements (any: transposed and sliced views work)
    stride_bk, stride_bn,  # strides of B
    stride_cm, stride_cn,  # strides of C
    HAS_BIAS: tl.constexpr,  # add bias[n] to column n
    APPLY_RELU: tl.constexpr,  # max(., 0) after the bias
    DOT_IN_FP32: tl.constexpr,  # interpreter + bfloat16 only: upcast before tl.dot (see docstring)
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,  # tile shape
    GROUP_M: tl.constexpr,  # tile rows per band of the grouped order (1: row-major)
):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = _tile_coords(tl.program_id(0), num_pid_m, num_pid_n, GROUP_M)

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # (BLOCK_M,) rows of C this program owns
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)  # (BLOCK_N,) columns of C
    offs_k = tl.arange(0, BLOCK_K)  # (BLOCK_K,)
    # Rows past M (and columns past N) wrap around to real ones, so the loads below need no M or N
    # mask: the wrapped lanes compute throw-away values that the masked store never writes.
    # int64 before multiplying a stride: the span of a large operand may pass 2^31 elements.
    a_rows = (offs_m % M).to(tl.int64)
    b_cols = (offs_n % N).to(tl.int64)
    a_ptrs = a_ptr + a_rows[:, None] * stride_am + offs_k[None, :] * stride_ak  # (BLOCK_M, BLOCK_K)
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + b_cols[None, :] * stride_bn  # (BLOCK_K, BLOCK_N)

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # With K = 0 this loop runs zero times: A and B are never read, acc stays 0.
    for k0 in range(0, K, BLOCK_K):
        # EXERCISE gemm_bias_relu: load the (BLOCK_M, BLOCK_K) tile of A and the (BLOCK_K,
        # BLOCK_N) tile of B. Mask BOTH loads where k0 + offs_k >= K (A's columns and B's rows
        # past the K tail, other=0.0), then accumulate their product into acc with tl.dot. If
        # DOT_IN_FP32, upcast both tiles to float32 first (the interpreter cannot multiply
        # bfloat16).
        k_mask = offs_k < K - k0  # (BLOCK_K,) False past the K tail
        a = tl.load(a_ptrs, mask=k_mask[None, :], other=0.0)  # (BLOCK_M, BLOCK_K)
        b = tl.load(b_ptrs, mask=k_mask[:, None], other=0.0)  # (BLOCK_K, BLOCK_N)
        if DOT_IN_FP32:
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc = tl.dot(a, b, acc)  # float32 accumulation
        # END EXERCISE
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    c = _epilogue(acc, bias_ptr, offs_m, offs_n, N, c_ptr.dtype.element_ty, HAS_BIAS, APPLY_RELU)
    _store_tile(c_ptr, c, offs_m, offs_n, M, N, stride_cm, stride_cn)


@triton.jit
def _load_tiles(a_desc, b_desc, off_m, off_n, off_k,
                A_MAJOR_M: tl.constexpr, B_MAJOR_K: tl.constexpr, DOT_IN_FP32: tl.constexpr):
    """The persistent kernel's (BLOCK_M, BLOCK_K) tile of A and (BLOCK_K, BLOCK_N) tile of B at
    (off_m, off_k) and (off_k, off_n), through the TMA descriptors (zero-filled past the edges)."""
    if A_MAJOR_M:
        a = a_desc.load([off_k, off_m]).T  # (BLOCK_K, BLOCK_M) -> (BLOCK_M, BLOCK_K)
    else:
        a = a_desc.load([off_m, off_k])  # (BLOCK_M, BLOCK_K)
    if B_MAJOR_K:
        b = b_desc.load([off_n, off_k]).T  # (BLOCK_N, BLOCK_K) -> (BLOCK_K, BLOCK_N)
    else:
        b = b_desc.load([off_k, off_n])  # (BLOCK_K, BLOCK_N)
    if DOT_IN_FP32:
        a = a.to(tl.float32)
        b = b.to(tl.float32)
    return a, b


@triton.jit
def _finish_tile(acc, pid_m, pid_n, bias_ptr, c_ptr, c_desc, M, N, stride_cm, stride_cn,
                 HAS_BIAS: tl.constexpr, APPLY_RELU: tl.constexpr, TMA_STORE: tl.constexpr,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """The epilogue of the persistent kernel's tile (pid_m, pid_n), and its store."""
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c = _epilogue(acc, bias_ptr, offs_m, offs_n, N, c_ptr.dtype.element_ty, HAS_BIAS, APPLY_RELU)
    if TMA_STORE:
        halves = tl.permute(tl.reshape(c, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
        c0, c1 = tl.split(halves)  # columns [0, BLOCK_N/2) and [BLOCK_N/2, BLOCK_N)
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], c0)
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N + BLOCK_N // 2], c1)
    else:
        _store_tile(c_ptr, c, offs_m, offs_n, M, N, stride_cm, stride_cn)


@triton.jit
def _first_program(k_step, total_steps, NUM_PROGRAMS: tl.constexpr):
    """Stream-K: the program whose share of the steps holds step k_step. Program p owns steps
    [p * total // P, (p + 1) * total // P), so this is the largest p with p * total // P <= k_step."""
    return (((k_step.to(tl.int64) + 1) * NUM_PROGRAMS - 1) // total_steps).to(tl.int32)


@triton.jit
def _add_partials_and_finish(partials_ptr, t, first, last, k_tiles, total_steps, pid_m, pid_n,
                             bias_ptr, c_ptr, M, N, stride_cm, stride_cn,
                             HAS_BIAS: tl.constexpr, APPLY_RELU: tl.constexpr,
                             NUM_PROGRAMS: tl.constexpr, BLOCK_M: tl.constexpr,
                             BLOCK_N: tl.constexpr, FIXUP_ROWS: tl.constexpr):
    """Stream-K: the sum of shared tile t's partials (programs first..last, in K order, so the
    result does not depend on which program adds them up), its epilogue and its store.

    A band of FIXUP_ROWS rows at a time: a whole float32 tile plus another being loaded would
    need more registers than a thread has (the accumulator alone takes 128 per thread).
    """
    cols = tl.arange(0, BLOCK_N)
    offs_n = pid_n * BLOCK_N + cols
    for r0 in range(0, BLOCK_M, FIXUP_ROWS):
        rows = r0 + tl.arange(0, FIXUP_ROWS)
        in_slot = rows[:, None] * BLOCK_N + cols[None, :]  # (FIXUP_ROWS, BLOCK_N)
        total = tl.zeros((FIXUP_ROWS, BLOCK_N), dtype=tl.float32)
        for q in range(first, last + 1):
            q_begin = (q * total_steps) // NUM_PROGRAMS  # the first K-step of q's run
            q_slot = 2 * q + (q_begin // k_tiles != t).to(tl.int32)  # 1: q's run began earlier
            # .cg: read from L2, where the other SMs' stores are, never from this SM's L1.
            total += tl.load(partials_ptr + q_slot * (BLOCK_M * BLOCK_N) + in_slot,
                             cache_modifier=".cg")
        offs_m = pid_m * BLOCK_M + rows
        c = _epilogue(total, bias_ptr, offs_m, offs_n, N, c_ptr.dtype.element_ty, HAS_BIAS,
                      APPLY_RELU)
        _store_tile(c_ptr, c, offs_m, offs_n, M, N, stride_cm, stride_cn)


@triton.jit
def gemm_bias_relu_persistent_kernel(
    a_ptr, b_ptr, bias_ptr, c_ptr,  # pointers: A (M, K), B (K, N), bias (N,) fp32 or None, C (M, N)
    partials_ptr,  # Stream-K: float32 (2 * NUM_PROGRAMS, BLOCK_M * BLOCK_N), two slots per program
    arrivals_ptr,  # Stream-K: int32 (SK_TILES,) zeros: programs done with each shared tile
    M, N, K,  # sizes
    stride_am, stride_ak,  # strides of A: one of them is 1 (see A_MAJOR_M)
    stride_bk, stride_bn,  # strides of B: one of them is 1 (see B_MAJOR_K)
    stride_cm, stride_cn,  # strides of C
    SK_TILES,  # Stream-K: how many of the last tiles the programs share step by step (0: none)
    HAS_BIAS: tl.constexpr, APPLY_RELU: tl.constexpr, DOT_IN_FP32: tl.constexpr,
    A_MAJOR_M: tl.constexpr,  # A has unit stride along M (a transposed view): describe A.T (K, M)
    B_MAJOR_K: tl.constexpr,  # B has unit stride along K (e.g. w.t()): describe B.T (N, K)
    TMA_STORE: tl.constexpr,  # store C through a descriptor too (C's rows 16-byte aligned)
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    NUM_PROGRAMS: tl.constexpr,  # the grid size (one program per SM); the tile loop's stride
    STREAM_K: tl.constexpr,  # SK_TILES > 0: compile the Stream-K part
    FIXUP_ROWS: tl.constexpr,  # Stream-K: rows of a shared tile added up at a time
):
    # TMA descriptors: the copy engine fetches whole (BLOCK, BLOCK) boxes into shared memory and
    # fills every element outside `shape` with 0, so the M, N and K tails need no masks here.
    # The innermost dimension must have unit stride, so a transposed operand is described
    # through its transpose (no copy) and transposed back in registers with `.T`.
    if A_MAJOR_M:
        a_desc = tl.make_tensor_descriptor(a_ptr, shape=[K, M], strides=[stride_ak, 1],
                                           block_shape=[BLOCK_K, BLOCK_M])
    else:
        a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1],
                                           block_shape=[BLOCK_M, BLOCK_K])
    if B_MAJOR_K:
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[stride_bn, 1],
                                           block_shape=[BLOCK_N, BLOCK_K])
    else:
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_bk, 1],
                                           block_shape=[BLOCK_K, BLOCK_N])
    c_desc = None
    if TMA_STORE:
        # Stores in two half-width boxes: half the shared memory to stage a store (Triton's
        # tutorial calls this epilogue subtiling), and the copy engine clips the M and N tails.
        c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1],
                                           block_shape=[BLOCK_M, BLOCK_N // 2])

    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    whole_tiles = num_tiles - SK_TILES  # each computed by one program, start to finish
    # A second tile counter, one step behind, for the epilogue: it keeps the epilogue's index
    # math independent of the next tile's loads so the compiler can overlap them
    # (flatten=True pipelines across the tile loop, as Triton's persistent-matmul tutorial does).
    tile_id_c = tl.program_id(0) - NUM_PROGRAMS
    for tile_id in tl.range(tl.program_id(0), whole_tiles, NUM_PROGRAMS, flatten=True):
        pid_m, pid_n = _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            a, b = _load_tiles(a_desc, b_desc, off_m, off_n, ki * BLOCK_K,
                               A_MAJOR_M, B_MAJOR_K, DOT_IN_FP32)
            acc = tl.dot(a, b, acc)

        tile_id_c += NUM_PROGRAMS
        pid_m, pid_n = _tile_coords(tile_id_c, num_pid_m, num_pid_n, GROUP_M)
        _finish_tile(acc, pid_m, pid_n, bias_ptr, c_ptr, c_desc, M, N, stride_cm, stride_cn,
                     HAS_BIAS, APPLY_RELU, TMA_STORE, BLOCK_M, BLOCK_N)

    if STREAM_K:
        # Stream-K (lesson 3): the last SK_TILES tiles would fill only part of a last wave, so
        # instead their SK_TILES * k_tiles K-steps are dealt out evenly, a contiguous run per
        # program. A run may start or end inside a tile; the programs sharing a tile each
        # write their partial sum to a slot, and whichever arrives last adds the partials up
        # (in K order, so the result does not depend on who was last) and runs the epilogue.
        # Nobody waits for anybody: this also works when programs run one after another (the
        # interpreter).
        pid = tl.program_id(0)
        # int64: steps * programs passes 2^31 for K in the millions.
        total_steps = k_tiles.to(tl.int64) * SK_TILES
        step_begin = (pid * total_steps) // NUM_PROGRAMS  # this program's run of K-steps
        step_end = ((pid + 1) * total_steps) // NUM_PROGRAMS
        # (BLOCK_M, BLOCK_N) offsets inside a partials slot
        in_slot = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
        step = step_begin
        while step < step_end:
            t = (step // k_tiles).to(tl.int32)  # the tile, counted from the first shared one
            k_first = (step - t * k_tiles).to(tl.int32)
            k_last = tl.minimum(k_tiles, k_first + (step_end - step).to(tl.int32))
            pid_m, pid_n = _tile_coords(whole_tiles + t, num_pid_m, num_pid_n, GROUP_M)
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for ki in range(k_first, k_last):
                a, b = _load_tiles(a_desc, b_desc, pid_m * BLOCK_M, pid_n * BLOCK_N,
                                   ki * BLOCK_K, A_MAJOR_M, B_MAJOR_K, DOT_IN_FP32)
                acc = tl.dot(a, b, acc)
            if k_last - k_first == k_tiles:  # the whole tile in this run: nothing to share
                _finish_tile(acc, pid_m, pid_n, bias_ptr, c_ptr, c_desc, M, N, stride_cm,
                             stride_cn, HAS_BIAS, APPLY_RELU, TMA_STORE, BLOCK_M, BLOCK_N)
            else:
                # Publish this partial sum in one of the program's two slots (0: the part of
                # the tile its run starts in, 1: the part it ends in), then count in.
                slot = 2 * pid + (step != step_begin).to(tl.int32)
                tl.store(partials_ptr + slot * (BLOCK_M * BLOCK_N) + in_slot, acc)
                # Every thread's store must be done before the count says so: a barrier
                # across the program, then the atomic's release (acq_rel) covers them all.
                tl.debug_barrier()
                # The programs sharing tile t: the owners of its first and last K-step and
                # every program in between.
                first = _first_program(t * k_tiles, total_steps, NUM_PROGRAMS)
                last = _first_program(t * k_tiles + k_tiles - 1, total_steps, NUM_PROGRAMS)
                counter = arrivals_ptr + t
                if tl.atomic_add(counter, 1) == last - first:  # the last to arrive
                    tl.store(counter, 0)  # ready for the next launch
                    _add_partials_and_finish(partials_ptr, t, first, last, k_tiles,
                                             total_steps, pid_m, pid_n, bias_ptr, c_ptr, M, N,
                                             stride_cm, stride_cn, HAS_BIAS, APPLY_RELU,
                                             NUM_PROGRAMS, BLOCK_M, BLOCK_N, FIXUP_ROWS)
            step += k_last - k_first


# ---------------------------------------------------------------------------------------------
# Choosing a configuration
# ---------------------------------------------------------------------------------------------
def _check_count(name: str, value) -> None:
    """Refuse a count of SMs or programs below 1 (or not an int) before anything divides by it:
    the helpers below are public, and a caller's num_sms = 0 must not end in ZeroDivisionError."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type_name(value)}")
    if value < 1:
        raise ValueError(f"{name} must be at least 1 (the tiles are spread over them), got "
                         f"{value}")


def _wave_efficiency(M: int, N: int, block_m: int, block_n: int, num_sms: int) -> float:
    """Share of the SM slots doing useful work: tiles / (waves * SMs). 1.0 = no idle last wave."""
    tiles = cdiv(M, block_m) * cdiv(N, block_n)
    waves = cdiv(tiles, num_sms)
    return tiles / (waves * num_sms)


def _useful_share(M: int, N: int, block_m: int, block_n: int, num_sms: int) -> float:
    """Share of the SM slots' tile area that holds C: the idle last wave and the tiles'
    overhang past M and N both count as waste."""
    tiles = cdiv(M, block_m) * cdiv(N, block_n)
    covered = M * N / (tiles * block_m * block_n)  # the tiles' area that lies inside C
    return _wave_efficiency(M, N, block_m, block_n, num_sms) * covered


def few_tiles(M: int, N: int, num_sms: int) -> bool:
    """Fewer 128 x 128 tiles than SMs (1024^3 makes 64 on 132 SMs): a small problem.

    Then `default_config` halves the tile height so that more SMs get work, and `persistent=None`
    runs the pointer kernel: with at most one tile per SM a persistent grid loops over nothing,
    and building its TMA descriptors costs time. On the H200, 1024^3: 64 x 128 tiles of the
    pointer kernel took 6.5 us, 64 x 128 persistent 9.2 us, 128 x 128 persistent 10.6 us
    (graph timing, tools/probe_gemm_tiles.py).
    """
    _check_count("num_sms", num_sms)
    return cdiv(M, 128) * cdiv(N, 128) < num_sms


def stream_k_tiles(tiles: int, programs: int, k_steps: int, stream_k: bool | None) -> int:
    """How many of the last tiles the persistent kernel shares among its programs (Stream-K).

    `tiles` tiles on `programs` programs fill tiles // programs waves and leave tiles % programs
    tiles for a last wave, during which the other SMs would idle: 4096^3 in 128 x 256 tiles is
    512 tiles = 3 waves + 116 tiles on 132 SMs, and on the H200 it takes as long as 528 tiles
    (tools/probe_gemm_tiles.py --waves). Stream-K deals those 116 tiles' K-steps out to all 132
    programs instead: 56 or 57 steps each rather than 64 for some and none for others.
    But sharing has a price (partial sums written, counted and read back, an extra pipeline
    fill), so stream_k None (the default) shares only with PREFER_STREAM_K and when the idle
    part of the last wave, k_steps * (1 - leftover / programs) K-steps, is at least
    _STREAM_K_MIN_SAVED_STEPS: at 4096^3 it is 64 * 16 / 132 = 8 steps, less than the sharing
    costs; at 8192^3 (2048 tiles = 15 waves + 68) 128 * 64 / 132 = 62. True: share whenever the
    last wave is partly filled; False: never. 0 when there is nothing to share, or fewer
    K-steps than programs to deal out.
    """
    _check_count("programs", programs)
    leftover = tiles % programs
    if not leftover or stream_k is False or leftover * k_steps < programs:
        return 0
    saved_steps = k_steps * (programs - leftover) / programs
    if stream_k is None and not (PREFER_STREAM_K and saved_steps >= _STREAM_K_MIN_SAVED_STEPS):
        return 0
    return leftover


def default_config(M: int, N: int, K: int, *, num_sms: int = 132, aligned: bool = True,
                   interpreter: bool = False) -> dict:
    """The launch configuration `gemm_bias_relu` uses when no knob is given (a pure function).

    GPU (Hopper-sized SMs, num_sms of them), operands with 16-byte aligned strides:
    - 128 x 256 x 64 tiles, 8 warps, 3 stages: the highest arithmetic intensity that fits
      (128 accumulator registers per thread, 48 KiB of shared memory per stage), used when the
      tiles fill the SMs' waves evenly;
    - otherwise 256 x 128 x 64, 8 warps, 4 stages, when its useful share of the SM slots is at
      least the 128 x 128 tile's (4095 x 4097 makes 544 tiles of 128 x 256 = 4.1 waves on 132
      SMs, but 528 tiles of 256 x 128 = exactly 4 waves); on the H200 it ran 4095 x 4097 x 4093
      1.16-1.18x faster than 128 x 128 tiles, both dtypes, in three sets of interleaved rounds
      (tools/probe_gemm_tiles.py --stages, diagnostics/probe-gemm-stages-*), where 4 stages of
      the 128 x 256 tile gained nothing over 3 at 4096^3 and 0.2-0.7% at 8192^3 (kept at 3);
    - otherwise 128 x 128 x 64, 4 warps, 4 stages: twice as many tiles as the large ones, so the
      last wave is less empty;
    - small M or N (<= 64): 64-row (or 64-column) tiles so a skinny problem still has programs;
    - fewer 128 x 128 tiles than SMs (`few_tiles`, e.g. 1024^3): 64 x 128 x 64, 4 warps,
      4 stages, twice as many programs;
    - block_k = 64 (a 128-byte row of 16-bit values per load), smaller only when K itself is;
    - GROUP_M = 8 for 128 x 128 tiles, 16 for 128 x 256 tiles. With 8 at 4096^2 in 128 x 128
      tiles the first wave of 132 programs touches about 8 rows of A panels and 17 columns of B
      panels instead of 5 rows and all the columns. For 128 x 256 tiles a B panel
      holds twice an A panel's bytes, so a wave in bands of G rows reads about G * 128 + (132 /
      G) * 256 rows and columns of K per step: fewest near G = sqrt(2 * 132), about 16. At
      4096^3 (16 tile columns) GROUP_M = 16 reads 16 + 9 panels (4352) where 8 reads 12 + 16
      (5632: a band of 8 rows is 128 tiles, fewer than the wave); at 8192^3 4352 against
      8 + 17 (5376). Measured on the H200 (graph timing, three sets of interleaved rounds per
      shape, benchmarks/results/diagnostics/probe-gemm-group-*), against 8: 4096^3 0.3-0.9%
      faster in five sets of six (the sixth, bf16, 4% slower, not seen in its other two),
      8192^3 +0.1% to +0.6%, 16384 x 1024 x 4096 0-0.6%, 8192 x 8192 x 1024 within 0.3% either
      way; 2048^3, whose 128 tiles are one wave in any order, -0.3% to +2.1% (the noise of a
      28 us call). So the 128 x 256 tile takes 16.
    Not aligned (odd K or N, unaligned slices: `aligned=False`): no load can be vectorized, each
    thread holds one address per element of its A and B tiles, so 128 x 128 x 32 over 8 warps
    (16 + 16 elements per thread) instead of 64 x 64 x 64 per 4 warps' worth of threads.
    Interpreter: small tiles (at most 32 x 32 x 32): it runs each program in Python + NumPy, so
    the cost is per element and smaller tiles waste less work on masked tails.
    num_sms must be an int >= 1 (TypeError, ValueError otherwise).
    """
    _check_count("num_sms", num_sms)
    if interpreter:
        def small(n):
            return min(max(triton.next_power_of_2(max(n, 1)), 16), 32)
        return dict(block_m=small(M), block_n=small(N), block_k=small(K), group_m=4,
                    num_warps=4, num_stages=2)
    block_k = min(64, max(16, triton.next_power_of_2(max(K, 1))))  # no 64-wide step for K = 20
    if not aligned:
        return dict(block_m=128, block_n=128, block_k=min(block_k, 32), group_m=8, num_warps=8,
                    num_stages=3)
    if min(M, N) <= 64:
        if M <= N:
            return dict(block_m=64, block_n=128, block_k=block_k, group_m=8, num_warps=4,
                        num_stages=4)
        return dict(block_m=128, block_n=64, block_k=block_k, group_m=8, num_warps=4,
                    num_stages=4)
    if few_tiles(M, N, num_sms):
        return dict(block_m=64, block_n=128, block_k=block_k, group_m=8, num_warps=4,
                    num_stages=4)
    wide = _wave_efficiency(M, N, 128, 256, num_sms)
    square = _wave_efficiency(M, N, 128, 128, num_sms)
    if wide >= 0.9 or wide >= square:
        return dict(block_m=128, block_n=256, block_k=block_k, group_m=16, num_warps=8,
                    num_stages=3)
    # The tall tile has the wide one's arithmetic intensity with its waves cut along M instead
    # of N. Against the square tile, count the useful share of every SM slot, overhanging tile
    # edges included, not only the last wave's (300 rows in 256-row tiles waste 41%).
    if _useful_share(M, N, 256, 128, num_sms) >= _useful_share(M, N, 128, 128, num_sms):
        return dict(block_m=256, block_n=128, block_k=block_k, group_m=8, num_warps=8,
                    num_stages=4)
    return dict(block_m=128, block_n=128, block_k=block_k, group_m=8, num_warps=4, num_stages=4)


@functools.lru_cache(maxsize=1024)
def _default_config_items(M: int, N: int, K: int, num_sms: int, aligned: bool,
                          interpreter: bool) -> tuple:
    """default_config, remembered per shape: the launcher runs it on every call, and a training
    loop calls it with the same few shapes over and over."""
    return tuple(default_config(M, N, K, num_sms=num_sms, aligned=aligned,
                                interpreter=interpreter).items())


# Below this many multiply-adds the copies of _gemm_staged cost more than the slow loads they
# avoid (2^30: e.g. 1024^3).
_STAGE_MIN_WORK = 1 << 30


def _gemm_staged(a, b, bias, relu, knobs) -> torch.Tensor:
    """The GEMM on 16-byte aligned copies of the operands: a visible, deliberate copy.

    With odd K or N (4095 x 4097 x 4093), no row of A or B starts on a 16-byte boundary: loads
    cannot be vectorized and TMA cannot describe the operands, so every element is loaded on
    its own and the aligned kernel's speed drops about tenfold (measured on the H200; see the
    validation report). Copying A and B once into buffers whose rows are padded to a multiple
    of 8 elements costs one read and one write of each operand, small against a compute-bound
    GEMM. The padding holds zeros, which add nothing to any dot product; the padded columns of
    C (and of the bias) are dropped by the final copy into a contiguous (M, N) output.
    """
    M, K = a.shape
    N = b.shape[1]
    k_pad, n_pad = -(-K // 8) * 8, -(-N // 8) * 8
    a_pad = torch.empty((M, k_pad), device=a.device, dtype=a.dtype)
    a_pad[:, :K] = a  # copy 1: A into aligned rows
    a_pad[:, K:] = 0
    b_pad = torch.empty((k_pad, n_pad), device=b.device, dtype=b.dtype)
    b_pad[:K, :N] = b  # copy 2: B into aligned rows
    b_pad[K:, :] = 0
    b_pad[:K, N:] = 0
    bias_pad = None
    if bias is not None:
        bias_pad = torch.zeros(n_pad, device=bias.device, dtype=bias.dtype)
        bias_pad[:N] = bias
    c_pad = gemm_bias_relu(a_pad, b_pad, bias_pad, relu=relu, stage_unaligned=False, **knobs)
    return c_pad[:, :N].contiguous()  # copy 3: drop the padded columns


_INTERPRETER_PROGRAMS = 3  # persistent grid size under the interpreter: several tiles each


def _tma_layout(t: torch.Tensor) -> str | None:
    """How a TMA descriptor can see the 2-D operand t, or None if it cannot without a copy.

    TMA needs a 16-byte aligned base address, a unit stride in the innermost dimension and
    16-byte aligned strides in the other. "row": unit stride along dim 1; "col": along dim 0
    (a transposed view, e.g. `w.t()` for a row-major w).
    """
    item = t.element_size()
    s0, s1 = t.stride()
    if t.data_ptr() % 16:
        return None
    if s1 == 1 and (s0 * item) % 16 == 0 and s0 >= t.shape[1]:
        return "row"
    if s0 == 1 and (s1 * item) % 16 == 0 and s1 >= t.shape[0]:
        return "col"
    return None


def _check_knob_types(**knobs) -> None:
    ranges = dict(block_m=(16, 256), block_n=(16, 256), block_k=(16, 256))
    for name, (low, high) in ranges.items():
        if knobs[name] is not None:
            check_power_of_two(name, knobs[name], low, high)
    if knobs["group_m"] is not None:
        check_int_range("group_m", knobs["group_m"], 1, 1 << 16)
    if knobs["num_warps"] is not None:
        value = knobs["num_warps"]
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"num_warps must be an int, got {type_name(value)}")
        if value not in (1, 2, 4, 8, 16):
            raise ValueError(f"num_warps must be one of 1, 2, 4, 8, 16; got {value!r}")
    if knobs["num_stages"] is not None:
        check_int_range("num_stages", knobs["num_stages"], 1, 8)
    for name in ("persistent", "tma_store", "stream_k"):
        if knobs[name] is not None and not isinstance(knobs[name], bool):
            raise TypeError(f"{name} must be True, False or None (automatic), got "
                            f"{knobs[name]!r}")


def gemm_bias_relu(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None, *,
                   relu: bool = True, block_m: int | None = None, block_n: int | None = None,
                   block_k: int | None = None, group_m: int | None = None,
                   num_warps: int | None = None, num_stages: int | None = None,
                   persistent: bool | None = None, tma_store: bool | None = None,
                   stream_k: bool | None = None,
                   stage_unaligned: bool | None = None) -> torch.Tensor:
    """relu(a @ b + bias) (ReLU optional): float32 accumulation and epilogue, one rounding.

    a: (M, K) and b: (K, N), one dtype, float16 or bfloat16, any strides (read in place, but
    see stage_unaligned: large operands whose rows are not 16-byte aligned are copied).
    bias: (N,) float32, or None. Returns a new contiguous (M, N) tensor of a's dtype. K may be
    0: the result is then relu(bias) broadcast over the rows (or zeros) and A and B are not read.
    Knobs (None: `default_config` for this shape): block_m, block_n, block_k (powers of two in
    [16, 256]), group_m (>= 1), num_warps (1, 2, 4, 8, 16), num_stages (1..8), persistent
    (None: the persistent TMA kernel on compute capability 9.x when the operands allow it and
    PREFER_PERSISTENT; True: require it; False: the pointer kernel), tma_store (persistent
    kernel only; None: store C through a TMA descriptor when N * itemsize is a multiple of 16
    and PREFER_TMA_STORE; True: require it; False: masked pointer stores), stream_k (persistent
    kernel only; None: when PREFER_STREAM_K and the idle part of a partly filled last wave is
    worth at least _STREAM_K_MIN_SAVED_STEPS K-steps (see stream_k_tiles), that wave's tiles are
    shared K-step by K-step among all programs; True: share them whenever the last wave is
    partly filled; False: never), stage_unaligned
    (None: on a GPU, copy operands whose rows are not 16-byte aligned into padded buffers when
    the problem is large enough to pay for the copies; True: always; False: never).
    """
    # -- check ----------------------------------------------------------------------------------
    check_tensor("a", a, dtypes=_DTYPES, ndim=2)
    check_tensor("b", b, dtypes=_DTYPES, ndim=2)
    if b.dtype != a.dtype:
        raise TypeError(f"b must have a's dtype {a.dtype}, got {b.dtype} (mixed operand dtypes "
                        "are not supported: cast one of them first)")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"a is {tuple(a.shape)} and b is {tuple(b.shape)}: a's K = {a.shape[1]} "
                         f"must equal b's K = {b.shape[0]} (a: (M, K), b: (K, N))")
    M, K = a.shape
    N = b.shape[1]
    if bias is not None:
        check_tensor("bias", bias, dtypes=(torch.float32,), ndim=1)
        if bias.shape[0] != N:
            raise ValueError(f"bias must have N = {N} elements (one per column of the output), "
                             f"got shape {tuple(bias.shape)}")
    if not isinstance(relu, bool):
        raise TypeError(f"relu must be True or False, got {relu!r}")
    _check_knob_types(block_m=block_m, block_n=block_n, block_k=block_k, group_m=group_m,
                      num_warps=num_warps, num_stages=num_stages, persistent=persistent,
                      tma_store=tma_store, stream_k=stream_k)
    if stage_unaligned is not None and not isinstance(stage_unaligned, bool):
        raise TypeError(f"stage_unaligned must be True, False or None, got {stage_unaligned!r}")
    check_same("b", b, "a", a, shape=False)
    check_device("a", a)
    if bias is not None and bias.device != a.device:
        raise ValueError(f"bias must be on a's device {a.device}, got {bias.device}")

    on_gpu = not interpreting()
    index = device_index(a)
    # TMA descriptors and vectorized loads need the same thing: 16-byte aligned base and strides
    # with unit stride in one dimension.
    layouts = (_tma_layout(a), _tma_layout(b)) if K > 0 else (None, None)
    tma_ok = None not in layouts
    if stage_unaligned is None:
        stage_unaligned = on_gpu and not tma_ok and K > 0 and M * N * K >= _STAGE_MIN_WORK
    if stage_unaligned and K > 0 and M > 0 and N > 0:
        knobs = dict(block_m=block_m, block_n=block_n, block_k=block_k, group_m=group_m,
                     num_warps=num_warps, num_stages=num_stages, persistent=persistent,
                     tma_store=tma_store, stream_k=stream_k)
        return _gemm_staged(a, b, bias, relu, knobs)
    num_sms = sm_count(index) if on_gpu else _INTERPRETER_PROGRAMS
    config = dict(_default_config_items(M, N, K, num_sms, tma_ok or K == 0, not on_gpu))
    given = dict(block_m=block_m, block_n=block_n, block_k=block_k, group_m=group_m,
                 num_warps=num_warps, num_stages=num_stages)
    config.update({k: v for k, v in given.items() if v is not None})
    per_thread = config["block_m"] * config["block_n"] // (32 * config["num_warps"])
    if per_thread > _MAX_ACC_PER_THREAD:
        raise ValueError(
            f"block_m x block_n = {config['block_m']} x {config['block_n']} float32 accumulators "
            f"over num_warps = {config['num_warps']} warps is {per_thread} registers per thread; "
            f"at most {_MAX_ACC_PER_THREAD} fit without spilling. Use more num_warps or smaller "
            "blocks.")

    if persistent:
        if on_gpu and capability(index)[0] < 9:
            raise ValueError(f"persistent=True needs TMA (compute capability 9.0 or newer); this "
                             f"GPU is {capability(index)}. Use persistent=None or False.")
        if K > 0 and not tma_ok:
            raise ValueError(
                f"persistent=True needs TMA-compatible operands: 16-byte aligned base and strides "
                f"with unit stride in one dimension; got a strides {a.stride()}, b strides "
                f"{b.stride()} ({a.element_size()}-byte elements). Use persistent=None or False.")
    if persistent is None:
        # Not for small problems: at most one tile per SM leaves a persistent grid nothing to
        # loop over (see few_tiles).
        persistent = (on_gpu and PREFER_PERSISTENT and tma_ok
                      and capability(index)[0] == 9 and not few_tiles(M, N, num_sms))
    use_persistent = persistent and K > 0  # K = 0: the pointer kernel's loop never reads A or B
    c_aligned = (N * a.element_size()) % 16 == 0  # C is allocated contiguous: row stride N
    if tma_store and not (persistent and c_aligned):
        raise ValueError(f"tma_store=True needs the persistent kernel (persistent=True) and an "
                         f"output row of a multiple of 16 bytes; got persistent={persistent}, "
                         f"N = {N}. Use tma_store=None or False.")
    if tma_store is None:
        tma_store = PREFER_TMA_STORE and c_aligned
    if stream_k and not persistent:
        raise ValueError(f"stream_k=True needs the persistent kernel (persistent=True); got "
                         f"persistent={persistent}. Use stream_k=None or False.")

    # -- allocate -------------------------------------------------------------------------------
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    if M == 0 or N == 0:
        return c
    if bias is not None and bias.stride(0) != 1:
        # The epilogue reads bias[n] at bias_ptr + n: a strided bias (a slice with a step, an
        # expand()ed scalar with stride 0) is copied once into N contiguous floats, far less
        # than the M x N tile it is added to, so the kernels need no stride for it.
        bias = bias.contiguous()

    # -- launch ---------------------------------------------------------------------------------
    bm, bn, bk = config["block_m"], config["block_n"], config["block_k"]
    common = dict(HAS_BIAS=bias is not None, APPLY_RELU=relu,
                  DOT_IN_FP32=interpreting() and a.dtype == torch.bfloat16,
                  BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=config["group_m"],
                  num_warps=config["num_warps"], num_stages=config["num_stages"])
    if use_persistent:
        if on_gpu:
            # tl.make_tensor_descriptor builds each program's descriptors in a global scratch
            # buffer that Triton obtains from this allocator (a process-wide setting).
            triton.set_allocator(descriptor_scratch)
        tiles = cdiv(M, bm) * cdiv(N, bn)
        programs = min(num_sms, tiles)
        sk_tiles = stream_k_tiles(tiles, programs, cdiv(K, bk), stream_k)
        # Stream-K's workspace, new for every call that shares tiles (so that calls on
        # different streams never share it): two float32 tile slots per program, and one
        # arrival count per shared tile, which must start at 0 (the kernel leaves them at 0
        # again). Without sharing, the kernel never touches them: c stands in, and no memset
        # is launched.
        partials = arrivals = c
        if sk_tiles:
            partials = torch.empty((2 * programs, bm * bn), device=a.device,
                                   dtype=torch.float32)
            arrivals = torch.zeros(sk_tiles, device=a.device, dtype=torch.int32)
        gemm_bias_relu_persistent_kernel[(programs,)](
            a, b, bias, c, partials, arrivals, M, N, K, a.stride(0), a.stride(1), b.stride(0),
            b.stride(1), c.stride(0), c.stride(1), sk_tiles, A_MAJOR_M=layouts[0] == "col",
            B_MAJOR_K=layouts[1] == "col", TMA_STORE=tma_store, NUM_PROGRAMS=programs,
            STREAM_K=sk_tiles > 0, FIXUP_ROWS=min(bm, _MAX_FIXUP_ROWS), **common)
    else:
        grid = (cdiv(M, bm) * cdiv(N, bn),)
        gemm_bias_relu_kernel[grid](
            a, b, bias, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
            c.stride(0), c.stride(1), **common)
    return c
