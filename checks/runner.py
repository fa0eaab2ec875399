"""Running checks: one Result per (check, case), whatever the implementation does.

The runner never crashes because of learner code: an exception is a FAIL carrying it, a hang is
a FAIL after the time limit, an unfilled exercise is a TODO, a missing GPU or Triton is
UNAVAILABLE with the reason.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from checks import catalog, loader, provenance
from checks.core import (
    FAIL,
    PASS,
    TODO,
    UNAVAILABLE,
    Check,
    CheckFailed,
    ExercisePending,
    Result,
    Unavailable,
    checks_for,
)

current: Run | None = None  # the run in progress, if any
DEFAULT_TIMEOUT = 300.0  # seconds per (check, case); --timeout or CHECKS_TIMEOUT change it


@dataclass
class Run:
    header: dict
    results: list[Result] = field(default_factory=list)
    order: list[int] = field(default_factory=list)  # each result's place in the unsharded run

    def counts(self) -> dict[tuple[str, str], int]:
        out: dict[tuple[str, str], int] = {}
        for r in self.results:
            out[(r.tier, r.outcome)] = out.get((r.tier, r.outcome), 0) + 1
        return out

    @property
    def failed(self) -> bool:
        return any(r.outcome == FAIL for r in self.results)


def default_seed() -> int:
    env = os.environ.get("CHECKS_SEED")
    return int(env) if env else secrets.randbelow(2**31)


def default_timeout() -> float:
    return float(os.environ.get("CHECKS_TIMEOUT", DEFAULT_TIMEOUT))


def run(workshops: list[str] | None = None, impl: str = "kernels", device: str = "auto",
        seed: int | None = None, timeout: float | None = None, only: str | None = None,
        progress: Callable[[Result], None] | None = None,
        shard: tuple[int, int] | None = None, stop_at_hint: str | None = None) -> Run:
    """Run the checks of `workshops` (all by default) against implementation `impl`.

    `device` is resolved first (auto/cuda/interpreter), before any kernel module is imported.
    `only` keeps the checks whose id contains that text. `shard=(i, n)` runs every n-th
    (check, case) pair from the i-th on, so that n processes given the same seed split one run
    between them (a case's inputs depend on the seed and its own name only); `Run.order` keeps
    each result's place in the whole run, for `merge`. `stop_at_hint` ends the run at the first
    FAIL whose hint contains that text: the bug zoo asks only whether one such FAIL exists, and
    the cases after it cannot change that answer (they only cost compile time, most of a mutant's
    run on a GPU). The header then says `stopped_at_hint`.
    """
    from checks import device as devices

    run_device = devices.select(device)
    implementation = loader.resolve(impl)
    seed = default_seed() if seed is None else seed
    timeout = default_timeout() if timeout is None else timeout
    workshops = list(workshops or catalog.WORKSHOP_IDS)
    for w in workshops:
        catalog.get(w)
    the_run = Run(header=provenance.header(run_device, implementation.label,
                                           _sources(workshops, implementation)))
    the_run.header["seed"] = seed
    if shard is not None:
        the_run.header["shard"] = f"{shard[0]}/{shard[1]}"
    unit = -1  # the (check, case) pairs of the whole run, counted for sharding
    global current
    current = the_run  # what a SIGTERM handler can still save (see __main__)
    for workshop in workshops:
        module, import_error = _import(workshop, implementation)
        for check in checks_for(workshop):
            if only and only not in check.id:
                continue
            tier_device = "cpu" if check.tier == "cpu" else run_device
            cases = check.cases_for(tier_device)
            gpu_cases = 0
            if check.tier == "cuda" and tier_device != "cuda" and len(cases) > 1:
                # Off the GPU a cuda-tier check reports once, not once per case.
                gpu_cases, cases = len(cases), cases[:1]
            for case in cases:
                unit += 1
                if shard is not None and unit % shard[1] != shard[0]:
                    continue
                the_run.order.append(unit)
                result = _run_one(check, case, module, import_error, implementation,
                                  tier_device, seed, timeout)
                if gpu_cases and result.outcome in (UNAVAILABLE, TODO):
                    result.message += f" ({gpu_cases} cases on a GPU; this row stands for all)"
                the_run.results.append(result)
                if progress:
                    progress(result)
                if stop_at_hint and result.outcome == FAIL and stop_at_hint in (result.hint or ""):
                    the_run.header["stopped_at_hint"] = stop_at_hint
                    return the_run
    return the_run


def _import(workshop: str, implementation: loader.Implementation):
    try:
        return loader.load(workshop, implementation), None
    except Exception as exc:  # noqa: BLE001 - a learner file may fail to import in any way
        from checks.context import describe_exception

        return None, describe_exception(exc)


def _run_one(check: Check, case, module, import_error, implementation, device, seed,
             timeout) -> Result:
    result = Result(check.workshop, check.id, case.to_json(), check.tier, device, PASS)
    started = time.perf_counter()
    try:
        todos = loader.unfilled_exercises(check.workshop, implementation, check.uses)
        if todos:
            result.outcome = TODO
            result.message = _todo_message(todos) + _other_workshops(check, implementation, todos)
        elif check.tier == "cuda" and device != "cuda":
            result.outcome = UNAVAILABLE
            result.message = "needs a CUDA GPU; this run uses the Triton CPU interpreter"
        elif check.tier != "cpu" and not _triton_available():
            result.outcome = UNAVAILABLE
            result.message = "Triton is not installed (pip install triton)"
        elif check.uses and module is None:
            result.outcome = FAIL
            result.message = f"could not import {implementation.label} for {check.workshop}: {import_error}"
            result.hint = "fix the error above so the module imports"
        else:
            _execute(check, case, module, implementation, device, seed, timeout, result)
    except ExercisePending as exc:
        result.outcome = TODO
        result.message = f"this case runs {exc.runs}: {_todo_message(exc.todos)}"
    except Unavailable as exc:
        result.outcome, result.message = UNAVAILABLE, str(exc)
    except CheckFailed as exc:
        result.outcome, result.message, result.hint = FAIL, exc.message, exc.hint
        result.max_error = exc.max_error if exc.max_error is not None else result.max_error
        result.tolerance = exc.tolerance if exc.tolerance is not None else result.tolerance
    except TimeoutError as exc:
        result.outcome = FAIL
        result.message = str(exc)
        result.hint = "hang: a loop that never ends (check its bounds and step), or a far too large grid"
    except Exception as exc:  # noqa: BLE001 - a crash anywhere is a FAIL, never a runner crash
        from checks.context import describe_exception

        result.outcome = FAIL
        result.message = f"raised {describe_exception(exc)}"
    result.seconds = time.perf_counter() - started
    return result


def _other_workshops(check: Check, implementation, todos: list[str]) -> str:
    """Why a check points into another workshop's file: it runs that file's code too (softmax
    backward's Softmax.forward is workshop 1's softmax)."""
    own = loader.display_path(implementation.module_path(check.workshop))
    others = sorted({t.rsplit(":", 1)[0] for t in todos} - {own})
    said = []
    for path in others:
        stem = Path(path).stem
        if stem in catalog.WORKSHOP_IDS:
            said.append(f"{path} is workshop {catalog.WORKSHOP_IDS.index(stem)}'s file "
                        f"({stem}), whose code this check runs too")
    return f"; {'; '.join(said)}" if said else ""


def _todo_message(todos: list[str]) -> str:
    return ("exercise not filled yet: " + ", ".join(todos) +
            " (write your code there, then delete the TODO line)")


def _execute(check, case, module, implementation, device, seed, timeout, result) -> None:
    from checks.context import CheckContext

    key = f"{check.full_id}:{case.label}"
    ctx = CheckContext(device, seed, key)
    ctx.unfilled = lambda names: loader.unfilled_exercises(check.workshop, implementation, names)
    limit = check.timeout or timeout
    try:
        with _time_limit(limit, f"{check.full_id} [{case.label}] did not finish within {limit:g} s"):
            check.fn(ctx, module, case)
    finally:
        result.max_error, result.tolerance = ctx.max_error, ctx.tolerance
        result.notes = list(ctx.notes)
        result.case = dict(result.case, seed=ctx.case_seed)  # failed rows keep their seed too


@contextlib.contextmanager
def _time_limit(seconds: float, message: str):
    """Raise TimeoutError in the running check after `seconds` (main thread, Unix only).

    A kernel stuck on a real GPU cannot be interrupted from Python; under the interpreter (a
    Python loop) and in CPU code this works.
    """
    usable = (seconds and seconds > 0 and hasattr(signal, "SIGALRM")
              and threading.current_thread() is threading.main_thread())
    if not usable:
        yield
        return

    def on_alarm(signum, frame):
        raise TimeoutError(message)

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _triton_available() -> bool:
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


def _sources(workshops, implementation) -> list:
    """The files whose sha256 a run's header records: the implementation under test and the
    checks that judged it (a changed check makes the old verdicts old too)."""
    files = []
    for workshop in workshops:
        files += [p for p in loader.source_files(workshop, implementation) if p.is_file()]
        check_module = Path(__file__).resolve().parent / f"{workshop}.py"
        if check_module.is_file():
            files.append(check_module)
    return files + list(provenance.SHARED_CHECK_SOURCES)
