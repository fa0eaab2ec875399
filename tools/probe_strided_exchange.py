"""Path B's exchange against its two-kernel split, and float32 row packing: a GPU diagnostic.

    python3 tools/probe_strided_exchange.py

1. Transposed views of 2^26 elements (float16 and float32; softmax rows 1024 to 32768 long):
   the copy ceiling, the launcher's default, the two-kernel split (exchange=False) and the
   one-kernel exchange at several slice shapes (block_r positions x block_i rows, warps), each
   as a fraction of the copy and checked against torch.softmax in float32.
2. Contiguous float32 rows of 256 and 512: torch.softmax, the default and other rows-per-program
   and warp counts, as a ratio to torch.softmax.
    python3 tools/probe_strided_exchange.py --flags

instead times an experimental exchange whose statistics are their own flags (one 64-bit
(max, sum) word per slice and row, polled until no word is empty: no counter, no separate read
of the statistics), with tickets and with program ids, against the reference's exchange.
Graph timing, every variant of one problem timed in the same rounds. Prints one line per
variant; a diagnostic, not evidence (benchmarks/results/diagnostics/ keeps its output).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from references.strided_softmax import LOG2E, _load_x  # noqa: E402
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
# --flags: the exchange with the statistics as their own flags (an experiment)
# ---------------------------------------------------------------------------------------------
# A slice's (max, sum) pair packed in one 64-bit word, written once: a reader that sees a word
# other than EMPTY sees the whole pair, so no counter, no release/acquire pair and no second
# read of the statistics after the wait (the last poll already holds them). EMPTY's low half
# is the bits of -1.0, which no sum of exponentials can be.
EMPTY = tl.constexpr(0xBF800000)
LOW32 = tl.constexpr(0xFFFFFFFF)


@triton.jit
def exchange_flags_kernel(x_ptr, out_ptr, pairs_ptr, ticket_ptr, n_i, n_r, stride_xi,
                          stride_xr, stride_oi, stride_or, n_slices,
                          BLOCK_I: tl.constexpr, BLOCK_R: tl.constexpr, SLICES: tl.constexpr,
                          TICKETS: tl.constexpr):
    if TICKETS:
        ticket = tl.atomic_add(ticket_ptr, 1)
    else:
        ticket = tl.program_id(0)
    strip = (ticket // n_slices).to(tl.int64)
    slice_id = (ticket % n_slices).to(tl.int64)
    rows = strip * BLOCK_I + tl.arange(0, BLOCK_I)
    i = rows[None, :]
    i_ok = i < n_i
    r = slice_id * BLOCK_R + tl.arange(0, BLOCK_R).to(tl.int64)[:, None]
    r_ok = r < n_r
    x = _load_x(x_ptr, i, r, stride_xi, stride_xr, i_ok, r_ok)
    m = tl.max(x, axis=0)
    shift = tl.where(m == -float("inf"), 0.0, m)
    p = tl.exp2((x - shift[None, :]) * LOG2E)
    s = tl.sum(p, axis=0)
    pair = (m.to(tl.int32, bitcast=True).to(tl.int64) << 32) | \
        (s.to(tl.int32, bitcast=True).to(tl.int64) & LOW32)
    tl.atomic_xchg(pairs_ptr + slice_id * n_i + rows, pair, mask=rows < n_i, sem="relaxed")
    k = tl.arange(0, SLICES).to(tl.int64)[:, None]
    ok = (k < n_slices) & i_ok
    v = tl.load(pairs_ptr + k * n_i + i, mask=ok, other=0, volatile=True)
    while tl.sum(((v & LOW32) == EMPTY).to(tl.int32)) > 0:
        v = tl.load(pairs_ptr + k * n_i + i, mask=ok, other=0, volatile=True)
    m_k = tl.where(ok, (v >> 32).to(tl.int32).to(tl.float32, bitcast=True), -float("inf"))
    s_k = tl.where(ok, (v & LOW32).to(tl.int32).to(tl.float32, bitcast=True), 0.0)
    m_all = tl.max(m_k, axis=0)
    shift_all = tl.where(m_all == -float("inf"), 0.0, m_all)
    s_all = tl.sum(s_k * tl.exp2((m_k - shift_all[None, :]) * LOG2E), axis=0)
    scale = tl.exp2((m - m_all) * LOG2E) / s_all
    tl.store(out_ptr + i * stride_oi + r * stride_or,
             (p * scale[None, :]).to(out_ptr.dtype.element_ty), mask=i_ok & r_ok)


def exchange_flags(x, block_r, block_i, num_warps, tickets=True):
    """softmax(x, dim=-1) of a transposed view through exchange_flags_kernel."""
    import torch
    from references import strided_softmax as ss

    p = ss.plan(x, exchange=True, block_r=block_r, block_i=block_i, num_warps=num_warps)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    pairs = torch.full((p.splits * p.n_i,), EMPTY.value, dtype=torch.int64, device=x.device)
    ticket = torch.zeros(1, dtype=torch.int32, device=x.device)
    exchange_flags_kernel[(p.grid * p.splits,)](
        x, out, pairs, ticket, p.n_i, p.n_r, p.stride_xi, p.stride_xr, p.stride_oi,
        p.stride_or, p.splits, BLOCK_I=p.block_i, BLOCK_R=p.block_r,
        SLICES=triton.next_power_of_2(p.splits), TICKETS=tickets, num_warps=p.num_warps)
    return out


def flags(dtypes=("float16", "float32"), widths=(2048, 4096, 8192, 16384, 32768)):
    import torch
    from benchmarks import harness
    from references import strided_softmax as ss

    plan = harness.PLANS["sweep"]
    for dtype in dtypes:
        for width in widths:
            x = torch.randn(width, ELEMENTS // width, device="cuda",
                            dtype=getattr(torch, dtype)).t()
            buf = x.t().contiguous()
            calls = {"copy": lambda: buf.clone(), "default": lambda: ss.softmax(x)}
            for br, bi, w in ((256, 32, 4), (512, 16, 4)):
                try:
                    ss.plan(x, exchange=True, block_r=br, block_i=bi, num_warps=w)
                except ValueError:
                    continue
                calls[f"counter {br}x{bi} {w}w"] = lambda k=(br, bi, w): ss.softmax(
                    x, exchange=True, block_r=k[0], block_i=k[1], num_warps=k[2])
                for tickets in (True, False):
                    calls[f"flags{'' if tickets else ' pid'} {br}x{bi} {w}w"] = \
                        lambda k=(br, bi, w, tickets): exchange_flags(x, *k)
            for br, bi, w in ((128, 64, 4), (256, 64, 8), (1024, 16, 8)):
                try:
                    ss.plan(x, exchange=True, block_r=br, block_i=bi, num_warps=w)
                except ValueError:
                    continue
                calls[f"flags {br}x{bi} {w}w"] = lambda k=(br, bi, w): exchange_flags(x, *k)
            print(f"\n{x.shape[0]} x {width} {dtype} transposed")
            errs = {k: (_max_err(f(), x) if k != "copy" else 0.0) for k, f in calls.items()}
            times = graph_medians_us(list(calls.values()), plan)
            copy = times[0]
            for (label, _), us in zip(calls.items(), times, strict=True):
                print(f"   {label:32s} {us:8.1f} us   {copy / us:5.2f} of copy   "
                      f"max|err| {errs[label]:.1e}")


def main() -> int:
    import torch
    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 2
    if "--flags" in sys.argv:
        flags()
        return 0
    transposed()
    contiguous_fp32()
    return 0


if __name__ == "__main__":
    sys.exit(main())
