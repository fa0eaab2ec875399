"""Lesson notebooks: committed clean, built on the shared template, and executed headlessly
against the references with every check passing. (nbval, configured in pyproject.toml, runs
each notebook against the learner's starters in the same test run.)"""

from __future__ import annotations

import json

import pytest

from checks import catalog
from tests.helpers import ROOT

NOTEBOOKS = [ROOT / w.notebook for w in catalog.WORKSHOPS]


def _cells(path):
    return json.loads(path.read_text())["cells"]


def _source(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_committed_without_outputs(path):
    for i, cell in enumerate(_cells(path)):
        if cell["cell_type"] == "code":
            assert not cell.get("outputs"), f"{path.name} cell {i} has outputs"
            assert cell.get("execution_count") is None, f"{path.name} cell {i} has a count"


@pytest.mark.parametrize("workshop", catalog.WORKSHOPS, ids=lambda w: w.id)
def test_notebook_follows_the_lesson_template(workshop):
    cells = _cells(ROOT / workshop.notebook)
    code = [_source(c) for c in cells if c["cell_type"] == "code"]
    params = [c for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(params) == 1, "exactly one cell tagged 'parameters'"
    for name in ("IMPL", "DEVICE", "EXPECT_ALL_PASS"):
        assert name in _source(params[0])
    text = "\n".join(code)
    setup_at = text.find("lab.setup(")
    load_at = text.find(f'lab.load("{workshop.id}"')
    assert 0 <= setup_at < load_at, "lab.setup must run before the kernel module is imported"
    assert f'lab.check("{workshop.id}"' in text
    assert "!pip" not in text and "%pip" not in text
    assert "@triton.jit" not in text, "notebooks import kernels, never define them"
    assert "getsource" not in text or "references" not in text, "the site never shows solutions"
    markdown = "\n".join(_source(c) for c in cells if c["cell_type"] == "markdown").lower()
    assert "summary" in markdown and "exercise" in markdown


@pytest.mark.slow
def test_lessons_execute_against_the_references_with_every_check_passing(executed_lessons):
    # EXPECT_ALL_PASS=True makes a lesson raise (and papermill fail) unless every check passes.
    assert len(executed_lessons) == len(catalog.WORKSHOPS)
    for execution in executed_lessons:
        assert execution.ok, f"{execution.lesson.stem}: {execution.status} {execution.error}"
        cells = _cells(execution.output)
        errors = [o for c in cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
        assert not errors, f"{execution.lesson.stem}: {errors[0]['ename']}"
        html = "".join("".join(o.get("data", {}).get("text/html", ""))
                       for c in cells for o in c.get("outputs", []))
        assert "PASS" in html and ">FAIL<" not in html and ">TODO<" not in html


@pytest.mark.slow
def test_strided_lesson_runs_what_a_half_done_starter_has_written(tmp_path):
    """With only `_load_x` and `plan` written, the lesson's try-it cell runs the calls whose
    kernels are given (path B in one block) and names the region the others wait for."""
    import papermill

    from tools import make_starters

    half = tmp_path / "half"
    make_starters.main(["--half-done", str(half), "--solved", "load,plan"])
    out = tmp_path / "lesson.ipynb"
    papermill.execute_notebook(str(ROOT / "notebooks/01_strided_softmax.ipynb"), str(out),
                               parameters={"IMPL": str(half), "DEVICE": "interpreter"},
                               cwd=str(ROOT / "notebooks"), progress_bar=False)
    cell = next(c for c in _cells(out) if "region_run_by" in _source(c))
    text = "".join("".join(o.get("text", "")) for o in cell["outputs"])
    assert not [o for o in cell["outputs"] if o.get("output_type") == "error"], text
    assert "waits for TODO(softmax, rows)" in text and "waits for TODO(softmax, strips)" in text
    ran = [line for line in text.splitlines() if line.rstrip().endswith(("e-08", "e-09", "e-07"))]
    assert len(ran) >= 10, text  # the given kernels ran through the learner's load and plan
