"""Small helpers shared by the tests: run the checks CLI, or a snippet, in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_checks(*args: str, env: dict | None = None, timeout: int = 900,
               python: list[str] | None = None) -> subprocess.CompletedProcess:
    """`python -m checks <args>` from the repository root, in a new process (so the device
    choice and TRITON_INTERPRET start clean)."""
    full_env = dict(os.environ, **(env or {}))
    full_env.pop("TRITON_INTERPRET", None)
    return subprocess.run([*(python or [sys.executable]), "-m", "checks", *args], cwd=ROOT,
                          env=full_env, capture_output=True, text=True, timeout=timeout)


def run_python(code: str, *, env: dict | None = None,
               timeout: int = 300) -> subprocess.CompletedProcess:
    """`python -c <code>` from the repository root, in a new process, with `env` on top of this
    process's environment (so imports, the device choice and Triton's state start clean)."""
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, **(env or {})))


def load_json(path: Path) -> dict:
    return json.loads(Path(path).read_text())
