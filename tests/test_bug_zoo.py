"""The bug zoo: each planted classic mistake is caught by the check that should catch it,
with the hint that names it.

In CI each mutant runs the check that must catch it (a full check set per mutant would cost
most of the CI budget), as the GPU zoo does (`benchmarks/evidence.py`): one
`python -m benchmarks bugzoo <workshop> --device interpreter` process per workshop plants its
mutants one after another and runs them in that process (a process per mutant spent about a
second on imports each: 42 s for foundations' 33 mutants, 5 s in one process), on a fresh
seed each run. BUGZOO_FULL=1 instead runs every check of the workshop against each mutant, in a
process of its own, and still asserts the named check is among the failures. Bugs that only a
GPU can catch (`gpu_only`) are planted here, not run: `python3 -m benchmarks bugzoo --device
cuda` runs them (and leaves out the `interpreter_only` ones, code that only the interpreter runs
in the named check, such as reads past the end that only its bounds check sees).
"""

from __future__ import annotations

import importlib
import json
import os
import random
import subprocess
import sys

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
def test_planted_bug_is_caught_with_its_hint(workshop, bug, tmp_path, tmp_path_factory):
    if FULL:
        return _full_run_catches(workshop, bug, tmp_path)
    zoo = _workshop_zoo(workshop, tmp_path_factory)
    row = zoo["rows"].get(bug.name)
    assert row is not None, f"{bug.name}: the zoo of {workshop} has no row for it\n{zoo['stderr']}"
    assert row["caught"], (f"{bug.name}: check {bug.check} gave {row['outcome']} with hint "
                           f"{row['got_hint']!r} ({row['message']}); seed {zoo['seed']}")
    _record(workshop, bug, row["got_hint"])


_ZOOS: dict[str, dict] = {}


def _workshop_zoo(workshop: str, tmp_path_factory) -> dict:
    """Run the workshop's whole interpreter zoo once (the first of its tests asks), in a new
    process (so TRITON_INTERPRET starts clean), and keep its rows by bug name."""
    if workshop not in _ZOOS:
        out = tmp_path_factory.mktemp(f"zoo-{workshop}") / "zoo.json"
        seed = str(random.SystemRandom().randrange(2**31))  # fresh inputs every run
        env = dict(os.environ, BUGZOO_SEED=seed)
        for name in ("TRITON_INTERPRET", "BUGZOO_BUGS", "BUGZOO_SHARD"):
            env.pop(name, None)
        done = subprocess.run([sys.executable, "-m", "benchmarks", "bugzoo", workshop,
                               "--device", "interpreter", "--out", str(out)],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
        assert "Traceback" not in done.stderr, done.stderr[-3000:]
        assert done.returncode == 0, done.stderr[-3000:]
        rows = {row["bug"]: row for row in load_json(out)["bugs"]}
        _ZOOS[workshop] = {"rows": rows, "seed": seed, "stderr": done.stderr[-2000:]}
    return _ZOOS[workshop]


def _full_run_catches(workshop, bug, tmp_path):
    """BUGZOO_FULL=1: every check of the workshop against the mutant, in a process of its own."""
    mutant = plant(workshop, bug, tmp_path / "impl")
    out = tmp_path / "run.json"
    done = run_checks("run", workshop, "--impl", str(mutant), "--device", "interpreter",
                      "--json", str(out))
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    results = load_json(out)["results"]
    caught = [r for r in results if r["check"] == bug.check and r["outcome"] == "FAIL"]
    assert caught, f"{bug.name}: check {bug.check} did not FAIL"
    hints = [r["hint"] for r in caught]
    assert any(bug.hint in h for h in hints), f"{bug.name}: hints were {sorted(set(hints))}"
    assert done.returncode == 1
    _record(workshop, bug, next(h for h in hints if bug.hint in h))


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


def _record(workshop, bug, hint):
    """Append the catch to build/evidence/bugzoo-interpreter.jsonl for the validation report."""
    path = ROOT / "build" / "evidence" / "bugzoo-interpreter.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps({"workshop": workshop, "bug": bug.name, "check": bug.check,
                            "hint": hint, "caught": True}) + "\n")
