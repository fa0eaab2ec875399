"""`python -m checks list` needs nothing but the Python standard library."""

import subprocess
import sys

from checks import catalog
from tests.helpers import ROOT


def test_list_runs_without_site_packages():
    # -S: no site-packages at all, so numpy, torch and Triton cannot be imported.
    done = subprocess.run([sys.executable, "-S", "-m", "checks", "list"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for workshop in catalog.WORKSHOPS:
        assert workshop.id in done.stdout
    assert "check case(s)" in done.stdout


def test_list_imports_no_numeric_library():
    code = ("import runpy, sys; sys.argv = ['checks', 'list'];\n"
            "try:\n    runpy.run_module('checks', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            "bad = sorted(m for m in ('numpy', 'torch', 'triton') if m in sys.modules)\n"
            "print('IMPORTED', bad)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "IMPORTED []" in done.stdout


def test_every_workshop_has_checks_of_every_needed_tier():
    from checks.core import checks_for

    for workshop in catalog.WORKSHOP_IDS:
        checks = checks_for(workshop)
        assert checks, f"{workshop} has no checks"
        tiers = {c.tier for c in checks}
        if workshop == "online_normalization":
            assert tiers == {"cpu"}
        else:
            assert "kernel" in tiers and "cuda" in tiers, (workshop, tiers)


def test_unknown_workshop_is_a_usage_error():
    done = subprocess.run([sys.executable, "-m", "checks", "run", "nope"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "unknown workshop" in done.stderr
