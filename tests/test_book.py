"""The book builds with warnings as errors, and its internal links and anchors all resolve.

The build (`tools/build_book.py:build_for_tests`, shared with tests/test_site.py within one
test run) executes the lessons against the references on the CPU interpreter, renders them with
`jupyter-book build . --all -W --keep-going` and checks the HTML.

Links: Sphinx's `linkcheck` builder is not used. It checks external links by fetching them
(nothing is reachable offline, and whether a remote host answers today says nothing about this
book) and it does not check anchors inside the book's own pages well. Instead
`build_book.check_site` parses every built page and requires that every internal href names an
existing file and that its #fragment is an element id on that page; tests/test_site.py repeats
the check on the links as the browser resolved them.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from tools import build_book

ROOT = build_book.ROOT


@pytest.fixture(scope="module")
def book():
    return build_book.build_for_tests()


# Every test that takes the `book` fixture builds the book (once per run): minutes on a CPU.
slow = pytest.mark.slow


@slow
def test_book_builds_with_warnings_as_errors(book):
    # render() runs jupyter-book with -W --keep-going and raises on any warning, so getting
    # here means the strict build passed; the site has its entry page and every TOC page.
    assert (book.html_dir / "index.html").exists()
    for docname in toc_docnames():
        page = book.html_dir / f"{book.page(docname)}.html"
        assert page.exists(), f"{docname} is in _toc.yml but {page} was not built"


@slow
def test_every_lesson_and_the_report_are_in_the_book(book):
    missing = book.missing()
    if missing and build_book.TESTS_ALLOW_MISSING:
        pytest.skip("not written yet, shown as placeholders: " + ", ".join(missing))
    assert not missing


@slow
def test_internal_links_and_anchors_resolve(book):
    report = build_book.check_site(book.html_dir)
    links = [p for p in report.problems if "link " in p]
    assert report.links_checked > 50 and report.anchors_checked > 10, report
    assert not links, "\n".join(links)


@slow
def test_no_page_loads_from_another_host(book):
    report = build_book.check_site(book.html_dir)
    remote = [p for p in report.problems if "another host" in p or "does not exist" in p]
    assert not remote, "\n".join(remote)


@slow
def test_math_renderer_is_bundled_and_used(book):
    bundle = build_book.MATHJAX
    # The committed bundle is exactly what its README lists (sha256 per file).
    listed = re.findall(r"^\s+([0-9a-f]{64})\s+(\S+)$", (bundle / "README.md").read_text(), re.M)
    assert listed, "book/_static/mathjax/README.md lists no files"
    for digest, name in listed:
        assert build_book._sha256(bundle / name) == digest, f"{name} differs from the recorded bundle"
    index = (book.html_dir / "book" / "index.html").read_text()
    assert "_static/mathjax/tex-chtml-full.js" in index
    assert (book.html_dir / "_static" / "mathjax" / "tex-chtml-full.js").exists()
    fonts = book.html_dir / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2"
    assert len(list(fonts.glob("*.woff"))) >= 20


@slow
def test_lessons_were_executed_against_the_references(book):
    executed = [e for e in book.executions if e.ok]
    if not executed:
        pytest.skip("no lesson notebook exists yet")
    for execution in executed:
        notebook = json.loads(execution.output.read_text())
        meta = notebook["metadata"].get("workshop_book", {})
        assert meta.get("impl") == "references" and meta.get("expect_all_pass") is True, meta
        assert meta.get("device") == "interpreter", meta
        code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
        assert all(c.get("execution_count") for c in code), f"{execution.output.name}: unexecuted cell"
        errors = [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
        assert not errors, f"{execution.output.name}: an error output"
        page = (book.html_dir / "book" / "lessons" / f"{execution.lesson.stem}.html").read_text()
        # The check cell's table (checks/report.py:html_table): one bold outcome cell per row,
        # then a bold summary line such as "56 PASS, 1 UNAVAILABLE".
        outcomes = re.findall(r'font-weight:bold">([A-Z]+)</td>', page)
        assert "PASS" in outcomes, f"{execution.lesson.stem}: the rendered lesson shows no PASS row"
        assert set(outcomes) <= {"PASS", "UNAVAILABLE"}, f"{execution.lesson.stem}: {set(outcomes)}"
        assert re.search(r"<p><b>\d+ PASS(, \d+ UNAVAILABLE)?</b>", page), execution.lesson.stem


@slow
def test_committed_notebooks_are_not_written(book):
    # The executed copies live in book/lessons/ (generated); notebooks/ keeps no outputs.
    for lesson in build_book.LESSON_LIST:
        if not lesson.source.exists():
            continue
        notebook = json.loads(lesson.source.read_text())
        outputs = [c for c in notebook["cells"] if c["cell_type"] == "code" and c.get("outputs")]
        assert not outputs, f"{lesson.source.name} has outputs"


@slow
def test_site_shows_no_solution_code(book):
    assert build_book.solution_blocks(), "no exercise region found in references/"
    hits = build_book.find_solution_code(book.html_dir)
    assert not hits, "\n".join(hits)
    for path in book.html_dir.rglob("*"):  # no reference module is copied into the site
        assert not (path.suffix == ".py" and (ROOT / "references" / path.name).exists()), path


def test_results_page_without_figures_says_so(tmp_path):
    page = build_book.write_results_page(tmp_path / "figures", out=tmp_path / "results.md")
    assert "No GPU evidence yet" in page.read_text()


def test_results_page_lists_every_figure(tmp_path):
    figures = tmp_path / "figures"
    figures.mkdir()
    for name in ("fused_gemm_tflops.png", "split_softmax_bandwidth.png", "overview.png"):
        (figures / name).write_bytes(b"\x89PNG\r\n\x1a\n")
    (figures / "split_softmax_bandwidth.txt").write_text("Bandwidth against width, fp16.\n")
    text = build_book.write_results_page(figures, out=tmp_path / "results.md").read_text()
    assert text.count("```{figure}") == 3
    assert "Bandwidth against width, fp16." in text
    assert text.index("Fused GEMM") < text.index("Split softmax") < text.index("Other figures")


@slow
def test_built_results_page_matches_the_figures(book):
    page = (book.html_dir / "book" / "results.html").read_text()
    pngs = sorted(build_book.FIGURES.glob("*.png")) if build_book.FIGURES.is_dir() else []
    if not pngs:
        assert "No GPU evidence yet" in page
    for png in pngs:
        assert png.stem in page, f"{png.name} is not on the results page"


def test_site_checker_catches_what_it_must(tmp_path):
    """The static checker itself: a broken link, a missing anchor, a remote load, a solution."""
    site = tmp_path / "html"
    site.mkdir()
    (site / "a.html").write_text('<p id="here">x</p><a href="b.html#there">ok</a>')
    block = next(iter(build_book.solution_blocks().values()))[0]
    (site / "b.html").write_text(
        '<h1 id="there">b</h1><a href="missing.html">1</a><a href="a.html#nowhere">2</a>'
        '<a href="https://example.org/">external links are fine</a>'
        '<img src="https://example.org/x.png"><script src="//cdn.example.org/x.js"></script>'
        f"<pre>{html.escape(block)}</pre>")
    problems = build_book.check_site(site).problems
    assert any("missing.html" in p for p in problems), problems
    assert any("#nowhere" in p for p in problems), problems
    assert any("example.org/x.png" in p for p in problems), problems
    assert any("cdn.example.org" in p for p in problems), problems
    assert any("solution" in p for p in problems), problems
    assert len(problems) == 5, problems  # the good link and the external link are not flagged


def toc_docnames() -> list[str]:
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    names = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            names.append(entry["file"]) if "file" in entry else None
            walk(entry.get("sections"))

    for part in toc["parts"]:
        walk(part["chapters"])
    return names


def test_toc_names_every_lesson_in_book_order():
    lessons = [Path(n).name for n in toc_docnames() if n.startswith("book/lessons/")]
    assert lessons == [lesson.stem for lesson in build_book.LESSON_LIST]
