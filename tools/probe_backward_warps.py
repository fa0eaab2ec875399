"""Warps of softmax backward's loop path (rows wider than 16384). A diagnostic.

    python3 tools/probe_backward_warps.py

The twentieth session's sweep (`sweep-graph-strided_softmax-*-20261201zzv`) ran 2048 x 32768
float16 1.11x faster with num_warps=16 than with the default's 8 (4096-column steps, one row
per program), at either 4096 or 8192 columns per step; at 16384 x 4096 (one pass) 16 warps
were within 1%. This times, for rows of 32768 and 65536 (the loop path) and 16384 (the widest
one-pass rows, a control), float16, bfloat16 and float32, 2^26 elements each, the launcher's
default against num_warps = 4, 8 and 16 at 4096 columns per step and 16 warps at 8192, next to
a copy of one tensor and torch._softmax_backward_data, in three separate sets of interleaved
graph rounds so that the run-to-run spread shows next to the difference. Each output is first
compared with torch's.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools._timing import time_against_copy_in_sets  # noqa: E402

VARIANTS = {"default": {}, "4 warps": dict(num_warps=4), "8 warps": dict(num_warps=8),
            "16 warps": dict(num_warps=16), "16 warps, 8192 columns": dict(num_warps=16,
                                                                        block_n=8192)}


def main() -> int:
    import torch

    from benchmarks import harness
    from references import softmax_backward as sb

    plan = harness.PLANS["sweep"]
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        for width in (16384, 32768, 65536):
            rows = (1 << 26) // width
            y = torch.softmax(torch.randn(rows, width, device="cuda", dtype=dtype) * 2, dim=-1)
            dy = torch.randn(rows, width, device="cuda", dtype=dtype)
            expected = torch._softmax_backward_data(dy, y, -1, dtype).float()
            calls = {"copy (2 tensors; backward moves 3)": lambda: y.clone(),
                     "torch._softmax_backward_data":
                         lambda: torch._softmax_backward_data(dy, y, -1, dtype)}
            for label, knobs in VARIANTS.items():
                got = sb.softmax_backward(y, dy, -1, **knobs).float()
                err = (got - expected).abs().max().item()
                bm, bn, warps = sb._pick_tiles(rows, width, y.stride(), knobs.get("block_m"),
                                               knobs.get("block_n"), knobs.get("num_warps"))
                print(f"{width} {str(dtype)[6:]} {label}: BLOCK_M {bm} BLOCK_N {bn} "
                      f"num_warps {warps} max|diff| vs torch {err:.1e}", flush=True)
                calls[label] = lambda knobs=knobs: sb.softmax_backward(y, dy, -1, **knobs)
            time_against_copy_in_sets(calls, f"rows={rows} width={width} {str(dtype)[6:]}",
                                      plan, bytes_ratio=1.5)  # 3 tensors against the copy's 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
