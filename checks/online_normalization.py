"""Checks for the online normalization workshop: the mergeable state `State(m, s)`.

Every check is `cpu` tier: the module under test is NumPy only. The references are independent
of the implementation: Python's `decimal` module at 50 significant digits computes
S = sum(exp(x - M)), log-sum-exp and each softmax value of a row exactly enough that rounding
them to float64 gives the correctly rounded answers. The laws are checked as properties over
random rows, random partitions into chunks (empty and single-element chunks included) and random
merge trees, drawn from the run's seed; a failure prints the seed so the run can be repeated.

Where a failure matches a classic mistake, the hint names it. The hints come from small probes
of the implementation whose right answers are known by hand (`_diagnose`), so every failing
check names the same mistake.
"""

from __future__ import annotations

import contextlib
import math
import struct

from checks.core import Case, CheckFailed, register

W = "online_normalization"
EXERCISES = ("from_values", "merge", "log_sum_exp", "softmax")

U = 2.0 ** -53  # unit roundoff of float64: one rounding has relative error <= U
EXP_ULPS = 4  # NumPy's and libm's float64 exp are within a few ulps; 1 ulp <= 2U relative
DECIMAL_DIGITS = 50

SIZES = (7, 64, 1000)  # a weird size, a power of two, a long row
# Rows: the moderate case, a wide spread (most terms underflow), huge finite magnitudes, rows
# with -inf entries (masked logits), many exact ties at the maximum, values near 1000 where
# exp(x) overflows unless the maximum is subtracted first, and values near -1000 where exp(x)
# (and exp(m)) underflows to 0.
KINDS = ("normal", "wide", "extreme", "neg_inf", "ties", "offset", "low")


# ---------------------------------------------------------------------------------------------
# Inputs and the high-precision reference
# ---------------------------------------------------------------------------------------------
def _row(rng, kind: str, n: int):
    """A float64 row of `n` values of the given kind (never all equal, never NaN or +inf)."""
    import numpy as np

    if kind == "normal":
        return rng.normal(0.0, 3.0, n)
    if kind == "wide":
        return rng.normal(0.0, 300.0, n)
    if kind == "extreme":
        # +-1e300 mixed with ordinary values; the maximum 1e300 appears (at least) twice, so the
        # exact s is an integer count plus terms that underflow to nothing.
        x = rng.normal(0.0, 3.0, n)
        x[rng.random(n) < 0.4] = -1e300
        x[rng.random(n) < 0.2] = 1e300 * rng.uniform(0.5, 1.0)
        x[rng.choice(n, size=min(n, 2), replace=False)] = 1e300
        return x
    if kind == "neg_inf":
        x = rng.normal(0.0, 3.0, n)
        x[rng.random(n) < 0.3] = -np.inf
        x[rng.integers(n)] = rng.normal()  # at least one finite value
        return x
    if kind == "ties":
        return rng.integers(-3, 3, n).astype(np.float64)
    if kind == "offset":
        return 1000.0 + rng.normal(0.0, 2.0, n)
    if kind == "low":
        return -1000.0 + rng.normal(0.0, 2.0, n)
    if kind == "all_neg_inf":
        return np.full(n, -np.inf)
    raise ValueError(kind)


class Exact:
    """M = max(x) and S = sum(exp(x - M)) of a row, in 50-digit decimal arithmetic.

    `Decimal(float)` is exact, and 50 digits leave more than 30 digits of margin over float64
    for rows of up to ~10^6 terms, so `float(...)` of a result is the correctly rounded value.
    """

    def __init__(self, x):
        from decimal import Context, Decimal, localcontext

        values = [float(v) for v in x]
        finite = [v for v in values if v != -math.inf]
        self.n = len(values)
        self.empty = not finite
        self.m = max(finite) if finite else -math.inf
        self.terms = []
        with localcontext(Context(prec=DECIMAL_DIGITS)):
            big_m = Decimal(self.m) if finite else None
            for v in values:
                if v == -math.inf:
                    self.terms.append(Decimal(0))
                    continue
                gap = Decimal(v) - big_m
                # exp(-800) < 1e-347: below half the smallest float64 subnormal relative to S >= 1,
                # so such a term changes neither S nor its own rounded softmax value (0).
                self.terms.append(gap.exp() if gap > -800 else Decimal(0))
            self.s_dec = sum(self.terms, Decimal(0))
            self.s = float(self.s_dec)
            self.lse = float(big_m + self.s_dec.ln()) if finite else -math.inf
            self.p = [float(t / self.s_dec) if finite else 0.0 for t in self.terms]


# ---------------------------------------------------------------------------------------------
# Tolerances
# ---------------------------------------------------------------------------------------------
def s_tolerance(n: int, merges: int) -> float:
    """Relative error allowed for s of an n-value row after `merges` merges.

    Derivation (first order in U; every term of s lies in [0, 1] and the largest is exactly 1,
    so s >= 1 and relative errors are well defined):
    - one chunk, `from_values`: each term exp(fl(x - m)) has relative error <= d*U (the
      rounding of the gap d = m - x, magnified by exp) + EXP_ULPS*2U (exp itself). Weighted by
      the terms, the d*U part averages to at most (ln n + 1)*U, because d * exp(-d) is only
      large where exp(-d) is small. Pairwise summation of positive terms adds log2(n)*U.
    - one merge: s = sa*exp(ma - m) + sb*exp(mb - m). The side holding m gets exactly
      exp(0) = 1; the other side's factor has relative error <= d*U + EXP_ULPS*2U, weighted by
      its share of s (again <= (ln n + 1)*U for the d part), then one rounding for the product
      and one for the sum: a few ulps, (ln n + 1 + 2*EXP_ULPS + 2)*U, added to the weighted
      average of the inputs' errors.
    - so the error grows by at most that much per level of the merge tree; the number of
      merges is an upper bound on the depth. A factor 2 covers the second-order terms.
    """
    ln_n = math.log(max(n, 1))
    leaf = (ln_n + 1 + 2 * EXP_ULPS + math.log2(max(n, 1))) * U
    per_merge = (ln_n + 1 + 2 * EXP_ULPS + 2) * U
    return 2 * (leaf + merges * per_merge)


# ---------------------------------------------------------------------------------------------
# Calling the implementation strictly, and naming the mistake when something is wrong
# ---------------------------------------------------------------------------------------------
@contextlib.contextmanager
def strict(*, underflow: bool = True):
    """Warnings are errors and NumPy raises on floating-point trouble.

    `underflow=False` leaves NumPy's default (ignore) for underflow only: exp of a very
    negative number rounding to 0 is the right answer, and NumPy does not warn about it by
    default, so a learner's plain `np.exp(x - m)` must not fail for it. Overflow, invalid
    operations (NaN) and division by zero still raise.
    """
    import warnings

    import numpy as np

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise", **({} if underflow else {"under": "ignore"})):
            yield


def _seed_text(ctx) -> str:
    return (f"[seed: rerun with --seed {ctx.seed}; this case's generator seed is "
            f"{ctx.case_seed}]")


# What a NaN becomes in strict mode, before any NaN test can see it: NumPy's
# FloatingPointError (or a RuntimeWarning turned into an error), math's ValueError ("math domain
# error"), an OverflowError, or the ValueError of the State constructor refusing a NaN field.
# A crash of another kind (NameError, TypeError, NotImplementedError) is not arithmetic: it
# names no classic mistake of the formulas.
NAN_ERRORS = (ArithmeticError, ValueError, Warning)

# The functions whose result is a state: anything else (a bare (m, s) tuple, None) breaks the
# next merge, log_sum_exp or softmax, far from the line that made it.
RETURNS_STATE = ("identity", "from_values", "merge")


def _call(ctx, impl, fn_name: str, *args, all_raise: bool = False):
    """Call impl.<fn_name>(*args) in strict mode; a crash, a warning or a result that is not a
    State (for identity, from_values and merge) is a FAIL with a hint.

    `all_raise` also turns underflow into an error (the identity laws: no floating-point
    event at all)."""
    from checks.context import call_learner

    fn = getattr(impl, fn_name)
    try:
        with strict(underflow=all_raise):
            result = call_learner(fn, *args, label=f"{fn_name}{_short(args)}")
    except CheckFailed as exc:
        raise CheckFailed(f"{exc.message} {_seed_text(ctx)}",
                          hint=(exc.hint or _empty_input_hint(impl, fn_name, args, exc.__cause__)
                                or _diagnose(impl) or "")) from exc
    if fn_name in RETURNS_STATE and not _is_state(impl, result):
        raise CheckFailed(f"{fn_name} returned {type(result).__name__}, expected a State: "
                          f"{fn_name}{_short(args)} = {_cut(repr(result))} {_seed_text(ctx)}",
                          hint=HINT_NOT_STATE)
    return result


def _empty_input_hint(impl, fn_name: str, args, error) -> str:
    """The hint for an arithmetic error raised on an input without mass (the empty state, a row
    with no finite value): the classic missing branch. Strict mode turns its NaN
    (-inf - (-inf), log(0), 0 / 0) into an exception, so the NaN tests never see it."""
    import numpy as np

    if not isinstance(error, NAN_ERRORS):
        return ""
    if fn_name == "from_values":
        row = args[0]
        if isinstance(row, np.ndarray) and row.dtype.kind == "f" and not np.isfinite(row).any():
            # The identity() branch may be there and never taken: a maximum seeded with 0 is
            # never -inf, and State(0.0, 0.0) is refused.
            # (np.argmax of an all -inf row is 0, which a maximum seeded with 0 also gives.)
            return (_from_values_wrong_max(impl) or _from_values_max_zero(impl)
                    or _from_values_abs_max(impl) or HINT_NO_MASS)
        return ""
    empty_state = any(_is_state(impl, a) and getattr(a, "s", None) == 0.0 for a in args)
    if fn_name == "log_sum_exp" and empty_state:
        return HINT_LSE_EMPTY
    if fn_name == "softmax" and empty_state:
        # A finite x with the empty state: the state came from a row that was not empty.
        row = np.asarray(args[0]) if args else np.zeros(0)
        if row.dtype.kind == "f" and np.isfinite(row).any():
            # (from_values shifted by the minimum gives a row holding -inf the empty state too)
            return _from_values_wrong_max(impl) or _from_values_partial_neg_inf(impl) or ""
        return HINT_SOFTMAX_EMPTY
    return ""


def _cut(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _short(args) -> str:
    """The arguments of a call, for a message: an array of up to 8 values shows them (a row of
    -inf must read as one), a longer one its length; anything else its repr, cut short."""
    import numpy as np

    parts = []
    for a in args:
        if not isinstance(a, np.ndarray):
            parts.append(_cut(repr(a)))
        elif a.ndim == 1 and a.size <= 8:
            parts.append(repr(a))
        else:
            parts.append(f"<array of {a.size} values>" if a.ndim == 1
                         else f"<array of shape {a.shape}>")
    return "(" + ", ".join(parts) + ")"


def _fail(ctx, impl, message: str, fallback: str = ""):
    raise CheckFailed(f"{message} {_seed_text(ctx)}", hint=_diagnose(impl) or fallback)


def _bits(state) -> bytes | None:
    """The exact bits of (m, s); None for anything that is not a pair of floats with .m and .s
    (a learner's tuple, None): callers test `_is_state` first, and this never raises."""
    try:
        return struct.pack("<dd", state.m, state.s)
    except (AttributeError, TypeError, struct.error):
        return None


def _is_state(impl, value) -> bool:
    return isinstance(value, impl.State)


HINT_IDENTITY = ("no identity handling: merge(identity(), identity()) must return the "
                 "identity, but the formula computes exp(-inf - (-inf)) = exp(nan); return "
                 "the other state when one side is empty (m == -inf)")
HINT_SHIFT = ("missing max shift: from_values([1000.0, 999.0]) should be State(1000.0, "
              "1 + exp(-1)); exp(x) overflows to inf for x > 709 (and underflows to 0 below "
              "-745): sum exp(x - m), whose terms are all in [0, 1]")
HINT_EXP_SIGN = ("exponent sign flipped: from_values([1000.0, 999.0]) should be State(1000.0, "
                 "1 + exp(-1)), but s = 1 + e: the terms are exp(x - m), all in [0, 1] (x <= m); "
                 "exp(m - x) grows with the distance below the maximum and overflows")
HINT_PRECISION = ("s lost precision: sum in float64: from_values([1000.0, 999.0]) should be "
                  "State(1000.0, 1 + exp(-1)) to float64 precision (relative error ~1e-16), but s "
                  "is off by far more; a float32 exp or sum keeps only ~1e-7, so keep x - m, "
                  "exp and the sum in float64")
HINT_LSE_FORM = ("log_sum_exp not in the shifted form: log_sum_exp(State(-1000.0, 1.0)) must be "
                 "-1000.0 and log_sum_exp(State(1000.0, 1.0)) 1000.0; log(s * exp(m)) underflows "
                 "(exp(-1000) = 0, log(0) fails) or overflows (exp(1000) = inf): return "
                 "m + log(s)")
HINT_SUM_AS_MAX = ("s is the largest term, not the sum: from_values([1000.0, 999.0]) should be "
                   "State(1000.0, 1 + exp(-1)), but s = 1, the term of the maximum alone; s is "
                   "np.sum(np.exp(x - m)), the sum over the chunk")
HINT_MIN = ("min taken for the merged max: merge(State(1, 1), State(0, 1)) must have m = "
            "max(a.m, b.m) = 1 in both orders, but it is 0; with the smaller maximum as the "
            "shift, exp(own m - merged m) overflows when the chunks lie far apart")
HINT_FIRST_MAX = ("first chunk's max used instead of the merged max: merge(State(0, 1), "
                  "State(1, 1)) must have m = max(a.m, b.m) = 1; keeping a.m leaves s scaled by "
                  "exp(b.m - a.m), which overflows when the later chunk is much larger")
HINT_RESCALE_SIGN = ("rescale exponent flipped: merge(State(1, 1), State(0, 1)) must be "
                     "State(1, 1 + exp(-1)), but s = 1 + e: each side's factor is exp(own m - "
                     "merged m) <= 1, not exp(merged m - own m), which overflows for sides far "
                     "apart")
HINT_NO_RESCALE = ("neither side rescaled: merge(State(1, 1), State(0, 1)) must be "
                   "State(1, 1 + exp(-1)), but s = a.s + b.s = 2 in both orders: sums taken "
                   "against different maxima do not add; multiply each by its factor "
                   "exp(own m - merged m) first")
HINT_ONE_SIDE = ("only one side rescaled: merge(State(1, 1), State(0, 1)) must be "
                 "State(1, 1 + exp(-1)) in both orders, but one order gives s = 2: each side's "
                 "sum needs its factor exp(own m - merged m)")
HINT_SYMMETRY = ("merge not symmetric: merge(a, b) and merge(b, a) differ in the last bits; "
                 "IEEE + and * are commutative, so the symmetric formula "
                 "sa*exp(ma - m) + sb*exp(mb - m) gives identical bits in both orders (a "
                 "rearranged form, e.g. (sa + sb*exp(mb - ma)) * exp(ma - m), does not, and "
                 "can overflow)")
HINT_CHUNK_SOFTMAX = ("chunk normalised with its own statistics: normalise a chunk with the "
                      "merged state's m and s, not the chunk's own: softmax([0, 1], "
                      "from_values([0, 1, 2, 3])) must be exp([0, 1] - 3) / s = [0.03206, "
                      "0.08714], not the chunk's own softmax or exp(x - max(x)) / s")
HINT_NOT_STATE = ("not a State: identity, from_values and merge return State(m, s), not a bare "
                  "(m, s) tuple (or None): merge, log_sum_exp and softmax read .m and .s and "
                  "refuse anything but a State")
HINT_NO_MASS = ("a row without a finite value (empty, or all -inf) has no mass: return "
                "identity(); its maximum is -inf, so x - m computes -inf - (-inf) = NaN")
HINT_LSE_BASE = ("wrong log base: log_sum_exp(State(2.0, 3.0)) must be 2 + ln(3) = 3.0986..., "
                 "but it is 2 + {log}(3); exp and log are natural (base e): "
                 "return m + math.log(s)")
HINT_LSE_EMPTY = ("the empty state's log-sum-exp is -inf, not NaN: handle s == 0 (math.log(0.0) "
                  "raises a ValueError; return -math.inf explicitly)")
HINT_SOFTMAX_EMPTY = ("the empty state (all -inf row) gives zeros, not exp(-inf - (-inf)) / 0 = "
                      "NaN: return np.zeros_like(x) when s == 0")
HINT_SOFTMAX_EMPTY_UNIFORM = ("the empty state's softmax is zeros, not uniform: "
                              "softmax([-inf] * 4, identity()) must be [0, 0, 0, 0] (no mass to "
                              "spread), but it is 1/4 each: return np.zeros_like(x) when s == 0")
HINT_FAR_SIDE = ("far-below side dropped: merge(State(0, 1), State(-37, 1e12)) must be "
                 "State(0, 1 + 1e12 * exp(-37)) = State(0, 1.0000853...); every side counts, "
                 "however far below its maximum (exp of a very negative gap underflows to 0 "
                 "by itself, so no shortcut is needed)")
HINT_RESCALE_BASE = (
    "rescale factors in the wrong base: merge(State(1, 1), State(0, 1)) must be "
    "State(1, 1 + exp(-1)) = State(1, 1.3679...), but s = {s!r}, what the factors "
    "{base} ** (own m - merged m) give: s matches a.s * {base}^(a.m - m) + "
    "b.s * {base}^(b.m - m) in every probe; the factors are natural exponentials, "
    "math.exp(a.m - m) and math.exp(b.m - m) (or {base} ** of the gap times log{base}(e))")
HINT_MAX_ZERO_FROM_VALUES = (
    "max seeded with 0: from_values([-1.0] * 5) must be State(-1.0, 5.0), but m = 0.0: a "
    "maximum seeded with 0 (max(0.0, np.max(x))) lies above every value of an all-negative row, "
    "so s falls below 1 (an impossible state), and an all -inf row never reaches the "
    "identity() branch; m is the row's own maximum: m = float(np.max(x))")
HINT_MAX_ZERO_MERGE = (
    "max seeded with 0: merge(State(-1, 5), State(-2, 5)) must have m = max(a.m, b.m) = -1, "
    "but m = 0.0: a merged maximum seeded with 0 (max(0.0, a.m, b.m)) lies above both sides "
    "when every value is negative, so s falls below 1 (an impossible state); use "
    "m = max(a.m, b.m), and start a running maximum from -inf, never from 0")
HINT_SAME_FACTOR = (
    "both sums rescaled with the same side's factor: merge(State(1, 2), State(0, 2)) must be "
    "State(1, 2 + 2 * exp(-1)) in both orders, but one order gives s = 4 and the other "
    "4 * exp(-1): each sum takes its own side's factor, a.s * exp(a.m - m) + "
    "b.s * exp(b.m - m) (copy-paste: b.s * exp(a.m - m)?)")
HINT_SUMS_LEFT_OUT = (
    "a.s and b.s left out: merge(State(1, 3), State(0, 5)) must be State(1, 3 + 5 * exp(-1)), "
    "but s = 1 + exp(-1), the two factors alone: each factor exp(own m - merged m) rescales "
    "that side's sum, s = a.s * exp(a.m - m) + b.s * exp(b.m - m)")
HINT_LSE_LOG1P = (
    "log1p(s) is log(1 + s): log_sum_exp(State(2.0, 3.0)) must be 2 + ln(3) = 3.0986..., but it "
    "is 2 + ln(1 + 3) = 3.3863... (off by exactly ln 2 for a single value, s = 1): return "
    "m + math.log(s)")
HINT_SOFTMAX_DIVIDE_INSIDE = (
    "divided inside the exp: softmax([0, 1, 2, 3], from_values([0, 1, 2, 3])) must be "
    "exp(x - m) / s = [0.0321, 0.0871, 0.2369, 0.6439], but it is exp((x - m) / s): "
    "divide after the exp, np.exp(x - m) / s")
HINT_SOFTMAX_SHIFT = (
    "softmax without the max shift: softmax([1000.0, 999.0], State(1000.0, 1 + exp(-1))) must "
    "be [0.7311, 0.2689], but exp(x) overflows (exp(x) / (s * exp(m)) is inf / inf = NaN; near "
    "-1000 it is 0 / 0): return np.exp(x - m) / s, whose numerators are all in [0, 1]")


def _from_values_max_zero(impl) -> str | None:
    """HINT_MAX_ZERO_FROM_VALUES when from_values of an all-negative row has m = 0.0: the
    maximum seeded with 0. Five values at -1 give s = 5 * exp(-1) >= 1 against m = 0, a state
    the constructor accepts, so the wrong m comes back instead of an error."""
    import numpy as np

    try:
        with strict(underflow=False):
            got = impl.from_values(np.full(5, -1.0))
    except Exception:  # noqa: BLE001 - learner code may raise anything
        return None
    if _is_state(impl, got) and got.m == 0.0:
        return HINT_MAX_ZERO_FROM_VALUES
    return None


HINT_ABS_MAX = (
    "m is max(|x|), not max(x): from_values([-1.0] * 8 + [0.5]) must be State(0.5, 1 + "
    "8 * exp(-1.5)), but m = 1.0, the largest magnitude (a value at -1): m is the largest "
    "value itself, m = float(np.max(x)); with max(|x|) an all-negative row gets a positive m "
    "and s < 1 (an impossible state), and a row holding -inf gets m = +inf")
HINT_SUM_AS_MEAN = (
    "s is the mean, not the sum: from_values([1000.0, 999.0]) must be State(1000.0, "
    "1 + exp(-1)), but s = (1 + exp(-1)) / 2, the mean of the terms (off by the count n; "
    "below 1, so State refuses it unless every value ties with the maximum): "
    "s = np.sum(np.exp(x - m))")
HINT_PARTIAL_NEG_INF = (
    "a row with some -inf entries is not empty: from_values([0.0, -inf]) must be State(0.0, "
    "1.0), but it is the identity; only a row with no finite value (m = max(x) = -inf) has no "
    "mass, while each -inf entry just adds exp(-inf) = 0 to s: test m == -inf, not "
    "np.isinf(x).any()")
HINT_UNSHIFTED_FACTORS = (
    "rescale factors without the merged max: merge(State(2, 1), State(1, 1)) must be "
    "State(2, 1 + exp(-1)), but s = exp(2) + exp(1), what a.s * exp(a.m) + b.s * exp(b.m) "
    "gives in every probe; each side's factor is exp(own m - merged m) <= 1 (exp(a.m) alone "
    "overflows past 709 and breaks s >= 1 for negative maxima): "
    "s = a.s * math.exp(a.m - m) + b.s * math.exp(b.m - m)")
HINT_LSE_SIGN = (
    "sign of log(s) flipped: log_sum_exp(State(2.0, 3.0)) must be 2 + ln(3) = 3.0986..., but "
    "it is 2 - ln(3) = 0.9014...: log(sum(exp(x))) = m + log(sum(exp(x - m))), so add: "
    "return m + math.log(s)")
HINT_SOFTMAX_EPS = (
    "an epsilon in the denominator: softmax([0.0], State(0.0, 1.0)) must be exactly 1.0, but it "
    "is {got!r} = 1 / (1 + {eps:.3g}), and softmax([0, -1], State(0, 1 + exp(-1))) matches "
    "exp(x - m) / (s + {eps:.3g}): s >= 1 for every non-empty state (the maximum's own term is "
    "exp(0) = 1) and the empty state has its own branch, so nothing divides by 0; an epsilon "
    "only biases every value by eps / s: return np.exp(x - m) / s")


HINT_SUM_WITHOUT_MAX_TERM = (
    "s leaves out the maximum's own term: from_values([1000.0, 999.0]) must be State(1000.0, "
    "1 + exp(-1)), but s = exp(-1), the other values' terms alone (and four tied values give "
    "s = 0: every tie is left out with the maximum); s sums exp(x - m) over every value, the "
    "maximum's exp(0) = 1 included (that term is why s >= 1): s = np.sum(np.exp(x - m))")
HINT_SUMS_MULTIPLIED = (
    "sums multiplied, not added: merge(State(1, 3), State(0, 5)) must be State(1, 3 + 5 * "
    "exp(-1)), but s = 3 * 5 * exp(-1), the product of the two rescaled sums (in every probe, "
    "both orders); the union's sum of exp(x - m) holds both sides' terms, so the rescaled sums "
    "add: s = a.s * math.exp(a.m - m) + b.s * math.exp(b.m - m)")
HINT_LSE_LOGADDEXP = (
    "log_sum_exp adds exp(m) and s: log_sum_exp(State(2.0, 3.0)) must be 2 + ln(3) = 3.0986..., "
    "but it is log(exp(2) + 3) = 2.3519..., what np.logaddexp(m, log(s)) gives; s is a factor, "
    "not a term: sum(exp(x)) = exp(m) * s, so its log is m + log(s): return m + math.log(s)")
HINT_SOFTMAX_VIA_LSE = (
    "softmax as exp(x - log_sum_exp(state)): right in exact arithmetic, but m + log(s) is "
    "rounded at m's scale: softmax([1e20, 1e20], State(1e20, 2.0)) must be [0.5, 0.5], and it "
    "is [1.0, 1.0] because 1e20 + log(2) rounds to 1e20 (near x = 800 a few digits go the same "
    "way); x - m is exact for the values that matter, so keep the two steps apart: "
    "np.exp(x - m) / s")
HINT_SOFTMAX_SIGN = (
    "softmax's exponent sign flipped: softmax([0, 1, 2, 3], from_values([0, 1, 2, 3])) must be "
    "exp(x - m) / s = [0.0321, 0.0871, 0.2369, 0.6439], but it is exp(m - x) / s: a value below "
    "the maximum gets a factor above 1 (exp(m - x) overflows for values far below it); the "
    "maximum gets exp(0) = 1 and every other value less: np.exp(x - m) / s")


# Found by the eighth learner audit (each got another mistake's hint, a generic one or none).
HINT_FROM_VALUES_MIN = (
    "m is the minimum, not the maximum: from_values([3.0, 5.0, 4.0]) must be State(5.0, 1 + "
    "exp(-1) + exp(-2)), but m = 3.0, the smallest value (np.min for np.max): shifted by the "
    "minimum every term exp(x - m) is >= 1 and overflows for a wide row, and a row holding a "
    "-inf entry gets m = -inf (the identity); m = float(np.max(x))")
HINT_FROM_VALUES_ARGMAX = (
    "m is the maximum's index, not its value: from_values([3.0, 5.0, 4.0]) must be State(5.0, "
    "1 + exp(-1) + exp(-2)), but m = 1.0, where the maximum sits (np.argmax for np.max); the "
    "shift is the largest value itself: m = float(np.max(x))")
HINT_EMPTY_SIDE_RETURNED = (
    "the empty side returned: merge(identity(), State(0, 1)) and merge(State(0, 1), identity()) "
    "must both be State(0, 1), but {which} gives the identity: when a.m == -inf, a is the empty "
    "side and the answer is b (and the other way round): if a.m == -inf: return b")
HINT_MAX_OF_SUMS = (
    "merged max taken over the sums: merge(State(100, 3), State(99, 5)) must have m = "
    "max(a.m, b.m) = 100, but m = 5.0 = max(a.s, b.s): m is the maximum of the two maxima, "
    "m = max(a.m, b.m); the sums are what gets rescaled")
HINT_LSE_NO_M = (
    "m left out of log_sum_exp: log_sum_exp(State(2.0, 3.0)) must be 2 + ln(3) = 3.0986..., but "
    "it is ln(3) = 1.0986...: s = sum(exp(x - m)) is the sum shifted by m, so log(sum(exp(x))) "
    "= m + log(s): return m + math.log(s)")
HINT_SOFTMAX_TIMES_S = (
    "multiplied by s, not divided: softmax([0, -1], State(0, 1 + exp(-1))) must be "
    "exp(x - m) / s = [0.7311, 0.2689], but it is exp(x - m) * s: the values must sum to 1, "
    "so divide: np.exp(x - m) / s")
HINT_SOFTMAX_NUMERATOR_UNSHIFTED = (
    "numerator not shifted by m: softmax([1, 0], State(1, 1 + exp(-1))) must be "
    "exp(x - m) / s = [0.7311, 0.2689], but it is exp(x) / s: s sums exp(x - m), so the "
    "numerator needs the same shift (exp(x) alone overflows past 709): np.exp(x - m) / s")
HINT_EXP_OF_SUM = (
    "exp of the sum, not the sum of the exps: from_values([1000.0, 999.0]) must be "
    "State(1000.0, 1 + exp(-1)), but s = exp(-1) = exp(sum(x - m)) (and exp(-3) for [0, -1, "
    "-2]): s adds one term exp(x - m) per value: s = np.sum(np.exp(x - m))")


def _from_values_exp_of_sum(impl) -> str | None:
    """HINT_EXP_OF_SUM when from_values builds s = exp(sum(x - m)): below 1 for any row without
    ties, so State refuses it and the pairs come from _from_values_unchecked. Four tied values
    (s = exp(0) = 1 against 4) tell it from a sum that leaves the maximum's term out (0)."""
    import numpy as np

    pairs = _from_values_unchecked(impl, (np.array([1000.0, 999.0]), np.full(4, 5.0),
                                          np.array([0.0, -1.0, -2.0])))
    if (pairs is not None and pairs[0][0] == 1000.0
            and abs(pairs[0][1] - math.exp(-1.0)) <= 1e-12 and pairs[1] == (5.0, 1.0)
            and pairs[2][0] == 0.0 and abs(pairs[2][1] - math.exp(-3.0)) <= 1e-12):
        return HINT_EXP_OF_SUM
    return None


def _from_values_wrong_max(impl) -> str | None:
    """HINT_FROM_VALUES_MIN or HINT_FROM_VALUES_ARGMAX when from_values([3.0, 5.0, 4.0]) is
    shifted by the minimum (3.0) or by the maximum's index (1.0), with the s that shift gives:
    both states are valid (s >= 1), so they come back. Asked before the probes on all-negative
    rows, which the index 0 of np.argmax([-1.0] * 5) would answer as a maximum seeded with 0."""
    import numpy as np

    row = np.array([3.0, 5.0, 4.0])
    try:
        with strict(underflow=False):
            got = impl.from_values(row)
    except Exception:  # noqa: BLE001 - learner code may raise anything
        return None
    for m, hint in ((3.0, HINT_FROM_VALUES_MIN), (1.0, HINT_FROM_VALUES_ARGMAX)):
        want = float(np.sum(np.exp(row - m)))
        if _is_state(impl, got) and got.m == m and abs(got.s - want) <= 1e-12 * want:
            return hint
    return None


def _from_values_abs_max(impl) -> str | None:
    """HINT_ABS_MAX when from_values of a mostly negative row has m = max(|x|) and the s that
    shift gives: eight values at -1 keep that wrong state valid (s = 8 exp(-2) + exp(-0.5)
    >= 1), so it comes back instead of an error. (Its all -inf row gets m = +inf, which State
    refuses: the probe names the mistake there too.)"""
    import numpy as np

    row = np.array([-1.0] * 8 + [0.5])
    try:
        with strict(underflow=False):
            got = impl.from_values(row)
    except Exception:  # noqa: BLE001 - learner code may raise anything
        return None
    want = float(np.sum(np.exp(row - 1.0)))
    if _is_state(impl, got) and got.m == 1.0 and abs(got.s - want) <= 1e-12 * want:
        return HINT_ABS_MAX
    return None


def _from_values_partial_neg_inf(impl) -> str | None:
    """HINT_PARTIAL_NEG_INF when from_values([0.0, -inf]) is the identity: a -inf entry carries
    no mass, but it does not empty the row."""
    import numpy as np

    try:
        with strict(underflow=False):
            got = impl.from_values(np.array([0.0, -math.inf]))
    except Exception:  # noqa: BLE001 - learner code may raise anything
        return None
    if _is_state(impl, got) and _bits(got) == _bits(impl.State(-math.inf, 0.0)):
        return HINT_PARTIAL_NEG_INF
    return None


def _from_values_unchecked(impl, rows) -> list[tuple[float, float]] | None:
    """The (m, s) pairs from_values builds for `rows`, valid or not: State's own check refuses
    an impossible s before the state comes back, so from_values runs with an unchecked State in
    its module's namespace (restored at once). None when that cannot be done or a row raises."""
    fn = getattr(impl, "from_values", None)
    namespace = getattr(fn, "__globals__", None)
    State = getattr(impl, "State", None)
    if namespace is None or State is None or namespace.get("State") is not State:
        return None

    class Unchecked(State):
        def __post_init__(self):  # the pair as from_values built it, valid or not
            pass

    built = []
    namespace["State"] = Unchecked
    try:
        for row in rows:
            with strict(underflow=False):
                built.append(fn(row))
    except Exception:  # noqa: BLE001 - learner code may raise anything: no diagnosis
        return None
    finally:
        namespace["State"] = State
    return [(float(getattr(b, "m", math.nan)), float(getattr(b, "s", math.nan))) for b in built]


def _from_values_mean(impl) -> str | None:
    """HINT_SUM_AS_MEAN when from_values builds s = mean(exp(x - m)). Below 1 for any row
    without ties, that s is refused by State's own check before it comes back, so the pairs
    come from _from_values_unchecked; four tied values (s = 1 against 4) must agree."""
    import numpy as np

    pairs = _from_values_unchecked(impl, (np.array([1000.0, 999.0]), np.full(4, 5.0)))
    e1 = 1.0 + math.exp(-1.0)
    if (pairs is not None and pairs[0][0] == 1000.0 and abs(pairs[0][1] - e1 / 2) <= 1e-12 * e1
            and pairs[1] == (5.0, 1.0)):
        return HINT_SUM_AS_MEAN
    return None


def _from_values_without_max_term(impl) -> str | None:
    """HINT_SUM_WITHOUT_MAX_TERM when from_values sums exp(x - m) over the values below the
    maximum only (x[x < m]): s = exp(-1) for [1000, 999] and 0 for four tied values, pairs
    State refuses (read through _from_values_unchecked). A sum minus 1 gives 3 on the ties."""
    import numpy as np

    pairs = _from_values_unchecked(impl, (np.array([1000.0, 999.0]), np.full(4, 5.0)))
    e = math.exp(-1.0)
    if (pairs is not None and pairs[0][0] == 1000.0 and abs(pairs[0][1] - e) <= 1e-12 * e
            and pairs[1] == (5.0, 0.0)):
        return HINT_SUM_WITHOUT_MAX_TERM
    return None


def _diagnose(impl) -> str | None:
    """Probe the implementation on hand-checkable inputs; name the first classic mistake found.

    A hint is best effort: when the learner's code defeats a probe in a way it did not foresee,
    there is no hint, never a crash of the checks that would hide the FAIL it explains.
    """
    try:
        return _first_mistake(impl)
    except Exception:  # noqa: BLE001 - learner objects may break any assumption of a probe
        return None


def _first_mistake(impl) -> str | None:
    """The probes of `_diagnose`. Order matters: an unhandled identity or a wrong merged max
    also breaks symmetry, so the more specific mistakes are tested first. A probe that crashes
    names a mistake only where that mistake crashes in strict mode (an arithmetic error, see
    NAN_ERRORS): a NameError in merge is not an asymmetric merge.
    """
    import numpy as np

    def run(fn, *args):
        """(result, None), or (None, the exception) when the call raises."""
        try:
            with strict(underflow=False):
                return fn(*args), None
        except Exception as exc:  # noqa: BLE001 - learner code may raise anything
            return None, exc

    def attempt(fn, *args):
        return run(fn, *args)[0]

    State = getattr(impl, "State", None)
    if State is None:
        return None
    e1 = 1.0 + math.exp(-1.0)

    def near(state, m, s):
        return (state is not None and _is_state(impl, state) and state.m == m
                and abs(state.s - s) <= 1e-12 * s)

    # A result that is not a State at all (a bare tuple, None) comes first: every other probe
    # reads .m and .s.
    for fn, args in ((impl.identity, ()), (impl.from_values, (np.array([0.0, 1.0]),)),
                     (impl.merge, (attempt(State, 0.0, 1.0), attempt(State, 1.0, 1.0)))):
        got, error = run(fn, *args)
        if error is None and not _is_state(impl, got):
            return HINT_NOT_STATE
    empty = attempt(impl.identity)
    if empty is not None:
        both, error = run(impl.merge, empty, empty)
        if error is None and not _is_state(impl, both):
            return HINT_NOT_STATE
        if isinstance(error, NAN_ERRORS) or (error is None and _bits(both) != _bits(empty)):
            return HINT_IDENTITY
        # The branches written the wrong way round (if a.m == -inf: return a): merging with
        # the empty state gives the empty state back, and both empty still passes above.
        one = attempt(State, 0.0, 1.0)
        for which, args in (("merge(identity(), a)", (empty, one)),
                            ("merge(a, identity())", (one, empty))):
            got = attempt(impl.merge, *args) if one is not None else None
            if got is not None and _is_state(impl, got) and _bits(got) == _bits(empty):
                return HINT_EMPTY_SIDE_RETURNED.format(which=which)
    # A maximum seeded with 0 also breaks the shift probes below (m = 0 for the row near
    # -1000, whose terms then underflow to s = 0): name it first.
    # The minimum or the maximum's index for m: before the all-negative rows below, where
    # np.argmax([-1.0] * 5) = 0 looks like a maximum seeded with 0.
    hint = _from_values_wrong_max(impl) if getattr(impl, "from_values", None) else None
    if hint:
        return hint
    if getattr(impl, "from_values", None) is not None and _from_values_max_zero(impl):
        return HINT_MAX_ZERO_FROM_VALUES
    # max(|x|) and a mean for the sum break the shift probes below too (a positive m for the
    # row near -1000; a refused s < 1): named first, each from its own replay.
    if getattr(impl, "from_values", None) is not None:
        hint = (_from_values_abs_max(impl) or _from_values_mean(impl)
                or _from_values_without_max_term(impl) or _from_values_exp_of_sum(impl))
        if hint:
            return hint
        if _from_values_partial_neg_inf(impl):
            return HINT_PARTIAL_NEG_INF
    # An arithmetic crash, a wrong maximum or a sum far off (inf, NaN, 0) is the missing shift;
    # a sum right to a few float32 ulps only is a sum taken in float32.
    imprecise = False
    e = math.exp(1.0)
    for row, m in (([1000.0, 999.0], 1000.0), ([-1000.0, -1001.0], -1000.0)):
        got, error = run(impl.from_values, np.array(row))
        if error is not None and not isinstance(error, NAN_ERRORS):
            break  # from_values crashes for another reason: these probes cannot tell
        if got is not None and _is_state(impl, got) and got.m == m and got.s == 1.0:
            return HINT_SUM_AS_MAX  # the shift is there; the sum is not
        if near(got, m, 1.0 + e):
            return HINT_EXP_SIGN  # exp(m - x): the value 1 below the maximum adds e, not 1/e
        if not (got is not None and _is_state(impl, got) and got.m == m
                and math.isfinite(got.s) and abs(got.s - e1) <= 1e-3 * e1):
            return HINT_SHIFT
        imprecise = imprecise or not near(got, m, e1)
    if imprecise:
        return HINT_PRECISION
    # log_sum_exp in the shifted form m + log(s): exp(m) alone under- or overflows. Only when
    # a moderate state comes out right (an unwritten log_sum_exp is not this mistake).
    moderate = attempt(State, 2.0, 3.0)
    if moderate is not None and getattr(impl, "log_sum_exp", None) is not None:
        got = attempt(impl.log_sum_exp, moderate)
        # m + log2(s) (or log10): right for s = 1 only, so every other row is off.
        for name, log in (("log2", math.log2), ("log10", math.log10)):
            if isinstance(got, float) and abs(got - (2.0 + log(3.0))) <= 1e-12:
                return HINT_LSE_BASE.format(log=name)
        # m + log1p(s) = m + log(1 + s): one more than the sum inside the log.
        if isinstance(got, float) and abs(got - (2.0 + math.log1p(3.0))) <= 1e-12:
            return HINT_LSE_LOG1P
        # m - log(s): the sign of the log flipped.
        if isinstance(got, float) and abs(got - (2.0 - math.log(3.0))) <= 1e-12:
            return HINT_LSE_SIGN
        # log(s) alone: m left out.
        if isinstance(got, float) and abs(got - math.log(3.0)) <= 1e-12:
            return HINT_LSE_NO_M
        # log(exp(m) + s) (np.logaddexp(m, log(s))): s added to exp(m) instead of scaling it.
        if isinstance(got, float) and abs(got - math.log(math.exp(2.0) + 3.0)) <= 1e-12:
            return HINT_LSE_LOGADDEXP
        if isinstance(got, float) and abs(got - (2.0 + math.log(3.0))) <= 1e-12:
            for m in (-1000.0, 1000.0):
                state = attempt(State, m, 1.0)
                if state is not None and attempt(impl.log_sum_exp, state) != m:
                    return HINT_LSE_FORM
    low, high = attempt(State, 0.0, 1.0), attempt(State, 1.0, 1.0)
    if low is None or high is None:
        return None
    forward, backward = attempt(impl.merge, low, high), attempt(impl.merge, high, low)
    ms = [got.m for got in (forward, backward) if got is not None and _is_state(impl, got)]
    if len(ms) == 2 and ms == [0.0, 0.0]:
        return HINT_MIN  # the smaller maximum in both orders (keeping a.m gives 0, then 1)
    for got in (forward, backward):
        if got is not None and _is_state(impl, got) and got.m != 1.0:
            return HINT_FIRST_MAX
    # m = max(a.s, b.s): sums of 3 and 5 under maxima of 100 and 99, so that the wrong state
    # (m = 5, s = 3 exp(95) + 5 exp(94)) is valid and comes back; both orders.
    apart = (attempt(State, 100.0, 3.0), attempt(State, 99.0, 5.0))
    if None not in apart:
        for got in (attempt(impl.merge, *apart), attempt(impl.merge, *apart[::-1])):
            if got is not None and _is_state(impl, got) and got.m == 5.0:
                return HINT_MAX_OF_SUMS
    # Two negative maxima: a merged maximum seeded with 0 says 0.0. The sums of 5 keep that
    # wrong state valid (s = 5 * (exp(-1) + exp(-2)) >= 1), so it comes back instead of an error.
    negative = (attempt(State, -1.0, 5.0), attempt(State, -2.0, 5.0))
    if None not in negative:
        for got in (attempt(impl.merge, *negative), attempt(impl.merge, *negative[::-1])):
            if got is not None and _is_state(impl, got) and got.m == 0.0:
                return HINT_MAX_ZERO_MERGE
    # Both m right (1). The sums are right as 1 + exp(-1); the flipped exponent exp(m - own m)
    # gives 1 + e, and no factor at all gives a.s + b.s = 2 in both orders (in one order only:
    # one side rescaled).
    sums = [got.s for got in (forward, backward) if got is not None and _is_state(impl, got)]
    # Factors exp(a.m) and exp(b.m), without the merged max: 1 + e on (1, 1) and (0, 1) as the
    # flipped exponent gives, so a pair of higher maxima tells them apart (e^2 + e against
    # 1 + e), both replays compared in both orders.
    higher = (attempt(State, 2.0, 1.0), attempt(State, 1.0, 1.0))
    if None not in higher:
        probes = [(pair, attempt(impl.merge, *pair))
                  for pair in ((high, low), (low, high), higher, higher[::-1])]

        def replays(formula):
            return all(got is not None and _is_state(impl, got) and got.m == max(a.m, b.m)
                       and abs(got.s - formula(a, b)) <= 1e-12 * formula(a, b)
                       for (a, b), got in probes)

        if replays(lambda a, b: a.s * math.exp(a.m) + b.s * math.exp(b.m)):
            return HINT_UNSHIFTED_FACTORS
        if replays(lambda a, b: a.s * math.exp(max(a.m, b.m) - a.m)
                   + b.s * math.exp(max(a.m, b.m) - b.m)):
            return HINT_RESCALE_SIGN
    if any(abs(s - (1.0 + e)) < 1e-9 for s in sums):
        return HINT_RESCALE_SIGN
    if len(sums) == 2 and all(abs(s - 2.0) < 1e-9 for s in sums):
        return HINT_NO_RESCALE
    # Both sums with one side's factor (b.s * exp(a.m - m), copied from a's term): the order
    # that puts the larger maximum first gives a.s + b.s = 4, the other (a.s + b.s) * exp(-1).
    # Sums of 2, not 1: with 1 the second would be 2/e < 1, a state the constructor refuses.
    two = (attempt(State, 1.0, 2.0), attempt(State, 0.0, 2.0))
    if None not in two:
        got = [attempt(impl.merge, *two), attempt(impl.merge, *two[::-1])]
        pair = sorted(g.s for g in got if g is not None and _is_state(impl, g) and g.m == 1.0)
        if (len(pair) == 2 and abs(pair[0] - 4.0 * math.exp(-1.0)) < 1e-9
                and abs(pair[1] - 4.0) < 1e-9):
            return HINT_SAME_FACTOR
    if any(abs(s - 2.0) < 1e-9 for s in sums):
        return HINT_ONE_SIDE
    # The factors added without the sums they rescale: right when both sums are 1 (the probe
    # above), so sums of 3 and 5 here; s = exp(0) + exp(-1) whatever the sums are.
    uneven = (attempt(State, 1.0, 3.0), attempt(State, 0.0, 5.0))
    if None not in uneven:
        for got in (attempt(impl.merge, *uneven), attempt(impl.merge, *uneven[::-1])):
            if got is not None and _is_state(impl, got) and got.m == 1.0 \
                    and abs(got.s - e1) < 1e-9:
                return HINT_SUMS_LEFT_OUT
    # The factors in another base, 2 ** (own m - merged m) (or 10 **) for exp: the probes
    # above, both orders, then all come out as that base's replay of the formula (a symmetric
    # formula, so the symmetry probe below would pass it on to the far-side probe).
    if None not in uneven:
        merged = [(pair, attempt(impl.merge, *pair))
                  for pair in ((high, low), (low, high), uneven, uneven[::-1])]

        def replay(a, b, base):
            m = max(a.m, b.m)
            return a.s * float(base) ** (a.m - m) + b.s * float(base) ** (b.m - m)

        for base in (2, 10):
            if all(got is not None and _is_state(impl, got) and got.m == max(a.m, b.m)
                   and abs(got.s - replay(a, b, base)) <= 1e-12 * replay(a, b, base)
                   for (a, b), got in merged):
                return HINT_RESCALE_BASE.format(base=base, s=merged[0][1].s)
    # The rescaled sums multiplied instead of added: pairs whose product stays >= 1 (a valid
    # state, so it comes back), both orders; the product's rounding depends on the order, so
    # the symmetry probe below would name it otherwise.
    pairs = (attempt(State, 1.0, 3.0), attempt(State, 0.0, 5.0), attempt(State, 2.0, 4.0),
             attempt(State, 1.5, 2.0))
    if None not in pairs:
        merged = [((a, b), attempt(impl.merge, a, b))
                  for a, b in (pairs[:2], pairs[1::-1], pairs[2:], pairs[:1:-1])]

        def product(a, b):
            m = max(a.m, b.m)
            return a.s * math.exp(a.m - m) * b.s * math.exp(b.m - m)

        if all(got is not None and _is_state(impl, got) and got.m == max(a.m, b.m)
               and abs(got.s - product(a, b)) <= 1e-12 * product(a, b)
               for (a, b), got in merged):
            return HINT_SUMS_MULTIPLIED
    rng = np.random.default_rng(0)
    for _ in range(50):
        a = attempt(State, float(rng.normal(0, 3)), float(rng.uniform(1, 50)))
        b = attempt(State, float(rng.normal(0, 3)), float(rng.uniform(1, 50)))
        ab, ba = attempt(impl.merge, a, b), attempt(impl.merge, b, a)
        # Only two States can be asymmetric: a merge that crashes (or returns something else)
        # on these states says nothing about the order of its arguments.
        if _is_state(impl, ab) and _is_state(impl, ba) and _bits(ab) != _bits(ba):
            return HINT_SYMMETRY
    # A side far below the other still adds its rescaled sum (no "negligible" shortcut).
    far = (attempt(State, 0.0, 1.0), attempt(State, -37.0, 1e12))
    if None not in far:
        want = 1.0 + 1e12 * math.exp(-37.0)
        for got in (attempt(impl.merge, *far), attempt(impl.merge, *far[::-1])):
            # Dropped: s is the near side's 1 alone (a wrong factor gives some other s, and
            # is no dropped side).
            if got is not None and _is_state(impl, got) and got.m == 0.0 \
                    and abs(got.s - want) > 1e-9 * want and abs(got.s - 1.0) <= 1e-12:
                return HINT_FAR_SIDE
    # exp(x - m) * s (multiplied, not divided) and exp(x) / s (the numerator unshifted), each
    # on a row where the right answer is neither; only a softmax that returns a 2-array.
    if getattr(impl, "softmax", None) is not None:
        for row, m, replay, hint in (
                ([0.0, -1.0], 0.0, lambda x: np.exp(x) * e1, HINT_SOFTMAX_TIMES_S),
                ([1.0, 0.0], 1.0, lambda x: np.exp(x) / e1, HINT_SOFTMAX_NUMERATOR_UNSHIFTED)):
            x = np.array(row)
            got = attempt(impl.softmax, x, attempt(State, m, e1))
            if (isinstance(got, np.ndarray) and got.shape == (2,)
                    and bool(np.allclose(got, replay(x), rtol=1e-12, atol=0.0))):
                return hint
    # An epsilon added to s: softmax([0.0], State(0, 1)) is 1 / (1 + eps) instead of exactly
    # 1; the eps read off it must then replay a second probe.
    if getattr(impl, "softmax", None) is not None:
        got = attempt(impl.softmax, np.array([0.0]), attempt(State, 0.0, 1.0))
        if isinstance(got, np.ndarray) and got.shape == (1,) and 0.0 < got[0] < 1.0:
            eps = 1.0 / float(got[0]) - 1.0
            row = np.array([0.0, -1.0])
            second = attempt(impl.softmax, row, attempt(State, 0.0, e1))
            if (eps < 1e-3 and isinstance(second, np.ndarray) and second.shape == (2,)
                    and bool(np.allclose(second, np.exp(row) / (e1 + eps), rtol=1e-14,
                                         atol=0.0))):
                return HINT_SOFTMAX_EPS.format(got=float(got[0]), eps=eps)
    # softmax in the unshifted form exp(x) / (s * exp(m)): right for moderate values only.
    if getattr(impl, "softmax", None) is not None:
        truth = np.array([1.0, math.exp(-1.0)]) / e1
        moderate = attempt(impl.softmax, np.array([1.0, 0.0]), attempt(State, 1.0, e1))
        if (isinstance(moderate, np.ndarray) and moderate.shape == (2,)
                and bool(np.allclose(moderate, truth, rtol=1e-12, atol=0.0))):
            for m in (1000.0, -1000.0):
                state = attempt(State, m, e1)
                if state is None:
                    continue
                got, error = run(impl.softmax, np.array([m, m - 1.0]), state)
                if error is not None and not isinstance(error, NAN_ERRORS):
                    continue  # a crash of another kind: not this mistake
                if error is not None or not (
                        isinstance(got, np.ndarray) and got.shape == (2,)
                        and bool(np.allclose(got, truth, rtol=1e-9, atol=0.0))):
                    return HINT_SOFTMAX_SHIFT
    # softmax as exp(x - (m + log(s))): the sum m + log(s) rounds log(2) away next to 1e20,
    # so two tied values come out 1.0 each instead of 0.5. Only when a moderate row is right.
    if getattr(impl, "softmax", None) is not None:
        truth = np.array([1.0, math.exp(-1.0)]) / e1
        moderate = attempt(impl.softmax, np.array([1.0, 0.0]), attempt(State, 1.0, e1))
        huge = attempt(State, 1e20, 2.0)
        if (huge is not None and isinstance(moderate, np.ndarray) and moderate.shape == (2,)
                and bool(np.allclose(moderate, truth, rtol=1e-12, atol=0.0))):
            got = attempt(impl.softmax, np.array([1e20, 1e20]), huge)
            replay = np.exp(np.array([1e20, 1e20]) - (1e20 + math.log(2.0)))
            if (isinstance(got, np.ndarray) and got.shape == (2,)
                    and bool(np.array_equal(got, replay)) and not bool(np.all(got == 0.5))):
                return HINT_SOFTMAX_VIA_LSE
    # softmax of a chunk with the whole row's state: the row's m and s, not the chunk's own.
    whole = attempt(State, 3.0, sum(math.exp(-k) for k in range(4)))
    if whole is not None and getattr(impl, "softmax", None) is not None:
        # exp(m - x) / s: the exponent's sign flipped.
        got = attempt(impl.softmax, np.array([0.0, 1.0, 2.0, 3.0]), whole)
        flipped = np.exp(3.0 - np.array([0.0, 1.0, 2.0, 3.0])) / whole.s
        if (isinstance(got, np.ndarray) and got.shape == (4,)
                and bool(np.allclose(got, flipped, rtol=1e-12, atol=0.0))):
            return HINT_SOFTMAX_SIGN
    if whole is not None and getattr(impl, "softmax", None) is not None:
        # exp((x - m) / s): the division moved inside the exp.
        got = attempt(impl.softmax, np.array([0.0, 1.0, 2.0, 3.0]), whole)
        inside = np.exp((np.array([0.0, 1.0, 2.0, 3.0]) - 3.0) / whole.s)
        if (isinstance(got, np.ndarray) and got.shape == (4,)
                and bool(np.allclose(got, inside, rtol=1e-12, atol=0.0))):
            return HINT_SOFTMAX_DIVIDE_INSIDE
    if whole is not None and getattr(impl, "softmax", None) is not None:
        full = attempt(impl.softmax, np.array([0.0, 1.0, 2.0, 3.0]), whole)
        part = attempt(impl.softmax, np.array([0.0, 1.0]), whole)
        truth = np.exp(np.array([-3.0, -2.0])) / whole.s
        row_ok = (isinstance(full, np.ndarray) and full.shape == (4,)
                  and bool(np.allclose(full[:2], truth, rtol=1e-12, atol=0.0)))
        if row_ok and not (isinstance(part, np.ndarray) and part.shape == (2,)
                           and bool(np.allclose(part, truth, rtol=1e-12, atol=0.0))):
            return HINT_CHUNK_SOFTMAX
    # The empty state spreads no mass: softmax of an all -inf row is zeros, not 1/n each.
    if empty is not None and getattr(impl, "softmax", None) is not None:
        got = attempt(impl.softmax, np.full(4, -math.inf), empty)
        if isinstance(got, np.ndarray) and got.shape == (4,) and bool(np.all(got == 0.25)):
            return HINT_SOFTMAX_EMPTY_UNIFORM
    return None


# ---------------------------------------------------------------------------------------------
# Comparing a state with the exact one
# ---------------------------------------------------------------------------------------------
def _compare_state(ctx, impl, got, exact: Exact, merges: int, what: str) -> float:
    """m must equal the exact maximum bit for bit; s must be within s_tolerance. Returns the
    relative error of s."""
    if not _is_state(impl, got):
        _fail(ctx, impl, f"{what} returned {type(got).__name__}, expected a State",
              "return State(m, s)")
    if exact.empty:
        if _bits(got) != _bits(impl.State(-math.inf, 0.0)):
            _fail(ctx, impl, f"{what} = {got}, expected the empty state (-inf, 0.0): the row has "
                  "no finite value", HINT_NO_MASS)
        return 0.0
    if got.m != exact.m:
        _fail(ctx, impl, f"{what}: m = {got.m!r}, expected the row's maximum {exact.m!r} exactly "
              "(a maximum is never rounded)",
              "m must be the maximum of all values: max(a.m, b.m) in a merge")
    rel = abs(got.s - exact.s) / exact.s
    tol = s_tolerance(exact.n, merges)
    if ctx.max_error is None or rel > ctx.max_error:
        ctx.max_error, ctx.tolerance = rel, tol
    if not rel <= tol:
        _fail(ctx, impl, f"{what}: s = {got.s!r}, exact {exact.s!r}: relative error {rel:.3g} > "
              f"{tol:.3g} (the rounding budget of {merges} merge(s) on {exact.n} values)",
              "s drifts from the exact sum: check the rescaling factors exp(ma - m), exp(mb - m)")
    return rel


def _partition(rng, n: int):
    """Random cut points into k chunks; repeated cuts make empty chunks, and close cuts single
    elements. Half the time an extra empty chunk is inserted somewhere explicitly."""
    import numpy as np

    k = int(rng.integers(1, min(n + 2, 40) + 1))
    cuts = np.sort(rng.integers(0, n + 1, k - 1))
    bounds = [0, *cuts.tolist(), n]
    chunks = [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]
    if rng.random() < 0.5:
        chunks.insert(int(rng.integers(len(chunks) + 1)), (0, 0))
    return chunks


# ---------------------------------------------------------------------------------------------
# The checks
# ---------------------------------------------------------------------------------------------
@register(W, "identity.laws", tier="cpu", uses=("identity", "merge", "from_values"),
          doc="merge(identity, a) == a == merge(a, identity) bit for bit; no NaN, no warning")
def identity_laws(ctx, impl, case):
    import numpy as np

    rng = ctx.numpy_rng()
    inf = math.inf
    empty = _call(ctx, impl, "identity", all_raise=True)
    if not _is_state(impl, empty) or _bits(empty) != _bits(impl.State(-inf, 0.0)):
        _fail(ctx, impl, f"identity() = {empty!r}, expected State(m=-inf, s=0.0)",
              "the empty state is (-inf, 0.0): no maximum yet, nothing summed")
    for row in ([], [-inf], [-inf] * 5):
        got = _call(ctx, impl, "from_values", np.array(row, dtype=np.float64), all_raise=True)
        if not _is_state(impl, got) or _bits(got) != _bits(empty):
            _fail(ctx, impl, f"from_values({row}) = {got!r}, expected the identity State(-inf, 0.0)",
                  HINT_NO_MASS)
    states = [impl.State(0.0, 1.0), impl.State(-0.0, 1.0), impl.State(1e300, 1.0),
              impl.State(-1e300, 7.5), impl.State(709.0, 3.25), impl.State(-745.0, 1.0),
              impl.State(2.5, 1e15)]
    for scale in (1.0, 300.0, 1e300):
        for n in (1, 2, 17):
            states.append(_call(ctx, impl, "from_values", rng.normal(0.0, scale, n)))
    both = _call(ctx, impl, "merge", empty, empty, all_raise=True)
    if not _is_state(impl, both) or _bits(both) != _bits(empty):
        _fail(ctx, impl, f"merge(identity(), identity()) = {both!r}, expected State(-inf, 0.0)",
              HINT_IDENTITY)
    for a in states:
        for left, right in ((empty, a), (a, empty)):
            got = _call(ctx, impl, "merge", left, right, all_raise=True)
            if not _is_state(impl, got) or _bits(got) != _bits(a):
                side = "merge(identity(), a)" if left is empty else "merge(a, identity())"
                _fail(ctx, impl, f"{side} = {got!r} for a = {a!r}: expected a, bit for bit",
                      "the identity must leave a state unchanged: return the other side when "
                      "one side is empty")


@register(W, "merge.commutative", tier="cpu", uses=("from_values", "merge"),
          doc="merge(a, b) == merge(b, a) bit for bit, ties and huge gaps included")
def merge_commutative(ctx, impl, case):
    rng = ctx.numpy_rng()
    pairs = 0
    for kind in KINDS:
        for _ in range(30):
            x = _row(rng, kind, int(rng.integers(1, 40)))
            cut = int(rng.integers(0, x.size + 1))
            a = _call(ctx, impl, "from_values", x[:cut])
            b = _call(ctx, impl, "from_values", x[cut:])
            if rng.random() < 0.2:
                b = a  # identical states: the tie m_a == m_b with equal sums
            ab = _call(ctx, impl, "merge", a, b)
            ba = _call(ctx, impl, "merge", b, a)
            pairs += 1
            if not (_is_state(impl, ab) and _is_state(impl, ba)) or _bits(ab) != _bits(ba):
                _fail(ctx, impl, f"merge(a, b) = {ab!r} but merge(b, a) = {ba!r} for a = {a!r}, "
                      f"b = {b!r} ({kind} row)", HINT_SYMMETRY)
    ctx.max_error, ctx.tolerance = 0.0, 0.0  # bit for bit
    ctx.note(f"{pairs} pairs compared bit for bit")


def _exact_merge(a, b) -> float:
    """s of merge(a, b) for two non-empty states, in 50-digit decimal arithmetic: the inputs are
    floats (exact in decimal), so float() of the result is the correctly rounded s."""
    from decimal import Context, Decimal, localcontext

    with localcontext(Context(prec=DECIMAL_DIGITS)):
        m = Decimal(max(a.m, b.m))
        total = (Decimal(a.s) * (Decimal(a.m) - m).exp()
                 + Decimal(b.s) * (Decimal(b.m) - m).exp())
        return float(total)


# (m_a, s_a, m_b, s_b): the lower side's share of the merged s is visible in float64 although
# its maximum lies far below (exp(-37) ~ 8.5e-17): a skipped side is off by far more than the
# rounding budget. 131072 values at -37 next to one value at 0 is a real row (s_b <= count).
FAR_PAIRS = ((0.0, 1.0, -37.0, 1e12), (0.0, 1.0, -37.0, 131072.0), (0.0, 1.0, -36.0, 4096.0),
             (5.0, 2.5, -45.5, 1e20), (1000.0, 1.0, 300.0, 1e300), (-3.0, 7.0, -700.0, 1e300),
             (0.0, 1.0, -60.0, 2.0 ** 80), (2.5, 1.0, -200.0, 1e90))


@register(W, "merge.far_apart", tier="cpu", uses=("merge",),
          doc="merge of states whose maxima are far apart (gaps 36 to 697) == exact, both orders")
def merge_far_apart(ctx, impl, case):
    State = impl.State
    checked = 0
    for ma, sa, mb, sb in FAR_PAIRS:
        a, b = State(ma, sa), State(mb, sb)
        want = _exact_merge(a, b)
        gap = abs(ma - mb)
        # The lower side's factor exp(-gap) has relative error <= gap*U (rounding of the gap)
        # + EXP_ULPS*2U (exp), then one rounding each for its product and the sum; the side
        # holding the maximum is exact (exp(0) = 1). A factor 2 covers second-order terms.
        tol = 2 * (gap + 2 * EXP_ULPS + 2) * U
        for left, right in ((a, b), (b, a)):
            got = _call(ctx, impl, "merge", left, right)
            what = f"merge({left}, {right})"
            if not _is_state(impl, got):
                _fail(ctx, impl, f"{what} returned {type(got).__name__}, expected a State",
                      "return State(m, s)")
            if got.m != max(ma, mb):
                _fail(ctx, impl, f"{what}: m = {got.m!r}, expected {max(ma, mb)!r}",
                      "m must be the maximum of all values: max(a.m, b.m) in a merge")
            rel = abs(got.s - want) / want
            if ctx.max_error is None or rel > ctx.max_error:
                ctx.max_error, ctx.tolerance = rel, tol
            if not rel <= tol:
                # The far side dropped leaves the near side's sum alone; any other s is a
                # wrong factor, not a dropped side.
                near_s = sa if ma >= mb else sb
                dropped = abs(got.s - near_s) <= tol * near_s
                _fail(ctx, impl, f"{what}: s = {got.s!r}, exact {want!r}: relative error "
                      f"{rel:.3g} > {tol:.3g}", HINT_FAR_SIDE if dropped else
                      "s is off: check the rescaling factors exp(a.m - m), exp(b.m - m)")
            checked += 1
    ctx.note(f"{checked} merges of far-apart states")


def _partition_cases(device):
    cases = [Case(kind=k, n=n) for k in KINDS for n in SIZES]
    return cases + [Case(kind="all_neg_inf", n=7)]


@register(W, "merge.partitions", tier="cpu", uses=("from_values", "merge"),
          cases=_partition_cases,
          doc="left-to-right merge of random chunks (empty, single) == exact state")
def merge_partitions(ctx, impl, case):
    rng = ctx.numpy_rng()
    x = _row(rng, case.kind, case.n)
    exact = Exact(x)
    whole = _call(ctx, impl, "from_values", x)
    _compare_state(ctx, impl, whole, exact, 0, "from_values(x)")
    partitions = [_partition(rng, case.n) for _ in range(30)]
    if case.n <= 64:
        partitions.append([(i, i + 1) for i in range(case.n)])  # every chunk a single element
    partitions.append([(0, 0), (0, case.n), (case.n, case.n)])  # empty chunks at both ends
    for chunks in partitions:
        state = _call(ctx, impl, "identity")
        for lo, hi in chunks:
            state = _call(ctx, impl, "merge", state, _call(ctx, impl, "from_values", x[lo:hi]))
        sizes = [hi - lo for lo, hi in chunks]
        _compare_state(ctx, impl, state, exact, len(chunks),
                       f"merging {len(chunks)} chunks of sizes {sizes[:12]}"
                       f"{'...' if len(sizes) > 12 else ''} left to right")


@register(W, "merge.order", tier="cpu", uses=("from_values", "merge"),
          cases=[Case(kind=k, n=n) for k in ("normal", "wide", "extreme", "neg_inf", "ties")
                 for n in (64, 1000)],
          doc="random permutations and random merge trees of the chunks == exact state")
def merge_order(ctx, impl, case):
    rng = ctx.numpy_rng()
    x = _row(rng, case.kind, case.n)
    exact = Exact(x)
    spread = []
    for trial in range(30):
        chunks = _partition(rng, case.n)
        states = [_call(ctx, impl, "from_values", x[lo:hi]) for lo, hi in chunks]
        order = rng.permutation(len(states))
        states = [states[i] for i in order]
        if trial % 2 == 0:
            # a random binary tree: merge any two neighbours until one state is left
            work, merges = list(states), 0
            while len(work) > 1:
                i = int(rng.integers(len(work) - 1))
                work[i:i + 2] = [_call(ctx, impl, "merge", work[i], work[i + 1])]
                merges += 1
            state, how = work[0], "a random merge tree"
        else:
            state = states[0]  # a left fold over a random permutation
            for other in states[1:]:
                state = _call(ctx, impl, "merge", state, other)
            merges, how = len(states) - 1, "a left fold over a random permutation"
        spread.append(_compare_state(ctx, impl, state, exact, merges,
                                     f"{how} of {len(states)} chunks"))
    ctx.note(f"largest relative error of s over 30 orders: {max(spread):.2g}")


def _value_cases(device):
    cases = [Case(kind=k, n=n) for k in KINDS for n in (1, 7, 1000)
             if not (k in ("extreme", "neg_inf") and n == 1)]
    return cases + [Case(kind="all_neg_inf", n=1), Case(kind="all_neg_inf", n=9),
                    Case(kind="empty", n=0)]


def _row_for(rng, case):
    import numpy as np

    return np.zeros(0) if case.kind == "empty" else _row(rng, case.kind, case.n)


def _states_for(ctx, impl, rng, x):
    """The state of x computed whole and as the merge of random chunks (with the merge count)."""
    yield _call(ctx, impl, "from_values", x), 0, "from_values(x)"
    chunks = _partition(rng, x.size)
    state = _call(ctx, impl, "identity")
    for lo, hi in chunks:
        state = _call(ctx, impl, "merge", state, _call(ctx, impl, "from_values", x[lo:hi]))
    yield state, len(chunks), f"the merge of {len(chunks)} chunks"


@register(W, "log_sum_exp.high_precision", tier="cpu",
          uses=("from_values", "merge", "log_sum_exp"), cases=_value_cases,
          doc="log-sum-exp vs 50-digit decimal: +-1e300, -inf entries, all -inf, empty")
def log_sum_exp_high_precision(ctx, impl, case):
    rng = ctx.numpy_rng()
    x = _row_for(rng, case)
    exact = Exact(x)
    for state, merges, how in _states_for(ctx, impl, rng, x):
        got = _call(ctx, impl, "log_sum_exp", state)
        if not isinstance(got, float):
            _fail(ctx, impl, f"log_sum_exp returned {type(got).__name__}, expected a float",
                  "return a Python float: m + math.log(s)")
        if exact.empty:
            if got != -math.inf:
                _fail(ctx, impl, f"log_sum_exp of {how} = {got!r} for a row without a finite "
                      "value; expected -inf (log of an empty sum)", HINT_LSE_EMPTY)
            continue
        # Error budget: s's relative error becomes an absolute error of log(s); log and the
        # final addition each round once, relative to their results (2 ulps each, 4U).
        tol = s_tolerance(exact.n, merges) + 4 * U * (abs(exact.m) + abs(math.log(exact.s)))
        err = abs(got - exact.lse)
        if ctx.max_error is None or err > ctx.max_error:
            ctx.max_error, ctx.tolerance = err, tol
        if not err <= tol:
            _fail(ctx, impl, f"log_sum_exp of {how} = {got!r}, exact {exact.lse!r}: |error| "
                  f"{err:.3g} > {tol:.3g}", "log_sum_exp(state) = m + log(s)")


@register(W, "softmax.high_precision", tier="cpu", uses=("from_values", "merge", "softmax"),
          cases=_value_cases,
          doc="softmax vs 50-digit decimal, every element, whole row and chunk by chunk with "
              "the row's state; all -inf rows give zeros")
def softmax_high_precision(ctx, impl, case):
    import numpy as np

    rng = ctx.numpy_rng()
    x = _row_for(rng, case)
    exact = Exact(x)
    expected = np.array(exact.p, dtype=np.float64)
    for state, merges, how in _states_for(ctx, impl, rng, x):
        _check_softmax(ctx, impl, x, state, expected, exact, merges, f"softmax(x, {how})")
        # Chunk by chunk with the whole row's state, as split softmax normalises each chunk:
        # softmax(x[lo:hi], state) is exactly p[lo:hi] (the row's m and s, not the chunk's).
        chunks = [c for c in _partition(rng, x.size) if c[1] > c[0]]
        if len(chunks) < 2 and x.size >= 2:
            chunks = [(0, x.size // 2), (x.size // 2, x.size)]
        if len(chunks) < 2:
            continue
        for lo, hi in chunks:
            _check_softmax(ctx, impl, x[lo:hi], state, expected[lo:hi], exact, merges,
                           f"softmax(x[{lo}:{hi}], {how} of the whole row)",
                           offset=lo, chunk=True)


def _check_softmax(ctx, impl, x, state, expected, exact, merges, what, *, offset=0,
                   chunk=False):
    """softmax(x, state) against the exact values `expected`, every element."""
    import numpy as np

    before = x.copy()
    got = _call(ctx, impl, "softmax", x, state)
    if not np.array_equal(before, x):
        _fail(ctx, impl, "softmax wrote into its input x", "never write the input")
    if not isinstance(got, np.ndarray) or got.shape != x.shape:
        _fail(ctx, impl, f"{what} returned {type(got).__name__} "
              f"{getattr(got, 'shape', '')}, expected a float64 array of shape {x.shape}",
              "return exp(x - m) / s as a new array")
    if np.shares_memory(got, x):
        _fail(ctx, impl, f"{what} returned its input (or a view of it)",
              "return a freshly allocated array")
    if got.dtype != np.float64:
        raise CheckFailed(f"{what} returned dtype {got.dtype}, expected float64 "
                          f"{_seed_text(ctx)}",
                          hint="softmax returns float64: x is converted to float64, and "
                               "exp(x - m) / s stays float64 (no cast to a narrower dtype)")
    got = got.astype(np.float64)
    fallback = (HINT_CHUNK_SOFTMAX if chunk else "softmax(x, state) = exp(x - m) / s")
    if np.isnan(got).any():
        i = int(np.flatnonzero(np.isnan(got))[0])
        _fail(ctx, impl, f"{what} has NaN at index {offset + i} (x = {x[i]!r}, state {state})",
              HINT_SOFTMAX_EMPTY if exact.empty else fallback)
    # Per element: the gap d = m - x rounds once (relative error d*U after exp), exp is
    # within EXP_ULPS ulps, s carries its merge budget, the division rounds once. The
    # absolute floor covers results in the subnormal range (a few steps of 2^-1074).
    gaps = np.where(np.isfinite(x), exact.m - x, 0.0) if not exact.empty else np.zeros_like(x)
    rtol = s_tolerance(exact.n, merges) + (gaps + 2 * EXP_ULPS + 1) * U
    atol = 2.0 ** -1068
    err = np.abs(got - expected)
    allowed = atol + rtol * np.abs(expected)
    # err / allowed overflows to inf where allowed is the subnormal floor: inf ranks worst,
    # as it should, and the warning would only be noise in a learner's output.
    with np.errstate(over="ignore"):
        ratio = err / allowed
    if err.size:
        worst = int(np.argmax(ratio))
        if ctx.max_error is None or err[worst] > ctx.max_error:
            ctx.max_error, ctx.tolerance = float(err[worst]), float(allowed[worst])
        bad = np.flatnonzero(~(err <= allowed))
        if bad.size:
            i = int(bad[np.argmax(ratio[bad])])
            _fail(ctx, impl, f"{what}: {bad.size} of {x.size} values outside tolerance; worst "
                  f"at index {offset + i}: x = {x[i]!r}, got {got[i]!r}, expected "
                  f"{expected[i]!r}, |error| {err[i]:.3g} > {allowed[i]:.3g}", fallback)


HINT_DTYPES = ("from_values refuses int/float32 rows: other real dtypes are converted to "
               "float64 (accept the dtype kinds 'f', 'i' and 'u'; refuse only bool, complex and "
               "non-numbers), and the state is the float64 row's state")


@register(W, "from_values.dtypes", tier="cpu", uses=("from_values",),
          doc="rows of Python ints, int32, uint8, float32 and float16 are accepted and give the "
              "float64 row's state bit for bit; an empty or all -inf row gives identity()")
def from_values_dtypes(ctx, impl, case):
    import numpy as np

    rng = ctx.numpy_rng()
    # Every value converts to float64 exactly, so the state must be the float64 row's, bit for
    # bit. uint8 values up to 255: a difference x - m taken in uint8 would wrap around.
    rows = [("a list of Python ints", rng.integers(-50, 50, 9).tolist()),
            ("an int32 array", rng.integers(-50, 50, 9).astype(np.int32)),
            ("a uint8 array", rng.integers(0, 256, 9).astype(np.uint8)),
            ("a float32 array", rng.normal(0.0, 3.0, 9).astype(np.float32)),
            ("a float16 array", rng.normal(0.0, 3.0, 9).astype(np.float16))]
    for what, row in rows:
        want = _call(ctx, impl, "from_values", np.asarray(row, dtype=np.float64))
        try:
            got = _call(ctx, impl, "from_values", row)
        except CheckFailed as exc:
            original = getattr(exc.__cause__, "__cause__", None)
            if isinstance(original, (TypeError, ValueError)):
                raise CheckFailed(f"from_values of {what}: {exc.message}",
                                  hint=HINT_DTYPES) from exc
            raise
        if not _is_state(impl, got) or _bits(got) != _bits(want):
            _fail(ctx, impl, f"from_values of {what} = {got!r}, but the same values as float64 "
                  f"give {want!r}", HINT_DTYPES)
    # The rows without mass, here too (identity.laws needs merge as well): the first check a
    # learner sees after writing from_values alone must catch a missing all -inf branch
    # (-inf - (-inf) = NaN, which strict mode raises). The empty row is handled before the
    # exercise: the contract all the same.
    empty_bits = _bits(impl.State(-math.inf, 0.0))
    massless = [np.array([], dtype=np.float64), np.full(1, -math.inf),
                np.full(4, -math.inf), np.full(3, -math.inf, dtype=np.float32)]
    for row in massless:
        got = _call(ctx, impl, "from_values", row, all_raise=True)
        if not _is_state(impl, got) or _bits(got) != empty_bits:
            _fail(ctx, impl, f"from_values({row!r}) = {got!r}, expected the identity "
                  f"State(-inf, 0.0)", HINT_NO_MASS)
    ctx.max_error, ctx.tolerance = 0.0, 0.0  # bit for bit
    ctx.note(f"{len(rows)} row dtypes compared with float64 bit for bit; "
             f"{len(massless)} rows without mass give identity()")


@register(W, "bad_calls", tier="cpu", uses=EXERCISES,
          doc="non-States, NaN, +inf, 0-D, 2-D and bool rows, bool or inconsistent (m, s), x "
              "above the state's m (the empty state's too) raise TypeError/ValueError")
def bad_calls(ctx, impl, case):
    import numpy as np

    State = impl.State
    good = _call(ctx, impl, "from_values", [1.0, 2.0])  # a crash here is a FAIL that names the call
    calls = [
        ("merge: a tuple instead of a State", impl.merge, ((0.0, 1.0), good), TypeError, ["State"]),
        ("merge: None", impl.merge, (good, None), TypeError, ["State"]),
        ("log_sum_exp: a float", impl.log_sum_exp, (3.0,), TypeError, ["State"]),
        ("softmax: a tuple state", impl.softmax, ([1.0], (1.0, 1.0)), TypeError, ["State"]),
        ("State: NaN maximum", State, (math.nan, 1.0), ValueError, ["nan"]),
        ("State: NaN sum", State, (0.0, math.nan), ValueError, ["nan"],
         "State accepts s = NaN: NaN fails every comparison (NaN < 0 is False), so test "
         "math.isnan(s) explicitly, as for m"),
        ("State: negative s", State, (0.0, -1.0), ValueError, ["s"]),
        ("State: +inf maximum", State, (math.inf, 1.0), ValueError, ["inf"]),
        ("State: s = 0 with a finite m", State, (1.0, 0.0), ValueError, ["s"]),
        ("State: 0 < s < 1 with a finite m (the maximum alone contributes 1)", State,
         (0.0, 0.5), ValueError, ["s"]),
        ("State: a string", State, ("0", 1.0), TypeError, ["m"]),
        ("State: a bool maximum", State, (True, 1.0), TypeError, ["m"],
         "State accepts a bool: True is not a maximum (a flag passed by mistake); bool is a "
         "subclass of int, so refuse bool (and np.bool_) before the numbers.Real test"),
        ("State: an int beyond float64", State, (10 ** 400, 1.0), ValueError, ["m"]),
        ("State: m = -inf with s = 1 (mass without a maximum)", State, (-math.inf, 1.0),
         ValueError, ["s", "empty"],
         "State accepts m = -inf with s > 0: the empty state is exactly (-inf, 0.0), so "
         "m = -inf needs s = 0 and s = 0 needs m = -inf (test both directions)"),
        ("State: s = +inf", State, (0.0, math.inf), ValueError, ["s", "finite"],
         "State accepts s = +inf: a sum of finitely many terms in [0, 1] is finite; refuse "
         "an infinite s as well as NaN and negative ones"),
        ("from_values: 2-D", impl.from_values, (np.ones((2, 3)),), ValueError, ["1-D"]),
        ("from_values: 0-D", impl.from_values, (np.float64(1.0),), ValueError, ["1-D"],
         "from_values accepts a 0-D scalar: a row is 1-D; test ndim != 1 (not ndim > 1)"),
        ("from_values: NaN entry", impl.from_values, ([1.0, math.nan],), ValueError, ["nan"]),
        ("from_values: +inf entry", impl.from_values, ([1.0, math.inf],), ValueError, ["inf"]),
        ("from_values: strings", impl.from_values, (["a", "b"],), TypeError, ["x"]),
        ("from_values: complex", impl.from_values, (np.ones(3, dtype=complex),), TypeError,
         ["x"]),
        ("from_values: a bool array", impl.from_values, (np.array([True, False]),), TypeError,
         ["x", "bool"],
         "from_values accepts a bool array: True and False are not logits (a mask passed by "
         "mistake); accept only float and int dtypes (kind 'f', 'i', 'u'), refuse bool"),
        ("softmax: 2-D x", impl.softmax, (np.ones((2, 2)), good), ValueError, ["1-D"]),
        ("softmax: NaN in x", impl.softmax, ([math.nan], good), ValueError, ["nan"]),
        ("softmax: x above the state's maximum", impl.softmax, ([5.0], good), ValueError,
         ["state"]),
        ("softmax: x = [5.0] with the empty state (5.0 is above its m = -inf)", impl.softmax,
         ([5.0], impl.identity()), ValueError, ["state"],
         "softmax accepts a finite x with the empty state: every value must be <= state.m, "
         "and the empty state's m = -inf lies below every finite value; test max(x) > m for "
         "the empty state too"),
    ]
    for what, fn, args, error, mentions, *accepted_hint in calls:
        try:
            with strict():
                fn(*args)
        except error as exc:
            missing = [w for w in mentions if w.lower() not in str(exc).lower()]
            if missing:
                ctx.fail(f"{what}: raised {type(exc).__name__}({str(exc)!r}), which does not "
                         f"mention {missing}",
                         hint="name the argument, what it got and what it accepts")
        except Exception as exc:  # noqa: BLE001 - learner code may raise anything
            ctx.fail(f"{what}: raised {type(exc).__name__}: {exc}, expected {error.__name__}",
                     hint="refuse bad calls with a TypeError (wrong kind) or ValueError (bad "
                          "value)")
        else:
            ctx.fail(f"{what}: no error was raised",
                     hint=accepted_hint[0] if accepted_hint else "validate the arguments first")


_IMPORT_PROBE = r"""
import importlib, importlib.util, sys, types
folder, stem = sys.argv[1], sys.argv[2]
package = types.ModuleType("_under_test")
package.__path__ = [folder]  # a package, so relative imports of siblings resolve (and count)
sys.modules["_under_test"] = package
module = importlib.import_module("_under_test." + stem)
at_import = sorted(name for name in ("torch", "triton") if name in sys.modules)
try:  # lazily imported inside a function counts too
    state = module.merge(module.from_values([1.0, 2.0]), module.from_values([3.0]))
    module.log_sum_exp(state)
    module.softmax([1.0, 2.0, 3.0], state)
except Exception as exc:
    print("CALL-ERROR", type(exc).__name__, exc)
after_calls = sorted(name for name in ("torch", "triton") if name in sys.modules)
print("AT-IMPORT", ",".join(at_import))
print("AFTER-CALLS", ",".join(after_calls))
"""


@register(W, "imports.numpy_only", tier="cpu", uses=EXERCISES, timeout=120,
          doc="a fresh Python imports the module (and calls it) without torch or Triton")
def imports_numpy_only(ctx, impl, case):
    import pathlib
    import subprocess
    import sys

    path = pathlib.Path(impl.__file__).resolve()
    done = subprocess.run([sys.executable, "-c", _IMPORT_PROBE, str(path.parent), path.stem],
                          capture_output=True, text=True, timeout=100, cwd=str(path.parent))
    if done.returncode != 0:
        ctx.fail(f"a fresh Python could not import {path.name}: "
                 f"{done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}",
                 hint="the module must import with only numpy and the standard library")
    lines = dict(line.split(" ", 1) if " " in line else (line, "")
                 for line in done.stdout.splitlines())
    at_import = lines.get("AT-IMPORT", "").strip()
    after = lines.get("AFTER-CALLS", "").strip()
    if at_import:
        ctx.fail(f"importing {path.name} imported {at_import}",
                 hint="numpy only: this workshop's module must not import torch or triton, "
                      "directly or through a sibling module")
    if after:
        ctx.fail(f"calling the API of {path.name} imported {after}",
                 hint="numpy only: no torch or triton import inside the functions either")
    if "CALL-ERROR" in lines:
        ctx.note(f"the API raised in the fresh process: {lines['CALL-ERROR']}")
    ctx.note(f"checked in a fresh {pathlib.Path(sys.executable).name} process")
