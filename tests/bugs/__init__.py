"""The bug zoo: classic mistakes planted in copies of the references, one per `Bug`.

Each workshop's `tests/bugs/<id>.py` lists `BUGS`. A bug is a text substitution on
`references/<id>.py` (so the zoo cannot drift from the reference: `find` must still occur
`count` times). `tests/test_bug_zoo.py` runs check `check` against each mutant (every check of
the workshop with BUGZOO_FULL=1) and asserts that it FAILs with a hint containing `hint`.

A bug with `gpu_only=True` lives in code that only a GPU runs (a kernel the interpreter cannot
run, caught by a check of the cuda tier): CI, which runs the zoo under the interpreter, only
plants it (its `find` must still match) and `python3 -m benchmarks bugzoo --device cuda` runs it.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


@dataclass(frozen=True)
class Bug:
    name: str
    find: str
    replace: str
    check: str  # id of the check that must catch it (e.g. "forward.ragged")
    hint: str  # text the hint must contain (the mistake's name)
    count: int = 1  # how many times `find` occurs in the reference (all are replaced)
    module: str = ""  # which reference module to mutate; default: the workshop's own
    gpu_only: bool = False  # caught by a cuda-tier check: run by the GPU zoo only
    # Code only the interpreter runs in the named check: a read past the end that only its
    # bounds check sees (on a GPU the extra loads do not fault and nothing they feed reaches
    # the output; the GPU tail guard watches stores), or a pointer store that a GPU makes
    # through a TMA descriptor instead. The GPU zoo leaves it out.
    interpreter_only: bool = False


def seen_later(bugs: list[Bug], original: str, *, name: str, check: str, hint: str = "",
               **flags) -> Bug:
    """The bug named `original` in `bugs`, planted as it is, seen by a later check `check`.

    A mistake usually fails more than the first check that catches it; where a later check
    names it too (with its own hint, or the original's when `hint` is empty), the zoo holds it
    to that as well. Only the name, the check, the hint and the flags differ: the planted text
    is the original's, so the two cannot drift apart.
    """
    matches = [bug for bug in bugs if bug.name == original]
    if len(matches) != 1:
        raise AssertionError(f"seen_later: {len(matches)} bugs named {original!r}, expected 1")
    return replace(matches[0], name=name, check=check, hint=hint or matches[0].hint, **flags)


def plant(workshop: str, bug: Bug, folder: Path) -> Path:
    """Write the mutated module (and unmodified siblings) into `folder`; return its path."""
    folder.mkdir(parents=True, exist_ok=True)
    for sibling in (ROOT / "references").glob("*.py"):
        shutil.copy(sibling, folder / sibling.name)
    target = folder / f"{bug.module or workshop}.py"
    text = target.read_text()
    found = text.count(bug.find)
    if found != bug.count:
        raise AssertionError(f"bug {bug.name!r}: {bug.find!r} occurs {found} times in "
                             f"references/{target.name}, expected {bug.count}")
    target.write_text(text.replace(bug.find, bug.replace))
    return folder / f"{workshop}.py"
