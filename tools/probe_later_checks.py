"""What every check of a workshop says about planted bugs, not only the check that names them.

    python3 tools/probe_later_checks.py WORKSHOP BUG[,BUG...] [--device interpreter|cuda]

The bug zoo (tests/bugs, `python3 -m benchmarks bugzoo`) stops at the first FAIL that carries
the bug's hint; a learner sees every check's verdict. This plants each named bug (tests.bugs.plant)
in a temporary folder, runs the whole workshop against it (`python3 -m checks run --impl`, one
seed for all) and prints, per failing check, how many cases gave each hint (its first 110
characters). A diagnostic, not evidence: the fifth learner audit's later-check leftovers were
judged with it.
"""

from __future__ import annotations

import argparse
import collections
import importlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.bugs import plant  # noqa: E402 - after the path set-up


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workshop")
    parser.add_argument("bugs", help="comma-separated bug names from tests/bugs/WORKSHOP.py")
    parser.add_argument("--device", default="interpreter", choices=("interpreter", "cuda"))
    parser.add_argument("--seed", default="12345")
    args = parser.parse_args()
    wanted = args.bugs.split(",")
    bugs = {bug.name: bug for bug in importlib.import_module(f"tests.bugs.{args.workshop}").BUGS}
    unknown = [name for name in wanted if name not in bugs]
    if unknown:
        parser.error(f"no such bug in tests/bugs/{args.workshop}.py: {unknown}")
    for name in wanted:
        bug = bugs[name]
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            plant(args.workshop, bug, folder)
            out = folder / "results.json"
            subprocess.run([sys.executable, "-m", "checks", "run", args.workshop, "--impl",
                            str(folder), "--device", args.device, "--json", str(out),
                            "--seed", args.seed], cwd=ROOT, capture_output=True, check=False)
            results = json.loads(out.read_text())["results"]
        print(f"=== {name} (the zoo's check: {bug.check}, hint {bug.hint!r})")
        hints: dict[str, collections.Counter] = {}
        for result in results:
            if result["outcome"] == "FAIL":
                hints.setdefault(result["check"], collections.Counter())[
                    (result.get("hint") or "")[:110]] += 1
        for check, counter in hints.items():
            for hint, cases in counter.most_common():
                print(f"  {check:24s} {cases:3d}  {hint!r}")


if __name__ == "__main__":
    main()
