"""Streaming attention: softmax(Q K^T * scale) V one key block at a time, never the N x N matrix.

What you will practise
- `attention_kernel`: each program owns BLOCK_M query rows and walks the keys BLOCK_N at a
  time. It keeps three running quantities per row (the FlashAttention-2 forward):
  the running maximum `m` of the scores seen so far, the running denominator `l` (sum of
  exp(score - m)) and the running numerator `acc` (the sum of exp(score - m) * v, a
  BLOCK_M x d tile). When a new block raises the maximum, BOTH `acc` and `l` are rescaled by
  alpha = exp(m_old - m_new); the division acc / l happens once, at the end.
- exp2 instead of exp: exp(x) = exp2(x * log2(e)), and log2(e) is folded into the scale once, so
  the inner loop does one fused multiply-add per score and the hardware's native exp2.
- Causal attention with a two-stage loop: key blocks strictly left of the diagonal need no mask,
  the diagonal block is masked (a row sees keys up to and including itself), and blocks right
  of the diagonal are skipped: they hold no work at all.
- Split-KV, outside the exercises: when one program per row block leaves SMs idle (one head,
  or a few), `kv_splits` programs share each row block's keys and write their unnormalised
  (acc, l, m); `combine_splits_kernel` merges them with the same rescaling as the online
  update (the states of two key ranges combine like two steps of the loop).
- The Hopper path, outside the exercises: on an H100/H200, large 16-bit problems at d = 128
  (and mid-size causal ones at d = 64) run a warp-specialized version of the same loop
  written in Gluon (`_attention_hopper.py`): a loader warp streams K and V into shared
  memory while two warpgroups each run the online softmax of their 64 rows, and each
  warpgroup's softmax of block j overlaps its own P_{j-1} V_{j-1} on the tensor cores.
  `warp_specialize` picks or refuses it (`_warp_specialize_pays` says when it is picked on
  its own).
- Ragged N: the program of the last row block owns the tail rows (masked on load and store;
  it is the last program, or the first when causal, which runs row blocks bottom first), and
  keys past N are masked to -inf in the last key block, so they get weight exp(-inf) = 0.

API
- `attention(q, k, v, *, causal=False, scale=None, **knobs)`: one head, (N, d) each; the
  lesson's API.
- `attention_heads(q, k, v, *, causal=False, scale=None, **knobs)`: (H, N, d) each, one launch
  for all heads (a leading grid axis over heads, per-head strides); what the benchmark times.
- `CONFIGS`: the launch configurations a benchmark sweep tries; `default_config(d, dtype, ...)`.
- `_attention_dense`: the textbook formula with the full score matrix, kept only so the lesson
  can compare memory use. The kernels never call it.

Limitations: a bounded teaching implementation
- Forward only: no backward, no dropout, no attention bias, no padding masks other than causal;
  q, k and v have one length N (no cross attention with a different key length).
- Head dims 16, 32, 64, 128; float16, bfloat16, float32 (fp32 runs IEEE fp32 dot products,
  not TF32: correct to fp32 tolerances, but far from tensor-core speed).
- Speed knobs (block sizes, warps, stages, TMA, kv_splits, warp_specialize) are validated
  keyword arguments.
  `CONFIGS` holds the candidates that compile for sm_90 without spills; the defaults come from
  the H200 measurements quoted beside `default_config` and `kv_splits_for` (the validation
  report has every number).
"""

from __future__ import annotations

import functools
import math

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from . import _attention_hopper as _hopper
from ._gpu import capability, cdiv, descriptor_scratch, device_index, next_power_of_2, sm_count
from ._validate import (
    check_device,
    check_int_range,
    check_power_of_two,
    check_tensor,
    interpreting,
    type_name,
)

HEAD_DIMS = (16, 32, 64, 128)
_LOG2E = 1.4426950408889634  # log2(e): exp(x) = exp2(x * log2(e))
_FLOAT32_MAX = 3.4028234663852886e38
_FLOAT32_TINY = 2.0 ** -126  # the smallest normal float32: GPUs flush smaller values to zero
_MAX_GRID_Y = 65535  # CUDA's limit on a grid's second axis


# ---------------------------------------------------------------------------------------------
# Kernel
# ---------------------------------------------------------------------------------------------
@triton.jit
def _attend_key_blocks(acc, l_i, m_i, q, k_src, v_src, head, lo, hi, offs_m, n_ctx, qk_scale,
                       stride_kn, stride_kd, stride_vn, stride_vd,
                       BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, MASKED: tl.constexpr,
                       IS_CAUSAL: tl.constexpr, USE_TMA: tl.constexpr,
                       UPCAST_DOT: tl.constexpr, DOT_PRECISION: tl.constexpr):
    """Fold key blocks [lo, hi) into the running (acc, l_i, m_i) of this program's rows.

    MASKED is a compile-time flag: the unmasked stage pays for no comparisons at all.
    k_src and v_src point at this head's first row (or are TMA descriptors).
    """
    offs_n0 = tl.arange(0, BLOCK_N)
    cols = tl.arange(0, HEAD_DIM)
    # Offsets inside one (BLOCK_N, HEAD_DIM) tile, computed once; each step adds its first row.
    k_offs = offs_n0[:, None] * stride_kn + cols[None, :] * stride_kd
    v_offs = offs_n0[:, None] * stride_vn + cols[None, :] * stride_vd
    for start_n in tl.range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        offs_n = start_n + offs_n0  # (BLOCK_N,) the keys of this step
        # -- load the key tile (BLOCK_N, HEAD_DIM); keys past N read as 0 ----------------------
        if USE_TMA:
            k = k_src.load([head, start_n, 0]).reshape([BLOCK_N, HEAD_DIM])
        elif MASKED:
            k = tl.load(k_src + start_n.to(tl.int64) * stride_kn + k_offs,
                        mask=offs_n[:, None] < n_ctx, other=0.0)
        else:
            k = tl.load(k_src + start_n.to(tl.int64) * stride_kn + k_offs)
        if UPCAST_DOT:
            k = k.to(tl.float32)  # interpreter only: see UPCAST_DOT
        s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION)  # (BLOCK_M, BLOCK_N) fp32
        if MASKED:
            # EXERCISE attention, attention_heads: build `keep` (BLOCK_M, BLOCK_N): key j is kept
            # when it exists (j < n_ctx) and, if IS_CAUSAL, when it is not after the row
            # (row >= j: a row sees its own key, the diagonal). Set dropped scores to -inf.
            keep = offs_n[None, :] < n_ctx
            if IS_CAUSAL:
                keep = keep & (offs_m[:, None] >= offs_n[None, :])
            s = tl.where(keep, s, -float("inf"))
            # END EXERCISE
        # -- load the value tile (BLOCK_N, HEAD_DIM) -------------------------------------------
        if USE_TMA:
            v = v_src.load([head, start_n, 0]).reshape([BLOCK_N, HEAD_DIM])
        elif MASKED:
            v = tl.load(v_src + start_n.to(tl.int64) * stride_vn + v_offs,
                        mask=offs_n[:, None] < n_ctx, other=0.0)
        else:
            v = tl.load(v_src + start_n.to(tl.int64) * stride_vn + v_offs)
        if UPCAST_DOT:
            v = v.to(tl.float32)  # interpreter only: see UPCAST_DOT
        # EXERCISE attention, attention_heads: the online softmax update, in log2 units.
        # m_new: the running max of s * qk_scale; p = exp2(s * qk_scale - m_new); alpha =
        # exp2(m_i - m_new). Rescale BOTH acc and l_i by alpha, then acc += p @ v (p cast to
        # v's dtype for the tensor cores, tl.dot(..., acc, input_precision=DOT_PRECISION)) and
        # l_i += row sums of p; finally m_i = m_new.
        m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)  # (BLOCK_M,)
        p = tl.math.exp2(s * qk_scale - m_new[:, None])  # (BLOCK_M, BLOCK_N), one FMA per score
        alpha = tl.math.exp2(m_i - m_new)  # (BLOCK_M,) <= 1: the old terms shrink
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc, input_precision=DOT_PRECISION)  # fp32 accumulate
        l_i = l_i * alpha + tl.sum(p, 1)
        m_i = m_new
        # END EXERCISE
    return acc, l_i, m_i


@triton.jit
def attention_kernel(
    q_ptr, k_ptr, v_ptr, out_ptr,  # pointers
    acc_part_ptr, m_part_ptr, l_part_ptr,  # KV_SPLITS > 1: each split's state (else unused)
    n_ctx,  # N: rows of q, k, v and out in every head
    qk_scale,  # scale * log2(e): scores in log2 units, so exp2 replaces exp
    stride_qh, stride_qm, stride_qd,  # q strides: head, row, feature
    stride_kh, stride_kn, stride_kd,  # k strides
    stride_vh, stride_vn, stride_vd,  # v strides
    stride_oh, stride_om, stride_od,  # out strides
    HEAD_DIM: tl.constexpr,  # d: the tile width of q, k, v and out
    BLOCK_M: tl.constexpr,  # query rows per program
    BLOCK_N: tl.constexpr,  # keys per loop step (divides BLOCK_M when causal)
    IS_CAUSAL: tl.constexpr,  # row i sees keys 0..i
    USE_TMA: tl.constexpr,  # tiles move through Hopper TMA descriptors instead of pointers
    HOST_DESCRIPTORS: tl.constexpr,  # with USE_TMA: q_ptr .. out_ptr are descriptors the host
                                     # built (else each program builds its own)
    UPCAST_DOT: tl.constexpr,  # interpreter + 16-bit inputs: run tl.dot in fp32 (no bf16 dot
                               # there; numpy's fp16 matmul is ~100x slower than fp32)
    DOT_PRECISION: tl.constexpr,  # "ieee" for fp32 inputs (no TF32 rounding), else "tf32"
    KV_SPLITS: tl.constexpr,  # programs per row block, each on its share of the keys (1: the
                              # lesson's kernel; more when one row block per program leaves
                              # SMs idle)
):
    # Axis 1 runs over (head, split) pairs. With KV_SPLITS = 1 (the lesson's kernel) the
    # split is always 0 and this is just the head.
    head = tl.program_id(1) // KV_SPLITS
    split = tl.program_id(1) % KV_SPLITS
    if IS_CAUSAL:
        # Row blocks near the bottom see the most keys: launch those first, so the short ones
        # fill the gaps at the end instead of a long one starting last.
        start_m = tl.num_programs(0) - 1 - tl.program_id(0)
    else:
        start_m = tl.program_id(0)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)  # (BLOCK_M,) this program's rows

    if USE_TMA and HOST_DESCRIPTORS:
        q_src, k_src, v_src, o_desc = q_ptr, k_ptr, v_ptr, out_ptr
    elif USE_TMA:
        # Hopper's tensor memory accelerator copies whole (1, rows, d) tiles between global and
        # shared memory; a descriptor tells it the tensor's shape and strides. Each program
        # builds its own (in a scratch buffer the launcher's allocator provides). Rows past N
        # load as zeros and are not written: the copy engine clips them itself.
        n_heads = tl.num_programs(1) // KV_SPLITS
        q_src = tl.make_tensor_descriptor(q_ptr, shape=[n_heads, n_ctx, HEAD_DIM],
                                          strides=[stride_qh, stride_qm, 1],
                                          block_shape=[1, BLOCK_M, HEAD_DIM])
        k_src = tl.make_tensor_descriptor(k_ptr, shape=[n_heads, n_ctx, HEAD_DIM],
                                          strides=[stride_kh, stride_kn, 1],
                                          block_shape=[1, BLOCK_N, HEAD_DIM])
        v_src = tl.make_tensor_descriptor(v_ptr, shape=[n_heads, n_ctx, HEAD_DIM],
                                          strides=[stride_vh, stride_vn, 1],
                                          block_shape=[1, BLOCK_N, HEAD_DIM])
        o_desc = tl.make_tensor_descriptor(out_ptr, shape=[n_heads, n_ctx, HEAD_DIM],
                                           strides=[stride_oh, stride_om, 1],
                                           block_shape=[1, BLOCK_M, HEAD_DIM])
    else:
        # int64 before the stride multiply: heads * stride can pass 2^31 elements.
        q_src = q_ptr + head.to(tl.int64) * stride_qh
        k_src = k_ptr + head.to(tl.int64) * stride_kh
        v_src = v_ptr + head.to(tl.int64) * stride_vh
    # q stays in registers (or shared memory) for the whole key loop; rows past N load as 0.
    if USE_TMA:
        q = q_src.load([head, start_m * BLOCK_M, 0]).reshape([BLOCK_M, HEAD_DIM])
    else:
        cols = tl.arange(0, HEAD_DIM)
        q = tl.load(q_src + offs_m.to(tl.int64)[:, None] * stride_qm + cols[None, :] * stride_qd,
                    mask=offs_m[:, None] < n_ctx, other=0.0)  # (BLOCK_M, HEAD_DIM)
    if UPCAST_DOT:
        q = q.to(tl.float32)

    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)  # running max, log2 units
    l_i = tl.zeros([BLOCK_M], tl.float32)  # running denominator
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)  # running numerator: sum of p @ v

    # EXERCISE attention, attention_heads: choose the two stages' key ranges [0, hi1) and
    # [lo2, hi2). Stage 1 takes the key blocks that need no mask; stage 2 the ones that do.
    # Causal: stage 1 = keys left of this program's first row; stage 2 = the diagonal block,
    # cut at N; blocks right of it are skipped. Non-causal: stage 1 = every full key block;
    # stage 2 = the ragged tail block (empty when BLOCK_N divides N).
    if IS_CAUSAL:
        hi1 = start_m * BLOCK_M
        lo2 = hi1
        hi2 = tl.minimum((start_m + 1) * BLOCK_M, n_ctx)
    else:
        hi1 = (n_ctx // BLOCK_N) * BLOCK_N
        lo2 = hi1
        hi2 = n_ctx
    # END EXERCISE
    lo1 = 0
    if KV_SPLITS > 1:
        # Split-KV: this program folds only its share of stage 1's key blocks: ceil(steps /
        # KV_SPLITS) consecutive blocks, so the last splits may get fewer or none (an empty
        # split hands on m = -inf, l = 0, which the merge weighs by 0); the last split also
        # runs stage 2.
        steps = hi1 // BLOCK_N
        per_split = (steps + KV_SPLITS - 1) // KV_SPLITS
        lo1 = tl.minimum(split * per_split, steps) * BLOCK_N
        hi1 = tl.minimum((split + 1) * per_split, steps) * BLOCK_N
        hi2 = tl.where(split == KV_SPLITS - 1, hi2, lo2)
    acc, l_i, m_i = _attend_key_blocks(
        acc, l_i, m_i, q, k_src, v_src, head, lo1, hi1, offs_m, n_ctx, qk_scale,
        stride_kn, stride_kd, stride_vn, stride_vd,
        BLOCK_N, HEAD_DIM, False, IS_CAUSAL, USE_TMA, UPCAST_DOT, DOT_PRECISION)
    acc, l_i, m_i = _attend_key_blocks(
        acc, l_i, m_i, q, k_src, v_src, head, lo2, hi2, offs_m, n_ctx, qk_scale,
        stride_kn, stride_kd, stride_vn, stride_vd,
        BLOCK_N, HEAD_DIM, True, IS_CAUSAL, USE_TMA, UPCAST_DOT, DOT_PRECISION)

    if KV_SPLITS > 1:
        # Not the whole row yet: hand the unnormalised state (acc, l, m) of this split to
        # combine_splits_kernel, in fp32. The workspace has a row for every program row (tail
        # rows included), so no mask is needed.
        rows = tl.program_id(1).to(tl.int64) * (tl.num_programs(0) * BLOCK_M) + offs_m
        cols = tl.arange(0, HEAD_DIM)
        tl.store(acc_part_ptr + rows[:, None] * HEAD_DIM + cols[None, :], acc)
        tl.store(m_part_ptr + rows, m_i)
        tl.store(l_part_ptr + rows, l_i)
    else:
        # EXERCISE attention, attention_heads: divide the running numerator by the running
        # denominator, once per row, after the last key block.
        out = acc / l_i[:, None]  # (BLOCK_M, HEAD_DIM)
        # END EXERCISE
        if USE_TMA:
            # The descriptor clips rows past N by itself.
            o_desc.store([head, start_m * BLOCK_M, 0],
                         out.to(o_desc.dtype).reshape([1, BLOCK_M, HEAD_DIM]))
        else:
            # Round once, at the store; the program owning the tail rows must not write past N.
            cols = tl.arange(0, HEAD_DIM)
            o_ptrs = (out_ptr + head.to(tl.int64) * stride_oh
                      + offs_m.to(tl.int64)[:, None] * stride_om + cols[None, :] * stride_od)
            tl.store(o_ptrs, out.to(out_ptr.dtype.element_ty), mask=offs_m[:, None] < n_ctx)


@triton.jit
def combine_splits_kernel(
    acc_part_ptr, m_part_ptr, l_part_ptr,  # (H * KV_SPLITS, n_pad, d) and (H * KV_SPLITS, n_pad)
    out_ptr, n_ctx, n_pad,  # n_pad: rows per split in the workspace (a multiple of BLOCK_M)
    stride_oh, stride_om, stride_od,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, KV_SPLITS: tl.constexpr,
):
    """Merge the KV_SPLITS partial states of BLOCK_M rows of one head into the output.

    The same rescaling as one step of the online softmax, across programs instead of across
    key blocks: with M = max_s m_s, the row's numerator is sum_s exp2(m_s - M) * acc_s and its
    denominator sum_s exp2(m_s - M) * l_s. An empty split has m_s = -inf and weight 0; the
    last split always holds at least one key, so M is finite.
    """
    head = tl.program_id(1)
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, HEAD_DIM)
    ok = offs_m < n_ctx
    first = head.to(tl.int64) * KV_SPLITS * n_pad  # row 0 of split 0 of this head
    m_max = tl.full([BLOCK_M], -float("inf"), tl.float32)
    for s in range(KV_SPLITS):  # a constexpr bound: a plain loop, not unrolled
        m_max = tl.maximum(m_max, tl.load(m_part_ptr + first + s * n_pad + offs_m, mask=ok,
                                          other=0.0))
    num = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    den = tl.zeros([BLOCK_M], tl.float32)
    for s in range(KV_SPLITS):
        rows = first + s * n_pad + offs_m
        weight = tl.math.exp2(tl.load(m_part_ptr + rows, mask=ok, other=0.0) - m_max)
        den += weight * tl.load(l_part_ptr + rows, mask=ok, other=1.0)
        num += weight[:, None] * tl.load(acc_part_ptr + rows[:, None] * HEAD_DIM + cols[None, :],
                                         mask=ok[:, None], other=0.0)
    out = num / den[:, None]
    o_ptrs = (out_ptr + head.to(tl.int64) * stride_oh
              + offs_m.to(tl.int64)[:, None] * stride_om + cols[None, :] * stride_od)
    tl.store(o_ptrs, out.to(out_ptr.dtype.element_ty), mask=ok[:, None])


# ---------------------------------------------------------------------------------------------
# Launch configurations
# ---------------------------------------------------------------------------------------------
# tma=None means "auto": TMA where the GPU and the strides allow it, if _TMA_BY_DEFAULT is True.
# Compiled for sm_90, TMA uses 20-40 fewer registers per thread than per-thread pointers at the
# same tiles, and the H200 sweep measured it 3-34% faster at 64 x 64 tiles, 4 warps, 3 stages
# (benchmarks/results/sweep-graph-attention-20261130b.json.gz, in git history before commit
# c7fe401; descriptors built on the host at the time).
_TMA_BY_DEFAULT = True
# Where TMA descriptors are built. On the device, each program builds its own: no host cost,
# but the TMA unit then fetches a different descriptor for every program. On the host, once
# per call: 48-117 us more host time than pointer loads (two instances of the lent machine,
# benchmarks/results/diagnostics/profile-host-*), and every program shares the same four
# descriptors. The H200 A/B (benchmarks/results/diagnostics/ab-attention-*;
# bf16, graph timing, 64 x 64 tiles) measured host descriptors 1-11% faster at d = 128 (the
# most on 16 heads x 4096), 5-8% faster at d = 64 on 16 heads x 4096, and 0-3.5% slower at
# d = 64 on 64 heads x 8192 and on one head of 16384. So the host builds them when the problem
# is large enough (heads * N * N * d, halved when causal, at least _HOST_DESCRIPTOR_WORK, about
# 140 us of GPU time) to repay the host time. DESCRIPTORS_ON_HOST = True / False forces one way
# (A/B runs).
DESCRIPTORS_ON_HOST: bool | None = None
_HOST_DESCRIPTOR_WORK = 2**34
# Below that size, the launcher's own plans load by pointers instead, where measured. A
# descriptor a program builds (tl.make_tensor_descriptor) costs that program GPU time before its
# first load, and a problem this small is made of short programs. On the H200 (bf16, graph
# timing, the launcher's plans for 1-16 heads of 4096-16384, d = 64 and 128, both masks;
# diagnostics/probe-attention-pointers-*), descriptors built on the device were slower than
# descriptors built on the host at every plan (those took 1-15% less time), and slower than
# pointer loads at 12 of the 15 plans where the launcher built them on the device. There,
# pointer loads took 6-11% less time at every 64-row tile at d = 128, and 1-15% less at d = 64
# without a mask; at d = 64 with a causal mask they need one more pipeline stage (4; at 3 they
# lost up to 10%), and then took 1-15% less, except on one head of 16384 (1% more). The
# 128 x 64 tile at d = 128 (one head of 8192, no mask) took 20% more on pointers: it keeps TMA.
# The rule was then checked against the plan before it on every problem it changes among 1
# head of 1024-16384, 2 of 8192 and 4 of 4096, both 16-bit
# dtypes (diagnostics/probe-attention-pointers-check-*): 0.79-1.00x the time, 1.005-1.008x on
# one head of 16384 at d = 64 with a mask, but 1.11-1.14x on one head of 1024 at d = 128 (16
# programs, one per SM): sequences shorter than 2048 keep TMA at d = 128. d = 16 and 32 and
# float32 were not measured: TMA there too.
_POINTER_CAUSAL_D64_STAGES = 4
_POINTER_D128_MIN_N = 2048


def _pointers_pay(head_dim: int, dtype: torch.dtype, block_m: int, n_ctx: int) -> bool:
    """Whether the launcher's plan loads by pointers where it would otherwise build TMA
    descriptors on the device (see above)."""
    if dtype == torch.float32 or head_dim not in (64, 128):
        return False
    return head_dim == 64 or (block_m == 64 and n_ctx >= _POINTER_D128_MIN_N)


_FIVE_PER_SM_PROGRAMS = 8192  # 64-row programs at d <= 64 from which five share an SM
_FIVE_PER_SM_REGISTERS = 96  # registers per thread that let five 4-warp programs in (65536)


def default_config(head_dim: int, dtype: torch.dtype, *, causal: bool = False, heads: int = 1,
                   n_ctx: int = 4096) -> dict:
    """Launch knobs used when the caller passes none (starting points for an H200).

    16-bit inputs: 64 query rows per program, 64-key steps, 4 warps, 3 stages, TMA where it
    can run; 128-row programs for large non-causal problems and five 64-row programs per SM
    (registers capped) for very large grids (measured: see below). fp32 inputs
    run IEEE fp32 dot products on the CUDA cores (no tensor cores), whose operands live in
    registers: 64 x 32 tiles over 8 warps, 64 x 16 at d = 128, are the largest that compiled
    without spills. Every key is a launch knob: `attention(q, k, v, **default_config(...))`
    runs the defaults (for the TMA path; `pointer_tile` gives the pointer path's exception).
    """
    if dtype == torch.float32:
        return dict(block_m=64, block_n=32 if head_dim <= 64 else 16, num_warps=8, num_stages=2,
                    tma=None)
    # 64 x 64 tiles over 4 warps, 3 stages, TMA loads: the fastest of the 27 sweep candidates
    # on four of the five swept shapes and 5% behind the fastest on the fifth (16 heads x 4096
    # and one head x 4096-16384, d = 64 and 128, causal and not; H200, bf16, graph timing,
    # benchmarks/results/sweep-graph-attention-20261130b.json.gz, in git history before commit
    # c7fe401). Against 128-row tiles it doubles the number
    # of programs, which one head of a few thousand rows needs to fill 132 SMs.
    # With 512 or more such programs (about 4 per SM) and no causal mask, 128-row programs
    # won in the A/B (benchmarks/results/diagnostics/ab-attention-*, host descriptors):
    # d = 64, 128 x 64 over 8 warps: 154 vs 168 us (16 x 4096), 2474 vs 2643 us (64 x 8192);
    # d = 128, 128 x 64 over 4 warps, 2 stages: 255 vs 257 us, 4181 vs 4506 us. Causal grids
    # keep 64 rows (16 x 4096 causal lost 13-20% with 128).
    # Grids short of programs are split (kv_splits_for): there, without a causal mask, 128-row
    # programs split to about 256 programs beat the best split of 64-row ones by 1-8% from
    # N = 8192 on, and lost by 7-13% at N = 4096 (benchmarks/results/diagnostics/
    # probe-attention-splits-*).
    # Very large grids at d <= 64, with or without a mask: 64-row programs over 4 warps, 2
    # stages (40 KiB of shared memory), registers capped at 96 per thread, so that five
    # programs share an SM instead of two of 128 rows (the compiler's choice, 106 registers,
    # lets four in; 96 does not spill). Measured on the H200 (bf16, graph timing,
    # benchmarks/results/diagnostics/probe-attention-occupancy-*): 64 heads of 8192 (8192
    # programs, 12.4 waves of 660) ran 0.98x cuDNN without a mask and 0.97x-0.98x with one, against
    # the default's 0.95x; at 4096 programs (6.2 waves) it tied, and at 1024-2048 programs
    # it lost 4-12%: a partly filled last wave costs more when each wave holds 660 programs.
    if head_dim <= 64 and heads * -(-n_ctx // 64) >= _FIVE_PER_SM_PROGRAMS:
        return dict(block_m=64, block_n=64, num_warps=4, num_stages=2, tma=None,
                    maxnreg=_FIVE_PER_SM_REGISTERS)
    if not causal and (heads * -(-n_ctx // 64) >= 512 or n_ctx >= 8192):
        if head_dim <= 64:
            return dict(block_m=128, block_n=64, num_warps=8, num_stages=3, tma=None)
        return dict(block_m=128, block_n=64, num_warps=4, num_stages=2, tma=None)
    return dict(block_m=64, block_n=64, num_warps=4, num_stages=3, tma=None)


# The tile above for large problems at d = 128 without a mask was chosen with TMA loads. Where
# TMA does not run (strides it cannot describe, the interpreter, a GPU older than Hopper) the
# same tile spills 920 bytes per thread on sm_90 (tools/compile_sm90.py). Timed on that
# pointer path on the H200 (bf16, graph timing, 16 heads of 4096, 64 of 8192, 4 and 1 of
# 16384; diagnostics/probe-attention-tiles-pointers-*), 128 x 128 tiles over 8 warps with 3
# stages were the fastest of six on every problem, 1.12x-1.18x the 4-warp tile's speed, though
# they spill too (376 bytes, at 3 stages as at 2); the tiles that do not spill reached
# 1.07x-1.12x at best (both ranges against the default's time in the same run). Again: a spill
# is a cost to measure, not a verdict. Sequences shorter than the tile keep the TMA path's
# (shrunk) tile: the swap was measured on long ones only.
_POINTER_TILE_D128 = dict(block_m=128, block_n=128, num_warps=8, num_stages=3)


def pointer_tile(head_dim: int, dtype: torch.dtype, *, causal: bool = False, heads: int = 1,
                 n_ctx: int = 4096) -> dict | None:
    """The tile that replaces default_config's where TMA does not run, or None where the same
    tile serves both paths (measured: see _POINTER_TILE_D128)."""
    if dtype == torch.float32 or head_dim <= 64 or causal:
        return None
    default = default_config(head_dim, dtype, causal=causal, heads=heads, n_ctx=n_ctx)
    if default["block_m"] != 128:  # not the large-problem tile (128 x 64 over 4 warps)
        return None
    return dict(_POINTER_TILE_D128)


# Split-KV. One head of 16384 rows in 64-row programs is 256 programs, each walking all 16384
# keys. Giving each row block KV_SPLITS programs, each on a share of the keys, shortens
# the longest program and lets several programs share an SM (one hides another's softmax
# behind its matrix products), at the price of a small second kernel that merges the splits'
# fp32 states (workspace: KV_SPLITS * N * (d + 2) floats per head; by default every split walks
# at least _SPLIT_MIN_KEYS keys, so that is at most N^2 * (d + 2) / 1024: N^2 / 8 at d = 128).
# Measured on the H200 (bf16, graph timing, one head of 4096-16384 and 16 heads of 4096,
# d = 64 and 128; benchmarks/results/diagnostics/probe-attention-splits-*): the best grids were
# about 2 programs per SM without a causal mask (256 programs: 1.2-2.0x the unsplit kernel's
# time at N = 4096 and 8192, 1.03-1.2x at 16384) and about 4 per SM with one (512 programs,
# 1.4-2.0x; 256 at N = 4096, where 8 splits would leave 512 keys each); grids that already had
# 512 programs or more (16 heads of 4096) only lost by splitting (8-17% at 2 splits).
# Without a mask every program walks the same keys, so the grid runs in waves of 2 programs per
# SM, and a grid that ends on a mostly empty wave wastes it: 3 heads of 16384 (384 programs:
# one wave of 264 and one of 120) ran at 0.72x cuDNN unsplit and 0.90x with 2 splits (768: 97%
# of three waves); 5 heads of 8192 0.72x -> 0.98x with 4, 5 heads of 16384 0.81x -> 0.90x
# with 2 (diagnostics/probe-attention-wave-splits-*). So a grid without a mask is split until
# its waves are at least _SPLIT_WAVE_FILL full, which for grids short of programs is the rule
# above. Causal programs differ in length and even out, so there it is the count alone.
# The waves above are of 128-row programs, 2 per SM. 64-row programs at d <= 64 without a
# mask are counted like causal ones, 4 per SM: 2 to 8 heads of 4096 at d = 64 (64-row programs, pointer
# loads; diagnostics/probe-attention-few-heads-*) ran fastest at about 4 per SM where the
# wave rule stopped at 2: 2 heads 29.9 -> 27.6 us with 4 splits (512 programs) instead of 2,
# 4 heads 53.3 -> 47.2 us with 2 instead of none (0.77x -> 0.87x cuDNN); 3 and 6 heads lost
# nothing to the count (39.6 / 39.7 us, the same 4 splits; 70.4 us, the same 2). Checked
# against the wave rule on every grid it changes among 2-7 heads of 4096 and 2-8 of 2048, both
# 16-bit dtypes (diagnostics/probe-attention-few-heads-check-*): at d = 64 0.875-1.003x the
# time (4 heads 0.75x -> 0.86x cuDNN, 7 heads 0.89x -> 0.96x), but at d = 128 2 heads of 4096
# took 1.15-1.16x with 4 splits: d = 128 keeps the waves. (4 heads of 4096 at d = 64 without
# a mask have since gone to the Hopper path, 0.94x-0.95x in the benchmark: see
# _WARP_SPECIALIZED_PER_SM.)
_MAX_KV_SPLITS = 16
_COMBINE_ROWS = 16  # rows per program of combine_splits_kernel: small tiles, no spills
_SPLIT_PROGRAMS_PER_SM = {False: 2, True: 4}  # the grid a split aims for (counted: True)
_SPLIT_WAVE_FILL = 0.9  # without a mask: how full a grid's waves must be (see above)
_SPLIT_MIN_KEYS = 1024  # keys each split walks, at least
# A split program of 128 rows at d <= 64 without a mask that walks this many keys or more
# prefetches one more K/V block (4 pipeline stages instead of default_config's 3). Measured on
# the H200 (bf16, graph timing, diagnostics/probe-attention-stages-*): 4 stages won 3-4% on
# every split grid whose programs walk 8192 keys (one head of 16384: 0.89x -> 0.93x cuDNN;
# 2 and 3 heads of 16384 in 2 splits) and lost 1-2% at 2048-4096 keys; unsplit programs of
# 16384 keys tied. Why only the split ones gain was not found.
_DEEP_PIPELINE_KEYS = 8192
_DEEP_PIPELINE_STAGES = 4


def kv_splits_for(heads: int, n_ctx: int, block_m: int, causal: bool, q: torch.Tensor) -> int:
    """The default number of key splits: the fewest (a power of two) that give the grid about
    _SPLIT_PROGRAMS_PER_SM programs per SM and, without a causal mask (but for 64-row
    programs at d <= 64), waves of that many programs at least _SPLIT_WAVE_FILL full; 1 for float32 (not
    measured), off the GPU and for grids that already have them."""
    if q.device.type != "cuda" or interpreting() or q.dtype == torch.float32:
        return 1
    programs = heads * cdiv(n_ctx, block_m)
    counted = causal or (block_m <= 64 and q.shape[-1] <= 64)  # the count alone (see above)
    slots = _SPLIT_PROGRAMS_PER_SM[counted] * sm_count(device_index(q))
    splits = 1
    while (not _grid_fills(programs * splits, slots, counted)
           and n_ctx // (2 * splits) >= _SPLIT_MIN_KEYS and 2 * splits <= _MAX_KV_SPLITS):
        splits *= 2
    return splits


def _grid_fills(programs: int, slots: int, counted: bool) -> bool:
    """Whether a grid of `programs` needs no more splits on a GPU that runs `slots` at once;
    counted: by the count alone (causal programs, 64-row programs at d <= 64), not by waves."""
    if counted:  # enough programs (causal ones differ in length and even out)
        return programs >= 0.9 * slots
    # Equal programs run in waves of `slots`; below one wave this is the count above too.
    return programs / (cdiv(programs, slots) * slots) >= _SPLIT_WAVE_FILL


def _sweep_configs() -> list[dict]:
    """Candidates that compile for sm_90 without register spills and fit 227 KiB of shared
    memory at d = 128 (so at d = 64 too), except (128, 64, 4 warps) and the 96-register entry,
    kept for d <= 64 only: at d = 128 they spill (the benchmark records that loss)."""
    tiles = [(64, 32, 4, (2, 3, 4)), (64, 64, 4, (2, 3, 4)), (128, 64, 4, (2, 3, 4)),
             (128, 64, 8, (2, 3, 4)), (128, 128, 8, (2, 3))]
    return [dict(block_m=bm, block_n=bn, num_warps=warps, num_stages=stages, tma=tma)
            for tma in (False, True) for bm, bn, warps, all_stages in tiles
            for stages in all_stages] + [
        # The very large grids' default (default_config), five programs per SM. TMA only: on
        # the pointer path 96 registers spill from d = 32 on (712 bytes per thread at d = 64).
        dict(block_m=64, block_n=64, num_warps=4, num_stages=2, tma=True,
             maxnreg=_FIVE_PER_SM_REGISTERS)]


# What the benchmark sweep tries (16-bit inputs), pointer loads and TMA alike. Static facts
# from compiling for sm_90 with Triton 3.6 (bf16, registers per thread, without a causal mask;
# benchmarks/results/diagnostics/compile-sm90-*, tools/compile_sm90.py):
#   d = 64:  (128, 64, 8 warps, 3 stages) 201 registers with pointer loads, 107 with TMA;
#            (128, 64, 4 warps, 2 stages) 255 and 16 bytes spilled, 189 with TMA.
#   d = 128: (128, 64, 8 warps, 3 stages) 255 with pointer loads, 139 with TMA (129 KiB of
#            shared memory); (128, 128, 8 warps, 2 stages) 255 and 376 bytes spilled, 191 with
#            TMA (161 KiB).
#   Left out: 4 warps with 128 x 128 tiles and 128-row tiles at d = 128 with 4 warps (spill),
#   4 stages of 128 x 128 at d = 128 (288 KiB, does not fit), BLOCK_N > BLOCK_M (causal
#   needs BLOCK_N <= BLOCK_M), and warp specialization (tl.range(warp_specialize=True)):
#   on sm_90 it compiled to identical code with 8 warps and failed to compile with 4.
CONFIGS: list[dict] = _sweep_configs()


_KNOBS = ("block_m", "block_n", "num_warps", "num_stages", "tma", "kv_splits", "maxnreg",
          "warp_specialize")
_TILE_KNOBS = _KNOBS[:-1]  # the Triton kernel's; the warp-specialized path has its own tiles


def _config(knobs: dict, head_dim: int, dtype: torch.dtype, causal: bool, n_ctx: int,
            heads: int = 1) -> dict:
    """The launch configuration: defaults for (d, dtype), overridden by the caller's knobs."""
    if not knobs:
        # Most calls pass no knob: then the configuration depends on the problem's shape only,
        # and is worked out once per shape (host time; fused_gemm does the same).
        config = dict(_default_launch_config(head_dim, dtype, causal, n_ctx, heads))
        if config["pointer_tile"]:  # the cache's own dicts are never handed out
            config["pointer_tile"] = dict(config["pointer_tile"])
        return config
    return _resolve_config(knobs, head_dim, dtype, causal, n_ctx, heads)


@functools.lru_cache(maxsize=1024)
def _default_launch_config(head_dim: int, dtype: torch.dtype, causal: bool, n_ctx: int,
                           heads: int) -> dict:
    """_config without knobs, remembered per shape (callers get a copy: never mutate this)."""
    return _resolve_config({}, head_dim, dtype, causal, n_ctx, heads)


def _resolve_config(knobs: dict, head_dim: int, dtype: torch.dtype, causal: bool, n_ctx: int,
                    heads: int) -> dict:
    """_config's work: check the knobs, start from default_config, apply the knobs."""
    unknown = sorted(set(knobs) - set(_KNOBS))
    if unknown:
        raise TypeError(f"unknown keyword argument(s) {unknown}; the launch knobs are "
                        f"{', '.join(_KNOBS)}")
    explicit = {name: value for name, value in knobs.items() if value is not None}
    # (tma=None stays "auto": the default.)
    config = default_config(head_dim, dtype, causal=causal, heads=heads, n_ctx=n_ctx)
    config["pointer_tile"] = pointer_tile(head_dim, dtype, causal=causal, heads=heads,
                                          n_ctx=n_ctx)
    # Default blocks longer than the sequence only add masked work: shrink them to N (at least
    # 16, the smallest tl.dot tile). Explicit knobs are kept as given.
    fit = max(16, next_power_of_2(n_ctx))
    config["block_m"] = min(config["block_m"], fit)
    config["block_n"] = min(config["block_n"], fit)
    if config["pointer_tile"] and config["pointer_tile"]["block_m"] > fit:
        config["pointer_tile"] = None  # a short sequence: not where the swap was measured
    config.update(explicit)
    own_shape = bool(set(explicit) & {"block_m", "block_n", "num_warps", "num_stages"})
    if own_shape or "maxnreg" in explicit:
        # The caller's tile, or a register cap chosen for the visible tile, is kept as given.
        config["pointer_tile"] = None
    if "maxnreg" not in explicit and own_shape:
        # The default's register cap was measured for its own tile only: the 128 x 64 tile
        # over 8 warps (107 registers uncapped) capped at 80 spilled and ran 6-9x slower.
        config["maxnreg"] = None
    # Whether the cap is the caller's: _launch drops the default's where TMA will not run.
    config["own_maxnreg"] = "maxnreg" in explicit
    if "block_n" not in explicit and isinstance(config["block_m"], int):
        config["block_n"] = min(config["block_n"], config["block_m"])
    check_power_of_two("block_m", config["block_m"], 16, 256)
    check_power_of_two("block_n", config["block_n"], 16, 256)
    check_power_of_two("num_warps", config["num_warps"], 1, 16)
    check_int_range("num_stages", config["num_stages"], 1, 8)
    if config.get("maxnreg") is not None:  # Triton's option: registers per thread at launch
        check_int_range("maxnreg", config["maxnreg"], 32, 255)
    if config.get("kv_splits") is not None:
        check_int_range("kv_splits", config["kv_splits"], 1, _MAX_KV_SPLITS)
    if config["tma"] is not None and not isinstance(config["tma"], bool):
        raise TypeError(f"tma must be a bool or None (auto), got {type_name(config['tma'])}")
    if causal and config["block_n"] > config["block_m"]:
        raise ValueError(f"causal attention needs block_n <= block_m (the diagonal stage steps "
                         f"through one row block), got block_m={config['block_m']}, "
                         f"block_n={config['block_n']}")
    ws = config.get("warp_specialize")
    if ws is not None and not isinstance(ws, bool):
        raise TypeError(f"warp_specialize must be a bool or None (auto), got "
                        f"{type_name(ws)}")
    tile_knobs = sorted(set(explicit) & set(_TILE_KNOBS))
    if ws and tile_knobs:
        raise ValueError(f"warp_specialize=True runs the Hopper kernel's own tiles "
                         f"({_hopper.BLOCK_M} x {_hopper.BLOCK_N}, TMA, no key splits); drop "
                         f"{', '.join(tile_knobs)} or pass warp_specialize=False")
    # Auto (None) picks the warp-specialized path only for a call that chose no Triton tiles.
    config["auto_path"] = not tile_knobs
    return config


# ---------------------------------------------------------------------------------------------
# Launchers: check, allocate, launch
# ---------------------------------------------------------------------------------------------
def _check_inputs(q, k, v, ndim: int, causal) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_tensor(name, t, ndim=ndim)
    for name, t in (("k", k), ("v", v)):
        if t.dtype != q.dtype:
            raise TypeError(f"{name} must have q's dtype {q.dtype}, got {t.dtype}")
        if t.device != q.device:
            raise ValueError(f"{name} must be on q's device {q.device}, got {t.device}")
        if t.shape != q.shape:
            raise ValueError(f"{name} must have q's shape {tuple(q.shape)} (one length N for "
                             f"queries and keys, one head dim d), got {tuple(t.shape)}")
    if q.shape[-1] not in HEAD_DIMS:
        raise ValueError(f"head dim d = q.shape[-1] must be one of {HEAD_DIMS}, got "
                         f"{q.shape[-1]} (shape {tuple(q.shape)})")
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be a bool, got {type_name(causal)}")
    check_device("q", q)


def _check_scale(scale, head_dim: int) -> float:
    if scale is None:
        return head_dim ** -0.5
    if isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise TypeError(f"scale must be a float or None, got {type_name(scale)}")
    try:
        scale = float(scale)
    except OverflowError:  # an int too large for a float
        raise ValueError("scale must be finite and > 0, got an int too large for a float") from None
    if not math.isfinite(scale) or scale <= 0.0:
        raise ValueError(f"scale must be finite and > 0, got {scale}")
    if scale * _LOG2E > _FLOAT32_MAX:
        raise ValueError(f"scale must fit float32 after folding log2(e) in, got {scale:g}")
    if scale * _LOG2E < _FLOAT32_TINY:
        # Folded into float32 it would be 0 (or flushed to 0), and a masked score, -inf * 0,
        # would be NaN.
        raise ValueError(f"scale must be at least 2**-126 / log2(e) (a normal float32 once "
                         f"log2(e) is folded in), got {scale:g}")
    return scale


def _tma_problem(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, interp: bool) -> str | None:
    """Why TMA cannot move tiles of q, k and v, or None when it can. Both paths ask, once per
    call: the Triton kernel's TMA loads and the warp-specialized kernel, which copies by TMA
    only. interp: whether Triton's interpreter runs the kernels (interpreting(), read once)."""
    if interp:
        # Triton's interpreter can run descriptors, but the bounds check this project installs
        # for interpreter runs (checks/device.py) knows plain tensor arguments only.
        return "TMA descriptors are not supported under this project's interpreter runs"
    if q.device.type != "cuda" or capability(device_index(q))[0] < 9:
        return f"TMA needs a GPU of compute capability 9.0 or newer, got {q.device}"
    for name, t in (("q", q), ("k", k), ("v", v)):
        reason = _hopper.tma_stride_problem(t)
        if reason:
            return f"{name}: {reason}"
    return None


# The warp-specialized Hopper path (_attention_hopper.py), where it can run, when the grid of
# 128-row programs suits it: a band of programs per SM for each head dim and mask. Measured on
# the H200 (bf16, graph timing, ratios to SDPA-cuDNN; benchmarks/results/diagnostics/
# probe-attention-wgmma-w*, -paths-* on grids that fill the GPU, -paths-few-* on 0.5 to 3
# programs per SM, the Triton kernel there with the key splits kv_splits_for gives it):
# - d = 128 without a mask: from 0.7 programs per SM. 0.97x-1.06x on 1 to 64 heads against
#   0.64x-0.95x for the Triton kernel (3 heads of 4096, 0.7 per SM: 1.01x against 0.81x); at
#   0.5 per SM (one head of 8192) the Triton kernel's 4 key splits win, 1.35x against 1.01x,
#   and so they did on one head of 18432-20480 (1.09 to 1.21 per SM: 1.12x-1.15x against
#   1.01x) and of 24576 (1.5 per SM: 1.04x-1.06x against 1.00x-1.01x), but not on 16384,
#   21504, 22528 or from 32768 on (0.79x-0.98x against 1.00x-1.01x): where the key splits win
#   depends on how the split count suits the length, which a threshold per SM cannot express
#   (-paths-one-head-*, -paths-edges-*, -paths-one-head-edge-*).
# - d = 128 with a mask: from 0.9 per SM on two heads or more, from 1.3 on one. 2 to 6 heads
#   of 4096-16384 (1.0 to 2.9 per SM): 1.07x-1.73x against 0.88x-1.41x (4 heads of 4096 1.09x
#   against 0.94x); from 3.9 per SM 1.04x-1.37x against 0.86x-1.10x (across runs). One head
#   of 16384 (1.0 per SM) stays with the key splits, 1.49x against 1.03x: a causal grid's
#   programs differ in length, and this path has no splits to even them out. So did one
#   head of 18432-21504 (1.09 to 1.27 per SM: 1.34x-1.47x against 1.19x-1.29x); at 22528
#   (1.33 per SM) the two tied (1.30x-1.33x against 1.31x-1.33x), and one head of 24576 to
#   65536 (1.5 to 3.9 per SM) took the Hopper path's side again, 1.28x-1.56x against 1.02x-1.31x
#   (-paths-one-head-*, -paths-edges-*, -paths-one-head-edge-*). Below 0.9 the splits win (3
#   heads of 4096: 1.11x against 1.07x).
# - d = 64 without a mask: 0.9 to 1.0 per SM, one wave of 128-row programs. 4 heads of 4096,
#   2 of 8192, 1 of 16384 (128 programs each): 0.93x-0.94x against 0.87x / 0.89x / 0.93x for
#   the split Triton kernel. The Triton kernel won at 0.5 to 0.7 per SM (1.01x-1.58x against
#   0.93x-0.95x), at 1.2 to 1.5 (1.10x-1.24x against 0.93x; on 5 and 6 heads of 4096 cuDNN
#   takes as long as on 8) and from 3.9 on (0.95x-0.96x against 0.89x-0.92x). Between 1.9
#   and 2.9 it went both ways, and the rule leaves that range to the Triton kernel: 4 heads of
#   8192 and 2 and 3 of 16384 0.93x-0.96x against 0.92x-0.93x, but 8, 10 and 12 heads of
#   4096 and 6 of 8192 0.85x-0.90x against 0.91x-0.92x (-paths-d64-*).
# - d = 64 with a mask: 1.1 to 4 per SM. 5 heads of 4096 and 3 of 8192 (1.2, 1.5 per SM) 1.15x
#   and 1.28x against 1.01x and 1.07x; about 2 and 4 per SM (N = 4096 to 16384) 0.93x-1.51x
#   against 0.87x-1.16x, but for 3 heads of 16384 (2.9 per SM, 0.99x against 1.01x), 3 of
#   12288 (2.2 per SM, 1.006x against 1.130x, -paths-edges-*) and 8 of 4096 (1.9 per SM, 0.97x
#   against 0.98x in -paths-d64-*, 0.97x against 0.94x in -paths-*). At 1.0 per SM and below
#   the split Triton kernel wins (1.05x-2.00x against 0.95x-0.97x); at 8 and beyond it won too
#   (N = 4096: 0.95x against 0.88x-0.90x; N = 8192: about a tie at 8, 0.94x against 0.95x,
#   then 0.95x against 0.91x-0.93x at 16 and 31), but for N = 16384, where the Hopper path
#   still won at 8 and 16 (1.07x and 0.99x against 0.96x and 0.95x).
_WARP_SPECIALIZED_PER_SM = {  # (head dim, causal): (from, to) programs of 128 rows per SM
    (128, False): (0.7, math.inf), (128, True): (0.9, math.inf),
    (64, False): (0.9, 1.0), (64, True): (1.1, 4.0)}
_WARP_SPECIALIZED_ONE_CAUSAL_HEAD = 1.3  # d = 128, causal, one head: from this many per SM


def _warp_specialize_problem(q, tma_problem: str | None, interp: bool) -> str | None:
    """Why the warp-specialized path cannot run on (H, N, d) q (and its k, v), or None.
    tma_problem: what _tma_problem said of q, k and v (this path moves every tile by TMA)."""
    if interp:
        return "its Gluon kernel does not run under Triton's interpreter"
    reason = _hopper.device_problem(q)
    if reason:
        return reason
    return f"its copies are TMA's: {tma_problem}" if tma_problem else None


def _warp_specialize_pays(heads: int, n_ctx: int, head_dim: int, causal: bool,
                          q: torch.Tensor) -> bool:
    """Whether auto picks the warp-specialized path (where it can run): see above."""
    band = _WARP_SPECIALIZED_PER_SM.get((head_dim, causal))
    if band is None:
        return False
    low, high = band
    if head_dim == 128 and causal and heads == 1:
        low = _WARP_SPECIALIZED_ONE_CAUSAL_HEAD  # the key splits even out its row blocks
    return low <= _hopper.programs(heads, n_ctx) / sm_count(device_index(q)) <= high


def _launch(q, k, v, causal: bool, scale: float, config: dict) -> torch.Tensor:
    """Run the kernel on (H, N, d) q, k, v (any strides); return a new contiguous (H, N, d)."""
    heads, n_ctx, head_dim = q.shape
    if heads > _MAX_GRID_Y:  # heads (times key splits) run along the grid's second axis
        raise ValueError(f"at most {_MAX_GRID_Y} heads per call (a CUDA grid's second axis), "
                         f"got {heads}: split the heads over several calls")
    qk_scale = scale * _LOG2E  # fold log2(e) into the scale: exp(x) = exp2(x * log2(e))
    # Host time: everything below runs on every call, and one head of a short sequence spends
    # more time here than on the GPU. So this function reads the environment once, and q, k,
    # v's layouts are checked for TMA once, for both paths (tools/profile_host.py --parts).
    interp = interpreting()
    tma_problem = _tma_problem(q, k, v, interp)
    ws = config.get("warp_specialize")  # True, False or None (auto)
    if ws is not False:
        problem = _warp_specialize_problem(q, tma_problem, interp)
        if ws and problem:
            raise ValueError(f"warp_specialize=True: {problem}")
        ws = problem is None and (ws or (config["auto_path"] and _warp_specialize_pays(
            heads, n_ctx, head_dim, causal, q)))
    if ws:
        out = torch.empty((heads, n_ctx, head_dim), dtype=q.dtype, device=q.device)
        if out.numel():
            _hopper.launch(q, k, v, out, causal, qk_scale)
        return out
    use_tma = config["tma"]  # True, False or None (auto)
    if use_tma is not False:
        if use_tma and tma_problem:
            raise ValueError(f"tma=True: {tma_problem}")
        use_tma = tma_problem is None and (use_tma or _TMA_BY_DEFAULT)
    host_descriptors = use_tma and (
        DESCRIPTORS_ON_HOST if DESCRIPTORS_ON_HOST is not None else
        heads * n_ctx * n_ctx * head_dim // (2 if causal else 1) >= _HOST_DESCRIPTOR_WORK)
    pointer_stages = None  # the stages _POINTER_CAUSAL_D64_STAGES sets, where it does
    if (use_tma and not host_descriptors and DESCRIPTORS_ON_HOST is None
            and config["auto_path"] and _pointers_pay(head_dim, q.dtype, config["block_m"], n_ctx)):
        use_tma = False  # a small problem: pointer loads beat device-built descriptors
        if causal and head_dim == 64:
            pointer_stages = _POINTER_CAUSAL_D64_STAGES
    maxnreg = config.get("maxnreg")
    if not config.get("own_maxnreg") and not use_tma:
        maxnreg = None  # the default's cap fits the TMA kernel; pointer loads would spill
    if not use_tma and config.get("pointer_tile"):
        config = {**config, **config["pointer_tile"]}  # the default's tile for pointer loads
    out = torch.empty((heads, n_ctx, head_dim), dtype=q.dtype, device=q.device)
    if out.numel() == 0:
        return out
    block_m, block_n = config["block_m"], config["block_n"]
    operands = (q, k, v, out)
    if host_descriptors:
        operands = tuple(TensorDescriptor(t, list(t.shape), list(t.stride()), [1, rows, head_dim])
                         for t, rows in zip(operands, (block_m, block_n, block_n, block_m), strict=True))
    elif use_tma:
        # Smaller problems that keep TMA (see _pointers_pay): each program builds its
        # descriptors (tl.make_tensor_descriptor); building four on the host costs more time
        # per call than the whole kernel at small N.
        # Triton gets their scratch memory from this allocator (a process-wide setting).
        triton.set_allocator(descriptor_scratch)
    row_blocks = cdiv(n_ctx, block_m)
    splits = config.get("kv_splits")
    if splits is None:
        splits = kv_splits_for(heads, n_ctx, block_m, causal, q)
    splits = min(splits, cdiv(n_ctx, block_n))  # at most one split per key block
    if heads * splits > _MAX_GRID_Y:
        raise ValueError(f"kv_splits = {splits} over {heads} heads is {heads * splits} programs "
                         f"along the grid's second axis; CUDA allows {_MAX_GRID_Y}. Use fewer "
                         "kv_splits.")
    num_stages = pointer_stages or config["num_stages"]
    if (config["auto_path"] and splits > 1 and n_ctx // splits >= _DEEP_PIPELINE_KEYS
            and block_m == 128 and head_dim <= 64 and not causal):
        num_stages = _DEEP_PIPELINE_STAGES  # long split programs: see _DEEP_PIPELINE_KEYS
    workspace = (out, out, out)  # KV_SPLITS = 1: never touched
    if splits > 1:
        n_pad = row_blocks * block_m
        workspace = (torch.empty((heads * splits, n_pad, head_dim), dtype=torch.float32,
                                 device=q.device),
                     torch.empty((heads * splits, n_pad), dtype=torch.float32, device=q.device),
                     torch.empty((heads * splits, n_pad), dtype=torch.float32, device=q.device))
    attention_kernel[(row_blocks, heads * splits)](
        *operands, *workspace, n_ctx, qk_scale,
        *q.stride(), *k.stride(), *v.stride(), *out.stride(),
        HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n, IS_CAUSAL=causal,
        USE_TMA=use_tma, HOST_DESCRIPTORS=host_descriptors,
        UPCAST_DOT=interp and q.dtype != torch.float32,
        DOT_PRECISION="ieee" if q.dtype == torch.float32 else "tf32",
        KV_SPLITS=splits, num_warps=config["num_warps"], num_stages=num_stages,
        **({} if maxnreg is None else {"maxnreg": maxnreg}),
    )
    if splits > 1:
        combine_splits_kernel[(cdiv(n_ctx, _COMBINE_ROWS), heads)](
            *workspace, out, n_ctx, n_pad, *out.stride(),
            HEAD_DIM=head_dim, BLOCK_M=_COMBINE_ROWS, KV_SPLITS=splits, num_warps=4)
    return out


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool = False,
              scale: float | None = None, **knobs) -> torch.Tensor:
    """softmax(q @ k.T * scale [+ causal mask]) @ v for one head, without an N x N matrix.

    q, k, v: (N, d) tensors of one dtype (float16, bfloat16, float32) and device, any strides
    (slices of a packed qkv tensor work as they are); d in {16, 32, 64, 128}.
    causal: row i attends to keys 0..i (its own key included).
    scale: a finite float > 0; default d ** -0.5.
    knobs: block_m, block_n, num_warps, num_stages, tma (see CONFIGS and default_config),
    kv_splits (programs per row block, each on a share of the keys; see kv_splits_for),
    maxnreg (registers per thread at launch, 32..255; None: the compiler's choice),
    warp_specialize (True: the Hopper path, or a ValueError saying why it cannot run; False:
    never; None, the default: where `_warp_specialize_pays` and no tile knob is given).
    Returns a new contiguous (N, d) tensor of q's dtype.
    """
    _check_inputs(q, k, v, 2, causal)
    scale = _check_scale(scale, q.shape[-1])
    config = _config(knobs, q.shape[-1], q.dtype, causal, q.shape[0])
    # One head is the H = 1 case of the batched kernel: q[None] is a view, not a copy.
    return _launch(q[None], k[None], v[None], causal, scale, config)[0]


def attention_heads(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool = False,
                    scale: float | None = None, **knobs) -> torch.Tensor:
    """`attention` for H heads at once: q, k, v are (H, N, d), any strides; one launch.

    A (B, H, N, d) batch is (B * H, N, d) after a reshape (a view when B and H are contiguous).
    Returns a new contiguous (H, N, d) tensor of q's dtype.
    """
    _check_inputs(q, k, v, 3, causal)
    scale = _check_scale(scale, q.shape[-1])
    config = _config(knobs, q.shape[-1], q.dtype, causal, q.shape[1], q.shape[0])
    return _launch(q, k, v, causal, scale, config)


def _attention_dense(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool = False,
                     scale: float | None = None) -> torch.Tensor:
    """The textbook formula, materialising the (N, N) float32 score matrix: the lesson compares
    its memory with the kernel's. 4 * N * N bytes: 1 GiB at N = 16384, for one head."""
    n_ctx, head_dim = q.shape
    scale = head_dim ** -0.5 if scale is None else scale
    scores = (q.float() @ k.float().T) * scale  # (N, N)
    if causal:
        above = torch.ones((n_ctx, n_ctx), dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(above, -float("inf"))
    return (scores.softmax(dim=-1) @ v.float()).to(q.dtype)
