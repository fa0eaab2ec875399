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

Nothing here raises into the notebook because of learner code: a crash is a FAIL row.
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


def load(workshop: str, impl: str = "kernels"):
    """Import (again, picking up your edits) the workshop module of `impl`."""
    implementation = loader.resolve(impl)
    loader.reload_all(implementation)
    return loader.load(workshop, implementation)


def ready(workshop: str, impl: str, *names: str) -> bool:
    """True when no TODO line is left for `names` (the names in TODO(...) tags; a dotted name
    such as "strided_softmax.softmax" is another workshop's module); else print the open TODOs
    and return False, so that the cell skips what cannot run yet."""
    todo = loader.unfilled_exercises(workshop, loader.resolve(impl), names)
    if todo:
        print("Not ready yet, this part is skipped: fill in " + "; ".join(todo))
    return not todo


def explain(exc: BaseException) -> None:
    """Print what a finished exercise raised, pointing at the innermost line of your code (the
    check cell at the end of the lesson runs the full checks, with hints)."""
    from checks.context import describe_exception

    print(f"Your code raised {describe_exception(exc)}")


def check(workshop: str, impl: str = "kernels", *, device: str = "auto", only: str | None = None,
          expect_all_pass: bool = False, seed: int | None = None):
    """Run the workshop's checks and display them as a table; return the results.

    With `expect_all_pass=True` (papermill runs of the references) any outcome other than PASS
    or UNAVAILABLE raises, so a headless run fails loudly.
    """
    implementation = loader.resolve(impl)
    loader.reload_all(implementation)
    the_run = runner.run([workshop], impl=impl, device=device, only=only, seed=seed)
    _display(the_run)
    if expect_all_pass:
        bad = [r for r in the_run.results if r.outcome not in ("PASS", "UNAVAILABLE")]
        if bad:
            raise AssertionError(f"{len(bad)} check(s) did not pass: "
                                 + "; ".join(f"{r.check} [{r.case_label}] {r.outcome}" for r in bad[:5]))
    return the_run.results


def _display(the_run) -> None:
    try:
        from IPython.display import HTML, display
    except ImportError:
        print(report.text_table(the_run))
        return
    display(HTML(report.html_table(the_run.results, the_run.header)))
