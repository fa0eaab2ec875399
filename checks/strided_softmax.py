"""Checks for the strided softmax workshop: `softmax(x, dim=-1, **knobs)` on any 2-D view.

References are float64 softmaxes computed by torch on the CPU from the same view. Every layout
the lesson names is built from a real storage (contiguous, transposed, sliced, stepped,
broadcast with a stride of 0 in either dimension, a storage offset) and each view's storage is
large enough that a kernel reading it with the wrong strides reads wrong *values* (which the
diagnoses below recognise) rather than memory outside the allocation.

A failure names the classic mistake when the symptom matches it. Most diagnoses *simulate* the
mistake in float64 (read the view's storage with the strides the mistake would use, softmax
that) and say so when the output matches the simulation and not the truth.
"""

from __future__ import annotations

import math
import threading

from checks import launches
from checks.compare import always, not_from_values
from checks.context import left_the_tensors
from checks.core import Case, CheckFailed, Unavailable, register

W = "strided_softmax"
DTYPES = ("float16", "bfloat16", "float32")
LAYOUTS = ("contiguous", "transposed", "sliced", "stepped", "broadcast_rows", "broadcast_cols",
           "offset")
# The exercise regions every call runs: `_load_x` (TODO(softmax, load)) and `plan`'s roles
# (TODO(softmax, plan)). The other three run on some plans only, so each call asks for them
# itself (_require_regions): a learner gets verdicts on the cases they have written code for.
SOFTMAX = ("load", "plan")


# ---------------------------------------------------------------------------------------------
# Inputs: one (rows, cols) view per layout, built on a storage that holds every cell any of the
# classic mistakes would read.
# ---------------------------------------------------------------------------------------------
def make_view(ctx, layout: str, shape, dtype: str, *, scale: float = 3.0):
    """A (rows, cols) tensor with the named memory layout, random values (scale * N(0, 1))."""
    m, n = shape
    rand = lambda *s: ctx.randn(s, dtype, scale=scale)  # noqa: E731
    if layout == "contiguous":
        return rand(m, n)
    if layout == "transposed":  # x.t() of a contiguous (n, m): strides (1, m)
        return rand(n, m).t()
    if layout == "sliced":  # columns 3 .. n+2 of a wider tensor: strides (n + 5, 1), offset 3
        return rand(m, n + 5)[:, 3:-2]
    if layout == "stepped":  # every 2nd row, every 3rd column: strides (6n, 3)
        return rand(2 * m, 3 * n)[::2, ::3]
    if layout == "broadcast_rows":  # one row repeated: strides (0, 1). The flat storage holds
        # m*n + n values, so reading it as dense (strides (n, 1)) stays inside it.
        return rand(m * n + n)[n:2 * n].view(1, n).expand(m, n)
    if layout == "broadcast_cols":  # one column repeated: strides (1, 0)
        return rand(m * n + m)[m:2 * m].view(m, 1).expand(m, n)
    if layout == "offset":  # contiguous strides, storage offset 7 (not 16-byte aligned)
        return rand(m * n + 7)[7:].view(m, n)
    raise ValueError(f"unknown layout {layout!r}")


def _softmax64(x, dim):
    return x.detach().double().cpu().softmax(dim=dim)


def _storage64(x):
    """All of x's storage as a flat float64 CPU tensor (the cells any stride could reach)."""
    import torch

    flat = torch.empty(0, dtype=x.dtype, device=x.device).set_(x.untyped_storage())
    return flat.double().cpu()


def _read_with_strides(x, strides, offset=None):
    """x's storage read as a view of x's shape with other strides; None if it leaves storage."""
    import torch

    flat = _storage64(x)
    offset = x.storage_offset() if offset is None else offset
    last = offset + sum((size - 1) * stride for size, stride in zip(x.shape, strides))
    if x.numel() == 0 or last >= flat.numel():
        return None
    return torch.as_strided(flat, tuple(x.shape), tuple(strides), offset)


# ---------------------------------------------------------------------------------------------
# Diagnoses: (got64, expected64, bad) -> hint or None. Each simulated mistake must differ from
# the truth (else it explains nothing) and match what the kernel returned.
# ---------------------------------------------------------------------------------------------
def _close(a, b, rtol, atol):
    from checks.compare import agrees

    if a is None or b is None or a.shape != b.shape:
        return False
    return bool(agrees(a, b, rtol, atol).all())


def _simulated(hint, simulate, match, differ):
    """Fire when the simulated mistake differs from the truth by more than `differ` (rtol, atol)
    and the output matches the simulation within `match`, closer than it is to the truth."""

    def diagnose(got, expected, bad):
        sim = simulate()
        if sim is None or _close(sim, expected, *differ) or not _close(got, sim, *match):
            return None
        if bool((sim.isnan() & ~expected.isnan()).any()):
            return None  # a NaN-producing mistake would match it too: not specific enough
        err_sim = (got - sim).abs().nan_to_num(0.0).max()
        err_true = (got - expected).abs().nan_to_num(float("inf")).max()
        return hint if bool(err_sim < err_true) else None

    return diagnose


def diagnoses(x, dim: int, never_written=None, minus_inf_probe=None, launched=None,
              column_max_probe=None):
    """The classic mistakes of this workshop, most specific first, for input x and `dim`.
    `never_written`: the mask of the output's elements that still hold the checks' fill of
    fresh memory (ctx.never_written), or None; a diagnosis that reads non-finite values as
    the kernel's own NaN or inf leaves those out. `minus_inf_probe`: a callable that says
    whether the learner's softmax of x's softmax rows laid out contiguously (no strides to get
    wrong, the same path and knobs) NaNs the same rows; when given, "running max still -inf"
    needs it. `launched`: the call's launch record (launches.recording()), or None when
    unknown; it tells the replays of path A's one block the tile (BLOCK_I, BLOCK_R) that ran.
    `column_max_probe`: a callable that says whether the learner's path A, on an input no such
    mistake makes NaN, takes the row max down the tile's columns (_column_max_probe)."""
    import torch

    from checks.compare import agrees, tolerance_for

    tol = tolerance_for(x.dtype)
    exact = (tol.rtol, tol.atol)  # the check's own tolerance: a mistake must break it
    rtol, atol = 4 * tol.rtol, 4 * tol.atol + 1e-7  # "matches the simulation"
    d = dim % 2
    n_cols = x.shape[1]
    n_cols_r = x.shape[d]  # the length of a softmax row

    def fp16_statistics():
        if x.dtype == torch.float16:
            return None
        sim = _softmax64(x.detach().cpu().half(), dim)
        return None if not bool(sim.isfinite().all()) else sim

    def other_dim(got, expected, bad):
        # dim reaches the plan normalised to 0 or 1 (check_dim): a plan that tests dim == -1
        # (or swaps its two branches) reduces every call over the other dimension. (Not
        # _simulated: a line of only -inf along the other dimension is NaN there, and the
        # output must then hold that NaN too, which agrees() asks of it.)
        sim = _softmax64(x, 1 - d)
        if _close(sim, expected, *exact) or not _close(got, sim, rtol, atol):
            return None
        return (f"reduction over the wrong dimension: softmax(x, dim={dim}) came out as the "
                f"softmax over dim {1 - d}, the other one. dim reaches the plan normalised to "
                "0 or 1 (check_dim turns -1 into 1 and -2 into 0): test dim == 1 (or 0), never "
                "-1 or -2; for dim=1 the rows of x are the softmax rows, for dim=0 the sizes "
                "and strides swap")

    def strides_swapped():
        # the load's address i * stride_xr + r * stride_xi: x's storage read with its two
        # strides exchanged (in bounds only for some views; a probe covers the others)
        if x.stride(0) == x.stride(1):
            return None
        sim = _read_with_strides(x, tuple(x.stride())[::-1])
        return None if sim is None else sim.softmax(dim)

    def exp2_without_log2e():
        # exp2(x - m) = exp((x - m) * ln 2): the softmax of x * ln 2.
        return _softmax64(x.detach().double().cpu() * math.log(2.0), dim)

    def exp_with_log2e():
        # tl.exp((x - m) * LOG2E) = e^((x - m) log2 e): the softmax of x * log2(e).
        return _softmax64(x.detach().double().cpu() * (1.0 / math.log(2.0)), dim)

    def stride_ignored():
        strides = list(x.stride())
        strides[d] = 1
        sim = _read_with_strides(x, strides)
        return None if sim is None else sim.softmax(dim)

    def dense_read():
        sim = _read_with_strides(x, (n_cols, 1))
        return None if sim is None else sim.softmax(dim)

    def minus_inf_run(got, expected, bad):
        # The guard's mistake NaNs exactly the softmax rows whose first block is all -inf: every
        # row with a NaN must start with -inf in x, and every other row must be right (a read
        # from the wrong cells, say, gets NaN rows from the -inf of other rows and wrong ones).
        if not bool(x.detach().isneginf().any()):
            return None
        g, e = softmax_rows(got), softmax_rows(expected)
        nan_rows = (g.isnan() & ~e.isnan()).any(dim=1)
        if not bool(nan_rows.any()):
            return None
        leading = softmax_rows(x)[:, 0].isneginf()
        if not bool(leading[nan_rows].all()):
            return None
        if not bool(agrees(g[~nan_rows], e[~nan_rows], *exact).all()):
            return None
        if minus_inf_probe is not None and not minus_inf_probe(nan_rows):
            return None  # the same rows laid out contiguously come out otherwise: a layout slip
        return ("running max still -inf: a row that starts with a block of -inf (masked "
                "logits) leaves m_new = -inf, and exp(m - m_new) = exp(-inf - (-inf)) = NaN; "
                "shift by 0 while the running max is -inf")

    def softmax_rows(t):
        """t (x's shape) as one softmax row per line: (rows, n_r), float64 on the CPU."""
        return t.detach().double().cpu().movedim(d, -1).reshape(-1, x.shape[d])

    def max_seeded_zero(got, expected, bad):
        # Logits all far below 0 (about -200): exp(x - 0) underflows to 0 in float32, so a
        # statistic that starts from (or pads with) a max of 0 leaves a sum of 0: inf or NaN.
        row_max = softmax_rows(x).amax(dim=1)
        far = row_max.isfinite() & (row_max < -80.0)
        nonfinite = ~softmax_rows(got).isfinite()
        if never_written is not None:
            # elements no kernel wrote hold the checks' NaN fill, not an underflowed 0 / 0
            nonfinite &= softmax_rows(never_written.to("cpu").reshape(x.shape)) == 0
        broken = (nonfinite.any(dim=1)
                  & softmax_rows(expected).isfinite().all(dim=1))
        if not bool((far & broken).any()):
            return None
        r = int((far & broken).nonzero()[0])
        # (a shift clamped at 0, max(m_new, 0) for the -inf guard, shifts these rows by 0 as
        # well: the sum underflows the same way, so the output cannot tell it apart; the
        # seventh learner audit's 09, whose first-pass replay is inf here and stays silent)
        return (f"max taken as 0, not the row's max (or no max subtracted at all): every logit "
                f"of softmax row {r} is at most {float(row_max[r]):.4g}, so exp(x - 0) "
                "underflows to 0 and the sum is 0 (inf or NaN out). Subtract the row's own max "
                "before exp; a running max must start at -inf (tl.full(..., -float(\"inf\")), "
                "not tl.zeros), and a merge must pad missing slices with max -inf "
                "(other=-float(\"inf\")) and sum 0; or, the same output here, the shift "
                "clamped at 0: tl.maximum(m_new, 0.0) in place of the -inf guard shifts every "
                "row whose max is below 0 by 0; the guard replaces only -inf: "
                "shift = tl.where(m_new == -float(\"inf\"), 0.0, m_new)")

    def finite_tail_sentinel(got, expected, bad):
        # Logits all far below 0 (about -1e31): padded lanes loaded as a finite number win the
        # max, take the whole sum, and are never stored: the stored row sums to about 0.
        row_max = softmax_rows(x).amax(dim=1)
        g = softmax_rows(got)
        if not bool(g.isfinite().all()):
            return None
        sums = g.sum(dim=1)
        lost = ((sums < 0.5) & (softmax_rows(expected).sum(dim=1) > 0.5) & row_max.isfinite()
                & (row_max < -1e4))
        if not bool(lost.any()):
            return None
        r = int(lost.nonzero()[0])
        return (f"tail padded with a finite value instead of -inf: every logit of softmax row "
                f"{r} is at most {float(row_max[r]):.3g}, so the lanes past the end of the row, "
                "loaded as a finite number above that (-1e30? the dtype's lowest? 0, from a "
                "tl.where that zeroes them after the load?), won the max and took the row's sum "
                f"(the stored row sums to {float(sums[r]):.3g}); load them with "
                "other=-float(\"inf\"), and let a tl.where after the load zero only the lanes "
                "past the last row, tl.where(i_ok, x, 0.0)")

    def max_down_the_columns(got, expected, bad):
        # Path A's one-block tile is (BLOCK_I rows, BLOCK_R positions): tl.max(x, axis=0) takes
        # each position's max over the tile's rows, and x - m[None, :] shifts element (i, r) by
        # it. The replay needs the tile: the launch record's, else every BLOCK_I (the rows a
        # program owns) with the smallest BLOCK_R that holds the row.
        if launched is not None:
            tiles = _one_block_tiles(launched)
        else:
            side = max(1 << (n_cols_r - 1).bit_length(), 2) if n_cols_r else 2
            tiles = [(1 << k, side) for k in range(9)]
        for block_i, block_r in tiles:
            sim = _column_max_model(x, dim, block_i, block_r)
            if sim is None or _close(sim, expected, *exact) or not _close(got, sim, rtol, atol):
                continue
            if not bool((sim.isfinite() & ~agrees(sim, expected, *exact)).any()):
                # NaN alone (every row of a tile real, so the positions past the row's end
                # are -inf - (-inf)) fits other mistakes too (no max subtracted, on logits
                # that overflow exp): only a probe on an input without NaN can tell
                if column_max_probe is None or not column_max_probe():
                    continue
            one = (" (with one row per program that max is x itself: every numerator is 1)"
                   if block_i == 1 else "")
            return ("row max taken over the wrong axis of the tile (axis=0, down the "
                    f"columns): the output matches a softmax that shifts element (i, r) by the "
                    f"max over the {block_i} rows of its program's tile at position r, not "
                    f"by row i's own max{one}; positions past the end of the row, -inf in "
                    "every real row, then give -inf - (-inf) = NaN unless the tile holds a row "
                    "past the last (loaded as 0). Path A's tile is (BLOCK_I rows, BLOCK_R "
                    "positions): a row's max runs along axis 1, m = tl.max(x, axis=1), and "
                    "broadcasts along its row as m[:, None]")
        return None

    def no_max(got, expected, bad):
        # exp overflows float32 past 88.7: only then can a missing shift make inf / inf = NaN.
        big = float(x.detach().double().abs().nan_to_num(0.0, 0.0, 0.0).max()) > 88.0
        if big and bool((~got.isfinite() & expected.isfinite()).any()):
            return ("missing max subtraction: exp(x) overflowed to inf and inf / inf = NaN; "
                    "subtract the row maximum before exp (or: x was converted to a type too "
                    "narrow for its values before the statistics)")
        return None

    @not_from_values  # it reads only the cells x's strides reach: unwritten ones fail it
    def output_with_input_strides(got, expected, bad):
        if _written_with_input_strides(x, got, expected, rtol, atol):
            zero = (" (a stride of 0 stores every line onto the same cells, leaving the rest "
                    "unwritten)" if 0 in x.stride() else "")
            return (f"output written with the input's strides {tuple(x.stride())}: the output "
                    f"is a new contiguous tensor, its strides are ({n_cols}, 1){zero}")
        return None

    def tail_not_masked(got, expected, bad):
        # Loading the padded lanes as 0 adds P * exp(0 - m) to each row's sum (P padded lanes,
        # m = max(row max, 0)), so got = expected * S / (S + P exp(-m)) with S = sum exp(x - m).
        # Solve for P: a whole number of lanes is the signature. fp32 outputs only: 16-bit
        # rounding hides P, so there the launch record's BLOCK_R gives it (the lanes past n_r
        # in the last block), and the output must be that model rounded to x's dtype.
        if x.dtype != torch.float32:
            return _tail_zero_16bit(got, expected)
        ratio = _row_ratio(got, expected, d, rtol, tol.rtol)
        if ratio is None:
            return None
        xv = x.detach().double().cpu().movedim(d, -1).reshape(-1, x.shape[d])
        m0 = xv.amax(dim=1).clamp_min(0.0)
        lanes = (xv - m0[:, None]).exp().sum(dim=1) * (1.0 / ratio - 1.0) * m0.exp()
        hit = (ratio < 1 - rtol) & lanes.isfinite()
        if not bool(hit.any()):
            return None
        p = lanes[hit]
        # A whole number of lanes, at least one and at most a row's length.
        whole = bool(((p - p.round()).abs() < 0.2).all())
        if whole and bool((p > 0.8).all()) and bool((p < x.shape[d] + 0.5).all()):
            return (f"tail not masked: each row's sum holds about {int(p.round()[0])} extra "
                    "terms exp(0 - max): the lanes past the end of the row were loaded as 0 "
                    "instead of -inf (other=0.0, or a tl.where that zeroes them after the load)")
        return None

    def _tail_zero_16bit(got, expected):
        # (the seventh learner audit's 07: the padded lanes zeroed after an -inf load, by
        # tl.where(i_ok & r_ok, x, 0.0), on a float16 row, where the solve above cannot see P)
        blocks = {launch.arguments.get("BLOCK_R") for launch in launched or ()}
        rows = softmax_rows(x)
        m0 = rows.amax(dim=1, keepdim=True).clamp_min(0.0)
        terms = (rows - m0).exp()
        shape = list(x.shape)
        shape.append(shape.pop(d))
        for block in sorted(b for b in blocks if isinstance(b, int) and b > 0):
            lanes = -(-n_cols_r // block) * block - n_cols_r
            if lanes <= 0:
                continue
            sim = terms / (terms.sum(dim=1, keepdim=True) + lanes * (-m0).exp())
            sim = sim.reshape(shape).movedim(-1, d).to(x.dtype).double()
            if not _close(sim, expected, *exact) and _close(got, sim, rtol, atol):
                word = "term" if lanes == 1 else "terms"
                return (f"tail not masked: each row's sum holds {lanes} extra {word} "
                        "exp(0 - max): the lanes past the end of the row (BLOCK_R = "
                        f"{block}) were 0 instead of -inf when the statistics ran (loaded "
                        "with other=0.0, or set to 0 after the load: only lanes past the last "
                        "row may be zeroed, tl.where(i_ok, x, 0.0))")
        return None

    def log2_s_inside_log2e():
        # exp2((x - m - log2(s)) * LOG2E) = exp(x - m) * s^(-log2 e): log2(s), already a
        # base-2 exponent, scaled by log2(e) once more. Per row the truth times s^(1 - log2 e).
        rows = softmax_rows(x)
        m = rows.amax(dim=1, keepdim=True)
        s = (rows - m).exp().sum(dim=1, keepdim=True)
        sim = (rows - m).exp() * s.pow(-1.0 / math.log(2.0))
        shape = list(x.shape)
        shape.append(shape.pop(d))
        return sim.reshape(shape).movedim(-1, d)

    def divided_by_log2_s():
        # exp2((x - m) * LOG2E) / log2_s: the base-2 exponent of s used as the divisor.
        rows = softmax_rows(x)
        m = rows.amax(dim=1, keepdim=True)
        s = (rows - m).exp().sum(dim=1, keepdim=True)
        sim = (rows - m).exp() / s.log2()
        shape = list(x.shape)
        shape.append(shape.pop(d))
        return sim.reshape(shape).movedim(-1, d)

    def natural_log_s():
        # exp2((x - m) * LOG2E - log(s)): ln(s) subtracted where log2(s) belongs, so each row
        # is exp(x - m) * 2^(-ln s) = exp(x - m) * s^(-ln 2), the truth times s^(1 - ln 2).
        rows = softmax_rows(x)
        m = rows.amax(dim=1, keepdim=True)
        s = (rows - m).exp().sum(dim=1, keepdim=True)
        sim = (rows - m).exp() * s.pow(-math.log(2.0))
        shape = list(x.shape)
        shape.append(shape.pop(d))
        return sim.reshape(shape).movedim(-1, d)

    def undivided():
        # exp2((x - m) * LOG2E) with log2_s left out: the numerators exp(x - m), never divided
        # (each row's largest element 1).
        rows = softmax_rows(x)
        sim = (rows - rows.amax(dim=1, keepdim=True)).exp()
        shape = list(x.shape)
        shape.append(shape.pop(d))
        return sim.reshape(shape).movedim(-1, d)

    def multiplied_by_s():
        # exp2((x - m) * LOG2E) * s: the row's sum used as a factor, not a divisor.
        rows = softmax_rows(x)
        m = rows.amax(dim=1, keepdim=True)
        s = (rows - m).exp().sum(dim=1, keepdim=True)
        sim = (rows - m).exp() * s
        shape = list(x.shape)
        shape.append(shape.pop(d))
        return sim.reshape(shape).movedim(-1, d)

    def sums_down_the_tile(got, expected, bad):
        # Path A's one-block tile holds BLOCK_I rows: tl.sum(numerator, axis=0) sums down its
        # columns, so element (i, r) is divided by the sum of exp(x - m) over the rows of i's
        # tile at position r. Rows past the last are loaded as 0 (m = 0, each term 1), so each
        # adds 1. BLOCK_I is the plan's choice: try each power of two (1 divides by itself).
        rows = softmax_rows(x)
        n_i, n_r = rows.shape
        g = softmax_rows(got)
        numerator = (rows - rows.amax(dim=1, keepdim=True)).exp()
        block_i = 1
        while block_i <= 256 and n_i > 0:
            strips = -(-n_i // block_i)
            padded = torch.ones((strips * block_i, n_r), dtype=torch.float64)
            padded[:n_i] = numerator
            sums = padded.reshape(strips, block_i, n_r).sum(dim=1)  # (strips, n_r)
            model = numerator / sums.repeat_interleave(block_i, dim=0)[:n_i]
            if not _close(model, softmax_rows(expected), *exact) and _close(g, model, rtol, atol):
                return (f"row sum taken down the tile's columns: every element is divided by "
                        f"the sum over the {block_i} rows of its program's tile at its position "
                        f"(tl.sum(numerator, axis=0)), not by its own row's sum; a row's sum runs "
                        f"along the row: tl.sum(numerator, axis=1)[:, None]")
            block_i *= 2
        return None

    def max_not_broadcast(got, expected, bad):
        # Path A's one-block tile is BLOCK_I x BLOCK_R; with BLOCK_I == BLOCK_R, x - m without
        # [:, None] broadcasts m (one max per row of the tile) along the rows: element (i, r)
        # is shifted by the max of the tile's r-th row (0 for rows past the last, loaded as 0).
        # Other shapes do not compile ("block shapes do not broadcast"). Try each square side.
        rows = softmax_rows(x)
        n_i, n_r = rows.shape
        g = softmax_rows(got)
        side = 1
        while side < n_r:
            side *= 2
        while side <= 256 and n_i > 0 and n_r > 1:
            strips = -(-n_i // side)
            maxima = torch.zeros(strips * side, dtype=torch.float64)
            maxima[:n_i] = rows.amax(dim=1)
            shift = maxima.reshape(strips, side)[:, :n_r].repeat_interleave(side, dim=0)[:n_i]
            numerator = (rows - shift).exp()
            model = numerator / numerator.sum(dim=1, keepdim=True)
            if not _close(model, softmax_rows(expected), *exact) and _close(g, model, rtol, atol):
                return (f"row max not broadcast along its row: x - m without [:, None] on a "
                        f"square {side} x {side} tile shifts element (i, r) by the max of the "
                        "tile's r-th row, not its own row's max (each row's sum is then taken "
                        "over those terms); write x - m[:, None]")
            side *= 2
        return None

    def wrong_normalizer(got, expected, bad):
        ratio = _row_ratio(got, expected, d, rtol, tol.rtol)
        if ratio is None:
            return None
        if bool((ratio < 1 + tol.rtol).all()):
            return ("the normalizer is wrong: every element of a softmax row is too small by "
                    "the same factor, so the row's sum is too large (padding lanes loaded as 0 "
                    "instead of -inf? a running sum not rescaled by exp(m_old - m_new) when "
                    "the running max grows?)")
        return ("the normalizer is wrong: every element of a softmax row is off by the same "
                "factor (a sum over the wrong lanes or rows?)")

    return [
        # The ninth learner audit ("the normalizer is wrong" before, and "statistics in fp16"
        # on a float32 row with a near tie, which that loose match also fits): first, since
        # nothing right or normalised matches it.
        _simulated("the numerators stored undivided: the output matches exp(x - m), each "
                   "softmax row's largest element 1 (the sum s never entered: path B's "
                   "normalize without - log2_s?); normalise: exp2((x - m) * LOG2E - log2_s), "
                   "or exp(x - m) / s", undivided, match=(rtol, atol), differ=exact),
        _simulated("statistics in fp16: the output matches a softmax computed from x rounded "
                   "to float16; load, then .to(tl.float32) before any math", fp16_statistics,
                   match=(1e-2, 1e-4), differ=exact),
        other_dim,
        output_with_input_strides,
        max_down_the_columns,
        max_seeded_zero,
        finite_tail_sentinel,
        no_max,
        _simulated(f"input read as if dense: the kernel used contiguous strides ({n_cols}, 1) "
                   f"instead of x.stride() = {tuple(x.stride())}, so a broadcast (stride 0) or "
                   "strided view reads the wrong cells; pass both of x's strides",
                   dense_read, match=(rtol, atol), differ=exact),
        _simulated(f"{_SWAPPED} (the output matches the softmax of x's storage read with "
                   f"strides {tuple(x.stride())[::-1]} instead of {tuple(x.stride())})",
                   strides_swapped, match=(rtol, atol), differ=exact),
        _simulated(f"stride ignored: the kernel read neighbours along the softmax dimension as "
                   f"adjacent (stride 1) instead of stride {x.stride(d)}; multiply the position "
                   "along the row by its stride", stride_ignored, match=(rtol, atol),
                   differ=exact),
        # (after the layout diagnoses: a read from the wrong cells of a masked input also
        # leaves NaN rows)
        minus_inf_run,
        _simulated("exp2 without log2(e): the output matches the softmax of x * ln 2, what "
                   "tl.exp2(x - m) computes (2^t, not e^t); exp(t) = exp2(t * LOG2E), so "
                   "multiply the shifted logits by LOG2E inside the exp2", exp2_without_log2e,
                   match=(rtol, atol), differ=exact),
        _simulated("tl.exp with LOG2E: the output matches the softmax of x * log2(e), what "
                   "tl.exp((x - m) * LOG2E) computes; LOG2E turns e^t into 2^(t * LOG2E), so it "
                   "goes with tl.exp2: tl.exp2((x - m) * LOG2E), or tl.exp(x - m) without it",
                   exp_with_log2e, match=(rtol, atol), differ=exact),
        tail_not_masked,
        sums_down_the_tile,
        max_not_broadcast,
        _simulated("divided by log2(s): the output matches exp(x - m) / log2(s), what "
                   "exp2((x - m) * LOG2E) / log2_s computes (each softmax row off by "
                   "s / log2(s)); log2_s is s as a base-2 exponent: subtract it inside the exp2, "
                   "exp2((x - m) * LOG2E - log2_s), or divide by s itself", divided_by_log2_s,
                   match=(rtol, atol), differ=exact),
        _simulated("log2(s) inside the * LOG2E: the output matches exp(x - m) * s^(-log2 e), "
                   "what exp2((x - m - log2(s)) * LOG2E) computes (each softmax row off by "
                   "s^(1 - log2 e)); log2(s) is already a base-2 exponent, subtract it after "
                   "the multiply: exp2((x - m) * LOG2E - log2_s)", log2_s_inside_log2e,
                   match=(rtol, atol), differ=exact),
        _simulated("ln(s) subtracted for log2(s): the output matches exp(x - m) * "
                   "s^(-ln 2), what exp2((x - m) * LOG2E - tl.log(s)) computes (each softmax "
                   "row off by s^(1 - ln 2)); inside an exp2 the sum's exponent is base 2: "
                   "exp2((x - m) * LOG2E - log2_s) with log2_s = tl.log2(s), or divide by s",
                   natural_log_s, match=(rtol, atol), differ=exact),
        _simulated("multiplied by s instead of divided: the output matches exp(x - m) * s, "
                   "each softmax row off by s^2; normalise by dividing, exp(x - m) / s, or "
                   "subtract log2_s inside the exp2: exp2((x - m) * LOG2E - log2_s)",
                   multiplied_by_s, match=(rtol, atol), differ=exact),
        wrong_normalizer,
    ]


def _one_block_tiles(launched) -> list:
    """(BLOCK_I, BLOCK_R) of each of path A's one-block launches in a launch record."""
    tiles = []
    for launch in launched or ():
        args = launch.arguments
        tile = (args.get("BLOCK_I"), args.get("BLOCK_R"))
        if (launch.name == "softmax_along_kernel" and args.get("ONE_BLOCK") is True
                and all(isinstance(v, int) and v > 0 for v in tile) and tile not in tiles):
            tiles.append(tile)
    return tiles


def _column_max_model(x, dim: int, block_i: int, block_r: int):
    """Path A's one block with the row max taken down the tile's columns (tl.max(x, axis=0),
    then x - m[None, :]): element (i, r) shifted by the max over its program's block_i rows at
    position r. Rows past the last load 0 and positions past the row's end -inf, as _load_x
    leaves them; a position that is -inf in every row of a tile gives -inf - (-inf) = NaN,
    which the row's sum spreads over the row. Replayed in float32 as the kernel runs it; x's
    shape out, None where the row does not fit one block."""
    import torch

    rows = _rows_of(x, dim).float()
    n_i, n_r = rows.shape
    if block_r < n_r or n_i == 0:
        return None
    strips = -(-n_i // block_i)
    tile = torch.zeros((strips * block_i, block_r))
    tile[:n_i] = -math.inf
    tile[:n_i, :n_r] = rows
    tiles = tile.reshape(strips, block_i, block_r)
    log2e = torch.tensor(1.4426950408889634, dtype=torch.float32)
    numerator = torch.exp2((tiles - tiles.amax(dim=1, keepdim=True)) * log2e)
    y = numerator * (1.0 / numerator.sum(dim=2, keepdim=True))
    y = y.reshape(-1, block_r)[:n_i, :n_r].double()
    d = dim % 2
    shape = list(x.shape)
    shape.append(shape.pop(d))
    return y.reshape(shape).movedim(-1, d)


def _column_max_probe(impl, device):
    """A probe for "row max taken down the tile's columns": the learner's softmax, path A, of a
    contiguous (6, 32) float32 q of moderate logits (rows a power of two long: no position past
    the end, so the mistake makes no NaN; no exp overflows). True when the output matches the
    replay with the tile its launch ran, and not the truth; False when the probe raises or
    differs. Asked only when an output that is NaN alone matches the replay."""
    answer = []

    def probe() -> bool:
        if answer:
            return answer[0]
        answer.append(False)
        try:
            import torch

            from checks.compare import agrees, tolerance_for

            gen = torch.Generator().manual_seed(20261203)
            q = 3.0 * torch.randn((6, 32), generator=gen, dtype=torch.float64)
            with torch.no_grad(), launches.recording() as launched:
                out = impl.softmax(q.to(device=device, dtype=torch.float32), -1, path="A")
            got = out.detach().double().cpu()
        except Exception:  # noqa: BLE001 - the probe fails too: no diagnosis from it
            return False
        tol = tolerance_for(torch.float32)
        exact, match = (tol.rtol, tol.atol), (4 * tol.rtol, 4 * tol.atol + 1e-7)
        truth = _softmax64(q, -1)
        if tuple(got.shape) != tuple(q.shape) or _close(got, truth, *exact):
            return False
        for block_i, block_r in _one_block_tiles(launched):
            sim = _column_max_model(q, -1, block_i, block_r)
            if (sim is not None and _close(got, sim, *match)
                    and bool((sim.isfinite() & ~agrees(sim, truth, *exact)).any())):
                answer[0] = True
                break
        return answer[0]

    return probe


def _written_with_input_strides(x, got, expected, rtol: float, atol: float) -> bool:
    """Does the output hold the right values when read back with x's strides, as a store that
    writes softmax[i, j] at out + i * x.stride(0) + j * x.stride(1) leaves them?"""
    import torch

    if got is None or expected is None:
        return False
    flat = got.reshape(-1)
    strides = tuple(x.stride())
    last = sum((s - 1) * st for s, st in zip(x.shape, strides))
    # (A stride of 0 makes several elements share one cell; a broadcast input's softmax is
    # constant along that dimension, so the shared cell still holds the right value.)
    if strides == (x.shape[1], 1) or last >= flat.numel():
        return False
    back = torch.as_strided(flat, tuple(x.shape), strides, 0)
    if not _close(back, expected, rtol, atol):
        return False
    # The values read back must be clearly closer to the truth than the output as stored: where
    # x's strides reach the cells a right store fills with the same values (a stride of 0 reads
    # row 0 again, a view of identical logits reads equal values), read-back values that are
    # all slightly wrong say nothing about the address.
    err_back = float((back - expected).abs().nan_to_num(math.inf).max())
    err_got = float((got - expected).abs().nan_to_num(math.inf).max())
    return err_back < 0.5 * err_got


def _row_ratio(got, expected, d: int, spread_tol: float, off_tol: float):
    """Per softmax row, got / expected when it is one constant (within spread_tol) and at least
    one row's constant is off 1 by more than off_tol (else None)."""
    import torch

    g = got.movedim(d, -1).reshape(-1, got.shape[d])
    e = expected.movedim(d, -1).reshape(-1, expected.shape[d])
    # Only the clearly nonzero probabilities: tiny ones carry more rounding than signal.
    big = e >= 1e-3 * e.amax(dim=1, keepdim=True).clamp_min(1e-300)
    ratio = torch.where(big, g / torch.where(big, e, torch.ones_like(e)), torch.nan)
    med = ratio.nanmedian(dim=1).values
    spread = (ratio - med[:, None]).abs().nan_to_num(0.0).amax(dim=1)
    if not bool(med.isfinite().all()) or bool((spread > spread_tol * med.abs()).any()):
        return None
    if not bool(((med - 1).abs() > off_tol).any()):
        return None
    return med


_SWAPPED = ("x's two strides swapped: element (i, r) was read at i * stride_xr + "
            "r * stride_xi, which reads a transposed view; the load's address is x_ptr + "
            "i * stride_xi + r * stride_xr (in the plan too: stride_xi pairs with n_i, stride_xr "
            "with n_r)")


def _strides_swapped(impl, x):
    """A diagnosis by probe: softmax of a square contiguous tensor q, where a load with its two
    strides exchanged stays inside q and reads q.t(). When the output is softmax(q.t()) and
    not softmax(q), the strides are swapped (for x, whose read left x or read wrong cells)."""
    from checks.compare import tolerance_for

    def diagnose(got=None, expected=None, bad=None):
        if x.stride(0) == x.stride(1):
            return None
        try:
            import torch

            gen = torch.Generator().manual_seed(20261202)
            q = (3.0 * torch.randn((16, 16), generator=gen, dtype=torch.float64)).to(
                device=x.device, dtype=torch.float32)
            with torch.no_grad():
                probe = impl.softmax(q, -1)
            got_q = probe.detach().double().cpu()
        except Exception:  # noqa: BLE001 - the probe fails too: no diagnosis from it
            return None
        tol = tolerance_for(torch.float32)
        rtol, atol = 4 * tol.rtol, 4 * tol.atol + 1e-7
        if _close(got_q, _softmax64(q, -1), rtol, atol):
            return None
        if not _close(got_q, _softmax64(q.t(), -1), rtol, atol):
            return None
        return (f"{_SWAPPED}: the probe softmax(q, dim=-1) of a contiguous 16 x 16 q came out "
                "as softmax(q.t(), dim=-1)")

    return diagnose


def _dim0_setup_wrong(impl, x, dim, knobs=None):
    """A diagnosis for dim=0 (or -2): the learner's softmax of x.t() along dim=-1 is the same
    problem with the same strides, so when that call is right and the dim=0 one is not, the
    mistake is in how the dim=0 plan swaps the roles (a size left unswapped), not in a kernel.
    `knobs` (path, block_r, ...): the call's own, so that the probe runs the same plan."""
    from checks.compare import agrees, tolerance_for

    def diagnose(got=None, expected=None, bad=None):
        if dim % 2 != 0:
            return None
        tol = tolerance_for(x.dtype)
        if _written_with_input_strides(x, got, expected, 4 * tol.rtol, 4 * tol.atol + 1e-7):
            # The output holds the right values at x's strides: the kernel's store took the
            # input's strides (diagnoses' "output written with the input's strides"), which
            # the x.t() probe, whose x strides equal its output's, cannot show.
            return None
        try:
            import torch

            with torch.no_grad():
                probe = impl.softmax(x.t(), -1, **(knobs or {}))
        except Exception:  # noqa: BLE001 - the probe fails too: no diagnosis from it
            return None
        truth = _softmax64(x, dim)
        if not hasattr(probe, "shape") or tuple(probe.shape) != tuple(x.shape[::-1]):
            return None
        if not bool(agrees(probe.detach().double().cpu().t(), truth, tol.rtol, tol.atol).all()):
            return None
        return (f"dim={dim} set up wrong: softmax(x.t(), dim=-1).t() is right for this input "
                f"but softmax(x, dim={dim}) is not; the dim=0 plan must hand the kernel the "
                "transposed problem, swapping the row count and the row length together with "
                "x's and the output's strides")

    return diagnose


def _store_row_stride_ignored(x, dim, unwritten):
    """A diagnosis from the cells left unwritten: a store at out_rows + r (no * stride_or)
    writes exactly the cells i * stride_oi + r of the contiguous output, the rest never. Only
    where stride_or is not 1 (dim=0: the output's stride along a softmax row is its row
    length), and only when the cells never written are exactly the rest."""
    import torch

    def diagnose(got=None, expected=None, bad=None):
        if unwritten is None or x.numel() == 0:
            return None
        d = dim % 2
        stride_oi, stride_or = (1, x.shape[1]) if d == 0 else (x.shape[1], 1)
        n_i, n_r = x.shape[1 - d], x.shape[d]
        if stride_or == 1 or n_r < 2:
            return None
        cells = (torch.arange(n_i)[:, None] * stride_oi + torch.arange(n_r)[None, :]).reshape(-1)
        model = torch.ones(x.numel(), dtype=torch.bool)
        model[cells[cells < x.numel()]] = False
        if not bool(model.any()) or not torch.equal(unwritten.to("cpu").reshape(-1).bool(), model):
            return None
        return (f"output's position offset not multiplied by stride_or: the cells written are "
                f"exactly i * stride_oi + r (the first {x.numel() - int(model.sum())} of the "
                f"output), the other {int(model.sum())} never; for dim={dim} the output's stride "
                f"along a softmax row is stride_or = {stride_or}, not 1: store at "
                "out_rows + r * stride_or (path A's one block: out_rows + r0 * stride_or)")

    return diagnose


def _output_strides_swapped(impl, x, dim, knobs):
    """A probe for a store past the output on a dim=-1 call: the softmax of a square contiguous
    q, where an output written with stride_oi and stride_or exchanged stays inside the output
    and holds softmax(q).t(). Named only when that probe output is exactly the transpose."""
    from checks.compare import tolerance_for

    if dim % 2 != 1:
        return ""
    try:
        import torch

        gen = torch.Generator().manual_seed(20261203)
        q = (3.0 * torch.randn((16, 16), generator=gen, dtype=torch.float64)).to(
            device=x.device, dtype=torch.float32)
        with torch.no_grad():
            got_q = impl.softmax(q, -1, **knobs).detach().double().cpu()
    except Exception:  # noqa: BLE001 - the probe fails too: no diagnosis from it
        return ""
    tol = tolerance_for(torch.float32)
    rtol, atol = 4 * tol.rtol, 4 * tol.atol + 1e-7
    truth = _softmax64(q, -1)
    if _close(got_q, truth, rtol, atol) or not _close(got_q, truth.t(), rtol, atol):
        return ""
    return ("output strides swapped: element (i, r) was stored at i * stride_or + r * stride_oi; "
            "the probe softmax(q, dim=-1) of a contiguous 16 x 16 q came out as "
            "softmax(q, dim=-1).t(). For dim=1 (and -1) the output is written row-major: "
            "stride_oi, stride_or = out_strides = (n_cols, 1)")


def _shared_max_probe(impl, x, dim, knobs):
    """A probe for a max taken over the whole tile (tl.max(x), no axis), in path B's running max
    or path A's one block: one max for every softmax row of a strip (or of a program's rows), so
    a row far below another underflows (sum 0: inf, NaN or 0 out). Asked of the learner's path
    B, then of path A: two rows in one tile, one near 0 and one near -1000, must come out right
    together when each alone does (a missing max fails it alone too)."""
    import torch

    from checks.compare import tolerance_for

    gen = torch.Generator().manual_seed(20261204)
    rows = torch.randn((2, 40), generator=gen, dtype=torch.float64)
    rows[1] -= 1000.0
    tol = tolerance_for(torch.float32)
    rtol, atol = 4 * tol.rtol, 4 * tol.atol + 1e-7
    probe_knobs = {k: v for k, v in knobs.items() if k == "block_r"}

    def right_rows(t, path) -> list[bool]:
        # Path B: (positions, rows) contiguous, transposed: a softmax row's elements are a
        # column apart, the layout path B reads. Path A: contiguous rows with the default plan,
        # one block of several rows per program (its two-pass walk is given code).
        q = t.t().contiguous().t() if path == "B" else t.contiguous()
        q = q.to(device=x.device, dtype=torch.float32)
        with torch.no_grad():
            got = impl.softmax(q, -1, path=path, **(probe_knobs if path == "B" else {}))
        got = got.detach().double().cpu()
        truth = _softmax64(q, -1)
        return [_close(got[r], truth[r], rtol, atol) for r in range(t.shape[0])]

    def shared(path) -> bool:
        try:
            together = right_rows(rows, path)
            alone = [right_rows(rows[r:r + 1], path)[0] for r in range(2)]
        except Exception:  # noqa: BLE001 - the probe fails: no diagnosis from it
            return False
        return together == [True, False] and all(alone)

    def diagnose(got=None, expected=None, bad=None):
        if shared("B"):
            return ("running max shared by the whole tile: path B's probe of two softmax rows in "
                    "one strip, one near 0 and one near -1000, breaks the second (each row alone "
                    "is right): tl.max(x) without an axis takes one max over every row of the "
                    "tile, so exp(x - m) of a row far below it underflows to 0. Reduce along the "
                    "positions only, tl.max(x, axis=0): one running max per softmax row")
        if shared("A"):
            # (the ninth learner audit: this was "missing max subtraction" on huge logits)
            return ("row max shared by the whole tile: path A's probe of two rows in one "
                    "program's tile, one near 0 and one near -1000, breaks the second (each row "
                    "alone is right): tl.max(x) without an axis takes one max over every row of "
                    "the (BLOCK_I, BLOCK_R) tile, so exp(x - m) of a row far below it underflows "
                    "to 0. Reduce along each row only, m = tl.max(x, axis=1)")
        return None

    return diagnose


def _require_regions(ctx, impl, x, dim=-1, **knobs) -> None:
    """Stop the case as TODO when softmax(x, dim, **knobs) would run an exercise region that is
    still open, asking the implementation's own `plan` (filled before any check runs) which
    kernel and branch the call takes. Given code needs neither region: path A's two-pass walk,
    path B's one block, the exchange kernels."""
    if not ctx.unfilled(("rows", "strips")):
        return  # every region is written: nothing to ask (a reference never gets here)
    try:
        p = impl.plan(x, dim, **knobs)
        path, one_block, splits = p.path, bool(p.one_block), int(p.splits)
        exchange = bool(p.exchange) or bool(p.smem)
    except Exception:  # noqa: BLE001 - a refused call or a broken plan: the call itself says so
        return
    if exchange:
        return
    if path == "A" and one_block:
        ctx.require_exercises("rows", runs="path A with each row in one block "
                                           "(softmax_along_kernel's ONE_BLOCK branch)")
    elif path == "B" and (splits > 1 or not one_block):
        ctx.require_exercises("strips", runs="path B's two-pass walk "
                                             "(_across_stats and _across_normalize)")


# The last _call's (output, launch record, implementation) on this thread: _compare reads it
# when it gets that same output, so that the diagnoses replay the tiles and walks that ran.
_LAST_CALL = threading.local()


def _launched_for(out):
    """(launch record, implementation) of the _call that returned `out`, else (None, None)."""
    last = getattr(_LAST_CALL, "value", None)
    if last is None or last[0] is not out:
        return None, None
    return last[1], last[2]


def _call(ctx, impl, x, dim, **knobs):
    """softmax(x, dim, **knobs) through ctx.call (fresh, contiguous, same shape and dtype)."""
    _LAST_CALL.value = None
    with launches.recording() as launched:
        out = _call_once(ctx, impl, x, dim, **knobs)
    _LAST_CALL.value = (out, list(launched), impl)
    return out


def _call_once(ctx, impl, x, dim, **knobs):
    _require_regions(ctx, impl, x, dim, **knobs)
    try:
        return ctx.call(impl.softmax, x, dim, name="softmax", expect_shape=tuple(x.shape),
                        expect_dtype=x.dtype, expect_contiguous=True, **knobs)
    except CheckFailed as exc:
        if left_the_tensors(exc.message):
            # (The strides probe calls without knobs: it asks about the load, which every
            # plan shares; the dim=0 probe passes the call's knobs, so its plan is the same.)
            hint = (_dim0_setup_wrong(impl, x, dim, knobs)() or _strides_swapped(impl, x)())
            if hint:
                exc.hint = hint
                raise
        if "out-of-bounds load" in exc.message:
            exc.hint = _load_without_row_mask(impl, x, dim, knobs) or exc.hint
            raise
        # Under the interpreter an address past every tensor stops the kernel cleanly; on this
        # workshop a store past the output means output strides taken from somewhere else.
        # (the interpreter's bounds check, or on a GPU the tail guard behind the output)
        swapped = (any(text in exc.message for text in ("out-of-bounds store",
                                                        "wrote past the end"))
                   and _output_strides_swapped(impl, x, dim, knobs))
        if swapped:
            exc.hint = swapped
        elif "out-of-bounds store" in exc.message and tuple(x.stride()) == (x.shape[1], 1):
            # x has the output's own strides: taking them cannot be the cause
            exc.hint = ("store not masked (or a wrong offset): a store reached past the end "
                        "of the output; mask it with the row mask and the position mask "
                        "together (x's strides equal the output's here, so they are not the "
                        "cause)")
        elif "out-of-bounds store" in exc.message:
            exc.hint = ("output written with the input's strides (or a store without its "
                        "mask): the output is a new contiguous tensor with strides "
                        f"({x.shape[1]}, 1)")
        raise


_SPARE_ROWS = 256  # rows after x in _load_without_row_mask's buffer: more than any BLOCK_I


def _load_without_row_mask(impl, x, dim, knobs):
    """The hint for a load past the end of x (the interpreter's bounds check stopped it) when
    the load's mask lacks the row bound: softmax is called again on the same view of a longer
    storage, whose first cells are x's own storage and whose rest (random values) holds
    _SPARE_ROWS more rows with x's strides, so a read of the rows after the last succeeds. Every
    layout keeps its strides and offset: the transposed, sliced, stepped and dim=0 cases ask
    the same question as the row-major one. If that output is right, only lanes of rows past
    the last were read (their results are never stored); a load without the position mask
    reads other cells instead (x's own, or the random rest), and stays wrong. None otherwise."""
    import torch

    from checks.compare import tolerance_for
    from checks.context import call_learner

    if x.dim() != 2 or dim not in (-2, -1, 0, 1) or x.numel() == 0:
        return None
    row_dim = 1 - dim % 2  # the rows softmax treats one by one: x's other dimension
    longer = list(x.shape)
    longer[row_dim] += _SPARE_ROWS
    last_cell = x.storage_offset() + sum((n - 1) * s for n, s in zip(longer, x.stride()))
    stored = x.untyped_storage().nbytes() // x.element_size()
    storage = torch.randn(max(stored, last_cell + 1), dtype=torch.float32,
                          device=x.device).to(x.dtype)
    storage[:stored] = x.as_strided((stored,), (1,), 0)  # x's cells stay where they were
    same_view = storage.as_strided(tuple(x.shape), tuple(x.stride()), x.storage_offset())
    try:
        got = call_learner(impl.softmax, same_view, dim, **knobs)
    except Exception:  # noqa: BLE001 - a diagnosis only: no verdict of its own
        return None
    tol = tolerance_for(x.dtype)
    if tuple(got.shape) != tuple(x.shape) or not _close(got.detach().double().cpu(),
                                                         _softmax64(x, dim), tol.rtol, tol.atol):
        return None
    return ("load without the row mask: the load read rows past the last (a program's tile "
            "holds BLOCK_I rows, and the last program's tile reaches past x), while with x "
            "followed by more rows the output is right; mask the load with both bounds, "
            "mask=i_ok & r_ok, not r_ok alone")


# Each knob and the kernel argument it sets. The exchange plans clamp block_i to the rows
# there are, so it is compared only without them. num_warps and num_stages are launch options
# every kernel takes (absent: Triton's default); a kernel without BLOCK_R or BLOCK_I is not
# compared (yours may name them differently).
_KNOB_ARGUMENTS = {"block_r": "BLOCK_R", "block_i": "BLOCK_I", "num_warps": "num_warps",
                   "num_stages": "num_stages"}


def _knobs_ignored(launched, dim, knobs: dict) -> None:
    """FAIL if a kernel softmax launched ran with another value than a knob the call passed:
    every block size computes the same softmax, so only the launch record shows a knob that
    did nothing."""
    compared = {k: v for k, v in knobs.items()
                if not (k == "block_i" and (knobs.get("exchange") or knobs.get("smem")))}
    ignored = launches.ignored_knob(launched, compared, _KNOB_ARGUMENTS,
                                    ("num_warps", "num_stages"))
    if ignored:
        knob, wanted, launch, shown = ignored
        raise CheckFailed(
            f"softmax(x, dim={dim}, **{knobs}) launched {launch.name} with {shown}",
            hint=f"knob ignored: {knob}={wanted!r} was asked for, but {launch.name} ran "
                 f"with {shown}; the plan keeps every knob the caller gives and "
                 "chooses only those left out (None), and the launch passes them on")


def _compare(ctx, x, dim, out, extra=(), minus_inf_probe=None):
    """out against the float64 softmax of x; `extra` diagnoses go before the usual ones."""
    name = (f"softmax(x, dim={dim}) of x {tuple(x.shape)} with strides {tuple(x.stride())}, "
            f"storage offset {x.storage_offset()}")
    launched, impl = _launched_for(out)
    probe = None if impl is None else _column_max_probe(impl, x.device)
    unwritten = ctx.never_written(out)
    ctx.assert_close(out, _softmax64(x, dim), name=name, diagnose=[
        _store_row_stride_ignored(x, dim, unwritten), *extra, *_walk_diagnoses(x, dim, launched),
        *diagnoses(x, dim, unwritten, minus_inf_probe, launched, probe)])


def _walk_diagnoses(x, dim, launched):
    """The first pass's diagnoses (_first_pass_wrong) for the two-pass walk the launch record
    shows (its BLOCK_R, and each slice's positions for path B's split), so that a call without
    an explicit block_r gets them too; none for one block or an unknown record."""
    for launch in launched or ():
        args = launch.arguments
        block_r = args.get("BLOCK_R")
        if not isinstance(block_r, int) or block_r <= 0:
            continue
        if launch.name in ("softmax_along_kernel", "softmax_across_kernel"):
            if args.get("ONE_BLOCK") is False:
                return _first_pass_wrong(x, dim, block_r)
        elif launch.name == "softmax_across_partial_kernel":
            per = args.get("rows_per_split")
            # (slices of whole blocks only: the replay walks each slice in whole blocks)
            if isinstance(per, int) and per > 0 and per % block_r == 0:
                return _first_pass_wrong(x, dim, block_r, per)
    return []


# ---------------------------------------------------------------------------------------------
# Forward values: layouts x dims x dtypes
# ---------------------------------------------------------------------------------------------
def _layout_cases(device: str) -> list[Case]:
    shapes = [(6, 37)] if device != "cuda" else [(6, 37), (129, 1000)]
    cases = [Case(layout=lay, shape=s, dim=dim, dtype=dt) for s in shapes for lay in LAYOUTS
             for dim in (-1, 0) for dt in DTYPES]
    # dim=1 and dim=-2 name the same two dimensions: once each, in float32.
    cases += [Case(layout=lay, shape=shapes[0], dim=dim, dtype="float32") for lay in LAYOUTS
              for dim in (1, -2)]
    return cases


@register(W, "forward.layouts", tier="kernel", uses=SOFTMAX, cases=_layout_cases,
          doc="every view layout (transposed, sliced, stepped, broadcast, offset) x dim x dtype")
def forward_layouts(ctx, impl, case):
    x = make_view(ctx, case.layout, case.shape, case.dtype)
    out = _call(ctx, impl, x, case.dim)
    _compare(ctx, x, case.dim, out, extra=[_dim0_setup_wrong(impl, x, case.dim),
                                           _strides_swapped(impl, x)])


@register(W, "forward.default_dim", tier="kernel", uses=SOFTMAX,
          cases=[Case(layout="contiguous", shape=(6, 37), dtype="float32")],
          doc="softmax(x) with dim left out reduces over the last dimension (dim=-1)")
def forward_default_dim(ctx, impl, case):
    x = make_view(ctx, case.layout, case.shape, case.dtype)
    _require_regions(ctx, impl, x)
    try:
        out = ctx.call(impl.softmax, x, name="softmax", expect_shape=tuple(x.shape),
                       expect_dtype=x.dtype, expect_contiguous=True)
    except CheckFailed as exc:
        if "out-of-bounds load" in exc.message:  # the same read as forward.layouts' first case
            exc.hint = _load_without_row_mask(impl, x, -1, {}) or exc.hint
        elif "out-of-bounds store" in exc.message:  # and the same store
            exc.hint = _output_strides_swapped(impl, x, -1, {}) or exc.hint
        raise

    def over_dim0(got, expected, bad):
        if _close(got, _softmax64(x, 0), 4e-5, 1e-7):
            # Only when softmax(x, dim=-1), dim passed, is right: else the plan reduces every
            # dim=-1 call over dim 0 (the wrong-dimension diagnosis below says so).
            try:
                import torch

                with torch.no_grad():
                    probe = impl.softmax(x, -1)
                right = _close(probe.detach().double().cpu(), _softmax64(x, -1), 4e-5, 1e-7)
            except Exception:  # noqa: BLE001 - the probe fails too: no diagnosis from it
                return None
            if not right:
                return None
            return ("default dim must be -1 (the last dimension): softmax(x) without dim "
                    "reduced over dim 0; declare the parameter as dim: int = -1")
        return None

    ctx.assert_close(out, _softmax64(x, -1), name=f"softmax(x) (dim left out) of x "
                     f"{tuple(x.shape)}", diagnose=[over_dim0, *diagnoses(x, -1)])


def _path_cases(device: str) -> list[Case]:
    # Both sides longer than 2 * 16, so block_r=16 walks either dim in several passes and
    # splits=3 makes three nonempty slices of 16 positions (40 or 45: the last one ragged).
    shape = (40, 45) if device != "cuda" else (300, 777)
    # one block (block_r default, the whole row) and two passes (block_r=16 < the row)
    cases = [Case(layout=lay, shape=shape, dim=dim, path=p, block_r=br, dtype="float32")
             for lay in ("contiguous", "transposed", "stepped", "broadcast_rows")
             for dim in (-1, 0) for p in ("A", "B") for br in (None, 16)]
    cases += [Case(layout=lay, shape=shape, dim=-1, path=p, block_r=br, dtype=dt)
              for lay in ("contiguous", "transposed") for p in ("A", "B") for br in (None, 16)
              for dt in ("float16", "bfloat16")]
    # knobs: several rows per program with ragged heights, explicit warps and stages
    cases += [Case(layout="contiguous", shape=shape, dim=-1, path="A", block_r=16, block_i=4,
                   num_warps=2, num_stages=2, dtype="float32"),
              Case(layout="transposed", shape=shape, dim=-1, path="B", block_r=32, block_i=2,
                   num_warps=1, num_stages=3, dtype="float32")]
    # path B split along the reduction: 3 slices per strip, stage 1 statistics + stage 2 merge
    cases += [Case(layout=lay, shape=shape, dim=dim, path="B", block_r=16, splits=3, dtype=dt)
              for lay, dim in (("transposed", -1), ("contiguous", 0), ("broadcast_rows", 0))
              for dt in ("float32", "bfloat16")]
    # Rows of 33 = 2 * 16 + 1 with block_r=16 (the last block holds one position) and each
    # row's maximum planted there: a walk that stops a block short misses it on every seed.
    cases += [Case(layout=lay, shape=(8, 33), dim=-1, path=p, block_r=16, max_last=True,
                   dtype="float32") for lay, p in (("contiguous", "A"), ("transposed", "B"))]
    # Two passes over rows whose max sits in their first block and whose later blocks lie
    # about 120 below it (every other row): the running max must stay the row's max, since a
    # first pass that keeps only each chunk's max rescales the sum by exp(120), past float32.
    cases += [Case(layout=lay, shape=shape, dim=-1, path=p, block_r=16, drop=True,
                   dtype="float32") for lay, p in (("contiguous", "A"), ("transposed", "B"))]
    # Rows longer than one block but at most two (block_r = 32 < 45 <= 2 * block_r): two
    # passes, not the one-block branch. Rows of 45 on every device: the GPU's 777-wide rows
    # are far past 2 * block_r, and there the one-block mistake went unseen (twenty-seventh
    # session's GPU bug zoo).
    cases += [Case(layout=lay, shape=(shape[0], 45), dim=-1, path=p, block_r=32,
                   dtype="float32") for lay, p in (("contiguous", "A"), ("transposed", "B"))]
    # The largest tile allowed, block_r * block_i = 65536 (accepted), split in two slices of
    # which the first holds 65536 equal float16 logits: its sum, 65536, is past float16's
    # largest number (65504), so the (max, sum) workspace must be float32.
    cases += [Case(layout="contiguous", shape=(65537, 1), dim=0, path="B", block_r=65536,
                   block_i=1, splits=2, equal=True, dtype="float16")]
    return cases


# The kernels each path launches, by name (the module's kernels keep their names in the starter).
# The case tables never ask for the exchange: forced paths with short rows or an explicit
# block_r, where the launcher does not pick it by itself.
PATH_KERNELS = {
    "A": ("softmax_along_kernel",),
    "B": ("softmax_across_kernel",),
    "B split": ("softmax_across_partial_kernel", "softmax_across_normalize_kernel"),
}


def _path_asked(case) -> str:
    return "B split" if case.path == "B" and (case.get("splits") or 1) > 1 else case.path


def _path_ran(log) -> str:
    """The path whose kernels `log` holds (in order), or a description of what it holds."""
    for path, kernels in PATH_KERNELS.items():
        if tuple(log) == kernels:
            return f"path {path}"
    return "no path's kernels exactly"


@register(W, "forward.paths", tier="kernel", uses=SOFTMAX, cases=_path_cases,
          doc="both paths forced on every layout (one block, two passes, split slices, explicit "
              "knobs): right values, the forced path's kernels are the ones launched and the knobs "
              "reach them")
def forward_paths(ctx, impl, case):
    x = make_view(ctx, case.layout, case.shape, case.dtype)
    extra = []
    d = case.dim % 2
    if case.get("max_last"):
        x.select(d, -1).copy_(x.amax(dim=d) + 2.0)  # each row's maximum, in its last position
        extra = [_last_skipped(x, case.dim, case.block_r)]
    if case.get("equal"):
        # every position but the last equal to its row's maximum (a random value)
        head = x.narrow(d, 0, x.shape[d] - 1)
        head.copy_(x.amax(dim=d, keepdim=True).expand_as(head))
    knobs = {k: case[k] for k in ("path", "block_r", "block_i", "num_warps", "num_stages",
                                  "splits") if case.get(k) is not None}
    if case.get("drop"):
        # Even rows: every position past the first block 120 below the rest, so the row's max
        # sits in its first chunk and the next chunk's max lies about 120 below it.
        lines = [slice(None), slice(None)]
        lines[1 - d], lines[d] = slice(0, None, 2), slice(case.block_r, None)
        x[tuple(lines)] -= 120.0
    per_split = 0
    if (case.get("splits") or 1) > 1:
        n_r = x.shape[d]
        # whole blocks per slice: ceil(ceil(n_r / splits) / block_r) * block_r
        per_split = math.ceil(math.ceil(n_r / case.splits) / case.block_r) * case.block_r
    if per_split:
        # (before the first pass's replays: slice sums of 65536 that overflow float16 leave
        # rows of 0, which the replay of a first pass whose sums are far too large matches too)
        extra.append(_split_stats_16bit(x, case.dim, per_split))
    if case.get("block_r"):
        extra += [_one_block_too_short(x, case.dim, case.block_r),
                  _running_stats_stuck(x, case.dim, case.block_r),
                  *_first_pass_wrong(x, case.dim, case.block_r, per_split)]
    with ctx.count_launches() as log, launches.recording() as launched:
        try:
            out = _call(ctx, impl, x, case.dim, **knobs)
        except CheckFailed as exc:
            tile = (case.get("block_r") or 1) * (case.get("block_i") or 1)
            # Only a refusal before any launch is the tile limit; a ValueError from inside the
            # kernel (Triton's own, on a wrong axis or a too-large tensor) is another mistake.
            if tile == 65536 and "ValueError" in exc.message and not launched:
                exc.hint = ("tile limit off by one: block_r * block_i = 65536 is the largest "
                            "tile allowed and must be accepted; refuse only block_r * block_i > "
                            "65536")
            raise
    # (last of the extras: the probe softmax(x.t(), dim=-1, same knobs) runs the same plan)
    _compare(ctx, x, case.dim, out, [*extra, _dim0_setup_wrong(impl, x, case.dim, knobs)])
    # Right values alone do not show which path ran: every kernel here computes the same
    # softmax, so a launcher that ignored the knob would pass on values. The names do show it.
    asked = _path_asked(case)
    expected = list(PATH_KERNELS[asked])
    if log != expected:
        ran = _path_ran(log)
        knob = "splits" if asked.startswith("B") and ran.startswith("path B") else "path"
        ctx.fail(f"softmax(x, dim={case.dim}, **{knobs}) asked for path {asked} and launched "
                 f"{log} ({ran}); expected {expected}",
                 hint=f"{knob} knob ignored: a forced path={case.path!r}"
                      f"{' with splits > 1' if asked == 'B split' else ''} must run "
                      f"{' then '.join(expected)} (the plan and the launch both follow the "
                      "knob); the launcher may choose the path (and the splits) itself only when "
                      "the knob is left out (None)")
    # Likewise block_r, block_i, num_warps and num_stages: any of them computes the same softmax.
    _knobs_ignored(launched, case.dim, knobs)


def _rows_of(t, dim: int):
    """t as one softmax row per line: (rows, n_r), float64 on the CPU."""
    d = dim % 2
    return t.detach().double().cpu().movedim(d, -1).reshape(-1, t.shape[d])


def _one_block_too_short(x, dim: int, block_r: int):
    """Diagnosis: the first block_r positions of each row hold the softmax of those positions
    alone (and the rest is wrong): the one-block branch ran on a row longer than BLOCK_R."""
    import torch

    from checks.compare import tolerance_for

    tol = tolerance_for(x.dtype)
    n_r = x.shape[dim % 2]

    def diagnose(got, expected, bad):
        if block_r >= n_r:
            return None
        head = _rows_of(x, dim)[:, :block_r]
        sim = head.softmax(dim=1)
        g, e = _rows_of(got, dim)[:, :block_r], _rows_of(expected, dim)[:, :block_r]
        if _close(sim, e, tol.rtol, tol.atol) or not _close(g, sim, 4 * tol.rtol,
                                                             4 * tol.atol + 1e-7):
            return None
        wrong_tail = bool(_rows_of(bad.to(torch.float64), dim)[:, block_r:].any())
        return (f"ONE_BLOCK chosen for a row longer than BLOCK_R: the first {block_r} positions "
                f"of each row of {n_r} hold the softmax of those {block_r} alone"
                f"{' and the positions past them are wrong' if wrong_tail else ''}; the "
                "one-block branch is right only when n_r <= BLOCK_R (else walk the row in two "
                "passes)")

    return diagnose


def _running_stats_stuck(x, dim: int, block_r: int):
    """Diagnosis: every output is +inf, which the two-pass walk's normalisation exp(x - m) / s
    gives only when the first pass hands it m = -inf (the running max never updated: m = m_new
    left out, so m stays -inf and s holds the last chunk's sum alone) or s = 0 (the running sum
    never accumulated). Both replay to the same output, so the hint names both."""
    from checks.compare import tolerance_for

    tol = tolerance_for(x.dtype)

    def simulate():
        if block_r >= x.shape[dim % 2]:
            return None  # one block: no running statistics
        # exp(x - (-inf)) / s is +inf whatever s > 0 holds (and so is exp(x - m) / 0)
        return (x.detach().double().cpu() + math.inf).exp()

    return _simulated("running max never updated (or the running sum never accumulated): "
                      "every output is +inf, which exp(x - m) / s gives only when the first "
                      "pass ends with the running max m still -inf (m = m_new left out of the "
                      "loop?) or the running sum s still 0 (log2(0) = -inf); fold each chunk "
                      "into both: m_new = max(m, chunk max), s = s * exp(m - m_new) + "
                      "sum(exp(x - m_new)), then m = m_new", simulate,
                      match=(tol.rtol, tol.atol), differ=(tol.rtol, tol.atol))


def _first_pass_model(x, dim: int, block_r: int, rows_per_split: int, variant: str):
    """The output of the two-pass walk (both paths; path B's split: one walk per slice of
    rows_per_split positions, then the merge) with one mistake in the first pass's update,
    replayed in float32 as the kernel runs it, so that an exp that overflows float32 there
    overflows here too. variant "chunk_max": m_new is the chunk's own max (the running max
    dropped); "old_max": the chunk's terms exp(x - m) take the running max from before the
    chunk (-inf at the first); "guard_old_m": the -inf guard tests the old m, so the first
    chunk (m = -inf) is shifted by 0; "rescale_flipped": the old sum rescaled by
    exp(m_new - m) (inf at the first chunk, and 0 * inf = NaN); "unguarded": no -inf guard
    (shift = m_new); "shift_clamped": the shift is max(m_new, 0) (a clamp standing in for
    the -inf guard); "terms_without_log2e": the chunk's terms exp2(x - shift), without the
    LOG2E factor (2^t where e^t belongs), beside a right rescale; any other name: the right
    walk. (n_i, n_r) rows in, x's shape out; None
    for one block."""
    import torch

    rows = _rows_of(x, dim).float()
    n_i, n_r = rows.shape
    if block_r >= n_r or n_i == 0:
        return None
    log2e = torch.tensor(1.4426950408889634, dtype=torch.float32)
    inf = torch.full((n_i,), math.inf)
    per = rows_per_split or n_r
    ms, ss = [], []
    for begin in range(0, n_r, per):
        m, s = -inf, torch.zeros(n_i)
        for start in range(begin, begin + per, block_r):
            chunk = torch.full((n_i, block_r), -math.inf)  # lanes past n_r load -inf
            part = rows[:, start:min(start + block_r, n_r)]
            chunk[:, :part.shape[1]] = part
            big = chunk.amax(dim=1)
            m_new = big if variant == "chunk_max" else torch.maximum(m, big)
            guard = m if variant == "guard_old_m" else m_new
            shift = m_new if variant == "unguarded" else torch.where(guard == -math.inf, 0.0,
                                                                     m_new)
            if variant == "shift_clamped":
                shift = m_new.clamp_min(0.0)
            base = m if variant == "old_max" else shift
            rescale = shift - m if variant == "rescale_flipped" else m - shift
            terms_factor = 1.0 if variant == "terms_without_log2e" else log2e
            s = s * torch.exp2(rescale * log2e) + torch.exp2(
                (chunk - base[:, None]) * terms_factor).sum(dim=1)
            m = m_new
        ms.append(m)
        ss.append(s)
    if len(ms) == 1:
        m, s = ms[0], ss[0]
    else:  # the split's merge (right): M = max m_k, S = sum s_k exp(m_k - M)
        m_k, s_k = torch.stack(ms), torch.stack(ss)
        m = m_k.amax(dim=0)
        shift = torch.where(m == -math.inf, 0.0, m)
        s = (s_k * torch.exp2((m_k - shift[None, :]) * log2e)).sum(dim=0)
    y = torch.exp2((rows - m[:, None]) * log2e - torch.log2(s)[:, None]).double()
    d = dim % 2
    shape = list(x.shape)
    shape.append(shape.pop(d))
    return y.reshape(shape).movedim(-1, d)


def _first_pass_wrong(x, dim: int, block_r: int, rows_per_split: int = 0,
                      minus_inf_probe=None):
    """Diagnoses of the two-pass walk's first pass: the running max dropped (each chunk's own
    max), the chunk's terms shifted by the old running max, the -inf guard testing the old m,
    and the old sum rescaled by exp(m_new - m). Each replays its mistake in float32
    (_first_pass_model) and speaks when the output matches it and not the truth; when several
    replays match (on logits near 1e4 most give rows of 0) one hint names them all. A replay
    may hold NaN (inf * 0 where a later chunk rescales an inf sum): the output must hold it
    too, and some finite wrong value besides, since NaN alone fits many mistakes; only the
    flipped rescale, NaN everywhere by construction, is named from its NaN."""
    from checks.compare import agrees, tolerance_for

    tol = tolerance_for(x.dtype)
    match = (4 * tol.rtol, 4 * tol.atol + 1e-7)
    exact = (tol.rtol, tol.atol)
    models = {}

    def model(variant):
        if variant not in models:
            models[variant] = _first_pass_model(x, dim, block_r, rows_per_split, variant)
        return models[variant]

    fold = ("m_new = max(m, chunk max), shift = 0 where m_new is -inf (else m_new), "
            "s = s * exp(m - shift) + sum(exp(x - shift)), then m = m_new")
    hints = {
        "chunk_max": "running max must be max(m, chunk max), not the chunk's own max: the "
                     "output matches a first pass whose m_new is each chunk's max alone. That "
                     "is right only while the maxima grow: a chunk far below an earlier one "
                     "rescales the sum by exp(m_old - m_new), which overflows float32 (rows of "
                     "0) or loses digits; m_new = tl.maximum(m, tl.max(x, axis=...))",
        "old_max": "chunk terms shifted by the old running max: the output matches a first "
                   "pass that adds the chunk's exp(x - m) with m the running max from before "
                   "the chunk (-inf at the first chunk: every term, and so the sum, is inf, and "
                   "every output 0); shift the chunk's terms by the new max, the same shift the "
                   "old sum is rescaled to: s = s * exp(m - m_new) + sum(exp(x - m_new))",
        "guard_old_m": "the -inf guard must test m_new, not the old m: the output matches a "
                       "first pass with shift = where(m == -inf, 0, m_new). At the first chunk "
                       "m is -inf, so that chunk's terms are exp(x - 0), unshifted, while m "
                       "becomes its max: each row's sum is exp(first chunk's max) too large "
                       "(inf once exp(x) overflows). The guard is there for rows that have seen "
                       "only -inf so far, which is m_new == -inf: shift = tl.where(m_new == "
                       "-float(\"inf\"), 0.0, m_new)",
        "rescale_flipped": "old sum rescaled by exp(m_new - m) instead of exp(m - m_new): the "
                           "output matches a first pass with s * exp(shift - m), which is NaN "
                           "everywhere: at the first chunk m = -inf, so exp(shift - m) = inf and "
                           "0 * inf = NaN, and the NaN stays in s. The old sum was taken "
                           "relative to the old max m; moving it to the new, larger max makes "
                           "it smaller: s * exp2((m - shift) * LOG2E), a factor <= 1 (any "
                           "update that multiplies the first chunk's s = 0 by an inf NaNs the "
                           "same way: every exp there needs a finite argument)",
        # (the seventh learner audit's 09)
        "shift_clamped": "the shift clamped at 0: the output matches a first pass with shift = "
                         "max(m_new, 0), so while a row's running max is negative its sum "
                         "is taken against 0, not against m (each row whose max stays below 0 "
                         "is off by exp(-m), and the old sum is rescaled by exp(m - shift) "
                         "between two different references); the -inf guard replaces only "
                         "-inf: shift = tl.where(m_new == -float(\"inf\"), 0.0, m_new)",
        # (named since the forty-first session; a generic hint before)
        "terms_without_log2e": "chunk terms without LOG2E: the output matches a first pass "
                               "that adds the chunk's exp2(x - shift), 2^(x - m) where e^(x - "
                               "m) belongs, while the old sum is rescaled right, so each row's "
                               "sum is off by a factor that depends on where the chunks fall; "
                               "exp(t) = exp2(t * LOG2E) in both places: s = s * exp2((m - "
                               "shift) * LOG2E) + sum(exp2((x - shift) * LOG2E))",
    }
    short = {
        "chunk_max": "whose m_new is the chunk's own max (the running max dropped)",
        "old_max": "whose chunk terms exp(x - m) take the old running max",
        "guard_old_m": "whose -inf guard tests the old m (the first chunk unshifted, exp(x))",
        "rescale_flipped": "that rescales the old sum by exp(m_new - m)",
        "shift_clamped": "whose shift is max(m_new, 0)",
        "terms_without_log2e": "whose chunk terms are exp2(x - shift), without LOG2E",
    }

    # Logits far below 0 (about -200): a max of 0 anywhere (a running max seeded with 0, a tail
    # padded with 0) underflows every exp(x - 0) and leaves rows of 0, like the old-max replay's
    # inf sum: there a row of zeros names neither. (The guard's replay stays: its first chunk
    # alone underflows, and the finite rows the later chunks leave name it.)
    far_below = bool((_rows_of(x, dim).amax(dim=1) < -80.0).any())

    def explains(variant, got, expected):
        if far_below and variant == "old_max":
            return False
        sim = model(variant)
        if sim is None or _close(sim, expected, *exact) or not _close(got, sim, *match):
            return False
        if variant == "rescale_flipped":
            # NaN wherever a row's first chunk is reached, and nothing else: the output must
            # be NaN where the truth is a number (the replay's NaN, which agrees() matched)
            return bool((sim.isnan() & ~expected.isnan()).any())
        return bool((sim.isfinite() & ~agrees(sim, expected, *exact)).any())

    def diagnose(got, expected, bad):
        right = model("right")
        if right is None or _close(got, right, *match):
            # the walk itself, replayed without a mistake, gives this output (a slice that is
            # not whole blocks, say): the first pass's update is not what is wrong
            return None
        found = [v for v in hints if explains(v, got, expected)]
        if "rescale_flipped" in found and _close(got, model("unguarded"), *match):
            # every row starts with a chunk of -inf: the missing guard NaNs them all the same
            # way. The probe (_minus_inf_probe, when given) tells the two apart: the guard's
            # mistake leaves a row of finite logits right, a flipped rescale NaNs it too.
            g, e = _rows_of(got, dim), _rows_of(expected, dim)
            nan_rows = (g.isnan() & ~e.isnan()).any(dim=1)
            if minus_inf_probe is None or minus_inf_probe(nan_rows):
                found.remove("rescale_flipped")
        if len(found) == 1:
            return hints[found[0]]
        if len(found) > 1:
            # (logits near 1e4: several updates leave rows of 0 there, and the output names
            # none of them alone)
            return ("first pass's running sum overflowed: the output matches a first pass "
                    + ", and one ".join(short[v] for v in found)
                    + f": each makes the sum inf here (rows of 0, NaN where a later chunk "
                      f"rescales the inf by 0). Fold each chunk as {fold}")
        return None

    return [diagnose]


def _split_stats_16bit(x, dim: int, rows_per_split: int):
    """Diagnosis: the output is what each slice's (max, sum) rounded to x's 16-bit dtype
    before the merge gives (a float16 sum past 65504 is inf, and the row comes out 0)."""
    import torch

    from checks.compare import tolerance_for

    tol = tolerance_for(x.dtype)

    def simulate():
        if x.dtype == torch.float32:
            return None
        rows = _rows_of(x, dim)
        ms, ss = [], []
        for start in range(0, rows.shape[1], rows_per_split):
            part = rows[:, start:start + rows_per_split]
            m = part.amax(dim=1, keepdim=True)
            s = (part - m).exp().sum(dim=1, keepdim=True)
            ms.append(m.to(x.dtype).double())
            ss.append(s.to(x.dtype).double())
        m_k, s_k = torch.cat(ms, dim=1), torch.cat(ss, dim=1)
        big = m_k.amax(dim=1, keepdim=True)
        total = (s_k * (m_k - big).exp()).sum(dim=1, keepdim=True)
        sim = (rows - big).exp() / total
        d = dim % 2
        shape = list(x.shape)
        shape.append(shape.pop(d))
        return sim.reshape(shape).movedim(-1, d)

    return _simulated("split statistics kept in 16 bits: the output matches each slice's "
                      f"(max, sum) rounded to {str(x.dtype).replace('torch.', '')} (a slice "
                      "sum past 65504 is inf in float16); keep the (max, sum) workspace in "
                      "float32", simulate, match=(4 * tol.rtol, 4 * tol.atol + 1e-7),
                      differ=(tol.rtol, tol.atol))


def _last_skipped(x, dim: int, block_r: int):
    """Diagnosis: the output is the softmax whose statistics (max, sum) left out each row's
    last position, as a first pass that stops one block short of n_r computes them."""
    from checks.compare import tolerance_for

    tol = tolerance_for(x.dtype)
    n_r = x.shape[dim % 2]

    def simulate():
        rows = x.detach().double().cpu().movedim(dim % 2, -1)
        head = rows[..., :-1]
        m = head.amax(dim=-1, keepdim=True)
        s = (head - m).exp().sum(dim=-1, keepdim=True)
        return ((rows - m).exp() / s).movedim(-1, dim % 2)

    return _simulated(f"last position skipped: the first pass left out each row's last element "
                      f"(n_r = {n_r} = {n_r // block_r} * {block_r} + 1, so the last block of "
                      "BLOCK_R holds that one position), and the row's max and sum miss it; "
                      "walk every block, range(0, n_r, BLOCK_R), with r < n_r as the mask",
                      simulate, match=(4 * tol.rtol, 4 * tol.atol + 1e-7),
                      differ=(tol.rtol, tol.atol))


def _ragged_cases(device: str) -> list[Case]:
    shapes = [(1, 1), (3, 2), (70, 3), (5, 17), (70, 17), (3, 1000), (2, 4097), (1, 4097)]
    if device == "cuda":
        shapes += [(1823, 781), (37, 4097), (256, 16384), (3, 40000), (40000, 3), (129, 32768)]
    return [Case(layout=lay, shape=s, dtype=dt) for s in shapes
            for lay in ("contiguous", "transposed") for dt in DTYPES]


@register(W, "forward.ragged", tier="kernel", uses=SOFTMAX, cases=_ragged_cases,
          doc="widths 1, 2, 3, 17, 1000, 4097 and ragged heights, rows and transposed views")
def forward_ragged(ctx, impl, case):
    x = make_view(ctx, case.layout, case.shape, case.dtype)
    out = _call(ctx, impl, x, -1)
    _compare(ctx, x, -1, out)


def _extreme_cases(device: str) -> list[Case]:
    cases = []
    for dt, magnitude in (("float16", 65504.0), ("bfloat16", 1e30), ("float32", 1e4)):
        for lay in ("contiguous", "transposed"):
            for br in (None, 16):
                cases.append(Case(kind="huge", magnitude=magnitude, layout=lay, block_r=br,
                                  dtype=dt))
    cases += [Case(kind="identical", layout=lay, dtype=dt)
              for lay in ("contiguous", "transposed") for dt in DTYPES]
    cases += [Case(kind="masked", layout=lay, block_r=16, dtype="float32")
              for lay in ("contiguous", "transposed")]
    # Logits in -(0.9..1) * 1e31, rows ragged along either dim (33 and 5 positions): the padded
    # lanes must load -inf, since a finite stand-in (-1e30, say) lies above every logit
    # (float16 cannot show it: its -1e30 is -inf). Both paths: dim -1 and 0 of each layout.
    cases += [Case(kind="huge", magnitude=-1e31, layout=lay, dim=dim, shape=(5, 33), dtype=dt)
              for dt in ("float32", "bfloat16") for lay in ("contiguous", "transposed")
              for dim in (-1, 0)]
    # Logits near -200 (randn * 3 - 200): exp(x - 0) underflows to 0 in float32, so a running
    # max that starts at 0, or a merge that pads missing slices with max 0, leaves a sum of 0.
    # Two passes of path A and of path B (block_r=16), the split (3 slices: the merge pads a
    # fourth) and the default plan of long columns (dim 0 of a contiguous (5000, 8): split
    # under the interpreter, the exchange on a GPU).
    for dt in ("float32", "bfloat16"):
        cases += [Case(kind="shifted", layout="contiguous", dim=-1, shape=(6, 37), block_r=16,
                       dtype=dt),
                  Case(kind="shifted", layout="transposed", dim=-1, shape=(6, 37), block_r=16,
                       dtype=dt),
                  Case(kind="shifted", layout="transposed", dim=-1, shape=(6, 37), block_r=16,
                       splits=3, dtype=dt),
                  Case(kind="shifted", layout="contiguous", dim=0, shape=(5000, 8), dtype=dt)]
    return cases


@register(W, "forward.extreme", tier="kernel", uses=SOFTMAX, cases=_extreme_cases,
          doc="huge finite logits (fp16 near 65504, fp32 near 1e4), logits near -1e31 and near "
              "-200, identical rows, -inf runs")
def forward_extreme(ctx, impl, case):
    torch = ctx.torch
    dtype = getattr(torch, case.dtype)
    m, n = case.get("shape", (4, 33))
    dim = case.get("dim", -1)
    if case.kind == "huge":
        # Values spread over [0.9, 1] * magnitude: exp(x) overflows without the max shift (a
        # positive magnitude), or every logit lies below any finite tail padding (-1e31).
        base = ctx.rand_like_distinct((m, n), "float64", 0.9, 1.0) * case.magnitude
    elif case.kind == "identical":
        base = torch.full((m, n), 3.25, dtype=torch.float64, device=ctx.torch_device)
    elif case.kind == "shifted":
        base = ctx.randn((m, n), "float64", scale=3.0, shift=-200.0)
    else:
        # Masked logits: a run of -inf longer than one block at the start of each row (the
        # running max of the two-pass walk is -inf for a whole block), then real values.
        n = 50
        base = ctx.randn((m, n), "float64", scale=3.0)
        base[:, :20] = float("-inf")
        base[1, 25:40] = float("-inf")
    base = base.to(dtype)
    x = base if case.layout == "contiguous" else base.t().contiguous().t()
    knobs = {k: case[k] for k in ("block_r", "splits") if case.get(k) is not None}
    with launches.recording() as launched:
        out = _call(ctx, impl, x, dim, **knobs)
    extra = []
    probe = (_minus_inf_probe(impl, x, dim, knobs, launched)
             if bool(x.detach().isneginf().any()) else None)
    if case.get("block_r"):
        n_r, splits = x.shape[dim % 2], case.get("splits") or 1
        per_split = (math.ceil(math.ceil(n_r / splits) / case.block_r) * case.block_r
                     if splits > 1 else 0)
        extra = _first_pass_wrong(x, dim, case.block_r, per_split, probe)
    _compare(ctx, x, dim, out, [*extra, _dim0_setup_wrong(impl, x, dim, knobs),
                                _shared_max_probe(impl, x, dim, knobs),
                                _max_after_log2e(impl, x, dim)], probe)
    _knobs_ignored(launched, dim, knobs)


def _max_after_log2e_replay(rows):
    """Path A's one-block numerator exp2(x * LOG2E - m) (the max subtracted after the scaling:
    exp(x) * 2^-m), one softmax row per line, in float64 with float32's range: past its
    largest number inf, below its smallest 0, then numerator / sum (inf / inf, 0 / 0: NaN)."""
    import torch

    f32 = torch.finfo(torch.float32)
    m = rows.amax(dim=1, keepdim=True)
    numerator = torch.exp2(rows * (1.0 / math.log(2.0)) - m)
    numerator = torch.where(numerator > f32.max, torch.inf, numerator)
    numerator = torch.where(numerator < f32.smallest_normal * 2.0 ** -23, 0.0, numerator)
    return numerator / numerator.sum(dim=1, keepdim=True)


def _max_after_log2e(impl, x, dim):
    """Diagnosis: exp2(x * LOG2E - m[:, None]) for exp2((x - m[:, None]) * LOG2E): the max
    subtracted after the scaling, so the numerator is exp(x) * 2^-m, right while it fits
    float32. Named when the output is that replay's and path A's softmax of the probe rows
    [100..97], [300..297], [-200..-203] is right on the first and last and not finite on the
    middle one (2^(300 log2 e - 300) = 2^133 overflows); a missing shift overflows on the
    first (exp(100)) and underflows on the last, a max seeded with 0 breaks the last."""
    import torch

    from checks.compare import tolerance_for

    tol = tolerance_for(x.dtype)

    def diagnose(got, expected, bad):
        shape = list(x.shape)
        shape.append(shape.pop(dim % 2))
        model = _max_after_log2e_replay(_rows_of(x, dim)).reshape(shape).movedim(-1, dim % 2)
        if (_close(model, expected, tol.rtol, tol.atol)
                or not _close(got, model, 4 * tol.rtol, 4 * tol.atol + 1e-7)):
            return None
        q = torch.tensor([[100.0, 99.0, 98.0, 97.0], [300.0, 299.0, 298.0, 297.0],
                          [-200.0, -201.0, -202.0, -203.0]], dtype=torch.float64)
        try:
            with torch.no_grad():
                out = impl.softmax(q.to(device=x.device, dtype=torch.float32), -1, path="A")
            seen = out.detach().double().cpu()
        except Exception:  # noqa: BLE001 - the probe fails too: no diagnosis from it
            return None
        # (1e-3: x * LOG2E rounded to float32 before the shift is off by up to 2e-5 in the
        # exponent at |x| = 200, above float32's tolerance; the probe asks right vs not finite)
        right = [_close(seen[r], q[r].softmax(dim=0), 1e-3, 0.0) for r in range(3)]
        if not (right[0] and right[2] and not bool(seen[1].isfinite().all())):
            return None
        return ("max subtracted after the LOG2E scaling: the output matches exp2(x * LOG2E - m), "
                "which is exp(x) * 2^-m, not exp(x - m): the softmax only while it fits float32 "
                "(the row [300, 299, 298, 297] overflows, 2^(300 * 1.4427 - 300) = 2^133, while "
                "[100, 99, 98, 97] comes out right, so the max is there but in the wrong place); "
                "subtract first, then scale: exp2((x - m[:, None]) * LOG2E)")

    return diagnose


def _minus_inf_probe(impl, x, dim, knobs, launched):
    """A probe for "running max still -inf": the learner's softmax of x's softmax rows copied
    into a contiguous (rows, n_r) tensor, dim=-1, on the path the failing call launched and with
    its knobs. The guard's mistake NaNs the same rows there (the same values, blocks and path);
    a read from the wrong cells (a stride ignored) cannot happen on unit strides, so the probe
    then comes out right. A row of finite logits goes after x's rows and must come out right
    (a first pass that NaNs every row, a flipped rescale, NaNs it too). Called with the rows the
    failing call NaN'd; False when the probe raises or differs."""

    def probe(nan_rows) -> bool:
        import torch

        names = [launch.name for launch in launched]
        path = ("A" if names and all(n == "softmax_along_kernel" for n in names)
                else "B" if names and all(n.startswith("softmax_across") for n in names)
                else None)
        rows = x.detach().movedim(dim % 2, -1).reshape(-1, x.shape[dim % 2])
        # and one more row of finite logits, which the guard's mistake leaves right (a first
        # pass that NaNs every row, as a flipped rescale does, NaNs it too)
        finite = torch.linspace(-1.0, 1.0, rows.shape[1], device=rows.device, dtype=rows.dtype)
        rows = torch.cat([rows, finite[None, :]]).contiguous()
        nan_rows = torch.cat([nan_rows.cpu(), torch.zeros(1, dtype=torch.bool)])
        extra = dict(knobs, **({"path": path} if path else {}))
        try:
            with torch.no_grad():
                out = impl.softmax(rows, -1, **extra)
            got = out.detach().double().cpu()
        except Exception:  # noqa: BLE001 - the probe fails too: no diagnosis from it
            return False
        if tuple(got.shape) != tuple(rows.shape):
            return False
        expected = _softmax64(rows, -1)
        return bool(torch.equal((got.isnan() & ~expected.isnan()).any(dim=1), nan_rows))

    return probe


@register(W, "forward.fresh_output", tier="kernel", uses=SOFTMAX,
          cases=[Case(layout=lay, shape=(6, 37), dim=-1, dtype="float32")
                 for lay in ("contiguous", "transposed")],
          doc="two calls of one shape: the first output keeps its values (no cached buffer)")
def forward_fresh_output(ctx, impl, case):
    x = make_view(ctx, case.layout, case.shape, case.dtype)
    out = _call(ctx, impl, x, case.dim)
    _compare(ctx, x, case.dim, out)
    x2 = make_view(ctx, case.layout, case.shape, case.dtype)
    out2 = _call(ctx, impl, x2, case.dim)
    _compare(ctx, x2, case.dim, out2)
    ctx.assert_close(out, _softmax64(x, case.dim),
                     name="the first call's output, after a second call", diagnose=[
        always("the second call overwrote the first call's output: allocate a fresh output on "
               "every call (no cached buffer)")])


@register(W, "forward.rows_sum_to_one", tier="kernel", uses=SOFTMAX,
          cases=[Case(layout=lay, dim=dim, dtype=dt) for lay in ("contiguous", "transposed")
                 for dim in (-1, 0) for dt in DTYPES],
          doc="every softmax row sums to 1 within its dtype's rounding budget")
def rows_sum_to_one(ctx, impl, case):
    x = make_view(ctx, case.layout, (16, 257), case.dtype, scale=2.0)
    out = _call(ctx, impl, x, case.dim)
    try:
        ctx.assert_rows_sum_to_one(out, case.dim, case.dtype,
                                   hint="the denominator must be the sum over the real elements "
                                        "of the row")
    except CheckFailed as exc:
        # A mistake whose output the values checks name gets the same name here: their
        # comparison (the one _compare makes), asked only for its hint.
        try:
            _compare(ctx, x, case.dim, out)
        except CheckFailed as values:
            exc.hint = values.hint or exc.hint
        raise


@register(W, "bad_calls", tier="kernel", uses=SOFTMAX,
          doc="bad calls raise TypeError/ValueError naming the argument, before any launch")
def bad_calls(ctx, impl, case):
    torch = ctx.torch
    x = ctx.randn((4, 8))
    f = impl.softmax
    ctx.expect_error(f, ctx.randn((8,)), mentions=["2-D"], what="1-D input")
    ctx.expect_error(f, ctx.randn((2, 3, 4)), mentions=["2-D"], what="3-D input")
    ctx.expect_error(f, torch.ones((2, 3), dtype=torch.int32, device=ctx.torch_device),
                     mentions=["x", "dtype"], what="integer dtype")
    ctx.expect_error(f, x.double(), mentions=["x", "dtype"], what="float64 dtype")
    ctx.expect_error(f, [[1.0, 2.0]], mentions=["x"], what="x not a tensor")
    ctx.expect_error(f, x.to_sparse(), mentions=["x", "dense"], what="sparse x")
    # a view whose memory holds the values before a lazy negation (`z.conj().imag` makes one)
    ctx.expect_error(f, torch._neg_view(x), mentions=["x", "resolve_neg"],
                     what="lazily negated view")
    ctx.expect_error(f, x, 2, mentions=["dim"], what="dim=2 out of range")
    ctx.expect_error(f, x, -3, mentions=["dim"], what="dim=-3 out of range")
    ctx.expect_error(f, x, 0.5, mentions=["dim"], what="dim not an int")
    ctx.expect_error(f, x, block_r=100, mentions=["block_r"], what="block_r not a power of two")
    ctx.expect_error(f, x, block_r=0, mentions=["block_r"], what="block_r = 0")
    ctx.expect_error(f, x, block_i=0, mentions=["block_i"], what="block_i = 0")
    ctx.expect_error(f, x, block_i=3, mentions=["block_i"], what="block_i not a power of two")
    ctx.expect_error(f, x, block_r=65536, block_i=2, mentions=["block_r", "block_i"],
                     what="tile too large for registers")
    ctx.expect_error(f, x, num_warps=3, mentions=["num_warps"], what="num_warps = 3")
    ctx.expect_error(f, x, num_warps=32, mentions=["num_warps"], what="num_warps = 32")
    ctx.expect_error(f, x, num_stages=0, mentions=["num_stages"], what="num_stages = 0")
    ctx.expect_error(f, x, path="C", mentions=["path"], what="unknown path")
    ctx.expect_error(f, x, splits=0, mentions=["splits"], what="splits = 0")
    ctx.expect_error(f, x, splits=65, mentions=["splits"], what="splits = 65")
    ctx.expect_error(f, x, splits=2, path="A", mentions=["splits"], what="splits on path A")
    ctx.expect_error(f, x, exchange="yes", mentions=["exchange"], what="exchange not a bool")
    ctx.expect_error(f, x, exchange=True, mentions=["exchange", "path"],
                     what="exchange on path A")
    ctx.expect_error(f, x.t(), exchange=True, splits=2, mentions=["exchange", "splits"],
                     what="exchange with splits")
    # rows of 4 positions make 1 slice on a GPU; under the interpreter no exchange runs at all
    ctx.expect_error(f, x.t(), exchange=True, mentions=["exchange"],
                     what="exchange where it cannot run")
    ctx.expect_error(f, x, smem="yes", mentions=["smem"], what="smem not a bool")
    ctx.expect_error(f, x.t(), smem=True, exchange=False, mentions=["smem", "exchange"],
                     what="smem without the exchange")
    ctx.expect_error(f, x, smem=True, mentions=["path"], what="smem on path A")
    if ctx.device == "cuda":
        ctx.expect_error(f, ctx.randn((1000, 16)).t(), exchange=True, block_r=2,
                         mentions=["exchange", "slices"], what="exchange with too many slices")
        ctx.expect_error(f, ctx.randn((256, 1000)).t(), smem=True, block_r=32,
                         mentions=["smem", "block_r"], what="smem with slices under 64")
        ctx.expect_error(f, ctx.randn((256, 1001)).t(), smem=True,
                         mentions=["smem", "16-byte"], what="smem on unaligned rows")
        # 44 rows of float16 at a row stride of 48, in a buffer that ends right after the last
        # row's 44th element: the copy's last 16-byte run (rows 40-47) would read past it
        tight = ctx.randn((599 * 48 + 44,)).half().as_strided((44, 600), (1, 48))
        ctx.expect_error(f, tight, smem=True, mentions=["smem", "storage"],
                         what="smem where the last 16-byte run ends past the storage")
        ctx.expect_error(f, x.cpu(), mentions=["cuda"], what="CPU tensor on a GPU run")


# ---------------------------------------------------------------------------------------------
# CUDA tier: the exchange, streams, graphs, no hidden copy, 64-bit offsets
# ---------------------------------------------------------------------------------------------
def _exchange_cases(device: str) -> list[Case]:
    # block_r small enough for many slices per strip, ragged in both dimensions
    cases = [Case(kind="random", layout="transposed", shape=(300, 777), dim=-1, block_r=64,
                  dtype=dt) for dt in DTYPES]
    cases += [Case(kind="random", layout="contiguous", shape=(1000, 37), dim=0, block_r=128,
                   dtype="float32"),
              Case(kind="random", layout="broadcast_rows", shape=(777, 300), dim=0, block_r=32,
                   dtype="bfloat16"),
              # no knobs: the launcher's own choice for long float32 rows of a transposed view
              # (tests/test_launch_rules.py checks that the choice is the exchange)
              Case(kind="random", layout="transposed", shape=(100, 4097), dim=-1, block_r=None,
                   dtype="float32"),
              Case(kind="masked", layout="transposed", shape=(40, 600), dim=-1, block_r=64,
                   dtype="float32"),
              Case(kind="huge", layout="transposed", shape=(40, 600), dim=-1, block_r=64,
                   dtype="float32")]
    # The exchange in shared memory (the Gluon kernel): ragged slices and strips, -inf slices,
    # logits near 1e4, a plain contiguous dim=0 call, and the launcher's own choice for long
    # 16-bit rows of a transposed view (on compute capability 9.x).
    cases += [Case(kind="padded", layout="transposed", shape=(300, 777), dim=-1, block_r=128,
                   smem=True, dtype=dt) for dt in DTYPES]
    cases += [Case(kind="random", layout="contiguous", shape=(1000, 40), dim=0, block_r=128,
                   smem=True, dtype="float32"),
              Case(kind="random", layout="transposed", shape=(100, 4097), dim=-1, block_r=None,
                   dtype="bfloat16"),
              Case(kind="masked", layout="transposed", shape=(40, 600), dim=-1, block_r=128,
                   smem=True, dtype="float16"),
              Case(kind="huge", layout="transposed", shape=(40, 600), dim=-1, block_r=128,
                   smem=True, dtype="float16")]
    return cases


@register(W, "cuda.exchange", tier="cuda", uses=SOFTMAX, cases=_exchange_cases,
          doc="path B's exchange, in registers and in shared memory: slices of a strip swap "
              "statistics and wait for each other (needs programs running at once: a GPU)")
def cuda_exchange(ctx, impl, case):
    ctx.require_cuda()
    torch = ctx.torch
    if case.kind == "random":
        x = make_view(ctx, case.layout, case.shape, case.dtype)
    elif case.kind == "padded":
        # the first m columns of a wider tensor, transposed: rows of 16-element aligned storage
        # (what the shared-memory copy needs) and m = 300 rows, not a whole number of 16 bytes
        m, n = case.shape
        x = ctx.randn((n, -(-m // 16) * 16), case.dtype, scale=3.0)[:, :m].t()
    else:
        m, n = case.shape
        if case.kind == "huge":  # logits near 1e4: exp overflows without every max shift
            base = ctx.rand_like_distinct((m, n), "float64", 0.9, 1.0) * 1e4
        else:
            # -inf over whole slices: a row's first slices, and a slice in the middle of
            # another row (both rows keep finite values elsewhere)
            base = ctx.randn((m, n), "float64", scale=3.0)
            base[:, :150] = float("-inf")
            base[1, 256:384] = float("-inf")
        x = base.to(getattr(torch, case.dtype)).t().contiguous().t()
    # No block_r: the launcher's default plan, which picks the exchange for this shape.
    knobs = {} if case.block_r is None else {"exchange": True, "block_r": case.block_r}
    if case.get("smem"):
        knobs["smem"] = True
    out = _call(ctx, impl, x, case.dim, **knobs)
    name = (f"softmax(x, dim={case.dim}, **{knobs}) of x {tuple(x.shape)} with strides "
            f"{tuple(x.stride())}")
    ctx.assert_close(out, _softmax64(x, case.dim), name=name, diagnose=[
        lambda g, e, bad: "slices disagree: each must wait until every slice of its strip has "
                          "published (max, sum), then scale exp(x - m) by exp(m - M) / S"])


@register(W, "cuda.stream", tier="cuda", uses=SOFTMAX,
          cases=[Case(layout=lay, shape=(512, 4096), dtype="float16")
                 for lay in ("contiguous", "transposed")]
          # float32 transposed rows of 4096: the exchange (atomics and a wait on the stream)
          + [Case(layout="transposed", shape=(512, 4096), dtype="float32")],
          doc="launches on the caller's current (non-default) stream")
def cuda_stream(ctx, impl, case):
    ctx.require_cuda()
    torch = ctx.torch
    from checks.context import call_learner

    source = make_view(ctx, case.layout, case.shape, case.dtype)
    expected = _softmax64(source, -1)
    stream = torch.cuda.Stream()
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        busy = torch.randn((4096, 4096), device="cuda")
        _ = busy @ busy  # keep the side stream busy so a launch on another stream would race
        # x is written on the side stream, after the busy work, in the same layout as source
        x = source * 1 if case.layout == "contiguous" else (source.t() * 1).t()
        _require_regions(ctx, impl, x)
        out = call_learner(impl.softmax, x, -1, label="softmax")
    stream.synchronize()
    ctx.assert_close(out, expected, name="softmax on a side stream",
                     diagnose=[always("launched on the default stream instead of "
                                      "the current one (read x before it was written)")])


@register(W, "cuda.graph", tier="cuda", uses=SOFTMAX,
          cases=[Case(layout=lay, shape=(256, 1000), dim=dim, dtype="bfloat16")
                 for lay in ("contiguous", "transposed") for dim in (-1, 0)]
          # transposed rows of 5000: the exchange (float32 in registers, bfloat16 in shared
          # memory), whose zeroed counters the graph must reset on every replay
          + [Case(layout="transposed", shape=(64, 5000), dim=-1, dtype=dt)
             for dt in ("float32", "bfloat16")],
          doc="captured in a CUDA graph, replayed on new input values")
def cuda_graph(ctx, impl, case):
    ctx.require_cuda()
    torch = ctx.torch
    from checks.context import call_learner

    x = make_view(ctx, case.layout, case.shape, case.dtype)
    _require_regions(ctx, impl, x, case.dim)
    call_learner(impl.softmax, x, case.dim, label="softmax (warm-up)")  # compile first
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        call_learner(impl.softmax, x, case.dim, label="softmax (warm-up on a side stream)")
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            out = impl.softmax(x, case.dim)
    except Exception as exc:  # noqa: BLE001 - learner code may fail in capture in any way
        ctx.fail(f"capturing softmax in a CUDA graph raised {type(exc).__name__}: {exc}",
                 hint="no host synchronisation, .item() or CPU work on device data inside the "
                      "launcher")
    for replay in range(2):
        fresh = make_view(ctx, "contiguous", case.shape, case.dtype)
        x.copy_(fresh)  # new values in the captured input's storage, same view
        graph.replay()
        torch.cuda.synchronize()
        ctx.assert_close(out, _softmax64(fresh, case.dim), name=f"graph replay {replay}",
                         diagnose=[always("the replay computed from stale values: "
                                          "the captured kernel must read x where it lives")])


_COPY_LAYOUTS = ("transposed", "stepped", "broadcast_rows", "sliced")


def _no_input_copy(ctx, impl, x) -> None:
    """softmax(x) allocates one tensor of x's size, its output: a view read in place."""
    from checks.context import call_learner

    _call(ctx, impl, x, -1)  # compile, and the usual contract, outside the measured call
    # (Under the interpreter, the host copies Triton makes of every tensor a kernel takes are
    # made inside the launch, which track_allocations leaves out.)
    with ctx.track_allocations() as log:
        out = call_learner(impl.softmax, x, -1, label="softmax")
    big = [s for s, _ in log if math.prod(s) >= x.numel()]
    if len(big) != 1:
        ctx.fail(f"softmax allocated {len(big)} tensors of x's size {tuple(x.shape)} "
                 f"(allocations: {log[:6]})",
                 hint="the input was copied (.contiguous(), .clone(), a reshape that copies): "
                      "pass x's strides to the kernel and read the view in place")
    _compare(ctx, x, -1, out)


@register(W, "forward.no_input_copy", tier="kernel", uses=SOFTMAX,
          cases=[Case(layout=lay, dtype="float16") for lay in _COPY_LAYOUTS],
          doc="reads the view in place (transposed, stepped, broadcast, sliced): the only "
              "allocation of x's size is the output")
def forward_no_input_copy(ctx, impl, case):
    _no_input_copy(ctx, impl, make_view(ctx, case.layout, (64, 128), case.dtype))


@register(W, "cuda.no_input_copy", tier="cuda", uses=SOFTMAX,
          cases=[Case(layout=lay, dtype="float16") for lay in _COPY_LAYOUTS],
          doc="reads the view in place: the only full-size allocation is the output")
def cuda_no_input_copy(ctx, impl, case):
    ctx.require_cuda()
    _no_input_copy(ctx, impl, make_view(ctx, case.layout, (1024, 2048), case.dtype))


@register(W, "cuda.int64_offsets", tier="cuda", uses=SOFTMAX,
          cases=[Case(view=v, dim=dim) for v, dim in (("rows", -1), ("transposed", -1),
                                                      ("transposed", 0))],
          doc="offsets past 2^31 elements (a 4.3 GB float16 tensor): int64 address arithmetic",
          timeout=600)
def cuda_int64_offsets(ctx, impl, case):
    ctx.require_cuda()
    torch = ctx.torch
    # (32776, 65536) float16: 2^31 + 2^19 elements, so the last rows start past 2^31.
    rows, cols = 32776, 65536
    gen = torch.Generator(device="cuda").manual_seed(ctx.case_seed)
    try:
        base = torch.randn((rows, cols), device="cuda", dtype=torch.float16, generator=gen)
    except torch.cuda.OutOfMemoryError:
        raise Unavailable("needs about 20 GB of free GPU memory") from None
    x = base if case.view == "rows" else base.t()
    out = _call(ctx, impl, x, case.dim)
    # Compare whole softmax rows at the far ends of the address range (float64 on the CPU).
    d = case.dim % 2
    n_rows = x.shape[1 - d]
    picks = sorted({0, 1, n_rows // 2, n_rows - 2, n_rows - 1})
    for k in picks:
        got = out.select(1 - d, k)
        expected = x.select(1 - d, k).double().cpu().softmax(dim=0)
        ctx.assert_close(got, expected, name=f"softmax row {k} of {n_rows}",
                         diagnose=[always("offsets overflowed 32 bits: widen the "
                                          "program id (and every index that multiplies a "
                                          "stride) to int64 before the multiply")])
    del base, x, out
    torch.cuda.empty_cache()
