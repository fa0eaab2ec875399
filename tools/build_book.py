"""Build the book: execute every lesson against the references, then render the static site.

    python tools/build_book.py                      # execute the 7 lessons, render, check the site
    python tools/build_book.py --only foundations   # execute only these; reuse the others
    python tools/build_book.py --skip-execute       # reuse book/lessons/ (executed earlier)
    python tools/build_book.py --allow-missing      # a lesson or report not written yet: placeholder
    python tools/build_book.py --vendor-mathjax     # refresh book/_static/mathjax from npm

Step 1 runs papermill on each `notebooks/NN_<id>.ipynb` with IMPL="references",
EXPECT_ALL_PASS=True, DEVICE="interpreter" (cwd notebooks/, 2 in parallel, a time limit per
notebook) and writes the executed copy to `book/lessons/NN_<id>.ipynb`: generated, never
committed; `notebooks/` and `kernels/` are never written. Step 2 writes `book/_generated/`
(the results page's figure list). Step 3 runs `jupyter-book build . --all -W --keep-going`
from the repository root (`_config.yml` sets `execute_notebooks: "off"`: the copies are
already executed). Step 4 checks the HTML: every internal link and anchor resolves, no page
loads anything from another host, and no reference solution line appears on the site.

The site is `_build/html/index.html`. A missing lesson or `validation_report.md` is an error,
unless `--allow-missing` (development only) puts a clearly marked placeholder in its place.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import html.parser
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python tools/build_book.py` puts tools/, not the root, on the path
    sys.path.insert(0, str(ROOT))

from checks.catalog import WORKSHOPS  # noqa: E402  (standard library only)

NOTEBOOKS = ROOT / "notebooks"
BOOK = ROOT / "book"
LESSONS = BOOK / "lessons"  # executed copies, generated (the TOC points here)
GENERATED = BOOK / "_generated"  # generated pages, e.g. the results page's figure list
FIGURES = BOOK / "figures"  # PNGs written by `python -m benchmarks report`
MATHJAX = BOOK / "_static" / "mathjax"
MATHJAX_VERSION = "3.2.2"
MATHJAX_FILES = ("tex-chtml-full.js",)  # + output/chtml/fonts/woff-v2/*.woff
VALIDATION_REPORT = ROOT / "validation_report.md"
DEFAULT_OUTPUT = ROOT  # jupyter-book writes <output>/_build/html
DEFAULT_TIMEOUT = 900  # seconds per notebook; a lesson takes well under a minute on 2 cores

# The parameters the site is executed with (the lessons' `parameters` cell is overridden).
SITE_IMPL = "references"
SITE_DEVICE = "interpreter"


class BookError(RuntimeError):
    """The book cannot be built; the message says what to do."""


# ---------------------------------------------------------------------------------------------
# Lessons


@dataclass(frozen=True)
class Lesson:
    id: str
    number: int
    level: str
    title: str

    @property
    def stem(self) -> str:
        return f"{self.number:02d}_{self.id}"

    @property
    def source(self) -> Path:
        return NOTEBOOKS / f"{self.stem}.ipynb"


LESSON_LIST: tuple[Lesson, ...] = tuple(Lesson(w.id, w.number, w.level, w.title) for w in WORKSHOPS)


def select_lessons(ids: list[str] | tuple[str, ...] | None = None) -> list[Lesson]:
    """The lessons named by `ids` (workshop ids or notebook stems), in book order; all if None."""
    if not ids:
        return list(LESSON_LIST)
    known = {lesson.id: lesson for lesson in LESSON_LIST} | {lesson.stem: lesson for lesson in LESSON_LIST}
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise BookError(f"unknown lesson id(s) {', '.join(unknown)}; known: "
                        + ", ".join(lesson.id for lesson in LESSON_LIST))
    chosen = {known[i].id for i in ids}
    return [lesson for lesson in LESSON_LIST if lesson.id in chosen]


@dataclass
class Execution:
    """What happened to one lesson: executed, reused, missing or failed."""

    lesson: Lesson
    output: Path
    status: str  # "executed", "reused", "missing", "failed"
    seconds: float = 0.0
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.status in ("executed", "reused")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _stamp(lesson: Lesson, impl: str, device: str, expect_all_pass: bool) -> str:
    """A fingerprint of everything an executed copy depends on: reuse it only if unchanged."""
    digest = hashlib.sha256()
    digest.update(json.dumps([impl, device, expect_all_pass]).encode())
    files = [lesson.source, *sorted((ROOT / "checks").glob("*.py")),
             *sorted((ROOT / "references").glob("*.py"))]
    impl_path = Path(impl)
    if impl == "kernels":
        files += sorted((ROOT / "kernels").glob("*.py"))
    elif impl not in ("references",) and impl_path.exists():
        folder = impl_path.parent if impl_path.is_file() else impl_path
        files += sorted(folder.glob("*.py"))
    for path in files:
        digest.update(str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path).encode())
        digest.update(_sha256(path).encode())
    return digest.hexdigest()


def _read_stamp(path: Path) -> str | None:
    try:
        return json.loads(path.read_text())["metadata"]["workshop_book"]["stamp"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _kill_group(process: subprocess.Popen) -> None:
    """Kill the process group that we started for one notebook (papermill and its kernel)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _execute_one(lesson: Lesson, output: Path, impl: str, device: str, expect_all_pass: bool,
                 timeout: float, threads: int, stamp: str) -> Execution:
    partial = output.with_name(output.name + ".part")
    failed = output.with_name(output.name + ".failed")  # kept for reading; never a page
    for stale in (partial, failed):
        stale.unlink(missing_ok=True)
    parameters = {"IMPL": impl, "EXPECT_ALL_PASS": expect_all_pass, "DEVICE": device}
    command = [sys.executable, "-m", "papermill", str(lesson.source), str(partial),
               "--cwd", str(NOTEBOOKS), "-y", json.dumps(parameters),
               "--execution-timeout", str(int(timeout)), "--no-progress-bar", "--log-level", "WARNING"]
    env = dict(os.environ)
    # Two notebooks share the cores: one thread pool each, not two threads fighting per core.
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env.setdefault(name, str(threads))
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # silences a debugger warning cell
    env.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=NOTEBOOKS, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        log, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        log, _ = process.communicate()
        if partial.exists():
            partial.replace(failed)
        return Execution(lesson, output, "failed", time.perf_counter() - start,
                         f"timed out after {timeout:.0f} s (raise --timeout if the lesson is "
                         f"slow on purpose)\n{_tail(log)}")
    finally:
        if process.poll() is None:
            _kill_group(process)
    seconds = time.perf_counter() - start
    if process.returncode != 0 or not partial.exists():
        if partial.exists():
            partial.replace(failed)
        where = f" (the executed notebook, with the error, is {_show(failed)})" if failed.exists() else ""
        return Execution(lesson, output, "failed", seconds,
                         f"papermill exited with {process.returncode}{where}\n{_tail(log)}")
    notebook = json.loads(partial.read_text())
    notebook.setdefault("metadata", {})["workshop_book"] = {
        "stamp": stamp, "impl": impl, "device": device, "expect_all_pass": expect_all_pass,
        "source": str(lesson.source.relative_to(ROOT)), "seconds": round(seconds, 1)}
    partial.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
    partial.replace(output)
    return Execution(lesson, output, "executed", seconds)


def _show(path: Path) -> str:
    """A path for a message: relative to the repository when inside it."""
    return str(path.relative_to(ROOT)) if path.resolve().is_relative_to(ROOT) else str(path)


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join((text or "").strip().splitlines()[-lines:])


def execute_lessons(out_dir: str | Path, impl: str = SITE_IMPL, ids=None, jobs: int = 2, *,
                    device: str = SITE_DEVICE, expect_all_pass: bool | None = None,
                    timeout: float = DEFAULT_TIMEOUT, reuse: bool = False,
                    allow_missing: bool = False, raise_on_error: bool = True,
                    log=print) -> list[Execution]:
    """Execute lessons with papermill into `out_dir/NN_<id>.ipynb`; return one Execution each.

    `impl` is "references", "kernels" or a path to a module/folder (made absolute: papermill
    runs in notebooks/). EXPECT_ALL_PASS defaults to True for the references only. `reuse`
    keeps an executed copy whose fingerprint (notebook, checks, implementation, parameters)
    is unchanged. A lesson whose notebook does not exist is an error, or with
    `allow_missing` an Execution with status "missing". Any failure raises BookError after
    all lessons ran, unless `raise_on_error=False`.
    """
    out_dir = Path(out_dir)
    if out_dir.resolve() in (NOTEBOOKS.resolve(), (ROOT / "kernels").resolve()):
        raise BookError(f"refusing to write executed notebooks into {out_dir}")
    out_dir.mkdir(parents=True, exist_ok=True)
    if impl not in ("references", "kernels"):
        impl = str(Path(impl).resolve())
    if expect_all_pass is None:
        expect_all_pass = impl == "references"
    lessons = select_lessons(ids)
    results: list[Execution] = []
    todo: list[tuple[Lesson, Path, str]] = []
    for lesson in lessons:
        output = out_dir / f"{lesson.stem}.ipynb"
        if not lesson.source.exists():
            results.append(Execution(lesson, output, "missing",
                                     error=f"{lesson.source.relative_to(ROOT)} does not exist yet"))
            continue
        stamp = _stamp(lesson, impl, device, expect_all_pass)
        if reuse and output.exists() and _read_stamp(output) == stamp:
            results.append(Execution(lesson, output, "reused"))
            continue
        todo.append((lesson, output, stamp))
    jobs = max(1, min(jobs, len(todo) or 1))
    threads = max(1, (os.cpu_count() or 2) // jobs)
    if todo:
        log(f"executing {len(todo)} lesson(s) with papermill ({jobs} at a time, impl={impl}, "
            f"device={device}, limit {timeout:.0f} s each)")
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(_execute_one, lesson, output, impl, device, expect_all_pass,
                               timeout, threads, stamp): lesson for lesson, output, stamp in todo}
        for future in concurrent.futures.as_completed(futures):
            result = future.result()
            log(f"  {result.lesson.stem}: {result.status} in {result.seconds:.1f} s")
            results.append(result)
    order = {lesson.id: i for i, lesson in enumerate(LESSON_LIST)}
    results.sort(key=lambda r: order[r.lesson.id])
    problems = [r for r in results if r.status == "failed" or (r.status == "missing" and not allow_missing)]
    if problems and raise_on_error:
        raise BookError("lesson execution failed:\n" + "\n".join(
            f"- {r.lesson.stem}: {r.status}: {r.error}" for r in problems))
    return results


# ---------------------------------------------------------------------------------------------
# Generated pages


PLACEHOLDER = """\
# {title}

```{{warning}}
**Not written yet.** `{source}` does not exist in this checkout, so this page is a placeholder
that `tools/build_book.py --allow-missing` wrote for a development build. The real book build
(without `--allow-missing`) fails instead of showing this page.
```
"""


def write_lesson_placeholder(lesson: Lesson) -> Path:
    """A marked placeholder page at the lesson's place in the TOC (development builds only)."""
    path = LESSONS / f"{lesson.stem}.md"
    path.write_text(PLACEHOLDER.format(title=f"Workshop {lesson.number} · {lesson.title}",
                                       source=lesson.source.relative_to(ROOT)))
    return path


MODE_WORDS = {"events": "timed with CUDA events", "graph": "timed with CUDA-graph replay"}


def figure_caption(png: Path) -> str:
    """The caption of a results figure: `<name>.txt` beside it if present, else from its name.

    `python -m benchmarks report` names figures `<workshop>_<plot>_<mode>.png`, e.g.
    `split_softmax_bandwidth_graph.png` -> "Bandwidth, timed with CUDA-graph replay".
    """
    sidecar = png.with_suffix(".txt")
    if sidecar.exists():
        text = " ".join(sidecar.read_text().split())
        if text:
            return text
    stem = png.stem
    owner = next((lesson.id for lesson in LESSON_LIST if stem.startswith(lesson.id + "_")), None)
    if owner:
        stem = stem[len(owner) + 1:]
    words, _, mode = stem.rpartition("_")
    if words and mode in MODE_WORDS:
        return f"{words.replace('_', ' ').capitalize()}, {MODE_WORDS[mode]}."
    return stem.replace("_", " ").replace("-", " ").capitalize() + "."


def write_results_page(figures_dir: Path = FIGURES, out: Path | None = None) -> Path:
    """book/_generated/results.md: every figure the benchmark report wrote, grouped by workshop.

    With no figure yet the page says so ("no GPU evidence yet") instead of breaking the build.
    Image paths are relative to book/results.md, the page that includes this file.
    """
    out = out or GENERATED / "results.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    pngs = sorted(figures_dir.glob("*.png")) if figures_dir.is_dir() else []
    lines = ["<!-- generated by tools/build_book.py from book/figures/*.png: do not edit -->", ""]
    if not pngs:
        lines += ["```{note}",
                  "**No GPU evidence yet.** No benchmark figure exists in `book/figures/`. The",
                  "figures appear here once benchmarks have been run on a GPU and",
                  "`python -m benchmarks report` has drawn them from the saved results.",
                  "```", ""]
        out.write_text("\n".join(lines))
        return out
    groups: dict[str, list[Path]] = {}
    for png in pngs:
        owner = next((lesson for lesson in LESSON_LIST if png.stem.startswith(lesson.id + "_")), None)
        groups.setdefault(owner.title if owner else "Other figures", []).append(png)
    order = [lesson.title for lesson in LESSON_LIST] + ["Other figures"]
    for title in sorted(groups, key=order.index):
        lines += [f"## {title}", ""]
        for png in groups[title]:
            caption = figure_caption(png)
            rel = os.path.relpath(png, BOOK).replace(os.sep, "/")
            lines += [f"```{{figure}} {rel}", f":alt: {caption}", ":width: 100%", "",
                      caption, "```", ""]
    out.write_text("\n".join(lines))
    return out


def prepare_pages(lessons_status: dict[str, str], allow_missing: bool) -> Path | None:
    """Write the generated pages; return a replacement TOC path if one is needed, else None."""
    GENERATED.mkdir(parents=True, exist_ok=True)
    write_results_page()
    for lesson in LESSON_LIST:
        placeholder = LESSONS / f"{lesson.stem}.md"
        executed = LESSONS / f"{lesson.stem}.ipynb"
        if lessons_status.get(lesson.id) == "missing":
            executed.unlink(missing_ok=True)
            write_lesson_placeholder(lesson)
        else:
            placeholder.unlink(missing_ok=True)  # two files for one page is a Sphinx error
    if VALIDATION_REPORT.exists():
        return None
    if not allow_missing:
        raise BookError("validation_report.md does not exist at the repository root; the book's "
                        "last page includes it (write it, or use --allow-missing for a draft build)")
    # The real page includes ../validation_report.md; a draft build swaps in a placeholder page
    # that carries the same label, so links to it still resolve.
    page = GENERATED / "validation_report.md"
    page.write_text("(validation-report)=\n" + PLACEHOLDER.format(
        title="Validation report", source="validation_report.md"))
    toc = (ROOT / "_toc.yml").read_text()
    toc = toc.replace("file: book/validation_report\n", "file: book/_generated/validation_report\n")
    alt = ROOT / "build" / "book" / "_toc.draft.yml"
    alt.parent.mkdir(parents=True, exist_ok=True)
    alt.write_text(toc)
    return alt


def _mathjax_complete() -> bool:
    fonts = list((MATHJAX / "output" / "chtml" / "fonts" / "woff-v2").glob("*.woff"))
    return bool(fonts) and all((MATHJAX / name).exists() for name in MATHJAX_FILES)


def check_mathjax(log=print) -> None:
    """The bundled MathJax must be there; fetch it once from npm if it is not (a fresh clone
    where the bundle is not committed), else say how to get it."""
    if _mathjax_complete():
        return
    log(f"MathJax is not bundled in {MATHJAX.relative_to(ROOT)}: fetching mathjax@{MATHJAX_VERSION} with npm")
    try:
        vendor_mathjax()
    except (BookError, OSError, subprocess.CalledProcessError) as error:
        raise BookError(f"the bundled MathJax is missing from {MATHJAX.relative_to(ROOT)} and could "
                        f"not be fetched ({error}); run `python tools/build_book.py --vendor-mathjax` "
                        "on a machine with npm and the npm registry") from error
    if not _mathjax_complete():
        raise BookError(f"fetching MathJax did not complete {MATHJAX.relative_to(ROOT)}")


def vendor_mathjax(version: str = MATHJAX_VERSION) -> None:
    """Fetch MathJax from the npm registry (`npm pack`) and keep only what the site loads."""
    npm = shutil.which("npm")
    if not npm:
        raise BookError("npm is needed to fetch MathJax (the bundle is committed; this only refreshes it)")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([npm, "pack", f"mathjax@{version}", "--silent"], cwd=tmp, check=True,
                       stdout=subprocess.DEVNULL)
        tarball = next(Path(tmp).glob("mathjax-*.tgz"))
        with tarfile.open(tarball) as archive:
            archive.extractall(tmp, filter="data")
        package = Path(tmp) / "package"
        if MATHJAX.exists():
            shutil.rmtree(MATHJAX)
        (MATHJAX / "output" / "chtml" / "fonts" / "woff-v2").mkdir(parents=True)
        keep = [Path(name) for name in MATHJAX_FILES]
        keep += [p.relative_to(package / "es5") for p in
                 sorted((package / "es5" / "output" / "chtml" / "fonts" / "woff-v2").glob("*.woff"))]
        for rel in keep:
            shutil.copy(package / "es5" / rel, MATHJAX / rel)
        shutil.copy(package / "LICENSE", MATHJAX / "LICENSE")
        sums = "\n".join(f"    {_sha256(MATHJAX / rel)}  {rel.as_posix()}" for rel in keep)
        (MATHJAX / "README.md").write_text(
            f"# MathJax {version}, bundled\n\nThe book typesets math offline with these files from\n"
            f"the npm package `mathjax@{version}` (`es5/`; Apache License 2.0, see LICENSE).\n"
            "Refresh with `python tools/build_book.py --vendor-mathjax`. sha256:\n\n" + sums + "\n")


# ---------------------------------------------------------------------------------------------
# Render


def render(path_output: Path = DEFAULT_OUTPUT, toc: Path | None = None, strict: bool = True,
           log=print) -> Path:
    """Run jupyter-book on the repository root; return the folder of the HTML site."""
    executable = Path(sys.executable).with_name("jupyter-book")
    command = [str(executable) if executable.exists() else "jupyter-book", "build", str(ROOT),
               "--all", "--builder", "html"]
    if path_output != ROOT:
        command += ["--path-output", str(path_output)]
    if toc is not None:
        command += ["--toc", str(toc)]
    if strict:
        command += ["-W", "--keep-going"]
    html_dir = Path(path_output) / "_build" / "html"
    if html_dir.exists():
        shutil.rmtree(html_dir)  # no stale page from an earlier build may survive into this one
    log("rendering: " + " ".join(command[1:]))
    start = time.perf_counter()
    env = dict(os.environ, NO_COLOR="1")
    completed = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, timeout=900, env=env)
    output = re.sub(r"\x1b\[[0-9;]*m", "", completed.stdout)  # plain text in our message
    warnings = [line for line in output.splitlines()
                if "WARNING" in line or "ERROR" in line or "CRITICAL" in line]
    if completed.returncode != 0 or not (html_dir / "index.html").exists():
        raise BookError("jupyter-book build failed (warnings are errors):\n"
                        + "\n".join(warnings or output.splitlines()[-40:]))
    log(f"rendered in {time.perf_counter() - start:.1f} s: {html_dir}/index.html")
    return html_dir


# ---------------------------------------------------------------------------------------------
# Check the built site (no browser needed; tests/test_site.py checks the rest in Chromium)


class _PageParser(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []  # <a href>: navigated, must resolve
        self.loads: list[tuple[str, str]] = []  # (tag, url): fetched when the page loads
        self.text: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        for key in ("id", "name"):
            if attributes.get(key) and (key == "id" or tag == "a"):
                self.ids.add(attributes[key])
        if tag == "a" and attributes.get("href") is not None:
            self.links.append(attributes["href"])
        if tag in ("img", "script", "iframe", "source", "video", "audio", "embed") and attributes.get("src"):
            self.loads.append((tag, attributes["src"]))
        if tag == "link" and attributes.get("href"):
            self.loads.append((f"link rel={attributes.get('rel')}", attributes["href"]))
        if tag in ("script", "style"):
            self._skip += 1

    def handle_endtag(self, tag):
        if tag in ("script", "style") and self._skip:
            self._skip -= 1

    def handle_data(self, data):
        if not self._skip:
            self.text.append(data)


def site_pages(html_dir: str | Path) -> list[Path]:
    """Every HTML page of the site (not the theme's template fragments under _static/)."""
    html_dir = Path(html_dir)
    return [p for p in sorted(html_dir.rglob("*.html"))
            if not {"_static", "_sources", "_images"} & set(p.relative_to(html_dir).parts[:-1])]


def _is_external(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.scheme and parts.scheme not in ("file",)) or url.startswith("//")


@dataclass
class SiteReport:
    pages: int = 0
    links_checked: int = 0
    anchors_checked: int = 0
    problems: list[str] = field(default_factory=list)


def parse_page(path: Path) -> _PageParser:
    parser = _PageParser()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    return parser


def check_site(html_dir: str | Path) -> SiteReport:
    """Static checks of the built HTML: internal links and anchors, remote loads, solution code.

    Internal means no scheme: every such href must name an existing file, and its #fragment an
    element id on that page. We check this ourselves instead of running Sphinx's `linkcheck`,
    which would also try to reach the external hosts (none are reachable offline, and whether
    github.com answers says nothing about this book).
    """
    html_dir = Path(html_dir)
    report = SiteReport()
    pages = {p.resolve(): parse_page(p) for p in site_pages(html_dir)}
    report.pages = len(pages)
    for path, page in pages.items():
        rel = path.relative_to(html_dir.resolve())
        for tag, url in page.loads:
            if _is_external(url) and not url.startswith(("data:",)):
                report.problems.append(f"{rel}: <{tag}> loads {url} from another host")
            elif not _is_external(url):
                target = (path.parent / unquote(urlsplit(url).path)).resolve()
                if urlsplit(url).path and not target.exists():
                    report.problems.append(f"{rel}: <{tag}> loads {url}, which does not exist")
        for url in page.links:
            if _is_external(url) or url.startswith(("mailto:", "javascript:")):
                continue
            parts = urlsplit(url)
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            report.links_checked += 1
            if not target.exists():
                report.problems.append(f"{rel}: link {url} points to a missing file")
                continue
            if target.is_dir():
                target = target / "index.html"
            if parts.fragment and target.suffix == ".html":
                report.anchors_checked += 1
                ids = pages[target].ids if target in pages else parse_page(target).ids
                if unquote(parts.fragment) not in ids:
                    report.problems.append(f"{rel}: link {url}: no anchor #{parts.fragment} on "
                                           f"{target.relative_to(html_dir.resolve())}")
    remote_css = re.compile(r"(?:@import\s+|url\()\s*['\"]?((?:https?:)?//[^'\")\s]+)")
    for css in sorted(html_dir.rglob("*.css")):
        for match in remote_css.finditer(css.read_text(errors="replace")):
            report.problems.append(f"{css.relative_to(html_dir)}: loads {match.group(1)} from another host")
    report.problems += [f"solution code on the site: {p}" for p in find_solution_code(html_dir, pages)]
    return report


def solution_blocks(min_length: int = 40) -> dict[str, list[str]]:
    """The solution text of each exercise region of the references, whitespace-normalised.

    A region's solution is everything between its instruction comments (which the starter
    keeps, so they are public) and `# END EXERCISE`. Regions shorter than `min_length`
    characters (`mask = offsets < n`) are too generic to be evidence and are skipped.
    """
    begin = re.compile(r"^\s*# EXERCISE ")
    end = re.compile(r"^\s*# END EXERCISE\s*$")
    found: dict[str, list[str]] = {}
    for module in sorted((ROOT / "references").glob("*.py")):
        blocks, region, instructions = [], None, False
        for line in module.read_text().splitlines():
            if begin.match(line):
                region, instructions = [], True
            elif end.match(line) and region is not None:
                text = " ".join(" ".join(region).split())
                if len(text) >= min_length:
                    blocks.append(text)
                region = None
            elif region is not None:
                if instructions and line.strip().startswith("#"):
                    continue  # instruction lines, kept in the starter
                instructions = False
                region.append(line)
        if blocks:
            found[module.name] = blocks
    return found


def find_solution_code(html_dir: Path, pages: dict | None = None) -> list[str]:
    """Pages that show a reference's solution: an exercise region's code, or its markers."""
    html_dir = Path(html_dir).resolve()
    pages = pages or {p.resolve(): parse_page(p) for p in site_pages(html_dir)}
    blocks = solution_blocks()
    hits = []
    for path, page in pages.items():
        text = " ".join("".join(page.text).split())
        rel = path.relative_to(html_dir)
        for module, found in blocks.items():
            for block in found:
                if block in text:
                    hits.append(f"{rel} shows an exercise solution of references/{module}: "
                                f"{block[:80]!r}...")
        # A lesson printing a reference module's source would show its exercise markers.
        if rel.parts[:2] == ("book", "lessons") and "# END EXERCISE" in text:
            hits.append(f"{rel} shows reference source (an '# END EXERCISE' marker)")
    return hits


# ---------------------------------------------------------------------------------------------
# The whole build


@dataclass
class Build:
    html_dir: Path
    executions: list[Execution]
    site: SiteReport
    seconds: float
    # Pages of _toc.yml that a draft build (--allow-missing) replaced: docname -> placeholder
    replaced: dict[str, str] = field(default_factory=dict)

    def page(self, docname: str) -> str:
        """Where the page of `docname` (as named in _toc.yml) is in this build."""
        return self.replaced.get(docname, docname)

    def missing(self) -> list[str]:
        """What this build shows as a placeholder because it is not written yet."""
        return ([f"{e.lesson.source.relative_to(ROOT)}" for e in self.executions if e.status == "missing"]
                + (["validation_report.md"] if self.replaced else []))


def build(ids=None, *, skip_execute: bool = False, allow_missing: bool = False, jobs: int = 2,
          timeout: float = DEFAULT_TIMEOUT, reuse: bool = False, path_output: Path = DEFAULT_OUTPUT,
          log=print) -> Build:
    """Execute (or reuse) the lessons, write the generated pages, render, check the site.

    `ids` limits execution to these lessons; the other lessons reuse their executed copies in
    book/lessons/ (an error if there is none, unless `allow_missing`). `reuse` skips lessons
    whose executed copy is up to date (see `_stamp`).
    """
    start = time.perf_counter()
    check_mathjax(log)
    LESSONS.mkdir(parents=True, exist_ok=True)
    selected = set() if skip_execute else {lesson.id for lesson in select_lessons(ids)}
    executions = execute_lessons(LESSONS, SITE_IMPL, sorted(selected), jobs, timeout=timeout,
                                 reuse=reuse, allow_missing=allow_missing, log=log) if selected else []
    status = {e.lesson.id: e.status for e in executions}
    problems = []
    for lesson in LESSON_LIST:
        if lesson.id in status:
            continue
        copy = LESSONS / f"{lesson.stem}.ipynb"
        if copy.exists():
            status[lesson.id] = "reused"
            executions.append(Execution(lesson, copy, "reused"))
            if lesson.source.exists() and lesson.source.stat().st_mtime > copy.stat().st_mtime:
                log(f"  note: {copy.relative_to(ROOT)} is older than {lesson.source.relative_to(ROOT)}")
        else:
            status[lesson.id] = "missing"
            executions.append(Execution(lesson, copy, "missing", error="no executed copy"))
            problems.append(f"{lesson.stem}: no executed copy in book/lessons/ "
                            + ("(the notebook is not written yet)" if not lesson.source.exists()
                               else "(run without --skip-execute, or name it in --only)"))
    if problems and not allow_missing:
        raise BookError("missing lessons:\n" + "\n".join(f"- {p}" for p in problems))
    for execution in executions:
        if execution.status == "missing":
            log(f"  SKIPPED {execution.lesson.stem}: {execution.error}; the page is a placeholder")
    toc = prepare_pages(status, allow_missing)
    if toc is not None:
        log("  SKIPPED validation_report.md: not written yet; the page is a placeholder")
    html_dir = render(path_output, toc, strict=True, log=log)
    site = check_site(html_dir)
    if site.problems:
        raise BookError("the built site has problems:\n" + "\n".join(f"- {p}" for p in site.problems))
    log(f"site checked: {site.pages} pages, {site.links_checked} internal links, "
        f"{site.anchors_checked} anchors, no remote loads, no solution code")
    replaced = {"book/validation_report": "book/_generated/validation_report"} if toc else {}
    return Build(html_dir, executions, site, time.perf_counter() - start, replaced)


# While workshops are still being written, the test build (tests/test_book.py, tests/test_site.py)
# puts placeholders where a lesson or the validation report is missing, and the tests that need
# them skip with the list. Set this to False once all seven notebooks and validation_report.md
# exist: from then on a missing one fails the build test.
TESTS_ALLOW_MISSING = False
TEST_OUTPUT = ROOT / "build" / "book"  # the test build's site: build/book/_build/html
_test_build: Build | BaseException | None = None


def build_for_tests() -> Build:
    """The book built once per test run, for every test that needs the site.

    Lessons whose executed copy is up to date are reused (see `_stamp`), so a test run right
    after `python tools/build_book.py` only renders. Under pytest-xdist the workers of one run
    share one build: the first builds under a file lock and records the run's id, the others
    wait for the lock and reuse it. A failed build is remembered and raised again, so a second
    test file does not rebuild a broken book.
    """
    global _test_build
    if _test_build is None:
        try:
            _test_build = _build_once_per_run()
        except BaseException as error:  # noqa: BLE001  (re-raised for every caller)
            _test_build = error
    if isinstance(_test_build, BaseException):
        raise _test_build
    return _test_build


def _build_once_per_run() -> Build:
    TEST_OUTPUT.mkdir(parents=True, exist_ok=True)
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")  # the same in every worker of one run
    marker = TEST_OUTPUT / "test_build.json"
    with open(TEST_OUTPUT / ".lock", "w") as lock:
        try:
            import fcntl
            fcntl.flock(lock, fcntl.LOCK_EX)
        except ImportError:  # no fcntl (Windows): no xdist sharing, each process builds
            pass
        if run_id and marker.exists():
            record = json.loads(marker.read_text())
            if record.get("run_id") == run_id:
                if record.get("error"):
                    raise BookError(record["error"])
                by_id = {lesson.id: lesson for lesson in LESSON_LIST}
                executions = [Execution(by_id[e["id"]], Path(e["output"]), e["status"], e["seconds"],
                                        e["error"]) for e in record["executions"]]
                return Build(Path(record["html_dir"]), executions,
                             SiteReport(**record["site"]), record["seconds"], record["replaced"])
        try:
            result = build(allow_missing=TESTS_ALLOW_MISSING, reuse=True, path_output=TEST_OUTPUT)
        except BookError as error:
            marker.write_text(json.dumps({"run_id": run_id, "error": str(error)}))
            raise
        marker.write_text(json.dumps({
            "run_id": run_id, "html_dir": str(result.html_dir), "seconds": result.seconds,
            "replaced": result.replaced,
            "site": {"pages": result.site.pages, "links_checked": result.site.links_checked,
                     "anchors_checked": result.site.anchors_checked, "problems": result.site.problems},
            "executions": [{"id": e.lesson.id, "output": str(e.output), "status": e.status,
                            "seconds": e.seconds, "error": e.error} for e in result.executions]}))
        return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", metavar="ID", help="execute only these lessons")
    parser.add_argument("--skip-execute", action="store_true",
                        help="execute nothing: reuse the executed copies in book/lessons/")
    parser.add_argument("--reuse", action="store_true",
                        help="skip lessons whose executed copy is up to date")
    parser.add_argument("--allow-missing", action="store_true",
                        help="a lesson or validation_report.md not written yet becomes a placeholder")
    parser.add_argument("--jobs", type=int, default=2, help="notebooks executed in parallel (2)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help=f"seconds per notebook ({DEFAULT_TIMEOUT})")
    parser.add_argument("--path-output", type=Path, default=DEFAULT_OUTPUT,
                        help="the site goes to PATH/_build/html (default: the repository root)")
    parser.add_argument("--vendor-mathjax", action="store_true",
                        help=f"refresh book/_static/mathjax from npm (mathjax@{MATHJAX_VERSION}) and exit")
    args = parser.parse_args(argv)
    try:
        if args.vendor_mathjax:
            vendor_mathjax()
            print(f"MathJax {MATHJAX_VERSION} bundled in {MATHJAX.relative_to(ROOT)}")
            return 0
        result = build(args.only, skip_execute=args.skip_execute, allow_missing=args.allow_missing,
                       jobs=args.jobs, timeout=args.timeout, reuse=args.reuse,
                       path_output=args.path_output.resolve())
    except BookError as error:
        print(f"build_book: {error}", file=sys.stderr)
        return 1
    print(f"book built in {result.seconds:.0f} s: open {result.html_dir / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
