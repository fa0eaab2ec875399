"""A/B of split softmax's early launch (programmatic dependent launch) on a GPU: a diagnostic.

    python3 tools/ab_early_launch.py

For a few shapes, times `split_softmax` with `EARLY_LAUNCH` off and on (graph and events timing,
the benchmark harness's timers and plan) next to torch.softmax, after checking the output against
a float64 softmax. Prints one line per variant; benchmarks/results/diagnostics/ keeps its output.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    import torch

    from benchmarks import harness
    from references import split_softmax

    plan = harness.PLANS["full"]
    flush = torch.empty(harness.L2_FLUSH_BYTES // 4, device="cuda")
    shapes = ((8, 131072, torch.float16), (8, 131072, torch.float32), (64, 131072, torch.float16),
              (1024, 32768, torch.float16), (1024, 131072, torch.float16))
    for rows, width, dtype in shapes:
        x = torch.randn(rows, width, device="cuda", dtype=dtype)
        expected = torch.softmax(x.double(), -1)
        for early in (False, True):
            split_softmax.EARLY_LAUNCH = early
            err = (split_softmax.split_softmax(x).double() - expected).abs().max().item()
            graph = harness.time_graph(lambda: split_softmax.split_softmax(x), plan)
            events = harness.time_events(lambda: split_softmax.split_softmax(x), plan, flush)
            print(f"{rows}x{width} {dtype} early={early}: graph "
                  f"{harness.summarize(graph['samples_ms'])['median'] * 1e3:.2f} us, events "
                  f"{harness.summarize(events['samples_ms'])['median'] * 1e3:.2f} us, "
                  f"max err {err:.2e}", flush=True)
        split_softmax.EARLY_LAUNCH = True
        graph = harness.time_graph(lambda: torch.softmax(x, -1), plan)
        events = harness.time_events(lambda: torch.softmax(x, -1), plan, flush)
        print(f"   torch.softmax graph {harness.summarize(graph['samples_ms'])['median'] * 1e3:.2f}"
              f" us events {harness.summarize(events['samples_ms'])['median'] * 1e3:.2f} us",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
