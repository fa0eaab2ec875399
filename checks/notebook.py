"""What a lesson notebook calls: choose the device, import a kernel module, run the checks.

    from checks import notebook as lab
    DEVICE = lab.setup(DEVICE)                     # before any kernel module is imported
    foundations = lab.load("foundations", IMPL)    # IMPL: "kernels", "references" or a path
    lab.check("foundations", IMPL)                 # an HTML table of PASS/FAIL/TODO/UNAVAILABLE

A "try it" cell guards its calls so that an unfinished exercise says what to fill in, and a
finished one that fails says how (not "not ready"):

    if lab.ready("foundations", IMPL, "add"):      # False, with the open TODOs printed
        try:
            ...
        except Exception as exc:
            lab.explain(exc)                       # the error and its line in your file

Nothing here raises a traceback of ours into the notebook because of learner code: a crash is
a FAIL row, and a file that does not import is one message naming its line.
"""

from __future__ import annotations

from checks import device as devices
from checks import loader, report, runner


def setup(device: str = "auto") -> str:
    """Pick "cuda" or "interpreter" and set TRITON_INTERPRET; call before importing kernels."""
    chosen = devices.select(device)
    where = "a CUDA GPU" if chosen == "cuda" else "the CPU, under Triton's interpreter"
    print(f"Kernels will run on {where}.")
    return chosen


class NotLoaded(Exception):
    """Your module did not import. In a notebook it shows as its message alone: a traceback
    through the loader and importlib would hide the one line that matters, your file's."""

    def _render_traceback_(self) -> list[str]:  # IPython prints these lines, not a traceback
        return [f"{type(self).__name__}: {self}"]


class _Unimported:
    """Stands in for a module that did not import: every use raises `NotLoaded` with the reason,
    so later cells say what is wrong (not `NameError: name 'foundations' is not defined`)."""

    def __init__(self, reason: str):
        self._reason = reason

    def __getattr__(self, name: str):
        raise NotLoaded(self._reason)

    def __repr__(self) -> str:
        return f"<not imported: {self._reason}>"


_import_failures: dict[tuple[str, str], str] = {}  # (workshop, impl) -> why the last load failed


def load(workshop: str, impl: str = "kernels"):
    """Import (again, picking up your edits) the workshop module of `impl`.

    If your file does not import (a syntax error, a bad import), this returns a stand-in whose
    every use says why, pointing at your line, without a traceback; `ready` then says "not
    ready", so the try-it cells skip until the file imports."""
    from checks.context import describe_exception

    implementation = loader.resolve(impl)
    loader.reload_all(implementation)
    try:
        module = loader.load(workshop, implementation)
    except Exception as exc:  # learner code: report it, never raise a traceback of ours
        reason = (f"{loader.display_path(implementation.module_path(workshop))} does not import: "
                  f"{describe_exception(exc)}; fix it, then run the cell with "
                  f"lab.load({workshop!r}, ...) again")
        _import_failures[(workshop, str(impl))] = reason
        return _Unimported(reason)  # its first use shows the reason (printing it too would repeat it)
    _import_failures.pop((workshop, str(impl)), None)
    return module


def ready(workshop: str, impl: str, *names: str) -> bool:
    """True when no TODO line is left for `names` (the names in TODO(...) tags; a dotted name
    such as "strided_softmax.softmax" is another workshop's module); else print the open TODOs
    and return False, so that the cell skips what cannot run yet."""
    failure = _import_failures.get((workshop, str(impl)))
    if failure:
        print(f"Not ready yet, this part is skipped: {failure}")
        return False
    todo = pending(workshop, impl, *names)
    if todo:
        print("Not ready yet, this part is skipped: fill in " + "; ".join(todo))
    return not todo


def pending(workshop: str, impl: str, *names: str) -> list[str]:
    """The TODO lines still open for `names`, which `ready` prints: for a cell that runs what is
    written and says what the rest waits for."""
    return loader.unfilled_exercises(workshop, loader.resolve(impl), names)


def explain(exc: BaseException) -> None:
    """Print what a finished exercise raised, pointing at the innermost line of your code (the
    check cell at the end of the lesson runs the full checks, with hints)."""
    from checks.context import describe_exception

    print(f"Your code raised {describe_exception(exc)}")


def check(workshop: str, impl: str = "kernels", *, device: str = "auto", only: str | None = None,
          expect_all_pass: bool = False, seed: int | None = None, verbose: bool = False):
    """Run the workshop's checks and display them as a table; return the results.

    The table folds a check's PASS rows into one and lists its FAILs that share a hint on one
    line under the first (as `python -m checks run` does); `verbose=True` shows every case.

    With `expect_all_pass=True` (papermill runs of the references) any outcome other than PASS
    or UNAVAILABLE raises, so a headless run fails loudly.
    """
    implementation = loader.resolve(impl)
    loader.reload_all(implementation)
    the_run = runner.run([workshop], impl=impl, device=device, only=only, seed=seed)
    _display(the_run, verbose)
    if expect_all_pass:
        bad = [r for r in the_run.results if r.outcome not in ("PASS", "UNAVAILABLE")]
        if bad:
            raise AssertionError(f"{len(bad)} check(s) did not pass: "
                                 + "; ".join(f"{r.check} [{r.case_label}] {r.outcome}" for r in bad[:5]))
    return the_run.results


def _display(the_run, verbose: bool = False) -> None:
    try:
        from IPython.display import HTML, display
    except ImportError:
        print(report.text_table(the_run, verbose=verbose))
        return
    display(HTML(report.html_table(the_run.results, the_run.header, verbose=verbose)))
