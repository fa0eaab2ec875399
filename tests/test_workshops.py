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
