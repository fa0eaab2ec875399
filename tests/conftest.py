"""Shared fixtures.

The lessons executed against the references come from the one book build of the test run
(tools/build_book.build_for_tests: papermill into book/lessons/, then jupyter-book), shared by
the pytest-xdist workers through a file lock, so no lesson is executed twice.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def executed_lessons():
    from tools import build_book

    return build_book.build_for_tests().executions
