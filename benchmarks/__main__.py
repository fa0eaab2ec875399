"""python3 -m benchmarks run | report | bugzoo | merge-zoo | badcalls

  run [ids] --mode events|graph [--quick | --sweep] [--out FILE] [--only TEXT]
      time every variant of the named workshops (default: every workshop with a benchmark
      module and an implementation) on a CUDA GPU, each gated for correctness first; writes a
      gzipped JSON results file (default under benchmarks/results/).
  run [ids] --dry-run [--sweep]
      the correctness gate of every variant on tiny shapes under Triton's CPU interpreter
      (no timing, nothing written unless --out): what CI runs without a GPU.
  report [--no-figures]
      tables, goals and figures from the saved results; rewrites the generated sections of
      validation_report.md and the figures in book/figures/ (needs matplotlib for figures).
  bugzoo [ids] [--device ...] --out FILE     planted bugs caught, as evidence for the report
      (BUGZOO_BUGS="name,..." or BUGZOO_SHARD=i/n run part of the bugs, e.g. one command each)
  merge-zoo OUT PART...                      join bug-zoo files of one commit, seed and device
  badcalls [ids] [--device ...] --out FILE   bad calls each check tries, as evidence

Run from the repository root; nothing needs installing beyond torch and Triton.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

from checks import catalog, provenance

REPO_ROOT = Path(__file__).resolve().parent.parent


def benchmark_workshops() -> list[str]:
    """Workshop ids, in book order, that have a benchmark module (benchmarks/<id>.py)."""
    return [w for w in catalog.WORKSHOP_IDS if (REPO_ROOT / "benchmarks" / f"{w}.py").is_file()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m benchmarks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    p_run = sub.add_parser("run", help="gate and time benchmark variants")
    p_run.add_argument("workshops", nargs="*", metavar="id")
    p_run.add_argument("--mode", choices=("events", "graph"), default="events",
                       help="events: CUDA events, L2 flushed before each sample; graph: CUDA "
                            "graph replays (separate experiments, separate files)")
    size = p_run.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="a reduced shape set (first pass)")
    size.add_argument("--sweep", action="store_true",
                      help="every CONFIGS entry of the implementation on representative shapes")
    p_run.add_argument("--dry-run", action="store_true",
                       help="gate every variant on tiny shapes under the CPU interpreter; no timing")
    p_run.add_argument("--impl", default="references",
                       help="references (default), kernels, or a path (as in python -m checks)")
    p_run.add_argument("--only", metavar="TEXT",
                       help="only problems whose 'experiment label' contains TEXT")
    p_run.add_argument("--out", metavar="FILE", help="results file (gzipped JSON)")

    p_report = sub.add_parser("report", help="tables, figures and validation_report.md")
    p_report.add_argument("--no-figures", action="store_true", help="skip book/figures/")
    p_report.add_argument("--results", default=None, help="results folder (default: "
                          "benchmarks/results)")

    for name, text in (("bugzoo", "run each planted bug's named check; save caught/planted"),
                       ("badcalls", "count the bad calls each check tries; save the counts")):
        p = sub.add_parser(name, help=text)
        p.add_argument("workshops", nargs="*", metavar="id")
        p.add_argument("--device", default="auto", choices=("auto", "cuda", "interpreter"))
        p.add_argument("--out", metavar="FILE", required=True, help="JSON file to write")

    p_merge = sub.add_parser("merge-zoo", help="join bug-zoo files of disjoint bugs run at one "
                             "commit with one seed (e.g. a workshop's bugs over two commands)")
    p_merge.add_argument("out", metavar="OUT")
    p_merge.add_argument("parts", nargs="+", metavar="PART")

    args = parser.parse_args(argv)
    if args.command == "merge-zoo":
        from benchmarks import evidence

        return evidence.merge_zoo_cli(args.out, args.parts)
    ids = getattr(args, "workshops", None) or []
    for w in ids:
        if w not in catalog.WORKSHOP_IDS:
            parser.error(f"unknown workshop {w!r}; known: {', '.join(catalog.WORKSHOP_IDS)}")
    if args.command != "report" and provenance.commit_env_error():
        parser.error(provenance.commit_env_error())  # it would be these files' provenance
    if args.command == "run":
        return run(args)
    if args.command == "report":
        from benchmarks import report

        return report.main(results_dir=args.results, figures=not args.no_figures)
    from benchmarks import evidence

    return evidence.main(args.command, ids, args.device, args.out)


def run(args) -> int:
    from benchmarks import harness

    scale = "sweep" if args.sweep else "quick" if args.quick else "full"
    shapes = "dry" if args.dry_run else scale  # --dry-run: tiny shapes on the CPU
    try:
        import torch
    except ImportError:
        print("error: torch is not installed; the benchmarks need torch and Triton",
              file=sys.stderr)
        return 2
    from checks import device as devices
    from checks import loader, provenance

    if args.dry_run:
        device = devices.select("interpreter")  # before any kernel module is imported
    else:
        if not torch.cuda.is_available():
            print("error: no CUDA GPU is visible to torch here, so there is nothing to time.\n"
                  "  On a CPU-only machine run `python3 -m benchmarks run --dry-run` (the "
                  "correctness gate of every variant under Triton's interpreter), or `python3 -m "
                  "benchmarks report` to rebuild the tables from saved results.", file=sys.stderr)
            return 2
        device = devices.select("cuda")
    torch_device = "cuda" if device == "cuda" else "cpu"

    try:
        implementation = loader.resolve(args.impl)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    workshops = args.workshops or benchmark_workshops()
    problems, sources, skipped = [], {}, {}
    for workshop in workshops:
        if workshop not in benchmark_workshops():
            skipped[workshop] = "no benchmark module (benchmarks/<id>.py)"
            continue
        try:
            impl = loader.load(workshop, implementation)
        except Exception as exc:  # noqa: BLE001 - a missing or broken module skips the workshop
            skipped[workshop] = f"cannot import the implementation: {type(exc).__name__}: {exc}"
            continue
        module = importlib.import_module(f"benchmarks.{workshop}")
        try:
            found = module.sweep_problems(impl, shapes) if args.sweep else \
                module.problems(impl, shapes)
        except Exception as exc:  # noqa: BLE001 - e.g. the module's API changed: say so, go on
            skipped[workshop] = f"cannot declare its problems: {type(exc).__name__}: {exc}"
            continue
        if args.only:
            found = [p for p in found if args.only in f"{p.experiment} {p.label}"]
        if not found:
            skipped[workshop] = "no problems (no CONFIGS to sweep?)" if args.sweep else "no problems"
            continue
        problems += found
        files = [p for p in loader.source_files(workshop, implementation) if p.is_file()]
        files += [REPO_ROOT / "benchmarks" / name for name in
                  ("harness.py", "_common.py", f"{workshop}.py")]
        sources[workshop] = files
    for workshop, why in skipped.items():
        harness.log(f"skipping {workshop}: {why}")
    if not problems:
        harness.log("nothing to run")
        return 2

    all_files = list(dict.fromkeys(p for files in sources.values() for p in files))
    header = harness.fix_git_commit(provenance.header(device, implementation.label, all_files))
    mode = None if args.dry_run else args.mode
    plan = None if args.dry_run else harness.PLANS[scale]
    header.update(kind="benchmark", mode=mode or "dry-run", scale=scale,
                  workshops=list(sources), skipped=skipped,
                  command="python3 -m benchmarks " + " ".join(sys.argv[1:]),
                  workshop_sources={w: [provenance.display(p) for p in files]
                                    for w, files in sources.items()},
                  plan=None if plan is None else vars(plan))
    flush = None
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        header.update(gpu_memory_bytes=props.total_memory,
                      l2_cache_bytes=getattr(props, "L2_cache_size", None),
                      capability=list(torch.cuda.get_device_capability(0)))
        flush = torch.empty(harness.L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")
        harness.log(f"measuring the copy ceiling ({mode}) ...")
        try:
            header["ceiling"] = harness.measure_ceiling(mode, plan, flush)
            harness.log(f"copy ceiling: {header['ceiling']['ceiling_tb_s']:.3f} TB/s "
                        f"({header['ceiling']['ceiling_from']})")
        except Exception as exc:  # noqa: BLE001 - ratios to the ceiling will be missing
            header["ceiling"] = {"error": f"{type(exc).__name__}: {exc}"}
            harness.log(f"copy ceiling not measured: {exc}")

    total = sum(len(p.providers) for p in problems)
    harness.log(f"{len(problems)} problems, {total} variants, {shapes} shapes, "
                f"{'gate only (dry run)' if mode is None else 'mode ' + mode}")
    started = time.perf_counter()
    records: list[dict] = []
    counter = [0]

    def report(record):
        counter[0] += 1
        harness.log(harness.progress_line(counter[0], total, record, started))

    # Save as we go (at most every 20 s): a run killed by a time limit keeps what it measured.
    out_path = Path(args.out) if args.out else None if args.dry_run else harness.default_path(header)
    header["complete"] = False
    last_save = time.perf_counter()
    try:
        for problem in problems:
            records += harness.run_problem(problem, device=torch_device, mode=mode, plan=plan,
                                           flush=flush, report=report)
            if out_path and time.perf_counter() - last_save > 20:
                header["elapsed_s"] = round(time.perf_counter() - started, 1)
                harness.save(out_path, header, records)
                last_save = time.perf_counter()
    except KeyboardInterrupt:
        harness.log("interrupted: saving what was measured")
    else:
        header["complete"] = True
    header["elapsed_s"] = round(time.perf_counter() - started, 1)

    counts: dict[str, int] = {}
    for r in records:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    # The ratios to copy use the report's ceiling, the faster of the run's two copies (files
    # saved before the sixteenth session recorded the 4 GiB copy as `ceiling_tb_s`, which in
    # graph mode runs at about 2.8 TB/s on the H200 against 4.2 for the 256 MiB one).
    from benchmarks.report import ceiling_of

    print(harness.summary_table(records, ceiling_of(header)[0]))
    print("\n" + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) +
          f" in {header['elapsed_s']:.0f} s")
    if out_path:
        path = harness.save(out_path, header, records)
        print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB)")
    if not header["complete"]:
        return 130
    if args.dry_run:  # what CI relies on: every variant gates, every workshop loads
        bad = [r for r in records if r["status"] in ("failed", "error")] if not args.sweep else []
        broken = [w for w, why in skipped.items() if why.startswith("cannot")]
        if bad or broken:
            print(f"{len(bad)} variant(s) failed the gate or raised; workshops that could not "
                  f"be loaded: {broken or 'none'}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
