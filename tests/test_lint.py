"""The Python sources pass ruff with pyproject.toml's rules (pyflakes, pycodestyle, import
order, bugbear, pyupgrade; line length 110), so a lint slip fails CI instead of waiting for a
reader. ruff comes with the pinned requirements (requirements/lock.txt)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_finds_nothing():
    run = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=ROOT,
                         capture_output=True, text=True)
    assert run.returncode == 0, f"ruff check found problems:\n{run.stdout}{run.stderr}"
