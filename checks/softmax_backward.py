"""Checks for the softmax backward workshop: `softmax_backward(y, dy, dim)` and `Softmax`.

References are independent of the implementation: float64 autograd of `torch.softmax`, central
finite differences and dense Jacobians, all on the CPU. Low-precision comparisons follow
FlashAttention's rule: the kernel's error may be at most twice PyTorch's own error at the same
precision (both against the float64 reference) on top of the dtype's rtol, because a 16-bit y is
already rounded before the kernel sees it and that rounding moves the true gradient.
Interpreter runs use small case tables; GPU runs (device == "cuda") add large ones.
"""

from __future__ import annotations

import math

from checks import launches
from checks.compare import always, never_written_line
from checks.context import holds_fresh_memory_fill, left_the_tensors
from checks.core import Case, CheckFailed, Unavailable, register

W = "softmax_backward"
DTYPES = ("float16", "bfloat16", "float32")
# The kernel's regions (TODO(softmax_backward, vjp)) run on every call; the launcher's dim=0
# setup (TODO(softmax_backward, dim0)) only for dim=0, so those cases ask for it one by one
# (_require_dim): a learner gets the dim=-1 verdicts as soon as the kernel is written.
USES = ("vjp",)
USES_AUTOGRAD = ("Softmax", "vjp", "strided_softmax.softmax")


def _require_dim(ctx, dim) -> None:
    """Stop the case as TODO when it reduces over dim 0 and the launcher's dim=0 region is
    still open."""
    if dim is not None and dim % 2 == 0:
        ctx.require_exercises("dim0", runs="dim=0 (the launcher's transposed views)")


# ---------------------------------------------------------------------------------------------
# References and helpers (torch/numpy imported inside, so discovery needs the stdlib only)
# ---------------------------------------------------------------------------------------------
def _vjp64(y, dy, dim):
    """The VJP formula y * (dy - <dy, y>) in float64 on the CPU, on exactly these values."""
    y, dy = y.detach().cpu().double(), dy.detach().cpu().double()
    return y * (dy - (dy * y).sum(dim, keepdim=True))


def _autograd64(x64, dy, dim):
    """d<dy, softmax(x)>/dx by float64 autograd of torch.softmax (the true gradient at x64)."""
    x = x64.detach().cpu().double().clone().requires_grad_(True)
    x.softmax(dim).backward(dy.detach().cpu().double())
    return x.grad


def _torch_slack(y, dy, dim, expected):
    """Twice PyTorch's own error at y's precision against `expected` (FlashAttention's rule)."""
    import torch

    theirs = torch._softmax_backward_data(dy, y, dim, y.dtype)
    return 2.0 * float((theirs.detach().cpu().double() - expected).abs().max())


def _fp32_dot_allowance(y, dy, dim):
    """What a float32 <dy, y> may cost dx: the dot of n terms is good to about
    (log2(n) + 2) eps32 * sum|dy y| (tree sum plus the products), and dx_i = y_i * (dy_i - dot)
    inherits y_i times that. PyTorch's CPU kernels accumulate float32 in float64, so their own
    error (the slack above) can be smaller than this honest float32 bound."""
    import math

    import torch

    y64, dy64 = y.detach().cpu().double(), dy.detach().cpu().double()
    n = y.shape[dim]
    mass = float((dy64 * y64).abs().sum(dim).max()) if y.numel() else 0.0
    eps32 = torch.finfo(torch.float32).eps
    return (math.log2(max(n, 1)) + 2) * eps32 * mass * (float(y64.max()) if y.numel() else 0.0)


def _atol(y, dy, dim, expected):
    """The dtype's atol + twice PyTorch's own error + the float32 dot product's allowance."""
    from checks.compare import tolerance_for

    return (tolerance_for(y.dtype).atol + _torch_slack(y, dy, dim, expected)
            + _fp32_dot_allowance(y, dy, dim))


def _place(t, layout: str):
    """The values of `t` (logical shape kept) stored in the named memory layout."""
    import torch

    if layout == "contiguous":
        return t.contiguous()
    if layout == "transposed":  # column-major storage: the independent dim may be contiguous
        return t.t().contiguous().t()
    if layout == "sliced":  # every other row and column of a NaN-filled buffer
        m, n = t.shape
        buf = torch.full((2 * m + 1, 2 * n + 3), float("nan"), dtype=t.dtype, device=t.device)
        view = buf[1:1 + 2 * m:2, 3:3 + 2 * n:2]
        view.copy_(t)
        return view
    raise ValueError(layout)


def _inputs(ctx, shape, dtype, dim, y_layout="contiguous", dy_layout="contiguous", *,
            scale=2.0, dy_scale=1.0, dy_shift=0.0):
    """Float64 logits x, y = softmax(x) rounded to `dtype` and dy, each in its layout."""
    torch = ctx.torch
    x64 = ctx.randn(shape, "float64", scale=scale, device="cpu")
    y = _place(x64.softmax(dim).to(getattr(torch, dtype)).to(ctx.torch_device), y_layout)
    if dy_layout == "broadcast":
        # constant along the independent dimension, varying along the reduced one: stride 0
        m, n = shape
        part = (1, n) if dim in (1, -1) else (m, 1)
        dy = ctx.randn(part, dtype, scale=dy_scale, shift=dy_shift).expand(shape)
    else:
        dy = _place(ctx.randn(shape, dtype, scale=dy_scale, shift=dy_shift), dy_layout)
    return x64, y, dy


def _close(got, alt, rtol, atol) -> bool:
    """got within 4x the tolerance of an alternative answer (see compare.agrees)."""
    from checks.compare import agrees

    return bool(agrees(got, alt, 4 * rtol, 4 * atol).all())


def _dx_strides(y, rtol, atol):
    """Diagnosis: dx written with y's strides. dx is new and contiguous; a launcher passing
    y's strides for dx writes each value where y keeps it: read got's memory back with y's
    strides and see the right values. (For dim=0 the kernel writes through dx's transposed
    view with y's: the same read names it.)"""

    def diagnose(got, exp, bad):
        if tuple(y.stride()) == (y.shape[1], 1) or not _fits(y.stride(), y.shape, got.numel()):
            return None
        back = got.reshape(-1).as_strided(tuple(y.shape), tuple(y.stride()), 0)
        if _close(back, exp, rtol, atol):
            return (f"dx written with y's strides {tuple(y.stride())}: dx is a new contiguous "
                    f"tensor (strides {(y.shape[1], 1)}); pass dx.stride(0), dx.stride(1) for dx")
        return None

    return diagnose


def _diagnoses(y, dy, dim, rtol, atol, *, gpu, extra=()):
    """Classic softmax-backward mistakes, each recognised by recomputing what it would give.

    gpu: the run is on a GPU, where an unmasked tail reads memory silently (the interpreter's
    bounds check names such a load itself), so only there is it worth a guess."""
    import torch

    y64, dy64 = y.detach().cpu().double(), dy.detach().cpu().double()
    d = dim % 2

    def missing_dot(got, exp, bad):
        if _close(got, y64 * dy64, rtol, atol):
            n = y.shape[d]
            # On wide rows <dy, y> / n is nearly 0: a dot divided by the width looks the same.
            mean = y64 * (dy64 - (dy64 * y64).sum(d, keepdim=True) / n)
            also = (f" (or <dy, y> divided by the width {n}: on rows this wide that gives "
                    "y * dy as well; <dy, y> is a sum, not a mean)"
                    if n > 1 and _close(got, mean, rtol, atol) else "")
            return ("missing the - <dy, y> term: the result equals y * dy; subtract each row's "
                    "dot product <dy, y> from dy before multiplying by y (J = diag(y) - y y^T)"
                    + also)
        return None

    def sign_flipped(got, exp, bad):
        # y * (<dy, y> - dy) is exactly -dx: the output is the right answer negated (and the
        # right answer is not itself ~0, where -dx and dx cannot be told apart).
        if _close(got, -exp, rtol, atol) and not _close(exp, -exp, rtol, atol):
            return ("sign flipped: dx = y * (<dy, y> - dy) is the right answer negated; the "
                    "formula is y * (dy - <dy, y>)")
        return None

    def formula_slip(got, exp, bad):
        # On a row of one element y = 1 and dx = 0: y and dy swapped and <dy, dy> for <dy, y>
        # both give dy - dy^2 there, and other slips give the right 0. Only a wider row tells
        # them apart (_one_element_probe asks the learner's function for one).
        if y.shape[d] < 2:
            return None
        return _formula_slip(got, exp, y64, dy64, d, rtol, atol)

    def diagonal_best_fit(got, exp, bad):
        # Only the Jacobian's diagonal where _slips_fitting cannot say it: on wide 16-bit rows
        # (y small, 1 - y ~ 1) y * dy fits within 4x the tolerance too, and on huge dy so does
        # the right answer, which the slips must not. Named where its replay fits best, as
        # dot_of_one_tile picks its tile: the misfits differ by orders of magnitude there.
        if y.shape[d] < 2:
            return None
        model = _diagonal_only(y64, dy64)
        if not _close(got, model, rtol, atol):
            return None
        # (the rivals include the reduction over the other dim: on a few rows of small y it
        # lies near the diagonal too, and a fit to it is not this mistake)
        rivals = [exp, y64 * dy64, _vjp64(y64, dy64, 1 - d),
                  *(m for m, hint in _slip_models(y64, dy64, d) if hint != _DIAGONAL_HINT)]
        best = misfit(got, model)
        if any(misfit(got, r) <= best for r in rivals):
            return None
        return _DIAGONAL_HINT

    def misplaced_parenthesis(got, exp, bad):
        rows = (dy64 * y64).sum(d, keepdim=True)
        if _close(got, y64 * dy64 - rows, rtol, atol):
            return ("misplaced parenthesis: the result equals y * dy - <dy, y>; the formula is "
                    "y * (dy - <dy, y>), the dot product subtracted from dy before multiplying")
        return None

    def misfit(got, model):
        # How far got is from a model, in tolerances, summed over the elements (squared): the
        # model of the mistake made fits best. A NaN or infinite gap is infinitely far.
        gap = (got - model).abs() / (atol + rtol * model.abs())
        return float(gap.nan_to_num(torch.inf, torch.inf, torch.inf).square().sum())

    def dot_of_one_tile(got, exp, bad):
        # The looped path with `dot = ...` for `dot += ...`: only the last column tile counts.
        # On 16-bit rows a dot over a short last tile is small, so y * dy (missing_dot) or a
        # formula slip may fit as well: name the tile only where its model fits best.
        width = y.shape[d]
        yd, dyd, g = (y64, dy64, got) if d == 1 else (y64.t(), dy64.t(), got.t())
        fits = []
        tile = 16
        while tile < width:
            start = (width - 1) // tile * tile
            dot = (dyd[:, start:] * yd[:, start:]).sum(1, keepdim=True)
            model = yd * (dyd - dot)
            if _close(g, model, rtol, atol):
                fits.append((misfit(g, model), tile, start))
            tile *= 2
        if not fits:
            return None
        best, tile, start = min(fits)
        rivals = [exp, y64 * dy64]
        if width >= 2:
            rivals += [m for m, _ in _slip_models(y64, dy64, d)]
        if any(misfit(got, r) <= best for r in rivals):
            return None
        return (f"<dy, y> not accumulated over the column tiles: the result matches a "
                f"dot product over the last {width - start} columns only (tiles of "
                f"{tile}); add each tile's part (dot += ...), do not overwrite it")

    def dot_over_row_block(got, exp, bad):
        # tl.sum(dy * y) without axis=1 sums the whole (BLOCK_M, BLOCK_N) tile: every row of a
        # block of BLOCK_M rows then subtracts the block's total (rows past the end add 0).
        yd, dyd, g = (y64, dy64, got) if d == 1 else (y64.t(), dy64.t(), got.t())
        per_row = (dyd * yd).sum(1)
        n_rows = per_row.numel()
        block_m = 2
        while block_m < 2 * n_rows and block_m <= 256:
            padded = torch.zeros(-(-n_rows // block_m) * block_m, dtype=torch.float64)
            padded[:n_rows] = per_row
            total = padded.reshape(-1, block_m).sum(1).repeat_interleave(block_m)[:n_rows]
            if _close(g, yd * (dyd - total[:, None]), rtol, atol):
                return (f"<dy, y> summed over the whole tile: each row subtracted the total of "
                        f"its block of {block_m} rows; tl.sum(dy * y, axis=1) keeps one dot "
                        "product per row (tl.sum without an axis sums every element)")
            block_m *= 2
        return None

    def dot_not_broadcast(got, exp, bad):
        # y * (dy - dot) without [:, None]: on a (BLOCK_M, BLOCK_N) tile with other sides it
        # does not compile ("block shapes do not broadcast"), but on a square one the
        # (BLOCK_M,) dot broadcasts along the rows, so element (i, j) subtracts the dot of the
        # tile's (j mod BLOCK_N)-th row (0 for rows past the last). Try each square side.
        yd, dyd, g = (y64, dy64, got) if d == 1 else (y64.t(), dy64.t(), got.t())
        per_row = (dyd * yd).sum(1)
        n_rows, width = yd.shape
        side = 2
        while side <= 256 and width > 1:
            strips = -(-n_rows // side)
            padded = torch.zeros(strips * side, dtype=torch.float64)
            padded[:n_rows] = per_row
            rows = torch.arange(n_rows)[:, None] // side * side
            cols = torch.arange(width)[None, :] % side
            model = yd * (dyd - padded[rows + cols])
            if not _close(model, exp if d == 1 else exp.t(), rtol, atol) and _close(g, model, rtol, atol):
                return (f"<dy, y> not broadcast along its row: y * (dy - dot) without [:, None] "
                        f"on a square {side} x {side} tile subtracts from element (i, j) the dot "
                        f"product of the tile's (j mod {side})-th row, not row i's own; write "
                        "dot[:, None] (other tile shapes do not even compile)")
            side *= 2
        return None

    def wrong_dim(got, exp, bad):
        if _close(got, _vjp64(y64, dy64, 1 - d), rtol, atol):
            return (f"reduction over the wrong dimension: the result is the VJP with <dy, y> "
                    f"summed over dim {1 - d} instead of dim {d} (for dim=0 the kernel must "
                    "see transposed views of y, dy and dx; dim arrives normalised to 0 or 1, "
                    "so compare it with 0 or 1, never with -1)")
        return None

    def dy_strides(got, exp, bad):
        if dy.stride() == y.stride():
            return None
        try:  # dy's memory read with y's strides, as a launcher passing y.stride() for dy would
            wrong = dy.detach().as_strided(y.shape, y.stride(), dy.storage_offset())
            if _close(got, _vjp64(y64, wrong, d), rtol, atol):
                return (f"dy's strides taken from y: dy has strides {dy.stride()} but was read "
                        f"with y's {y.stride()}; pass dy.stride(0), dy.stride(1) for dy")
        except RuntimeError:  # y's strides reach outside dy's storage (a broadcast dy)
            pass
        return None

    dx_strides = _dx_strides(y, rtol, atol)

    def dot_rounded_once(got, exp, bad):
        # The finished float32 <dy, y> cast to the 16-bit output dtype before the formula:
        # every row then matches y * (dy - c) to an ulp of dx, c one of the two 16-bit numbers
        # that bracket the exact dot (round to nearest, or the interpreter's truncation).
        if y.dtype == torch.float32 or not bool(bad.any()):
            return None
        yd, dyd = (y64, dy64) if d == 1 else (y64.t(), dy64.t())
        g = got if d == 1 else got.t()
        dot = (dyd * yd).sum(1, keepdim=True)
        near = dot.to(y.dtype)
        up = torch.nextafter(near, torch.full_like(near, math.inf)).double()
        down = torch.nextafter(near, torch.full_like(near, -math.inf)).double()
        near = near.double()
        lo, hi = torch.where(near <= dot, near, down), torch.where(near <= dot, up, near)
        info, eps32 = torch.finfo(y.dtype), torch.finfo(torch.float32).eps

        def fits(c):
            model = yd * (dyd - c)
            # one rounding of dx to the output dtype, float32's own in dy - c and the product,
            # and the spacing of the dtype's subnormals
            slack = (1.01 * info.eps * model.abs() + 4 * eps32 * yd * (dyd.abs() + c.abs())
                     + info.smallest_normal * info.eps)
            return ((g - model).abs() <= slack).all(1)

        if not bool((fits(lo) | fits(hi)).all()):
            return None
        name = str(y.dtype).replace("torch.", "")
        return (f"<dy, y> rounded to {name}: every row matches y * (dy - dot) with the finished "
                f"dot product rounded to {name} (the output dtype) before the formula, "
                "e.g. tl.sum(dy * y, axis=1).to(dx_ptr.dtype.element_ty); dy - <dy, y> "
                "cancels, so keep dot in float32 and round only dx, once, at the store")

    def low_precision_dot(got, exp, bad):
        # Undo the formula row by row: implied <dy, y> = dy - dx / y where y is not tiny.
        yd, dyd = (y64, dy64) if d == 1 else (y64.t(), dy64.t())
        g = got if d == 1 else got.t()
        dot = (dyd * yd).sum(1)
        mass = (dyd * yd).abs().sum(1).clamp_min(1e-300)
        big = yd > 0.25 * yd.amax(1, keepdim=True)
        implied = torch.where(big, dyd - g / torch.where(big, yd, torch.ones_like(yd)), torch.nan)
        implied = implied.nanmedian(1).values
        off = ((implied - dot).abs() / mass).nan_to_num(0.0)
        if bool((off > 2e-5).any()) and bool((off < 5e-2).all()):
            return ("reduction in fp16/bf16: each row's <dy, y> is off by about "
                    f"{float(off.max()):.1e} of sum|dy y|, the size of a 16-bit rounding; "
                    "upcast y and dy to float32 before multiplying and summing, and keep "
                    "the running sum over column tiles in float32 too")
        return None

    def ragged_tail(got, exp, bad):
        # On a GPU an unmasked tail does not fault: lanes past the width read whatever memory
        # follows (the next row, or allocator slack), which lands in <dy, y> and spoils the
        # whole row. (The interpreter's bounds check names the load itself.)
        width = y.shape[d]
        if not gpu or width < 2 or width & (width - 1) == 0:
            return None  # a power-of-two width may fill its blocks exactly
        rows_bad = bad.any(dim=d)
        if bool(rows_bad.any()) and float(bad.double().mean()) > 0.5:
            return (f"tail not masked? The width {width} is not a multiple of any block size, "
                    "and whole rows are wrong, as when lanes past the width load garbage into "
                    "<dy, y>: mask them and load them as 0 (they must add nothing)")
        return None

    # The one tile width that a `2 * BLOCK_N >= n_cols` slip would run in one pass: the
    # power of two with BLOCK_N < n_cols <= 2 * BLOCK_N.
    half = 1 << max(y.shape[d] - 1, 1).bit_length() - 1
    return [dot_of_one_tile, diagonal_best_fit, missing_dot, sign_flipped, formula_slip,
            misplaced_parenthesis, dot_over_row_block, dot_not_broadcast, wrong_dim, *extra,
            dot_rounded_once, _one_pass_too_wide(y, dy, d, half), dx_strides, low_precision_dot,
            dy_strides, ragged_tail]


def _slip_models(y64, dy64, d: int):
    """(what the mistake outputs, its hint) for slips in the formula y * (dy - <dy, y>), each
    replayed in float64 on the kernel's exact inputs; rows run along dimension d."""
    n = y64.shape[d]
    dot = (dy64 * y64).sum(d, keepdim=True)
    return [
        (dy64 * (y64 - dot),
         "y and dy swapped: the result equals dy * (y - <dy, y>); the formula is "
         "y * (dy - <dy, y>) (or the two were passed to the kernel in each other's place)"),
        (y64 * (dy64 - dy64.sum(d, keepdim=True)),
         "the dot product left out y: the result equals y * (dy - sum(dy)); each "
         "row's <dy, y> is tl.sum(dy * y, axis=1)"),
        # (the ninth learner audit: no hint before) <y, 1> = sum(y) = 1 for <dy, y>
        (y64 * (dy64 - y64.sum(d, keepdim=True)),
         "the dot product left out dy: the result equals y * (dy - sum(y)) = y * (dy - 1) "
         "(a softmax row sums to 1); each row's <dy, y> is tl.sum(dy * y, axis=1)"),
        (dy64 - dot,
         "the factor y left out: the result equals dy - <dy, y>; multiply by y after "
         "subtracting, dx = y * (dy - <dy, y>) (J^T dy = y * dy - y <y, dy>)"),
        (y64 * (dy64 - dot / n),
         f"<dy, y> divided by the width (a mean, not a sum): the result equals "
         f"y * (dy - <dy, y> / {n}); each row's <dy, y> is tl.sum(dy * y, axis=1), "
         "not divided by n_cols"),
        (y64 * (dy64 - (dy64 * dy64).sum(d, keepdim=True)),
         "<dy, dy> for <dy, y>: the result equals y * (dy - <dy, dy>), the dot product of dy "
         "with itself; each row's dot is tl.sum(dy * y, axis=1)"),
        (y64 * (dy64 - (y64 * y64).sum(d, keepdim=True)),
         "<y, y> for <dy, y>: the result equals y * (dy - <y, y>), the dot product of y "
         "with itself; each row's dot is tl.sum(dy * y, axis=1)"),
        # (the seventh learner audit's 13: the elementwise derivative of a sigmoid)
        (_diagonal_only(y64, dy64), _DIAGONAL_HINT),
        # (the tenth learner audit's b15: y y^T read as y squared elementwise; no hint before)
        (y64 * (dy64 - (dy64 * y64 * y64).sum(d, keepdim=True)),
         "y squared in the dot product: the result equals y * (dy - <dy, y * y>); y y^T in "
         "J = diag(y) - y y^T is an outer product, so J^T dy = y * dy - y * <y, dy>: each "
         "row's dot is tl.sum(dy * y, axis=1), y once"),
    ]


def _diagonal_only(y64, dy64):
    """What only the Jacobian's diagonal gives: dx = dy * y * (1 - y), each element's own
    derivative, as for a sigmoid (the seventh learner audit's 13)."""
    return dy64 * y64 * (1.0 - y64)


_DIAGONAL_HINT = (
    "only the Jacobian's diagonal: the result equals dy * y * (1 - y), each element's own "
    "derivative y_i (1 - y_i) as for a sigmoid; softmax couples the row, J = diag(y) - "
    "y y^T, so every other element's - y_i y_j dy_j counts too: dx = y * (dy - <dy, y>), "
    "<dy, y> = tl.sum(dy * y, axis=1)")


def _slips_fitting(got, exp, y64, dy64, d: int, rtol, atol) -> list[tuple[int, str]]:
    """(index, hint) of the slips in _slip_models whose output `got` equals (and the right
    answer `exp` does not)."""
    return [(i, hint) for i, (model, hint) in enumerate(_slip_models(y64, dy64, d))
            if _close(got, model, rtol, atol) and not _close(exp, model, rtol, atol)]


def _formula_slip(got, exp, y64, dy64, d: int, rtol, atol):
    """The hint of the first slip that fits. Meant for rows of at least two elements: on one,
    y = 1 and several slips coincide with each other or with the right answer."""
    fitting = _slips_fitting(got, exp, y64, dy64, d, rtol, atol)
    return fitting[0][1] if fitting else None


def _one_element_probe(impl, y, dy, dim, rtol, atol):
    """Diagnosis for rows of one element (y = 1, dx = 0), where y and dy swapped and <dy, dy>
    for <dy, y> both output dy - dy^2: ask the learner's function for a (2, 6) problem in the
    same dtype and device and name the slip whose output it gives there too."""
    d = dim % 2

    def diagnose(got, exp, bad):
        import torch

        if y.shape[d] != 1 or y.numel() == 0:
            return None
        y64, dy64 = y.detach().cpu().double(), dy.detach().cpu().double()
        # The slip must explain this case as well (here every candidate gives 0 or dy - dy^2).
        here = {i for i, _ in _slips_fitting(got, exp, y64, dy64, d, rtol, atol)}
        if not here:
            return None
        # A fixed, well-spread problem: logits and dy that no slip maps onto the right answer.
        k = torch.arange(12, dtype=torch.float64).reshape(2, 6)
        x2 = torch.sin(1.7 * k + 0.3) * 2.0
        y2 = x2.softmax(-1).to(y.dtype).to(y.device)
        dy2 = torch.cos(2.3 * k + 0.5).to(y.dtype).to(y.device)
        try:
            with torch.no_grad():
                probe = impl.softmax_backward(y2, dy2, -1)
        except Exception:  # noqa: BLE001 - the probe fails too: no diagnosis from it
            return None
        if not hasattr(probe, "shape") or tuple(probe.shape) != (2, 6):
            return None
        p64, y2_64, dy2_64 = (t.detach().cpu().double() for t in (probe, y2, dy2))
        exp2 = _vjp64(y2_64, dy2_64, 1)
        tol2 = _atol(y2, dy2, -1, exp2)
        there = [(i, hint) for i, hint in _slips_fitting(p64, exp2, y2_64, dy2_64, 1, rtol, tol2)
                 if i in here]
        if not there:
            return None
        return (there[0][1] + " (on a row of one element y = 1 and dx must be 0; this was told apart "
                "on a (2, 6) problem, where softmax_backward gives the same slip)")

    return diagnose


def _fits(strides, shape, n: int, offset: int = 0) -> bool:
    """A view of `shape` with `strides` (none negative) from `offset` stays inside n elements."""
    if any(st < 0 for st in strides):
        return False
    return offset + sum((size - 1) * st for size, st in zip(shape, strides)) < n


def _dim0_probe_right(impl, y, dy, dim, expected, rtol, atol) -> bool:
    """dim is 0 and softmax_backward(y.t(), dy.t(), dim=-1).t() is right for these inputs."""
    if dim % 2 != 0:
        return False
    try:
        import torch

        with torch.no_grad():
            probe = impl.softmax_backward(y.t(), dy.t(), -1)
    except Exception:  # noqa: BLE001 - the probe fails too: no diagnosis from it
        return False
    if not hasattr(probe, "shape") or tuple(probe.shape) != tuple(y.shape[::-1]):
        return False
    return _close(probe.detach().double().cpu().t(), expected, rtol / 4, atol / 4)


def _dim0_wrote_a_copy(impl, y, dy, dim, expected, rtol, atol):
    """A diagnosis for dim=0 when not one element of the returned dx was written (the values
    are the fill of fresh memory, so it is marked not_from_values) while the same problem as
    dim=-1 on transposed views is right: the kernel wrote some other tensor, typically the
    copy that .contiguous() (or .clone()) makes of the transposed dx."""
    from checks.compare import not_from_values

    def diagnose(got, exp, bad):
        if dim % 2 != 0 or got.numel() == 0 or not bool(bad.all()) \
                or not bool(got.isnan().all()):
            return None
        if not _dim0_probe_right(impl, y, dy, dim, expected, rtol, atol):
            return None
        return ("dx for dim=0 written into a copy: no element of the dx returned for dim=0 was "
                "written, yet softmax_backward(y.t(), dy.t(), dim=-1).t() is right; "
                ".t().contiguous() (or .clone(), or a new tensor) is not dx, so the kernel "
                "wrote that copy and the dx you return stayed empty: hand the kernel the views "
                "y.t(), dy.t(), dx.t() themselves (it takes strides, nothing needs copying)")

    return not_from_values(diagnose)


def _dim0_setup_wrong(impl, y, dy, dim, expected, rtol, atol):
    """A diagnosis for dim=0: softmax_backward(y.t(), dy.t(), dim=-1) is the same problem with
    the same strides, so when it is right and the dim=0 call is not, the mistake is in how the
    launcher sets up dim=0 (a tensor not transposed with the others), not in the kernel.
    Not where dx was written with y's strides: on transposed inputs the dim=-1 call is right
    then too (y.t() is contiguous, as dx is), and _diagnoses' replay names that mistake."""
    dx_strides = _dx_strides(y, rtol, atol)

    def diagnose(got=None, exp=None, bad=None):
        if got is not None and dx_strides(got, exp, bad):
            return None
        if not _dim0_probe_right(impl, y, dy, dim, expected, rtol, atol):
            return None
        return ("dim=0 set up wrong: softmax_backward(y.t(), dy.t(), dim=-1).t() is right "
                "for these inputs but softmax_backward(y, dy, dim=0) is not; for dim=0 hand "
                "the kernel transposed views of y, dy and dx together (dx too: the kernel "
                "writes dx through the view it is given)")

    return diagnose


def _backward_dropped_dim(impl, y, dy, dim, expected, rtol, atol):
    """A diagnosis for Softmax.backward with dim=0: x.grad equals the VJP over dim -1 (the
    launcher's default) while the learner's softmax_backward(y, dy, dim) itself is right for
    these inputs (probed), so backward called softmax_backward(y, dy) without the saved dim."""

    def diagnose(got, exp, bad):
        if dim % 2 != 0 or not _close(got, _vjp64(y, dy, -1), rtol, atol):
            return None
        import torch

        try:
            with torch.no_grad():
                probe = impl.softmax_backward(y.detach(), dy, dim)
        except Exception:  # noqa: BLE001 - the probe fails too: no diagnosis from it
            return None
        if not hasattr(probe, "shape") or tuple(probe.shape) != tuple(y.shape):
            return None
        if not _close(probe.detach().double().cpu(), expected, rtol / 4, atol / 4):
            return None
        # y's grad_fn is forward's ctx: what it kept as ctx.dim is readable there.
        saved = getattr(y.grad_fn, "dim", None)
        if isinstance(saved, int) and not isinstance(saved, bool) and saved % 2 != dim % 2:
            return (f"forward saved the wrong dim: Softmax.apply(x, {dim}) kept ctx.dim = "
                    f"{saved!r}, so backward reduced over dim -1 (x.grad is that VJP, while "
                    f"softmax_backward(y, dy, {dim}) is right for these inputs); ctx.dim must "
                    "be the dim given: ctx.dim = dim")
        return ("Softmax.backward dropped the saved dim (or forward saved the wrong dim: "
                "ctx.dim must be the dim given): x.grad is the VJP over dim -1, yet "
                f"softmax_backward(y, dy, {dim}) is right for these inputs; save ctx.dim = dim "
                "and call softmax_backward(y, dy, ctx.dim)")

    return diagnose


def _extra_axis_hint(impl, exc) -> str | None:
    """A store whose value has one more axis than its pointers, the extra one in front:
    Triton's "Expected pointer argument to have shape [M, M, N] but got [M, N]", read from the
    error (or the errors under it, where a GPU's CompilationError wraps it). That is a per-row
    value of shape (BLOCK_M, 1, 1) broadcast against the (BLOCK_M, BLOCK_N) tile; the kernel's
    source says whether tl.sum(..., keep_dims=True) made it (keep_dims already keeps the axis,
    so dot[:, None] adds a third)."""
    import re

    texts, error = [exc.message], exc.__cause__
    while error is not None and len(texts) < 8:
        texts.append(str(error))
        error = error.__cause__ or error.__context__
    found = re.search(r"Expected (?:pointer|mask) argument to have shape (\[.*)", "\n".join(texts))
    if not found or " but got " not in found.group(1):
        return None
    # Each shape prints as a list (of ints, or of 'constexpr[8]': brackets inside), so read
    # up to the bracket that closes it.
    broadcast, _, rest = found.group(1).partition(" but got ")
    value, pointers = ([int(n) for n in re.findall(r"\d+", _bracketed(part))]
                       for part in (broadcast, rest))
    if len(value) != len(pointers) + 1 or value[1:] != pointers or value[0] != pointers[0]:
        return None
    shown = (f"the value stored has shape {value}, its pointers {pointers}: a per-row value of "
             f"shape ({value[0]}, 1, 1) broadcast the ({pointers[0]}, {pointers[1]}) tile to "
             "three dimensions")
    try:
        import inspect

        source = inspect.getsource(impl.softmax_backward_kernel.fn)
    except Exception:  # noqa: BLE001 - no source to read: the shapes alone
        source = ""
    if re.search(r"tl\.sum\([^\n]*keep_dims\s*=\s*True", source):
        return (f"keep_dims=True and [:, None] both add the row axis: {shown}. "
                "tl.sum(..., axis=1, keep_dims=True) already returns (BLOCK_M, 1), so "
                "dot[:, None] makes it (BLOCK_M, 1, 1); use one or the other: drop keep_dims "
                "(dot is (BLOCK_M,), broadcast with dot[:, None]) or use dot as it is")
    return (f"a per-row value has an extra axis: {shown}; a (BLOCK_M,) vector needs one "
            "[:, None] to meet a (BLOCK_M, BLOCK_N) tile, a (BLOCK_M, 1) one (keep_dims=True) "
            "none")


def _bracketed(text: str) -> str:
    """The list `text` starts with, up to its closing bracket (nested brackets counted)."""
    depth = 0
    for i, char in enumerate(text):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if depth == 0:
            return text[:i + 1]
    return text


def _check_vjp(ctx, impl, y, dy, dim, expected, *, rtol=None, atol=None, name=None, extra=(),
               **knobs):
    """Call softmax_backward and compare with `expected` (float64), naming classic mistakes."""
    from checks.compare import tolerance_for
    from checks.core import CheckFailed

    _require_dim(ctx, dim)
    default = tolerance_for(y.dtype)
    if rtol is None:
        rtol = default.rtol
    if atol is None:
        atol = _atol(y, dy, dim, expected)
    try:
        with launches.recording() as launched:
            out = ctx.call(impl.softmax_backward, y, dy, dim, expect_shape=y.shape,
                           expect_dtype=y.dtype, expect_contiguous=True, **knobs)
    except CheckFailed as exc:
        # Name a stride mix-up only where it would leave the tensor's memory as the
        # interpreter saw: dy read with y's strides (a load), dx written with y's (a store).
        dy_cells = dy.untyped_storage().nbytes() // dy.element_size()
        dim0_hint = None
        if left_the_tensors(exc.message) and not knobs:
            dim0_hint = _dim0_setup_wrong(impl, y, dy, dim, expected, rtol, atol)()
        axis_hint = _extra_axis_hint(impl, exc)
        if dim0_hint:
            exc.hint = dim0_hint
        elif axis_hint:
            exc.hint = axis_hint
        elif ("out-of-bounds load" in exc.message and dy.stride() != y.stride()
                and not _fits(y.stride(), y.shape, dy_cells, dy.storage_offset())):
            exc.hint = (f"dy's strides taken from y? A load left the tensors' memory in a case "
                        f"where dy has strides {dy.stride()} and y has {y.stride()}: pass "
                        "dy's own strides for dy")
        elif ("out-of-bounds store" in exc.message and tuple(y.stride()) != (y.shape[1], 1)
              and not _fits(y.stride(), y.shape, y.numel())):
            exc.hint = (f"dx written with y's strides? A store left dx's memory in a case where "
                        f"y has strides {y.stride()}: dx is a new contiguous tensor (strides "
                        f"{(y.shape[1], 1)}); pass dx.stride(0), dx.stride(1) for dx")
        raise
    ctx.assert_close(out, expected, rtol=rtol, atol=atol,
                     name=name or f"softmax_backward(y, dy, dim={dim})",
                     diagnose=[*([] if knobs else
                                 [_dim0_wrote_a_copy(impl, y, dy, dim, expected, rtol, atol),
                                  _dim0_setup_wrong(impl, y, dy, dim, expected, rtol, atol)]),
                               *_diagnoses(y, dy, dim, rtol, atol, gpu=ctx.device == "cuda",
                                           extra=[_one_element_probe(impl, y, dy, dim, rtol,
                                                                     atol), *extra])])
    # Every tile shape gives the same dx: only the launch record shows a knob that did nothing.
    _knobs_ignored(launched, dim, knobs)
    return out


# Each knob and the kernel argument it sets. num_warps is a launch option every kernel takes
# (absent: Triton's default); a kernel without BLOCK_M or BLOCK_N is not compared (yours may
# name them differently).
_KNOB_ARGUMENTS = {"block_m": "BLOCK_M", "block_n": "BLOCK_N", "num_warps": "num_warps"}


def _knobs_ignored(launched, dim, knobs: dict) -> None:
    """FAIL if a kernel softmax_backward launched ran with another value than a knob the call
    passed (the values stay right, so only the launch shows that the knob did nothing)."""
    ignored = launches.ignored_knob(launched, knobs, _KNOB_ARGUMENTS, ("num_warps", "num_stages"))
    if ignored:
        knob, wanted, launch, shown = ignored
        raise CheckFailed(
            f"softmax_backward(y, dy, dim={dim}, **{knobs}) launched {launch.name} with {shown}",
            hint=f"knob ignored: {knob}={wanted!r} was asked for, but {launch.name} ran "
                 f"with {shown}; the caller's knobs win on every path (the rows and "
                 "the column-tile path alike): a default applies only to a knob left "
                 "out (None)")


# ---------------------------------------------------------------------------------------------
# cpu tier: the math, in NumPy float64
# ---------------------------------------------------------------------------------------------
def _numpy_softmax(x):
    import numpy as np

    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _numpy_vjp(y, dy):
    return y * (dy - (dy * y).sum(axis=-1, keepdims=True))


_CPU_WIDTHS = [Case(width=n) for n in (1, 2, 3, 8, 33)]
# The vjp_formula checks test the lesson's math in NumPy and never call the learner's code: a
# PASS there says nothing about the kernel (an untouched starter passes them).
FORMULA_ONLY = "the lesson's formula, not your code"


@register(W, "vjp_formula.finite_differences", tier="cpu", cases=_CPU_WIDTHS,
          doc="(the lesson's formula, not your code) y * (dy - <dy, y>) equals central finite "
              "differences of <dy, softmax(x)> (float64)")
def vjp_formula_finite_differences(ctx, impl, case):
    import numpy as np

    ctx.note(FORMULA_ONLY)

    rng = ctx.numpy_rng()
    x = rng.standard_normal((3, case.width)) * 2.0
    dy = rng.standard_normal((3, case.width))
    analytic = _numpy_vjp(_numpy_softmax(x), dy)
    # Central differences of L(x) = <dy, softmax(x)>, row by row (rows are independent, so one
    # perturbed column serves all rows at once). The error is truncation h^2/6 |L'''| plus
    # rounding ~eps64 |L| / h; both balance at h ~ (3 eps64)^(1/3) ~ 9e-6, so h = 1e-5 and the
    # error is about 1e-10 * max|dy| (softmax's derivatives are bounded by small constants).
    h = 1e-5
    numeric = np.empty_like(x)
    for j in range(case.width):
        step = np.zeros_like(x)
        step[:, j] = h
        up = (dy * _numpy_softmax(x + step)).sum(axis=-1)
        down = (dy * _numpy_softmax(x - step)).sum(axis=-1)
        numeric[:, j] = (up - down) / (2 * h)
    worst = float(np.abs(analytic - numeric).max())
    allowed = 1e-8 * max(1.0, float(np.abs(dy).max()))  # 100x the expected 1e-10
    ctx.max_error, ctx.tolerance = worst, allowed
    # `not <=`: a NaN difference (NaN > allowed is False) must fail, not pass. These checks run
    # NumPy on the lesson's formula only, never the learner's code, so no learner output can
    # reach this; the guard keeps the formula's own PASS honest.
    if not worst <= allowed:
        ctx.fail(f"formula vs central differences: max |difference| {worst:.3g} > {allowed:.3g}",
                 hint="the VJP of softmax is y * (dy - <dy, y>)")


@register(W, "vjp_formula.dense_jacobian", tier="cpu", cases=_CPU_WIDTHS,
          doc="(the lesson's formula, not your code) J = diag(y) - y y^T is symmetric, "
              "annihilates constants, and J^T dy = the formula")
def vjp_formula_dense_jacobian(ctx, impl, case):
    import numpy as np

    ctx.note(FORMULA_ONLY)

    rng = ctx.numpy_rng()
    worst = 0.0
    for _ in range(3):
        y = _numpy_softmax(rng.standard_normal(case.width) * 2.0)
        dy = rng.standard_normal(case.width)
        jac = np.diag(y) - np.outer(y, y)  # d y_i / d x_j
        # np.max, not Python's max: max(0.0, nan) is 0.0, which would hide a NaN.
        worst = float(np.max([worst,
                              np.abs(jac.T @ dy - _numpy_vjp(y, dy)).max(),  # the formula
                              np.abs(jac - jac.T).max(),  # symmetric: J^T dy = J dy
                              np.abs(jac @ np.ones(case.width)).max()]))  # softmax(x + c) = softmax(x)
    allowed = 1e-14 * case.width  # a few float64 roundings per entry of sums over `width` terms
    ctx.max_error, ctx.tolerance = worst, allowed
    if not worst <= allowed:  # (a NaN fails: see vjp_formula.finite_differences)
        ctx.fail(f"dense Jacobian identities off by {worst:.3g} > {allowed:.3g}")


# ---------------------------------------------------------------------------------------------
# kernel tier: softmax_backward against float64 autograd
# ---------------------------------------------------------------------------------------------
def _values_cases(device: str) -> list[Case]:
    shapes = [(1, 1), (3, 5), (4, 17), (2, 1024), (3, 1000), (2, 4097)]
    knobbed = [((3, 1000), dict(block_n=128)), ((2, 3000), dict(block_n=1024)),
               # every knob given, none of them its default for the shape (8, 64 and 1 warp)
               ((5, 33), dict(block_m=4, block_n=16, num_warps=2)),
               # rows longer than one tile but at most two (block_n < n <= 2 * block_n): the
               # looped path, on rows and on the column-tile path (a transposed layout)
               ((3, 200), dict(block_n=128)), ((40, 50), dict(block_n=32, layout="transposed"))]
    if device == "cuda":
        shapes += [(64, 1000), (128, 1024), (37, 4097), (256, 16384), (16, 32768), (4, 131072),
                   (1823, 781), (8192, 64)]
        knobbed += [((64, 16384), dict(block_n=4096, num_warps=8)),
                    ((256, 2048), dict(block_m=4, num_warps=8))]
    cases = [Case(shape=s, dtype=d) for s in shapes for d in DTYPES]
    cases += [Case(shape=s, dtype=d, **k) for s, k in knobbed for d in DTYPES]
    return cases


@register(W, "backward.values", tier="kernel", uses=USES, cases=_values_cases,
          doc="contiguous rows, ragged widths, all dtypes, both the one-pass and looped paths; "
              "block_m, block_n and num_warps reach the launch")
def backward_values(ctx, impl, case):
    knobs = {k: case[k] for k in ("block_m", "block_n", "num_warps") if k in case}
    layout = case.get("layout", "contiguous")
    x64, y, dy = _inputs(ctx, case.shape, case.dtype, -1, layout, layout)
    _check_vjp(ctx, impl, y, dy, -1, _autograd64(x64, dy, -1), **knobs)


def _one_pass_too_wide(y, dy, dim: int, block_n: int):
    """Diagnosis: the first block_n columns hold the VJP with <dy, y> over those columns alone
    (and the rest is wrong): the one-pass branch ran on rows wider than BLOCK_N."""
    from checks.compare import tolerance_for

    tol = tolerance_for(y.dtype)
    d = dim % 2
    width = y.shape[d]

    def diagnose(got, exp, bad):
        if block_n >= width:
            return None
        yh, dyh = y.narrow(d, 0, block_n), dy.narrow(d, 0, block_n)
        sim = _vjp64(yh, dyh, d)
        head = got.narrow(d, 0, block_n)
        if not _close(head, sim, 4 * tol.rtol, 4 * tol.atol + 1e-6) \
                or _close(exp.narrow(d, 0, block_n), sim, tol.rtol, tol.atol):
            return None
        return (f"ONE_PASS chosen for rows wider than BLOCK_N = {block_n}: the first {block_n} "
                f"of {width} columns hold y * (dy - <dy, y>) with <dy, y> over those columns "
                "alone, and the rest was never written; one pass is right only when "
                "BLOCK_N >= n_cols (else loop over the column tiles)")

    return diagnose


_LAYOUTS = [("contiguous", "contiguous"), ("transposed", "transposed"), ("sliced", "sliced"),
            ("contiguous", "broadcast"), ("contiguous", "transposed"), ("transposed", "sliced")]


def _layout_cases(device: str) -> list[Case]:
    shapes = [(5, 37), (33, 200)]
    if device == "cuda":
        shapes += [(512, 1000), (1000, 4096), (64, 20000)]
    return [Case(shape=s, dim=dim, y=ly, dy=ld, dtype=dt) for s in shapes for dim in (-1, 0)
            for ly, ld in _LAYOUTS for dt in DTYPES]


@register(W, "backward.layouts", tier="kernel", uses=USES, cases=_layout_cases,
          doc="transposed, sliced (NaN between the elements) and broadcast (stride 0) inputs")
def backward_layouts(ctx, impl, case):
    x64, y, dy = _inputs(ctx, case.shape, case.dtype, case.dim, case.y, case.dy)
    _check_vjp(ctx, impl, y, dy, case.dim, _autograd64(x64, dy, case.dim))


EMPTY_HINT = ("zero-size input: return the freshly allocated empty dx before launching (a grid "
              "or a block of 0 is not a launch)")


@register(W, "backward.dim", tier="kernel", uses=USES,
          cases=[Case(shape=(6, 19), dim=d, dtype=t) for d in (-1, 1, 0, -2)
                 for t in ("float16", "float32")]
          # zero-size: no rows or no columns, reduced either way (an empty dx, nothing launched)
          + [Case(shape=s, dim=d, dtype="float32") for s in ((0, 5), (5, 0)) for d in (-1, 0)],
          doc="dim both ways, negative and positive, on a non-square tensor; empty tensors")
def backward_dim(ctx, impl, case):
    x64, y, dy = _inputs(ctx, case.shape, case.dtype, case.dim)
    _require_dim(ctx, case.dim)
    if y.numel() == 0:
        try:
            ctx.call(impl.softmax_backward, y, dy, case.dim, expect_shape=y.shape,
                     expect_dtype=y.dtype, expect_contiguous=True)
        except CheckFailed as exc:
            if "returned one of its inputs" not in exc.message:
                exc.hint = EMPTY_HINT
            raise
        return
    _check_vjp(ctx, impl, y, dy, case.dim, _autograd64(x64, dy, case.dim))


@register(W, "backward.default_dim", tier="kernel", uses=USES,
          cases=[Case(shape=(6, 19), dtype="float32")],
          doc="softmax_backward(y, dy) with dim left out reduces over the last dimension")
def backward_default_dim(ctx, impl, case):
    from checks.compare import tolerance_for

    x64, y, dy = _inputs(ctx, case.shape, case.dtype, -1)
    out = ctx.call(impl.softmax_backward, y, dy, expect_shape=y.shape, expect_dtype=y.dtype,
                   expect_contiguous=True)
    expected = _autograd64(x64, dy, -1)
    tol = tolerance_for(y.dtype)
    atol = _atol(y, dy, -1, expected)

    def over_dim0(got, exp, bad):
        if _close(got, _vjp64(y, dy, 0), tol.rtol, atol):
            try:  # dim=-1 given explicitly reduces over dim 0 too: the default is not to blame
                import torch

                with torch.no_grad():
                    explicit = impl.softmax_backward(y, dy, -1)
                if _close(explicit.detach().cpu().double(), _vjp64(y, dy, 0), tol.rtol, atol):
                    return None
            except Exception:  # noqa: BLE001 - learner code may raise anything
                pass
            return ("default dim must be -1 (the last dimension): softmax_backward(y, dy) "
                    "without dim reduced over dim 0; declare the parameter as dim: int = -1")
        return None

    ctx.assert_close(out, expected, atol=atol, name="softmax_backward(y, dy) (dim left out)",
                     diagnose=[over_dim0, *_diagnoses(y, dy, -1, tol.rtol, atol,
                                                      gpu=ctx.device == "cuda")])


def _extreme_cases(device: str) -> list[Case]:
    return ([Case(kind="one_hot", dtype=d) for d in DTYPES]
            + [Case(kind="tiny_probabilities", dtype=d) for d in DTYPES]
            + [Case(kind="huge_dy", dtype=d) for d in DTYPES]
            + [Case(kind="uniform", dtype=d) for d in DTYPES])


# huge_dy: |dy| <= D. The exact answer is small: dx_i = y_i ((1 - y_i) dy_i - sum_{j != i} y_j
# dy_j), so |dx_i| <= 2 y_i (1 - y_i) D <= D / 2, and <dy, y>, a weighted mean of dy, stays
# within D. But the intermediate dy_i - <dy, y> reaches 2 D. float16: D = 6e4 (the max is
# 65504), and the case makes dy_i - <dy, y> > 1.3 D ~ 8e4 for every i > 0: finite in float32,
# inf in float16 arithmetic (then dx = y * inf is inf, or NaN where y rounded to 0), although
# every exact dx fits float16. bfloat16 has float32's exponent range, so at 1e30 nothing can
# overflow in float32 or bfloat16 arithmetic; the case checks that magnitudes far past
# float16's range come through (a value passed through float16 on the way would be inf).
_HUGE = {"float16": 6e4, "bfloat16": 1e30, "float32": 1e30}


def _huge_dy_inputs(ctx, shape, dtype: str):
    """x, y = softmax(x) and dy with dy_i - <dy, y> near 1.3 * _HUGE[dtype] for every i > 0."""
    torch = ctx.torch
    big = _HUGE[dtype]
    x64 = ctx.randn(shape, "float64", scale=2.0, device="cpu")
    # Column 0 six above the rest: y_0 >= 1 / (1 + 32 e^-6) > 0.92, whatever the draw.
    x64[:, 0] = x64.amax(dim=1) + 6.0
    y = x64.softmax(-1).to(getattr(torch, dtype)).to(ctx.torch_device)
    # dy_0 = -D and dy_i in [D/2, D] otherwise: <dy, y> <= -0.92 D + 0.08 D = -0.84 D, so
    # dy_i - <dy, y> >= 1.34 D for i > 0 (8e4 > 65504 in float16).
    dy64 = ctx.rand_like_distinct(shape, "float64", 0.5 * big, big, device="cpu")
    dy64[:, 0] = -big
    return x64, y, dy64.to(getattr(torch, dtype)).to(ctx.torch_device)


@register(W, "backward.extreme", tier="kernel", uses=USES, cases=_extreme_cases,
          doc="one-hot y, probabilities below the fp16 subnormals, huge dy, uniform rows")
def backward_extreme(ctx, impl, case):
    torch = ctx.torch
    shape = (4, 33)
    if case.kind == "one_hot":  # logits 1e4 apart: y is exactly 0 or 1, dx exactly 0
        x64, y, dy = _inputs(ctx, shape, case.dtype, -1, scale=1e4)
    elif case.kind == "tiny_probabilities":  # many y far below 2^-24 (0 in fp16), some subnormal
        x64, y, dy = _inputs(ctx, shape, case.dtype, -1, scale=12.0)
    elif case.kind == "huge_dy":  # dy - <dy, y> past the float16 max, dx well inside it
        x64, y, dy = _huge_dy_inputs(ctx, shape, case.dtype)
    else:  # equal logits: y = 1/33 everywhere
        x64 = torch.zeros(shape, dtype=torch.float64)
        y = x64.softmax(-1).to(getattr(torch, case.dtype)).to(ctx.torch_device)
        dy = ctx.randn(shape, case.dtype)
    overflow_hint = ("overflow: dy - <dy, y> can reach twice max|dy|, past the 16-bit range; "
                     "multiply and sum in float32, round once at the store")

    def overflow(got, exp, bad):
        return overflow_hint if bool((~got.isfinite() & exp.isfinite()).any()) else None

    out = _check_vjp(ctx, impl, y, dy, -1, _autograd64(x64, dy, -1), extra=[overflow])
    if not bool(out.isfinite().all()):
        ctx.fail("softmax_backward returned Inf or NaN for finite inputs", hint=overflow_hint)


def _reduction_cases(device: str) -> list[Case]:
    # Every path that sums <dy, y>: one pass (4 x 2048), the row loop (3 x 3000 in column
    # tiles of 1024) and the column-tile loop (33 x 200 stored transposed: 32 neighbouring
    # rows per program, the reduced dimension walked in steps of 128). Both 16-bit dtypes on
    # the looped paths: a dot product rounded to bf16 between tiles is as wrong as an fp16 one.
    cases = [Case(shape=(4, 2048), dtype="float16")]
    cases += [Case(shape=(3, 3000), dtype=d, block_n=1024) for d in ("float16", "bfloat16")]
    cases += [Case(shape=(33, 200), dtype=d, layout="transposed")
              for d in ("float16", "bfloat16")]
    if device == "cuda":
        cases += [Case(shape=(64, 16384), dtype=d) for d in ("float16", "bfloat16")]
        cases += [Case(shape=(64, 4096), dtype="bfloat16")]
        # the default looped paths: rows wider than one register tile, and a transposed layout
        cases += [Case(shape=s, dtype=d) for s in ((64, 32768), (8, 65536))
                  for d in ("float16", "bfloat16")]
        cases += [Case(shape=(2048, 1000), dtype=d, layout="transposed")
                  for d in ("float16", "bfloat16")]
    return cases


@register(W, "backward.fp32_reduction", tier="kernel", uses=USES, cases=_reduction_cases,
          doc="16-bit inputs, dy = 60 + noise: <dy, y> ~ 60 cancels against dy, float32 survives "
              "(one pass, row loop and column-tile loop)")
def backward_fp32_reduction(ctx, impl, case):
    from checks.compare import tolerance_for

    knobs = {k: case[k] for k in ("block_n",) if k in case}
    layout = case.get("layout", "contiguous")
    # dy = 60 + N(0, 1): each dy - <dy, y> is O(1) while <dy, y> ~ 60. An fp16 <dy, y> is only
    # good to ~eps16 * 60 ~ 0.03 and that error reaches every dx; a float32 one to ~1e-5. (A
    # float32 sum rounded to bf16 after each tile is worse still: ~eps_bf16 * 60 ~ 0.2.)
    _, y, dy = _inputs(ctx, case.shape, case.dtype, -1, layout, layout, dy_shift=60.0)
    expected = _vjp64(y, dy, -1)  # the kernel's exact inputs: only its arithmetic is judged
    default = tolerance_for(y.dtype)
    # Beyond one rounding at the store (rtol), only the float32 dot product's own error.
    atol = default.atol + _fp32_dot_allowance(y, dy, -1)
    _check_vjp(ctx, impl, y, dy, -1, expected, rtol=default.rtol, atol=atol, **knobs)


@register(W, "backward.fresh_output", tier="kernel", uses=USES,
          cases=[Case(shape=(6, 40), dim=0, dtype=d) for d in DTYPES],
          doc="inputs bitwise unchanged (also with dy = y), a new contiguous output every call")
def backward_fresh_output(ctx, impl, case):
    x64, y, dy = _inputs(ctx, case.shape, case.dtype, case.dim, "transposed", "sliced")
    # (ctx.call checks the inputs)
    first = _check_vjp(ctx, impl, y, dy, case.dim, _autograd64(x64, dy, case.dim))
    second = ctx.call(impl.softmax_backward, y, dy, case.dim, expect_shape=y.shape,
                      expect_dtype=case.dtype)
    if first.data_ptr() == second.data_ptr():
        ctx.fail("two calls returned the same memory", hint="allocate a fresh output every call")
    # y passed as dy as well (aliased inputs): d<y, softmax(x)>/dx with dy = y
    _check_vjp(ctx, impl, y, y, case.dim, _autograd64(x64, y, case.dim),
               name="softmax_backward(y, y, dim=0)")


def _dense_cases(device: str) -> list[Case]:
    width = 2048 if device == "cuda" else 64
    return [Case(shape=(8, width), dtype="float32", dim=-1),
            Case(shape=(width, 8), dtype="float16", dim=0)]


@register(W, "backward.no_dense_jacobian", tier="kernel", uses=USES, cases=_dense_cases,
          doc="no tensor of width^2 elements is created (no N x N Jacobian); GPU: peak memory")
def backward_no_dense_jacobian(ctx, impl, case):
    from checks.compare import tolerance_for

    width = case.shape[case.dim]
    x64, y, dy = _inputs(ctx, case.shape, case.dtype, case.dim)
    _require_dim(ctx, case.dim)
    expected = _autograd64(x64, dy, case.dim)
    rtol, atol = tolerance_for(y.dtype).rtol, _atol(y, dy, case.dim, expected)
    # A dim=0 call set up wrong (dx not transposed with y and dy) fails here too, before the
    # values are compared: name it as backward.values does.
    dim0 = [_dim0_wrote_a_copy(impl, y, dy, case.dim, expected, rtol, atol),
            _dim0_setup_wrong(impl, y, dy, case.dim, expected, rtol, atol)]
    try:
        with ctx.track_allocations() as log:
            out = ctx.call(impl.softmax_backward, y, dy, case.dim, expect_shape=y.shape,
                           expect_dtype=case.dtype)
    except CheckFailed as exc:
        hint = dim0[1]() if left_the_tensors(exc.message) else None
        if hint:
            exc.hint = hint
        raise
    big = [(shape, str(dtype)) for shape, dtype in log if math.prod(shape) >= width * width]
    if big:
        ctx.fail(f"softmax_backward created {len(big)} tensor(s) with >= width^2 = {width ** 2} "
                 f"elements, e.g. shape {big[0][0]} {big[0][1]}",
                 hint="dense Jacobian: J = diag(y) - y y^T is never needed; J^T dy = "
                      "y * (dy - <dy, y>) takes one dot product per row")
    if log.peak_bytes is not None:
        limit = width * width * y.element_size()  # a single row's Jacobian
        if log.peak_bytes >= limit:
            ctx.fail(f"peak device memory rose by {log.peak_bytes} bytes >= {limit}, one "
                     "row's Jacobian", hint="dense Jacobian: compute J^T dy without J")
    # (a wrong formula fails here too: the values check's diagnoses name it the same way)
    ctx.assert_close(out, expected, rtol=rtol, atol=atol, name="softmax_backward",
                     diagnose=[*dim0, *_diagnoses(y, dy, case.dim, rtol, atol,
                                                  gpu=ctx.device == "cuda")])


@register(W, "bad_calls", tier="kernel", uses=USES,
          doc="bad calls raise TypeError/ValueError naming the argument, before any launch")
def bad_calls(ctx, impl, case):
    torch = ctx.torch
    dev = ctx.torch_device
    fn = impl.softmax_backward
    y = ctx.randn((4, 8)).softmax(-1)
    dy = ctx.randn((4, 8))
    ctx.expect_error(fn, y, ctx.randn((4, 9)), mentions=["dy", "shape"], what="y/dy shape mismatch")
    ctx.expect_error(fn, y, ctx.randn((8, 4)), mentions=["dy", "shape"],
                     what="y/dy transposed shapes")
    ctx.expect_error(fn, y, dy.half(), mentions=["dy", "dtype"], what="y/dy dtype mismatch")
    ctx.expect_error(fn, y.to(torch.int32), dy.to(torch.int32), mentions=["y"],
                     what="integer dtype")
    ctx.expect_error(fn, y.double(), dy.double(), mentions=["y", "float64"],
                     what="float64 (not supported by the kernel)")
    ctx.expect_error(fn, y, [[0.0] * 8] * 4, mentions=["dy"], what="dy not a tensor")
    ctx.expect_error(fn, y.to_sparse(), dy, mentions=["y", "dense"], what="sparse y")
    # a view whose memory holds the values before a lazy negation (`z.conj().imag` makes one)
    ctx.expect_error(fn, y, torch._neg_view(dy), mentions=["dy", "resolve_neg"],
                     what="lazily negated dy")
    ctx.expect_error(fn, y[0], dy[0], mentions=["2-D"], what="1-D input")
    ctx.expect_error(fn, y[None], dy[None], mentions=["2-D"], what="3-D input")
    ctx.expect_error(fn, y, dy, 2, mentions=["dim"], what="dim=2 on a 2-D tensor")
    ctx.expect_error(fn, y, dy, -3, mentions=["dim"], what="dim=-3 on a 2-D tensor")
    ctx.expect_error(fn, y, dy, 1.0, mentions=["dim"], what="dim not an int")
    ctx.expect_error(fn, y, dy, block_n=100, mentions=["block_n"], what="block_n not 2^k")
    ctx.expect_error(fn, y, dy, block_m=0, mentions=["block_m"], what="block_m = 0")
    ctx.expect_error(fn, y, dy, num_warps=3, mentions=["num_warps"], what="num_warps not 2^k")
    ctx.expect_error(fn, y, dy, num_warps=0, mentions=["num_warps"], what="num_warps = 0")
    # each knob valid alone, the tile too large for registers together
    ctx.expect_error(fn, y, dy, block_m=1024, block_n=1024, mentions=["block_m", "block_n"],
                     what="block_m * block_n too large")
    if ctx.device == "cuda":
        ctx.expect_error(fn, y.cpu(), dy.cpu(), mentions=["cuda"], what="CPU tensors, GPU run")
        ctx.expect_error(fn, y, dy.cpu(), mentions=["dy"], what="dy on another device")
    del dev


# ---------------------------------------------------------------------------------------------
# kernel tier: the autograd function
# ---------------------------------------------------------------------------------------------
def _apply_cases(device: str) -> list[Case]:
    shape = (5, 37) if device != "cuda" else (300, 2000)
    return [Case(shape=shape, dim=dim, x=layout, loss=loss, dtype=d)
            for dim in (-1, 0) for layout in ("contiguous", "transposed")
            for loss in ("weighted", "column_sums") for d in DTYPES
            # column_sums with dim=0 makes dy constant along the reduced dimension, where the
            # exact gradient is 0 and only rounding noise is left to compare
            if not (loss == "column_sums" and (layout == "transposed" or dim == 0))]


def _loss(y, w, kind):
    # weighted: dy = w (contiguous). column_sums: autograd hands backward a dy = w[0] expanded
    # along dim 0, a stride-0 tensor.
    return (y * w).sum() if kind == "weighted" else (y.sum(0) * w[0]).sum()


SAVED_TUPLE_HINT = ("ctx.saved_tensors is a tuple: unpack it, (y,) = ctx.saved_tensors; "
                    "y = ctx.saved_tensors hands softmax_backward the tuple (y,), not y")


def _saved_tuple_hint(impl, y, dy, dim, error) -> str | None:
    """SAVED_TUPLE_HINT when Softmax.backward raised exactly what the learner's own
    softmax_backward raises when it is handed the tuple (y,) in y's place (as
    `y = ctx.saved_tensors` does): the same exception type and message, probed."""
    import torch

    if error is None:
        return None
    try:
        with torch.no_grad():
            impl.softmax_backward((y.detach(),), dy, dim)
    except Exception as probe:  # noqa: BLE001 - the probe is meant to raise
        if type(probe) is type(error) and str(probe) == str(error):
            return SAVED_TUPLE_HINT
    return None


def _saved_count_hint(y, error) -> str | None:
    """When Softmax.backward failed to unpack ctx.saved_tensors (Python's "too many" or "not
    enough values to unpack") and y's backward node holds another number of saved tensors than
    the one y: forward saved more (or fewer) than backward unpacks. Read off the node itself
    (grad_fn.saved_tensors), not assumed."""
    text = str(error)
    if not isinstance(error, ValueError) or "values to unpack" not in text:
        return None
    try:
        saved = y.grad_fn.saved_tensors
    except Exception:  # noqa: BLE001 - no node, or nothing saved that can be read back
        return None
    if len(saved) == 1:
        return None
    which = ", ".join(f"{tuple(s.shape)}{' (y)' if s.data_ptr() == y.data_ptr() else ''}"
                      for s in saved)
    return (f"forward saved {len(saved)} tensors ({which}) but backward unpacks another number "
            f"({text}): ctx.saved_tensors returns exactly what ctx.save_for_backward got, in "
            "order; the VJP needs only the output, so save y alone, ctx.save_for_backward(y), "
            "and unpack it as (y,) = ctx.saved_tensors")


def _dy_dtype_hint(impl, y, dy, dim, error) -> str | None:
    """When Softmax.backward raised exactly what the learner's own softmax_backward raises for
    dy converted to another dtype (dy.float(), say), or the saved y converted (y.float(): the
    ninth learner audit's B21, no hint before), while it takes this y and dy as they come: the
    same exception type and message, probed, for the one conversion that reproduces it."""
    import torch

    if error is None or not isinstance(dy, torch.Tensor) or not isinstance(y, torch.Tensor):
        return None
    y = y.detach()
    try:
        with torch.no_grad():
            impl.softmax_backward(y, dy, dim)
    except Exception:  # noqa: BLE001 - the launcher refuses this dy itself: not this mistake
        return None
    for which in ("dy", "y"):
        given = dy if which == "dy" else y
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            if dtype == given.dtype:
                continue
            args = (y, dy.to(dtype)) if which == "dy" else (y.to(dtype), dy)
            try:
                with torch.no_grad():
                    impl.softmax_backward(*args, dim)
            except Exception as probe:  # noqa: BLE001 - the probe is meant to raise
                if type(probe) is type(error) and str(probe) == str(error):
                    name = str(dtype).replace("torch.", "")
                    call = ("y, dy.to(torch.{name})" if which == "dy"
                            else "y.to(torch.{name}), dy").format(name=name)
                    handed = ("autograd hands backward a dy of y's dtype" if which == "dy"
                              else "forward saved y in x's dtype")
                    return (f"Softmax.backward changed {which}'s dtype: it raised what "
                            f"softmax_backward({call}, dim) raises, while "
                            f"softmax_backward(y, dy, dim) takes this {str(given.dtype)[6:]} "
                            f"{which} as it comes; {handed}, and the kernel upcasts y and dy "
                            "to float32 itself: pass both as they are, "
                            "softmax_backward(y, dy, ctx.dim)")
    return None
    try:
        with torch.no_grad():
            impl.softmax_backward(y.detach(), dy, dim)
    except Exception:  # noqa: BLE001 - the launcher refuses this dy itself: not this mistake
        return None
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        if dtype == dy.dtype:
            continue
        try:
            with torch.no_grad():
                impl.softmax_backward(y.detach(), dy.to(dtype), dim)
        except Exception as probe:  # noqa: BLE001 - the probe is meant to raise
            if type(probe) is type(error) and str(probe) == str(error):
                name = str(dtype).replace("torch.", "")
                return (f"Softmax.backward changed dy's dtype: it raised what "
                        f"softmax_backward(y, dy.to(torch.{name}), dim) raises, while "
                        f"softmax_backward(y, dy, dim) takes this {str(dy.dtype)[6:]} dy as it "
                        "comes; autograd hands backward a dy of y's dtype, and the kernel "
                        "upcasts it to float32 itself: pass dy as it is, "
                        "softmax_backward(y, dy, ctx.dim)")
    return None


def _dim_not_saved_hint(error) -> str | None:
    """When Softmax.backward read an attribute `dim` that ctx does not have: forward never
    stored it (the ninth learner audit: no hint before)."""
    if not isinstance(error, AttributeError) or "'dim'" not in str(error):
        return None
    return ("forward did not save dim: backward read ctx.dim, which forward never set "
            f"({type(error).__name__}: {error}); store it in forward, ctx.dim = dim "
            "(save_for_backward takes tensors only)")


def _call_backward(impl, y, dy, dim, fn, *args, label: str):
    """call_learner(fn, *args) for a call that runs Softmax.backward on y's graph with the
    upstream gradient dy, naming a tuple ctx.saved_tensors passed on as y, or a dy converted
    to another dtype, when it raises."""
    from checks.context import call_learner

    try:
        return call_learner(fn, *args, label=label)
    except CheckFailed as exc:
        hint = (_saved_tuple_hint(impl, y, dy, dim, exc.__cause__)
                or _saved_count_hint(y, exc.__cause__)
                or _dy_dtype_hint(impl, y, dy, dim, exc.__cause__) or _extra_axis_hint(impl, exc)
                or _dim_not_saved_hint(exc.__cause__))
        if hint:
            exc.hint = hint
        raise


def _expect_backward_launch(ctx, impl, y, dy, dim):
    """Run y's backward node on dy and FAIL unless it launched softmax_backward_kernel.

    The node is called directly (grad_fn.apply), not through y.backward(): autograd runs a CUDA
    backward on its own worker thread, where the launch log, kept per thread, would see nothing.
    A direct call frees nothing, so the real backward can still run afterwards."""
    from checks.context import fresh_memory_filled

    # Inside fresh_memory_filled(), as CheckContext.call runs learner code: a dx allocated and
    # never written holds the checks' NaN fill. (Only here: autograd's engine runs the
    # learner's backward with every torch function mode off, so a whole backward pass,
    # y.backward(dy), would hand back whatever the allocator held.)
    with ctx.count_launches() as log, fresh_memory_filled():
        grads = _call_backward(impl, y, dy, dim, y.grad_fn.apply, dy, label="Softmax.backward")
    if not isinstance(grads, tuple) or not grads or grads[0] is None:
        ctx.fail(f"Softmax.backward returned {type(grads).__name__}, expected (dx, None)",
                 hint="backward must return (dx, None)")
    if not any("softmax_backward" in name for name in log):
        ran = ", ".join(log) if log else "no Triton kernel"
        dx = grads[0]
        unwritten = (holds_fresh_memory_fill(dx) if isinstance(dx, ctx.torch.Tensor)
                     else None)
        if unwritten is not None:
            # dx = torch.empty_like(dy) returned without the kernel call that fills it
            ctx.fail(f"Softmax.backward launched {ran}; expected softmax_backward_kernel, and "
                     f"{never_written_line(unwritten)}",
                     hint="dx allocated but never computed: backward returned fresh memory "
                          "(torch.empty_like(dy)?) without launching the kernel; "
                          "dx = softmax_backward(y, dy, ctx.dim)")
        right = (isinstance(dx, ctx.torch.Tensor) and dx.shape == y.shape
                 and _close(dx.detach().cpu().double(), _vjp64(y, dy, dim), 0.02, 1e-3))
        ctx.fail(f"Softmax.backward launched {ran}; expected softmax_backward_kernel",
                 hint=("backward fell back to torch: " + ("the values are right, but " if right
                                                          else "")
                       + "dx must come from this workshop's kernel, "
                         "softmax_backward(y, dy, ctx.dim)"))


@register(W, "autograd.softmax_apply", tier="kernel", uses=USES_AUTOGRAD, cases=_apply_cases,
          doc="gradients of Softmax.apply(x, dim) match torch.softmax's float64 gradients")
def autograd_softmax_apply(ctx, impl, case):
    from checks.compare import tolerance_for
    from checks.context import call_learner

    torch = ctx.torch
    dtype = getattr(torch, case.dtype)
    x = _place(ctx.randn(case.shape, case.dtype, scale=2.0), case.x).requires_grad_(True)
    w = ctx.randn(case.shape, case.dtype)
    x_saved = x.detach().clone()

    _require_dim(ctx, case.dim)
    with ctx.count_launches() as forward_log:
        y = call_learner(impl.Softmax.apply, x, case.dim, label="Softmax.apply")
    if not isinstance(y, torch.Tensor) or y.shape != x.shape or y.dtype != dtype:
        ctx.fail(f"Softmax.apply returned {type(y).__name__} "
                 f"{getattr(y, 'shape', '')} {getattr(y, 'dtype', '')}, expected {dtype} "
                 f"{tuple(x.shape)}", hint="forward returns the softmax of x, same shape and dtype")
    if y.grad_fn is None:
        ctx.fail("Softmax.apply's output has no grad_fn", hint="call it on an x that requires grad")
    # Values alone would pass a Function that computes with torch: the launches say whose code
    # ran. The forward runs on this thread, inside apply.
    if not forward_log:
        ctx.fail("Softmax.apply launched no Triton kernel in its forward",
                 hint="forward fell back to torch: compute y with workshop 1's kernel "
                      "(strided_softmax.softmax)")
    # What the upstream gradient is, for the launch check here and the diagnoses below.
    dy = w if case.loss == "weighted" else w[0].expand(case.shape)
    _expect_backward_launch(ctx, impl, y, dy, case.dim)
    _call_backward(impl, y, dy, case.dim, _loss(y, w, case.loss).backward,
                   label="backward through Softmax")
    if not torch.equal(x.detach(), x_saved):
        ctx.fail("Softmax wrote into x", hint="inputs must never be written")
    if x.grad is None:
        ctx.fail("x.grad is None after backward", hint="backward must return (dx, None)")

    x64 = x.detach().cpu().double().requires_grad_(True)
    _loss(x64.softmax(case.dim), w.cpu().double(), case.loss).backward()
    expected = x64.grad
    # PyTorch's own gradient at this precision sets the slack (FlashAttention's rule).
    x_lp = x.detach().clone().requires_grad_(True)
    _loss(x_lp.softmax(case.dim), w, case.loss).backward()
    slack = 2.0 * float((x_lp.grad.cpu().double() - expected).abs().max())
    tol = tolerance_for(dtype)
    # PyTorch's error does not bound ours when our forward's y is less exact than PyTorch's:
    # workshop 1's kernel computes 2^((x - m) log2 e) from a float32 product rounded to half an
    # eps of |x - m| log2 e, so every y_j of a row may be off by up to about (2 + max|x - m|)
    # float32 eps relative, and <dy, y> by that times sum|dy y|; dx_i inherits y_i times it.
    # (Seen without this term: one float32 element 2.96e-7 off against 2.48e-7 allowed.)
    x64_rows = x.detach().cpu().double()
    y64 = x64_rows.softmax(case.dim)
    mass = float((dy.cpu().double() * y64).abs().sum(case.dim).max())
    spread = float((x64_rows.amax(case.dim) - x64_rows.amin(case.dim)).max())
    forward_rel = (2.0 + spread) * torch.finfo(torch.float32).eps
    if ctx.device == "interpreter" and case.dtype == "bfloat16":
        # The interpreter truncates the forward's bf16 y (every y_j low by up to one eps, all
        # the same way), so <dy, y> shifts by up to eps * sum|dy y| instead of averaging out as
        # PyTorch's round-to-nearest does.
        forward_rel += torch.finfo(dtype).eps
        ctx.note("bf16 stores truncate under Triton's interpreter; tolerance widened by "
                 "eps * sum|dy y| * max y")
    slack += forward_rel * mass * float(y64.max())

    def saved_x(got, exp, bad):
        if _close(got, _vjp64(x.detach(), dy, case.dim), 0.02, tol.atol + slack):
            return ("saved x instead of y: the gradient equals the VJP formula evaluated at x; "
                    "save the forward's output y with ctx.save_for_backward(y)")
        return None

    ctx.assert_close(x.grad, expected, rtol=tol.rtol, atol=tol.atol + slack,
                     name=f"x.grad of Softmax.apply(x, dim={case.dim})",
                     diagnose=[saved_x,
                               _backward_dropped_dim(impl, y, dy, case.dim, expected,
                                                     tol.rtol, tol.atol + slack)]
                     + _diagnoses(y.detach(), dy, case.dim, tol.rtol, tol.atol + slack,
                                  gpu=ctx.device == "cuda"))
    _expect_inplace_detected(ctx, impl, x_saved, w, case, expected, tol.rtol, tol.atol + slack)


INPLACE_HINT = ("y kept on ctx (ctx.y = y) instead of saved: save y with ctx.save_for_backward "
                "so autograd can detect in-place edits (and read it back with ctx.saved_tensors)")


def _expect_inplace_detected(ctx, impl, x_values, w, case, expected, rtol, atol):
    """y = Softmax.apply(x); y.mul_(2); backward. The saved y has changed under autograd's
    feet: torch.softmax raises "modified by an inplace operation", and so must Softmax, whose
    y is saved with ctx.save_for_backward (the saved tensor's version counter is checked).
    A y kept as ctx.y = y is not checked: backward then reads 2y and returns a wrong gradient
    without a word. A backward that is right anyway (it kept its own copy of y) passes too."""
    from checks.context import describe_exception

    x = x_values.clone().requires_grad_(True)
    try:
        y = impl.Softmax.apply(x, case.dim)
        y.mul_(2.0)  # may raise already (a view's in-place edit), which detects it as well
        _loss(y, w, case.loss).backward()
    except RuntimeError as exc:
        text = str(exc).lower()
        if "inplace" in text or "in-place" in text or "in place" in text:
            return  # detected, as torch.softmax does
        ctx.fail(f"after y.mul_(2), backward through Softmax raised "
                 f"{describe_exception(exc)}, expected autograd's in-place error",
                 hint=INPLACE_HINT)
    except Exception as exc:  # noqa: BLE001 - learner code may raise anything
        ctx.fail(f"after y.mul_(2), backward through Softmax raised "
                 f"{describe_exception(exc)}, expected autograd's in-place error",
                 hint=INPLACE_HINT)
    # No error: acceptable only if the gradient is that of sum(2 softmax(x) * w), 2 * expected.
    got = x.grad
    if got is None or not _close(got.detach().cpu().double(), 2.0 * expected, rtol, 2.0 * atol):
        ctx.fail("y = Softmax.apply(x, dim); y.mul_(2); backward: no error was raised and "
                 "x.grad is wrong (backward read the edited y); torch.softmax raises "
                 "\"modified by an inplace operation\" here", hint=INPLACE_HINT)


def _extra_allocations(ctx, run, dy, *, label: str):
    """(run(dy), how many more tensors of dy's size run allocates for this dy than for a
    contiguous dy of the same values): what the layout of dy alone costs, a copy of dy.
    (The log sees views as well, ctx.saved_tensors' unpacking say; the contiguous call makes
    the same ones, so only the difference counts.)"""
    from checks.context import call_learner

    def big(upstream):
        with ctx.track_allocations() as log:
            result = call_learner(run, upstream, label=label)
        return result, sum(1 for shape, _ in log if math.prod(shape) >= dy.numel())

    _, plain = big(dy.contiguous())
    result, strided = big(dy)
    return result, strided - plain


def _dy_copy_hint(ctx, impl, y, dy, dim) -> str:
    """Who copied dy: softmax_backward(y, dy, dim) called directly copies it too (the
    launcher), or allocates dx alone for this dy (then the copy is Softmax.backward's)."""
    try:
        _, launcher = _extra_allocations(
            ctx, lambda upstream: impl.softmax_backward(y.detach(), upstream, dim), dy,
            label="softmax_backward")
    except CheckFailed:
        return ""
    kind = "broadcast" if 0 in dy.stride() else "strided"
    if launcher == 0:
        return (f"Softmax.backward copied dy: this {kind} dy (strides {tuple(dy.stride())}) "
                "costs one more tensor of its size than a contiguous one (dy.contiguous()?), "
                "while softmax_backward(y, dy, dim) itself reads it in place; the kernel takes "
                "strides: pass dy as it is, softmax_backward(y, dy, ctx.dim)")
    return (f"softmax_backward copied dy: called directly, it allocates more for this {kind} "
            f"dy (strides {tuple(dy.stride())}) than for a contiguous one; the kernel takes "
            "strides: pass dy's own strides and read it in place")


@register(W, "autograd.no_dy_copy", tier="kernel", uses=USES_AUTOGRAD,
          cases=[Case(shape=(32, 80), dy=layout, dtype="float16")
                 for layout in ("broadcast", "transposed")],
          doc="Softmax.backward reads a broadcast or transposed dy in place: it allocates no "
              "more than for a contiguous dy (no copy of dy)")
def autograd_no_dy_copy(ctx, impl, case):
    from checks.compare import tolerance_for
    from checks.context import call_learner

    torch = ctx.torch
    x = ctx.randn(case.shape, case.dtype, scale=2.0).requires_grad_(True)
    y = call_learner(impl.Softmax.apply, x, -1, label="Softmax.apply")
    if not isinstance(y, torch.Tensor) or y.shape != x.shape or y.grad_fn is None:
        ctx.fail(f"Softmax.apply returned {type(y).__name__} {getattr(y, 'shape', '')}, "
                 f"expected a tensor of shape {tuple(x.shape)} with a grad_fn",
                 hint="forward returns the softmax of x, same shape and dtype")
    # What autograd hands backward for (y.sum(0) * w).sum() (stride 0 along the rows), and a
    # column-major dy as a transposed upstream op gives.
    if case.dy == "broadcast":
        dy = ctx.randn((1, case.shape[1]), case.dtype).expand(case.shape)
    else:
        dy = _place(ctx.randn(case.shape, case.dtype), "transposed")
    # Compiles, and names a backward that raises or falls back to torch, outside the count.
    _expect_backward_launch(ctx, impl, y, dy, -1)
    # y's backward node, called directly: it frees nothing, so it runs twice.
    grads, extra = _extra_allocations(ctx, y.grad_fn.apply, dy, label="Softmax.backward")
    if extra > 0:
        ctx.fail(f"Softmax.backward allocated {extra} more tensor(s) of dy's size "
                 f"{tuple(dy.shape)} for a dy with strides {tuple(dy.stride())} than for a "
                 "contiguous dy; only dx is new", hint=_dy_copy_hint(ctx, impl, y, dy, -1))
    expected = _vjp64(y, dy, -1)
    tol = tolerance_for(y.dtype)
    atol = _atol(y.detach(), dy, -1, expected)
    ctx.assert_close(grads[0], expected, rtol=tol.rtol, atol=atol,
                     name=f"dx of Softmax.backward for a {case.dy} dy",
                     diagnose=_diagnoses(y.detach(), dy, -1, tol.rtol, atol,
                                         gpu=ctx.device == "cuda"))


@register(W, "autograd.default_dim", tier="kernel", uses=USES_AUTOGRAD,
          cases=[Case(shape=(5, 37), dtype="float32")],
          doc="Softmax.apply(x) with dim left out: softmax and gradient over the last dimension")
def autograd_default_dim(ctx, impl, case):
    from checks.context import call_learner

    torch = ctx.torch
    x = ctx.randn(case.shape, case.dtype, scale=2.0).requires_grad_(True)
    dy = ctx.randn(case.shape, case.dtype)
    x64 = x.detach().cpu().double()
    hint = ("default dim must be -1 (the last dimension): Softmax.apply(x) without dim reduced "
            "over dim 0; declare forward's parameter as dim: int = -1")
    y = call_learner(impl.Softmax.apply, x, label="Softmax.apply")
    if not isinstance(y, torch.Tensor) or y.shape != x.shape:
        ctx.fail(f"Softmax.apply returned {type(y).__name__} {getattr(y, 'shape', '')}, "
                 f"expected a tensor of shape {tuple(x.shape)}",
                 hint="forward returns the softmax of x, same shape and dtype")
    ctx.assert_close(y, x64.softmax(-1), name="Softmax.apply(x) (dim left out)", diagnose=[
        lambda g, e, bad: hint if _close(g, x64.softmax(0), 1e-5, 1e-7) else None])
    _expect_backward_launch(ctx, impl, y, dy, -1)
    _call_backward(impl, y, dy, -1, y.backward, dy, label="backward through Softmax")
    if x.grad is None:
        ctx.fail("x.grad is None after backward", hint="backward must return (dx, None)")
    # float32 kernels: a few eps32 of y and of <dy, y>, times max|dy| (as in
    # autograd.finite_differences below)
    atol = 16 * torch.finfo(torch.float32).eps * float(dy.abs().max())
    # (after the default dim: a wrong formula, as autograd.finite_differences names it)
    ctx.assert_close(x.grad, _autograd64(x64, dy, -1), rtol=1e-5, atol=atol,
                     name="x.grad of Softmax.apply(x) (dim left out)", diagnose=[
        lambda g, e, bad: hint if _close(g, _autograd64(x64, dy, 0), 1e-5, atol) else None,
        *_diagnoses(y.detach(), dy, -1, 1e-5, atol, gpu=ctx.device == "cuda")])


@register(W, "autograd.finite_differences", tier="kernel", uses=USES_AUTOGRAD,
          cases=[Case(shape=(3, 33), dim=-1), Case(shape=(20, 6), dim=0)],
          doc="float32 Softmax.apply gradient against float64 central finite differences")
def autograd_finite_differences(ctx, impl, case):
    from checks.context import call_learner

    torch = ctx.torch
    # The kernels are float32 at best, so torch.autograd.gradcheck (float64) does not apply:
    # we differentiate the float64 function L(x) = <dy, softmax(x)> numerically instead.
    x32 = ctx.randn(case.shape, "float32", scale=2.0, device="cpu")
    dy32 = ctx.randn(case.shape, "float32", device="cpu")
    x64, dy64 = x32.double(), dy32.double()  # the exact points the kernel sees
    # Central differences with h = 1e-5 (truncation h^2/6 |L'''| and rounding eps64 |L| / h
    # balance near (3 eps64)^(1/3) ~ 9e-6): about 1e-10 * max|dy| of error, negligible below.
    h = 1e-5
    numeric = torch.empty_like(x64)
    d = case.dim % 2
    for j in range(case.shape[d]):
        step = torch.zeros_like(x64)
        step.select(d, j).fill_(h)
        up = (dy64 * (x64 + step).softmax(case.dim)).sum(case.dim, keepdim=True)
        down = (dy64 * (x64 - step).softmax(case.dim)).sum(case.dim, keepdim=True)
        numeric.select(d, j).copy_(((up - down) / (2 * h)).squeeze(d))

    x = x32.to(ctx.torch_device).requires_grad_(True)
    _require_dim(ctx, case.dim)
    y = call_learner(impl.Softmax.apply, x, case.dim, label="Softmax.apply")
    _expect_backward_launch(ctx, impl, y, dy32.to(ctx.torch_device), case.dim)
    _call_backward(impl, y, dy32.to(ctx.torch_device), case.dim, y.backward,
                   dy32.to(ctx.torch_device), label="backward through Softmax")
    if x.grad is None:
        ctx.fail("x.grad is None after backward", hint="backward must return (dx, None)")
    # Tolerance for the float32 kernels: the forward's y is off by a few eps32 relative (exp,
    # sum, divide), the fp32 <dy, y> by about (log2 n + 2) eps32 * sum|dy y| <= that * max|dy|,
    # and dx_i = y_i * (dy_i - <dy, y>) inherits both with y_i <= 1: so
    # |error| <= ~16 eps32 * max|dy| (log2 33 + 2 ~ 7, plus ~5 from y, doubled for margin).
    eps32 = torch.finfo(torch.float32).eps
    atol = 16 * eps32 * float(dy64.abs().max())
    ctx.assert_close(x.grad, numeric, rtol=1e-5, atol=atol,
                     name="x.grad vs central differences",
                     diagnose=[_backward_dropped_dim(impl, y, dy32, case.dim, numeric, 1e-5,
                                                     atol),
                               *_diagnoses(y.detach(), dy32, case.dim, 1e-5, atol,
                                           gpu=ctx.device == "cuda")])


# ---------------------------------------------------------------------------------------------
# cuda tier
# ---------------------------------------------------------------------------------------------
@register(W, "cuda.stream", tier="cuda", uses=USES,
          cases=[Case(shape=(512, 4096), dtype="float16")],
          doc="launches on the caller's current (non-default) stream")
def cuda_stream(ctx, impl, case):
    ctx.require_cuda()
    torch = ctx.torch
    x64, y_src, dy_src = _inputs(ctx, case.shape, case.dtype, -1)
    expected = _autograd64(x64, dy_src, -1)
    stream = torch.cuda.Stream()
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        busy = torch.randn((4096, 4096), device="cuda")
        _ = busy @ busy  # keep the side stream busy so a launch on another stream would race
        y, dy = y_src * 1, dy_src * 1  # written on the side stream, after the busy work
        out = ctx.call(impl.softmax_backward, y, dy, -1, expect_shape=y.shape,
                       expect_dtype=case.dtype)
    stream.synchronize()
    ctx.assert_close(out, expected, atol=_atol(y_src, dy_src, -1, expected),
                     name="softmax_backward on a side stream",
                     diagnose=[always("launched on the default stream instead of the "
                                      "current one (read y and dy before they were written)")])


# Past 2^31 elements: (262160, 8192) rows reduced along dim -1 start past 2^31 from row 262144
# on (the row path: row * stride_ym overflows int32); (8193, 262160) reduced along dim 0 puts
# every column's last element past 2^31 (the column-tile path: the reduced index times its
# stride 262160 reaches 8192 * 262160 = 2^31 + 2^17). float16: 4.3 GB per tensor.
_BIG = {"rows": ((262160, 8192), -1), "columns": ((8193, 262160), 0)}
INT64_HINT = ("offsets overflowed 32 bits: widen the program id (and every index that multiplies "
              "a stride) to int64 before the multiply; row * stride passes 2^31 in a tensor of "
              "more than 2^31 elements")


@register(W, "cuda.int64_offsets", tier="cuda", uses=USES,
          cases=[Case(view=v, dtype="float16") for v in _BIG],
          doc="offsets past 2^31 elements (4.3 GB float16 y, dy and dx): int64 address arithmetic",
          timeout=600)
def cuda_int64_offsets(ctx, impl, case):
    ctx.require_cuda()
    torch = ctx.torch
    from checks.compare import tolerance_for

    shape, dim = _BIG[case.view]
    _require_dim(ctx, dim)
    d = dim % 2
    dtype = getattr(torch, case.dtype)
    gen = torch.Generator(device="cuda").manual_seed(ctx.case_seed)
    try:
        # y: softmax along `dim`, made in slices of the independent dimension (float32 logits
        # of one slice at a time, not of the whole tensor); dy = N(0, 1).
        y = torch.empty(shape, device="cuda", dtype=dtype)
        n_ind, step = shape[1 - d], 1 << 15
        for i0 in range(0, n_ind, step):
            part = y.narrow(1 - d, i0, min(step, n_ind - i0))
            logits = torch.randn(part.shape, device="cuda", dtype=torch.float32, generator=gen)
            part.copy_((2.0 * logits).softmax(dim))
            del logits
        dy = torch.randn(shape, device="cuda", dtype=dtype, generator=gen)
    except torch.cuda.OutOfMemoryError:
        raise Unavailable("needs about 30 GB of free GPU memory") from None
    crashed = (INT64_HINT + " (here the kernel read or wrote outside the tensors; the CUDA "
               "context is now unusable: restart the process)")
    # (ctx.call turns a kernel's fault, raised at its synchronize, into a FAIL.)
    try:
        out = ctx.call(impl.softmax_backward, y, dy, dim, expect_shape=shape,
                       expect_dtype=dtype, expect_contiguous=True)
    except CheckFailed as exc:
        if "illegal memory access" in exc.message.lower():
            exc.hint = crashed
        raise
    # Whole softmax rows (slices along dim) at the far ends of the address range, against the
    # float64 formula on the kernel's exact inputs; nothing larger than a slice leaves the GPU.
    n_ind = shape[1 - d]
    first_past = (1 << 31) // shape[1] if d == 1 else 0  # rows path: the first row past 2^31
    picks = sorted({0, 1, n_ind // 2, first_past - 1, first_past, first_past + 1, n_ind - 2,
                    n_ind - 1} - {-1})
    tol = tolerance_for(dtype)
    for k in picks:
        y_k, dy_k = y.narrow(1 - d, k, 1), dy.narrow(1 - d, k, 1)
        expected = _vjp64(y_k, dy_k, dim)
        atol = tol.atol + _fp32_dot_allowance(y_k, dy_k, dim)
        ctx.assert_close(out.narrow(1 - d, k, 1), expected, rtol=tol.rtol, atol=atol,
                         name=f"softmax_backward slice {k} of {n_ind} (dim={dim})",
                         diagnose=[always(INT64_HINT)])
    del y, dy, out
    torch.cuda.empty_cache()
