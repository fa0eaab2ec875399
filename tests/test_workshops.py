"""Every workshop: the reference passes every check under the interpreter; the untouched
starter yields TODO and never FAIL. The reference runs are saved as CPU evidence."""

from __future__ import annotations

import pytest

from checks import catalog
from checks.core import checks_for
from tests.helpers import ROOT, load_json, run_checks

EVIDENCE = ROOT / "build" / "evidence"


@pytest.mark.slow
@pytest.mark.parametrize("workshop", catalog.WORKSHOP_IDS)
def test_reference_passes_every_check(workshop):
    out = EVIDENCE / f"checks-interpreter-{workshop}.json"
    done = run_checks("run", workshop, "--impl", "references", "--device", "interpreter",
                      "--json", str(out))
    results = load_json(out)["results"]
    bad = [f"{r['check']} [{r['case']}]: {r['message']}" for r in results
           if r["outcome"] not in ("PASS", "UNAVAILABLE")]
    assert not bad, "\n".join(bad[:10])
    assert done.returncode == 0
    assert any(r["outcome"] == "PASS" for r in results)
    unavailable = [r for r in results if r["outcome"] == "UNAVAILABLE"]
    assert all(r["tier"] == "cuda" and r["message"] for r in unavailable)


@pytest.mark.parametrize("workshop", catalog.WORKSHOP_IDS)
def test_untouched_starter_is_todo_never_fail(workshop, tmp_path):
    out = tmp_path / "starter.json"
    done = run_checks("run", workshop, "--impl", "kernels", "--device", "interpreter",
                      "--json", str(out))
    assert done.returncode == 0, done.stdout[-3000:]
    results = load_json(out)["results"]
    uses = {c.id: c.uses for c in checks_for(workshop)}
    for r in results:
        assert r["outcome"] != "FAIL", f"{r['check']}: {r['message']}"
        if uses[r["check"]]:
            assert r["outcome"] == "TODO", f"{r['check']} is {r['outcome']}, expected TODO"


# Half-done starters: the regions named are solved (as the reference has them), the others left
# as TODOs. Every case whose code is all written gets a verdict (PASS here), the others say
# TODO naming what they run; nothing FAILs. (`runs`: the "this case runs ..." of those TODOs.)
HALF_DONE = [
    ("strided_softmax", ("load", "plan"), {"path A with each row in one block",
                                           "path B's two-pass walk"}),
    ("strided_softmax", ("load", "plan", "rows"), {"path B's two-pass walk"}),
    ("strided_softmax", ("load", "plan", "strips"), {"path A with each row in one block"}),
    # (workshop 2's autograd checks call workshop 1's softmax: solved in full here)
    ("softmax_backward", ("vjp", "load", "plan", "rows", "strips", "Softmax"), {"dim=0"}),
]


@pytest.mark.parametrize("workshop, solved, runs", HALF_DONE,
                         ids=["+".join(s) for _, s, _ in HALF_DONE])
def test_half_done_starter_gets_verdicts_on_what_is_written(workshop, solved, runs, tmp_path):
    from tools import make_starters

    make_starters.main(["--half-done", str(tmp_path), "--solved", ",".join(solved)])
    out = tmp_path / "half.json"
    done = run_checks("run", workshop, "--impl", str(tmp_path), "--device", "interpreter",
                      "--json", str(out))
    assert done.returncode == 0, done.stdout[-3000:]
    results = load_json(out)["results"]
    assert not [r for r in results if r["outcome"] == "FAIL"], done.stdout[-3000:]
    assert sum(r["outcome"] == "PASS" and r["tier"] == "kernel" for r in results) >= 20
    pending = {r["message"] for r in results
               if r["outcome"] == "TODO" and r["message"].startswith("this case runs ")}
    said = {what for what in runs for m in pending if m.startswith(f"this case runs {what}")}
    assert said == runs, pending
    assert all(any(m.startswith(f"this case runs {what}") for what in runs) for m in pending)


def test_todo_in_another_workshops_file_says_why(tmp_path):
    # Softmax backward's autograd checks run workshop 1's softmax: their TODO rows name its file.
    out = tmp_path / "starter.json"
    run_checks("run", "softmax_backward", "--impl", "kernels", "--device", "interpreter",
               "--only", "autograd", "--json", str(out))
    messages = {r["message"] for r in load_json(out)["results"]}
    assert messages and all("kernels/strided_softmax.py is workshop 1's file (strided_softmax), "
                            "whose code this check runs too" in m for m in messages), messages


@pytest.mark.parametrize("package", ["references", "kernels"])
def test_online_normalization_state_is_immutable(package):
    """`State` is given code (the learner writes merge and its friends around it): a merge must
    return a new state, so a state it was handed can never change under its holder."""
    import dataclasses
    import importlib

    module = importlib.import_module(f"{package}.online_normalization")
    state = module.State(1.5, 2.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.m = 3.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.s = 1.0
    assert (state.m, state.s) == (1.5, 2.0)
