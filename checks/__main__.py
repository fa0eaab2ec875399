"""python -m checks list | run [ids] [--impl ...] [--device ...] [--json FILE] | merge OUT PART...

`list` needs nothing but the Python standard library. `run --shard I/N --seed S` runs one of N
shares of a run; `merge` joins the N shares' JSON files into the file the whole run would write
(tools/gpu_validation.sh does both when CHECK_SHARDS is set).
"""

from __future__ import annotations

import argparse
import sys

from checks import catalog, provenance


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m checks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    p_list = sub.add_parser("list", help="list workshops and their checks (stdlib only)")
    p_list.add_argument("workshops", nargs="*", metavar="id")
    p_list.add_argument("--device", default="interpreter", choices=("cuda", "interpreter"),
                        help="which case table to count (interpreter runs use smaller sizes)")

    p_run = sub.add_parser("run", help="run checks and print a table")
    p_run.add_argument("workshops", nargs="*", metavar="id", help="workshop ids (default: all)")
    p_run.add_argument("--impl", default="kernels",
                       help="kernels (your starters), references, or a path to a .py file/folder")
    p_run.add_argument("--device", default="auto", choices=("auto", "cuda", "interpreter"))
    p_run.add_argument("--json", metavar="FILE", help="write every result as JSON")
    p_run.add_argument("--seed", type=int, help="random seed (default: fresh, printed)")
    p_run.add_argument("--timeout", type=float, help="seconds per check and case")
    p_run.add_argument("--only", metavar="TEXT", help="only checks whose id contains TEXT")
    p_run.add_argument("--stop-at-hint", metavar="TEXT", help="stop at the first FAIL whose hint "
                       "contains TEXT (the bug zoo: one such FAIL is the answer)")
    p_run.add_argument("-v", "--verbose", action="store_true",
                       help="one row per case, with every detail (by default a check's PASS "
                       "rows fold into one, and its FAILs with the same hint are listed on one "
                       "line under the first)")
    p_run.add_argument("--shard", metavar="I/N", help="run every N-th (check, case) from the I-th "
                       "on (0 <= I < N); give all N shards the same --seed, then `merge`")

    p_merge = sub.add_parser("merge", help="join the JSON files of a run's shards into one")
    p_merge.add_argument("out", metavar="OUT")
    p_merge.add_argument("parts", nargs="+", metavar="PART")

    args = parser.parse_args(argv)
    if args.command == "merge":
        from checks import report

        try:
            merged = report.merge_shards(args.parts, args.out)
        except (OSError, ValueError, KeyError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"merged {len(args.parts)} shards, {len(merged['results'])} results -> {args.out}")
        return 0
    shard = None
    if args.command == "run" and args.shard:
        try:
            i, n = (int(v) for v in args.shard.split("/"))
        except ValueError:
            parser.error(f"--shard wants I/N, like 0/3; got {args.shard!r}")
        if not 0 <= i < n:
            parser.error(f"--shard I/N needs 0 <= I < N; got {args.shard!r}")
        if args.seed is None:
            parser.error("--shard needs --seed: every shard must draw the same inputs")
        shard = (i, n)
    args.shard_pair = shard
    for w in args.workshops:
        if w not in catalog.WORKSHOP_IDS:
            parser.error(f"unknown workshop {w!r}; known: {', '.join(catalog.WORKSHOP_IDS)}")
    if args.command == "run" and provenance.commit_env_error():
        parser.error(provenance.commit_env_error())
    if args.command == "list":
        return _list(args.workshops or list(catalog.WORKSHOP_IDS), args.device)
    return _run(args)


def _list(workshops: list[str], device: str) -> int:
    from checks.core import checks_for

    total = 0
    for workshop in workshops:
        w = catalog.get(workshop)
        print(f"{w.id}  [{w.level}]  {w.title}  ({w.notebook})")
        for check in checks_for(workshop):
            n = len(check.cases_for("cpu" if check.tier == "cpu" else device))
            total += n
            print(f"  {check.tier:<6} {check.id:<34} {n:>3} case(s)  {check.doc}")
    print(f"{total} check case(s)")
    return 0


def _run(args) -> int:
    from checks import report, runner
    from checks.device import DeviceError

    progress = _Progress(sys.stderr)
    if args.json:
        # A run stopped from outside (`timeout`, a cluster's time limit) still saves what it
        # has, marked incomplete, instead of losing every result.
        import signal

        def save_and_exit(signum, frame):
            progress.clear()
            if runner.current is not None:
                runner.current.header["incomplete"] = True
                report.write_json(runner.current, args.json)
                print(f"stopped by signal {signum}: wrote {len(runner.current.results)} results "
                      f"to {args.json} (incomplete)", file=sys.stderr)
            sys.exit(124)

        signal.signal(signal.SIGTERM, save_and_exit)

    try:
        the_run = runner.run(args.workshops, impl=args.impl, device=args.device, seed=args.seed,
                             timeout=args.timeout, only=args.only, progress=progress,
                             shard=args.shard_pair, stop_at_hint=args.stop_at_hint)
    except (DeviceError, ValueError) as exc:
        progress.clear()
        print(f"error: {exc}", file=sys.stderr)
        return 2
    progress.clear()
    print(report.text_table(the_run, verbose=args.verbose), flush=True)
    if args.json:
        report.write_json(the_run, args.json)
        print(f"wrote {args.json}")
    return 1 if the_run.failed else 0


class _Progress:
    """A line per case while a run goes on. On a terminal: one line, rewritten in place (and
    cleared before the table), since the table says it all again. Anywhere else (a log, CI, a
    pipe): one line per case, as the GPU validation logs want, with stdout flushed first so
    that the two streams, piped together, keep their order."""

    def __init__(self, stream):
        self.stream = stream
        self.live = stream.isatty()
        self.count = 0
        self.shown = False

    def __call__(self, result) -> None:
        self.count += 1
        line = f"  {result.outcome:<11} {result.workshop}/{result.check}  {result.case_label}"
        sys.stdout.flush()  # whatever the checked code printed comes first
        if not self.live:
            print(line, file=self.stream, flush=True)
            return
        import shutil

        width = shutil.get_terminal_size().columns - 1
        line = f"[{self.count}] {line.strip()}"[:max(width, 10)]
        self.stream.write("\r\x1b[K" + line)  # carriage return, clear to the end of the line
        self.stream.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.shown = False
        self.stream.flush()


if __name__ == "__main__":
    sys.exit(main())
