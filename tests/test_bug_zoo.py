"""The bug zoo: each planted classic mistake is caught by the check that should catch it,
with the hint that names it.

In CI each mutant runs the check that must catch it (a full check set per mutant would cost
most of the CI budget), as the GPU zoo does (`benchmarks/evidence.py`); BUGZOO_FULL=1 runs every
check of the workshop against each mutant and still asserts the named check is among the
failures. Bugs that
only a GPU can catch (`gpu_only`) are planted here, not run: `python3 -m benchmarks bugzoo
--device cuda` runs them (and leaves out the `interpreter_only` ones, reads past the end that
only the interpreter's bounds check sees).
"""

from __future__ import annotations

import importlib
import json
import os

import pytest

from checks import catalog, core
from tests.bugs import plant
from tests.helpers import ROOT, load_json, run_checks

FULL = os.environ.get("BUGZOO_FULL") == "1"


def _all_bugs(gpu_only: bool):
    for workshop in catalog.WORKSHOP_IDS:
        try:
            module = importlib.import_module(f"tests.bugs.{workshop}")
        except ModuleNotFoundError:
            continue
        for bug in module.BUGS:
            if bug.gpu_only == gpu_only:
                yield pytest.param(workshop, bug, id=f"{workshop}-{bug.name}")


@pytest.mark.parametrize("workshop,bug", list(_all_bugs(gpu_only=False)))
def test_planted_bug_is_caught_with_its_hint(workshop, bug, tmp_path):
    mutant = plant(workshop, bug, tmp_path / "impl")
    out = tmp_path / "run.json"
    # One FAIL with the hint is the verdict: the run stops there (cases after it only cost time).
    only = [] if FULL else ["--only", bug.check, "--stop-at-hint", bug.hint]
    done = run_checks("run", workshop, "--impl", str(mutant), "--device", "interpreter",
                      "--json", str(out), *only)
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    results = load_json(out)["results"]
    caught = [r for r in results if r["check"] == bug.check and r["outcome"] == "FAIL"]
    assert caught, f"{bug.name}: check {bug.check} did not FAIL"
    hints = [r["hint"] for r in caught]
    assert any(bug.hint in h for h in hints), f"{bug.name}: hints were {sorted(set(hints))}"
    assert done.returncode == 1
    _record(workshop, bug, caught)


@pytest.mark.parametrize("workshop,bug", list(_all_bugs(gpu_only=True)))
def test_gpu_only_bug_plants_and_names_a_cuda_check(workshop, bug, tmp_path):
    """A bug only the GPU zoo runs must still plant (its text is in the reference), and the
    check meant to catch it must exist and be one that needs a GPU."""
    plant(workshop, bug, tmp_path / "impl")
    tiers = {c.id: c.tier for c in core.checks_for(workshop)}
    assert tiers.get(bug.check) == "cuda", f"{bug.name}: {bug.check} is not a cuda-tier check"


def test_every_workshop_plants_bugs():
    for workshop in catalog.WORKSHOP_IDS:
        module = importlib.import_module(f"tests.bugs.{workshop}")
        assert len(module.BUGS) >= 3, workshop
        names = [b.name for b in module.BUGS]
        assert len(set(names)) == len(names), f"{workshop}: two bugs share a name"
        both = [b.name for b in module.BUGS if b.gpu_only and b.interpreter_only]
        assert not both, f"{workshop}: {both} cannot be both gpu_only and interpreter_only"


def _record(workshop, bug, caught):
    """Append the catch to build/evidence/bugzoo-interpreter.jsonl for the validation report."""
    path = ROOT / "build" / "evidence" / "bugzoo-interpreter.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps({"workshop": workshop, "bug": bug.name, "check": bug.check,
                            "hint": caught[0]["hint"], "caught": True}) + "\n")
