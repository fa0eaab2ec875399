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
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools._timing import graph_medians_us  # noqa: E402

ELEMENTS = 1 << 26
EXCHANGE_SHAPES = ((256, 32, 4), (512, 32, 8), (512, 16, 4), (1024, 16, 8), (256, 64, 8),
                   (128, 64, 4))


def _max_err(out, x):
    import torch
    return (out.float() - torch.softmax(x.float(), dim=-1)).abs().max().item()


def transposed(dtypes=("float16", "float32"), widths=(1024, 2048, 4096, 8192, 16384, 32768)):
    import torch
    from benchmarks import harness
    from references import strided_softmax as ss

    plan = harness.PLANS["sweep"]
    for dtype in dtypes:
        for width in widths:
            x = torch.randn(width, ELEMENTS // width, device="cuda",
                            dtype=getattr(torch, dtype)).t()  # (rows, width), stride (1, rows)
            buf = x.t().contiguous()
            calls = {"copy": lambda: buf.clone(), "default": lambda: ss.softmax(x)}
            calls["split (exchange=False)"] = lambda: ss.softmax(x, exchange=False)
            for br, bi, w in EXCHANGE_SHAPES:
                knobs = dict(exchange=True, block_r=br, block_i=bi, num_warps=w)
                try:
                    ss.plan(x, **knobs)
                except ValueError:
                    continue
                calls[f"exchange {br}x{bi} {w}w"] = lambda k=knobs: ss.softmax(x, **k)
            print(f"\n{x.shape[0]} x {width} {dtype} transposed: default plan {ss.plan(x)}")
            errs = {k: (_max_err(f(), x) if k != "copy" else 0.0) for k, f in calls.items()}
            times = graph_medians_us(list(calls.values()), plan)
            copy = times[0]
            for (label, _), us in zip(calls.items(), times, strict=True):
                print(f"   {label:32s} {us:8.1f} us   {copy / us:5.2f} of copy   "
                      f"max|err| {errs[label]:.1e}")


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
# --variants: other ways to write the exchange (diagnostic kernels, not the reference's)
# ---------------------------------------------------------------------------------------------
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from references.strided_softmax import LOG2E, _load_x  # noqa: E402


@triton.jit
def _publish(x, stats_ptr, counters_ptr, strip, slice_id, rows, n_i, n_slices):
    """Store one slice's (max, sum of exp(x - max)) per row, then count its strip's arrival."""
    m = tl.max(x, axis=0)
    shift = tl.where(m == -float("inf"), 0.0, m)
    s = tl.sum(tl.exp2((x - shift[None, :]) * LOG2E), axis=0)
    slot = slice_id * n_i + rows
    tl.store(stats_ptr + slot, m, mask=rows < n_i)
    tl.store(stats_ptr + n_slices * n_i + slot, s, mask=rows < n_i)
    tl.debug_barrier()
    tl.atomic_add(counters_ptr + 1 + strip, 1, sem="acq_rel")


@triton.jit
def _wait_merge_store(x, out_ptr, stats_ptr, counters_ptr, strip, rows, i, i_ok, r, r_ok,
                      n_i, n_slices, stride_oi, stride_or, BLOCK_I: tl.constexpr,
                      WAIT: tl.constexpr):
    """Wait for every slice of the strip, merge their statistics one slice at a time (the
    merge of workshop 5, on (BLOCK_I,) vectors) and store exp(x - M) / S."""
    if WAIT:
        arrived = tl.atomic_add(counters_ptr + 1 + strip, 0, sem="acquire")
        while arrived < n_slices:
            arrived = tl.atomic_add(counters_ptr + 1 + strip, 0, sem="acquire")
    m_all = tl.full([BLOCK_I], -float("inf"), tl.float32)
    s_all = tl.zeros([BLOCK_I], tl.float32)
    for k in range(0, n_slices):
        m_k = tl.load(stats_ptr + k * n_i + rows, mask=rows < n_i, other=-float("inf"),
                      cache_modifier=".cg")
        s_k = tl.load(stats_ptr + (n_slices + k) * n_i + rows, mask=rows < n_i, other=0.0,
                      cache_modifier=".cg")
        m_new = tl.maximum(m_all, m_k)
        shift = tl.where(m_new == -float("inf"), 0.0, m_new)
        s_all = s_all * tl.exp2((m_all - shift) * LOG2E) + s_k * tl.exp2((m_k - shift) * LOG2E)
        m_all = m_new
    y = tl.exp2((x - m_all[None, :]) * LOG2E - tl.log2(s_all)[None, :])
    tl.store(out_ptr + i * stride_oi + r * stride_or, y.to(out_ptr.dtype.element_ty),
             mask=i_ok & r_ok)


@triton.jit
def exchange_recompute_kernel(x_ptr, out_ptr, stats_ptr, counters_ptr, n_i, n_r, stride_xi,
                              stride_xr, stride_oi, stride_or, n_slices,
                              BLOCK_I: tl.constexpr, BLOCK_R: tl.constexpr,
                              WAIT: tl.constexpr):
    """The exchange keeping x (not exp(x - m)) and exponentiating twice; merge in a loop."""
    ticket = tl.atomic_add(counters_ptr, 1)
    strip = (ticket // n_slices).to(tl.int64)
    slice_id = (ticket % n_slices).to(tl.int64)
    rows = strip * BLOCK_I + tl.arange(0, BLOCK_I)
    i = rows[None, :]
    i_ok = i < n_i
    r = slice_id * BLOCK_R + tl.arange(0, BLOCK_R).to(tl.int64)[:, None]
    r_ok = r < n_r
    x = tl.load(x_ptr + i * stride_xi + r * stride_xr, mask=i_ok & r_ok, other=-float("inf"))
    _publish(x.to(tl.float32), stats_ptr, counters_ptr, strip, slice_id, rows, n_i, n_slices)
    _wait_merge_store(x.to(tl.float32), out_ptr, stats_ptr, counters_ptr, strip, rows, i,
                      i_ok, r, r_ok, n_i, n_slices, stride_oi, stride_or, BLOCK_I, WAIT)


@triton.jit
def exchange_persistent_kernel(x_ptr, out_ptr, stats_ptr, counters_ptr, n_i, n_r, stride_xi,
                               stride_xr, stride_oi, stride_or, n_slices, n_items,
                               NUM_PROGRAMS: tl.constexpr, BLOCK_I: tl.constexpr,
                               BLOCK_R: tl.constexpr):
    """Persistent and software-pipelined: program p takes items p, p + P, p + 2P, ... (item =
    strip * n_slices + slice); it loads item t + P before it waits on item t's strip. Needs all
    P programs resident at once and P >= n_slices (a strip's slices on distinct programs)."""
    item = tl.program_id(0)
    strip = (item // n_slices).to(tl.int64)
    slice_id = (item % n_slices).to(tl.int64)
    rows = strip * BLOCK_I + tl.arange(0, BLOCK_I)
    i = rows[None, :]
    i_ok = (i < n_i) & (item < n_items)
    r = slice_id * BLOCK_R + tl.arange(0, BLOCK_R).to(tl.int64)[:, None]
    r_ok = r < n_r
    x = tl.load(x_ptr + i * stride_xi + r * stride_xr, mask=i_ok & r_ok, other=-float("inf"))
    if item < n_items:
        _publish(x.to(tl.float32), stats_ptr, counters_ptr, strip, slice_id, rows, n_i,
                 n_slices)
    while item < n_items:
        nxt = item + NUM_PROGRAMS
        strip_n = (nxt // n_slices).to(tl.int64)
        slice_n = (nxt % n_slices).to(tl.int64)
        rows_n = strip_n * BLOCK_I + tl.arange(0, BLOCK_I)
        i_n = rows_n[None, :]
        i_ok_n = (i_n < n_i) & (nxt < n_items)
        r_n = slice_n * BLOCK_R + tl.arange(0, BLOCK_R).to(tl.int64)[:, None]
        r_ok_n = r_n < n_r
        x_n = tl.load(x_ptr + i_n * stride_xi + r_n * stride_xr, mask=i_ok_n & r_ok_n,
                      other=-float("inf"))  # in flight while this program waits below
        _wait_merge_store(x.to(tl.float32), out_ptr, stats_ptr, counters_ptr, strip, rows, i,
                          i_ok, r, r_ok, n_i, n_slices, stride_oi, stride_or, BLOCK_I, True)
        if nxt < n_items:
            _publish(x_n.to(tl.float32), stats_ptr, counters_ptr, strip_n, slice_n, rows_n,
                     n_i, n_slices)
        x = x_n
        item = nxt
        strip = strip_n
        rows = rows_n
        i = i_n
        i_ok = i_ok_n
        r = r_n
        r_ok = r_ok_n


def _variant_calls(x, br, bi, w, sms):
    """Zero-argument calls of the diagnostic kernels on transposed x with (br x bi) slices."""
    import torch
    from references import strided_softmax as ss

    p = ss.plan(x, exchange=True, block_r=br, block_i=bi, num_warps=w)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    stats = torch.empty((2, p.splits, p.n_i), dtype=torch.float32, device=x.device)
    counters = torch.zeros(1 + p.grid, dtype=torch.int32, device=x.device)
    args = (x, out, stats, counters, p.n_i, p.n_r, p.stride_xi, p.stride_xr, p.stride_oi,
            p.stride_or, p.splits)
    n_items = p.grid * p.splits

    def recompute(wait=True):
        counters.zero_()
        exchange_recompute_kernel[(n_items,)](*args, BLOCK_I=p.block_i, BLOCK_R=p.block_r,
                                              WAIT=wait, num_warps=w)
        return out

    calls = {f"recompute {br}x{bi} {w}w": recompute,
             f"recompute, no wait (wrong) {br}x{bi} {w}w": lambda: recompute(False)}
    def persistent(programs):
        programs = min(programs, n_items)
        counters.zero_()
        return exchange_persistent_kernel[(programs,)](
            *args, n_items, NUM_PROGRAMS=programs, BLOCK_I=p.block_i, BLOCK_R=p.block_r,
            num_warps=w)

    if sms >= p.splits:
        compiled = persistent(sms)
        calls[f"persistent 1/SM {br}x{bi} {w}w"] = lambda: (persistent(sms), out)[1]
        # Two programs per SM only where two surely fit (else the wait could hang).
        if (compiled.n_regs * 32 * w * 2 <= 65536 and compiled.metadata.shared * 2 <= 220000):
            calls[f"persistent 2/SM {br}x{bi} {w}w"] = lambda: (persistent(2 * sms), out)[1]
    return calls


VARIANT_SHAPES = ((256, 32, 4), (512, 32, 8), (512, 16, 4), (256, 64, 8), (1024, 32, 8))


def variants(dtypes=("float16", "float32"), widths=(4096, 8192, 16384, 32768)):
    import torch
    from benchmarks import harness
    from references import strided_softmax as ss
    from references._gpu import sm_count

    plan = harness.PLANS["sweep"]
    sms = sm_count(0)
    for dtype in dtypes:
        for width in widths:
            x = torch.randn(width, ELEMENTS // width, device="cuda",
                            dtype=getattr(torch, dtype)).t()
            buf = x.t().contiguous()
            calls = {"copy": lambda: buf.clone(), "default": lambda: ss.softmax(x),
                     "exchange 256x32 4w": lambda: ss.softmax(x, exchange=True, block_r=256,
                                                              block_i=32, num_warps=4)}
            for br, bi, w in VARIANT_SHAPES:
                try:
                    calls.update(_variant_calls(x, br, bi, w, sms))
                except ValueError:
                    continue
            print(f"\n{x.shape[0]} x {width} {dtype} transposed", flush=True)
            errs = {k: (_max_err(f(), x) if k != "copy" else 0.0) for k, f in calls.items()}
            times = graph_medians_us(list(calls.values()), plan)
            copy = times[0]
            for (label, _), us in zip(calls.items(), times, strict=True):
                print(f"   {label:40s} {us:8.1f} us   {copy / us:5.2f} of copy   "
                      f"max|err| {errs[label]:.1e}", flush=True)


def main() -> int:
    import torch
    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 2
    if "--variants" in sys.argv:
        variants()
        return 0
    transposed()
    contiguous_fp32()
    return 0


if __name__ == "__main__":
    sys.exit(main())
