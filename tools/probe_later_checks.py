"""What every check of a workshop says about planted bugs, not only the check that names them.

    python3 tools/probe_later_checks.py WORKSHOP BUG[,BUG...] [--device interpreter|cuda]
    python3 tools/probe_later_checks.py --compare BEFORE.txt AFTER.txt

The bug zoo (tests/bugs, `python3 -m benchmarks bugzoo`) stops at the first FAIL that carries
the bug's hint; a learner sees every check's verdict. This plants each named bug (tests.bugs.plant)
in a temporary folder, runs the whole workshop against it (`python3 -m checks run --impl`, one
seed for all) and prints, per failing check, how many cases gave each hint (its first 110
characters). A diagnostic, not evidence: the fifth learner audit's later-check leftovers were
judged with it. --compare reads two such outputs (the same bugs and seed, before and after a
change to the checks) and prints, per bug, the rows that went and the rows that came: a change
meant to name one mistake in more places must not move another mistake's hints elsewhere.
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


def _rows_by_bug(path: Path) -> dict[str, list[str]]:
    """An output of this tool: bug name -> its rows (check, cases, hint)."""
    rows: dict[str, list[str]] = {}
    bug = None
    for line in path.read_text().splitlines():
        if line.startswith("=== "):
            bug = line.split()[1]
            rows[bug] = []
        elif bug and line.strip():
            rows[bug].append(line)
    return rows


def compare(before: Path, after: Path) -> None:
    old, new = _rows_by_bug(before), _rows_by_bug(after)
    changed = 0
    for bug in (name for name in old if name in new):  # in the order they ran
        if old[bug] == new[bug]:
            continue
        changed += 1
        print(f"=== {bug}")
        print("\n".join(f"  - {row.strip()}" for row in old[bug] if row not in new[bug]))
        print("\n".join(f"  + {row.strip()}" for row in new[bug] if row not in old[bug]))
    print(f"{len(old.keys() & new.keys())} bugs in both, {changed} changed; only before: "
          f"{sorted(old.keys() - new.keys())}; only after: {sorted(new.keys() - old.keys())}")


def main() -> None:
    if sys.argv[1:2] == ["--compare"] and len(sys.argv) == 4:
        compare(Path(sys.argv[2]), Path(sys.argv[3]))
        return
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
