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


def _install() -> None:
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


def install() -> None:
    """Wrap the launch now (idempotent; a no-op before anything imported Triton), so that
    `inside_launch()` works without a `counting()` or `recording()` block open."""
    _install()


def inside_launch() -> bool:
    """True while a kernel launch (`kernel[grid](...)`) runs on this thread: Triton's own work,
    such as the interpreter copying each tensor argument to host memory and back."""
    return getattr(_state, "depth", 0) > 0


@contextlib.contextmanager
def counting():
    """Yield a list that receives the name of every kernel launched inside the block."""
    _install()
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
    _install()
    previous = getattr(_state, "records", None)
    records: list[Launch] = []
    _state.records = records
    try:
        yield records
    finally:
        _state.records = previous
        if previous is not None:
            previous.extend(records)
