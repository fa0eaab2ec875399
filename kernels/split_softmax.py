"""Split softmax: rows too wide for one program, in three launches.

What you will learn
- Why one program per row fails for a few very wide rows: a row of 131072 values does not fit one
  program's registers, and 8 such rows keep 8 of the H200's 132 SMs busy.
- How to split each row into chunks and still get an exact softmax, in three kernel launches on
  one stream:
  1. `partial_stats`: one program per (row, chunk) computes the chunk's maximum m and the sum
     s = sum(exp(x - m)) in float32, written to two (M, C) float32 buffers;
  2. `merge_stats`: one program per row merges its C partial states into the row's maximum
     m_row = max_c m_c and denominator s_row = sum_c s_c * exp(m_c - m_row) (each partial
     denominator rescaled to the common maximum: the online-normalization merge of workshop 4);
  3. `normalize`: one program per (row, chunk) writes exp(x - m_row) / s_row, rounded once.
- Why no program waits for another (no cross-block spin barrier): launches on one stream run in
  order, so the kernel boundary is the grid-wide barrier, and it cannot deadlock.

`split_softmax(x)` runs the three stages; each stage is also a public function, so a lesson can
look at the intermediate statistics.

Limitations
- x is 2-D, float16, bfloat16 or float32, with any strides (transposed views work, but read a
  column at a time, which is slow); the output is a new contiguous tensor of x's dtype.
- A chunk is one power-of-two tile held in registers: `chunk` in [4, 16384]. Rows may be as wide
  as memory allows (the number of chunks grows); statistics are float32.
- A chunk that holds only -inf is fine (its state is the identity (-inf, 0)); a row of only -inf
  gives NaN, as torch.softmax does.
- Exactly three launches per call (none for an empty tensor). Speed depends on `chunk` and
  `num_warps`; `CONFIGS` lists the candidates a benchmark sweep tries. Written for an NVIDIA H200
  (132 SMs); see the validation report for measured numbers.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

from ._gpu import capability, cdiv, device_index, next_power_of_2, sm_count
from ._validate import check_device, check_int_range, check_power_of_two, check_tensor, interpreting

# exp(x) = 2^(x * log2(e)): Triton 3.6 compiles tl.exp2 on float32 to the GPU's one-instruction
# ex2 (which flushes results below 2^-126 to zero), tl.exp to a slower ex2 that keeps them;
# with 16-bit inputs these kernels are short of instructions, not of bandwidth (workshop 1).
LOG2E = tl.constexpr(1.4426950408889634)

MIN_CHUNK = 4  # tl.arange needs a power of two; 4 lets the lesson run its 2 x 12 example
MAX_CHUNK = 16384  # one chunk is one tile in registers: 16384 fp32 over 16 warps = 32 per thread
_DEFAULT_MIN_CHUNK = 1024  # smaller default chunks make programs too short to hide latency
# Larger chunks only made programs fewer and longer: on the H200 sweep (graph timing, 1024 x
# 131072 fp16) chunks of 2048-8192 with 2048 values per warp ran 198-200 us, 16384 over 16 warps
# 218 us (benchmarks/results/sweep-graph-softmax-20261130b.json.gz, in git history before
# commit c7fe401).
_DEFAULT_MAX_CHUNK = 4096
_VALUES_PER_WARP = 2048  # default num_warps = chunk / this (64 values per thread), at least 2
_PROGRAMS_PER_SM = 4  # default chunk: aim for this many (row, chunk) programs per SM
_MERGE_BLOCK_C = 1024  # partial states a merge program reads per loop step
_MAX_COUNT = 2**63 - 1  # sizes and SM counts default_chunk accepts: any int64
EARLY_LAUNCH = True  # split_softmax launches stages 2 and 3 early where the GPU allows it

# Candidate launch knobs for a benchmark sweep (chunk=None: the width/rows heuristic below).
CONFIGS = [dict(chunk=None, num_warps=None)] + [
    dict(chunk=c, num_warps=w)
    for c in (1024, 2048, 4096, 8192, 16384)
    for w in (2, 4, 8, 16)
    if 64 <= c // w <= 4096  # 2 to 128 values per thread
]


# ---------------------------------------------------------------------------------------------
# Stage 1: partial statistics per (row, chunk)
# ---------------------------------------------------------------------------------------------
@triton.jit
def partial_stats_kernel(
    x_ptr, m_ptr, s_ptr,  # pointers: input (M, N); partial max and partial sum (M, C) float32
    n_cols, n_chunks,  # sizes: N and C = cdiv(N, CHUNK)
    stride_xm, stride_xn,  # strides of x
    stride_pm, stride_pc,  # strides of the two (M, C) statistics buffers
    CHUNK: tl.constexpr,  # columns per program, a power of two
    EARLY_LAUNCH: tl.constexpr,  # let the next launch start early (see `split_softmax`)
):
    if EARLY_LAUNCH:
        gdc_launch_dependents()  # the merge may be launched now; it waits before reading m, s
    pid = tl.program_id(0)
    row = (pid // n_chunks).to(tl.int64)  # int64 before multiplying a stride
    chunk_id = (pid % n_chunks).to(tl.int64)
    cols = chunk_id * CHUNK + tl.arange(0, CHUNK)  # (CHUNK,)
    mask = cols < n_cols  # the last chunk of a row stops at n_cols
    # -inf in the masked lanes: never the max, and exp(-inf - m) = 0 adds nothing to the sum.
    x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=mask,
                other=-float("inf")).to(tl.float32)
    # TODO(partial_stats): compute this chunk's maximum `m` and `s`, the sum of exp(x - m),
    # both float32 scalars. A chunk of only -inf (a masked span) has m = -inf, and
    # exp(-inf - (-inf)) is NaN: shift by 0 instead, so the state is the identity (-inf, 0).
    pass
    tl.store(m_ptr + row * stride_pm + chunk_id * stride_pc, m)
    tl.store(s_ptr + row * stride_pm + chunk_id * stride_pc, s)


def partial_stats(x: torch.Tensor, chunk: int | None = None, *,
                  num_warps: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Per (row, chunk) maximum m and sum of exp(x - m), as two (M, C) float32 tensors.

    Chunk c of row i covers columns [c * chunk, (c + 1) * chunk) clipped to the width; C is
    cdiv(N, chunk). chunk=None picks one from the shape (see `default_chunk`).
    """
    chunk, warps = _check_x(x, chunk, num_warps)
    n_rows, n_cols = x.shape
    n_chunks = cdiv(n_cols, chunk)
    m = torch.empty((n_rows, n_chunks), dtype=torch.float32, device=x.device)
    s = torch.empty((n_rows, n_chunks), dtype=torch.float32, device=x.device)
    _launch_partial_stats(x, m, s, chunk, warps)
    return m, s


def _launch_partial_stats(x, m, s, chunk: int, warps: int, early: bool = False) -> None:
    """Launch stage 1 into the (M, C) buffers m and s (arguments already checked)."""
    if m.numel() == 0:
        return
    n_chunks = m.shape[1]
    partial_stats_kernel[(m.numel(),)](
        x, m, s, x.shape[1], n_chunks, x.stride(0), x.stride(1), m.stride(0), m.stride(1),
        CHUNK=chunk, EARLY_LAUNCH=early, num_warps=warps)


# ---------------------------------------------------------------------------------------------
# Stage 2: merge the C partial states of each row
# ---------------------------------------------------------------------------------------------
@triton.jit
def merge_stats_kernel(
    m_ptr, s_ptr, m_row_ptr, s_row_ptr,  # pointers: partial (M, C) in; merged (M,) out
    n_chunks,  # size: C
    stride_mm, stride_mc, stride_sm, stride_sc,  # strides of the partial m and s
    BLOCK_C: tl.constexpr,  # partial states read per loop step
    EARLY_LAUNCH: tl.constexpr,  # launched early (see `split_softmax`): wait for stage 1 here
):
    if EARLY_LAUNCH:
        gdc_launch_dependents()  # the normalize may be launched now; it waits for the merge
        gdc_wait()  # stage 1 has finished and its m, s are visible past this line
    row = tl.program_id(0).to(tl.int64)  # one program per row
    m_row_start = m_ptr + row * stride_mm
    s_row_start = s_ptr + row * stride_sm
    offsets = tl.arange(0, BLOCK_C)  # (BLOCK_C,)

    # Pass 1: the row maximum is the maximum of the chunk maxima.
    m_acc = tl.full((BLOCK_C,), -float("inf"), tl.float32)
    for start in range(0, n_chunks, BLOCK_C):
        c = start + offsets
        m = tl.load(m_row_start + c * stride_mc, mask=c < n_chunks, other=-float("inf"))
        m_acc = tl.maximum(m_acc, m)
    m_row = tl.max(m_acc, axis=0)

    # Pass 2: add the partial denominators, each moved to the common maximum first.
    s_acc = tl.zeros((BLOCK_C,), tl.float32)
    for start in range(0, n_chunks, BLOCK_C):
        c = start + offsets
        m = tl.load(m_row_start + c * stride_mc, mask=c < n_chunks, other=-float("inf"))
        s = tl.load(s_row_start + c * stride_sc, mask=c < n_chunks, other=0.0)
        # TODO(merge_stats): add this block's partial denominators to `s_acc`. Each s_c sums
        # exp(x - m_c), so it must be rescaled by exp(m_c - m_row) before it can be added to the
        # others. Padded lanes hold m = -inf, s = 0: they must add exactly 0.
        pass
    tl.store(m_row_ptr + row, m_row)
    tl.store(s_row_ptr + row, tl.sum(s_acc, axis=0))


def merge_stats(m: torch.Tensor, s: torch.Tensor, *,
                num_warps: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Merge (M, C) partial states into the rows' (M,) maximum and denominator, float32.

    m_row = max_c m[:, c];  s_row = sum_c s[:, c] * exp(m[:, c] - m_row).
    """
    check_tensor("m", m, dtypes=(torch.float32,), ndim=2)
    check_tensor("s", s, dtypes=(torch.float32,), ndim=2)
    if s.shape != m.shape or s.device != m.device:
        raise ValueError(f"s must match m's shape {tuple(m.shape)} and device {m.device}, got "
                         f"{tuple(s.shape)} on {s.device}")
    if num_warps is not None:
        check_power_of_two("num_warps", num_warps, 1, 32)
    check_device("m", m)

    n_rows = m.shape[0]
    m_row = torch.empty((n_rows,), dtype=torch.float32, device=m.device)
    s_row = torch.empty((n_rows,), dtype=torch.float32, device=m.device)
    _launch_merge_stats(m, s, m_row, s_row, num_warps)
    return m_row, s_row


def _launch_merge_stats(m, s, m_row, s_row, num_warps: int | None, early: bool = False) -> None:
    """Launch stage 2: (M, C) partial states in, (M,) merged states out (arguments checked)."""
    n_rows, n_chunks = m.shape
    if n_rows == 0:
        return
    block_c = min(next_power_of_2(max(n_chunks, 1)), _MERGE_BLOCK_C)
    warps = num_warps or (1 if block_c <= 256 else 4)  # tiny work: few threads per row
    merge_stats_kernel[(n_rows,)](
        m, s, m_row, s_row, n_chunks, m.stride(0), m.stride(1), s.stride(0), s.stride(1),
        BLOCK_C=block_c, EARLY_LAUNCH=early, launch_pdl=early, num_warps=warps)


# ---------------------------------------------------------------------------------------------
# Stage 3: normalize every element with its row's merged statistics
# ---------------------------------------------------------------------------------------------
@triton.jit
def normalize_kernel(
    x_ptr, m_row_ptr, s_row_ptr, y_ptr,  # pointers: input, merged statistics (M,), output
    n_cols, n_chunks,  # sizes: N and C = cdiv(N, CHUNK)
    stride_xm, stride_xn, stride_ym, stride_yn,  # strides of x and y
    CHUNK: tl.constexpr,  # columns per program, a power of two
    EARLY_LAUNCH: tl.constexpr,  # launched early (see `split_softmax`): wait for the merge here
):
    # Programs run in reverse order: the first stage walked x forwards, so the end of x is what
    # is most likely still in L2; reading it first saves DRAM traffic when x is a little larger
    # than L2 (and changes nothing else).
    pid = tl.num_programs(0) - 1 - tl.program_id(0)
    row = (pid // n_chunks).to(tl.int64)  # int64 before multiplying a stride
    chunk_id = (pid % n_chunks).to(tl.int64)
    cols = chunk_id * CHUNK + tl.arange(0, CHUNK)  # (CHUNK,)
    in_row = cols < n_cols  # the last chunk of a row stops at n_cols
    x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=in_row,
                other=-float("inf")).to(tl.float32)
    if EARLY_LAUNCH:
        # x is nobody's output, so it was read above while the merge may still be running;
        # the merged statistics are read only after the merge has finished.
        gdc_wait()
    m_row = tl.load(m_row_ptr + row)
    s_row = tl.load(s_row_ptr + row)
    # TODO(normalize): compute `y` = exp(x - m_row) / s_row in float32, with the row's merged
    # statistics (not this chunk's own maximum: every chunk of a row must use the same m_row and
    # s_row). Divide once per program (1 / s_row) and multiply per element: a multiply is cheaper.
    pass
    tl.store(y_ptr + row * stride_ym + cols * stride_yn, y.to(y_ptr.dtype.element_ty), mask=in_row)


def normalize(x: torch.Tensor, m_row: torch.Tensor, s_row: torch.Tensor,
              chunk: int | None = None, *, num_warps: int | None = None) -> torch.Tensor:
    """exp(x - m_row[:, None]) / s_row[:, None] as a new contiguous tensor of x's dtype."""
    check_tensor("x", x, ndim=2)
    n_rows, n_cols = x.shape
    for name, t in (("m_row", m_row), ("s_row", s_row)):
        check_tensor(name, t, dtypes=(torch.float32,), ndim=1)
        if t.shape[0] != n_rows or t.device != x.device:
            raise ValueError(f"{name} must have shape ({n_rows},) on {x.device} (one value per "
                             f"row of x), got {tuple(t.shape)} on {t.device}")
    chunk, warps = _check_x(x, chunk, num_warps)
    # The kernel reads m_row[row] at offset `row`: copy a strided view (M floats, cheap).
    m_row, s_row = m_row.contiguous(), s_row.contiguous()
    y = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)  # contiguous, fresh
    _launch_normalize(x, m_row, s_row, y, chunk, warps)
    return y


def _launch_normalize(x, m_row, s_row, y, chunk: int, warps: int, early: bool = False) -> None:
    """Launch stage 3 into y (arguments checked; m_row and s_row contiguous)."""
    if y.numel() == 0:
        return
    n_cols = x.shape[1]
    n_chunks = cdiv(n_cols, chunk)
    normalize_kernel[(x.shape[0] * n_chunks,)](
        x, m_row, s_row, y, n_cols, n_chunks,
        x.stride(0), x.stride(1), y.stride(0), y.stride(1),
        CHUNK=chunk, EARLY_LAUNCH=early, launch_pdl=early, num_warps=warps)


# ---------------------------------------------------------------------------------------------
# The whole softmax: three launches on the current stream
# ---------------------------------------------------------------------------------------------
def split_softmax(x: torch.Tensor, *, chunk: int | None = None,
                  num_warps: int | None = None) -> torch.Tensor:
    """Softmax over the last dimension of a 2-D tensor, in exactly three launches.

    No program ever waits for another: each launch starts after the previous one finished on
    the same stream, which is the only grid-wide barrier that cannot deadlock.
    """
    chunk, warps = _check_x(x, chunk, num_warps)
    n_rows, n_cols = x.shape
    y = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)  # contiguous, fresh
    if x.numel() == 0:
        return y
    # The arguments were checked once, above; the stages below only launch. All statistics
    # live in one float32 workspace (one allocation instead of four: each costs host time):
    # rows 0 and 1 of `partial` are m and s (M, C); rows 0 and 1 of `merged` are m_row, s_row.
    n_chunks = cdiv(n_cols, chunk)
    workspace = torch.empty(2 * n_rows * (n_chunks + 1), dtype=torch.float32, device=x.device)
    partial = workspace[:2 * n_rows * n_chunks].view(2, n_rows, n_chunks)
    merged = workspace[2 * n_rows * n_chunks:].view(2, n_rows)
    # Early launch (Hopper and newer GPUs, "programmatic dependent launch"): launches 2 and 3
    # may start while the launch before them is still running, and wait inside the kernel
    # (gdc_wait) at the point where they first read its output. The launch boundary is still
    # the barrier; it only stops costing the gap between two kernels. Launch 1 is an ordinary
    # launch: it waits for whatever wrote x.
    early = _early_launch_ok(x)
    _launch_partial_stats(x, partial[0], partial[1], chunk, warps, early)  # launch 1: (M, C)
    _launch_merge_stats(partial[0], partial[1], merged[0], merged[1], None, early)  # 2: (M,)
    _launch_normalize(x, merged[0], merged[1], y, chunk, warps, early)  # launch 3
    return y


# ---------------------------------------------------------------------------------------------
# Defaults and argument checks
# ---------------------------------------------------------------------------------------------
def default_chunk(n_rows: int, n_cols: int, sm_count: int = 132) -> int:
    """The chunk that gives about `_PROGRAMS_PER_SM` programs per SM.

    Few rows get many chunks each (8 rows of 131072 on 132 SMs: chunk 2048, 64 chunks a row);
    many rows get fewer, larger chunks. Clamped to [_DEFAULT_MIN_CHUNK, _DEFAULT_MAX_CHUNK] and
    never wider than the row needs. Raises TypeError for a non-int argument and ValueError for
    a negative size or an sm_count below 1.
    """
    # Checked before the arithmetic below: sm_count = 0 would divide by zero there, and a
    # negative count or size would quietly give some chunk instead of an error.
    check_int_range("n_rows", n_rows, 0, _MAX_COUNT)
    check_int_range("n_cols", n_cols, 0, _MAX_COUNT)
    check_int_range("sm_count", sm_count, 1, _MAX_COUNT)
    wanted_chunks = cdiv(_PROGRAMS_PER_SM * sm_count, max(n_rows, 1))
    chunk = next_power_of_2(cdiv(max(n_cols, 1), wanted_chunks))
    chunk = min(max(chunk, _DEFAULT_MIN_CHUNK), _DEFAULT_MAX_CHUNK)
    return max(min(chunk, next_power_of_2(max(n_cols, 1))), MIN_CHUNK)


# Host-side helpers (see references/_gpu.py: plain Python, asked once per device, because a
# launcher runs on every call and its microseconds add up; "host time" in the lesson).
def _sm_count(x: torch.Tensor) -> int:
    if x.device.type == "cuda" and not interpreting():
        return sm_count(device_index(x))
    return 132  # the H200 this book was measured on; under the interpreter it only sets sizes


def _early_launch_ok(x: torch.Tensor) -> bool:
    """Programmatic dependent launch needs a real GPU of compute capability 9.0 or newer."""
    if interpreting() or x.device.type != "cuda" or not EARLY_LAUNCH:
        return False
    return capability(device_index(x))[0] >= 9


def _check_x(x, chunk, num_warps) -> tuple[int, int]:
    """Check x and the launch knobs; return (chunk, num_warps) with the defaults filled in."""
    check_tensor("x", x, ndim=2)
    n_rows, n_cols = x.shape
    if chunk is None:
        chunk = default_chunk(n_rows, n_cols, _sm_count(x))
    else:
        check_power_of_two("chunk", chunk, MIN_CHUNK, MAX_CHUNK)
    if num_warps is None:
        # 2048 values per warp (64 per thread), at least 2 warps: 4096 -> 2, 16384 -> 8.
        num_warps = min(max(chunk // _VALUES_PER_WARP, 2), 16)
    else:
        check_power_of_two("num_warps", num_warps, 1, 32)
    check_device("x", x)
    if n_rows * cdiv(n_cols, chunk) > 2**31 - 1:
        raise ValueError(f"x needs {n_rows} x {cdiv(n_cols, chunk)} programs, more than a grid "
                         "holds (2^31 - 1); use a larger chunk")
    return chunk, num_warps
