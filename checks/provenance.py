"""Provenance of a saved result: when, where, with which versions and which exact sources.

Shared by the check runner (`--json`) and the benchmark harness, so every piece of evidence
carries the same header: date, GPU, driver, CUDA, torch, Triton, git commit, sha256 of sources.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import subprocess
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

# The machinery every workshop's checks run on (how a call is made and judged, how outputs are
# compared, the guard bands, the launch counter, the device set-up). A change here can change
# any verdict, so check, bad-call and bug-zoo runs record these beside the workshop's own files:
# the report's staleness test then flags GPU evidence recorded before such a change.
SHARED_CHECK_SOURCES = tuple(REPO_ROOT / "checks" / name for name in (
    "core.py", "context.py", "compare.py", "tail_guard.py", "launches.py", "device.py"))


def header(device: str, impl: str, sources: list[Path]) -> dict:
    """The provenance header for a run on `device` ("cuda" or "interpreter")."""
    out = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "device": device,
        "impl": impl,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "sources": {display(p): sha256(p) for p in sources},
    }
    for name in ("numpy", "torch", "triton"):
        try:
            out[name] = __import__(name).__version__
        except ImportError:
            out[name] = None
    if device == "cuda":
        import torch

        props = torch.cuda.get_device_properties(0)
        out.update(gpu=props.name, sm_count=props.multi_processor_count, cuda=torch.version.cuda,
                   driver=driver_version())
    out["git_commit"], out["git_dirty"] = git_state()
    return out


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def display(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def driver_version() -> str | None:
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=20)
        return done.stdout.strip().splitlines()[0] if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def commit_env_error() -> str | None:
    """What is wrong with WORKSHOP_GIT_COMMIT, or None (unset, or a full 40-hex commit id).

    The evidence files carry it as their provenance, so a placeholder or a short id must stop a
    run before it starts, not end up in the header (the command-line entry points check)."""
    given = os.environ.get("WORKSHOP_GIT_COMMIT")
    if not given or re.fullmatch(r"[0-9a-f]{40}", given):
        return None
    return (f"WORKSHOP_GIT_COMMIT must be the full 40-character commit id of the tree being "
            f"measured (git rev-parse HEAD), got {given!r}")


def git_state() -> tuple[str | None, bool | None]:
    """(commit, dirty). On the GPU machine the tree is a copy whose .git may be missing or
    out of date: WORKSHOP_GIT_COMMIT, which the maintainer sets when launching the run, wins
    over whatever git says there (dirty then unknown)."""
    if os.environ.get("WORKSHOP_GIT_COMMIT"):
        return os.environ["WORKSHOP_GIT_COMMIT"], None
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True,
                              text=True, timeout=20)
        commit = done.stdout.strip()
        # Only a real 40-hex commit counts: in a copy without history git prints "HEAD".
        if done.returncode == 0 and re.fullmatch(r"[0-9a-f]{40}", commit):
            status = subprocess.run(["git", "status", "--porcelain"], cwd=REPO_ROOT,
                                    capture_output=True, text=True, timeout=20)
            return commit, bool(status.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return os.environ.get("WORKSHOP_GIT_COMMIT"), None
