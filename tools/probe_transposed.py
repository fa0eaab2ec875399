"""Where does strided softmax's time go on long transposed rows? A GPU diagnostic.

    python3 tools/probe_transposed.py

For transposed float16 views of 128 MiB (2048 x 32768, 8192 x 8192, 16384 x 4096), times in
graph mode (the benchmark harness's timer):
- the copy ceiling (a contiguous clone) and torch's own transposing copy (`x.contiguous()`);
- a bare transposing copy written like path B's tiles (load a (BLOCK_R, BLOCK_I) tile across
  rows, store it along them), per tile shape: the ceiling of any one-read design;
- a bare strided read (the column sums of the same tiles): the cost of stage 1's reads alone;
- path B's split stage 1 and stage 2 alone, and the whole softmax, for several strip widths.
Prints one line per variant with its time and fraction of the copy ceiling. A diagnostic, not
evidence: benchmarks/results/diagnostics/ keeps its output.

    python3 tools/probe_transposed.py --stages

instead times the default split plan's two kernels one at a time (stage 1 alone, stage 2 alone
on stage 1's statistics) next to the whole call and a bare read over the same grid, in
interleaved rounds.

    python3 tools/probe_transposed.py --bisect

times the current stage 1 against the lane-wise variant with and without the two differences
of the version once tried in the reference (dead rows loaded as 0, tl.exp instead of tl.exp2).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from tools._timing import graph_medians_us  # noqa: E402


@triton.jit
def transposing_copy_kernel(x_ptr, out_ptr, n_i, n_r, stride_xi, stride_xr, stride_or,
                            BLOCK_I: tl.constexpr, BLOCK_R: tl.constexpr):
    """out[i, r] = x[i, r] for a (BLOCK_R, BLOCK_I) tile: read across rows, write along them."""
    i = (tl.program_id(0).to(tl.int64) * BLOCK_I + tl.arange(0, BLOCK_I))[None, :]
    r = (tl.program_id(1).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R))[:, None]
    ok = (i < n_i) & (r < n_r)
    x = tl.load(x_ptr + i * stride_xi + r * stride_xr, mask=ok)
    tl.store(out_ptr + i * stride_or + r, x, mask=ok)


@triton.jit
def strided_sum_kernel(x_ptr, out_ptr, n_i, n_r, stride_xi, stride_xr,
                       BLOCK_I: tl.constexpr, BLOCK_R: tl.constexpr):
    """Column sums of a (n_r, BLOCK_I) strip, BLOCK_R positions at a time: reads only."""
    i = (tl.program_id(0).to(tl.int64) * BLOCK_I + tl.arange(0, BLOCK_I))[None, :]
    r0 = tl.arange(0, BLOCK_R).to(tl.int64)[:, None]
    acc = tl.zeros([BLOCK_I], tl.float32)
    for start in range(0, n_r, BLOCK_R):
        r = start + r0
        x = tl.load(x_ptr + i * stride_xi + r * stride_xr, mask=(i < n_i) & (r < n_r), other=0.0)
        acc += tl.sum(x.to(tl.float32), axis=0)
    cols = tl.program_id(0) * BLOCK_I + tl.arange(0, BLOCK_I)
    tl.store(out_ptr + cols, acc, mask=cols < n_i)


@triton.jit
def split_sum_kernel(x_ptr, out_ptr, n_i, n_r, stride_xi, stride_xr, rows_per_split,
                     BLOCK_I: tl.constexpr, BLOCK_R: tl.constexpr):
    """The reads of split stage 1 (same grid, same chunks) with a plain sum instead of (max, sum)."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK_I + tl.arange(0, BLOCK_I)
    i = rows[None, :]
    r0 = tl.arange(0, BLOCK_R).to(tl.int64)[:, None]
    r_begin = tl.program_id(1).to(tl.int64) * rows_per_split
    acc = tl.zeros([BLOCK_I], tl.float32)
    for start in range(r_begin, r_begin + rows_per_split, BLOCK_R):
        r = start + r0
        x = tl.load(x_ptr + i * stride_xi + r * stride_xr, mask=(i < n_i) & (r < n_r), other=0.0)
        acc += tl.sum(x.to(tl.float32), axis=0)
    tl.store(out_ptr + tl.program_id(1) * n_i + rows, acc, mask=rows < n_i)


@triton.jit
def lanewise_stats_kernel(x_ptr, stats_ptr, n_i, n_r, stride_xi, stride_xr, rows_per_split,
                          BLOCK_I: tl.constexpr, BLOCK_R: tl.constexpr,
                          DEAD_ROWS_ZERO: tl.constexpr = False, NATURAL_EXP: tl.constexpr = False):
    """Stage 1 with a running (max, sum) per tile *element*, merged across the tile once at the
    end, and one exp per element: exp(-|x - m|) is the factor that rescales whichever of the
    old sum and the new term has the smaller exponent.

    DEAD_ROWS_ZERO and NATURAL_EXP switch on the two differences of the version once tried in
    the reference: dead rows loaded as 0 (what _load_x does) and tl.exp instead of tl.exp2."""
    log2e: tl.constexpr = 1.4426950408889634
    rows = tl.program_id(0).to(tl.int64) * BLOCK_I + tl.arange(0, BLOCK_I)
    i = rows[None, :]
    i_ok = i < n_i
    r0 = tl.arange(0, BLOCK_R).to(tl.int64)[:, None]
    r_begin = tl.program_id(1).to(tl.int64) * rows_per_split
    m = tl.full([BLOCK_R, BLOCK_I], -float("inf"), tl.float32)
    s = tl.zeros([BLOCK_R, BLOCK_I], tl.float32)
    for start in range(r_begin, r_begin + rows_per_split, BLOCK_R):
        r = start + r0
        x = tl.load(x_ptr + i * stride_xi + r * stride_xr, mask=i_ok & (r < n_r),
                    other=-float("inf")).to(tl.float32)
        if DEAD_ROWS_ZERO:
            x = tl.where(i_ok, x, 0.0)
        d = tl.where(x == -float("inf"), -float("inf"), x - m)  # no -inf - (-inf)
        if NATURAL_EXP:
            e = tl.exp(-tl.abs(d))
        else:
            e = tl.exp2(-tl.abs(d) * log2e)
        s = tl.where(d > 0, s * e + 1.0, s + e)
        m = tl.maximum(m, x)
    big_m = tl.max(m, axis=0)
    shift = tl.where(big_m == -float("inf"), 0.0, big_m)
    big_s = tl.sum(s * tl.exp2((m - shift[None, :]) * log2e), axis=0)
    slot = tl.program_id(1) * n_i + rows
    tl.store(stats_ptr + slot, big_m, mask=rows < n_i)
    tl.store(stats_ptr + tl.num_programs(1) * n_i + slot, big_s, mask=rows < n_i)


def bisect() -> int:
    """Which difference made the reference's lane-wise stage 1 slower than the stand-alone one?"""
    import torch

    from benchmarks import harness
    from references import strided_softmax as ss

    plan = harness.PLANS["sweep"]
    n_i, n_r = 2048, 32768
    x = torch.randn(n_r, n_i, device="cuda", dtype=torch.float16).t()
    p = ss.plan(x)
    grid = (p.grid, p.splits)
    stats = torch.empty((2, p.splits, p.n_i), dtype=torch.float32, device="cuda")
    args = (x, stats, p.n_i, p.n_r, p.stride_xi, p.stride_xr, p.rows_per_split)
    calls = {"current stage 1": lambda: ss.softmax_across_partial_kernel[grid](
        *args, BLOCK_I=p.block_i, BLOCK_R=p.block_r, num_warps=p.num_warps)}
    for dead in (False, True):
        for natural in (False, True):
            calls[f"lane-wise, dead rows 0: {dead}, tl.exp: {natural}"] = (
                lambda dead=dead, natural=natural: lanewise_stats_kernel[grid](
                    *args, BLOCK_I=p.block_i, BLOCK_R=64, DEAD_ROWS_ZERO=dead,
                    NATURAL_EXP=natural, num_warps=p.num_warps))
    # Every variant must give stage 1's statistics before it is timed.
    fns = list(calls.values())
    fns[0]()
    reference = stats.clone()
    for label, fn in list(calls.items())[1:]:
        fn()
        ok = torch.allclose(stats, reference, rtol=1e-5, atol=0)
        print(f"   {label}: statistics {'match' if ok else 'DIFFER'}", flush=True)
    for label, us in zip(calls, graph_medians_us(fns, plan), strict=True):
        print(f"   {label:<44} {us:7.1f} us", flush=True)
    return 0


def stages() -> int:
    import torch

    from benchmarks import harness
    from references import strided_softmax as ss

    plan = harness.PLANS["sweep"]
    for n_i, n_r in ((2048, 32768), (8192, 8192), (16384, 4096)):
        x = torch.randn(n_r, n_i, device="cuda", dtype=torch.float16).t()
        for knobs in ({}, dict(block_r=128, block_i=64, splits=8, num_warps=4)):
            p = ss.plan(x, **knobs)
            if p.splits == 1:
                continue
            grid = (p.grid, p.splits)
            stats = torch.empty((2, p.splits, p.n_i), dtype=torch.float32, device="cuda")
            out = torch.empty(x.shape, dtype=x.dtype, device="cuda")
            common = dict(BLOCK_I=p.block_i, BLOCK_R=p.block_r, num_warps=p.num_warps)

            def stage1():
                ss.softmax_across_partial_kernel[grid](
                    x, stats, p.n_i, p.n_r, p.stride_xi, p.stride_xr, p.rows_per_split, **common)

            def stage2():
                ss.softmax_across_normalize_kernel[grid](
                    x, out, stats, p.n_i, p.n_r, p.stride_xi, p.stride_xr, p.stride_oi,
                    p.stride_or, p.rows_per_split, SPLITS=triton.next_power_of_2(p.splits),
                    **common)

            def bare_read():
                split_sum_kernel[grid](x, stats, p.n_i, p.n_r, p.stride_xi, p.stride_xr,
                                       p.rows_per_split, **common)

            lanewise = {}
            for chunk in (64, 128):
                def one_exp(chunk=chunk):
                    lanewise_stats_kernel[grid](
                        x, stats, p.n_i, p.n_r, p.stride_xi, p.stride_xr, p.rows_per_split,
                        BLOCK_I=p.block_i, BLOCK_R=chunk, num_warps=p.num_warps)

                if p.rows_per_split % chunk == 0:
                    lanewise[f"stage 1 lanewise, chunk {chunk}"] = one_exp
            # The lane-wise statistics must match stage 1's before they are timed.
            stage1()
            reference = stats.clone()
            for label, fn in lanewise.items():
                fn()
                torch.cuda.synchronize()
                ok = torch.allclose(stats, reference, rtol=1e-5, atol=0)
                print(f"   {label}: statistics {'match' if ok else 'DIFFER'}", flush=True)
            contiguous = torch.empty(n_r, n_i, device="cuda", dtype=torch.float16)
            calls = {"copy (2 transfers)": lambda: contiguous.clone(),
                     "whole softmax": lambda knobs=knobs: ss.softmax(x, **knobs),
                     "stage 1 alone": stage1, "stage 2 alone": stage2,
                     "bare read, stage 1's grid": bare_read, **lanewise}
            stage1()
            torch.cuda.synchronize()
            medians = graph_medians_us(calls.values(), plan)
            print(f"\n{n_i} x {n_r} float16 transposed, plan {p.block_r}x{p.block_i} "
                  f"splits={p.splits} {p.num_warps}w (grid {grid})", flush=True)
            one = medians[0] / 2  # one transfer at the copy's speed
            for label, us in zip(calls, medians, strict=True):
                print(f"   {label:<28} {us:8.1f} us  = {us / one:4.2f} transfers at copy speed",
                      flush=True)
    return 0


def main() -> int:
    if "--stages" in sys.argv:
        return stages()
    if "--bisect" in sys.argv:
        return bisect()
    import torch

    from benchmarks import harness
    from references import strided_softmax as ss

    plan = harness.PLANS["sweep"]

    def time(fn) -> float:
        return graph_medians_us([fn], plan)[0]

    for n_i, n_r in ((2048, 32768), (8192, 8192), (16384, 4096)):
        # x is (n_i, n_r) with stride (1, n_i): softmax over dim=-1 of a transposed tensor.
        base = torch.randn(n_r, n_i, device="cuda", dtype=torch.float16)
        x = base.t()
        nbytes = 2 * x.numel() * x.element_size()
        contiguous = base.clone()
        copy_us = time(lambda: contiguous.clone())
        print(f"\n{n_i} x {n_r} float16 transposed ({nbytes / 2**20:.0f} MiB moved by a copy): "
              f"copy {copy_us:.1f} us", flush=True)

        def line(label, us, transfers=2.0):
            print(f"   {label:<44} {us:8.1f} us  {copy_us * transfers / 2 / us:5.2f} of copy "
                  f"per {transfers:g} transfers", flush=True)

        line("torch x.contiguous()", time(lambda: x.contiguous()))
        expected = x.contiguous()
        for bi, br in ((8, 2048), (16, 1024), (32, 512), (64, 256), (64, 128), (128, 128),
                       (128, 64), (256, 32)):
            for warps in (4, 8):
                out = torch.empty(x.shape, dtype=x.dtype, device="cuda")
                grid = (triton.cdiv(n_i, bi), triton.cdiv(n_r, br))

                def tcopy(out=out, bi=bi, br=br, warps=warps, grid=grid):
                    transposing_copy_kernel[grid](x, out, n_i, n_r, x.stride(0), x.stride(1),
                                                  n_r, BLOCK_I=bi, BLOCK_R=br, num_warps=warps)
                    return out

                assert torch.equal(tcopy(), expected)
                line(f"transposing copy tile {br}x{bi} {warps}w", time(tcopy))
        for bi, br in ((16, 1024), (32, 512), (64, 256), (128, 128)):
            sums = torch.empty(n_i, device="cuda", dtype=torch.float32)
            grid = (triton.cdiv(n_i, bi),)

            def ssum(bi=bi, br=br, grid=grid, sums=sums):
                strided_sum_kernel[grid](x, sums, n_i, n_r, x.stride(0), x.stride(1),
                                         BLOCK_I=bi, BLOCK_R=br, num_warps=4)
                return sums

            line(f"strided read (sums) tile {br}x{bi}", time(ssum), transfers=1.0)

        reference = torch.softmax(x.float(), dim=-1)
        variants = [dict()] + [dict(block_r=br, block_i=bi, splits=sp, num_warps=w)
                               for br, bi in ((512, 32), (256, 64), (128, 128), (128, 64))
                               for sp in (8, 16, 32) for w in (4, 8)]
        for knobs in variants:
            try:
                y = ss.softmax(x, **knobs)
            except ValueError as exc:
                print(f"   softmax {knobs}: refused ({exc})")
                continue
            err = (y.float() - reference).abs().max().item()
            p = ss.plan(x, **knobs)
            label = (f"softmax {p.block_r}x{p.block_i} splits={p.splits} {p.num_warps}w"
                     + (" (default)" if not knobs else ""))
            us = time(lambda knobs=knobs: ss.softmax(x, **knobs))
            print(f"   {label:<44} {us:8.1f} us  {copy_us / us:5.2f} of copy  "
                  f"max|err| {err:.1e}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
