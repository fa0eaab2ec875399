"""Strided softmax: softmax over either dimension of a 2-D tensor with arbitrary strides.

What you will learn
- Address arithmetic with both strides: element (i, j) of a view lives at
  `base + i * stride_0 + j * stride_1`, whatever the view is (transposed, sliced, stepped, a
  storage offset, or broadcast with a stride of 0). The kernel is handed the strides and reads
  the view in place: it never copies the input.
- Softmax over dim 0 is softmax over the rows of the transposed view: swap the two sizes and the
  two strides, copy nothing. Every call becomes "reduce along R, independent along I".
- Two ways to give a program its work, picked from the strides:
  * path A (`softmax_along_kernel`): a program owns whole rows; its lanes run along each row.
    Right when the row is the contiguous dimension: each load is one coalesced stretch.
  * path B (`softmax_across_kernel`): a program owns BLOCK_I neighbouring rows that sit next to
    each other in memory (a transposed input); its lanes run across the rows, so each load is
    coalesced along the contiguous dimension, and it walks down the rows in chunks of BLOCK_R,
    keeping a running (max, sum) per row.
  * path B, split (`softmax_across_partial_kernel` + `softmax_across_normalize_kernel`): when
    the reduction is long and the strips are few, each strip is cut into `splits` slices along
    the reduction, one program per slice: stage 1 writes each slice's (max, sum), stage 2
    merges them (the merge of workshop 5) and normalises its slice. Many more programs, and
    wider (64-byte) rows per load, at the price of one extra launch.
  * path B, exchange (`softmax_across_exchange_kernel`, float32 by default): the same slices in
    one kernel. Each program keeps its slice's exp(x - m) in registers, publishes its (max,
    sum), waits for the other slices of its strip and scales its registers: x is read once.
    Programs take tickets so the wait cannot deadlock; Triton's interpreter, which runs
    programs one at a time, cannot run it.
  * path B, exchange in shared memory (`softmax_across_exchange_smem_kernel`, 16-bit by default
    on compute capability 9.x): the same exchange written in Gluon, Triton's lower-level
    dialect with explicit layouts and shared memory. The slice waits in shared memory instead
    of registers, so more slices wait per SM at once (lesson 1, section 5). Not an exercise.
- Tail ownership in two flavours: lanes past the end of a row are loaded as -inf (they take part
  in the max and the sum, and must change neither); lanes past the last row compute throwaway
  values and are never stored.

Limitations
- x is 2-D, float16, bfloat16 or float32; statistics in float32, one rounding at the store.
- Any width works. Path A holds rows of up to 32768 elements in registers (one read, one
  write); wider rows take a second pass over the input (one more read). Path B holds the whole
  reduction only for short rows (up to 2048) and walks longer ones in two passes, split over
  several programs per strip when there are few strips; float32 rows of up to 32768 on a GPU
  take the exchange instead (one read), 16-bit ones its shared-memory version on compute
  capability 9.x. 16-bit transposed rows longer than 8192 stay under 0.6 of the copy
  bandwidth (on the H200, graph timing: about 0.62 at 4096, 0.63 at 8192, 0.59-0.6 at 16384,
  0.52-0.53 at 32768; the validation report gives every run's numbers and says why). Very wide
  contiguous rows with few of them leave most of the GPU idle on path A: that is the split softmax
  workshop's subject.
- Rows of -inf entries behave as torch's softmax (a row of only -inf gives NaN).
- Written for, and to be measured on, an NVIDIA H200 (see the validation report for numbers).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import triton
import triton.language as tl

try:  # Gluon: Triton's lower-level dialect (explicit layouts, explicit shared memory); GPU only
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.ampere import async_copy
except ImportError:  # an older Triton: no shared-memory exchange (smem=None never picks it)
    gluon = gl = async_copy = None

from ._gpu import capability, cdiv, device_index, sm_count
from ._validate import (
    check_device,
    check_dim,
    check_int_range,
    check_power_of_two,
    check_tensor,
    interpreting,
    type_name,
)

# exp(x) = 2^(x * log2(e)). Every exponential below is a tl.exp2 of a product with LOG2E:
# Triton 3.6 compiles tl.exp2 on float32 to the GPU's one-instruction ex2 (flushing results
# below 2^-126 to zero, far under any tolerance), but tl.exp to a slower ex2 that keeps them.
# With 16-bit inputs these kernels run out of instructions before they run out of bandwidth,
# so each instruction per element counts (lesson 1, section 8).
LOG2E = tl.constexpr(1.4426950408889634)

_MAX_ONE_BLOCK = 32768  # path A: widest row held in registers (16 warps: 64 fp32 per thread)
_MAX_TILE = 65536  # most elements one program may hold in one block (block_r * block_i)
# Path A: narrow rows are packed block_i to a program up to this many bytes of input (2048
# 16-bit or 1024 float32 elements). H200 probe (graph timing, diagnostics/probe-strided-
# exchange-*): float32 rows of 256 ran 0.97x torch.softmax at 2048 elements per program and
# 1.00x at 1024; rows of 512 1.00x and 1.03x.
_ROW_TILE_BYTES = 4096
_WIDE_CHUNK = 8192  # path A: chunk of the two-pass walk over rows wider than _MAX_ONE_BLOCK
_STRIP_TILE = 16384  # 2-D tiles: largest tile that keeps a whole reduction in registers
_CHUNK_TILE = 4096  # 2-D tiles: chunk of a two-pass walk (BLOCK_R x BLOCK_I)
_TRANSPOSE_SIDE = 16  # 2-D tiles: at least one 32-byte sector of float16 along the output's rows
# Path B, two passes (long rows of a transposed input): large chunks keep many bytes in flight
# per program. On the H200 sweep (graph timing, float16; benchmarks/results/sweep-graph-softmax-
# 20261130b.json.gz, removed from the folder in commit c7fe401 and kept in git history)
# 16K-element chunks over 8 warps ran 1.79 TB/s on a transposed 4096 x 4096 (1024 x 16 chunks)
# and 1.47 TB/s on 2048 x 32768 (2048 x 8), against 0.99 for 4K-element chunks over 8 warps.
_ACROSS_CHUNK_TILE = 16384
_ACROSS_WARPS = 8
_ACROSS_PROGRAMS = 256  # at least this many programs (about 2 per SM) before widening BLOCK_I
# Path B, one block: the whole reduction of a strip of at least _ONE_BLOCK_SIDE rows in one
# _STRIP_TILE tile, over _ONE_BLOCK_WARPS warps. H200 sweep (graph timing, float16, 128 MiB
# transposed tensors; benchmarks/results/sweep-graph-strided-20261130e.json.gz, in git history
# before commit c7fe401, and diagnostics/sweep-strided-*):
# a 2048 x 8 tile over 4 warps ran 32768 x 2048 at 103 us (0.63 of copy), where the previous
# default walked it in two passes in 135 us; 4 warps ran 262144 x 256 at 76 us, 16 at 126 us.
_ONE_BLOCK_SIDE = 8
_ONE_BLOCK_WARPS = 4
# Path B, split: strips of _SPLIT_SIDE rows (64 bytes of float16 per load), each cut into up
# to _MAX_SPLITS slices of at least _MIN_SPLIT_ROWS positions, for about _SPLIT_PROGRAMS
# programs in all (several per SM on 132 SMs), _SPLIT_CHUNK positions per chunk over
# _SPLIT_WARPS warps: the fastest split candidates of the sweeps (2048 x 32768: 139-141 us,
# against 150 us for 256 x 64 chunks over 8 warps and 183 us for the previous two-pass
# default without a split).
_SPLIT_SIDE = 32
_SPLIT_CHUNK = 512
_SPLIT_WARPS = 4
_MAX_SPLITS = 64
_MIN_SPLIT_ROWS = 512
_SPLIT_PROGRAMS = 1024
# Path B, exchange (one kernel, x read once): each program holds one slice of _EXCHANGE_TILE
# elements, at least _EXCHANGE_MIN_SLICE positions long, with at most _EXCHANGE_SLICES slices
# per strip, over _EXCHANGE_WARPS warps (about 155 registers a thread: 3 programs per SM).
# Chosen by default for float32 rows too long for one tile (over 2048) and at most
# _EXCHANGE_MAX_AUTO positions. H200 probe (graph timing, 2^26-element transposed views,
# diagnostics/probe-strided-exchange-*): float32 0.77 / 0.74 / 0.69 / 0.61 of copy at 4096 /
# 8192 / 16384 / 32768 positions, against 0.56 for the two-kernel split; float16 0.47 at best,
# as the split, and 0.19-0.40 at 32768 across the slice shapes probed (a program moves half
# the bytes for the same fixed chain of ticket, load, publish, wait, merge, store, and the
# chain's latency dominates), so 16-bit inputs take the shared-memory exchange below where
# they can.
_EXCHANGE_TILE = 8192
_EXCHANGE_MIN_SLICE = 256
_EXCHANGE_SLICES = 64
_EXCHANGE_WARPS = 4
_EXCHANGE_MAX_AUTO = 32768
# Path B, exchange through shared memory (softmax_across_exchange_smem_kernel, Gluon): the slice
# waits in shared memory instead of registers. Default for 16-bit rows of 2049 to
# _EXCHANGE_MAX_AUTO positions on compute capability 9.x, x with unit stride along I and
# 16-byte aligned rows. Slices of (block_r, block_i, num_warps) = _SMEM_SHORT up to 4096
# positions, _SMEM_LONG beyond (64 KiB of float16 each: three programs per SM), float32
# _SMEM_FLOAT32 when asked for (smem=True; the register exchange is faster there). H200 probe
# (graph timing, 128 MiB transposed views, diagnostics/probe-strided-gluon-*): float16 0.60 /
# 0.59 / 0.55 / 0.51 of copy at 4096 / 8192 / 16384 / 32768 positions, against 0.47 for the
# split and the register exchange. _SMEM_LONG took 8 warps until the twentieth session's sweep
# and probe (tools/probe_strided_warps.py, diagnostics/probe-strided-warps-*: three sets of
# interleaved rounds, float16 and bfloat16): with 4 warps the same slices ran 0.577-0.586 ->
# 0.64-0.65 of copy at 8192 positions, 0.56-0.57 -> 0.60-0.62 at 16384 and 0.51-0.52 ->
# 0.53-0.54 at 32768. With 4 warps the other slice shapes that fit 64 KiB still lost (--slices,
# diagnostics/probe-strided-slices-*: 8.5-59% more time at 8192-32768 positions; the
# default's own shape with 2 warps 6-10% more), except
# 1024 x 32 at 32768 positions, which took 0.2-0.9% less time: inside the sets' spread.
_SMEM_SHORT = (1024, 32, 4)
_SMEM_LONG = (512, 64, 4)
_SMEM_FLOAT32 = (512, 32, 4)
_SMEM_CHUNK = 64  # positions per chunk: each chunk passes through registers on its own
_SMEM_MAX_BYTES = 65536  # a slice in shared memory: at most 64 KiB, so three fit an SM
PATHS = ("A", "B")

# Candidate launch knobs for a benchmark sweep (each is a dict of keyword arguments; a knob left
# out keeps the launcher's default). The knobs mean the same on both paths: block_r elements
# along the reduction per block (a block covering the whole row means one pass), block_i rows
# per program, num_warps warps per program, num_stages the software-pipelining depth of the
# two-pass loops, splits (path B only) slices of the reduction per strip. The sweep runs every
# entry on a contiguous 4096 x 4096 float16 tensor (path A) and on transposed 8192 x 8192,
# 2048 x 32768, 32768 x 2048 and 262144 x 256 ones (path B); an entry that does not apply (a
# tile too large, splits on path A) raises ValueError (skipped).
CONFIGS = (
    # path A, the whole 4096-wide row in one block: warps per row (64 .. 8 elements per thread)
    [dict(num_warps=w) for w in (2, 4, 8, 16)]
    # path A, two rows per program; a two-pass walk in 1024/2048 chunks (reads x twice)
    + [dict(block_i=2, num_warps=w) for w in (8, 16)]
    + [dict(block_r=r, num_warps=w) for r in (1024, 2048) for w in (4, 8)]
    # path B, two passes in one kernel over (block_r x block_i) chunks of 4K to 16K elements:
    # more rows per program = longer coalesced stretches per load, fewer programs
    + [dict(block_r=r, block_i=i, num_warps=w)
       for r, i in ((2048, 8), (1024, 8), (4096, 4), (1024, 16), (512, 16)) for w in (4, 8)]
    # path B split along the reduction (two kernels): chunk shape, slices per strip
    + [dict(block_r=r, block_i=i, splits=sp, num_warps=4)
       for r, i in ((2048, 8), (1024, 16), (512, 32), (4096, 4)) for sp in (4, 8, 16, 32)]
    # rows per program alone (short transposed rows: the strip width of the one-block case)
    + [dict(block_i=i, num_warps=w) for i in (16, 32, 64) for w in (2, 4, 8)]
)


class Plan(NamedTuple):
    """How `softmax(x, dim)` runs: the normalised problem and the launch knobs."""

    path: str  # "A": lanes along each row; "B": lanes across neighbouring rows
    n_r: int  # length of the reduction (the softmax rows)
    n_i: int  # number of independent rows
    stride_xr: int  # input: step between neighbours along the reduction
    stride_xi: int  # input: step between neighbouring rows
    stride_or: int  # output (contiguous): the same two steps
    stride_oi: int
    block_r: int  # elements along the reduction per block
    block_i: int  # rows per program
    one_block: bool  # the whole reduction fits one block (one read of x instead of two)
    num_warps: int
    num_stages: int | None  # None: Triton's default
    grid: int  # number of programs along I (strips of block_i rows)
    splits: int = 1  # path B: slices of the reduction per strip, one program each (1: no split)
    rows_per_split: int = 0  # positions along the reduction per slice (a multiple of block_r)
    exchange: bool = False  # path B split in one kernel: slices swap statistics, x read once
    smem: bool = False  # the exchange holds its slice in shared memory (the Gluon kernel)


@triton.jit
def _load_x(x_ptr, i, r, stride_xi, stride_xr, i_ok, r_ok):
    """x[i, r] in float32 for a tile of (i, r) index pairs (i and r broadcast to the tile shape).

    Every load of x in both kernels goes through here, so the address arithmetic, the masks and
    the upcast are written once.
    """
    # EXERCISE softmax, load: load the tile of x at row i, position r of the normalised problem:
    # the address is x_ptr + i * stride_xi + r * stride_xr (both strides: any view works).
    # Mask with i_ok & r_ok. Lanes past the end of a row (r_ok false) must load -inf: they take
    # part in the max and the sum and must change neither. Convert to float32 (statistics stay
    # in fp32; the interpreter has no bf16 arithmetic). Lanes past the last row (i_ok false) are
    # never stored: set them to 0.0, so they compute harmless numbers instead of
    # -inf - (-inf) = NaN.
    x = tl.load(x_ptr + i * stride_xi + r * stride_xr, mask=i_ok & r_ok,
                other=-float("inf")).to(tl.float32)
    x = tl.where(i_ok, x, 0.0)
    # END EXERCISE
    return x


@triton.jit
def softmax_along_kernel(
    x_ptr, out_ptr,  # pointers
    n_i, n_r,  # sizes: rows, elements per row (the reduction)
    stride_xi, stride_xr,  # input strides: between rows, along a row (any value, 0 included)
    stride_oi, stride_or,  # output strides (the output is contiguous; one of them is 1)
    BLOCK_I: tl.constexpr,  # rows per program (several for narrow rows)
    BLOCK_R: tl.constexpr,  # elements of a row per block
    ONE_BLOCK: tl.constexpr,  # BLOCK_R >= n_r: the row stays in registers, x is read once
):
    """Path A: each program owns BLOCK_I whole rows; lanes run along the rows."""
    pid = tl.program_id(0).to(tl.int64)  # int64 before any stride multiply: spans pass 2^31
    i = (pid * BLOCK_I + tl.arange(0, BLOCK_I))[:, None]  # (BLOCK_I, 1) rows of this program
    i_ok = i < n_i  # the last program may own rows past the end
    r0 = tl.arange(0, BLOCK_R).to(tl.int64)[None, :]  # (1, BLOCK_R) positions along a row
    out_rows = out_ptr + i * stride_oi  # (BLOCK_I, 1)
    if ONE_BLOCK:
        r_ok = r0 < n_r
        x = _load_x(x_ptr, i, r0, stride_xi, stride_xr, i_ok, r_ok)  # (BLOCK_I, BLOCK_R)
        # EXERCISE softmax, rows: softmax of each row of the tile: subtract the row max (so no
        # exp overflows), exponentiate, divide by the row sum, and store rounded once to the output
        # dtype at out_rows + r0 * stride_or, masked to real rows and real columns.
        m = tl.max(x, axis=1)  # (BLOCK_I,)
        numerator = tl.exp2((x - m[:, None]) * LOG2E)  # exp(x - m)
        y = numerator * (1.0 / tl.sum(numerator, axis=1))[:, None]  # one divide per row
        tl.store(out_rows + r0 * stride_or, y.to(out_ptr.dtype.element_ty), mask=i_ok & r_ok)
        # END EXERCISE
    else:
        # Pass 1: walk the row block by block with a running (max m, sum s of exp(x - m)).
        m = tl.full([BLOCK_I], -float("inf"), tl.float32)
        s = tl.zeros([BLOCK_I], tl.float32)
        for start in range(0, n_r, BLOCK_R):
            r = start + r0
            x = _load_x(x_ptr, i, r, stride_xi, stride_xr, i_ok, r < n_r)
            m_new = tl.maximum(m, tl.max(x, axis=1))
            # A row whose values so far are all -inf (masked logits) still has m_new = -inf:
            # shift by 0 then, so -inf - (-inf) never makes a NaN.
            shift = tl.where(m_new == -float("inf"), 0.0, m_new)
            s = s * tl.exp2((m - shift) * LOG2E) + tl.sum(tl.exp2((x - shift[:, None]) * LOG2E),
                                                          axis=1)
            m = m_new
        # Pass 2: read the row again, normalise with the final statistics, store.
        # exp(x - m) / s = 2^((x - m) * log2(e) - log2(s)): no division per element. (Not
        # 2^(x * log2(e) - c) with c folded: m * log2(e) rounded to float32 is off by up to
        # 5e-4 for logits near 1e4, and so would every output be.)
        log2_s = tl.log2(s)  # (BLOCK_I,)
        for start in range(0, n_r, BLOCK_R):
            r = start + r0
            r_ok = r < n_r
            x = _load_x(x_ptr, i, r, stride_xi, stride_xr, i_ok, r_ok)
            y = tl.exp2((x - m[:, None]) * LOG2E - log2_s[:, None])
            tl.store(out_rows + r * stride_or, y.to(out_ptr.dtype.element_ty), mask=i_ok & r_ok)


@triton.jit
def _across_stats(x_ptr, i, i_ok, r0, r_begin, r_end, n_r, stride_xi, stride_xr,
                  BLOCK_I: tl.constexpr, BLOCK_R: tl.constexpr):
    """Path B, first pass: the running (max, sum of exp(x - max)) of each of the BLOCK_I rows
    over positions [r_begin, r_end) of the reduction (cut at n_r), one chunk at a time."""
    m = tl.full([BLOCK_I], -float("inf"), tl.float32)  # running max of each row
    s = tl.zeros([BLOCK_I], tl.float32)  # running sum of exp(x - m) of each row
    for start in range(r_begin, r_end, BLOCK_R):
        r = start + r0
        x = _load_x(x_ptr, i, r, stride_xi, stride_xr, i_ok, r < n_r)  # (BLOCK_R, BLOCK_I)
        # EXERCISE softmax, strips: fold this chunk into the running statistics of each row
        # (column of the tile): m_new = max(m, chunk max); rescale the old sum by
        # exp(m - m_new) and add the chunk's sum of exp(x - m_new). While a row has seen
        # only -inf, m_new is -inf: shift by 0 instead, so -inf - (-inf) never makes a NaN.
        m_new = tl.maximum(m, tl.max(x, axis=0))
        shift = tl.where(m_new == -float("inf"), 0.0, m_new)
        s = s * tl.exp2((m - shift) * LOG2E) + tl.sum(tl.exp2((x - shift[None, :]) * LOG2E),
                                                      axis=0)
        m = m_new
        # END EXERCISE
    return m, s


@triton.jit
def _across_normalize(x_ptr, out_ptr, i, i_ok, r0, r_begin, r_end, n_r, m, s,
                      stride_xi, stride_xr, stride_oi, stride_or, BLOCK_R: tl.constexpr):
    """Path B, second pass: read positions [r_begin, r_end) again, normalise each row with its
    final (m, s), store."""
    out_rows = out_ptr + i * stride_oi  # (1, BLOCK_I)
    # exp(x - m) / s = 2^((x - m) * log2(e) - log2(s)): no division per element (see LOG2E).
    log2_s = tl.log2(s)  # (BLOCK_I,)
    for start in range(r_begin, r_end, BLOCK_R):
        r = start + r0
        r_ok = r < n_r
        x = _load_x(x_ptr, i, r, stride_xi, stride_xr, i_ok, r_ok)
        # EXERCISE softmax, strips: second pass: normalise the chunk with the final (m, s) of each
        # row and store it rounded to the output dtype at out_rows + r * stride_or, masked.
        # (exp(x - m) / s is right; log2_s above lets you write it as a single exp2.)
        y = tl.exp2((x - m[None, :]) * LOG2E - log2_s[None, :])
        tl.store(out_rows + r * stride_or, y.to(out_ptr.dtype.element_ty), mask=i_ok & r_ok)
        # END EXERCISE


@triton.jit
def softmax_across_kernel(
    x_ptr, out_ptr,  # pointers
    n_i, n_r,  # sizes: rows, elements per row (the reduction)
    stride_xi, stride_xr,  # input strides: between rows (small: the contiguous one), along a row
    stride_oi, stride_or,  # output strides (the output is contiguous; one of them is 1)
    BLOCK_I: tl.constexpr,  # neighbouring rows per program: the coalesced side of every load
    BLOCK_R: tl.constexpr,  # elements of each row per chunk
    ONE_BLOCK: tl.constexpr,  # BLOCK_R >= n_r: the strip stays in registers, x is read once
):
    """Path B: each program owns BLOCK_I neighbouring rows; lanes run across them.

    Tiles are (BLOCK_R, BLOCK_I): axis 0 walks along the rows (the reduction), axis 1 runs
    across rows, which is the contiguous direction of a transposed input. Statistics are per
    row, that is per column of the tile.
    """
    pid = tl.program_id(0).to(tl.int64)  # int64 before any stride multiply: spans pass 2^31
    i = (pid * BLOCK_I + tl.arange(0, BLOCK_I))[None, :]  # (1, BLOCK_I) rows of this program
    i_ok = i < n_i
    r0 = tl.arange(0, BLOCK_R).to(tl.int64)[:, None]  # (BLOCK_R, 1) positions along the rows
    if ONE_BLOCK:
        r_ok = r0 < n_r
        x = _load_x(x_ptr, i, r0, stride_xi, stride_xr, i_ok, r_ok)  # (BLOCK_R, BLOCK_I)
        m = tl.max(x, axis=0)  # (BLOCK_I,)
        numerator = tl.exp2((x - m[None, :]) * LOG2E)  # exp(x - m)
        y = numerator * (1.0 / tl.sum(numerator, axis=0))[None, :]  # one divide per row
        tl.store(out_ptr + i * stride_oi + r0 * stride_or, y.to(out_ptr.dtype.element_ty),
                 mask=i_ok & r_ok)
    else:
        m, s = _across_stats(x_ptr, i, i_ok, r0, 0, n_r, n_r, stride_xi, stride_xr,
                             BLOCK_I, BLOCK_R)
        _across_normalize(x_ptr, out_ptr, i, i_ok, r0, 0, n_r, n_r, m, s,
                          stride_xi, stride_xr, stride_oi, stride_or, BLOCK_R)


@triton.jit
def softmax_across_partial_kernel(
    x_ptr, stats_ptr,  # input; float32 workspace (2, n_splits, n_i): slice maxima, then sums
    n_i, n_r, stride_xi, stride_xr,  # as in softmax_across_kernel
    rows_per_split,  # positions of the reduction per slice (a multiple of BLOCK_R)
    BLOCK_I: tl.constexpr, BLOCK_R: tl.constexpr,
):
    """Path B split, stage 1: program (strip, slice) writes the (max, sum) of its slice of
    each of its BLOCK_I rows."""
    pid = tl.program_id(0).to(tl.int64)
    split = tl.program_id(1)
    n_splits = tl.num_programs(1)
    rows = pid * BLOCK_I + tl.arange(0, BLOCK_I)  # (BLOCK_I,) the rows of this strip
    i = rows[None, :]  # (1, BLOCK_I)
    i_ok = i < n_i
    r0 = tl.arange(0, BLOCK_R).to(tl.int64)[:, None]
    r_begin = split.to(tl.int64) * rows_per_split
    m, s = _across_stats(x_ptr, i, i_ok, r0, r_begin, r_begin + rows_per_split, n_r,
                         stride_xi, stride_xr, BLOCK_I, BLOCK_R)
    slot = split * n_i + rows  # (BLOCK_I,) this slice's entry of each row
    tl.store(stats_ptr + slot, m, mask=rows < n_i)
    tl.store(stats_ptr + n_splits * n_i + slot, s, mask=rows < n_i)


@triton.jit
def softmax_across_normalize_kernel(
    x_ptr, out_ptr, stats_ptr,  # input, output, the workspace stage 1 filled
    n_i, n_r, stride_xi, stride_xr, stride_oi, stride_or, rows_per_split,
    BLOCK_I: tl.constexpr, BLOCK_R: tl.constexpr,
    SPLITS: tl.constexpr,  # the number of slices rounded up to a power of two (a tile side)
):
    """Path B split, stage 2: merge the slices' (max, sum) of each row, then normalise this
    program's slice.

    Programs run in reverse order of stage 1's: stage 1 read the last slices last, so those
    are the ones most likely still in the L2 cache when this stage starts.
    """
    pid = (tl.num_programs(0) - 1 - tl.program_id(0)).to(tl.int64)
    n_splits = tl.num_programs(1)
    split = n_splits - 1 - tl.program_id(1)
    i = (pid * BLOCK_I + tl.arange(0, BLOCK_I))[None, :]  # (1, BLOCK_I)
    i_ok = i < n_i
    # The merge (workshop 5): M = max_k m_k, S = sum_k s_k * exp(m_k - M). Missing slices read
    # as m = -inf, s = 0, which changes neither.
    k = tl.arange(0, SPLITS)[:, None]  # (SPLITS, 1)
    ok = (k < n_splits) & i_ok
    m_k = tl.load(stats_ptr + k * n_i + i, mask=ok, other=-float("inf"))  # (SPLITS, BLOCK_I)
    s_k = tl.load(stats_ptr + (n_splits + k) * n_i + i, mask=ok, other=0.0)
    m = tl.max(m_k, axis=0)  # (BLOCK_I,)
    shift = tl.where(m == -float("inf"), 0.0, m)  # a row of only -inf: no -inf - (-inf)
    s = tl.sum(s_k * tl.exp2((m_k - shift[None, :]) * LOG2E), axis=0)
    r0 = tl.arange(0, BLOCK_R).to(tl.int64)[:, None]
    r_begin = split.to(tl.int64) * rows_per_split
    _across_normalize(x_ptr, out_ptr, i, i_ok, r0, r_begin, r_begin + rows_per_split, n_r,
                      m, s, stride_xi, stride_xr, stride_oi, stride_or, BLOCK_R)


@triton.jit
def softmax_across_exchange_kernel(
    x_ptr, out_ptr,  # input, output
    stats_ptr,  # float32 workspace (2, n_slices, n_i): each slice's maxima, then its sums
    counters_ptr,  # int32 workspace (1 + strips,), zeroed: the next ticket, then arrivals per strip
    n_i, n_r, stride_xi, stride_xr, stride_oi, stride_or,  # as in softmax_across_kernel
    n_slices,  # slices per strip (at most the number of SMs: see plan())
    BLOCK_I: tl.constexpr,  # neighbouring rows per strip
    BLOCK_R: tl.constexpr,  # positions per slice: a slice is one tile, held in registers
    SLICES: tl.constexpr,  # n_slices rounded up to a power of two (a tile side)
):
    """Path B, exchange: the split without a second kernel and without a second read of x.

    Each program loads its (BLOCK_R, BLOCK_I) slice once and keeps exp(x - m) in registers,
    publishes the slice's (max, sum) per row, waits until every slice of its strip has done so,
    merges them (workshop 5's merge) and scales its registers into the output.

    The wait is safe because programs take tickets, not program ids: a program holding ticket
    t is running, and so is, or was, every program holding a ticket below t. The slices of one
    strip hold consecutive tickets, so the only programs ever waiting are those of the strips
    still being handed out, and once the GPU can hold n_slices programs at a time one of those
    strips is complete. plan() keeps n_slices at most the number of SMs (each SM holds at least
    one program). Triton's interpreter runs programs one after another, so there the first
    program would wait for ever: plan() refuses this path there.
    """
    ticket = tl.atomic_add(counters_ptr, 1)  # the order in which programs started
    strip = (ticket // n_slices).to(tl.int64)
    slice_id = (ticket % n_slices).to(tl.int64)
    rows = strip * BLOCK_I + tl.arange(0, BLOCK_I)  # (BLOCK_I,)
    i = rows[None, :]  # (1, BLOCK_I)
    i_ok = i < n_i
    r = slice_id * BLOCK_R + tl.arange(0, BLOCK_R).to(tl.int64)[:, None]
    r_ok = r < n_r
    x = _load_x(x_ptr, i, r, stride_xi, stride_xr, i_ok, r_ok)  # (BLOCK_R, BLOCK_I), read once
    m = tl.max(x, axis=0)  # (BLOCK_I,) this slice's maxima
    shift = tl.where(m == -float("inf"), 0.0, m)  # a slice of only -inf: no -inf - (-inf)
    p = tl.exp2((x - shift[None, :]) * LOG2E)  # exp(x - m), kept for the end
    slot = slice_id * n_i + rows
    tl.store(stats_ptr + slot, m, mask=rows < n_i)
    tl.store(stats_ptr + n_slices * n_i + slot, tl.sum(p, axis=0), mask=rows < n_i)
    # Every thread's statistics are written before the arrival is counted (the barrier), and
    # the release makes them visible to whoever reads the count with acquire.
    tl.debug_barrier()
    arrived = tl.atomic_add(counters_ptr + 1 + strip, 1, sem="acq_rel") + 1
    while arrived < n_slices:
        arrived = tl.atomic_add(counters_ptr + 1 + strip, 0, sem="acquire")
    # The merge: M = max_k m_k, S = sum_k s_k * exp(m_k - M); missing slices read as
    # (-inf, 0). ".cg" reads from L2, where the other programs' stores are.
    k = tl.arange(0, SLICES).to(tl.int64)[:, None]  # (SLICES, 1)
    ok = (k < n_slices) & i_ok
    m_k = tl.load(stats_ptr + k * n_i + i, mask=ok, other=-float("inf"), cache_modifier=".cg")
    s_k = tl.load(stats_ptr + (n_slices + k) * n_i + i, mask=ok, other=0.0,
                  cache_modifier=".cg")
    m_all = tl.max(m_k, axis=0)  # (BLOCK_I,)
    shift_all = tl.where(m_all == -float("inf"), 0.0, m_all)
    s_all = tl.sum(s_k * tl.exp2((m_k - shift_all[None, :]) * LOG2E), axis=0)
    # y = exp(x - m) * exp(m - M) / S. With the unshifted m and M: a slice of only -inf in a
    # row that has finite values scales by exp(-inf) = 0; a row of only -inf gets NaN, as in
    # torch and the other paths.
    scale = tl.exp2((m - m_all) * LOG2E) / s_all
    tl.store(out_ptr + i * stride_oi + r * stride_or,
             (p * scale[None, :]).to(out_ptr.dtype.element_ty), mask=i_ok & r_ok)



def _gluon_jit(fn):
    """gluon.jit where this Triton has Gluon; otherwise the kernel is None (never launched)."""
    return gluon.jit(fn) if gluon is not None else None


@_gluon_jit
def softmax_across_exchange_smem_kernel(
    x_ptr, out_ptr,  # input, output (as in softmax_across_exchange_kernel)
    stats_ptr,  # float32 workspace (2, n_slices, n_i): each slice's maxima, then its sums
    counters_ptr,  # int32 workspace (1 + strips,), zeroed: the next ticket, then arrivals
    n_i, n_r,  # sizes; x has unit stride along I (checked by plan(): cp.async copies 16-byte
    # runs, and Triton 3.6 does not specialize a stride of 1)
    runs_xr,  # x's stride along R in 16-byte runs (stride_xr = runs_xr * VEC): so the compiler
    # knows every row starts on a 16-byte boundary, which it cannot see in a stride of 40
    stride_oi, stride_or,
    n_slices,  # slices per strip (at most the number of SMs: see plan())
    BLOCK_I: gl.constexpr,  # neighbouring rows per strip
    BLOCK_R: gl.constexpr,  # positions per slice: a slice is held in shared memory
    CHUNK_R: gl.constexpr,  # positions per chunk: the slice goes through registers chunk by chunk
    SLICES: gl.constexpr,  # n_slices rounded up to a power of two (a tile side)
    VEC: gl.constexpr,  # elements in 16 bytes: one cp.async per lane and chunk row
    EVEN_R: gl.constexpr,  # n_r is a multiple of BLOCK_R: no slice needs a mask along R
    OUT_ALONG_R: gl.constexpr,  # stride_or == 1 (dim=-1: a transposing store); else the output
    # runs along I like x (stride_oi == 1). A constexpr, since Triton 3.6 does not specialize 1
    num_warps: gl.constexpr,
):
    """Path B, exchange with the slice in shared memory (Gluon, a GPU only: lesson 1, section 5).

    The same tickets, statistics and wait as softmax_across_exchange_kernel, but the slice is
    copied from global memory straight into shared memory (cp.async: no registers hold it while
    the program waits), the statistics are computed from there, and after the merge each chunk
    is read back, normalised, re-laid for the transposed store and stored. A program then needs
    few registers, so several slices per SM wait at once (227 KiB of shared memory against
    about 64 KiB of slices in registers): fewer rounds of waiting for the same bytes.
    """
    # Layouts, written out (Gluon's difference from Triton): LOAD puts the lanes along I, x's
    # contiguous dimension, VEC elements (16 bytes) each; STORE puts them along R, the output's
    # contiguous dimension, 8 elements each; STATS reads the (SLICES, BLOCK_I) statistics.
    TPW_I: gl.constexpr = BLOCK_I // VEC
    LOAD: gl.constexpr = gl.BlockedLayout([1, VEC], [32 // TPW_I, TPW_I], [num_warps, 1], [1, 0])
    STORE: gl.constexpr = gl.BlockedLayout([8, 1], [CHUNK_R // 8, 256 // CHUNK_R],
                                           [1, num_warps], [0, 1])
    STATS: gl.constexpr = gl.BlockedLayout([1, 1], [32 // TPW_I, TPW_I], [num_warps, 1], [1, 0])
    SMEM: gl.constexpr = gl.SwizzledSharedLayout(VEC, 1, 1, [1, 0])  # rows of x, unswizzled
    NCHUNK: gl.constexpr = BLOCK_R // CHUNK_R
    # The two exponential passes take PAIR chunks a trip: ptxas then overlaps one chunk's
    # shared-memory loads with the other's arithmetic (0.7-4.3% faster on the H200 than one
    # chunk a trip, by width and dtype: benchmarks/results/diagnostics/probe-strided-mufu-*).
    PAIR: gl.constexpr = 2 if NCHUNK > 1 else 1

    ticket = gl.atomic_add(counters_ptr, 1)  # the order in which programs started
    strip = (ticket // n_slices).to(gl.int64)
    slice_id = (ticket % n_slices).to(gl.int64)
    r0 = slice_id * BLOCK_R
    tile = gl.allocate_shared_memory(x_ptr.dtype.element_ty, [NCHUNK, CHUNK_R, BLOCK_I], SMEM)

    # 1. The slice into shared memory, every chunk's copy in flight at once. Masked lanes are
    #    filled with 0, so the statistics below mask positions past n_r themselves.
    i = strip * BLOCK_I + gl.arange(0, BLOCK_I, layout=gl.SliceLayout(0, LOAD)).to(gl.int64)
    rc = gl.arange(0, CHUNK_R, layout=gl.SliceLayout(1, LOAD)).to(gl.int64)
    # Whole 16-byte runs or nothing: a run that starts before n_i is copied whole (cp.async
    # moves at least 4 bytes, so a mask may not cut a run of 16-bit values). plan() checks
    # that x's storage holds those few elements past n_i; they only ever reach rows >= n_i,
    # which are never stored.
    i_copy = gl.max_constancy((i - i % VEC) < n_i, [VEC])  # (tells the compiler it is so)
    for cc in gl.static_range(NCHUNK):  # one group of copies per chunk
        r = r0 + cc * CHUNK_R + rc
        async_copy.async_copy_global_to_shared(tile.index(cc),
                                               x_ptr + i[None, :] + r[:, None] * (runs_xr * VEC),
                                               mask=(r < n_r)[:, None] & i_copy[None, :])
        async_copy.commit_group()

    # 2. This slice's max and sum per row, from shared memory: elementwise over the chunks,
    #    then one reduction across lanes and warps. The maxima in x's own dtype (exact). The
    #    max starts on each chunk as soon as that chunk has landed, while the later ones are
    #    still on their way (the count a wait_group leaves in flight is a compile-time number,
    #    so this loop is unrolled).
    m2 = gl.full([CHUNK_R, BLOCK_I], -float("inf"), x_ptr.dtype.element_ty, layout=LOAD)
    for cw in gl.static_range(NCHUNK):
        async_copy.wait_group(NCHUNK - 1 - cw)
        gl.thread_barrier()  # every lane's copies of chunk cw have landed
        xm = tile.index(cw).load(LOAD)
        if not EVEN_R:
            xm = gl.where((r0 + cw * CHUNK_R + rc < n_r)[:, None], xm, -float("inf"))
        m2 = gl.maximum(m2, xm).to(m2.dtype)  # (bfloat16 maxima come back as float32)
    m = gl.max(m2, axis=0).to(gl.float32)  # (BLOCK_I,)
    shift = gl.where(m == -float("inf"), 0.0, m)  # a slice of only -inf: no -inf - (-inf)
    s2 = gl.zeros([CHUNK_R, BLOCK_I], gl.float32, layout=LOAD)
    for c2 in range(NCHUNK // PAIR):
        for h in gl.static_range(PAIR):
            c = PAIR * c2 + h
            p = gl.exp2((tile.index(c).load(LOAD).to(gl.float32) - shift[None, :]) * LOG2E)
            if not EVEN_R:
                p = gl.where((r0 + c * CHUNK_R + rc < n_r)[:, None], p, 0.0)
            s2 += p
    slot = slice_id * n_i + i
    gl.store(stats_ptr + slot, m, mask=i < n_i)
    gl.store(stats_ptr + n_slices * n_i + slot, gl.sum(s2, axis=0), mask=i < n_i)

    # 3. Count in, wait for the strip's other slices (see softmax_across_exchange_kernel for
    #    why the wait cannot deadlock), merge every slice's (max, sum).
    gl.thread_barrier()
    arrived = gl.atomic_add(counters_ptr + 1 + strip, 1, sem="acq_rel") + 1
    while arrived < n_slices:
        arrived = gl.atomic_add(counters_ptr + 1 + strip, 0, sem="acquire")
    k = gl.arange(0, SLICES, layout=gl.SliceLayout(1, STATS)).to(gl.int64)[:, None]
    i_s = strip * BLOCK_I + gl.arange(0, BLOCK_I, layout=gl.SliceLayout(0, STATS)).to(gl.int64)
    ok = (k < n_slices) & (i_s < n_i)[None, :]
    m_k = gl.load(stats_ptr + k * n_i + i_s[None, :], mask=ok, other=-float("inf"),
                  cache_modifier=".cg")
    s_k = gl.load(stats_ptr + (n_slices + k) * n_i + i_s[None, :], mask=ok, other=0.0,
                  cache_modifier=".cg")
    m_all = gl.max(m_k, axis=0)
    shift_all = gl.where(m_all == -float("inf"), 0.0, m_all)
    s_all = gl.sum(s_k * gl.exp2((m_k - shift_all[None, :]) * LOG2E), axis=0)
    m_all = gl.convert_layout(m_all, gl.SliceLayout(0, LOAD))
    inv_s = gl.convert_layout(1.0 / s_all, gl.SliceLayout(0, LOAD))

    # 4. y = exp(x - M) / S, chunk by chunk from shared memory. For an output that runs along
    #    R, convert_layout re-lays each chunk (through shared memory, bank-conflict free) so
    #    that the stores run along R too.
    i_o = strip * BLOCK_I + gl.arange(0, BLOCK_I, layout=gl.SliceLayout(0, STORE)).to(gl.int64)
    rc_o = gl.arange(0, CHUNK_R, layout=gl.SliceLayout(1, STORE)).to(gl.int64)
    for c2 in range(NCHUNK // PAIR):
        for h in gl.static_range(PAIR):
            c = PAIR * c2 + h
            x = tile.index(c).load(LOAD).to(gl.float32)
            y = (gl.exp2((x - m_all[None, :]) * LOG2E) * inv_s[None, :])
            y = y.to(out_ptr.dtype.element_ty)
            if OUT_ALONG_R:
                r_o = r0 + c * CHUNK_R + rc_o
                keep = (i_o < n_i)[None, :] & ((r_o < n_r)[:, None] if not EVEN_R else True)
                gl.store(out_ptr + i_o[None, :] * stride_oi + r_o[:, None],
                         gl.convert_layout(y, STORE), mask=keep)
            else:
                r_x = r0 + c * CHUNK_R + rc
                keep = (i < n_i)[None, :] & ((r_x < n_r)[:, None] if not EVEN_R else True)
                gl.store(out_ptr + i[None, :] + r_x[:, None] * stride_or, y, mask=keep)


def _choose_path(n_r: int, n_i: int, stride_r: int, stride_i: int, stride_or: int) -> str:
    """Give the lanes of a warp the dimension whose neighbours are closest in memory.

    Lanes that touch adjacent addresses share memory transactions (coalescing). Path A puts
    the lanes along a row (the reduction R), path B across neighbouring rows (I). So a
    transposed input (stride_i = 1 < stride_r) takes path B; contiguous rows, and views where
    neither dimension is contiguous but a row's own elements are at least as close (a stepped
    slice x[::2, ::3]), take path A; ties go to A.

    Special cases: a dimension of size 1 never moves, so its stride means nothing. A stride of
    0 (a broadcast) reads one cell over and over, which the cache serves whatever the lanes
    do; then the output decides: lanes along its contiguous dimension (R for dim=1, I for
    dim=0).
    """
    if n_i == 1:
        return "A"  # a single row: nothing to spread lanes across
    if n_r == 1:
        return "B"  # rows of one element: the lanes can only run across rows
    if stride_r == 0 or stride_i == 0:
        return "A" if stride_or == 1 else "B"
    return "B" if stride_i < stride_r else "A"


def _pow2(n: int) -> int:
    return triton.next_power_of_2(max(int(n), 1))


def _prev_pow2(n: int) -> int:
    return 1 << (int(n).bit_length() - 1) if n >= 1 else 0


def _fit(n_r: int, block_i: int, one_block_tile: int, chunk_tile: int) -> int:
    """block_r for a tile of block_i rows: the whole reduction if that tile fits in
    `one_block_tile` elements (one pass), else a chunk of `chunk_tile` elements (two passes)."""
    if _pow2(n_r) * block_i <= one_block_tile:
        return max(_pow2(n_r), 2)
    return max(chunk_tile // block_i, 16)


def plan(x: torch.Tensor, dim: int = -1, *, block_r: int | None = None,
         block_i: int | None = None, num_warps: int | None = None,
         num_stages: int | None = None, path: str | None = None,
         splits: int | None = None, exchange: bool | None = None,
         smem: bool | None = None) -> Plan:
    """Validate the knobs and decide how `softmax(x, dim, ...)` will run (nothing is launched)."""
    check_tensor("x", x, ndim=2)
    dim = check_dim(dim, 2)
    if block_r is not None:
        check_power_of_two("block_r", block_r, 2, _MAX_TILE)
    if block_i is not None:
        check_power_of_two("block_i", block_i, 1, 1024)
    if num_warps is not None:
        check_power_of_two("num_warps", num_warps, 1, 16)
    if num_stages is not None:
        check_int_range("num_stages", num_stages, 1, 8)
    if path is not None and path not in PATHS:
        raise ValueError(f"path must be one of {PATHS} or None, got {path!r}")
    if splits is not None:
        check_int_range("splits", splits, 1, _MAX_SPLITS)
    if exchange is not None and not isinstance(exchange, bool):
        raise TypeError(f"exchange must be a bool or None (auto), got {type_name(exchange)}")
    if smem is not None and not isinstance(smem, bool):
        raise TypeError(f"smem must be a bool or None (auto), got {type_name(smem)}")
    if smem and exchange is False:
        raise ValueError("smem=True is a way to run the exchange; it cannot go with "
                         "exchange=False")

    # Normalise to "reduce along R, independent along I". The output is a new contiguous
    # tensor of x's shape, so its strides are (n_cols, 1) whatever x's are.
    n_rows, n_cols = x.shape
    x_strides = x.stride()
    out_strides = (n_cols, 1)
    # EXERCISE softmax, plan: set n_i, n_r, stride_xi, stride_xr, stride_oi and stride_or, the
    # sizes and strides of the two roles (i: which softmax row, r: position along it), for x
    # and for the output. For dim=1 the rows of x are the softmax rows. For dim=0 the softmax rows are the
    # rows of x.t(): swap the two sizes, x's two strides and the output's two strides; nothing
    # is copied.
    if dim == 1:
        n_i, n_r = n_rows, n_cols
        stride_xi, stride_xr = x_strides
        stride_oi, stride_or = out_strides
    else:
        n_i, n_r = n_cols, n_rows
        stride_xr, stride_xi = x_strides
        stride_or, stride_oi = out_strides
    # END EXERCISE

    path = path or _choose_path(n_r, n_i, stride_xr, stride_xi, stride_or)
    if path == "A" and splits not in (None, 1):
        raise ValueError(f"splits={splits} needs path B (it cuts the strips of path B along the "
                         f"reduction); this call runs path A")
    if smem is None and exchange is not False:
        smem = _auto_smem(x, n_r, n_i, path, stride_xi, stride_xr, block_r, block_i, splits)
    if exchange is None:
        exchange = smem or _auto_exchange(x, n_r, path, block_r, block_i, splits)
    if exchange:
        return _exchange_plan(x, n_r, n_i, stride_xr, stride_xi, stride_or, stride_oi, path,
                              block_r, block_i, num_warps, num_stages, splits, bool(smem))
    # Block sizes. The lanes' dimension (A: along R, B: across I) gets the coalesced loads. When
    # the output is contiguous along the *other* dimension (path A for dim=0, path B for
    # dim=1), the tile needs at least _TRANSPOSE_SIDE elements along that one too: Triton then
    # re-lays the tile through shared memory before the store, and the stores coalesce as well.
    transposing = (stride_oi == 1) if path == "A" else (stride_or == 1)
    if path == "A":
        if transposing:
            if block_i is None:
                block_i = min(_TRANSPOSE_SIDE, _pow2(n_i))
            if block_r is None:
                block_r = _fit(n_r, block_i, _STRIP_TILE, _CHUNK_TILE)
        else:
            # The whole row in one block when it fits (x read once); wider rows loop in chunks.
            if block_r is None:
                block_r = max(_pow2(n_r), 2) if n_r <= _MAX_ONE_BLOCK else _WIDE_CHUNK
            # Narrow rows: several to a program, so each program still moves a useful amount.
            if block_i is None:
                block_i = min(max(_ROW_TILE_BYTES // (block_r * x.element_size()), 1),
                              _pow2(n_i))
    else:
        # A strip of _ONE_BLOCK_SIDE rows with the whole reduction fits one tile: x read once.
        short = _short(n_r)
        if splits is None:
            # Long rows: split each strip along the reduction (stage 1 writes each slice's
            # statistics, stage 2 merges them and normalises its slice).
            splits = 1
            if not short and block_r is None and block_i is None:
                splits = _auto_splits(n_r, n_i)
                if splits > 1:
                    block_i = min(_SPLIT_SIDE, _pow2(n_i))
                    block_r = _SPLIT_CHUNK
                    num_warps = num_warps or _SPLIT_WARPS
        if block_i is None:
            if short and block_r is None:
                # Short rows: as many neighbouring rows as fit with the whole reduction in
                # registers (x read once), up to 64 (a 128-byte line of float16).
                block_i = min(_STRIP_TILE // _pow2(n_r), 64)
                num_warps = num_warps or _ONE_BLOCK_WARPS
            else:
                # Long rows, two passes: 4 to 16 rows per program (8 to 32 bytes of float16 per
                # load, a whole 32-byte sector at 16), fewer when there are few rows, so that at
                # least _ACROSS_PROGRAMS programs keep every SM busy.
                block_i = min(max(_prev_pow2(n_i // _ACROSS_PROGRAMS), 4), 16)
            block_i = min(block_i, _pow2(n_i))
        if block_r is None:
            block_r = _fit(n_r, block_i, _STRIP_TILE, _CHUNK_TILE) if short else \
                max(_ACROSS_CHUNK_TILE // block_i, 16)
        if num_warps is None and block_r < n_r:
            num_warps = _ACROSS_WARPS  # measured: 8 beat 16 on every large two-pass chunk
    _check_tile(block_r, block_i)
    if num_warps is None:
        # About 16 elements per thread, 1 to 16 warps.
        num_warps = min(max((block_r * block_i) // 512, 1), 16)
    splits = splits or 1
    rows_per_split = 0
    if splits > 1:
        # Whole chunks per slice, so no chunk straddles two slices; then drop empty slices.
        rows_per_split = cdiv(cdiv(n_r, splits), block_r) * block_r
        splits = cdiv(n_r, rows_per_split)
    return Plan(path, n_r, n_i, stride_xr, stride_xi, stride_or, stride_oi, block_r, block_i,
                n_r <= block_r and splits == 1, num_warps, num_stages, cdiv(n_i, block_i),
                splits, rows_per_split)


def _check_tile(block_r: int, block_i: int) -> None:
    """A program's tile must fit its registers: at most _MAX_TILE elements."""
    if block_r * block_i > _MAX_TILE:
        raise ValueError(f"block_r * block_i must be at most {_MAX_TILE} elements (registers), "
                         f"got block_r={block_r}, block_i={block_i}")


def _exchange_plan(x, n_r, n_i, stride_xr, stride_xi, stride_or, stride_oi, path, block_r,
                   block_i, num_warps, num_stages, splits, smem) -> Plan:
    """The plan of path B's exchange (one kernel, x read once), in registers or (smem) in
    shared memory, or a ValueError saying why it cannot run this call."""
    if path != "B":
        raise ValueError("exchange=True needs path B (it cuts the strips of path B along the "
                         "reduction); this call runs path A")
    if splits is not None:
        raise ValueError("exchange=True sets the slices itself (one per block_r positions); "
                         "leave splits out")
    if interpreting():
        raise ValueError("exchange=True needs programs that run at the same time: Triton's "
                         "interpreter runs them one after another (use exchange=False)")
    check_device("x", x)  # before asking its GPU for the number of SMs
    if smem:
        return _smem_plan(x, n_r, n_i, stride_xr, stride_xi, stride_or, stride_oi, block_r,
                          block_i, num_warps, num_stages)
    block_r = block_r or _exchange_slice(n_r)
    block_i = min(block_i or max(_EXCHANGE_TILE // block_r, 1), _pow2(n_i))
    _check_tile(block_r, block_i)
    slices = cdiv(n_r, block_r)
    sms = _gpu_sms(x)
    if slices < 2 or slices > sms:
        raise ValueError(f"exchange=True needs 2 to {sms} slices of block_r positions (every "
                         f"slice of a strip must be able to run at once, one per SM); "
                         f"{n_r} positions in blocks of {block_r} make {slices}")
    return Plan("B", n_r, n_i, stride_xr, stride_xi, stride_or, stride_oi, block_r, block_i,
                False, num_warps or _EXCHANGE_WARPS, num_stages, cdiv(n_i, block_i), slices,
                block_r, exchange=True)


def _smem_reason(x, n_r: int, n_i: int, stride_xi: int, stride_xr: int) -> str | None:
    """Why the shared-memory exchange cannot run on x (None: it can)."""
    if gluon is None:
        return f"this Triton ({triton.__version__}) has no Gluon (triton.experimental.gluon)"
    if interpreting() or x.device.type != "cuda":
        return "it needs a GPU (Triton's interpreter runs programs one after another)"
    if capability(device_index(x))[0] < 8:
        return f"it needs cp.async (compute capability 8.0 or newer); this GPU is " \
               f"{capability(device_index(x))}"
    size = x.element_size()
    if stride_xi != 1 or (stride_xr * size) % 16 or x.data_ptr() % 16:
        return (f"it copies 16-byte runs of neighbouring rows: x needs unit stride across the "
                f"rows and 16-byte aligned rows; got stride {stride_xi} across the rows, "
                f"{stride_xr} along them, {size}-byte elements, address {x.data_ptr()} "
                f"(mod 16: {x.data_ptr() % 16})")
    # The copy takes the last 16-byte run of a row whole (see the kernel): a few elements past
    # n_i, which must still lie inside x's storage at the end of the last row.
    vec = 16 // size
    end = x.storage_offset() + (n_r - 1) * stride_xr + cdiv(n_i, vec) * vec
    if end * size > x.untyped_storage().nbytes():
        return (f"it copies whole 16-byte runs, and the last run of x's last row ends "
                f"{end * size - x.untyped_storage().nbytes()} bytes past x's storage")
    return None


def _auto_smem(x, n_r, n_i, path, stride_xi, stride_xr, block_r, block_i, splits) -> bool:
    """Whether a call that leaves `smem` out runs the shared-memory exchange: 16-bit path B rows
    too long for one tile and no longer than _EXCHANGE_MAX_AUTO, no knob asking for another
    plan, on compute capability 9.x (where it was measured) with every slice of a strip able to
    run at once."""
    if path != "B" or block_r is not None or block_i is not None or splits is not None:
        return False
    if x.dtype == torch.float32 or _short(n_r) or n_r > _EXCHANGE_MAX_AUTO:
        return False
    if _smem_reason(x, n_r, n_i, stride_xi, stride_xr) or capability(device_index(x))[0] != 9:
        return False
    slice_r = (_SMEM_SHORT if n_r <= 4096 else _SMEM_LONG)[0]
    return cdiv(n_r, slice_r) <= _gpu_sms(x)


def _smem_plan(x, n_r, n_i, stride_xr, stride_xi, stride_or, stride_oi, block_r, block_i,
               num_warps, num_stages) -> Plan:
    """The plan of the shared-memory exchange, or a ValueError saying why it cannot run."""
    reason = _smem_reason(x, n_r, n_i, stride_xi, stride_xr)
    if reason:
        raise ValueError(f"smem=True (the exchange in shared memory) cannot run this call: "
                         f"{reason}. Use smem=False or None.")
    size = x.element_size()
    default = _SMEM_FLOAT32 if size == 4 else _SMEM_SHORT if n_r <= 4096 else _SMEM_LONG
    block_r = block_r or default[0]
    block_i = min(block_i or default[1], max(_pow2(n_i), 16 // size))
    num_warps = num_warps or default[2]
    if block_r < _SMEM_CHUNK:
        raise ValueError(f"smem=True copies slices in chunks of {_SMEM_CHUNK} positions: "
                         f"block_r must be at least {_SMEM_CHUNK}, got {block_r}")
    if not 16 <= block_i * size <= 512:
        raise ValueError(f"smem=True gives each lane 16 bytes of a row of the slice: block_i * "
                         f"{size} bytes must be 16 to 512, got block_i={block_i}")
    if block_r * block_i * size > _SMEM_MAX_BYTES:
        raise ValueError(f"smem=True holds a slice of block_r x block_i = {block_r} x {block_i} "
                         f"elements in shared memory: at most {_SMEM_MAX_BYTES} bytes, got "
                         f"{block_r * block_i * size}")
    slices = cdiv(n_r, block_r)
    sms = _gpu_sms(x)
    if slices < 2 or slices > sms:
        raise ValueError(f"smem=True needs 2 to {sms} slices of block_r positions (every "
                         f"slice of a strip must be able to run at once, one per SM); "
                         f"{n_r} positions in blocks of {block_r} make {slices}")
    return Plan("B", n_r, n_i, stride_xr, stride_xi, stride_or, stride_oi, block_r, block_i,
                False, num_warps, num_stages, cdiv(n_i, block_i), slices, block_r,
                exchange=True, smem=True)


def _short(n_r: int) -> bool:
    """Path B: a strip of _ONE_BLOCK_SIDE rows with the whole reduction fits one tile."""
    return _pow2(n_r) * _ONE_BLOCK_SIDE <= _STRIP_TILE


def _exchange_slice(n_r: int) -> int:
    """Default slice length of the exchange: _EXCHANGE_MIN_SLICE positions, longer when that
    would make more than _EXCHANGE_SLICES slices."""
    return max(_EXCHANGE_MIN_SLICE, _pow2(cdiv(n_r, _EXCHANGE_SLICES)))


def _auto_exchange(x, n_r, path, block_r, block_i, splits) -> bool:
    """Whether a call that leaves `exchange` out runs it: float32 path B rows too long for one
    tile and no longer than _EXCHANGE_MAX_AUTO (the measured range), with no knob that asks for
    another plan, on a GPU that can hold every slice of a strip at once."""
    if path != "B" or block_r is not None or block_i is not None or splits is not None:
        return False
    if x.dtype != torch.float32 or _short(n_r) or n_r > _EXCHANGE_MAX_AUTO:
        return False
    return cdiv(n_r, _exchange_slice(n_r)) <= _gpu_sms(x)


def _gpu_sms(x) -> int:
    """The SMs of x's GPU; 0 under the interpreter or for a tensor that is not on a GPU."""
    if interpreting() or x.device.type != "cuda":
        return 0
    return sm_count(device_index(x))


def _auto_splits(n_r: int, n_i: int) -> int:
    """Slices per strip for a long path-B reduction: enough for about _SPLIT_PROGRAMS programs
    over strips of _SPLIT_SIDE rows, each slice at least _MIN_SPLIT_ROWS long."""
    strips = cdiv(n_i, _SPLIT_SIDE)
    return max(min(cdiv(_SPLIT_PROGRAMS, strips), n_r // _MIN_SPLIT_ROWS, _MAX_SPLITS), 1)


def softmax(x: torch.Tensor, dim: int = -1, *, block_r: int | None = None,
            block_i: int | None = None, num_warps: int | None = None,
            num_stages: int | None = None, path: str | None = None,
            splits: int | None = None, exchange: bool | None = None,
            smem: bool | None = None) -> torch.Tensor:
    """Softmax of a 2-D tensor over `dim`, for any strides (0 included); statistics in float32.

    Returns a new contiguous tensor of x's shape and dtype. x is read in place (never copied).
    Knobs (all optional, validated): `block_r` elements along the reduction per block (a power
    of two, 2..65536), `block_i` rows per program (a power of two, 1..1024), `num_warps`
    (1, 2, 4, 8 or 16), `num_stages` (1..8, the two-pass loops), `path` ("A" lanes along rows,
    "B" lanes across rows; default: chosen from the strides), `splits` (path B: slices of the
    reduction per strip, 1..64; default: chosen from the shape), `exchange` (path B: the slices
    of a strip in one kernel, swapping statistics, x read once; needs a GPU; default: float32
    rows of 2049-32768; 16-bit ones take it in shared memory), `smem` (the exchange with its
    slice in shared memory, the Gluon kernel: a GPU of compute capability 8.0 or newer, x with
    unit stride across the rows and 16-byte aligned rows; default: 16-bit rows of 2049-32768 on
    compute capability 9.x).
    """
    p = plan(x, dim, block_r=block_r, block_i=block_i, num_warps=num_warps,
             num_stages=num_stages, path=path, splits=splits, exchange=exchange, smem=smem)
    check_device("x", x)

    # torch.empty, not empty_like: empty_like keeps a transposed input's strides.
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if x.numel() == 0:
        return out
    stages = {} if p.num_stages is None else {"num_stages": p.num_stages}
    if p.smem:
        stats = torch.empty((2, p.splits, p.n_i), dtype=torch.float32, device=x.device)
        counters = torch.zeros(1 + p.grid, dtype=torch.int32, device=x.device)
        softmax_across_exchange_smem_kernel[(p.grid * p.splits,)](
            x, out, stats, counters, p.n_i, p.n_r, p.stride_xr // (16 // x.element_size()),
            p.stride_oi, p.stride_or, p.splits, BLOCK_I=p.block_i, BLOCK_R=p.block_r,
            CHUNK_R=_SMEM_CHUNK, SLICES=_pow2(p.splits), VEC=16 // x.element_size(),
            EVEN_R=p.n_r % p.block_r == 0, OUT_ALONG_R=p.stride_or == 1,
            num_warps=p.num_warps)
        return out
    if p.exchange:
        stats = torch.empty((2, p.splits, p.n_i), dtype=torch.float32, device=x.device)
        counters = torch.zeros(1 + p.grid, dtype=torch.int32, device=x.device)
        softmax_across_exchange_kernel[(p.grid * p.splits,)](
            x, out, stats, counters, p.n_i, p.n_r, p.stride_xi, p.stride_xr, p.stride_oi,
            p.stride_or, p.splits, BLOCK_I=p.block_i, BLOCK_R=p.block_r,
            SLICES=_pow2(p.splits), num_warps=p.num_warps, **stages)
        return out
    if p.splits > 1:
        # Stage 1 fills (max, sum) per slice and row; stage 2 merges them and normalises.
        stats = torch.empty((2, p.splits, p.n_i), dtype=torch.float32, device=x.device)
        grid = (p.grid, p.splits)
        softmax_across_partial_kernel[grid](
            x, stats, p.n_i, p.n_r, p.stride_xi, p.stride_xr, p.rows_per_split,
            BLOCK_I=p.block_i, BLOCK_R=p.block_r, num_warps=p.num_warps, **stages)
        softmax_across_normalize_kernel[grid](
            x, out, stats, p.n_i, p.n_r, p.stride_xi, p.stride_xr, p.stride_oi, p.stride_or,
            p.rows_per_split, BLOCK_I=p.block_i, BLOCK_R=p.block_r,
            SPLITS=_pow2(p.splits), num_warps=p.num_warps, **stages)
        return out
    kernel = softmax_along_kernel if p.path == "A" else softmax_across_kernel
    kernel[(p.grid,)](
        x, out, p.n_i, p.n_r, p.stride_xi, p.stride_xr, p.stride_oi, p.stride_or,
        BLOCK_I=p.block_i, BLOCK_R=p.block_r, ONE_BLOCK=p.one_block, num_warps=p.num_warps,
        **stages)
    return out
