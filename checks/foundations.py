"""Checks for the foundations workshop: `add(x, y)` and `row_softmax(x)`.

References are float64 computations on the CPU. Shapes include a power of two, "weird" sizes
and sizes smaller than one block; interpreter runs use smaller tables than GPU runs.
"""

from __future__ import annotations

import math

from checks import launches
from checks.compare import always, not_from_values, ratio_constant_per_row
from checks.core import Case, CheckFailed, Unavailable, register

W = "foundations"
DTYPES = ("float16", "bfloat16", "float32")


def _add_cases(device: str) -> list[Case]:
    sizes = (1, 7, 1024, 1000, 4097) if device != "cuda" else (1, 7, 1024, 1000, 4097, 1 << 20, 1_000_003)
    cases = [Case(n=n, dtype=d, block=b) for n in sizes for d in DTYPES for b in (128, 1024)
             if not (d != "float32" and b == 128 and n > 5000)]
    # 2-D tensors (add takes any shape): n is x.numel(), not len(x) = 33 rows
    cases += [Case(shape=(33, 31), dtype=d, block=128) for d in DTYPES]
    # nothing to add: a fresh empty output, no launch (a grid of 0 programs is no launch)
    cases += [Case(n=0, dtype="float32", block=1024)]
    return cases


@register(W, "add.values", tier="kernel", uses=("add",), cases=_add_cases,
          doc="x + y against float64 (1-D and 2-D, and empty), tails owned by the last program; "
              "block reaches the kernel as BLOCK")
def add_values(ctx, impl, case):
    shape = case.get("shape", (case.get("n"),))
    x = ctx.randn(shape, case.dtype)
    y = ctx.randn(shape, case.dtype)
    try:
        with launches.recording() as launched:
            out = ctx.call(impl.add, x, y, block=case.block, expect_shape=x.shape,
                           expect_dtype=case.dtype)
    except CheckFailed as exc:
        if x.numel() == 0 and "returned one of its inputs" not in exc.message:
            exc.hint = EMPTY_HINT
        raise
    expected = x.double().cpu() + y.double().cpu()
    ctx.assert_close(out, expected, name=f"add(x, y) of shape {tuple(shape)}",
                     diagnose=[_first_rows_only(x), _grid_too_small(case.block),
                               _one_load_first_block(x, y, case.block),
                               _first_block_only(case.block), _one_operand_twice(x, y)])
    # Right values do not show that block reached the kernel (any BLOCK adds correctly).
    _knobs_ignored(launched, "add(x, y)", dict(block=case.block))


# Each knob and the kernel argument it sets. num_warps and num_stages are launch options every
# kernel takes; a kernel without one of the other names is not compared (yours may name it
# differently).
_KNOB_ARGUMENTS = {"block": "BLOCK", "num_warps": "num_warps"}


def _knobs_ignored(launched, call: str, knobs: dict) -> None:
    """FAIL if a kernel the call launched ran with another value than a knob the call passed
    (the values stay right, so only the launch record shows that the knob did nothing)."""
    ignored = launches.ignored_knob(launched, knobs, _KNOB_ARGUMENTS, ("num_warps", "num_stages"))
    if ignored:
        knob, wanted, launch, shown = ignored
        raise CheckFailed(
            f"{call} with {knob}={wanted!r} launched {launch.name} with {shown}",
            hint=f"knob ignored: {knob}={wanted!r} was asked for, but {launch.name} ran "
                 f"with {shown}; pass the caller's {knob} to the launch (a default "
                 "applies only when it is left out)")


EMPTY_HINT = ("zero-size input: return the freshly allocated empty output before launching "
              "(a grid or a block of 0 is not a launch)")


@register(W, "add.fresh_output", tier="kernel", uses=("add",),
          cases=[Case(n=1000, dtype="float32")],
          doc="two calls of one size: the first output keeps its values (no cached buffer)")
def add_fresh_output(ctx, impl, case):
    first = [ctx.randn((case.n,), case.dtype) for _ in range(2)]
    out = ctx.call(impl.add, *first, expect_shape=(case.n,), expect_dtype=case.dtype)
    expected = first[0].double().cpu() + first[1].double().cpu()
    ctx.assert_close(out, expected, name="add(x, y), first call")
    second = [ctx.randn((case.n,), case.dtype) for _ in range(2)]
    out2 = ctx.call(impl.add, *second, expect_shape=(case.n,), expect_dtype=case.dtype)
    ctx.assert_close(out2, second[0].double().cpu() + second[1].double().cpu(),
                     name="add(x, y), second call")
    ctx.assert_close(out, expected, name="the first call's output, after a second call",
                     diagnose=[_overwritten])


@not_from_values
def _overwritten(got, expected, bad):
    return ("the second call overwrote the first call's output: allocate a fresh output on "
            "every call (no cached buffer)")


def _first_rows_only(x):
    """Diagnosis: only the first len(x) elements are right (n taken as len(x), the number of
    rows, instead of x.numel())."""

    def diagnose(got, expected, bad):
        rows = x.shape[0] if x.dim() > 1 else 0
        flat = bad.reshape(-1)
        # the first wrong element is element len(x) (and nearly all after it are wrong)
        if not rows or rows >= flat.numel() or bool(flat[:rows].any()) or not bool(flat[rows]):
            return None
        if float(flat[rows:].double().mean()) < 0.9:
            return None
        return (f"only the first {rows} elements are right, as many as x has rows: n must be "
                f"x.numel() (all {flat.numel()} elements of the {tuple(x.shape)} tensor), not "
                "len(x)")

    return not_from_values(diagnose)


def _one_operand_twice(x, y):
    """Diagnosis: the output is x + x (or y + y): both loads read the same pointer."""

    def diagnose(got, expected, bad):
        from checks.compare import agrees, tolerance_for

        tol = tolerance_for(x.dtype)
        for name, other, t in (("x", "y", x), ("y", "x", y)):
            model = 2 * t.detach().cpu().double()
            if bool(agrees(got, model, tol.rtol, tol.atol).all()):
                return (f"one operand loaded twice: the output is {name} + {name}; load {other} "
                        f"from {other}_ptr (each tensor has its own pointer)")
        return None

    return diagnose


def _grid_too_small(block: int):
    """Diagnosis: everything is right up to a multiple of BLOCK past the first block, and
    wrong from there to the end: the grid stopped short (n // BLOCK programs, rounded down)."""

    def diagnose(got, expected, bad):
        flat = bad.reshape(-1)
        n = flat.numel()
        start = n // block * block
        if start <= block or start >= n or bool(flat[:start].any()) or not bool(flat[start]):
            return None
        if float(flat[start:].double().mean()) < 0.9:
            return None
        return (f"grid too small: the elements from {start} = {n // block} * BLOCK on are "
                f"wrong (never written), as if only n // BLOCK = {n // block} programs ran; "
                f"launch triton.cdiv(n, BLOCK) = {-(-n // block)} programs")

    return not_from_values(diagnose)


def _first_block_only(block: int):
    def diagnose(got, expected, bad):
        idx = bad.nonzero()
        if len(idx) and int(idx.min()) >= block:
            return ("program id not used: every element past the first block is wrong, as if "
                    "each program computed block 0 (offsets = pid * BLOCK + arange)")
        return None

    return not_from_values(diagnose)


def _softmax_cases(device: str) -> list[Case]:
    if device == "cuda":
        shapes = [(1, 1), (3, 5), (8, 17), (64, 1000), (128, 1024), (37, 4097), (256, 16384),
                  (4, 65536), (1823, 781)]
    else:
        # (1, 65536): the widest row allowed, one block of exactly _MAX_ROW_BLOCK lanes
        shapes = [(1, 1), (3, 5), (8, 17), (4, 1000), (2, 1024), (3, 4097), (1, 65536)]
    # zero-size: no rows, and rows of no columns (a fresh empty output, nothing launched)
    cases = ([Case(shape=s, dtype=d) for s in shapes for d in DTYPES]
             + [Case(shape=s, dtype="float32") for s in ((0, 5), (5, 0))])
    # num_warps given, other than the default for the width (1 for 17 columns, 4 for 1000)
    cases += [Case(shape=(8, 17), dtype="float32", num_warps=2),
              Case(shape=(4, 1000), dtype="float16", num_warps=1)]
    return cases


def _softmax64(x):
    return x.double().cpu().softmax(dim=-1)


def _tail_loaded_as_zero(x, block: int):
    """Diagnosis: the output is what a row loaded with 0.0 (not -inf) in its padded lanes gives,
    modelled in float64 from the same inputs. The per-row ratio test below cannot see this on
    16-bit rows: their rounding (eps up to 2^-7) spreads the ratio beyond its rtol, and a few
    padded lanes change the denominator by less than its 1% threshold."""

    def diagnose(got, expected, bad):
        import torch

        from checks.compare import agrees, tolerance_for

        width = x.shape[-1]
        if width == block or not bool(bad.any()):
            return None
        x64 = x.detach().cpu().double()
        m = x64.amax(dim=-1, keepdim=True).clamp_min(0.0)  # the 0.0 lanes take part in the max
        numerator = torch.exp(x64 - m)
        model = numerator / (numerator.sum(dim=-1, keepdim=True)
                             + (block - width) * torch.exp(-m))
        tol = tolerance_for(x.dtype)
        close = agrees(got, model, tol.rtol, tol.atol)
        if bool(close[bad].all()) and float(close.double().mean()) >= 0.99:
            return (f"tail not masked: the output matches padded lanes loaded as 0.0 instead of "
                    f"-inf: each of the {block - width} lanes past n_cols = {width} adds "
                    "exp(0 - max) to the denominator (and 0 joins the max); load them with "
                    "other=-float(\"inf\")")
        return None

    return diagnose


def _max_as_denominator(x):
    """Diagnosis: the output is exp(x - max), each row divided by the largest numerator (1)
    instead of their sum: tl.max where tl.sum belongs. On a row of identical values every
    numerator is 1, so a mean for the sum (n_cols / n_cols) gives the same output: where
    _denominator_is_mean matches too, it is named after it."""

    def diagnose(got, expected, bad):
        import torch

        from checks.compare import agrees, tolerance_for

        x64 = x.detach().cpu().double()
        model = torch.exp(x64 - x64.amax(dim=-1, keepdim=True))
        tol = tolerance_for(x.dtype)
        if x64.shape[-1] < 2 or not bool(agrees(got, model, tol.rtol, tol.atol).all()):
            return None
        # (storing the numerators undivided gives the very same output: name both)
        hint = ("denominator is the max, not the sum, or the numerators stored undivided: "
                "every row equals exp(x - max) (its largest element is 1); divide by "
                "tl.sum(numerator, axis=0) and store y = numerator / denominator")
        mean = _denominator_is_mean(x)(got, expected, bad)
        return "; or, the same output here, ".join([hint, *([mean] if mean else [])])

    return diagnose


def _finite_tail_sentinel(x):
    """Diagnosis: rows whose logits all lie far below 0 (-1e31) lost their mass to the padded
    lanes, which therefore held a finite value larger than every logit (other=-1e30, or the
    dtype's lowest number) instead of -inf: they won the max, exp(0) = 1 each joined the sum,
    and they are never stored."""

    def diagnose(got, expected, bad):
        width = x.shape[-1]
        block = 1 << max(width - 1, 0).bit_length()
        if width == block or not bool(got.isfinite().all()):
            return None
        row_max = x.detach().cpu().double().amax(dim=-1)
        sums = got.sum(dim=-1)
        lost = (sums < 0.5) & (expected.sum(dim=-1) > 0.5) & (row_max < -1e4) & row_max.isfinite()
        if not bool(lost.any()):
            return None
        r = int(lost.nonzero()[0])
        return (f"tail padded with a finite value instead of -inf: every logit of row {r} is "
                f"at most {float(row_max[r]):.3g}, so the {block - width} padded lanes past "
                f"n_cols = {width}, loaded as a finite number above that (-1e30? the dtype's "
                "lowest?), won the max and took the row's sum (the stored row sums to "
                f"{float(sums[r]):.3g}); load them with other=-float(\"inf\")")

    return diagnose


def _row_offset_without_stride(x):
    """Diagnosis: row r of the output is the softmax of x.flatten()[r : r + n_cols], the n_cols
    elements from x_ptr + r on (the row index added to the pointer without the row stride):
    row 0 is right, every later row slides one element along the flat memory."""

    def diagnose(got, expected, bad):
        import torch

        from checks.compare import agrees, tolerance_for

        n_rows, n_cols = x.shape
        if n_rows < 2 or n_cols < 2:
            return None
        flat = x.detach().cpu().double().reshape(-1)
        # r + n_cols <= n_rows * n_cols for every row r: the mistake stays inside x
        model = torch.stack([flat[r:r + n_cols] for r in range(n_rows)]).softmax(dim=-1)
        tol = tolerance_for(x.dtype)
        if bool(agrees(expected, model, tol.rtol, tol.atol).all()):
            return None  # (the shifted reads give the right softmax: nothing to tell apart)
        if not bool(agrees(got, model, tol.rtol, tol.atol).all()):
            return None
        return (f"row offset without the row stride: row r of the output is the softmax of "
                f"x.flatten()[r : r + {n_cols}] (row 0 is right, each later row starts one "
                "element further along memory, not one row); the row starts at x_ptr + row * "
                "stride_xm")

    return diagnose


def _rows_loaded_from_row_zero(x):
    """Diagnosis: every row of the output equals softmax(x[0]) (row 0 right): every program
    loaded row 0, the load address without the row offset (x_ptr + cols). Silent when every
    row of x has row 0's softmax (rows of identical values): nothing tells the two apart."""

    def diagnose(got, expected, bad):
        from checks.compare import agrees, tolerance_for

        n_rows, n_cols = x.shape
        if n_rows < 2 or n_cols < 1:
            return None
        model = expected[0:1].expand_as(expected)
        tol = tolerance_for(x.dtype)
        if (bool(agrees(expected, model, tol.rtol, tol.atol).all())
                or not bool(agrees(got, model, tol.rtol, tol.atol).all())):
            return None
        return (f"load address without the row offset: every row of the output equals "
                f"softmax(x[0]) (row 0 is right, rows 1..{n_rows - 1} repeat it): every program "
                "loaded row 0; load at x_ptr + row * stride_xm + cols")

    return diagnose


def _denominator_sums_z(x, block: int):
    """Diagnosis: the output is exp(z) / sum(z), z = x - max over the block's lanes: the
    denominator sums z instead of exp(z). The padded lanes hold z = -inf, so a ragged row's sum
    is -inf (every output -0.0); a row of one element divides by 0 (inf)."""

    def diagnose(got, expected, bad):
        import torch

        from checks.compare import agrees, tolerance_for

        x64 = x.detach().cpu().double()
        z = x64 - x64.amax(dim=-1, keepdim=True)
        padding = -math.inf if block > x.shape[-1] else 0.0  # the padded lanes' z
        model = torch.exp(z) / (z.sum(dim=-1, keepdim=True) + padding)
        tol = tolerance_for(x.dtype)
        # Ragged rows alone model as all zeros, which any output of zeros matches (a finite
        # tail padding on logits near -1e31, say): only a row of nonzeros names the mistake.
        if (not bool((model != 0).any()) or bool(agrees(expected, model, tol.rtol, tol.atol).all())
                or not bool(agrees(got, model, tol.rtol, tol.atol).all())):
            return None
        return ("denominator sums x - max, not exp(x - max): the output matches exp(z) / "
                "sum(z) with z = x - max (a row of one element gives 1 / 0 = inf; the padded "
                "lanes' z = -inf makes a ragged row's sum -inf and every output -0); divide by "
                "tl.sum(numerator, axis=0)")

    return diagnose


def _denominator_sums_exp_x(x, probe):
    """Diagnosis: the denominator sums exp(x), not exp(z) = exp(x - max): the output is
    exp(x - max) / sum(exp(x)), every row the softmax divided by exp(max). Replayed in float64
    with float32's range, as the kernel computes: terms below its smallest number vanish, and
    a sum past its largest is inf (every output 0). Where that replay says nothing of its own
    (zeros, Inf or NaN throughout: huge or far-negative logits, whose outputs other mistakes
    give too), the power-of-two probe must come out as the same mistake."""

    def replay(x64):
        import torch

        f32 = torch.finfo(torch.float32)
        exp = torch.exp(x64)
        exp = torch.where(exp < f32.smallest_normal * 2.0 ** -23, 0.0, exp)  # below 2^-149
        total = exp.sum(dim=-1, keepdim=True)
        total = torch.where(total > f32.max, torch.inf, total)
        numerator = torch.exp(x64 - x64.amax(dim=-1, keepdim=True))
        numerator = torch.where(numerator < f32.smallest_normal * 2.0 ** -23, 0.0, numerator)
        return numerator / total

    def diagnose(got, expected, bad):
        from checks.compare import agrees, tolerance_for

        if x.numel() == 0:
            return None
        tol = tolerance_for(x.dtype)
        x64 = x.detach().cpu().double()
        model = replay(x64).to(x.dtype).double()  # rounded once at the store, as the kernel
        if (bool(agrees(expected, model, tol.rtol, tol.atol).all())
                or not bool(agrees(got, model, tol.rtol, tol.atol).all())):
            return None
        telling = model.isfinite() & (model != 0) & ~agrees(expected, model, tol.rtol, tol.atol)
        if not bool(telling.any()):
            seen = probe()
            if seen is None:
                return None
            p, out = seen
            if (not bool(agrees(out, replay(p), tol.rtol, tol.atol).all())
                    or bool(agrees(out, p.softmax(dim=-1), tol.rtol, tol.atol).all())):
                return None
        return ("the denominator sums exp(x), not exp(x - max): the output matches "
                "exp(x - max) / sum(exp(x)), every row off by the factor exp(max) (and "
                "sum(exp(x)) overflows to inf for logits past 88, making every output 0); "
                "divide by the sum of the numerators, tl.sum(numerator, axis=0)")

    return diagnose


def _rounded_through_fp16(x):
    """Diagnosis: every output is a float16 number and the outputs equal the softmax rounded to
    float16 (then stored in x's dtype): the store cast to a fixed tl.float16, not to the output's
    dtype. A float32 output then carries float16's 11 bits; a bfloat16 one loses its tiny values
    (float16's subnormals are spaced 2^-24 apart, bfloat16 keeps float32's exponent range)."""

    def diagnose(got, expected, bad):
        import torch

        from checks.compare import agrees, tolerance_for

        if x.dtype == torch.float16 or not bool(got.isfinite().all()):
            return None
        model = expected.to(torch.float16).double()
        tol, tol16 = tolerance_for(x.dtype), tolerance_for(torch.float16)
        # The float64 truth and the kernel's float32 result can round to neighbouring float16
        # numbers: allow one float16 rounding (and bfloat16's own) between got and the model.
        on_fp16_grid = bool((got.to(torch.float16).double() == got).all())
        if (not on_fp16_grid or bool(agrees(expected, model, tol.rtol, tol.atol).all())
                or not bool(agrees(got, model, tol.rtol + tol16.rtol, tol16.atol).all())):
            return None
        name = str(x.dtype).replace("torch.", "")
        return ("output rounded through float16: every output is a float16 number, the "
                f"softmax rounded to float16 and then stored as {name}; round the float32 "
                "result once, cast to the output's dtype (out_ptr.dtype.element_ty), not to a "
                "fixed tl.float16")

    return diagnose


def _softmax_diagnoses(width: int, x=None, impl=None, launched=None):
    # One block spans the whole row (the next power of two), so the padded lanes are never
    # stored: an unmasked tail shows as a wrong denominator on every column, not as wrong
    # last columns.
    block = 1 << max(width - 1, 0).bit_length()
    probe = _probe(impl, x) if impl is not None and x is not None else None
    return [
        *([_rows_stored_to_row_zero(x, launched)] if launched is not None else []),
        *([_shift_sign_flipped(x, probe), _shift_is_mean(x, _probe(impl, x, _MEAN_PROBE_ROWS)),
           _shift_is_max_abs(x, _probe(impl, x, _ABS_PROBE_ROWS)),
           _tail_padded_plus_inf(x, probe, _probe(impl, x, _RAGGED_PROBE_ROWS))]
          if probe is not None else []),
        *([_row_offset_without_stride(x), _rows_loaded_from_row_zero(x),
           _denominator_sums_z(x, block), _denominator_sums_x(x, block, probe),
           *([_denominator_sums_exp_x(x, probe)] if probe is not None else []),
           _tail_loaded_as_zero(x, block), _max_as_denominator(x),
           *([_statistics_in_fp16(x, impl)] if impl is not None else []),
           _rounded_through_fp16(x),
           _multiplied_by_sum(x), _division_reversed(x), _denominator_is_mean(x),
           _logits_scaled(x)]
          if x is not None else []),
        # Padded lanes can only add to the denominator: the rows come out too small. (A row
        # without padding comes out right then: a wrong power-of-two probe is another mistake.)
        lambda g, e, bad: ("tail not masked: padded lanes were loaded as 0 (or garbage) instead "
                           "of -inf, so each adds exp(0 - max) to the denominator"
                           if width != block and bool(bad.any())
                           and bool((g.sum(dim=-1) < e.sum(dim=-1)).all())
                           and ratio_constant_per_row("x")(g, e, bad)
                           and (probe is None or _probe_right(x, probe)) else None),
        ratio_constant_per_row("the normalizer is wrong: every element of a row is off by the "
                               "same factor (sum over the wrong lanes?)"),
    ]


@register(W, "row_softmax.values", tier="kernel", uses=("row_softmax",), cases=_softmax_cases,
          doc="row softmax against float64, ragged widths, all dtypes; num_warps reaches the launch")
def row_softmax_values(ctx, impl, case):
    x = ctx.randn(case.shape, case.dtype, scale=3.0)
    knobs = {"num_warps": case.num_warps} if case.get("num_warps") else {}
    try:
        with launches.recording() as launched:
            out = ctx.call(impl.row_softmax, x, expect_shape=case.shape,
                           expect_dtype=case.dtype, expect_contiguous=True, **knobs)
    except CheckFailed as exc:
        # Only a refusal before any launch is the width limit; a ValueError from inside the
        # kernel (Triton's own, on a wrong axis say) is a different mistake.
        if case.shape[1] == 65536 and "ValueError" in exc.message and not launched:
            exc.hint = ("width limit off by one: a row of exactly 65536 columns fills the "
                        "largest block (65536 lanes) and must be accepted; refuse only n_cols > "
                        "65536")
        elif x.numel() == 0 and "returned one of its inputs" not in exc.message:
            exc.hint = EMPTY_HINT
        elif "OutOfBoundsAccess" in exc.message:
            exc.hint = _row_stride_is_block(impl, x) or exc.hint
        raise
    ctx.assert_close(out, _softmax64(x), name="row_softmax(x)",
                     diagnose=_softmax_diagnoses(case.shape[1], x, impl, launched))
    _knobs_ignored(launched, "row_softmax(x)", knobs)


@register(W, "row_softmax.extreme", tier="kernel", uses=("row_softmax",),
          cases=[Case(shape=(4, 33), dtype="float16", magnitude=60000.0),
                 Case(shape=(4, 33), dtype="bfloat16", magnitude=1e30),
                 Case(shape=(4, 33), dtype="float32", magnitude=1e4),
                 # logits in -(0.9..1) * 1e31 on a ragged width: the padded lanes must be -inf,
                 # since any finite stand-in (-1e30, say) lies above every one of them
                 # (float16 cannot show it: its -1e30 is -inf)
                 Case(shape=(4, 33), dtype="float32", magnitude=-1e31),
                 Case(shape=(4, 33), dtype="bfloat16", magnitude=-1e31),
                 Case(shape=(3, 8), dtype="float32", magnitude=0.0)],
          doc="huge finite logits (max subtraction), logits near -1e31 (the tail's -inf) and "
              "rows of identical values")
def row_softmax_extreme(ctx, impl, case):
    torch = ctx.torch
    if case.magnitude:
        # Values spread over [0.9, 1] * magnitude: exp(x) overflows without the max shift
        # (a positive magnitude), or every logit lies below any finite tail padding (-1e31).
        x = ctx.rand_like_distinct(case.shape, "float64", 0.9, 1.0) * case.magnitude
        x = x.to(getattr(torch, case.dtype))
    else:
        x = torch.full(case.shape, 3.25, dtype=getattr(torch, case.dtype), device=ctx.torch_device)
    with launches.recording() as launched:
        out = _call_row_softmax(ctx, impl, x, case)
    # exp overflows float32 past 88.7: only then can a missing shift make inf / inf = NaN.
    huge = float(x.double().amax()) > 88.0
    block = 1 << max(case.shape[1] - 1, 0).bit_length()
    probe = _probe(impl, x)
    ctx.assert_close(out, _softmax64(x), name="row_softmax(x)", diagnose=[
        _rows_stored_to_row_zero(x, launched),
        _shift_is_mean(x, _probe(impl, x, _MEAN_PROBE_ROWS)),
        _shift_is_max_abs(x, _probe(impl, x, _ABS_PROBE_ROWS)),
        _tail_padded_plus_inf(x, probe, _probe(impl, x, _RAGGED_PROBE_ROWS)),
        _shift_sign_flipped(x, probe, model_required=False),
        _rows_loaded_from_row_zero(x),
        _denominator_sums_z(x, block),
        _denominator_sums_x(x, block, probe),
        _denominator_sums_exp_x(x, probe),
        _statistics_in_fp16(x, impl),
        _division_reversed(x),  # before the overflow lambda: its inf stores are 1 / a tiny softmax
        _finite_tail_sentinel(x),
        _max_taken_as_zero(x),
        lambda g, e, bad: ("missing max subtraction: exp(x) overflowed to inf and inf/inf = NaN"
                           if huge and bool(g.isnan().any() | g.isinf().any()) else None),
        _rounded_through_fp16(x),
        _multiplied_by_sum(x),
        # (a row of identical values comes out 1 everywhere for the max and for the mean:
        # _max_as_denominator names both)
        _max_as_denominator(x),
        _denominator_is_mean(x),
        _logits_scaled(x)])


def _max_taken_as_zero(x):
    """Diagnosis: rows whose logits all lie far below 0 came out Inf or NaN, as when the shift
    is max(row max, 0) (a max seeded with 0, or no shift at all): exp(x - 0) underflows to 0 in
    float32, the sum is 0 and 0 / 0 = NaN."""

    def diagnose(got, expected, bad):
        row_max = x.detach().cpu().double().amax(dim=-1)
        far = row_max.isfinite() & (row_max < -80.0)
        broken = (~got.isfinite()).any(dim=-1) & expected.isfinite().all(dim=-1)
        if not bool((far & broken).any()):
            return None
        r = int((far & broken).nonzero()[0])
        return (f"max taken as 0, not the row's max: every logit of row {r} is at most "
                f"{float(row_max[r]):.4g}, so exp(x - 0) underflows to 0 and the sum is 0 "
                "(0 / 0 = NaN). Subtract the row's own max, tl.max(x, axis=0) (not max(max, 0), "
                "and not a running max started at 0)")

    return diagnose


@register(W, "row_softmax.fresh_output", tier="kernel", uses=("row_softmax",),
          cases=[Case(shape=(4, 33), dtype="float32")],
          doc="two calls of one shape: the first output keeps its values (no cached buffer)")
def row_softmax_fresh_output(ctx, impl, case):
    x = ctx.randn(case.shape, case.dtype, scale=3.0)
    with launches.recording() as launched:
        out = _call_row_softmax(ctx, impl, x, case)
    ctx.assert_close(out, _softmax64(x), name="row_softmax(x), first call",
                     diagnose=_softmax_diagnoses(case.shape[1], x, impl, launched))
    x2 = ctx.randn(case.shape, case.dtype, scale=3.0)
    out2 = ctx.call(impl.row_softmax, x2, expect_shape=case.shape, expect_dtype=case.dtype)
    ctx.assert_close(out2, _softmax64(x2), name="row_softmax(x2), second call")
    ctx.assert_close(out, _softmax64(x), name="the first call's output, after a second call",
                     diagnose=[_overwritten])


@register(W, "row_softmax.rows_sum_to_one", tier="kernel", uses=("row_softmax",),
          cases=[Case(shape=(16, 257), dtype=d) for d in DTYPES],
          doc="every row sums to 1 within n * eps/2 of the output dtype")
def rows_sum_to_one(ctx, impl, case):
    x = ctx.randn(case.shape, case.dtype, scale=2.0)
    out = _call_row_softmax(ctx, impl, x, case)
    try:
        ctx.assert_rows_sum_to_one(out, -1, case.dtype,
                                   hint="the denominator must be the sum over the real columns")
    except CheckFailed as exc:
        # A mistake whose output the values check names gets the same name here: its comparison
        # and diagnoses, asked only for their hint (rows of NaN included: a store that never
        # reached a row leaves the fresh output's NaN fill there).
        try:
            ctx.assert_close(out, _softmax64(x), name="row_softmax(x)",
                             diagnose=_softmax_diagnoses(case.shape[1], x, impl))
        except CheckFailed as values:
            exc.hint = values.hint or exc.hint
        raise


@register(W, "bad_calls", tier="kernel", uses=("add", "row_softmax"),
          doc="bad calls raise TypeError/ValueError before any launch")
def bad_calls(ctx, impl, case):
    torch = ctx.torch
    dev = ctx.torch_device
    x = ctx.randn((4, 8))
    # add reads both inputs as flat memory: a strided view would pair the wrong elements.
    contiguous = ("add reads x and y as flat memory (element k at offset k): a non-contiguous "
                  "view (x.t(), a slice) must be refused with a ValueError that says "
                  "'contiguous', or add pairs the wrong elements")
    _refuses(ctx, contiguous, impl.add, x, ctx.randn((8, 4)).t(), mentions=["contiguous"],
             what="add: non-contiguous y")
    _refuses(ctx, contiguous, impl.add, ctx.randn((8, 4)).t(), x, mentions=["contiguous"],
             what="add: non-contiguous x")
    ctx.expect_error(impl.add, x, ctx.randn((4, 9)), mentions=["y"], what="add: shape mismatch")
    ctx.expect_error(impl.add, x, x.half(), mentions=["y"], what="add: dtype mismatch")
    ctx.expect_error(impl.add, x, [1, 2], mentions=["y"], what="add: y not a tensor")
    ctx.expect_error(impl.add, x.int(), x.int(), mentions=["x"], what="add: integer dtype")
    float64 = ("float64 computed in float32 and returned as float64 claims precision it does "
               "not have: compute it in float64, or refuse float64 with a TypeError or "
               "ValueError naming x's dtype (the reference's kernels take float16, bfloat16 "
               "and float32)")
    xd = x.double()
    _refused_or_right(ctx, float64, impl.add, xd, xd, expected=xd.cpu() + xd.cpu(), rtol=1e-15,
                      mentions=["x", "dtype"], what="add: float64")
    ctx.expect_error(impl.add, x, x, block=100, mentions=["block"], what="add: block not 2^k")
    ctx.expect_error(impl.row_softmax, ctx.randn((8,)), mentions=["2-D"], what="row_softmax: 1-D")
    ctx.expect_error(impl.row_softmax, ctx.randn((2, 3, 4)), mentions=["2-D"],
                     what="row_softmax: 3-D")
    ctx.expect_error(impl.row_softmax, torch.ones((2, 3), dtype=torch.int32, device=dev),
                     mentions=["x"], what="row_softmax: integer dtype")
    ctx.expect_error(impl.row_softmax, x.t(), mentions=["contiguous"],
                     what="row_softmax: non-contiguous")
    _refused_or_right(ctx, float64, impl.row_softmax, xd, expected=xd.cpu().softmax(-1),
                      rtol=1e-12, mentions=["x", "dtype"], what="row_softmax: float64")
    # One block holds a whole row: the reference stops at 65536 lanes (workshop 5 splits wider
    # rows). A launcher that handles wider rows correctly is just as good.
    wide = ctx.randn((1, 65537))
    _refused_or_right(ctx, "rows wider than 65536 columns do not fit one block: refuse them "
                      "with a ValueError that names the limit, 65536 (or compute them right)",
                      impl.row_softmax, wide, expected=wide.double().cpu().softmax(-1),
                      rtol=None, mentions=["65536"], what="row_softmax: 65537 columns")
    warps = ("num_warps must be a power of two from 1 to 32 (Triton lays a program's threads "
             "out in powers of two): refuse any other value with a ValueError naming num_warps")
    # 0 included: `if num_warps:` would skip the check and quietly use the default
    for bad in (0, 3, 64):
        _refuses(ctx, warps, impl.row_softmax, x, num_warps=bad, mentions=["num_warps"],
                 what=f"row_softmax: num_warps={bad}")
    # Tensors without dense memory behind (pointer, strides), and a view whose memory holds the
    # values before a lazy negation (user code makes one with `z.conj().imag`).
    ctx.expect_error(impl.add, x, x.to_sparse(), mentions=["y", "dense"], what="add: sparse y")
    ctx.expect_error(impl.row_softmax, x.to_sparse(), mentions=["x", "dense"],
                     what="row_softmax: sparse x")
    ctx.expect_error(impl.row_softmax, torch._neg_view(x), mentions=["x", "resolve_neg"],
                     what="row_softmax: lazily negated view")
    if ctx.device == "cuda":
        ctx.expect_error(impl.row_softmax, x.cpu(), mentions=["cuda"],
                         what="row_softmax: CPU tensor on a GPU run")
        ctx.expect_error(impl.add, x.cpu(), x.cpu(), mentions=["cuda"],
                         what="add: CPU tensors on a GPU run")
        ctx.expect_error(impl.add, x, x.cpu(), mentions=["y"], what="add: y on another device")


def _refused_or_right(ctx, hint, fn, *args, expected, rtol, mentions, what):
    """A call past what the reference supports: a clear refusal (ctx.expect_error) passes, and so
    does a right answer; an accepted call with a wrong answer fails with `hint`. `rtol` None:
    the output dtype's own tolerance."""
    try:
        ctx.expect_error(fn, *args, mentions=mentions, what=what)
        return
    except CheckFailed as exc:
        if "no error was raised" not in exc.message:
            raise
    out = ctx.call(fn, *args, expect_shape=tuple(expected.shape), expect_dtype=args[0].dtype,
                   name=f"{what} (accepted, so it must be right)")
    tolerance = {} if rtol is None else {"rtol": rtol, "atol": 0.0}
    ctx.assert_close(out, expected, name=f"{what} (accepted, so it must be right)",
                     diagnose=[always(hint)], **tolerance)


def _refuses(ctx, hint, fn, *args, **kwargs):
    """ctx.expect_error, with `hint` (the rule the call breaks) when the launcher did not
    refuse the call itself: no error at all, or another kind (on a GPU, Triton's own
    AssertionError for num_warps=3)."""
    try:
        ctx.expect_error(fn, *args, **kwargs)
    except CheckFailed as exc:
        if "no error was raised" in exc.message or "expected TypeError" in exc.message:
            exc.hint = hint
        raise


@register(W, "cuda.stream", tier="cuda", uses=("row_softmax",),
          cases=[Case(shape=(512, 4096), dtype="float16")],
          doc="launches on the caller's current (non-default) stream")
def cuda_stream(ctx, impl, case):
    ctx.require_cuda()
    torch = ctx.torch
    source = ctx.randn(case.shape, case.dtype)
    stream = torch.cuda.Stream()
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        busy = torch.randn((4096, 4096), device="cuda")
        _ = busy @ busy  # keep the side stream busy so a launch on another stream would race
        x = source * 1  # x is written on the side stream, after the busy work
        out = ctx.call(impl.row_softmax, x, expect_shape=case.shape, expect_dtype=case.dtype)
    stream.synchronize()
    ctx.assert_close(out, _softmax64(source), name="row_softmax on a side stream",
                     diagnose=[always("launched on the default stream instead of the "
                                      "current one (read x before it was written)")])


@register(W, "cuda.int64_offsets", tier="cuda", uses=("add", "row_softmax"),
          cases=[Case(dtype="float16"), Case(fn="row_softmax", dtype="float16")],
          doc="add over 2^31 + 4096 elements and row_softmax over 2^31 + 65536 (4 GiB float16 "
              "tensors): int64 offsets",
          timeout=600)
def cuda_int64_offsets(ctx, impl, case):
    ctx.require_cuda()
    torch = ctx.torch
    overflow = ("offsets overflowed 32 bits: pid * BLOCK wraps past 2^31 in int32; widen the "
                "program id to int64 (tl.program_id(0).to(tl.int64)) before the multiply")
    if case.get("fn") == "row_softmax":
        _int64_row_softmax(ctx, impl, overflow.replace("pid * BLOCK", "row * stride"))
        return
    # 2^31 + 4096 elements: the last four blocks of 1024 start past 2^31, where pid * BLOCK
    # wraps to a negative int32.
    n = (1 << 31) + 4096
    gen = torch.Generator(device="cuda").manual_seed(ctx.case_seed)
    try:
        x = torch.randn((n,), device="cuda", dtype=torch.float16, generator=gen)
        y = torch.randn((n,), device="cuda", dtype=torch.float16, generator=gen)
    except torch.cuda.OutOfMemoryError:
        raise Unavailable("needs about 30 GB of free GPU memory") from None
    # (ctx.call turns a kernel's fault, raised at its synchronize, into a FAIL with a hint.)
    try:
        out = ctx.call(impl.add, x, y, expect_shape=(n,), expect_dtype=case.dtype)
    except CheckFailed as exc:
        text = f"{exc.message} {exc.hint}".lower()
        if any(s in text for s in ("illegal", "out-of-bounds", "outside", "before the start",
                                   "past the end")):
            exc.hint = f"{overflow} ({exc.hint})" if exc.hint else overflow
        raise
    # Compare slices (float64 on the CPU): the start, and the last 3 * 4096 elements, which
    # straddle 2^31 and end at the tail.
    for start, stop in ((0, 4096), (n - 3 * 4096, n)):
        expected = x[start:stop].double().cpu() + y[start:stop].double().cpu()
        ctx.assert_close(out[start:stop], expected, name=f"add(x, y)[{start}:{stop}] of {n}",
                         diagnose=[always(overflow)])
    del x, y, out
    torch.cuda.empty_cache()


def _int64_row_softmax(ctx, impl, overflow):
    """row_softmax of (32769, 65536) float16: 2^31 + 65536 elements, so the last row starts
    at 2^31, where row * stride_xm wraps to a negative int32."""
    torch = ctx.torch
    shape = (32769, 65536)
    gen = torch.Generator(device="cuda").manual_seed(ctx.case_seed)
    try:
        x = torch.randn(shape, device="cuda", dtype=torch.float16, generator=gen)
    except torch.cuda.OutOfMemoryError:
        raise Unavailable("needs about 20 GB of free GPU memory") from None
    try:
        out = ctx.call(impl.row_softmax, x, expect_shape=shape, expect_dtype=x.dtype)
    except CheckFailed as exc:
        text = f"{exc.message} {exc.hint}".lower()
        if any(s in text for s in ("illegal", "out-of-bounds", "outside", "before the start",
                                   "past the end")):
            exc.hint = f"{overflow} ({exc.hint})" if exc.hint else overflow
        raise
    # Whole rows at both ends of the address range (float64 on the CPU).
    for r in (0, 1, shape[0] // 2, shape[0] - 2, shape[0] - 1):
        ctx.assert_close(out[r], x[r].double().cpu().softmax(dim=-1),
                         name=f"row_softmax(x)[{r}] of {shape}",
                         diagnose=[always(overflow)])
    del x, out
    torch.cuda.empty_cache()


# ---------------------------------------------------------------------------------------------
# Diagnoses from the fourth learner audit (its F1-F3, F5-F7)
# ---------------------------------------------------------------------------------------------
# Rows of moderate, distinct values, exact in every dtype: the probes below hand them to the
# learner's row_softmax, a power-of-two width (no padded lane) and a ragged one (one padded
# lane), so that a mistake that only shows on padded lanes (the tail) can be told from one in
# the formula, and either from an overflow on extreme logits.
_PROBE_ROWS = [[0.0, 1.0, 2.0, 3.0], [2.0, -1.0, 0.5, -0.25]]
_RAGGED_PROBE_ROWS = [[0.0, 1.0, 2.0], [2.0, -1.0, 0.5]]


def _probe(impl, x, rows=_PROBE_ROWS, dtype=None):
    """A memo: the learner's row_softmax of `rows` (in `dtype`, by default x's, on x's device)
    as float64 on the CPU, with the probe's input; None when the call raises or returns
    something else (a diagnosis then stays silent: the failure being diagnosed stands either
    way)."""
    memo = []

    def probe():
        if not memo:
            import torch

            p64 = torch.tensor(rows, dtype=torch.float64)
            p = p64.to(device=x.device, dtype=dtype or x.dtype)
            result = None
            try:
                out = impl.row_softmax(p)
                if hasattr(out, "shape") and tuple(out.shape) == tuple(p.shape):
                    result = (p.double().cpu(), out.detach().to("cpu", torch.float64))
            except Exception:  # noqa: BLE001 - learner code may fail any way: no diagnosis
                result = None
            memo.append(result)
        return memo[0]

    return probe


def _probe_right(x, probe) -> bool:
    """The learner's row_softmax of the power-of-two probe rows is the softmax (True when the
    probe cannot be run: no evidence against)."""
    from checks.compare import agrees, tolerance_for

    seen = probe()
    if seen is None:
        return True
    p, out = seen
    tol = tolerance_for(x.dtype)
    return bool(agrees(out, p.softmax(dim=-1), tol.rtol, tol.atol).all())


def _ragged(x) -> bool:
    width = x.shape[-1]
    return width != 1 << max(width - 1, 0).bit_length()


def _shift_sign_flipped(x, probe, *, model_required: bool = True):
    """Diagnosis: z = max - x instead of x - max. A row without padding gives exp(max - x) /
    sum = softmax(-x); on a ragged row the padded lanes' max - (-inf) = +inf make the sum inf
    and every stored output 0. A ragged case alone models as all zeros, which other mistakes
    give too: the power-of-two probe must then come out as softmax(-p). `model_required`
    False (extreme logits, where exp(max - x) overflows and the model says little): the probe
    alone names it."""

    def diagnose(got, expected, bad):
        import torch

        from checks.compare import agrees, tolerance_for

        tol = tolerance_for(x.dtype)
        x64 = x.detach().cpu().double()
        ragged = _ragged(x)
        if model_required:
            model = torch.zeros_like(x64) if ragged else (-x64).softmax(dim=-1)
            if (bool(agrees(expected, model, tol.rtol, tol.atol).all())
                    or not bool(agrees(got, model, tol.rtol, tol.atol).all())):
                return None
            if not ragged:
                return _SIGN_HINT
        seen = probe()
        if seen is None:
            return None
        p, out = seen
        flipped = (-p).softmax(dim=-1)
        if (bool(agrees(out, flipped, tol.rtol, tol.atol).all())
                and not bool(agrees(out, p.softmax(dim=-1), tol.rtol, tol.atol).all())):
            return _SIGN_HINT
        return None

    return diagnose


_SIGN_HINT = ("shift sign flipped: z = max - x, not x - max: a row without padding comes out "
              "as softmax(-x), and on a row whose width is not a power of two the padded "
              "lanes' max - (-inf) = +inf make the sum inf and every output 0; subtract the "
              "max from x: z = x - tl.max(x, axis=0)")


def _tail_padded_plus_inf(x, probe, ragged_probe):
    """Diagnosis: the padded lanes loaded with +inf (a sign slip of -inf): they win the max,
    x - inf = -inf and inf - inf = NaN, so every row with padding (a width that is not a power
    of two) is all NaN, while a power-of-two row (the probe) comes out right. A ragged probe of
    moderate values must be NaN too: extreme logits without the max shift are NaN on every
    width, and the small power-of-two probe cannot tell that apart."""

    def diagnose(got, expected, bad):
        from checks.compare import agrees, tolerance_for

        if not _ragged(x):
            return None
        nan_rows = got.isnan().all(dim=-1) & expected.isfinite().all(dim=-1)
        if not bool(nan_rows.any()) or not bool((got.isnan().all(dim=-1) | ~bad.any(dim=-1)).all()):
            return None
        seen = probe()
        if seen is None:
            return None
        p, out = seen
        tol = tolerance_for(x.dtype)
        if not bool(agrees(out, p.softmax(dim=-1), tol.rtol, tol.atol).all()):
            return None
        seen = ragged_probe()
        if seen is None or not bool(seen[1].isnan().all()):
            return None
        width = x.shape[-1]
        block = 1 << max(width - 1, 0).bit_length()
        return (f"tail padded with +inf (or NaN): every row of {width} columns (padded to "
                f"{block} lanes) is NaN, while a row of 4 columns (no padding) comes out right; "
                "+inf padded lanes win the max, x - inf = -inf and inf - inf = NaN. The padding "
                "must be -inf, so that it never wins the max: other=-float(\"inf\")")

    return diagnose


def _rows_stored_to_row_zero(x, launched):
    """Diagnosis: row 0 written, every later row never written (the NaN fill), although the
    launch had a program for every row: every program stored to row 0. Row 0 holding another
    row's softmax (the last program to store there) is the store address without the row
    offset; row 0 right is every program computing row 0 (a row index that is 0 everywhere,
    tl.program_id(1) of a 1-D grid), or a store without the row offset whose last writer
    happened to be program 0."""

    def diagnose(got, expected, bad):
        from checks.compare import agrees, tolerance_for

        n_rows = x.shape[0]
        if n_rows < 2 or x.shape[-1] < 1:
            return None
        if not (bool(got[1:].isnan().all()) and bool(expected[1:].isfinite().all())
                and bool(got[0].isfinite().all())):
            return None
        grids = [launch.grid for launch in launched if launch.grid]
        if not grids or max(grid[0] for grid in grids) < n_rows:
            return None  # the grid stops short: the "never written" hint names that
        tol = tolerance_for(x.dtype)
        sm = x.detach().cpu().double().softmax(dim=-1)
        rows = agrees(got[0][None, :], sm, tol.rtol, tol.atol).all(dim=-1).nonzero()
        rows = [int(r) for r in rows.reshape(-1)]
        programs = max(grid[0] for grid in grids)
        if rows and rows[0] == 0:
            # (a store without the row offset leaves this too when program 0 stores last, or
            # when every row has the same softmax)
            return (f"every program wrote row 0: row 0 is right but rows 1..{n_rows - 1} are "
                    f"never written, although {programs} programs ran; the row index is 0 in "
                    "every program: take it from tl.program_id(0) (the grid is 1-D, so "
                    "tl.program_id(1) is always 0), and store at out_ptr + row * stride_om + "
                    "cols (not out_ptr + cols)")
        # Row 0 wrong: on a GPU the programs race to store there, and its elements may come
        # from several rows.
        held = (f"the softmax of row {rows[0]} (the last program to store there)" if rows
                else "other rows' values (the programs that stored there last)")
        return (f"store address without the row offset: row 0 holds {held} and rows "
                f"1..{n_rows - 1} are never written, although {programs} programs ran: every "
                "program stored its row at out_ptr + cols; store at out_ptr + row * stride_om "
                "+ cols")

    return not_from_values(diagnose)


def _multiplied_by_sum(x):
    """Diagnosis: y = numerator * denominator: the output is exp(x - max) * sum, off from the
    softmax by sum^2 per row (rounded to x's dtype, where a wide row may overflow)."""

    def diagnose(got, expected, bad):
        import torch

        from checks.compare import agrees, tolerance_for

        x64 = x.detach().cpu().double()
        numerator = torch.exp(x64 - x64.amax(dim=-1, keepdim=True))
        model = (numerator * numerator.sum(dim=-1, keepdim=True)).to(x.dtype).double()
        tol = tolerance_for(x.dtype)
        if (bool(agrees(expected, model, tol.rtol, tol.atol).all())
                or not bool(agrees(got, model, tol.rtol, tol.atol).all())):
            return None
        return ("multiplied by the sum instead of dividing: the output matches exp(x - max) * "
                "sum, off from the softmax by sum^2 in every row; divide: y = numerator / "
                "denominator")

    return diagnose


def _division_reversed(x):
    """Diagnosis: y = denominator / numerator: the output is sum / exp(x - max), the softmax's
    reciprocal (every value >= 1). Where exp(x - max) underflows in float32 (far below the
    row's maximum) the kernel divides by 0 and stores inf; the float64 model is finite there
    but past 2^125, so such elements count as the model's too. On rows of identical values
    numerator * sum gives the same output (n for 1 / n): then the hint names both."""

    def diagnose(got, expected, bad):
        import torch

        from checks.compare import agrees, tolerance_for

        if x.numel() == 0:
            return None
        x64 = x.detach().cpu().double()
        numerator = torch.exp(x64 - x64.amax(dim=-1, keepdim=True))
        reciprocal = numerator.sum(dim=-1, keepdim=True) / numerator
        model = reciprocal.to(x.dtype).double()
        tol = tolerance_for(x.dtype)
        if bool(agrees(expected, model, tol.rtol, tol.atol).all()):
            return None
        matches = agrees(got, model, tol.rtol, tol.atol) | ((got == math.inf) & (reciprocal > 2.0**125))
        if not bool(matches.all()):
            return None
        product = (numerator * numerator.sum(dim=-1, keepdim=True)).to(x.dtype).double()
        if bool(agrees(got, product, tol.rtol, tol.atol).all()):
            # Rows of identical values: sum / 1 and 1 * sum are both the width, n, for 1 / n.
            return ("division reversed or multiplied by the sum instead of dividing: every row "
                    "holds identical values and the output is the row's width n where 1 / n is "
                    "right, which sum / exp(x - max) and exp(x - max) * sum both give; divide "
                    "the numerator by the sum: y = numerator / denominator")
        return ("division reversed: the output matches sum / exp(x - max), 1 / softmax (every "
                "value >= 1, inf where exp underflows to 0); divide the numerator by the sum: "
                "y = numerator / denominator")

    return diagnose


def _one_load_first_block(x, y, block: int):
    """Diagnosis: one operand's load ignores the program id: the output is x + y[k % BLOCK]
    (every program added block 0 of y), or the same with x."""

    def diagnose(got, expected, bad):
        import torch

        from checks.compare import agrees, tolerance_for

        n = x.numel()
        if n <= block:
            return None
        tol = tolerance_for(x.dtype)
        x64, y64 = (t.detach().cpu().double().reshape(-1) for t in (x, y))
        first = torch.arange(n) % block
        for name, other, model in (("y", "x", x64 + y64[first]), ("x", "y", x64[first] + y64)):
            model = model.reshape(got.shape)
            if bool(agrees(got, model, tol.rtol, tol.atol).all()):
                return (f"{name}'s load ignores the program id: the output is {other} + "
                        f"{name}[k % BLOCK], every program added block 0 of {name}; load {name} "
                        f"at {name}_ptr + offsets, the same offsets (pid * BLOCK + arange) as "
                        f"{other}")
        return None

    return diagnose


# ---------------------------------------------------------------------------------------------
# Diagnoses from the sixth learner audit (its 02 and 03)
# ---------------------------------------------------------------------------------------------
# A power-of-two row whose mean lies far below its max: shifted by the mean (-130), exp(210)
# overflows float32, while the max shift (and even no shift at all: exp(80) fits) stays finite.
# Padded with +inf instead of -inf, the row (no padded lane) comes out right: that tells the two
# apart on ragged rows, where both give all NaN.
_MEAN_PROBE_ROWS = [[-200.0, -200.0, -200.0, 80.0]]


def _shifted_softmax_replay(x64, block: int, shift_of):
    """softmax with z = x - shift_of(lanes, n_cols) over the block's lanes (the padded ones hold
    -inf) in place of the row max, replayed in float64 with float32's range as the kernel
    computes: exp past float32's largest number is inf, below its smallest 0."""
    import torch

    f32 = torch.finfo(torch.float32)
    n_cols = x64.shape[-1]
    pad = torch.full((*x64.shape[:-1], block - n_cols), -math.inf, dtype=torch.float64)
    lanes = torch.cat([x64, pad], dim=-1)
    numerator = torch.exp(lanes - shift_of(lanes, n_cols))
    numerator = torch.where(numerator > f32.max, torch.inf, numerator)
    numerator = torch.where(numerator < f32.smallest_normal * 2.0 ** -23, 0.0, numerator)
    return (numerator / numerator.sum(dim=-1, keepdim=True))[..., :n_cols]


def _mean_shift_replay(x64, block: int):
    """z = x - mean: a ragged row's mean takes in the -inf padding, so it is -inf, and
    -inf - (-inf) = NaN on the padding lanes."""
    return _shifted_softmax_replay(
        x64, block, lambda lanes, n_cols: lanes.sum(dim=-1, keepdim=True) / n_cols)


def _wrong_shift(x, probe, replay, hint):
    """Diagnosis for a shift that is not the row max (replay(x64, block) gives its output):
    named only when the case's output is the replay's where the right answer is not, and the
    probe's row (probe() -> (row, output)) comes out as the replay says and not as the
    softmax: the probe row is one the other shift mistakes get right. hint(width, block) -> the
    hint's text."""

    def diagnose(got, expected, bad):
        from checks.compare import agrees, tolerance_for

        if x.numel() == 0:
            return None
        tol = tolerance_for(x.dtype)
        width = x.shape[-1]
        block = 1 << max(width - 1, 0).bit_length()
        model = replay(x.detach().cpu().double(), block).to(x.dtype).double()
        if (bool(agrees(expected, model, tol.rtol, tol.atol).all())
                or not bool(agrees(got, model, tol.rtol, tol.atol).all())):
            return None
        seen = probe()
        if seen is None:
            return None
        p, out = seen
        if (not bool(agrees(out, replay(p, p.shape[-1]), tol.rtol, tol.atol).all())
                or bool(agrees(out, p.softmax(dim=-1), tol.rtol, tol.atol).all())):
            return None
        return hint(width, block)

    return diagnose


def _shift_is_mean(x, mean_probe):
    """Diagnosis: z = x - mean(x) (tl.sum(x) / n_cols) instead of x - max. Softmax does not
    care which constant is subtracted, so moderate power-of-two rows come out right; a ragged
    row's mean includes the -inf padding (every output NaN, as a tail padded with +inf gives),
    and a row whose max lies far above its mean overflows exp. Named only when the case's
    output is the replay's and the mean probe's output is too (NaN where exp(210) overflowed),
    which a +inf padding (right on that unpadded row) and a missing shift (exp(80) fits) do
    not give."""

    def hint(width, block):
        ragged = (f"a row of {width} columns (padded to {block} lanes) averages in the -inf "
                  "padding, so x - mean = +inf and every output is NaN; "
                  if width != block else "")
        return ("shift is the mean, not the max: the output matches z = x - sum(x) / n_cols: "
                f"{ragged}and even without padding the row [-200, -200, -200, 80] (mean -130) "
                "overflows exp(210) to inf (inf / inf = NaN). Subtract the row max, "
                "z = x - tl.max(x, axis=0): every z <= 0, so exp never overflows, and the "
                "-inf padding never wins the max")

    return _wrong_shift(x, mean_probe, _mean_shift_replay, hint)


def _logits_scaled(x):
    """Diagnosis: the output is softmax(c * x) for c = log2(e) (tl.exp of (x - max) * log2 e:
    the factor that belongs with exp2 used with exp) or c = ln 2 (tl.exp2 of x - max without
    it), each replayed in float64 and rounded to x's dtype."""

    def diagnose(got, expected, bad):
        from checks.compare import agrees, tolerance_for

        if x.numel() == 0 or x.shape[-1] < 2:
            return None
        x64 = x.detach().cpu().double()
        tol = tolerance_for(x.dtype)
        for factor, hint in ((1.0 / math.log(2.0), _LOG2E_WITH_EXP_HINT),
                             (math.log(2.0), _EXP2_WITHOUT_LOG2E_HINT)):
            model = (x64 * factor).softmax(dim=-1).to(x.dtype).double()
            if (not bool(agrees(expected, model, tol.rtol, tol.atol).all())
                    and bool(agrees(got, model, tol.rtol, tol.atol).all())):
                return hint
        return None

    return diagnose


_LOG2E_WITH_EXP_HINT = (
    "log2(e) used with exp: the output matches softmax(x * log2 e) = softmax(1.4427 x), as "
    "tl.exp((x - max) * 1.4426950408889634) gives; the factor log2(e) converts for exp2 "
    "(tl.exp2(z * log2 e) = exp(z)), so either tl.exp(z) with no factor or tl.exp2 with it")
_EXP2_WITHOUT_LOG2E_HINT = (
    "exp2 without log2(e): the output matches softmax(x * ln 2) = softmax(0.6931 x), as "
    "tl.exp2(x - max) gives; 2^z = exp(z * ln 2), so scale first: tl.exp2(z * "
    "1.4426950408889634) = exp(z), or use tl.exp(z)")


# ---------------------------------------------------------------------------------------------
# Diagnoses from the seventh learner audit (its 02, 05, 06; its 04 is named by _max_as_denominator)
# ---------------------------------------------------------------------------------------------
def _call_row_softmax(ctx, impl, x, case):
    """ctx.call(impl.row_softmax, x) for the checks after row_softmax.values, naming a row
    offset of row * BLOCK_N where the read past x stops the call (as the values check does)."""
    try:
        return ctx.call(impl.row_softmax, x, expect_shape=case.shape, expect_dtype=case.dtype)
    except CheckFailed as exc:
        if "OutOfBoundsAccess" in exc.message:
            exc.hint = _row_stride_is_block(impl, x) or exc.hint
        raise


def _row_stride_is_block(impl, x) -> str | None:
    """The hint for a read past the end of x (the interpreter's bounds check stopped it) when
    the row offset is row * BLOCK_N, the padded width, instead of row * stride_xm: row_softmax
    runs again on the same values at the start of a longer contiguous storage (random values
    after them), so those reads succeed, and the output must then be, row by row, the softmax
    of the BLOCK_N-spaced slices of that storage. A power-of-two width is its own BLOCK_N (right
    there), so only a ragged one tells. None otherwise."""
    import torch

    from checks.compare import agrees, tolerance_for
    from checks.context import call_learner

    n_rows, n_cols = x.shape
    block = 1 << max(n_cols - 1, 0).bit_length()
    if n_rows < 2 or block == n_cols:
        return None
    gen = torch.Generator().manual_seed(20261207)
    storage = torch.randn(n_rows * block + n_cols, generator=gen, dtype=torch.float64)
    storage[:x.numel()] = x.detach().double().cpu().reshape(-1)
    storage = storage.to(device=x.device, dtype=x.dtype)
    try:
        got = call_learner(impl.row_softmax, storage[:x.numel()].view(n_rows, n_cols))
        got = got.detach().double().cpu()
    except Exception:  # noqa: BLE001 - a diagnosis only: no verdict of its own
        return None
    flat = storage.double().cpu()
    model = torch.stack([flat[r * block:r * block + n_cols] for r in range(n_rows)])
    tol = tolerance_for(x.dtype)
    if (tuple(got.shape) != (n_rows, n_cols)
            or not bool(agrees(got, model.softmax(dim=-1), tol.rtol, tol.atol).all())):
        return None
    return (f"row offset uses the block width BLOCK_N = {block}, not the row stride: row r was "
            f"read from x_ptr + r * {block}, so with {n_cols} columns (a width that is not a "
            "power of two) each later row starts past its own and the last ones past the end of "
            "x (a power-of-two width hides it: there BLOCK_N is the row length); address the "
            "row with its stride, x_ptr + row * stride_xm + cols")


def _denominator_is_mean(x):
    """Diagnosis: the denominator is the mean of the numerators (their sum / n_cols): every
    row is n_cols times the softmax (rounded to x's dtype as the kernel stores it)."""

    def diagnose(got, expected, bad):
        from checks.compare import agrees, tolerance_for

        n_cols = x.shape[-1]
        if x.numel() == 0 or n_cols < 2:
            return None
        model = (expected * n_cols).to(x.dtype).double()
        tol = tolerance_for(x.dtype)
        if (bool(agrees(expected, model, tol.rtol, tol.atol).all())
                or not bool(agrees(got, model, tol.rtol, tol.atol).all())):
            return None
        return (f"denominator is the mean, not the sum: every row is {n_cols} (n_cols) times "
                "the softmax, the numerators divided by sum / n_cols; the softmax divides by "
                "the sum itself, denominator = tl.sum(numerator, axis=0)")

    return diagnose


# A power-of-two row whose most negative value lies far below its max: shifted by max(|x|) =
# 120, every exp(x - 120) underflows float32 to 0 (0 / 0 = NaN), while the max shift keeps the
# largest term at 1. The tail padding (+inf or NaN), the mean (-29.25) and no shift at all come
# out right on it: that tells max(|x|) from them on ragged rows, where all give NaN.
_ABS_PROBE_ROWS = [[-120.0, 0.0, 1.0, 2.0]]


def _abs_max_replay(x64, block: int):
    """z = x - max(|x|): the padded lanes hold -inf, whose |x| is +inf, so a ragged row's shift
    is +inf (and no term can overflow: every z <= 0)."""
    return _shifted_softmax_replay(
        x64, block, lambda lanes, n_cols: lanes.abs().amax(dim=-1, keepdim=True))


def _shift_is_max_abs(x, abs_probe):
    """Diagnosis: z = x - max(|x|) instead of x - max. Any shift cancels, so moderate rows come
    out right, but the -inf padding's |x| = +inf makes every ragged row NaN (as a +inf padding
    does), and a row with a value far below its max underflows every term. Named only when the
    case's output is the replay's and the probe row [-120, 0, 1, 2] comes out NaN, which the
    +inf padding, the mean shift and a missing shift leave right."""

    def hint(width, block):
        ragged = (f"the -inf padding of a row of {width} columns (padded to {block} lanes) has "
                  "|x| = +inf, so the shift is +inf and every output NaN; "
                  if width != block else "")
        return ("shift is max(|x|), not max(x): the output matches z = x - max(|x|): "
                f"{ragged}and without padding the row [-120, 0, 1, 2] is shifted by 120, so "
                "every exp(x - 120) underflows to 0 (0 / 0 = NaN). Subtract the row max itself, "
                "z = x - tl.max(x, axis=0): the largest term is then exp(0) = 1")

    return _wrong_shift(x, abs_probe, _abs_max_replay, hint)


# ---------------------------------------------------------------------------------------------
# Diagnoses from the ninth learner audit
# ---------------------------------------------------------------------------------------------
# A float32 row whose float16 rounding moves the logits by about 0.03 (float16's spacing near
# 100 is 2^-4): a softmax computed from the row rounded to float16 is off by about 3%, far
# beyond any rounding of a right float32 softmax, while a store rounded through float16
# stays within float16's own rounding of it. exp(100) overflows float32, so a softmax without
# the max shift gives NaN here, not the float16 model.
_FP16_PROBE_ROWS = [[100.03, 100.1, 99.0, 0.0]]


def _statistics_in_fp16(x, impl):
    """Diagnosis: the output is the softmax of x rounded to float16 (the row loaded and
    converted with .to(tl.float16), not tl.float32): float32 and bfloat16 rows lose their low
    bits, logits past 65504 become inf (inf - inf = NaN) and logits near -1e31 -inf (a row of
    -inf is NaN). Named only when the case's output is that model's (NaN rows included) and a
    float32 probe row comes out as the model says too: a store rounded through float16 (right
    statistics) and a missing max shift (exp(100) overflows) do not give the probe's model."""
    import torch

    probe = _probe(impl, x, _FP16_PROBE_ROWS, dtype=torch.float32)  # float32: no fp16 of its own

    def diagnose(got, expected, bad):
        from checks.compare import agrees, tolerance_for

        if x.dtype == torch.float16 or x.numel() == 0:
            return None
        tol, tol16 = tolerance_for(x.dtype), tolerance_for(torch.float16)
        # float16 arithmetic and float16 rounding of x: match within 4x float16's tolerance
        rtol, atol = 4 * tol16.rtol + tol.rtol, 4 * tol16.atol
        model = x.detach().cpu().half().double().softmax(dim=-1)  # NaN rows where fp16 overflows
        if (bool(agrees(expected, model, tol.rtol, tol.atol).all())
                or not bool(agrees(got, model, rtol, atol).all())):
            return None
        seen = probe()
        if seen is None:
            return None
        p, out = seen
        p_model = p.half().double().softmax(dim=-1)
        if (not bool(agrees(out, p_model, rtol, atol).all())
                or bool(agrees(out, p.softmax(dim=-1), rtol, atol).all())):
            return None
        name = str(x.dtype).replace("torch.", "")
        return (f"statistics in float16: the output matches the softmax of x rounded to "
                f"float16 (a {name} row loses its low bits; logits past 65504 become inf and "
                "those near -1e31 -inf, which make NaN rows), as when the loaded row is "
                "converted with .to(tl.float16); convert it with .to(tl.float32): max, exp "
                "and sum stay in float32, one rounding at the store")

    return diagnose


def _denominator_sums_x(x, block: int, probe):
    """Diagnosis: the output is exp(z) / sum(x) (z = x - max): the denominator sums the loaded
    logits, not the numerators. The padded lanes hold -inf, so a ragged row's sum is -inf and
    every output -0: such a case alone models as zeros, which other mistakes give too, so then
    the power-of-two probe rows must come out as the same mistake (exp(z) / sum(x) there)."""

    def model_of(x64, lanes: int):
        import torch

        z = x64 - x64.amax(dim=-1, keepdim=True)
        padding = -math.inf if lanes > x64.shape[-1] else 0.0  # the padded lanes' x
        return torch.exp(z) / (x64.sum(dim=-1, keepdim=True) + padding)

    def diagnose(got, expected, bad):
        from checks.compare import agrees, tolerance_for

        if x.numel() == 0:
            return None
        tol = tolerance_for(x.dtype)
        model = model_of(x.detach().cpu().double(), block).to(x.dtype).double()
        if (bool(agrees(expected, model, tol.rtol, tol.atol).all())
                or not bool(agrees(got, model, tol.rtol, tol.atol).all())):
            return None
        if not bool((model != 0).any()):
            seen = probe() if probe is not None else None
            if seen is None:
                return None
            p, out = seen
            p_model = model_of(p, p.shape[-1]).to(x.dtype).double()
            if (not bool(agrees(out, p_model, tol.rtol, tol.atol).all())
                    or bool(agrees(out, p.softmax(dim=-1), tol.rtol, tol.atol).all())):
                return None
        return ("denominator sums x, not exp(x - max): the output matches exp(x - max) / "
                "sum(x) (a ragged row's -inf padding makes that sum -inf and every output -0); "
                "divide by the sum of the numerators, tl.sum(numerator, axis=0)")

    return diagnose
