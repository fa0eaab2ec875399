"""Derive the learner's starters (kernels/) from the references (references/).

One source of truth: a reference marks each exercise region

    # EXERCISE row_softmax: subtract the row maximum before exp
    # (more instruction lines, as comments, directly below)
    z = x - tl.max(x, axis=0)
    # END EXERCISE

and the starter keeps the instructions and drops the solution:

    # TODO(row_softmax): subtract the row maximum before exp
    # (more instruction lines, as comments, directly below)
    pass

so a starter differs from its reference only inside exercise regions, and solving an exercise
only ever adds lines. `<names>` are the public functions the region belongs to: the checks that
call them report TODO while the TODO line is there.

    python tools/make_starters.py            # write missing starters (an existing one differing
                                             # from its derivation may hold your edits: left alone)
    python tools/make_starters.py --check    # exit 1 if a committed starter is out of date
    python tools/make_starters.py --force    # overwrite starters, learner edits included
    python tools/make_starters.py --half-done /tmp/half --solved load,plan
        # a folder of starters with only the regions of those tags solved (as the references
        # have them), for `python -m checks run <id> --impl /tmp/half`: what a learner halfway
        # through sees (the half-done starters of tests/test_workshops.py are made this way)
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEGIN = re.compile(r"^(?P<indent>\s*)# EXERCISE (?P<names>[\w., ]+):\s*(?P<text>.*)$")
END = re.compile(r"^\s*# END EXERCISE\s*$")
COMMENT = re.compile(r"^\s*#")


class MarkerError(ValueError):
    pass


def derive(source: str, filename: str = "<reference>", *, solved: tuple[str, ...] = ()) -> str:
    """The starter text for a reference's text. `solved`: tags whose regions stay solved, as a
    learner leaves them (markers gone, code kept): a half-done starter, for the tests."""
    out: list[str] = []
    lines = source.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        match = BEGIN.match(lines[i])
        if END.match(lines[i]):
            raise MarkerError(f"{filename}:{i + 1}: END EXERCISE without EXERCISE")
        if not match:
            out.append(lines[i])
            i += 1
            continue
        indent, start = match["indent"], i
        if set(solved) & {n.strip() for n in match["names"].split(",")}:
            i += 1
            while i < len(lines) and not END.match(lines[i]):
                out.append(lines[i])
                i += 1
            i += 1  # skip END
            continue
        out.append(f"{indent}# TODO({match['names'].strip()}): {match['text']}\n")
        i += 1
        while i < len(lines) and COMMENT.match(lines[i]) and not END.match(lines[i]):
            out.append(lines[i])  # instruction lines directly below the marker
            i += 1
        while i < len(lines) and not END.match(lines[i]):
            if BEGIN.match(lines[i]):
                raise MarkerError(f"{filename}:{i + 1}: nested EXERCISE (opened at line {start + 1})")
            i += 1
        if i == len(lines):
            raise MarkerError(f"{filename}:{start + 1}: EXERCISE without END EXERCISE")
        out.append(f"{indent}pass\n")
        i += 1  # skip END
    return "".join(out)


def exercise_count(source: str) -> int:
    return sum(1 for line in source.splitlines() if BEGIN.match(line))


def pairs(ids: list[str] | None = None) -> list[tuple[Path, Path]]:
    refs = sorted((ROOT / "references").glob("*.py"))
    return [(ref, ROOT / "kernels" / ref.name) for ref in refs if not ids or ref.stem in ids]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ids", nargs="*", help="workshop ids (default: all references)")
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 on a difference")
    parser.add_argument("--force", action="store_true", help="overwrite edited starters")
    parser.add_argument("--half-done", metavar="DIR",
                        help="write starters to DIR (not kernels/) with the --solved regions solved")
    parser.add_argument("--solved", default="", metavar="TAG,TAG",
                        help="with --half-done: the exercise tags whose regions stay solved")
    args = parser.parse_args(argv)
    if args.solved and not args.half_done:
        parser.error("--solved goes with --half-done DIR")
    known = {ref.stem for ref, _ in pairs()}
    unknown = [i for i in args.ids if i not in known]
    if unknown:
        parser.error(f"no references/<id>.py for {', '.join(unknown)}; known: "
                     f"{', '.join(sorted(k for k in known if not k.startswith('_')))}")

    if args.half_done:
        folder = Path(args.half_done)
        folder.mkdir(parents=True, exist_ok=True)
        solved = tuple(t.strip() for t in args.solved.split(",") if t.strip())
        for ref, _ in pairs():  # every module: a workshop imports its siblings
            (folder / ref.name).write_text(derive(ref.read_text(), str(ref.relative_to(ROOT)),
                                                  solved=solved))
        print(f"wrote half-done starters to {folder} (solved: {', '.join(solved) or 'none'})")
        return 0

    status = 0
    for ref, starter in pairs(args.ids):
        wanted = derive(ref.read_text(), str(ref.relative_to(ROOT)))
        current = starter.read_text() if starter.exists() else None
        name = starter.relative_to(ROOT)
        if current == wanted:
            continue
        if args.check:
            print(f"{name} differs from what {ref.relative_to(ROOT)} derives; "
                  "run: python tools/make_starters.py --force")
            status = 1
        elif current is not None and not args.force:
            print(f"{name} has edits (yours?); left alone. Use --force to overwrite it.")
        else:
            starter.write_text(wanted)
            print(f"wrote {name}")
    return status


if __name__ == "__main__":
    sys.exit(main())
