"""Online normalization: a mergeable (max, exp-sum) state for log-sum-exp and softmax.

What you will learn
- The state of a softmax row is two numbers, `State(m, s)`: the running maximum `m` and the sum
  `s = sum(exp(x - m))` of the values seen so far. `log_sum_exp = m + log(s)` and
  `softmax(x) = exp(x - m) / s` need nothing else.
- Two states of two chunks merge into the state of their union without looking at the values
  again: `m = max(ma, mb)`, `s = sa * exp(ma - m) + sb * exp(mb - m)`. Each side's sum is
  rescaled from its own maximum to the common one; both factors are <= 1, so nothing overflows.
- The empty state `identity() = State(-inf, 0.0)` is the neutral element of `merge`. The formula
  alone breaks on it: merging two empty states computes `exp(-inf - (-inf)) = exp(nan)`, so
  `merge` handles it explicitly, and `merge(identity(), a) == a` holds bit for bit.
- `merge` is commutative bit for bit (IEEE addition and multiplication are) and associative up
  to rounding, so any split of a row into chunks, merged in any order or tree, gives the same
  state within a few ulps per merge. Split softmax and streaming attention (the next two
  workshops) run exactly this algebra on a GPU, one chunk (tile) per program or per loop step.

This module is plain NumPy and the Python standard library: it imports neither torch nor Triton.

Conventions
- Inputs are float64 (other real dtypes are converted). NaN and +inf inputs are refused; -inf
  entries are allowed and carry no probability mass (exp(-inf) = 0), as masked logits do.
- A state is either the empty state (-inf, 0.0) or has a finite `m` and a finite `s >= 1` (the
  maximum's own term is exp(0) = 1).
- A row with no finite value (empty, or all -inf) has the empty state. Its log-sum-exp is -inf
  and its softmax is all zeros (no mass to spread; the convention attention kernels use for a
  fully masked row), never NaN.

Limitations
- A bounded teaching implementation: one 1-D row at a time, Python-level merges (a few
  microseconds each). It is the CPU model of the GPU workshops, not a fast library.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

__all__ = ["State", "identity", "from_values", "merge", "log_sum_exp", "softmax"]


@dataclass(frozen=True)
class State:
    """The softmax statistics of a set of values: maximum `m` and `s = sum(exp(x - m))`.

    Immutable and always valid: the constructor refuses NaN, m = +inf, a negative or infinite
    s, an inconsistent pair (s = 0 means "no values" and needs m = -inf, and back) and s < 1
    with a finite m (the maximum's own term is 1).
    """

    m: float  # running maximum; -inf for the empty state
    s: float  # sum of exp(x - m) over the values; 0.0 for the empty state

    def __post_init__(self):
        # Store plain Python floats (not numpy scalars): exact comparisons and tidy printing.
        object.__setattr__(self, "m", _as_float("State.m", self.m))
        object.__setattr__(self, "s", _as_float("State.s", self.s))
        m, s = self.m, self.s
        if math.isnan(m) or m == math.inf:
            raise ValueError(f"State.m must be a finite number or -inf, got {m!r} (NaN and +inf "
                             "are not maxima of valid values)")
        if math.isnan(s) or math.isinf(s) or s < 0.0:
            raise ValueError(f"State.s must be a finite number >= 0, got {s!r} (a sum of "
                             "exp(x - m) with every term in [0, 1])")
        if (m == -math.inf) != (s == 0.0):
            raise ValueError(f"State(m={m!r}, s={s!r}) is inconsistent: the empty state is "
                             "exactly (-inf, 0.0); a state with a finite m has s > 0")
        # The value equal to the maximum contributes exp(m - m) = exp(0) = 1 and every other
        # term is >= 0, so s >= 1 whenever m is finite. from_values and merge keep this bit
        # for bit: exp(0.0) is exactly 1, and adding terms >= 0 never rounds a sum below 1.
        if m != -math.inf and s < 1.0:
            raise ValueError(f"State(m={m!r}, s={s!r}) is impossible: s = sum(exp(x - m)) "
                             "includes the term exp(m - m) = 1 of the maximum itself, so a "
                             "non-empty state has s >= 1 (the empty state is (-inf, 0.0))")


def _as_float(name: str, value) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    try:
        return float(value)
    except OverflowError:  # an int or Fraction beyond float64's range
        raise ValueError(f"{name} must fit a float64, got {value!r:.40}") from None


def _check_state(name: str, state) -> None:
    if not isinstance(state, State):
        raise TypeError(f"{name} must be a State (build one with from_values or identity), "
                        f"got {type(state).__name__}")


def _as_row(name: str, x) -> np.ndarray:
    """`x` as a new 1-D float64 array; refuse non-numbers, other ranks, NaN and +inf."""
    try:
        array = np.asarray(x)
    except RuntimeError as error:  # e.g. a torch tensor that requires grad or lives on a GPU
        raise TypeError(f"{name} must be convertible to a NumPy array ({error}); pass a list, "
                        "a NumPy array or a detached CPU tensor") from None
    if array.dtype.kind not in "fiu":  # float, signed or unsigned int; not bool/complex/object
        raise TypeError(f"{name} must hold real numbers, got dtype {array.dtype}")
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one row of values), got shape {array.shape}")
    row = array.astype(np.float64, copy=True)  # a copy: we never touch the caller's array
    if np.isnan(row).any():
        raise ValueError(f"{name} contains NaN at index {int(np.flatnonzero(np.isnan(row))[0])}; "
                         "a softmax of NaN is undefined")
    if (row == np.inf).any():
        raise ValueError(f"{name} contains +inf at index {int(np.flatnonzero(row == np.inf)[0])}; "
                         "exp(+inf - (+inf)) is NaN, so +inf is refused (-inf is allowed)")
    return row


def identity() -> State:
    """The empty state (-inf, 0.0): merging it with any state returns that state unchanged."""
    return State(-math.inf, 0.0)


def from_values(x) -> State:
    """The state of a 1-D row of values (list, tuple or array; converted to float64).

    Empty rows and rows whose values are all -inf have no mass: they give `identity()`.
    """
    x = _as_row("x", x)
    if x.size == 0:
        return identity()
    # EXERCISE from_values: compute the maximum m, return identity() when it is -inf (every
    # value is -inf: no mass), else the sum s of exp(x - m). Subtracting m first keeps every
    # exponent <= 0, so exp never overflows and the largest term is exactly exp(0) = 1.
    m = float(np.max(x))
    if m == -math.inf:
        return identity()
    # Underflow to 0 for values far below the max is the right answer, and x - m may round
    # to -inf for the most extreme gaps (e.g. -1.7e308 - 1.7e308): exp(-inf) = 0 is right too.
    with np.errstate(under="ignore", over="ignore"):
        s = float(np.sum(np.exp(x - m)))
    # END EXERCISE
    return State(m, s)


def merge(a: State, b: State) -> State:
    """The state of the union of the values behind `a` and `b`.

    Exact for the empty state (`merge(identity(), a)` and `merge(a, identity())` are `a`, bit
    for bit), commutative bit for bit (but for the sign of a zero maximum: `max(0.0, -0.0)` is
    whichever comes first), and associative up to a few ulps of `s` per merge.
    """
    _check_state("a", a)
    _check_state("b", b)
    # EXERCISE merge: when one side is empty (the identity, m == -inf), return the other side
    # unchanged. The formula below cannot do it: with both sides empty it computes
    # exp(-inf - (-inf)) = exp(nan).
    if a.m == -math.inf:
        return b
    if b.m == -math.inf:
        return a
    # END EXERCISE
    # EXERCISE merge: the merged maximum m, then each side's sum rescaled from its own maximum
    # to m (both factors exp(. - m) are <= 1, and the side holding the maximum gets exactly 1).
    m = max(a.m, b.m)
    s = a.s * math.exp(a.m - m) + b.s * math.exp(b.m - m)
    # END EXERCISE
    return State(m, s)


def log_sum_exp(state: State) -> float:
    """log(sum(exp(x))) of the values behind `state`: m + log(s); -inf for the empty state."""
    _check_state("state", state)
    # EXERCISE log_sum_exp: return m + log(s), and -inf for the empty state (math.log(0.0)
    # raises, and -inf + log(0) would be -inf + -inf anyway: say it explicitly).
    if state.s == 0.0:
        return -math.inf
    return state.m + math.log(state.s)
    # END EXERCISE


def softmax(x, state: State) -> np.ndarray:
    """exp(x - m) / s for a 1-D row `x` whose values are covered by `state` (a new array).

    `state` is usually `from_values` of the whole row or the merge of its chunks' states. Every
    value of `x` must be <= state.m. With the empty state (x empty or all -inf) the result is
    all zeros.
    """
    x = _as_row("x", x)
    _check_state("state", state)
    if x.size and np.max(x) > state.m:
        raise ValueError(f"x holds a value {float(np.max(x))!r} above state.m = {state.m!r}: "
                         "the state must come from x (or from values including all of x)")
    # EXERCISE softmax: return zeros for the empty state (no mass; x holds only -inf here),
    # else exp(x - m) / s.
    if state.s == 0.0:
        return np.zeros_like(x)
    with np.errstate(under="ignore", over="ignore"):  # as in from_values: 0 is the right answer
        return np.exp(x - state.m) / state.s
    # END EXERCISE
