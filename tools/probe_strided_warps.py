"""Warps of the shared-memory exchange on long transposed rows. A diagnostic.

    python3 tools/probe_strided_warps.py

The twentieth session's sweep (`sweep-graph-strided_softmax-*-20261201zzv`) ran the transposed
8192 x 8192 float16 view 1.11x faster with num_warps=4 than with the default's 8 (both the
shared-memory exchange's 512 x 64 slices), and 1.02x at 2048 x 32768. This times, for the
benchmark's transposed views of 2^26 elements at 4096-32768 positions, float16 and bfloat16,
the launcher's default against num_warps = 4 and 8 (the rest of its plan unchanged), next to the
copy of the same bytes, in three separate sets of interleaved graph rounds so that the
run-to-run spread shows next to the difference. Each output is first compared with torch's.

    python3 tools/probe_strided_warps.py --slices

instead compares slice shapes of the shared-memory exchange at the rows the transposed goal
still misses (16384 and 32768 positions; 8192 as a control), all with smem=True and the knobs
given explicitly: (block_r, block_i, num_warps) = the default (512, 64, 4), 2 warps, and the
other shapes that fit 64 KiB of 16-bit values with 4 warps (256 x 64, 256 x 128, 512 x 32,
1024 x 32). The slice shapes were last compared on 2026-11-30 with 8 warps for the long ones
(diagnostics/probe-strided-gluon-tiles-*), before the chunked wait; this comparison's output
is diagnostics/probe-strided-slices-*.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools._timing import time_against_copy_in_sets  # noqa: E402


def _transposed_view(width: int, dtype):
    """The benchmark's transposed view of 2^26 elements: (rows, width), each row a column of a
    contiguous (width, rows) buffer; the buffer (for the copy) and torch's float32 softmax."""
    import torch

    rows = (1 << 26) // width
    buf = torch.randn(width, rows, device="cuda", dtype=dtype)
    x = buf.t()  # (rows, width): each row is a column of buf, stride `rows`
    return rows, buf, x, torch.softmax(x.float(), dim=-1)


SLICES = {"default (512, 64, 4)": None, "512 x 64, 2 warps": (512, 64, 2),
          "256 x 64, 4 warps": (256, 64, 4), "256 x 128, 4 warps": (256, 128, 4),
          "512 x 32, 4 warps": (512, 32, 4), "1024 x 32, 4 warps": (1024, 32, 4)}


def slices_probe() -> int:
    import torch

    from benchmarks import harness
    from references import strided_softmax as ss

    plan = harness.PLANS["sweep"]
    for dtype in (torch.float16, torch.bfloat16):
        for width in (8192, 16384, 32768):
            rows, buf, x, expected = _transposed_view(width, dtype)
            calls = {"copy": lambda buf=buf: buf.clone()}
            for label, knobs in SLICES.items():
                kw = {} if knobs is None else dict(block_r=knobs[0], block_i=knobs[1],
                                                    num_warps=knobs[2], smem=True)
                try:
                    err = (ss.softmax(x, **kw).float() - expected).abs().max().item()
                except ValueError as exc:  # a shape the plan refuses (too many slices, ...)
                    print(f"{width} {str(dtype)[6:]} {label}: {exc}", flush=True)
                    continue
                print(f"{width} {str(dtype)[6:]} {label}: max|err| {err:.1e}", flush=True)
                calls[label] = lambda kw=kw: ss.softmax(x, **kw)
            time_against_copy_in_sets(calls, f"rows={rows} width={width} {str(dtype)[6:]} transposed", plan)
    return 0


def main() -> int:
    if "--slices" in sys.argv:
        return slices_probe()
    import torch

    from benchmarks import harness
    from references import strided_softmax as ss

    plan = harness.PLANS["sweep"]
    for dtype in (torch.float16, torch.bfloat16):
        for width in (4096, 8192, 16384, 32768):
            rows, buf, x, expected = _transposed_view(width, dtype)
            calls = {"copy": lambda: buf.clone(), "default": lambda: ss.softmax(x)}
            for warps in (4, 8):
                calls[f"num_warps={warps}"] = lambda w=warps: ss.softmax(x, num_warps=w)
            for label, warps in (("default", None), ("num_warps=4", 4), ("num_warps=8", 8)):
                err = (calls[label]().float() - expected).abs().max().item()
                p = ss.plan(x, -1, num_warps=warps)
                print(f"{width} {str(dtype)[6:]} {label}: block_r {p.block_r} block_i "
                      f"{p.block_i} num_warps {p.num_warps} exchange {p.exchange} smem {p.smem} "
                      f"max|err| {err:.1e}", flush=True)
            time_against_copy_in_sets(calls, f"rows={rows} width={width} {str(dtype)[6:]} transposed", plan)
    return 0


if __name__ == "__main__":
    sys.exit(main())
