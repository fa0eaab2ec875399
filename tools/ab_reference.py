"""A/B of a reference change on a GPU: the working tree's references against an older copy.

    mkdir -p build/ab_base && git archive HEAD references | tar -x -C build/ab_base   # "before"
    python3 tools/ab_reference.py WORKSHOP build/ab_base/references [--events] [--only K=V ...]

Every problem of the workshop's benchmark (its `problems`, full scale), with the old copy's
`ours` added as a provider named "before": gated against the float64 reference like every
provider, then timed in the same rounds as ours and the baselines (graph timing by default,
`--events` for CUDA events with an L2 flush), so clock drift hits both alike. `--only
width=4096 layout=transposed` keeps the problems whose parameters match. Prints one line per
problem with ours / before (above 1: the change is faster). Without a GPU it only gates the
benchmark's dry-scale problems under the interpreter (a test of this script). A diagnostic, not
evidence: benchmarks/results/diagnostics/ keeps its output.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    if len(args) < 2:
        print(__doc__)
        return 2
    from checks import device as devices
    from checks import loader

    on_gpu = devices.select() == "cuda"  # before any kernel module is imported
    import torch

    from benchmarks import harness

    workshop, before_folder, filters = args[0], args[1], args[2:]
    mode = "events" if "--events" in argv else "graph"
    device, scale = "cuda", "full"
    if not on_gpu:
        device, scale, mode = "cpu", "dry", None
    wanted = dict(f.split("=", 1) for f in filters)
    bench = importlib.import_module(f"benchmarks.{workshop}")
    ours = loader.load(workshop, "references")
    before = loader.load(workshop, loader.resolve(before_folder))
    plan = harness.PLANS["full"]
    flush = torch.empty(harness.L2_FLUSH_BYTES // 4, device="cuda") if device == "cuda" else None
    pairs = zip(bench.problems(ours, scale), bench.problems(before, scale), strict=True)
    for problem, old in pairs:
        if any(str(problem.params.get(k)) != v for k, v in wanted.items()):
            continue
        old_ours = next(p for p in old.providers if p.role == harness.OURS)
        problem.providers.insert(1, dataclasses.replace(old_ours, name="before",
                                                        role=harness.BASELINE))
        records = harness.run_problem(problem, device=device, mode=mode, plan=plan, flush=flush)
        medians = {}
        for r in records:
            if r.get("status") == "ok" and "samples_ms" in r:
                medians[r["provider"]] = harness.summarize(r["samples_ms"])["median"] * 1e3
            elif r.get("status") != "ok":
                print(f"  {r['provider']}: {r.get('status')}: {r.get('message', '')[:200]}")
        cells = "  ".join(f"{name} {us:8.1f} us" for name, us in medians.items())
        ratio = medians["before"] / medians["ours"] if {"ours", "before"} <= medians.keys() \
            else float("nan")
        print(f"{problem.label:60s} ours/before {ratio:5.3f}x  {cells}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
