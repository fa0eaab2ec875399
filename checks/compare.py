"""Comparing an implementation's output with a float64 reference, and saying where it differs.

Every comparison happens in float64 on the CPU. An element passes when

    |got - expected| <= atol + rtol * |expected|

with (rtol, atol) taken from TOLERANCES by the output dtype unless a check passes its own (a
check that does so states why next to the number). A failure names the worst element (largest
ratio of error to tolerance), got vs expected, how many elements are out, the first few of them,
NaN/Inf disagreements, and a hint when one of the check's diagnoses matches the symptom.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from checks.core import CheckFailed


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float
    reason: str


# Keyed by the dtype of the output. eps is the spacing of floating-point numbers just above 1.
TOLERANCES: dict[str, Tolerance] = {
    "float16": Tolerance(
        2e-3, 6e-8,
        "eps(fp16) = 2^-10 ~ 9.8e-4. The math runs in fp32 and is rounded once at the store "
        "(at most eps/2), so 2 eps leaves room for fp32 reduction error without hiding a "
        "one-ulp-per-step bug. atol = 2^-24, one step of the fp16 subnormals that small "
        "probabilities round to."),
    "bfloat16": Tolerance(
        1.6e-2, 1e-30,
        "eps(bf16) = 2^-7 ~ 7.8e-3; one rounding at the store costs at most eps/2, 2 eps is "
        "the budget. bf16 has fp32's exponent range, so no subnormal floor is needed."),
    "float32": Tolerance(
        1e-5, 1e-30,
        "eps(fp32) = 2^-23 ~ 1.2e-7. Reductions over up to 2^17 terms in a tree add about "
        "log2(n) * eps/2 ~ 1e-6 and the hardware exp a few ulp; 1e-5 is about 10x that."),
    "float64": Tolerance(
        1e-12, 1e-300,
        "float64 implementations (CPU workshops) are compared with float64 or exact math; "
        "1e-12 allows reassociation over up to ~1e4 terms."),
}


def tolerance_for(dtype) -> Tolerance:
    name = str(dtype).replace("torch.", "")
    if name not in TOLERANCES:
        raise ValueError(f"no tolerance is defined for dtype {name}")
    return TOLERANCES[name]


# A diagnosis looks at the float64 arrays and the boolean mask of bad elements and returns a
# hint ("tail not masked: ...") when the symptom matches a known mistake, else None.
Diagnosis = Callable[["object", "object", "object"], "str | None"]


def not_from_values(diagnosis: Diagnosis) -> Diagnosis:
    """Mark a diagnosis whose hint does not come from reading the wrong values: it reasons
    from which elements are wrong (a grid that stops short) or from how the check called
    (a side stream, offsets past 2^31). It still speaks when every wrong element was never
    written, where a diagnosis that reads the values would read the fill of fresh memory, not
    the kernel's work (see assert_close's `never_written`)."""
    diagnosis.not_from_values = True
    return diagnosis


def always(hint: str) -> Diagnosis:
    """The diagnosis of a check whose setup names the one mistake it can catch."""
    return not_from_values(lambda got, expected, bad: hint)


def agrees(got, model, rtol: float, atol: float):
    """Elementwise: does `got` equal `model` (a mistake's float64 replay, or another answer)
    within atol + rtol * |model|? NaN agrees with NaN, and an infinity only with the same
    infinity: rtol * inf would accept any number, so an infinite model gets no tolerance.
    The diagnoses that ask "does this model explain the output" all go through here."""
    near = ((got - model).abs() <= atol + rtol * model.abs()) & model.isfinite()
    return near | (got.isnan() & model.isnan()) | (got == model)


def first_index(mask) -> tuple[int, ...]:
    """The index of mask's first True element (mask has at least one)."""
    return tuple(int(i) for i in mask.nonzero()[0])


def never_written_line(never_written) -> str:
    """The failure message's line counting the elements no kernel wrote."""
    return (f"{int(never_written.sum())} never written: they hold the NaN the checks fill fresh "
            f"memory with (first at {first_index(never_written)})")


def never_written_hint(never_written) -> str:
    return (f"output never written: {int(never_written.sum())} of {never_written.numel()} "
            f"elements still hold the NaN the checks fill fresh memory with (first at "
            f"{first_index(never_written)}); "
            "is the store missing, is its mask too narrow, or does the grid stop short of them?")


def assert_close(got, expected, *, name: str = "output", rtol: float | None = None,
                 atol: float | None = None, dtype=None,
                 diagnose: Sequence[Diagnosis] = (), max_listed: int = 5,
                 never_written=None) -> tuple[float, float]:
    """Compare `got` (any tensor) with `expected` (float64); raise CheckFailed on a mismatch.

    `never_written` (a bool tensor of got's shape, from CheckContext.call) marks elements that
    still hold the fill of fresh memory: they are wrong whatever the reference holds (a NaN
    there would otherwise agree with an expected NaN), and when they are all that is wrong,
    only diagnoses marked `not_from_values` speak before the "never written" hint.

    Returns (max_error, tolerance_at_worst) for the result record.
    """
    import torch

    got64 = got.detach().to("cpu", torch.float64)
    exp64 = expected.detach().to("cpu", torch.float64)
    if tuple(got64.shape) != tuple(exp64.shape):
        raise CheckFailed(f"{name} has shape {tuple(got64.shape)}, expected {tuple(exp64.shape)}",
                          hint="wrong output shape: check the allocation in the launcher")
    if rtol is None or atol is None:
        default = tolerance_for(dtype if dtype is not None else got.dtype)
        rtol = default.rtol if rtol is None else rtol
        atol = default.atol if atol is None else atol
    if got64.numel() == 0:
        return 0.0, atol

    err = (got64 - exp64).abs()
    # Non-finite values: equal infinities of the same sign agree; NaN agrees only with NaN.
    # Where the reference is not finite nothing else is allowed (without this, rtol * inf
    # would let any finite value pass where the reference is -inf, and NaN would compare
    # false both ways).
    allowed = torch.where(exp64.isfinite(), atol + rtol * exp64.abs(), torch.zeros_like(err))
    both_nan = got64.isnan() & exp64.isnan()
    same_inf = got64.isinf() & exp64.isinf() & (got64.sign() == exp64.sign())
    agree = both_nan | same_inf
    err = torch.where(agree, torch.zeros_like(err), err)
    err = torch.where(err.isnan(), torch.full_like(err, float("inf")), err)
    bad = (err > allowed) & ~agree
    if never_written is not None:
        never_written = never_written.to("cpu").reshape(got64.shape)
        if not bool(never_written.any()):
            never_written = None
    if never_written is not None:
        bad = bad | never_written
        err = torch.where(never_written, torch.full_like(err, float("inf")), err)
    # error / tolerance, 0 where they agree (0 / 0 would be NaN) and inf past a zero tolerance
    ratio = torch.where(bad, err / allowed, torch.where(err > 0, err / allowed,
                                                        torch.zeros_like(err)))
    worst_flat = int(torch.argmax(ratio).item())
    worst = tuple(int(i) for i in torch.unravel_index(torch.tensor(worst_flat), got64.shape))
    max_error = float(err.reshape(-1)[worst_flat].item())
    tol_at_worst = float(allowed.reshape(-1)[worst_flat].item())
    n_bad = int(bad.sum().item())
    if n_bad == 0:
        return max_error, tol_at_worst

    g, e = got64[worst].item(), exp64[worst].item()
    lines = [f"{name}: {n_bad} of {got64.numel()} elements outside tolerance "
             f"(rtol={rtol:g}, atol={atol:g}); worst at index {worst}: got {g:.6g}, "
             f"expected {e:.6g}, |error| {max_error:.3g} > {tol_at_worst:.3g}"]
    nan_got = int((got64.isnan() & ~exp64.isnan()).sum().item())
    if nan_got:
        lines.append(f"{nan_got} NaN where the reference is a number (first at "
                     f"{first_index(got64.isnan() & ~exp64.isnan())})")
    inf_got = int((got64.isinf() & ~exp64.isinf()).sum().item())
    if never_written is not None:
        lines.append(never_written_line(never_written))
    if inf_got:
        lines.append(f"{inf_got} Inf where the reference is finite")
    finite_got = int((got64.isfinite() & ~exp64.isfinite()).sum().item())
    if finite_got:
        lines.append(f"{finite_got} finite values where the reference is Inf or NaN "
                     f"(first at {first_index(got64.isfinite() & ~exp64.isfinite())})")
    listed = bad.nonzero()[:max_listed]
    lines.append("first mismatches: " + "; ".join(
        f"{tuple(int(i) for i in idx)} got {got64[tuple(idx)].item():.6g} "
        f"expected {exp64[tuple(idx)].item():.6g}" for idx in listed.tolist()))
    # When every wrong element was never written, the values there are our fill, not the
    # kernel's work: a diagnosis that reads them (a NaN read as overflow, say) would mislead.
    only_unwritten = never_written is not None and bool((bad <= never_written).all())
    hint = ""
    for diagnosis in diagnose:
        if only_unwritten and not getattr(diagnosis, "not_from_values", False):
            continue
        hint = diagnosis(got64, exp64, bad) or ""
        if hint:
            break
    # Only where unwritten elements are at least half of what is wrong: a computed value can
    # carry the fill's bits by chance (16-bit arithmetic on raw bits, say), and a hint about a
    # few such elements would hide what went wrong with all the others.
    if not hint and never_written is not None and 2 * int(never_written.sum()) >= n_bad:
        hint = never_written_hint(never_written)
    if not hint and bool((got64 == 0).all()) and bool((exp64 != 0).any()):
        # Last, so that a workshop's own reading of an all-zero output (fused GEMM's zeroed
        # padding, say) is heard first.
        hint = ("the output is all zeros: is the store missing, is its mask never true, or does "
                "the launcher return a tensor that no kernel wrote?")
    raise CheckFailed("\n".join(lines), hint=hint, max_error=max_error, tolerance=tol_at_worst)


# ---------------------------------------------------------------------------------------------
# Reusable diagnoses
# ---------------------------------------------------------------------------------------------
def whole_rows_wrong(hint: str, *, fraction: float = 0.9) -> Diagnosis:
    """Nearly every element of each bad row is wrong (a per-row statistic is wrong)."""

    def diagnose(got, expected, bad):
        rows = bad.reshape(-1, got.shape[-1])
        bad_rows = rows.any(dim=1)
        if not bool(bad_rows.any()):
            return None
        share = rows[bad_rows].float().mean().item()
        return hint if share >= fraction else None

    return diagnose


def has_nan(hint: str) -> Diagnosis:
    def diagnose(got, expected, bad):
        return hint if bool((got.isnan() & ~expected.isnan()).any()) else None

    return diagnose


def ratio_constant_per_row(hint: str, *, rtol: float = 1e-3) -> Diagnosis:
    """got = c_row * expected for a per-row constant c != 1 (a wrong normalizer)."""

    def diagnose(got, expected, bad):
        import torch

        g, e = got.reshape(-1, got.shape[-1]), expected.reshape(-1, expected.shape[-1])
        safe = e.abs() > 1e-30
        if not bool(safe.any()):
            return None
        ratio = torch.where(safe, g / torch.where(safe, e, torch.ones_like(e)), torch.nan)
        med = ratio.nanmedian(dim=1).values
        spread = (ratio - med[:, None]).abs().nan_to_num(0.0).amax(dim=1)
        consistent = bool((spread <= rtol * med.abs().clamp_min(1e-30)).all())
        off = bool(((med - 1).abs() > 10 * rtol).any())
        # A normalizer scales a row by a positive factor. A row of zeros (never written) is
        # "constant" too, and a row of one element is constant whatever went wrong: neither
        # says anything about the normalizer.
        scaled = bool((med > 0).all()) and g.shape[-1] >= 2
        return hint if consistent and off and scaled else None

    return diagnose
