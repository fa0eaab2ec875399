"""Path B's exchange against its two-kernel split, and float32 row packing: a GPU diagnostic.

    python3 tools/probe_strided_exchange.py

1. Transposed views of 2^26 elements (float16 and float32; softmax rows 1024 to 32768 long):
   the copy ceiling, the launcher's default, the two-kernel split (exchange=False) and the
   one-kernel exchange at several slice shapes (block_r positions x block_i rows, warps), each
   as a fraction of the copy and checked against torch.softmax in float32.
2. Contiguous float32 rows of 256 and 512: torch.softmax, the default and other rows-per-program
   and warp counts, as a ratio to torch.softmax.
Graph timing, every variant of one problem timed in the same rounds. Prints one line per
variant; a diagnostic, not evidence (benchmarks/results/diagnostics/ keeps its output).

Why do 16-bit inputs gain nothing from the exchange? Each mode below times copies of the
exchange kernel written in this file (not the reference's), float16 (and float32 or bfloat16)
transposed views of rows 4096 to 32768 long:

    --bisect   the kernel's steps switched on one at a time (ticket, load and transposed
               store; each row's max; exp and sum; the arrival; reading the siblings'
               statistics; the wait); outputs wrong until the last step, timing only
    --lean     without masks, with exp(x - m) folded into one FFMA, without the wait
    --grouped  tickets dealt to neighbouring strips first
    --packed   16-bit values held two to a 32-bit register through the wait
    --merge    a recomputed end, a release-only arrival, statistics stored row by row

    --one-block  instead: path B's one-block kernel (no exchange) on strips of 4096 and 8192
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from references.strided_softmax import LOG2E  # noqa: E402
from tools._timing import graph_medians_us  # noqa: E402

ELEMENTS = 1 << 26
EXCHANGE_SHAPES = ((256, 32, 4), (512, 32, 8), (512, 16, 4), (1024, 16, 8), (256, 64, 8),
                   (128, 64, 4))


def _max_err(out, x):
    import torch
    return (out.float() - torch.softmax(x.float(), dim=-1)).abs().max().item()


def _transposed(dtype: str, width: int):
    """(x, calls): a transposed view of 2^26 fresh random elements whose softmax rows of `width`
    positions are columns in memory (shape (rows, width), stride (1, rows)), and the calls every
    mode times first: "copy" (a clone of the same bytes, the ceiling) and the launcher's
    "default"."""
    import torch

    from references import strided_softmax as ss

    x = torch.randn(width, ELEMENTS // width, device="cuda", dtype=getattr(torch, dtype)).t()
    buf = x.t().contiguous()
    return x, {"copy": lambda: buf.clone(), "default": lambda: ss.softmax(x)}


def _print_times(title: str, x, calls: dict, errors: bool = True) -> None:
    """Time every call in the same rounds (graph timing) and print each as a fraction of the
    first ("copy"), with its largest error against torch.softmax unless errors=False."""
    from benchmarks import harness

    errs = {k: (_max_err(f(), x) if errors and k != "copy" else 0.0) for k, f in calls.items()}
    times = graph_medians_us(list(calls.values()), harness.PLANS["sweep"])
    print(f"\n{title}", flush=True)
    for (label, _), us in zip(calls.items(), times, strict=True):
        line = f"   {label:46s} {us:8.1f} us   {times[0] / us:5.2f} of copy"
        print(line + (f"   max|err| {errs[label]:.1e}" if errors else ""), flush=True)


def _exchange_call(kernel, x, br: int, bi: int, w: int, **constexprs):
    """A zero-argument launch of one of this file's exchange kernels on transposed x in slices
    of br positions x bi rows over w warps, with its own output, statistics and counters (zeroed
    before every launch, as the launcher does)."""
    import torch

    from references import strided_softmax as ss

    p = ss.plan(x, exchange=True, block_r=br, block_i=bi, num_warps=w)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    stats = torch.empty((2, p.splits, p.n_i), dtype=torch.float32, device=x.device)
    counters = torch.zeros(1 + p.grid, dtype=torch.int32, device=x.device)
    strides = (p.stride_xi, p.stride_xr) if "stride_xi" in kernel.arg_names else (p.stride_xr,)
    args = (x, out, stats, counters, p.n_i, p.n_r, *strides, p.stride_oi, p.stride_or, p.splits)

    def call():
        counters.zero_()
        kernel[(p.grid * p.splits,)](*args, BLOCK_I=p.block_i, BLOCK_R=p.block_r,
                                     SLICES=triton.next_power_of_2(p.splits), num_warps=w,
                                     **constexprs)
        return out
    return call


def transposed(dtypes=("float16", "float32"), widths=(1024, 2048, 4096, 8192, 16384, 32768)):
    from references import strided_softmax as ss

    for dtype in dtypes:
        for width in widths:
            x, calls = _transposed(dtype, width)
            calls["split (exchange=False)"] = lambda: ss.softmax(x, exchange=False)
            for br, bi, w in EXCHANGE_SHAPES:
                knobs = dict(exchange=True, block_r=br, block_i=bi, num_warps=w)
                try:
                    ss.plan(x, **knobs)
                except ValueError:
                    continue
                calls[f"exchange {br}x{bi} {w}w"] = lambda k=knobs: ss.softmax(x, **k)
            _print_times(f"{x.shape[0]} x {width} {dtype} transposed: default plan {ss.plan(x)}",
                         x, calls)


def contiguous_fp32(widths=(256, 512)):
    import torch

    from benchmarks import harness
    from references import strided_softmax as ss

    plan = harness.PLANS["sweep"]
    for width in widths:
        x = torch.randn(ELEMENTS // width, width, device="cuda", dtype=torch.float32)
        calls = {"torch.softmax": lambda: torch.softmax(x, dim=-1), "copy": lambda: x.clone(),
                 "default": lambda: ss.softmax(x)}
        for bi in (2, 4, 8, 16, 32):
            for w in (1, 2, 4, 8):
                if bi * width // (32 * w) < 4:
                    continue  # fewer than 4 elements per thread: not a 128-bit access
                knobs = dict(block_i=bi, num_warps=w)
                calls[f"block_i={bi} {w}w"] = lambda k=knobs: ss.softmax(x, **k)
        print(f"\n{x.shape[0]} x {width} float32 contiguous: default plan {ss.plan(x)}")
        times = graph_medians_us(list(calls.values()), plan)
        base = times[0]
        for label, us in zip(calls, times, strict=True):
            print(f"   {label:32s} {us:8.1f} us   {base / us:5.3f}x torch.softmax")


# ---------------------------------------------------------------------------------------------
# --lean: does the instruction count per element hold 16-bit inputs back? (diagnostic kernels)
# ---------------------------------------------------------------------------------------------

@triton.jit
def exchange_lean_kernel(x_ptr, out_ptr, stats_ptr, counters_ptr, n_i, n_r, stride_xi,
                         stride_xr, stride_oi, stride_or, n_slices,
                         BLOCK_I: tl.constexpr, BLOCK_R: tl.constexpr, SLICES: tl.constexpr,
                         MASKED: tl.constexpr, FOLD: tl.constexpr, WAIT: tl.constexpr,
                         GROUP: tl.constexpr):
    """The reference's exchange with parts switched off. MASKED=False: no masks (full tiles
    only: right for these power-of-two shapes, wrong for ragged ones); FOLD=True: exp(x - m) as
    2^(x log2 e - m log2 e), one FFMA (less accurate for logits near 1e4), and the final scale
    from the shift the exponentials used; WAIT=False: no wait for the other slices (wrong
    output: timing only). GROUP > 1: consecutive tickets go to GROUP neighbouring strips (the
    same slice of each) before the next slice, so programs running together read neighbouring
    bytes of the same memory rows (needs GROUP * n_slices programs resident, and the strips a
    multiple of GROUP)."""
    ticket = tl.atomic_add(counters_ptr, 1)
    group = ticket // (GROUP * n_slices)
    within = ticket % (GROUP * n_slices)
    strip = (group * GROUP + within % GROUP).to(tl.int64)
    slice_id = (within // GROUP).to(tl.int64)
    rows = strip * BLOCK_I + tl.arange(0, BLOCK_I)
    i = rows[None, :]
    r = slice_id * BLOCK_R + tl.arange(0, BLOCK_R).to(tl.int64)[:, None]
    if MASKED:
        i_ok = i < n_i
        r_ok = r < n_r
        x = tl.load(x_ptr + i * stride_xi + r * stride_xr, mask=i_ok & r_ok,
                    other=-float("inf")).to(tl.float32)
        x = tl.where(i_ok, x, 0.0)
    else:
        x = tl.load(x_ptr + i * stride_xi + r * stride_xr).to(tl.float32)
    m = tl.max(x, axis=0)
    shift = tl.where(m == -float("inf"), 0.0, m)
    if FOLD:
        p = tl.exp2(x * LOG2E - (shift * LOG2E)[None, :])
    else:
        p = tl.exp2((x - shift[None, :]) * LOG2E)
    slot = slice_id * n_i + rows
    tl.store(stats_ptr + slot, m, mask=rows < n_i)
    tl.store(stats_ptr + n_slices * n_i + slot, tl.sum(p, axis=0), mask=rows < n_i)
    tl.debug_barrier()
    arrived = tl.atomic_add(counters_ptr + 1 + strip, 1, sem="acq_rel") + 1
    if WAIT:
        while arrived < n_slices:
            arrived = tl.atomic_add(counters_ptr + 1 + strip, 0, sem="acquire")
    k = tl.arange(0, SLICES).to(tl.int64)[:, None]
    ok = (k < n_slices) & (i < n_i)
    m_k = tl.load(stats_ptr + k * n_i + i, mask=ok, other=-float("inf"), cache_modifier=".cg")
    s_k = tl.load(stats_ptr + (n_slices + k) * n_i + i, mask=ok, other=0.0,
                  cache_modifier=".cg")
    m_all = tl.max(m_k, axis=0)
    shift_all = tl.where(m_all == -float("inf"), 0.0, m_all)
    s_all = tl.sum(s_k * tl.exp2((m_k - shift_all[None, :]) * LOG2E), axis=0)
    if FOLD:
        scale = tl.exp2((shift - shift_all) * LOG2E) / s_all
    else:
        scale = tl.exp2((m - m_all) * LOG2E) / s_all
    y = (p * scale[None, :]).to(out_ptr.dtype.element_ty)
    if MASKED:
        tl.store(out_ptr + i * stride_oi + r * stride_or, y, mask=(i < n_i) & (r < n_r))
    else:
        tl.store(out_ptr + i * stride_oi + r * stride_or, y)


LEAN_VARIANTS = {"masked (= reference)": dict(MASKED=True, FOLD=False, WAIT=True, GROUP=1),
                 "no masks": dict(MASKED=False, FOLD=False, WAIT=True, GROUP=1),
                 "no masks, folded": dict(MASKED=False, FOLD=True, WAIT=True, GROUP=1),
                 "no masks, folded, no wait (wrong)": dict(MASKED=False, FOLD=True, WAIT=False,
                                                           GROUP=1)}
LEAN_SHAPES = ((256, 32, 4), (512, 16, 4), (512, 32, 8))
GROUPED_SHAPES = ((256, 32, 4), (512, 32, 4), (512, 16, 4), (256, 64, 4), (1024, 16, 8))


def lean(dtypes=("float16", "float32"), widths=(4096, 8192, 16384, 32768), grouped=False):
    from references import strided_softmax as ss

    for dtype in dtypes:
        for width in widths:
            x, calls = _transposed(dtype, width)
            for br, bi, w in GROUPED_SHAPES if grouped else LEAN_SHAPES:
                variants = LEAN_VARIANTS
                if grouped:
                    p = ss.plan(x, exchange=True, block_r=br, block_i=bi, num_warps=w)
                    variants = {f"group {g}": dict(MASKED=True, FOLD=False, WAIT=True, GROUP=g)
                                for g in (1, 2, 4, 8) if g * p.splits <= 132 and p.grid % g == 0}
                for name, flags in variants.items():
                    calls[f"{name} {br}x{bi} {w}w"] = _exchange_call(exchange_lean_kernel, x, br,
                                                                     bi, w, **flags)
            _print_times(f"{x.shape[0]} x {width} {dtype} transposed", x, calls)


# ---------------------------------------------------------------------------------------------
# --packed: 16-bit x held as int32 words through the wait (two values per register)
# ---------------------------------------------------------------------------------------------
@triton.jit
def _unpack(w, HI: tl.constexpr, IS_BF16: tl.constexpr):
    """float32 of the low (HI=False) or high 16-bit half of each int32 (plain Triton ops)."""
    if IS_BF16:
        if HI:
            return (w & -65536).to(tl.float32, bitcast=True)
        else:
            return (w << 16).to(tl.float32, bitcast=True)
    else:
        if HI:
            return (w >> 16).to(tl.int16).to(tl.float16, bitcast=True).to(tl.float32)
        else:
            return w.to(tl.int16).to(tl.float16, bitcast=True).to(tl.float32)


@triton.jit
def _unpack_late(w, HI: tl.constexpr, IS_BF16: tl.constexpr):
    """The same through inline PTX with side effects: the compiler can neither merge it with
    the first unpacking nor move it above the wait, so the packed words are what stays live."""
    if IS_BF16:
        if HI:
            return tl.inline_asm_elementwise("and.b32 $0, $1, 0xFFFF0000;", "=r,r", [w],
                                             dtype=tl.float32, is_pure=False, pack=1)
        else:
            return tl.inline_asm_elementwise("shl.b32 $0, $1, 16;", "=r,r", [w],
                                             dtype=tl.float32, is_pure=False, pack=1)
    else:
        if HI:
            return tl.inline_asm_elementwise(
                "{ .reg .b16 l, h; mov.b32 {l, h}, $1; cvt.f32.f16 $0, h; }", "=r,r", [w],
                dtype=tl.float32, is_pure=False, pack=1)
        else:
            return tl.inline_asm_elementwise(
                "{ .reg .b16 l, h; mov.b32 {l, h}, $1; cvt.f32.f16 $0, l; }", "=r,r", [w],
                dtype=tl.float32, is_pure=False, pack=1)


@triton.jit
def _publish_half(xf, stats_ptr, slice_id, rows, n_i, n_slices):
    m = tl.max(xf, axis=0)
    shift = tl.where(m == -float("inf"), 0.0, m)
    s = tl.sum(tl.exp2((xf - shift[None, :]) * LOG2E), axis=0)
    slot = slice_id * n_i + rows
    tl.store(stats_ptr + slot, m, mask=rows < n_i)
    tl.store(stats_ptr + n_slices * n_i + slot, s, mask=rows < n_i)


@triton.jit
def _finish_half(xf, out_ptr, stats_ptr, rows, r, r_ok, n_i, n_slices, stride_oi, stride_or,
                 SLICES: tl.constexpr):
    i = rows[None, :]
    k = tl.arange(0, SLICES).to(tl.int64)[:, None]
    ok = (k < n_slices) & (i < n_i)
    m_k = tl.load(stats_ptr + k * n_i + i, mask=ok, other=-float("inf"), cache_modifier=".cg")
    s_k = tl.load(stats_ptr + (n_slices + k) * n_i + i, mask=ok, other=0.0, cache_modifier=".cg")
    m_all = tl.max(m_k, axis=0)
    shift_all = tl.where(m_all == -float("inf"), 0.0, m_all)
    s_all = tl.sum(s_k * tl.exp2((m_k - shift_all[None, :]) * LOG2E), axis=0)
    y = tl.exp2((xf - m_all[None, :]) * LOG2E - tl.log2(s_all)[None, :])
    tl.store(out_ptr + i * stride_oi + r * stride_or, y.to(out_ptr.dtype.element_ty),
             mask=(i < n_i) & r_ok)


@triton.jit
def exchange_packed_kernel(x_ptr, out_ptr, stats_ptr, counters_ptr, n_i, n_r, stride_xr,
                           stride_oi, stride_or, n_slices, BLOCK_I: tl.constexpr,
                           BLOCK_R: tl.constexpr, SLICES: tl.constexpr, IS_BF16: tl.constexpr):
    """The exchange for 16-bit x with unit stride along i, holding x as int32 words (two
    neighbouring rows' values per register) through the wait. Needs an even stride_xr and a
    4-byte aligned x. Rows 2j come from the low halves, rows 2j + 1 from the high halves."""
    HALF: tl.constexpr = BLOCK_I // 2
    ticket = tl.atomic_add(counters_ptr, 1)
    strip = (ticket // n_slices).to(tl.int64)
    slice_id = (ticket % n_slices).to(tl.int64)
    pair = strip * HALF + tl.arange(0, HALF)  # (HALF,) word index along i
    r = slice_id * BLOCK_R + tl.arange(0, BLOCK_R).to(tl.int64)[:, None]
    r_ok = r < n_r
    words = x_ptr.to(tl.pointer_type(tl.int32), bitcast=True)
    w = tl.load(words + pair[None, :] + r * (stride_xr // 2),
                mask=(2 * pair[None, :] < n_i) & r_ok, other=-8323200)  # 0xFF80FF80: bf16 -inf pair
    even = 2 * pair
    lo = _unpack(w, False, IS_BF16)
    hi = _unpack(w, True, IS_BF16)
    if not IS_BF16:  # the fill above is a bf16 -inf pair; for fp16 mask explicitly
        lo = tl.where(r_ok, lo, -float("inf"))
        hi = tl.where(r_ok, hi, -float("inf"))
    _publish_half(lo, stats_ptr, slice_id, even, n_i, n_slices)
    _publish_half(hi, stats_ptr, slice_id, even + 1, n_i, n_slices)
    tl.debug_barrier()
    arrived = tl.atomic_add(counters_ptr + 1 + strip, 1, sem="acq_rel") + 1
    while arrived < n_slices:
        arrived = tl.atomic_add(counters_ptr + 1 + strip, 0, sem="acquire")
    _finish_half(_unpack_late(w, False, IS_BF16), out_ptr, stats_ptr, even, r, r_ok, n_i,
                 n_slices, stride_oi, stride_or, SLICES)
    _finish_half(_unpack_late(w, True, IS_BF16), out_ptr, stats_ptr, even + 1, r, r_ok, n_i,
                 n_slices, stride_oi, stride_or, SLICES)


PACKED_SHAPES = ((256, 32, 4), (512, 32, 8), (512, 32, 4), (256, 64, 4))


def packed(dtypes=("float16", "bfloat16"), widths=(4096, 8192, 16384, 32768)):
    import torch

    for dtype in dtypes:
        for width in widths:
            x, calls = _transposed(dtype, width)
            calls["exchange 256x32 4w"] = _reference_exchange(x, 256, 32, 4)
            assert x.stride(1) % 2 == 0  # the words need an even row stride
            for br, bi, w in PACKED_SHAPES:
                calls[f"packed {br}x{bi} {w}w"] = _exchange_call(
                    exchange_packed_kernel, x, br, bi, w, IS_BF16=x.dtype == torch.bfloat16)
            _print_times(f"{x.shape[0]} x {width} {dtype} transposed", x, calls)


def _reference_exchange(x, br, bi, w):
    from references import strided_softmax as ss
    return lambda: ss.softmax(x, exchange=True, block_r=br, block_i=bi, num_warps=w)


# ---------------------------------------------------------------------------------------------
# --bisect: from a bare transposing copy to the whole exchange, one step at a time
# ---------------------------------------------------------------------------------------------
@triton.jit
def _take_slice(x_ptr, counters_ptr, n_i, n_r, stride_xi, stride_xr, n_slices,
                BLOCK_I: tl.constexpr, BLOCK_R: tl.constexpr):
    """The reference exchange's first steps: take a ticket, name its strip and slice, load the
    slice in float32 (-inf past the end of a row)."""
    ticket = tl.atomic_add(counters_ptr, 1)
    strip = (ticket // n_slices).to(tl.int64)
    slice_id = (ticket % n_slices).to(tl.int64)
    rows = strip * BLOCK_I + tl.arange(0, BLOCK_I)
    i = rows[None, :]
    i_ok = i < n_i
    r = slice_id * BLOCK_R + tl.arange(0, BLOCK_R).to(tl.int64)[:, None]
    r_ok = r < n_r
    x = tl.load(x_ptr + i * stride_xi + r * stride_xr, mask=i_ok & r_ok,
                other=-float("inf")).to(tl.float32)
    return strip, slice_id, rows, i, i_ok, r, r_ok, x


@triton.jit
def exchange_steps_kernel(x_ptr, out_ptr, stats_ptr, counters_ptr, n_i, n_r, stride_xi,
                          stride_xr, stride_oi, stride_or, n_slices,
                          BLOCK_I: tl.constexpr, BLOCK_R: tl.constexpr, SLICES: tl.constexpr,
                          STEPS: tl.constexpr):
    """The exchange's steps up to STEPS (wrong output below 5, timing only): 0 ticket, load
    and store the tile transposed; 1 + each row's max, stored; 2 + exp(x - m) and its sum,
    stored, p stored instead of x; 3 + the arrival count; 4 + reading all slices' statistics
    and scaling (no wait); 5 the whole exchange (with the wait)."""
    strip, slice_id, rows, i, i_ok, r, r_ok, x = _take_slice(
        x_ptr, counters_ptr, n_i, n_r, stride_xi, stride_xr, n_slices, BLOCK_I, BLOCK_R)
    y = x
    slot = slice_id * n_i + rows
    if STEPS >= 1:
        m = tl.max(x, axis=0)
        tl.store(stats_ptr + slot, m, mask=rows < n_i)
        if STEPS >= 2:
            shift = tl.where(m == -float("inf"), 0.0, m)
            p = tl.exp2((x - shift[None, :]) * LOG2E)
            tl.store(stats_ptr + n_slices * n_i + slot, tl.sum(p, axis=0), mask=rows < n_i)
            y = p
            if STEPS >= 3:
                tl.debug_barrier()
                arrived = tl.atomic_add(counters_ptr + 1 + strip, 1, sem="acq_rel") + 1
                if STEPS >= 5:
                    while arrived < n_slices:
                        arrived = tl.atomic_add(counters_ptr + 1 + strip, 0, sem="acquire")
                if STEPS >= 4:
                    k = tl.arange(0, SLICES).to(tl.int64)[:, None]
                    ok = (k < n_slices) & i_ok
                    m_k = tl.load(stats_ptr + k * n_i + i, mask=ok, other=-float("inf"),
                                  cache_modifier=".cg")
                    s_k = tl.load(stats_ptr + (n_slices + k) * n_i + i, mask=ok, other=0.0,
                                  cache_modifier=".cg")
                    m_all = tl.max(m_k, axis=0)
                    shift_all = tl.where(m_all == -float("inf"), 0.0, m_all)
                    s_all = tl.sum(s_k * tl.exp2((m_k - shift_all[None, :]) * LOG2E), axis=0)
                    y = p * (tl.exp2((m - m_all) * LOG2E) / s_all)[None, :]
    tl.store(out_ptr + i * stride_oi + r * stride_or, y.to(out_ptr.dtype.element_ty),
             mask=i_ok & r_ok)


def bisect(cases=(("float16", 4096), ("float16", 16384), ("float32", 4096),
                  ("float32", 16384)), shapes=((256, 32, 4), (512, 16, 4))):
    for dtype, width in cases:
        x, calls = _transposed(dtype, width)
        for br, bi, w in shapes:
            for steps in range(6):
                calls[f"steps 0..{steps} {br}x{bi} {w}w"] = _exchange_call(
                    exchange_steps_kernel, x, br, bi, w, STEPS=steps)
        _print_times(f"{x.shape[0]} x {width} {dtype} transposed", x, calls, errors=False)


# ---------------------------------------------------------------------------------------------
# --merge: cheaper ends for the exchange (the bisection put the cost in the arrival and merge)
# ---------------------------------------------------------------------------------------------
@triton.jit
def exchange_merge_kernel(x_ptr, out_ptr, stats_ptr, counters_ptr, n_i, n_r, stride_xi,
                          stride_xr, stride_oi, stride_or, n_slices,
                          BLOCK_I: tl.constexpr, BLOCK_R: tl.constexpr, SLICES: tl.constexpr,
                          RECOMPUTE: tl.constexpr, RELEASE: tl.constexpr,
                          ROW_MAJOR_STATS: tl.constexpr):
    """The exchange with three changes that can be switched on one by one.
    RECOMPUTE: keep x and write 2^((x - M) log2 e - log2 S) at the end, so the slice's own max
    is not needed after the wait. RELEASE: count the arrival with a release atomic instead of
    acq_rel (the waiting reads acquire). ROW_MAJOR_STATS: the statistics of one row's slices
    side by side (row * n_slices + slice), so a strip's are one contiguous block and the merge
    reduces along the contiguous axis."""
    strip, slice_id, rows, i, i_ok, r, r_ok, x = _take_slice(
        x_ptr, counters_ptr, n_i, n_r, stride_xi, stride_xr, n_slices, BLOCK_I, BLOCK_R)
    m = tl.max(x, axis=0)
    shift = tl.where(m == -float("inf"), 0.0, m)
    p = tl.exp2((x - shift[None, :]) * LOG2E)
    if ROW_MAJOR_STATS:
        slot = rows * n_slices + slice_id
        sums = stats_ptr + n_i * n_slices
    else:
        slot = slice_id * n_i + rows
        sums = stats_ptr + n_slices * n_i
    tl.store(stats_ptr + slot, m, mask=rows < n_i)
    tl.store(sums + slot, tl.sum(p, axis=0), mask=rows < n_i)
    tl.debug_barrier()
    if RELEASE:
        arrived = tl.atomic_add(counters_ptr + 1 + strip, 1, sem="release") + 1
    else:
        arrived = tl.atomic_add(counters_ptr + 1 + strip, 1, sem="acq_rel") + 1
    while arrived < n_slices:
        arrived = tl.atomic_add(counters_ptr + 1 + strip, 0, sem="acquire")
    if ROW_MAJOR_STATS:
        k = tl.arange(0, SLICES).to(tl.int64)[None, :]  # (1, SLICES)
        row = rows[:, None]  # (BLOCK_I, 1)
        ok = (k < n_slices) & (row < n_i)
        m_k = tl.load(stats_ptr + row * n_slices + k, mask=ok, other=-float("inf"),
                      cache_modifier=".cg")
        s_k = tl.load(sums + row * n_slices + k, mask=ok, other=0.0, cache_modifier=".cg")
        m_all = tl.max(m_k, axis=1)
        shift_all = tl.where(m_all == -float("inf"), 0.0, m_all)
        s_all = tl.sum(s_k * tl.exp2((m_k - shift_all[:, None]) * LOG2E), axis=1)
    else:
        k = tl.arange(0, SLICES).to(tl.int64)[:, None]
        ok = (k < n_slices) & i_ok
        m_k = tl.load(stats_ptr + k * n_i + i, mask=ok, other=-float("inf"), cache_modifier=".cg")
        s_k = tl.load(sums + k * n_i + i, mask=ok, other=0.0, cache_modifier=".cg")
        m_all = tl.max(m_k, axis=0)
        shift_all = tl.where(m_all == -float("inf"), 0.0, m_all)
        s_all = tl.sum(s_k * tl.exp2((m_k - shift_all[None, :]) * LOG2E), axis=0)
    if RECOMPUTE:
        y = tl.exp2((x - m_all[None, :]) * LOG2E - tl.log2(s_all)[None, :])
    else:
        y = p * (tl.exp2((m - m_all) * LOG2E) / s_all)[None, :]
    tl.store(out_ptr + i * stride_oi + r * stride_or, y.to(out_ptr.dtype.element_ty),
             mask=i_ok & r_ok)


MERGE_VARIANTS = {
    "reference": dict(RECOMPUTE=False, RELEASE=False, ROW_MAJOR_STATS=False),
    "recompute": dict(RECOMPUTE=True, RELEASE=False, ROW_MAJOR_STATS=False),
    "release": dict(RECOMPUTE=False, RELEASE=True, ROW_MAJOR_STATS=False),
    "row-major stats": dict(RECOMPUTE=False, RELEASE=False, ROW_MAJOR_STATS=True),
    "recompute+row-major": dict(RECOMPUTE=True, RELEASE=False, ROW_MAJOR_STATS=True),
    "all three": dict(RECOMPUTE=True, RELEASE=True, ROW_MAJOR_STATS=True),
}


def merge(dtypes=("float16", "float32"), widths=(4096, 8192, 16384, 32768),
          shapes=((256, 32, 4), (512, 16, 4), (512, 32, 8))):
    for dtype in dtypes:
        for width in widths:
            x, calls = _transposed(dtype, width)
            for br, bi, w in shapes:
                for name, flags in MERGE_VARIANTS.items():
                    calls[f"{name} {br}x{bi} {w}w"] = _exchange_call(exchange_merge_kernel, x,
                                                                     br, bi, w, **flags)
            _print_times(f"{x.shape[0]} x {width} {dtype} transposed", x, calls)


def one_block(dtypes=("float16",), widths=(4096, 8192)):
    """Path B's one-block kernel (a whole strip in one program, x read once, no exchange) on
    rows longer than its default limit, through the launcher's knobs."""
    from references import strided_softmax as ss

    for dtype in dtypes:
        for width in widths:
            x, calls = _transposed(dtype, width)
            for bi, w in ((4, 4), (4, 8), (8, 8), (8, 16), (16, 16)):
                knobs = dict(path="B", block_r=width, block_i=bi, num_warps=w)
                try:
                    ss.plan(x, **knobs)
                except ValueError:
                    continue
                calls[f"one block {width}x{bi} {w}w"] = lambda k=knobs: ss.softmax(x, **k)
            _print_times(f"{x.shape[0]} x {width} {dtype} transposed", x, calls)


MODES = {"--lean": lean, "--grouped": lambda: lean(grouped=True), "--packed": packed,
         "--bisect": bisect, "--merge": merge, "--one-block": one_block}


def main() -> int:
    import torch
    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 2
    chosen = [mode for flag, mode in MODES.items() if flag in sys.argv]
    for mode in chosen or [transposed, contiguous_fp32]:
        mode()
    return 0


if __name__ == "__main__":
    sys.exit(main())
