"""The check contract: outcomes, tiers, cases, the registry and the result record.

Standard library only. A workshop's check module (`checks/<id>.py`) registers its checks with
`@register(...)` at import time and imports numpy, torch or Triton only inside check bodies, so
that discovery (`python -m checks list`) needs nothing but Python.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from checks.catalog import WORKSHOP_IDS

# ---------------------------------------------------------------------------------------------
# Outcomes and tiers
# ---------------------------------------------------------------------------------------------
PASS, FAIL, TODO, UNAVAILABLE = "PASS", "FAIL", "TODO", "UNAVAILABLE"
OUTCOMES = (PASS, FAIL, TODO, UNAVAILABLE)

# cpu: NumPy / torch-CPU math, never Triton.  kernel: a Triton kernel, on a GPU or under the
# interpreter.  cuda: needs a real GPU (streams, graphs, > 4 GiB spans, device memory, timing).
TIERS = ("cpu", "kernel", "cuda")

# Where a check ran: a GPU, Triton's CPU interpreter, or plain CPU code (cpu tier).
DEVICES = ("cuda", "interpreter", "cpu")


class CheckFailed(Exception):
    """Raised by a check body: the implementation is wrong. Carries where, how and a hint."""

    def __init__(self, message: str, *, hint: str = "", max_error: float | None = None,
                 tolerance: float | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.max_error = max_error
        self.tolerance = tolerance


class Unavailable(Exception):
    """Raised by a check body: this machine cannot run the check. The message is the reason."""


class ExercisePending(Exception):
    """Raised by `ctx.require_exercises`: this case runs code whose exercise region is still a
    TODO. The case reports TODO, naming the lines; the other cases of the check still run.

    A check's `uses` gate all its cases at once. When which regions a case runs depends on the
    case (strided softmax's path A or path B, softmax backward's dim), the check gates its
    cases one by one with this, so that each finished region gets verdicts before the last."""

    def __init__(self, todos: list[str], runs: str):
        super().__init__(f"{runs}: " + ", ".join(todos))
        self.todos = todos
        self.runs = runs  # what the case runs, in words ("path B's two-pass walk")


# ---------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------
class Case(dict):
    """The parameters of one check run: a dict with attribute access and a stable label.

    >>> Case(shape=(4, 17), dtype="float16").label
    'shape=4x17 dtype=float16'
    """

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def label(self) -> str:
        return " ".join(f"{k}={_format_value(v)}" for k, v in self.items())

    def to_json(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.items()}


def _format_value(value: Any) -> str:
    if isinstance(value, tuple) and all(isinstance(v, int) for v in value):
        return "x".join(str(v) for v in value)
    return str(value)


CaseSource = Sequence[Case] | Callable[[str], Sequence[Case]]


# ---------------------------------------------------------------------------------------------
# Checks and the registry
# ---------------------------------------------------------------------------------------------
@dataclass
class Check:
    workshop: str
    id: str  # stable id within the workshop, e.g. "forward.layouts"
    tier: str
    fn: Callable
    uses: tuple[str, ...]  # public names of the implementation this check calls
    cases: CaseSource
    doc: str
    timeout: float | None = None  # seconds; None: the runner's default

    @property
    def full_id(self) -> str:
        return f"{self.workshop}/{self.id}"

    def cases_for(self, device: str) -> list[Case]:
        cases = self.cases(device) if callable(self.cases) else self.cases
        return list(cases) or [Case()]


_REGISTRY: dict[str, list[Check]] = {}


def register(workshop: str, check_id: str, *, tier: str, uses: Iterable[str] = (),
             cases: CaseSource = (), doc: str = "", timeout: float | None = None):
    """Decorator: register `fn(ctx, impl, case)` as a check of `workshop`.

    `uses` names the implementation's public functions the check calls: if any of them still
    holds an unfilled exercise region, the check reports TODO without running.
    `cases` is a list of `Case`, or a function of the device ("cuda", "interpreter", "cpu")
    returning one, so interpreter runs can use smaller sizes.
    """
    if workshop not in WORKSHOP_IDS:
        raise ValueError(f"unknown workshop {workshop!r}")
    if tier not in TIERS:
        raise ValueError(f"tier must be one of {TIERS}, got {tier!r}")

    def decorate(fn: Callable) -> Callable:
        checks = _REGISTRY.setdefault(workshop, [])
        if any(c.id == check_id for c in checks):
            raise ValueError(f"duplicate check id {workshop}/{check_id}")
        summary = doc or ((fn.__doc__ or "").strip().splitlines() or [""])[0]
        checks.append(Check(workshop, check_id, tier, fn, tuple(uses), cases, summary, timeout))
        return fn

    return decorate


def checks_for(workshop: str) -> list[Check]:
    """Import `checks/<workshop>.py` (standard library only at import) and return its checks."""
    if workshop not in WORKSHOP_IDS:
        raise ValueError(f"unknown workshop {workshop!r}; known: {', '.join(WORKSHOP_IDS)}")
    try:
        importlib.import_module(f"checks.{workshop}")
    except ModuleNotFoundError as exc:
        if exc.name != f"checks.{workshop}":
            raise
        return []  # the workshop's checks are not written yet
    return list(_REGISTRY.get(workshop, []))


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------
@dataclass
class Result:
    workshop: str
    check: str
    case: dict
    tier: str
    device: str
    outcome: str
    message: str = ""
    hint: str = ""
    max_error: float | None = None
    tolerance: float | None = None
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)  # e.g. "bf16 tl.dot ran upcast to fp32"

    @property
    def case_label(self) -> str:
        return Case(self.case).label

    def to_json(self) -> dict:
        return {
            "workshop": self.workshop, "check": self.check, "case": self.case, "tier": self.tier,
            "device": self.device, "outcome": self.outcome, "message": self.message,
            "hint": self.hint, "max_error": self.max_error, "tolerance": self.tolerance,
            "seconds": round(self.seconds, 4), "notes": self.notes,
        }
