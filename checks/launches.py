"""Counting Triton kernel launches, without trusting the implementation to report them.

Every `kernel[grid](...)` launch, compiled or interpreted, autotuned or not, goes through
`triton.runtime.jit.KernelInterface.__getitem__`. We wrap it once so that every launch made
inside a `counting()` block is recorded with the kernel's name, and every launch made inside a
`recording()` block with its name, grid and plain arguments (see `Launch`). While a launch
runs, `inside_launch()` is true on its thread: what Triton itself allocates then (the
interpreter's host copies of every tensor argument) is not the implementation's allocation.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field

_state = threading.local()
_installed = False


@dataclass
class Launch:
    """One kernel launch seen by `recording()`.

    name: the kernel's name. grid: the grid as a tuple of ints, or None when it was a callable.
    arguments: the launch's arguments by parameter name (positional ones named through the
    kernel's signature where Triton exposes it, keyword ones such as constexprs and
    num_warps by their keyword), keeping only plain values (bool, int, float, str, None): tensors
    are not kept alive.
    """

    name: str
    grid: tuple | None
    arguments: dict = field(default_factory=dict)


_PLAIN = (bool, int, float, str, type(None))


def _kernel_name(kernel) -> str:
    return getattr(kernel, "__name__", None) or getattr(getattr(kernel, "fn", None), "__name__",
                                                        "?")


def _launch(kernel, grid, args, kwargs) -> Launch:
    names = getattr(kernel, "arg_names", None) or getattr(getattr(kernel, "fn", None),
                                                          "arg_names", None) or []
    arguments = {}
    for name, value in zip(names, args):
        if isinstance(value, _PLAIN):
            arguments[name] = value
    for name, value in kwargs.items():
        if isinstance(value, _PLAIN):
            arguments[name] = value
    shown = None
    if isinstance(grid, (tuple, list)) and all(isinstance(g, int) for g in grid):
        shown = tuple(grid)
    return Launch(_kernel_name(kernel), shown, arguments)


def install() -> None:
    """Wrap the launch (idempotent; a no-op before anything imported Triton). `counting()` and
    `recording()` call it; `inside_launch()` needs it called first."""
    global _installed
    if _installed:
        return
    import sys

    if "triton" not in sys.modules:
        return  # nothing has imported Triton, so nothing can launch a kernel (cpu tier)
    from triton.runtime.jit import KernelInterface

    original = KernelInterface.__getitem__

    def counted_getitem(self, grid):
        launch = original(self, grid)

        def run(*args, **kwargs):
            log = getattr(_state, "log", None)
            if log is not None:
                log.append(_kernel_name(self))
            records = getattr(_state, "records", None)
            if records is not None:
                records.append(_launch(self, grid, args, kwargs))
            _state.depth = getattr(_state, "depth", 0) + 1
            try:
                return launch(*args, **kwargs)
            finally:
                _state.depth -= 1

        return run

    KernelInterface.__getitem__ = counted_getitem
    _installed = True


def inside_launch() -> bool:
    """True while a kernel launch (`kernel[grid](...)`) runs on this thread: Triton's own work,
    such as the interpreter copying each tensor argument to host memory and back."""
    return getattr(_state, "depth", 0) > 0


@contextlib.contextmanager
def counting():
    """Yield a list that receives the name of every kernel launched inside the block."""
    install()
    previous = getattr(_state, "log", None)
    log: list[str] = []
    _state.log = log
    try:
        yield log
    finally:
        _state.log = previous
        if previous is not None:
            previous.extend(log)


@contextlib.contextmanager
def recording():
    """Yield a list that receives a `Launch` (name, grid, plain arguments by name) for every
    kernel launched inside the block. Nests like `counting()`, and both can be open at once."""
    install()
    previous = getattr(_state, "records", None)
    records: list[Launch] = []
    _state.records = records
    try:
        yield records
    finally:
        _state.records = previous
        if previous is not None:
            previous.extend(records)


def ignored_knob(launched: list[Launch], knobs: dict, arguments: dict,
                 launch_options: tuple = ()) -> tuple | None:
    """The first knob of a call that a launch did not receive, as (knob, wanted, launch, shown),
    or None. Right values cannot show a knob that did nothing (every block size computes the
    same result); the launch record can.

    arguments: each knob's kernel argument (block_m -> BLOCK_M). A kernel without that argument
    is not compared (a learner's kernel may name it differently), except for the names in
    launch_options (num_warps, num_stages: every launch takes them, and one left out ran with
    Triton's default). Knobs given as None are the callee's to choose."""
    for knob, wanted in knobs.items():
        argument = arguments.get(knob)
        if argument is None or wanted is None:
            continue
        for launch in launched:
            if argument in launch.arguments:
                got = launch.arguments[argument]
                shown = f"{argument}={got!r}"
            elif argument in launch_options:
                got, shown = None, f"{argument} left to Triton's default"
            else:
                continue
            if got != wanted:
                return knob, wanted, launch, shown
    return None
