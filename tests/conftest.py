"""Shared fixtures: the lessons executed against the references, once per test session.

pytest-xdist runs two workers; both may ask for the executed lessons. A file lock makes the
first execute them (papermill, into book/lessons/) and the second reuse them: build_book keeps
a fingerprint of every input in each executed copy.
"""

from __future__ import annotations

import fcntl

import pytest

from tests.helpers import ROOT


@pytest.fixture(scope="session")
def executed_lessons():
    from tools import build_book

    lock_path = ROOT / "build" / "lessons.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return build_book.execute_lessons(build_book.LESSONS, impl="references", reuse=True,
                                              jobs=1)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
