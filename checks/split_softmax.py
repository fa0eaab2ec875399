"""Checks for the split softmax workshop: `partial_stats`, `merge_stats`, `normalize` and
`split_softmax`.

References are float64 computations on the CPU, made here from the inputs alone: the softmax
itself, and the per-chunk statistics (m_c, s_c) of the same chunks the kernel uses, merged with
the CPU model of workshop 4 (`references.online_normalization`). Interpreter runs use widths up
to 4097 with small chunks (several chunks per row, a ragged last chunk); GPU runs go to 262144.

A failing comparison is matched against models of the classic mistakes, computed from the same
input in float64 (denominators merged without rescaling or with the rescale factor inverted, a
chunk-local max in the normalization, another row's statistics): when the output equals one of
them, the hint names it. Where the model needs what the learner's code did (an unmasked last
chunk, a padded merge lane), the diagnosis asks the learner's own stage on a chosen input and
names the mistake only if that stage shows it.
"""

from __future__ import annotations

from checks.compare import always
from checks.context import CACHED_BUFFER_HINT
from checks.core import Case, CheckFailed, register

W = "split_softmax"
DTYPES = ("float16", "bfloat16", "float32")
STAGES = ("partial_stats", "merge_stats", "normalize", "split_softmax")

# Statistics are float32 whatever x's dtype. m is a maximum of values that float32 holds
# exactly, so it must match exactly. s sums up to 16384 terms exp(x - m), each within a few ulp
# (hardware exp), in a tree: about log2(n) * eps32 / 2 ~ 1e-6 relative; merging C partial sums
# adds as much again. 1e-5 is ~10x that and still catches any wrong term (>= 1/16384 ~ 6e-5
# of a chunk's sum whenever one term is dropped or doubled in a chunk of values of similar size).
STAT_RTOL = 1e-5


# ---------------------------------------------------------------------------------------------
# Float64 references, computed in the check from the input alone
# ---------------------------------------------------------------------------------------------
def _chunk_tiles(x64, chunk: int):
    """x64 (M, N) as (M, C, chunk) tiles, the last one padded with -inf as a masked load pads
    it."""
    import torch

    n_rows, n_cols = x64.shape
    n_chunks = -(-n_cols // chunk)
    padded = torch.full((n_rows, n_chunks * chunk), float("-inf"), dtype=torch.float64)
    padded[:, :n_cols] = x64
    return padded.reshape(n_rows, n_chunks, chunk)


def _chunk_stats64(x64, chunk: int, base_factor: float = 1.0, shift_floor: float | None = None,
                   shift_factor: float = 1.0):
    """Per (row, chunk) max and sum of exp(x - max), float64, shape (M, C). Empty chunk state
    is (-inf, 0), as in workshop 4. Three mistakes' models: base_factor gives the sums of
    exp(base_factor * (x - max)) (a wrong exponent base, see _exponent_models); shift_floor
    shifts by max(m, shift_floor) instead (the shift clamped at 0); shift_factor shifts by
    shift_factor * max (exp2(x * log2(e) - m): the max left in base-2 units, factor ln 2)."""
    import torch

    tiles = _chunk_tiles(x64, chunk)
    m = tiles.amax(dim=2)
    if shift_floor is None:
        shift = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    else:
        shift = m.clamp_min(shift_floor)
    s = torch.exp(base_factor * (tiles - shift_factor * shift[:, :, None])).sum(dim=2)
    return m, s


def _workshop4():
    """The CPU merge of workshop 4 (imported here, in the check body, never at module import)."""
    import importlib

    try:
        return importlib.import_module("references.online_normalization")
    except ImportError:
        return None


def _merge_cpu(ctx, m64, s64):
    """Fold each row's chunk states left to right with workshop 4's `merge`, in float64."""
    import torch

    on = _workshop4()
    if on is None:  # the CPU model is not there (a stripped checkout): the same fold, inline
        ctx.note("references.online_normalization not found; merged with an inline float64 fold")
        m_row = m64.amax(dim=1)
        shift = torch.where(torch.isinf(m_row), torch.zeros_like(m_row), m_row)
        return m_row, (s64 * torch.exp(m64 - shift[:, None])).sum(dim=1)
    m_out, s_out = [], []
    for m_list, s_list in zip(m64.tolist(), s64.tolist()):
        state = on.identity()
        for m, s in zip(m_list, s_list):
            state = on.merge(state, on.State(m, s))
        m_out.append(state.m)
        s_out.append(state.s)
    return torch.tensor(m_out, dtype=torch.float64), torch.tensor(s_out, dtype=torch.float64)


def _softmax64(x):
    return x.detach().to("cpu").double().softmax(dim=-1)


def _chunk_for(impl, case, x) -> int | None:
    """The chunk the implementation uses for `case` (for the diagnoses only)."""
    if case.get("chunk") is not None:
        return case.chunk
    default = getattr(impl, "default_chunk", None)
    if default is None:
        return None
    sm = 132
    if x.device.type == "cuda":
        import torch

        sm = torch.cuda.get_device_properties(x.device).multi_processor_count
    try:
        return int(default(x.shape[0], x.shape[1], sm))
    except Exception:  # noqa: BLE001 - a learner's helper may differ; no diagnosis then
        return None


# ---------------------------------------------------------------------------------------------
# Models of the classic mistakes, for the hints
# ---------------------------------------------------------------------------------------------
# A hint names a mistake only when the failure is what that mistake gives: each diagnosis below
# rebuilds the mistake's result (in float64, or by asking the learner's own stage on a chosen
# input) and compares; a symptom several mistakes share (NaN, too small a row) is not enough.
def _close(got, model, dtype: str, rtol: float | None = None) -> bool:
    """Does `got` equal `model` within the dtype's output tolerance (see compare.agrees)?"""
    from checks.compare import agrees, tolerance_for

    tol = tolerance_for(dtype)
    if got.shape != model.shape:
        return False
    return bool(agrees(got, model, tol.rtol if rtol is None else rtol, tol.atol).all())


def _explains(got, model, bad, dtype: str) -> bool:
    """Does `model` explain a failure: `got` equals it, and at some wrong element it is a
    number clearly above 0? (An output of zeros or NaN is what many mistakes give: a model
    that is ~0 or NaN wherever the output is wrong matches it without saying which.)"""
    import torch

    from checks.compare import tolerance_for

    at_bad = model[bad]
    informative = bool((at_bad.isfinite() & (at_bad.abs() > 2 * tolerance_for(dtype).atol)).any())
    # rounded as the kernel's store rounds it (a model past float16's range is inf there too)
    stored = model.to(getattr(torch, dtype)).double()
    return informative and _close(got, stored, dtype)


def _misfit(got, model, dtype: str) -> float:
    """How far `got` lies from `model` (rounded as the store rounds it), in tolerances: the
    largest |got - model| / (atol + rtol * |model|) over the elements where both are finite."""
    import torch

    from checks.compare import tolerance_for

    tol = tolerance_for(dtype)
    stored = model.to(getattr(torch, dtype)).double()
    both = got.isfinite() & stored.isfinite()
    if not bool(both.any()):
        return 0.0
    err = (got[both] - stored[both]).abs() / (tol.atol + tol.rtol * stored[both].abs())
    return float(err.max())


def _inverted_sums(m, s):
    """sum_c s_c * exp(m_row - m_c) per row, float64: the merge with its rescale factor upside
    down. inf where float32 overflows (as the kernel's sum does); NaN for a chunk of only -inf
    (0 * exp(inf)), as in the kernel."""
    import torch

    m_row = m.amax(dim=1, keepdim=True)
    total = (s * torch.exp(m_row - m)).sum(dim=1)
    too_big = total > torch.finfo(torch.float32).max
    return torch.where(too_big, torch.full_like(total, float("inf")), total)


HINT_INVERTED = ("rescale factor inverted: merge_stats scaled each chunk's sum by "
                 "exp(m_row - m_c) >= 1; it must be exp(m_c - m_row) <= 1 (the chunk's maximum "
                 "minus the row's), which shrinks the sums of chunks whose maximum lies below "
                 "the row's")


LOG2E = 1.4426950408889634
# {where}: "" or where the mistake shows (" in normalize", ...).
HINT_EXP_LOG2E = ("tl.exp given the log2(e) factor{where}: each term is e^(t * log2(e)) for "
                  "its exponent t (x - m, or m_c - m_row in the merge); use tl.exp(t) or "
                  "tl.exp2(t * log2(e)), not both")
HINT_EXP2_NO_LOG2E = ("exp2 without log2(e){where}: each term is 2^t for its exponent t (x - m, "
                      "or m_c - m_row in the merge); exp(t) = exp2(t * log2(e))")
# Each wrong base as the factor it multiplies the exponent by, with its hint: exp(f * t).
# exp2(t / log2(e)) = exp2(t * ln 2): ln 2 where log2(e) belongs (the seventh learner audit's 02,
# silent in every check): each term is e^(t * ln(2)^2) = e^(0.48 t).
HINT_LN2_FOR_LOG2E = ("divided by log2(e) (or multiplied by ln 2){where}: exp2(t / log2(e)) is "
                      "e^(t * ln(2)^2) = e^(0.48 t) for its exponent t (x - m, or m_c - m_row in "
                      "the merge); exp(t) = exp2(t * log2(e)): multiply by log2(e) = 1.4427")
WRONG_BASES = ((LOG2E, HINT_EXP_LOG2E), (1 / LOG2E, HINT_EXP2_NO_LOG2E),
               ((1 / LOG2E) ** 2, HINT_LN2_FOR_LOG2E))
# exp2(x * log2(e) - m): x converted to base-2 units, the max subtracted after, still in
# natural units: exp(x - m * ln 2), off by the factor exp(m * (1 - ln 2)) = (e / 2)^m.
LN2 = 1 / LOG2E
HINT_SHIFT_NO_LOG2E = ("max subtracted outside the log2(e) factor{where}: exp2(x * log2(e) - m) "
                       "is exp(x - m * ln 2), off by (e/2)^m; subtract first, then convert: "
                       "exp2((x - m) * log2(e))")
HINT_EXP_SIGN = ("exponent's sign flipped in normalize: y = exp(m_row - x) / s_row, which "
                 "grows as x falls below the row's maximum; the exponent is x - m_row (<= 0, "
                 "so every y <= 1)")
# exp2(t) * log2(e) for exp2(t * log2(e)): the factor multiplied onto exp2's result, so each
# term is log2(e) * 2^t (the audit's S1, S2).
HINT_LOG2E_OUTSIDE = ("log2(e) outside exp2{where}: each term is log2(e) * 2^t for its exponent t "
                      "(x - m, or m_c - m_row in the merge): exp2 was given t alone and its "
                      "result multiplied by log2(e); the factor belongs inside, "
                      "exp(t) = exp2(t * log2(e))")
# normalize's numerator without the row maximum: exp(x) / s_row (the audit's S4).
HINT_NORMALIZE_NO_SHIFT = ("max shift left out in normalize: y = exp(x) / s_row, every row off by "
                           "the constant factor exp(m_row); s_row sums exp(x - m_row), so the "
                           "numerator must be exp(x - m_row): exp2((x - m_row) * log2(e))")
# The division folded into the base-2 exponent with the natural log: 2^(-ln s) = s^(-ln 2)
# (the audit's S7).
HINT_LN_S_IN_EXP2 = ("ln(s_row) subtracted inside exp2: exp2(t * log2(e) - ln(s_row)) divides "
                     "by 2^ln(s_row) = s_row^0.693, not by s_row (the exponent is in base-2 "
                     "units, ln is not); subtract log2(s_row) (tl.log2) there, or multiply by "
                     "1 / s_row")
# The seventh learner audit's 08 (the row scale named, not the mistake): log2(s_row) subtracted
# inside the natural-units difference, exp2((t - log2(s_row)) * log2(e)) = e^t / s_row^log2(e).
HINT_LOG2_S_NATURAL = ("log2(s_row) subtracted in natural units in normalize: exp2((x - m_row - "
                       "log2(s_row)) * log2(e)) divides by e^log2(s_row) = s_row^1.4427, not by "
                       "s_row; inside (...) * log2(e) the log must be natural: tl.log(s_row) (or "
                       "multiply by 1 / s_row)")
# The seventh learner audit's 07 (silent, then misleading): 1 / s_row multiplied inside the
# exponent, exp2((x - m_row) * log2(e) * inv_s) = e^(t / s_row).
HINT_INV_S_IN_EXPONENT = ("1 / s_row multiplied inside the exponent in normalize: exp2((x - m_row) "
                          "* log2(e) * inv_s) is e^((x - m_row) / s_row); the division belongs "
                          "outside exp2: exp2((x - m_row) * log2(e)) * inv_s")
# The seventh learner audit's 06 (silent): exp2(x * log2(e) - m_row * log2(e)), right on paper,
# but each product is rounded in float32 before the difference: for |x| near 1e4 each carries
# ~|x| * 2^-24 * 1.44 ~ 1e-3, and the difference (near 0) keeps it all.
HINT_LOG2E_DISTRIBUTED = ("log2(e) distributed over the difference in normalize: exp2(x * log2(e) "
                          "- m_row * log2(e)) rounds each product in float32 before subtracting, "
                          "so for large |x| (1e4 here) each carries an error of ~|x| * 2^-24 and "
                          "the difference keeps it; subtract first, then scale: exp2((x - m_row) "
                          "* log2(e))")
# exp2(t - m * log2(e)) for exp2((t - m) * log2(e)): `*` binds tighter than `-`, so log2(e)
# multiplies the maximum alone and each term is 2^t / e^m = exp(t ln 2 - m) (a learner audit's
# 08, 09, 10: silent in each stage).
HINT_LOG2E_ON_MAX = ("log2(e) multiplies the max alone{where}: exp2({t} - {m} * log2(e)) is "
                     "exp({t} * ln 2 - {m}), since * binds tighter than -; parenthesise the "
                     "difference: exp2(({t} - {m}) * log2(e))")
LOG2E_ON_MAX_TERMS = {"partial_stats": ("x", "m"), "merge_stats": ("m_c", "m_row"),
                      "normalize": ("x", "m_row")}


def _log2e_on_max_hint(stage: str) -> str:
    t, m = LOG2E_ON_MAX_TERMS[stage]
    where = " in merge_stats' rescale factor" if stage == "merge_stats" else f" in {stage}"
    return HINT_LOG2E_ON_MAX.format(where=where, t=t, m=m)


# tl.max for tl.sum in partial_stats: the largest term, exp(m - m) = 1, is all that is left (the
# audit's 11; stats.pipeline then took it for a merge that leaves the sums out).
HINT_MAX_FOR_SUM = ("every partial s is 1: tl.max where tl.sum belongs in partial_stats; s is "
                    "exactly the largest term exp(m - m) = 1 of each chunk, not the sum of its "
                    "terms: s = tl.sum(tl.exp2((x - m) * log2(e)), axis=0)")
HINT_MAX_OR_MEAN_FOR_SUM = ("every partial s is 1: tl.max where tl.sum belongs in partial_stats, "
                            "or the sum divided by the chunk size ({chunk}), which on chunks of "
                            "equal values (every term exp(x - m) = 1) gives the same; s is the "
                            "sum of the chunk's terms: s = tl.sum(tl.exp2((x - m) * log2(e)), "
                            "axis=0), with no division")
# The merge's factor applied to what was already added, not to the chunk's own sum (the audit's
# 13). With one loop step it is the plain sum of the s_c (s_acc starts at 0), which is why a
# probe with two loop steps tells it from "partial denominators not rescaled".
HINT_RUNNING_SUM_RESCALED = ("the factor went on the running sum s_acc instead of the chunk's s: "
                             "s_acc = s_acc * exp(m_c - m_row) + s_c adds each chunk's s_c "
                             "unscaled (with one loop step the plain sum of the s_c) and shrinks "
                             "what earlier loop steps added; rescale the chunk's own sum: "
                             "s_acc += s * exp2((m - m_row) * log2(e))")
STAGE_NAMES = ("partial_stats", "merge_stats", "normalize")


def _stage_named(hint: str) -> str | None:
    """The stage a hint blames (the first stage name in it), or None where it blames several
    or none (every stage, "this input cannot tell which")."""
    if "in every stage" in hint or "cannot tell" in hint:
        return None
    at = [(hint.find(stage), stage) for stage in STAGE_NAMES if stage in hint]
    return min(at)[1] if at else None


def _merge64(m, s):
    """The right merge of (M, C) float64 states: sum_c s_c * exp(m_c - m_row), shape (M,)."""
    import torch

    m_row = m.amax(dim=1, keepdim=True)
    shift = torch.where(torch.isinf(m_row), torch.zeros_like(m_row), m_row)
    return (s * torch.exp(m - shift)).sum(dim=1)


def _log2e_outside_partial(x64, chunk: int):
    """(M, C) partial sums of partial_stats with log2(e) outside exp2:
    log2(e) * sum 2^(x - m) (HINT_LOG2E_OUTSIDE)."""
    return LOG2E * _chunk_stats64(x64, chunk, LN2)[1]


def _log2e_outside_merge(m, s):
    """(M,) merged sums with log2(e) outside exp2: log2(e) * sum_c s_c * 2^(m_c - m_row)."""
    import torch

    m_row = m.amax(dim=1, keepdim=True)
    shift = torch.where(torch.isinf(m_row), torch.zeros_like(m_row), m_row)
    return LOG2E * (s * torch.exp(LN2 * (m - shift))).sum(dim=1)


def _log2e_on_max_partial(x64, chunk: int):
    """(M, C) partial sums of exp2(x - m * log2(e)) = sum exp(x ln 2 - m) (HINT_LOG2E_ON_MAX)."""
    return _chunk_stats64(x64, chunk, LN2, shift_factor=LOG2E)[1]


def _max_for_sum_partial(x64, chunk: int):
    """(M, C) partial "sums" reduced with tl.max: 1 for a chunk with a finite maximum (its
    largest term is exp(0)), 0 for a chunk of only -inf (HINT_MAX_FOR_SUM)."""
    import torch

    m = _chunk_tiles(x64, chunk).amax(dim=2)
    return torch.where(m == float("-inf"), torch.zeros_like(m), torch.ones_like(m))


def _log2e_on_max_merge(m, s):
    """(M,) merged sums with the rescale factor exp2(m_c - m_row * log2(e)):
    sum_c s_c * exp(m_c ln 2 - m_row); inf where float32 overflows, as the kernel's sum does."""
    import torch

    m_row = m.amax(dim=1, keepdim=True)
    shift = torch.where(torch.isinf(m_row), torch.zeros_like(m_row), m_row)
    total = (s * torch.exp(LN2 * m - shift)).sum(dim=1)
    too_big = total > torch.finfo(torch.float32).max
    return torch.where(too_big, torch.full_like(total, float("inf")), total)


def _block_max_merge(m, s):
    """[(block, (M,) sums)]: the merge with each loop block's partial sums rescaled to that
    block's own maximum (tl.max(m) of the block) instead of m_row, for each power-of-two block
    from the largest below C down to 2 (the block is the launcher's choice). Blocks of C or more
    give the right answer; a block of 1 is the sum not rescaled at all."""
    import torch

    n_rows, n_chunks = m.shape
    out = []
    block = 1 << (n_chunks - 1).bit_length() - 1 if n_chunks > 1 else 1
    while block >= 2:
        n_blocks = -(-n_chunks // block)
        mb = torch.full((n_rows, n_blocks * block), float("-inf"), dtype=torch.float64)
        sb = torch.zeros((n_rows, n_blocks * block), dtype=torch.float64)
        mb[:, :n_chunks], sb[:, :n_chunks] = m, s
        mb, sb = mb.reshape(n_rows, n_blocks, block), sb.reshape(n_rows, n_blocks, block)
        top = mb.amax(dim=2, keepdim=True)
        shift = torch.where(torch.isinf(top), torch.zeros_like(top), top)
        out.append((block, (sb * torch.exp(mb - shift)).sum(dim=(1, 2))))
        block //= 2
    return out


def _mistake_models(x64, chunk: int, *, merge: bool = True):
    """Outputs of the classic mistakes on this input: [(hint, model output)]. merge=False leaves
    out the merge's mistakes (for `normalize` alone, which is handed correct statistics)."""
    import torch

    n_rows, n_cols = x64.shape
    m, s = _chunk_stats64(x64, chunk)
    m_row = m.amax(dim=1, keepdim=True)
    s_row = (s * torch.exp(m - m_row)).sum(dim=1, keepdim=True)
    chunk_of_col = torch.arange(n_cols) // chunk
    m_local = m[:, chunk_of_col]  # (M, N): each column's own chunk maximum
    models = []
    if merge:
        # log2(e) outside exp2 in partial_stats (s_c = log2(e) * sum 2^(x - m_c)) or in the
        # merge (s_row = log2(e) * sum_c s_c * 2^(m_c - m_row)); the other stages right
        s_outside = _log2e_outside_partial(x64, chunk)
        models.append((HINT_LOG2E_OUTSIDE.format(where=" in partial_stats"),
                       torch.exp(x64 - m_row) / _merge64(m, s_outside)[:, None]))
        models.append((HINT_LOG2E_OUTSIDE.format(where=" in merge_stats' rescale factor"),
                       torch.exp(x64 - m_row) / _log2e_outside_merge(m, s)[:, None]))
        # log2(e) on the maximum alone in partial_stats or in the merge; tl.max for tl.sum
        numerator = torch.exp(x64 - m_row)
        models.append((_log2e_on_max_hint("partial_stats"),
                       numerator / _merge64(m, _log2e_on_max_partial(x64, chunk))[:, None]))
        models.append((_log2e_on_max_hint("merge_stats"),
                       numerator / _log2e_on_max_merge(m, s)[:, None]))
        max_for_sum = numerator / _merge64(m, _max_for_sum_partial(x64, chunk))[:, None]
        # Where the chunks that carry a row's weight each hold equal values (forward.extreme's
        # rows), every term there is 1, and the sum divided by the chunk size gives the same
        # output: name both then.
        mean_for_sum = numerator / _merge64(m, s / chunk)[:, None]
        same = bool(torch.isclose(max_for_sum, mean_for_sum, rtol=1e-9, atol=0.0,
                                  equal_nan=True).all())
        models.append((HINT_MAX_OR_MEAN_FOR_SUM.format(chunk=chunk) if same
                       else HINT_MAX_FOR_SUM, max_for_sum))
        models.append((HINT_MERGE_MAX_LEFT_OUT, numerator / _max_left_out_merge(m, s)[:, None]))
    if m.shape[1] > 1 and merge:
        models.append((
            "partial denominators not rescaled: merge_stats added the chunks' sums s_c as they "
            "are; each is a sum of exp(x - m_c) and must be multiplied by exp(m_c - m_row) "
            "before the chunks can be added",
            torch.exp(x64 - m_row) / s.sum(dim=1, keepdim=True)))
        models.append((HINT_INVERTED, torch.exp(x64 - m_row) / _inverted_sums(m, s)[:, None]))
    if m.shape[1] > 1:
        models.append((
            "chunk-local max: normalize subtracted each chunk's own maximum instead of the "
            "row's merged maximum m_row, so every chunk is scaled differently",
            torch.exp(x64 - m_local) / s_row))
        models.append((
            "chunk-local max and sum: normalize used the chunk's own statistics, so each chunk "
            "sums to 1 on its own",
            torch.exp(x64 - m_local) / s[:, chunk_of_col]))
    return models


def _exponent_models(x64, *, merge: bool = True):
    """Outputs of a wrong exponent base, [(hint, model output)]: exp(t) = 2^(t * log2(e)), and
    tl.exp given t * log2(e) (the factor left in when exp2 became exp) raises e to 1.44 t,
    tl.exp2 given t alone raises 2 to t. In normalize alone the denominator stays right; a
    mistake made in every stage gives the softmax of x times the factor (rows still sum to
    1). merge=False: `normalize` alone."""
    import torch

    t = x64 - x64.amax(dim=1, keepdim=True)
    s_row = torch.exp(t).sum(dim=1, keepdim=True)
    models = []
    for factor, hint in WRONG_BASES:
        numerator = torch.exp(factor * t)
        models.append((hint.format(where=" in normalize"), numerator / s_row))
        if merge:
            where = f" in every stage (the output is softmax({factor:.4g} x))"
            models.append((hint.format(where=where),
                           numerator / numerator.sum(dim=1, keepdim=True)))
    models.append((HINT_EXP_SIGN, torch.exp(-t) / s_row))
    m_row = x64.amax(dim=1, keepdim=True)
    models.append((HINT_SHIFT_NO_LOG2E.format(where=" in normalize"),
                   torch.exp(x64 - LN2 * m_row) / s_row))
    models.append((HINT_NORMALIZE_NO_SHIFT, torch.exp(x64) / s_row))
    models.append((_log2e_on_max_hint("normalize"), torch.exp(LN2 * x64 - m_row) / s_row))
    models.append((HINT_LN_S_IN_EXP2, torch.exp(t) / s_row ** LN2))
    models.append((HINT_LOG2_S_NATURAL, torch.exp(t) / s_row ** LOG2E))
    models.append((HINT_INV_S_IN_EXPONENT, torch.exp(t / s_row)))
    models.extend((HINT_LOG2E_DISTRIBUTED, model) for model in _log2e_distributed_normalize(x64))
    # m_row and s_row swapped in normalize (the ninth learner audit's c15, named only as a row
    # scale): exp(x - s_row) / m_row
    models.append((HINT_STATS_SWAPPED, torch.exp(x64 - s_row) / m_row))
    # (listed last: on rows where they tie with a model above, constant rows say, that one is
    # named, as before; forward.extreme asks normalize on a benign input first)
    models.append((HINT_NO_DENOMINATOR, torch.exp(t)))
    models.append((HINT_TIMES_SUM, torch.exp(t) * s_row))
    return models


# The tenth learner audit's a01 (named by normalize.values, then nothing or a wrong name on the
# whole softmax): normalize without its division, and normalize multiplying by the sum.
HINT_NO_DENOMINATOR = ("denominator missing: the output equals exp(x - m_row); multiply by "
                       "1 / s_row (in normalize: every row's exp(x - m_row) must be divided by "
                       "its merged sum s_row)")
HINT_TIMES_SUM = ("multiplied by the sum instead of dividing: the output equals "
                  "exp(x - m_row) * s_row; multiply by 1 / s_row (in normalize)")
HINT_STATS_SWAPPED = ("m_row and s_row swapped in normalize: the output is exp(x - s_row) / m_row, "
                      "the sum subtracted as if it were the maximum and the maximum divided by; "
                      "y = exp2((x - m_row) * log2(e)) * (1 / s_row)")
# The ninth learner audit's c16 (silent in every check): y cast to a fixed tl.float16 before the
# store, so a float32 output keeps float16's 11 significant bits (and its range).
HINT_THROUGH_FLOAT16 = ("output rounded through float16: the output is the softmax rounded to "
                        "float16 first (a float32 output keeps float16's 11 significant bits, a "
                        "bfloat16 one loses the values below float16's range): y was cast to a "
                        "fixed tl.float16 before the store; round once, to the output's dtype: "
                        "y.to(y_ptr.dtype.element_ty)")


def _through_float16(dtype: str):
    """Diagnosis for a float32 output: every value is exactly a float16 number (a float32
    softmax value is one by chance with probability ~2^-13) and the output is right within
    float16's tolerance: it went through float16 on the way (HINT_THROUGH_FLOAT16)."""

    def diagnose(got, expected, bad):
        import torch

        from checks.compare import agrees, tolerance_for

        if not bool(got.isfinite().all()):
            return None
        if dtype == "bfloat16":
            # float16's 11 bits hold bfloat16's 8: only its range shows, values below float16's
            # subnormals (2^-24) flushed to 0 or rounded to few bits
            model = expected.to(torch.float16).to(torch.bfloat16).double()
            stored = expected.to(torch.bfloat16).double()
            return (HINT_THROUGH_FLOAT16 if not _close(stored, model, dtype)
                    and _close(got, model, dtype) else None)
        if dtype != "float32" or not bool((got.float().half().double() == got).all()):
            return None
        tol = tolerance_for("float16")
        return HINT_THROUGH_FLOAT16 if bool(agrees(got, expected, tol.rtol, tol.atol).all()) else None

    return diagnose


def _log2e_distributed_normalize(x64):
    """normalize's outputs with log2(e) distributed over the difference, exp2(x * log2(e) -
    m_row * log2(e)) / s_row, replayed in float32 as the kernel rounds it (float64 out):
    [as the interpreter rounds it, as a GPU does].

    The mistake is right on paper; it costs only the rounding of x * log2(e) near |x| = 1e4,
    so the replay has to round as the kernel does. The interpreter rounds both products; on a
    GPU, Triton contracts x's product and the subtraction into one fma, which rounds once (the
    sm_90 PTX of the planted bug: fma.rn.f32 y, x, log2e, -(m_row * log2e)). The first GPU zoo
    to run this bug, with only the interpreter's rounding replayed, FAILed it without a hint."""
    import torch

    x32 = x64.float()  # the kernel's float32 x (a 16-bit x widens exactly)
    t = x64 - x64.amax(dim=1, keepdim=True)
    s_row = torch.exp(t).sum(dim=1, keepdim=True)
    return [torch.exp2(e.double()) / s_row
            for e in _distributed_exponents(x32, x32.amax(dim=1, keepdim=True))]


def _distributed_exponents(v32, m32):
    """v * log2(e) - m * log2(e) in float32 (float32 tensors that broadcast), as the kernel
    rounds it: [the interpreter, which rounds both products; a GPU, whose fma(v, log2e,
    -(m * log2e)) rounds m's product, then v's product and the subtraction once]."""
    import torch

    log2e = torch.tensor(LOG2E, dtype=torch.float32)
    m_product = m32 * log2e  # rounded to float32
    # the product of two float32 values is exact in float64, so fma(v, c, -p) is fl32(v*c - p)
    return [v32 * log2e - m_product, (v32.double() * float(log2e) - m_product.double()).float()]


def _partial_probe(impl, x, chunk: int):
    """The learner's partial_stats(x, chunk) as float64 CPU tensors, or None if it raises
    (a probe inside a diagnosis: the failure being diagnosed stands either way)."""
    try:
        m, s = impl.partial_stats(x, chunk)
        return m.detach().cpu().double(), s.detach().cpu().double()
    except Exception:  # noqa: BLE001 - no diagnosis then
        return None


def _stats_wrong(m, s, m64, s64):
    """(M, C) mask of the partial states that differ from float64: m exactly, s by STAT_RTOL."""
    if m.shape != m64.shape or s.shape != s64.shape:
        return None
    return (m != m64) | ~((s - s64).abs() <= STAT_RTOL * s64.abs())


def _another_rows_stats(x64, chunk: int | None, got, bad, dtype: str) -> bool:
    """Is every wrong row r of `got` exp(x_r - m') / s' with statistics (m', s') that are not
    row r's: another row's maximum, sum or both, or (a merge that steps rows with the wrong
    stride) the merge of C consecutive partial states of the row-major (M, C) buffer?"""
    import torch

    m = x64.amax(dim=1)
    s = torch.exp(x64 - m[:, None]).sum(dim=1)
    stats = [(m, s)]
    if chunk is not None:
        m_c, s_c = _chunk_stats64(x64, chunk)
        n_chunks = m_c.shape[1]
        m_win = m_c.flatten().unfold(0, n_chunks, 1)  # every C consecutive states
        s_win = s_c.flatten().unfold(0, n_chunks, 1)
        m_merged = m_win.amax(dim=1)
        shift = torch.where(torch.isinf(m_merged), torch.zeros_like(m_merged), m_merged)
        stats.append((m_merged, (s_win * torch.exp(m_win - shift[:, None])).sum(dim=1)))
    rows = torch.arange(x64.shape[0])
    wrong_rows = bad.any(dim=1).nonzero().flatten().tolist()
    for r in wrong_rows:
        others = rows[rows != r]
        # (m', s'): another row's m and s, or a window's; own m with another row's s; another
        # row's m with own s
        cand_m = torch.cat([m[others]] + [wm for wm, _ in stats[1:]]
                           + [m[r].expand(len(others)), m[others]])
        cand_s = torch.cat([s[others]] + [ws for _, ws in stats[1:]]
                           + [s[others], s[r].expand(len(others))])
        # each candidate scales the right row by one factor; the measured factor is the
        # median of got / expected over the row's clearly nonzero elements
        factor = (m[r] - cand_m) + torch.log(s[r]) - torch.log(cand_s)
        expected = torch.exp(x64[r] - m[r]) / s[r]
        seen = (expected > 1e-30) & (got[r] > 0) & got[r].isfinite()
        if not bool(seen.any()):
            return False
        measured = (got[r][seen] / expected[seen]).log().median()
        best = int((factor - measured).abs().nan_to_num(float("inf")).argmin())
        if not _close(got[r], torch.exp(x64[r] - cand_m[best]) / cand_s[best], dtype):
            return False
    return bool(wrong_rows)


def _first_wrong_stage(impl, x, chunk: int) -> str | None:
    """Which stage is wrong on x, asked of the learner's stages one at a time: partial_stats
    against float64 (as stats.partial judges it), then merge_stats given the right states (as
    stats.merge judges it), else normalize. None where a stage raises."""
    x64 = x.detach().cpu().double()
    m64, s64 = _chunk_stats64(x64, chunk)
    probe = _partial_probe(impl, x, chunk)
    wrong = None if probe is None else _stats_wrong(*probe, m64, s64)
    if wrong is None:
        return None
    if bool(wrong.any()):
        return "partial_stats"
    m32, s32 = m64.float(), s64.float()
    try:
        m_row, s_row = impl.merge_stats(m32.to(x.device), s32.to(x.device))
        m_row, s_row = m_row.detach().cpu().double(), s_row.detach().cpu().double()
    except Exception:  # noqa: BLE001 - no diagnosis then; the failure itself stands
        return None
    right_s = _merge64(m32.double(), s32.double())
    if (m_row.shape != right_s.shape or s_row.shape != right_s.shape
            or not bool((m_row == m32.double().amax(dim=1)).all())
            or not bool(((s_row - right_s).abs() <= STAT_RTOL * right_s.abs()).all())):
        return "merge_stats"
    return "normalize"


def _running_sum_probe(impl, device):
    """Diagnosis: is the merge's factor applied to the running sum (HINT_RUNNING_SUM_RESCALED)?
    Asked of the learner's merge_stats: one row of 2 * MERGE_BLOCK_C_MAX states, s = 1, m = 0
    for chunk 0, -1 for the rest of the first half, -2 for the second half. A loop over blocks
    of B lanes with that mistake gives, per lane, acc = acc * exp(m_c - m_row) + s_c over its
    steps (n is a multiple of every B tried: no padded lane); named when the output is that for
    some B with at least two steps (with one step it is the plain sum: no_rescale's)."""
    import math

    def diagnose(got, expected, bad):
        import torch

        n = 2 * MERGE_BLOCK_C_MAX
        m_values = [0.0] + [-1.0] * (n // 2 - 1) + [-2.0] * (n // 2)
        try:
            m_row, s_row = impl.merge_stats(
                torch.tensor([m_values], dtype=torch.float32, device=device),
                torch.ones((1, n), dtype=torch.float32, device=device))
            merged = (float(m_row[0]), float(s_row[0]))
        except Exception:  # noqa: BLE001 - no diagnosis then; the failure itself stands
            return None
        if merged[0] != 0.0:
            return None
        right = sum(math.exp(m) for m in m_values)
        lanes = 2
        while lanes < n:
            model = 0.0  # n is a multiple of lanes: no padded lane; m_row = 0
            for lane in range(lanes):
                acc = 0.0
                for c in range(lane, n, lanes):
                    acc = acc * math.exp(m_values[c]) + 1.0
                model += acc
            if abs(model - right) > 100 * STAT_RTOL * right and (
                    abs(merged[1] - model) <= STAT_RTOL * model):
                return HINT_RUNNING_SUM_RESCALED
            lanes *= 2
        return None

    return diagnose


def _output_diagnoses(impl, x, chunk: int | None, dtype: str, *, merge: bool = True,
                      stages: bool = True):
    """Diagnoses for split_softmax / normalize outputs on input `x` (merge=False: `normalize`
    alone, given correct statistics, so neither the merge nor the partial sums can be wrong).
    stages=False leaves out the last one, which asks the learner's first two stages (for a
    check that asks them itself, in its own order)."""
    x64 = x.detach().to("cpu").double()

    def models(got, expected, bad):
        import torch

        candidates = [] if chunk is None else _mistake_models(x64, chunk, merge=merge)
        fits = [(_misfit(got, model, dtype), i, hint, model)
                for i, (hint, model) in enumerate(candidates + _exponent_models(x64, merge=merge))
                if _explains(got, model, bad, dtype)]
        if not fits:
            return None
        # Models that blame different stages can each explain one output (the seventh learner
        # audit's 07, 1 / s_row inside normalize's exponent, was read as tl.max for tl.sum in
        # partial_stats where only that model was listed): ask the learner's stages which one is
        # wrong, and keep the models of that stage.
        if merge and chunk is not None and len({_stage_named(f[2]) for f in fits} - {None}) > 1:
            stage = _first_wrong_stage(impl, x, chunk)
            if stage is not None:
                fits = [f for f in fits if _stage_named(f[2]) in (stage, None)] or fits
        # Two models can both explain a 16-bit output within its tolerance (two wrong merges
        # of the same two chunks, say): the hint is the one that fits best ...
        best = min(fits, key=lambda fit: fit[0])
        stored = best[3].to(getattr(torch, dtype)).double()
        # ... unless this input cannot tell them apart at all (their outputs agree): then the
        # first listed, and for log2(e) outside exp2 (in partial_stats and in the merge the
        # same wherever every term is e^0 = 2^0 or 0) both places.
        ties = [fit for fit in fits if _close(fit[3].to(getattr(torch, dtype)).double(),
                                              stored, dtype)]
        # (dict.fromkeys: one mistake replayed with several roundings is one hint)
        hints = list(dict.fromkeys(fit[2] for fit in sorted(ties, key=lambda fit: fit[1])))
        # Tied models that blame different stages (a 1 x 1 input: several mistakes give the
        # same single value): ask the learner's stages which one is wrong.
        if merge and chunk is not None and len({_stage_named(h) for h in hints} - {None}) > 1:
            stage = _first_wrong_stage(impl, x, chunk)
            if stage is not None:
                hints = [h for h in hints if _stage_named(h) in (stage, None)] or hints
        # A model of one stage's mistake can match another stage's by chance (a row of one
        # chunk with a negative maximum: the shift clamped at 0 in partial_stats gives what m_row
        # left out of the merge gives): a hint that blames partial_stats or merge_stats holds
        # only if the learner's stages, asked one at a time, find that stage wrong.
        # (And one that blames normalize, since the tenth learner audit: a merge whose s_row is
        # the largest chunk's share instead of the sum gives s_row = 1 on forward.extreme's rows
        # of three equal maxima in three chunks, which is also what normalize without its
        # division gives.)
        blamed = _stage_named(hints[0])
        if merge and chunk is not None and blamed in STAGE_NAMES:
            stage = _first_wrong_stage(impl, x, chunk)
            if stage is not None and stage != blamed:
                return None
        if hints[0].startswith("partial denominators not rescaled"):
            # also what the factor on the running sum gives while one loop step holds every chunk
            hints[0] = _running_sum_probe(impl, x.device)(got, expected, bad) or hints[0]
        outside = [h for h in hints if h.startswith("log2(e) outside exp2")]
        if len(outside) > 1:
            return HINT_LOG2E_OUTSIDE.format(
                where=" in partial_stats or in merge_stats (this input cannot tell which)")
        return hints[0]

    def other_row(got, expected, bad):
        # The hint's whole claim, tested: row 0 right, and each wrong row is exactly what
        # another row's statistics give (a wrong exponent or a bad tail also scales whole rows
        # by a constant, and row 0 can fall within tolerance by chance).
        bad_rows = bad.reshape(-1, got.shape[-1])
        if got.shape[0] < 2 or bool(bad_rows[0].any()):
            return None
        if _another_rows_stats(x64, chunk, got, bad_rows, dtype):
            return ("another row's statistics: row 0 is right but later rows are off, each by "
                    "its own constant factor: merge_stats reads the partial states of another "
                    "row (the row stride of the (M, C) buffers?), or normalize indexes m_row / "
                    "s_row with the wrong row")
        return None

    def tail(got, expected, bad):
        import torch

        if chunk is None or got.shape[-1] % chunk == 0 or not bool(bad.any()):
            return None
        # Too large a denominator in every row of a ragged width: the last chunk's padded lanes
        # were counted (an unmasked load reads whatever lies past the row) ...
        ratio = got / torch.where(expected == 0, torch.ones_like(expected), expected)
        if not bool((ratio[bad] < 1).all()):
            return None
        # ... which partial_stats shows: its last chunk's states wrong, every other one right.
        probe = _partial_probe(impl, x, chunk)
        if probe is None:
            return None
        wrong = _stats_wrong(*probe, *_chunk_stats64(x64, chunk))
        if wrong is not None and wrong.shape[1] == 1 and bool(wrong.any()):
            # One chunk: "every other chunk right" says nothing. The same values padded with
            # -inf to a whole chunk (no ragged tail left to mask) must give the right states.
            padded = torch.full((x.shape[0], chunk), float("-inf"), dtype=x.dtype,
                                device=x.device)
            padded[:, :x.shape[1]] = x
            again = _partial_probe(impl, padded, chunk)
            right = None if again is None else _stats_wrong(*again, *_chunk_stats64(x64, chunk))
            if right is None or bool(right.any()):
                return None
        if wrong is not None and bool(wrong[:, -1].any()) and not bool(wrong[:, :-1].any()):
            return ("tail not masked: the last chunk is ragged, and its lanes past the width "
                    "were loaded as values (not -inf) and counted in the denominator")
        return None

    float16_on_the_way = _through_float16(dtype)
    # An unmasked last chunk shows in the denominator, which normalize is handed, not computes.
    if not merge:
        return [models, other_row, float16_on_the_way]
    if chunk is None:
        return [models, other_row, tail, float16_on_the_way]
    merge_alone = _merge_benign_probe(impl, x.device, nan_only=False)

    def other_row_unless_merge_wrong(got, expected, bad):
        # "Another row's statistics" is a symptom: row 0 can be right by chance. A merge that
        # is wrong on one row of benign states (which no row mix-up can make wrong) is the
        # cause: the tenth learner audit's tl.max(s_acc) for tl.sum left s_row = 1 on
        # forward.extreme's rows of two equal maxima, row 0's right value among them.
        hint = other_row(got, expected, bad)
        if hint is None:
            return None
        merged = merge_alone(got, expected, bad)
        return merged if merged and not merged.startswith("another row's") else hint

    if stages:
        # Last: no model of the output named it; the learner's partial_stats and merge_stats
        # asked on their own (the seventh learner audit's 01, 03, 04: silent here)
        return [models, other_row_unless_merge_wrong, tail, float16_on_the_way,
                _stage_probe(impl, x, chunk), merge_alone, _normalize_probe(impl, x.device)]
    return [models, other_row_unless_merge_wrong, tail, float16_on_the_way]


def _normalize_probe(impl, device):
    """Diagnosis for the whole softmax (heard last, but first in forward.extreme): the learner's
    normalize alone, handed the right statistics of a small benign input, read with
    normalize.values' models. An output can carry no mistake's signature: with m_row and
    s_row swapped (the ninth learner audit's c15) a row of 4097 values is all zeros,
    exp(x - s_row) underflowing once s_row is in the hundreds, and "all zeros" would blame
    the store. On rows of nine values from -1 to 3 the
    models all differ."""

    def diagnose(got, expected, bad):
        import torch

        from checks.compare import agrees, tolerance_for

        x = torch.linspace(-1.0, 3.0, 18, dtype=torch.float32).reshape(2, 9)
        x64 = x.double()
        m64 = x64.amax(dim=1)
        s64 = torch.exp(x64 - m64[:, None]).sum(dim=1)
        right = torch.exp(x64 - m64[:, None]) / s64[:, None]
        try:
            y = impl.normalize(x.to(device), m64.float().to(device), s64.float().to(device))
            y64 = y.detach().cpu().double()
        except Exception:  # noqa: BLE001 - no diagnosis then; the failure itself stands
            return None
        if y64.shape != right.shape:
            return None
        tol = tolerance_for("float32")
        wrong = ~agrees(y64, right, tol.rtol, tol.atol)
        if not bool(wrong.any()):
            return None
        for diagnosis in _output_diagnoses(impl, x.to(device), None, "float32", merge=False):
            hint = diagnosis(y64, right, wrong)
            if hint:
                return (f"{hint} (named by normalize alone, handed the right statistics of a "
                        f"small row: this output shows no mistake's signature)")
        return None

    return diagnose


# ---------------------------------------------------------------------------------------------
# Calling the stage functions (they return tuples, which ctx.call does not accept)
# ---------------------------------------------------------------------------------------------
def _call_stats(ctx, fn, *args, expect_shape, label, **kwargs):
    """Call a stage returning (a, b): both fresh float32 tensors of `expect_shape`, inputs
    unchanged."""
    torch = ctx.torch
    from checks.context import InputsSnapshot, call_learner, fresh_memory_filled

    inputs = [a for a in args if isinstance(a, torch.Tensor)]
    # ctx.call's own comparison: each input's elements and the memory block around a view
    snapshot = InputsSnapshot(inputs)
    with fresh_memory_filled():  # an element never written reads as NaN, and is named so
        out = call_learner(fn, *args, label=label, **kwargs)
    if ctx.device == "cuda":
        torch.cuda.synchronize()
    snapshot.check(label, hint="inputs must never be written: allocate fresh statistics buffers")
    if not (isinstance(out, tuple) and len(out) == 2
            and all(isinstance(t, torch.Tensor) for t in out)):
        ctx.fail(f"{label} returned {type(out).__name__}, expected a tuple of two tensors",
                 hint="return (m, s): the maxima and the sums")
    for name, t in zip(("first", "second"), out):
        if tuple(t.shape) != tuple(expect_shape):
            ctx.fail(f"{label}: {name} tensor has shape {tuple(t.shape)}, expected "
                     f"{tuple(expect_shape)}", hint="one statistic per (row, chunk), C = cdiv(N, chunk)")
        if t.dtype != torch.float32:
            ctx.fail(f"{label}: {name} tensor has dtype {t.dtype}, expected float32",
                     hint="statistics stay in float32 whatever x's dtype")
        if t.device.type != ctx.torch_device:
            ctx.fail(f"{label}: {name} tensor is on {t.device}, expected {ctx.torch_device}")
        for x in inputs:
            if t.data_ptr() == x.data_ptr():
                ctx.fail(f"{label} returned one of its inputs",
                         hint="outputs must be freshly allocated")
    # Neither tensor may lie in memory an earlier call of this case returned (a cached buffer).
    # Two views of one fresh allocation (one workspace for both) are fine: the first tensor's
    # check covers their shared storage, and checking the second would find the first.
    ctx.expect_fresh(out[0], f"{label} (first tensor)")
    if out[1].untyped_storage().data_ptr() != out[0].untyped_storage().data_ptr():
        ctx.expect_fresh(out[1], f"{label} (second tensor)")
    for t in out:
        ctx.remember_unwritten(t)
    return out


# ---------------------------------------------------------------------------------------------
# Stage 1: partial statistics
# ---------------------------------------------------------------------------------------------
def _partial_cases(device: str) -> list[Case]:
    if device == "cuda":
        specs = [((1, 4), 4), ((3, 100), 16), ((8, 131072), 2048), ((5, 131071), 16384),
                 ((64, 4097), 1024), ((2, 262147), 4096)]
    else:
        specs = [((1, 4), 4), ((3, 100), 16), ((4, 512), 64), ((2, 4097), 1024)]
    cases = [Case(shape=s, chunk=c, dtype=d) for s, c in specs for d in DTYPES]
    # Whole chunks of only -inf next to finite values near -200 (exp(-200) underflows float32):
    # a -inf chunk's state is the identity (-inf, 0), whatever the other chunks hold.
    return cases + [Case(shape=(2, 14), chunk=4, dtype=d, kind="masked_chunk") for d in DTYPES]


HINT_MASKED_M = ("a chunk of only -inf must report m = -inf: its state is the identity "
                 "(-inf, 0); store the chunk's maximum m, not the shift used in the exponent "
                 "(0 for such a chunk), or the merge takes 0 as the row's maximum")
HINT_MASKED_NAN = ("a chunk of only -inf gave NaN: its max is -inf and exp(-inf - (-inf)) is "
                   "NaN; shift by 0 when m = -inf so the chunk's state is (-inf, 0)")


def _partial_input(ctx, case):
    if case.get("kind") != "masked_chunk":
        return ctx.randn(case.shape, case.dtype, scale=3.0)
    x = ctx.randn(case.shape, "float64", scale=3.0, shift=-200.0, device="cpu")
    x[:, 0:case.chunk] = float("-inf")  # the first chunk of every row
    x[1:, 2 * case.chunk:3 * case.chunk] = float("-inf")  # and a middle one of later rows
    return x.to(getattr(ctx.torch, case.dtype)).to(ctx.torch_device)


@register(W, "stats.partial", tier="kernel", uses=("partial_stats",), cases=_partial_cases,
          doc="per (row, chunk) max and exp-sum against float64, ragged last chunk")
def stats_partial(ctx, impl, case):
    x = _partial_input(ctx, case)
    n_chunks = -(-case.shape[1] // case.chunk)
    m, s = _call_stats(ctx, impl.partial_stats, x, case.chunk,
                       expect_shape=(case.shape[0], n_chunks), label="partial_stats(x, chunk)")
    m64, s64 = _chunk_stats64(x.detach().cpu().double(), case.chunk)
    tail_hint = _last_chunk_only(case.shape[1], case.chunk)
    # m is a maximum of values float32 holds exactly: no rounding is allowed. A chunk of only
    # -inf has m = -inf exactly (where the reference is -inf, only -inf agrees).
    ctx.assert_close(m, m64, name="partial maxima m", rtol=0.0, atol=0.0, diagnose=[
        _argmax_probe(impl, ctx.torch_device),
        lambda g, e, bad: HINT_MASKED_M if bool((e.isinf() & (g != e)).any()) else None,
        _chunk_minimum(x, case.chunk), _pad_in_max(case.shape[1], case.chunk), tail_hint])
    ctx.assert_close(s, s64, name="partial sums s", rtol=STAT_RTOL, atol=0.0, diagnose=[
        lambda g, e, bad: (HINT_MASKED_NAN if bool((m64.isinf() & g.isnan()).any()) else None),
        _log2e_outside_sums(x, case.chunk), tail_hint] + _partial_sum_diagnoses(x, case.chunk)
        + [_x_dtype_probe(impl, x, case.chunk)])


def _partial_sum_diagnoses(x, chunk: int):
    """The models of a wrong partial sum s on input x (stats.partial; stats.pipeline asks them
    of the states it merged)."""
    return [_shift_without_log2e(x, chunk), _unshifted_sums(x, chunk), _wrong_base_sums(x, chunk),
            _shift_clamped_at_zero(x, chunk), _log2e_on_max_sums(x, chunk),
            _max_for_sum_sums(x, chunk), _mean_for_sum_sums(x, chunk),
            _log2e_distributed_sums(x, chunk)]


def _partial_sums_hint(x, chunk: int, m, s, m64, s64) -> str | None:
    """stats.partial's hint for partial states (m, s) that partial_stats returned for x (float64
    CPU tensors; m64, s64 the right ones): None where they are right or no model names them.
    For the checks that call partial_stats on the way (stats.pipeline) or as a probe."""
    wrong = _stats_wrong(m, s, m64, s64)
    if wrong is None or not bool(wrong.any()):
        return None
    s_bad = ~((s - s64).abs() <= STAT_RTOL * s64.abs())
    for diagnosis in _partial_sum_diagnoses(x, chunk):
        hint = diagnosis(s, s64, s_bad)
        if hint:
            return hint
    return None


# The seventh learner audit's 01 (its first FAIL said "the output is all zeros"): tl.argmax for
# tl.max, so each m is where the maximum sits in its chunk.
HINT_ARGMAX = ("tl.argmax where tl.max belongs in partial_stats: each m is the position of its "
               "chunk's maximum (0 to chunk - 1), not its value; m = tl.max(x, axis=0)")


def _argmax_probe(impl, device):
    """Diagnosis: is each m the position of its chunk's maximum (HINT_ARGMAX)? Asked of the
    learner's partial_stats on one row of 8 float32 values in chunks of 4, whose maxima 5 and 7
    sit at positions 1 and 2 of their chunks (6 in the row); no value equals its position."""

    def diagnose(got, expected, bad):
        import torch

        x = torch.tensor([[-1.0, 5.0, 3.0, 0.5, 4.0, 1.5, 7.0, -2.0]], dtype=torch.float32)
        probe = _partial_probe(impl, x.to(device), 4)
        if probe is None or probe[0].shape != (1, 2):
            return None
        return HINT_ARGMAX if probe[0][0].tolist() in ([1.0, 2.0], [1.0, 6.0]) else None

    return diagnose


# The seventh learner audit's 03 (silent): the terms rounded to x's 16-bit dtype, and tl.sum,
# which keeps a 16-bit input's type, adding them in it.
HINT_SUMS_IN_X_DTYPE = ("partial sums computed in x's dtype ({dtype}): the same values as "
                        "float32 give the right statistics, so the terms exp(x - m) or their sum "
                        "were rounded to {dtype} (tl.sum keeps a 16-bit input's type); keep the "
                        "exponentials and the sum in float32 and round nothing before the store")


def _x_dtype_probe(impl, x, chunk: int):
    """Diagnosis: do x's values give the right partial states as float32 but wrong ones in x's
    own 16-bit dtype (HINT_SUMS_IN_X_DTYPE)? Asked of the learner's partial_stats on x and on
    x.float() (the same values: a 16-bit value widens exactly)."""

    def diagnose(got, expected, bad):
        import torch

        if x.dtype not in (torch.float16, torch.bfloat16):
            return None
        m64, s64 = _chunk_stats64(x.detach().cpu().double(), chunk)
        wide, own = _partial_probe(impl, x.float(), chunk), _partial_probe(impl, x, chunk)
        if wide is None or own is None:
            return None
        wrong_wide, wrong_own = _stats_wrong(*wide, m64, s64), _stats_wrong(*own, m64, s64)
        if wrong_wide is None or wrong_own is None or bool(wrong_wide.any()):
            return None
        if not bool(wrong_own.any()):
            return None
        return HINT_SUMS_IN_X_DTYPE.format(dtype=str(x.dtype).replace("torch.", ""))

    return diagnose


def _stage_probe(impl, x, chunk: int):
    """Diagnosis: the learner's partial_stats on x, judged as stats.partial judges it (its
    models of a wrong sum, tl.argmax for tl.max, sums in x's dtype). For the checks of the
    whole softmax, after their models of the output: a wrong m or s there is the cause."""

    def diagnose(got, expected, bad):
        probe = _partial_probe(impl, x, chunk)
        if probe is None:
            return None
        m64, s64 = _chunk_stats64(x.detach().cpu().double(), chunk)
        wrong = _stats_wrong(*probe, m64, s64)
        if wrong is None or not bool(wrong.any()):
            return None
        return (_argmax_probe(impl, x.device)(got, expected, bad)
                or _partial_sums_hint(x, chunk, *probe, m64, s64)
                or _x_dtype_probe(impl, x, chunk)(got, expected, bad))

    return diagnose


HINT_NOT_SHIFTED = ("sum not shifted by the chunk max: s should sum exp(x - m), every term <= 1 "
                    "and the largest exactly 1")


def _unshifted_sums(x, chunk: int):
    """Diagnosis: the partial sums are float32 sums of exp(x) (no shift; they underflow to 0
    for values far below 0, or overflow to inf far above). Tested on the model, not on a sum
    above `chunk` alone: any sum scaled up (by 2, say) passes that bound too."""
    import torch

    x64 = x.detach().cpu().double()

    def diagnose(got, expected, bad):
        tiles = _chunk_tiles(x64, chunk)
        terms = torch.exp(tiles.float())  # float32 exp: 0 or inf at the ends
        model = terms.sum(dim=2).double()
        if not _close(got, model, "float32", rtol=STAT_RTOL):
            return None
        # Where no chunk's maximum is above 0, a shift clamped at 0 (max(m, 0)) is no shift at
        # all: the same sums, so name both (a seed whose every other case had positive maxima
        # left only this reading).
        m = tiles.amax(dim=2)
        if bool((m[m.isfinite()] <= 0).all()):
            return (f"{HINT_NOT_SHIFTED}; or {HINT_SHIFT_CLAMPED_AT_ZERO}, the same sums here, "
                    "where no chunk's maximum is above 0")
        return HINT_NOT_SHIFTED

    return diagnose


HINT_SHIFT_CLAMPED_AT_ZERO = (
    "shift clamped at 0: s sums exp(x - max(m, 0)), so a chunk whose maximum is negative has its "
    "sum scaled by exp(m); shift by the chunk's own maximum m (0 only for a chunk of only -inf, "
    "tl.where(m == -inf, 0, m))")


def _shift_clamped_at_zero(x, chunk: int):
    """Diagnosis: the partial sums are sums of exp(x - max(m, 0)): the chunk of only -inf
    handled with a shift of max(m, 0) instead of 0 for that chunk alone (so every chunk whose
    maximum is negative has its sum scaled by exp(m) < 1)."""
    x64 = x.detach().cpu().double()

    def diagnose(got, expected, bad):
        m, model = _chunk_stats64(x64, chunk, shift_floor=0.0)
        if not bool((m[bad] < 0).all()):
            return None
        if bool(((got - model).abs() <= STAT_RTOL * model.abs()).all()):
            return HINT_SHIFT_CLAMPED_AT_ZERO
        return None

    return diagnose


def _chunk_minimum(x, chunk: int):
    """Diagnosis: the partial maxima are the chunks' minima (tl.min for tl.max; the ragged
    last chunk's padded lanes, -inf, make its minimum -inf)."""
    x64 = x.detach().cpu().double()

    def diagnose(got, expected, bad):
        model = _chunk_tiles(x64, chunk).amin(dim=2)
        if bool((got == model).all()):
            return ("minimum taken for the maximum: every m equals its chunk's smallest value "
                    "(tl.min where tl.max belongs); m = tl.max(x, axis=0)")
        return None

    return diagnose


def _shift_without_log2e(x, chunk: int):
    """Diagnosis: the partial sums are those of exp2(x * log2(e) - m) (HINT_SHIFT_NO_LOG2E)."""
    x64 = x.detach().cpu().double()

    def diagnose(got, expected, bad):
        _, model = _chunk_stats64(x64, chunk, shift_factor=LN2)
        if _close(got, model, "float32", rtol=STAT_RTOL):
            return HINT_SHIFT_NO_LOG2E.format(where=" in partial_stats")
        return None

    return diagnose


def _log2e_outside_sums(x, chunk: int):
    """Diagnosis: the partial sums are log2(e) * sum 2^(x - m) (HINT_LOG2E_OUTSIDE)."""
    x64 = x.detach().cpu().double()

    def diagnose(got, expected, bad):
        if _close(got, _log2e_outside_partial(x64, chunk), "float32", rtol=STAT_RTOL):
            return HINT_LOG2E_OUTSIDE.format(where=" in partial_stats")
        return None

    return diagnose


def _log2e_on_max_sums(x, chunk: int):
    """Diagnosis: the partial sums are those of exp2(x - m * log2(e)) (HINT_LOG2E_ON_MAX)."""
    x64 = x.detach().cpu().double()

    # The kernel's exponent x - m * log2(e) is rounded in float32 before exp2: with values near
    # -200 (the masked_chunk case) that alone is ~1e-5 of each term, as much as STAT_RTOL.
    finite = x64[x64.isfinite()]
    big = float(finite.abs().max()) if finite.numel() else 0.0
    rtol = STAT_RTOL + 4 * 2.0**-23 * LOG2E * big

    def diagnose(got, expected, bad):
        if _close(got, _log2e_on_max_partial(x64, chunk), "float32", rtol=rtol):
            return _log2e_on_max_hint("partial_stats")
        return None

    return diagnose


def _max_for_sum_sums(x, chunk: int):
    """Diagnosis: every partial sum is its chunk's largest term, 1 (HINT_MAX_FOR_SUM). A wrong
    s is then 1 where the right one is larger: the chunk held more than one finite term."""
    x64 = x.detach().cpu().double()

    def diagnose(got, expected, bad):
        model = _max_for_sum_partial(x64, chunk)
        if not bool((got == model).all()):
            return None
        # chunks of equal values: the sum divided by the chunk size is 1 as well
        if bool((model == _chunk_stats64(x64, chunk)[1] / chunk).all()):
            return HINT_MAX_OR_MEAN_FOR_SUM.format(chunk=chunk)
        return HINT_MAX_FOR_SUM

    return diagnose


# The ninth learner audit's c05 (silent in every check): the chunk's sum divided by the chunk
# size, or by its count of real values: a mean of the terms where their sum belongs.
HINT_MEAN_FOR_SUM = ("partial sums divided by {by}: each s is the mean of its chunk's terms "
                     "exp(x - m), not their sum; s = tl.sum(tl.exp2((x - m) * log2(e)), "
                     "axis=0), with no division")


def _mean_for_sum_sums(x, chunk: int):
    """Diagnosis: each partial sum divided by the chunk size (CHUNK), or by the number of values
    its chunk holds (the last chunk of a ragged row holds fewer): HINT_MEAN_FOR_SUM."""
    x64 = x.detach().cpu().double()

    def diagnose(got, expected, bad):
        _, s64 = _chunk_stats64(x64, chunk)
        held = _chunk_tiles(x64, chunk).isfinite().sum(dim=2).double()
        for divisor, by in ((chunk, f"the chunk size ({chunk})"),
                            (held.clamp_min(1.0), "the number of values in the chunk")):
            model = s64 / divisor
            if bool((model[bad] != expected[bad]).any()) and bool(
                    ((got - model).abs() <= STAT_RTOL * model.abs()).all()):
                return HINT_MEAN_FOR_SUM.format(by=by)
        return None

    return diagnose


# The ninth learner audit's c06 (silent but for forward.extreme, without a hint): log2(e)
# distributed over the difference in partial_stats, exp2(x * log2(e) - m * log2(e)), the mistake
# of normalize's HINT_LOG2E_DISTRIBUTED made in the first stage.
HINT_PARTIAL_LOG2E_DISTRIBUTED = (
    "log2(e) distributed over the difference in partial_stats: exp2(x * log2(e) - m * log2(e)) "
    "rounds each product in float32 before subtracting, so for large |x| each term "
    "carries an error of ~|x| * 2^-24 and the chunk's sum keeps it; subtract first, then "
    "scale: exp2((x - m) * log2(e))")


def _log2e_distributed_sums(x, chunk: int):
    """Diagnosis: the partial sums of exp2(x * log2(e) - m * log2(e)), replayed in float32 as
    the kernel rounds them (the interpreter rounds both products; a GPU contracts x's product
    and the subtraction into one fma: see _log2e_distributed_normalize). Named only where the
    replay is far from the right sums (on small |x| the mistake is right)."""
    import torch

    x64 = x.detach().cpu().double()

    def diagnose(got, expected, bad):
        tiles = _chunk_tiles(x64, chunk).float()
        m = tiles.amax(dim=2, keepdim=True)
        shift = torch.where(torch.isinf(m), torch.zeros_like(m), m)
        for e in _distributed_exponents(tiles, shift):
            model = torch.exp2(e.double()).sum(dim=2)
            if bool((~((model - expected).abs() <= STAT_RTOL * expected.abs()))[bad].any()) and (
                    _close(got, model, "float32", rtol=STAT_RTOL)):
                return HINT_PARTIAL_LOG2E_DISTRIBUTED
        return None

    return diagnose


def _wrong_base_sums(x, chunk: int):
    """Diagnosis: the partial sums are those of a wrong exponent base (_exponent_models)."""
    x64 = x.detach().cpu().double()

    def diagnose(got, expected, bad):
        for factor, hint in WRONG_BASES:
            _, model = _chunk_stats64(x64, chunk, factor)
            if bool(((got - model).abs() <= STAT_RTOL * model.abs()).all()):
                return hint.format(where=" in partial_stats")
        return None

    return diagnose


# The ninth learner audit's c04 (named "tail not masked", though the load was masked): the
# padded lanes re-filled with 0 for the maximum, m = tl.max(tl.where(mask, x, 0.0)), so a last
# chunk whose values all lie below 0 reports m = 0.
HINT_PAD_IN_MAX = ("tail padded with {pad:g} in the maximum: the last chunk's m is {pad:g}, a value "
                   "it does not hold, where its real values all lie below it (other chunks are "
                   "right); the lanes past the width must stay -inf for tl.max (the load's "
                   "other=-float('inf')), not be replaced by {pad:g} (tl.where(mask, x, {pad:g}) "
                   "or other={pad:g})")


def _pad_in_max(width: int, chunk: int):
    """Diagnosis for the partial maxima: only the ragged last chunk is wrong, every wrong m is
    one and the same stand-in value (0, or a huge finite one such as -1e30 or float32's lowest)
    above the chunk's real maximum: the pad took part in tl.max."""

    def diagnose(got, expected, bad):
        if width % chunk == 0 or not bool(bad.any()) or bool(bad[:, :-1].any()):
            return None
        g, e = got[bad], expected[bad]
        pads = set(g.tolist())
        if len(pads) != 1 or not bool((g > e).all()):
            return None
        pad = pads.pop()
        if not (pad == 0.0 or 1e30 <= abs(pad) < float("inf")):
            return None
        return HINT_PAD_IN_MAX.format(pad=pad)

    return diagnose


def _last_chunk_only(width: int, chunk: int):
    def diagnose(got, expected, bad):
        if width % chunk == 0 or not bool(bad.any()):
            return None
        if bool(bad[:, :-1].any()):
            return None
        # Lanes past the width counted as values can only raise the chunk's maximum and add
        # to its sum (or make them NaN): a smaller value has another cause.
        g, e = got[bad], expected[bad]
        if not bool(((g > e) | g.isnan()).all()):
            return None
        return ("tail not masked: only the last chunk's statistics are wrong; its lanes past "
                "the width must be masked and loaded as -inf")

    return diagnose


# ---------------------------------------------------------------------------------------------
# Stage 2: the merge, against workshop 4's CPU merge of the same chunks
# ---------------------------------------------------------------------------------------------
def _merge_cases(device: str) -> list[Case]:
    # (3, 1025): a merge loop over blocks of up to 1024 states has a last step of one state
    sizes = [(1, 1), (3, 7), (4, 64), (2, 1500), (3, 1025), (5, 33)]
    if device == "cuda":
        sizes += [(64, 128), (8, 4096), (1024, 8)]
    cases = [Case(rows=r, chunks=c, layout="contiguous") for r, c in sizes]
    cases += [Case(rows=5, chunks=33, layout="every_other_column"),
              Case(rows=6, chunks=10, layout="transposed"),
              # only s strided, m contiguous: each must be read with its own strides
              Case(rows=5, chunks=33, layout="contiguous", s_layout="every_other_column"),
              Case(rows=6, chunks=10, layout="contiguous", s_layout="transposed"),
              # rows of states with a spare column between them: a lane read past the last
              # chunk finds a state there, on a GPU as under the interpreter
              Case(rows=4, chunks=9, layout="padded_rows"),
              # every chunk maximum near -1000 (7 chunks: a merge block has padded lanes)
              Case(rows=3, chunks=7, layout="contiguous", shift=-1000.0),
              # every chunk maximum near 1e6, a unit or two apart: a rescale factor computed
              # from m_c * log2(e) - m_row * log2(e) in float32 is ~1e-2 off (the ninth audit's
              # c10). Near 1e4, with the usual spread of 6, one chunk often held nearly all the
              # weight and the rounding hid below STAT_RTOL on about one seed in three; here, in
              # 20000 random draws, the sum was always at least 1.7e-4 off under the
              # interpreter's rounding and 1.4e-3 under a GPU's fma.
              Case(rows=3, chunks=7, layout="contiguous", shift=1e6, spread=1.0),
              # two loop steps again, the chunk maxima a unit apart: with the usual spread of 6
              # a few chunks carry nearly all the weight, and a merge that keeps each lane's
              # larger share (tl.maximum for the sum) was within STAT_RTOL in every row of
              # (2, 1500) on ~4% of seeds (and of (3, 1025) on ~98%: one chunk in the second
              # step); here, in 3000 draws, always at least 25x STAT_RTOL off
              Case(rows=2, chunks=1500, layout="contiguous", spread=1.0)]
    return cases


HINT_STRIDES_MIXED = ("m and s strides mixed up: load s with s's own strides (and m with m's): "
                      "here m is contiguous and s a strided view, and merge_stats is right once "
                      "s is made contiguous")
HINT_MERGE_PAD = ("padded merge lanes loaded with m = 0 (or a finite stand-in for -inf): with "
                  "every chunk maximum far below 0 (7 states at m = -1000 merged), a lane past "
                  "n_chunks adds s * exp(m - m_row) = 0 * exp(0 - m_row) = 0 * inf = NaN (or "
                  "becomes the maximum); load padded lanes with m = -inf and s = 0 so they add "
                  "exactly 0")


# The most lanes a merge program's block may have (the reference reads 1024 states per loop
# step); the diagnoses below try every power of two up to twice it.
MERGE_BLOCK_C_MAX = 1024

HINT_PER_LANE_RESCALE = ("rescale by the row maximum m_row = tl.max(m_acc), not lane by lane by "
                         "m_acc: each s_c was multiplied by exp(m_c - m_acc) with its lane's own "
                         "running maximum, so chunks of different lanes stay on different scales "
                         "(and a padded lane gives exp(-inf - (-inf)) = NaN); use "
                         "s * exp2((m - m_row) * log2(e))")

HINT_MERGE_OUTSIDE = ("merge_stats read outside the (M, C) buffers: mask the chunk lanes "
                      "(c < n_chunks) and step between rows with the row strides; stepping rows "
                      "with the column stride reads another row's statistics")


def _lane_past_the_row(m_in, m64):
    """Diagnosis for a GPU, where nothing stops a load past a row's last state (the
    interpreter's bounds check names it there): are the merged maxima those of each row's C
    states plus the one stored after them (chunk lane C, a mask of c <= n_chunks)?"""

    def diagnose(got, expected, bad):
        torch = __import__("torch")
        rows, chunks = m64.shape
        storage = m_in.detach()
        cells = storage.untyped_storage().nbytes() // storage.element_size()
        flat = torch.as_strided(storage, (cells,), (1,), 0).cpu().double()
        row_stride, chunk_stride = storage.stride()
        past = [storage.storage_offset() + r * row_stride + chunks * chunk_stride
                for r in range(rows)]
        seen = [r for r in range(rows) if 0 <= past[r] < cells]
        if not seen:
            return None
        with_lane = [max(float(m64[r].max()), float(flat[past[r]])) for r in seen]
        got_rows = [float(got[r]) for r in seen]
        differs = any(w != float(m64[r].max()) for w, r in zip(with_lane, seen))
        return HINT_MERGE_OUTSIDE if differs and got_rows == with_lane else None

    return diagnose


def _merge_probe(ctx, impl, m_values, s_values):
    """The learner's merge_stats on one row of given float32 states, as (m_row, s_row) floats,
    or None if it raises."""
    torch = ctx.torch
    m = torch.tensor([m_values], dtype=torch.float32, device=ctx.torch_device)
    s = torch.tensor([s_values], dtype=torch.float32, device=ctx.torch_device)
    try:
        m_row, s_row = impl.merge_stats(m, s)
        return float(m_row[0]), float(s_row[0])
    except Exception:  # noqa: BLE001 - no diagnosis then; the failure itself stands
        return None


def _nothing_added_probe(ctx, impl):
    """Diagnosis (the ninth learner audit's c09): the learner's merge_stats on three benign
    states (m = 0, -1, -2; s = 1): the right m_row 0 with s_row exactly 0 is an s_acc that
    nothing was added to (HINT_MERGE_NOTHING_ADDED). Asked on states of moderate maxima
    because on stats.merge's states near -1000 or 1e4 other mistakes (m_row left out of the
    factor, log2(e) on the maximum alone) give s_row = 0 as well."""

    def diagnose(got, expected, bad):
        if not bool((got == 0).all()):
            return None
        merged = _merge_probe(ctx, impl, [0.0, -1.0, -2.0], [1.0, 1.0, 1.0])
        return HINT_MERGE_NOTHING_ADDED if merged == (0.0, 0.0) else None

    return diagnose


def _merge_pad_probe(ctx, impl, *, nan_only: bool):
    """Diagnosis: merge 7 states at m = -1000 (one row); NaN there, or a maximum of 0, is a
    padded lane loaded with a finite m, if 7 states at maxima above 0 (where a padded lane at
    m = 0 adds 0 * exp(0 - m_row) = 0 and is never the maximum) merge right. `nan_only`: run
    only when the failure shows NaN/Inf."""

    def diagnose(got, expected, bad):
        import math

        if nan_only and not bool((~got.isfinite() & expected.isfinite()).any()):
            return None
        low = _merge_probe(ctx, impl, [-1000.0] * 7, [1.0] * 7)
        if low is None or not (low[1] != low[1] or low[0] == 0.0):
            return None
        # Anything else wrong in the merge (an inverted rescale gives NaN in padded lanes
        # too) fails here as well.
        high = _merge_probe(ctx, impl, [float(k) for k in range(1, 8)], [1.0] * 7)
        right = sum(math.exp(k - 7) for k in range(1, 8))
        if high is None or high[0] != 7.0 or not abs(high[1] - right) <= STAT_RTOL * right:
            return None
        return HINT_MERGE_PAD

    return diagnose


def _per_lane_probe(ctx, impl):
    """Diagnosis (found by the fifth learner audit): is each chunk rescaled by its lane's own
    running maximum m_acc instead of the row's m_row? Asked of the learner's merge_stats: one
    row of 2 * MERGE_BLOCK_C_MAX states (no padded lane in any power-of-two block up to it, so
    no NaN), s = 1, m = 0 for chunk 0, -5 for the rest of the first half, -6 for the second.
    A merge over blocks of B lanes with that mistake gives sum_c exp(m_c - max of lane c % B);
    named when the output is that for some B below the state count (with one block, B = the
    count, every lane holds one state and the mistake is the plain sum: no_rescale's model)."""

    def diagnose(got, expected, bad):
        import math

        n = 2 * MERGE_BLOCK_C_MAX
        m_values = [0.0] + [-5.0] * (n // 2 - 1) + [-6.0] * (n // 2)
        merged = _merge_probe(ctx, impl, m_values, [1.0] * n)
        if merged is None or merged[0] != 0.0:
            return None
        right = sum(math.exp(m) for m in m_values)
        lanes = 2
        while lanes < n:
            lane_max = [max(m_values[j::lanes]) for j in range(lanes)]
            model = sum(math.exp(m - lane_max[c % lanes]) for c, m in enumerate(m_values))
            if abs(model - right) > 100 * STAT_RTOL * right and (
                    abs(merged[1] - model) <= STAT_RTOL * model):
                return HINT_PER_LANE_RESCALE
            lanes *= 2
        return None

    return diagnose


def _inverted_probe(ctx, impl, *, nan_only: bool):
    """Diagnosis: merge 4 states (maxima 0, -1, -2, -3: a power of two, which a block of 4
    lanes holds without a padded lane); a sum of s_c * exp(0 - m_c) is the rescale factor
    inverted. For failures where the case's own states give NaN (with the factor inverted a
    padded lane adds 0 * exp(m_row - (-inf)) = NaN)."""

    def diagnose(got, expected, bad):
        import math

        if nan_only and not bool((~got.isfinite() & expected.isfinite()).any()):
            return None
        m_values, s_values = [0.0, -1.0, -2.0, -3.0], [1.0, 2.0, 3.0, 4.0]
        merged = _merge_probe(ctx, impl, m_values, s_values)
        inverted = sum(s * math.exp(-m) for m, s in zip(m_values, s_values))
        if merged is not None and merged[0] == 0.0 and (
                abs(merged[1] - inverted) <= STAT_RTOL * inverted):
            return HINT_INVERTED
        return None

    return diagnose


def _merge_benign_probe(impl, device, *, nan_only: bool):
    """Diagnosis: merge_stats on one row of benign states (maxima 2, 1, 0, -1, -3 with sums 1
    to 5: no extreme value, and five states, so a block of lanes has padded ones), judged by
    stats.merge's models of a wrong merge. For inputs where a wrong rescale factor overflows to
    inf or underflows to 0 (chunk maxima near +-1e30 or -1000) and no model of the case's own
    states tells one mistake from another: the sixth learner audit's 09 (log2(e) on m_row
    alone) failed forward.extreme with no hint, or "the output is all zeros". `nan_only`: run
    only when the failure shows NaN or Inf."""

    def diagnose(got, expected, bad):
        import torch

        if nan_only and not bool((~got.isfinite() & expected.isfinite()).any()):
            return None
        m64 = torch.tensor([[2.0, 1.0, 0.0, -1.0, -3.0]], dtype=torch.float64)
        s64 = torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0]], dtype=torch.float64)
        try:
            m_row, s_row = impl.merge_stats(m64.float().to(device), s64.float().to(device))
            m_got, s_got = m_row.detach().cpu().double(), s_row.detach().cpu().double()
        except Exception:  # noqa: BLE001 - no diagnosis then; the failure itself stands
            return None
        if s_got.shape != (1,) or m_got.shape != (1,) or float(m_got[0]) != 2.0:
            return None  # the sums' models assume the right maximum
        right = _merge64(m64, s64)
        s_bad = ~((s_got - right).abs() <= STAT_RTOL * right.abs())
        if not bool(s_bad.any()):  # the merge is right: the failure lies elsewhere
            return None
        for diagnosis in _merge_diagnoses(m64, s64):
            hint = diagnosis(s_got, right, s_bad)
            if hint:
                return hint
        return None

    return diagnose


@register(W, "stats.merge", tier="kernel", uses=("merge_stats",), cases=_merge_cases,
          doc="merge_stats on given (M, C) partial states equals workshop 4's CPU merge")
def stats_merge(ctx, impl, case):
    torch = ctx.torch
    # Partial states of random chunks of 32 values, spread in scale so chunk maxima differ a
    # lot (a missing rescale factor exp(m_c - m_row) changes the sum by a large factor).
    values = ctx.randn((case.rows, case.chunks * 32), "float64", scale=4.0,
                       shift=case.get("shift", 0.0), device="cpu")
    values += ctx.randn((case.rows, case.chunks, 1), "float64", scale=case.get("spread", 6.0),
                        device="cpu").expand(-1, -1, 32).reshape(case.rows, -1)
    m64, s64 = _chunk_stats64(values, 32)
    m32, s32 = m64.float(), s64.float()
    # The kernel sees float32 states; the CPU merge gets those same states, widened to float64.
    s_layout = case.get("s_layout", case.layout)
    m_in, s_in = _layout(torch, m32, case.layout), _layout(torch, s32, s_layout)
    m_in, s_in = m_in.to(ctx.torch_device), s_in.to(ctx.torch_device)
    if case.layout != "contiguous":
        m_in = _layout_view(m_in, case.layout)
    if s_layout != "contiguous":
        s_in = _layout_view(s_in, s_layout)
    m_cpu, s_cpu = _merge_cpu(ctx, m32.double(), s32.double())

    def strides_mixed(*_):
        # Only on failure, with m and s in different layouts: right once s is contiguous?
        if s_layout == case.layout:
            return None
        try:
            m_c, s_c = impl.merge_stats(m_in, s_in.contiguous())
        except Exception:  # noqa: BLE001 - no diagnosis then; the failure itself stands
            return None
        right = (bool((m_c.detach().cpu().double() == m_cpu).all())
                 and _close(s_c.detach().cpu().double(), s_cpu, "float32", rtol=STAT_RTOL))
        return HINT_STRIDES_MIXED if right else None

    try:
        m_row, s_row = _call_stats(ctx, impl.merge_stats, m_in, s_in, expect_shape=(case.rows,),
                                   label="merge_stats(m, s)")
    except CheckFailed as exc:
        if "out-of-bounds" not in exc.message:
            raise
        raise CheckFailed(exc.message, hint=strides_mixed() or HINT_MERGE_OUTSIDE) from exc
    diagnose = ([_nothing_added_probe(ctx, impl), strides_mixed,
                 _lane_past_the_row(m_in, m32.double()),
                 _per_lane_probe(ctx, impl), _merge_pad_probe(ctx, impl, nan_only=False),
                 _running_sum_probe(impl, ctx.torch_device)]
                + _merge_diagnoses(m32.double(), s32.double())
                + [_inverted_probe(ctx, impl, nan_only=False),
                   # a factor that overflows on the states near -1000, read on benign ones
                   _merge_benign_probe(impl, ctx.torch_device, nan_only=True)])
    ctx.assert_close(m_row, m_cpu, name="merged maxima m_row", rtol=0.0, atol=0.0,
                     diagnose=diagnose)
    ctx.assert_close(s_row, s_cpu, name="merged sums s_row", rtol=STAT_RTOL, atol=0.0,
                     diagnose=diagnose)


def _layout(torch, t, layout: str):
    """Storage for a (M, C) tensor in a layout (the view is taken on the device)."""
    if layout == "every_other_column":
        wide = torch.full((t.shape[0], 2 * t.shape[1]), float("nan"), dtype=t.dtype)
        wide[:, ::2] = t
        return wide
    if layout == "transposed":
        return t.t().contiguous()
    if layout == "padded_rows":
        # One spare column after each row's C states, holding a state larger than any real
        # one (m = 50, s = 1): a merge that reads lane c = n_chunks takes it as the maximum.
        wide = torch.ones((t.shape[0], t.shape[1] + 1), dtype=t.dtype)
        wide[:, -1] = 50.0
        wide[:, :-1] = t
        return wide
    return t


def _layout_view(t, layout: str):
    if layout == "every_other_column":
        return t[:, ::2]
    if layout == "padded_rows":
        return t[:, :-1]
    return t.t()


def _merge_diagnoses(m64, s64):
    import torch

    def rescaled_shares():
        """Each chunk's share of its row's sum, rescaled to the row's max: (rows, chunks)."""
        return s64 * torch.exp(m64 - m64.amax(dim=1, keepdim=True))

    def by_lanes(terms, lanes: int):
        """terms padded with zeros to whole loop steps of `lanes` chunks: (rows, steps, lanes),
        what a merge loop over blocks of `lanes` chunks holds step by step."""
        steps = -(-terms.shape[1] // lanes)
        padded = torch.zeros((terms.shape[0], steps * lanes), dtype=torch.float64)
        padded[:, :terms.shape[1]] = terms
        return padded.reshape(terms.shape[0], steps, lanes)

    def no_rescale(got, expected, bad):
        if got.shape != expected.shape or m64.shape[1] < 2:
            return None
        if _close(got, s64.sum(dim=1), "float32", rtol=STAT_RTOL):
            return ("partial denominators not rescaled: s_row equals the plain sum of the "
                    "chunks' s_c; each s_c sums exp(x - m_c) and must be multiplied by "
                    "exp(m_c - m_row) first")
        return None

    def inverted(got, expected, bad):
        # s_row equals sum_c s_c * exp(m_row - m_c) in every row, and some wrong row is a number
        # (a merge with padded lanes gives NaN instead: _inverted_probe looks at those)
        if got.shape != expected.shape or m64.shape[1] < 2:
            return None
        model = _inverted_sums(m64, s64)
        if bool(model[bad].isfinite().any()) and _close(got, model, "float32", rtol=STAT_RTOL):
            return HINT_INVERTED
        return None

    def sums_left_out(got, expected, bad):
        # s_acc += exp(m_c - m_row) without the s_c: each chunk counts as a sum of 1
        if got.shape != expected.shape:
            return None
        m_row = m64.amax(dim=1, keepdim=True)
        if _close(got, torch.exp(m64 - m_row).sum(dim=1), "float32", rtol=STAT_RTOL):
            return ("partial sums left out of the merge: s_row equals sum_c exp(m_c - m_row), "
                    "each chunk counted as a sum of 1; multiply each rescale factor by the "
                    "chunk's own sum: s_acc += s * exp2((m - m_row) * log2(e))")
        return None

    def overwritten(got, expected, bad):
        # s_acc = ... for s_acc += ...: only the last loop step's block of chunks is summed.
        # The block is the merge's choice: try each power of two below the chunk count, the
        # largest first (a smaller one whose last step starts at the same chunk fits as well).
        n_chunks = m64.shape[1]
        if got.shape != expected.shape or n_chunks < 2:
            return None
        terms = rescaled_shares()
        block = 1 << (n_chunks - 1).bit_length() - 1  # the largest power of two < n_chunks
        while block >= 1:
            last = (n_chunks - 1) // block * block  # the first chunk of the last loop step
            if _close(got, terms[:, last:].sum(dim=1), "float32", rtol=STAT_RTOL):
                return (f"s_acc overwritten, not accumulated: s_row equals the sum of the last "
                        f"{n_chunks - last} of {n_chunks} chunks only (the last step of a loop "
                        f"over blocks of {block}); add each block's share with s_acc += ...")
            block //= 2
        return None

    def log2e_outside(got, expected, bad):
        # s_acc += s * exp2(m - m_row) * log2(e): one chunk is off by exactly log2(e)
        if got.shape != expected.shape:
            return None
        if _close(got, _log2e_outside_merge(m64, s64), "float32", rtol=STAT_RTOL):
            return HINT_LOG2E_OUTSIDE.format(where=" in merge_stats' rescale factor")
        return None

    def log2e_on_max(got, expected, bad):
        # s_acc += s * exp2(m - m_row * log2(e)): each factor is exp(m_c ln 2 - m_row)
        if got.shape != expected.shape:
            return None
        model = _log2e_on_max_merge(m64, s64)
        if bool(model[bad].isfinite().any()) and _close(got, model, "float32", rtol=STAT_RTOL):
            return _log2e_on_max_hint("merge_stats")
        return None

    def block_max(got, expected, bad):
        # each loop block rescaled to its own maximum (tl.max(m) of the block), not to m_row:
        # right while one block holds every chunk, wrong past it
        if got.shape != expected.shape:
            return None
        for block, model in _block_max_merge(m64, s64):
            if _close(got, model, "float32", rtol=STAT_RTOL):
                return (f"rescaled to the loop block's own maximum: s_row equals the sum over "
                        f"blocks of {block} chunks, each block's s_c multiplied by "
                        f"exp(m_c - max of that block) (tl.max(m) of the block being added); "
                        f"with more than {block} chunks the blocks are on different scales. "
                        f"Rescale every chunk to the row's maximum m_row from pass 1: "
                        f"s * exp2((m - m_row) * log2(e))")
        return None

    def other_row(got, expected, bad):
        if got.shape[0] > 1 and not bool(bad[0]) and bool(bad[1:].any()):
            return ("another row's statistics: row 0 is merged right but later rows are not; "
                    "the merge reads the partial states at the wrong row offset (row stride of "
                    "m or s?)")
        return None

    def wrong_base(got, expected, bad):
        # the rescale factor exp(m_c - m_row) computed in the wrong base (_exponent_models)
        if got.shape != expected.shape or m64.shape[1] < 2:
            return None
        m_row = m64.amax(dim=1, keepdim=True)
        shift = torch.where(torch.isinf(m_row), torch.zeros_like(m_row), m_row)
        for factor, hint in WRONG_BASES:
            model = (s64 * torch.exp(factor * (m64 - shift))).sum(dim=1)
            if bool(model[bad].isfinite().any()) and _close(got, model, "float32",
                                                                rtol=STAT_RTOL):
                return hint.format(where=" in merge_stats' rescale factor")
        return None

    def reduced_into_lanes(got, expected, bad):
        # Found by the fifth learner audit: s_acc += tl.sum(s * exp2(...), axis=0) adds the
        # block's reduced sum to every one of the BLOCK_C lanes, and the final tl.sum counts it
        # BLOCK_C times: s_row is exactly a power of two (the lanes) times the right value.
        if got.shape != expected.shape or m64.shape[1] < 2:
            return None
        m_row = m64.amax(dim=1, keepdim=True)
        right = (s64 * torch.exp(m64 - m_row)).sum(dim=1)
        if not bool(right[bad].isfinite().any()):
            return None
        lanes = 2
        while lanes <= 2 * MERGE_BLOCK_C_MAX:
            if _close(got, lanes * right, "float32", rtol=STAT_RTOL):
                return (f"s_row is exactly {lanes} x the right value: a reduced scalar was "
                        f"added into every lane of s_acc (s_acc += tl.sum(...) adds the block's "
                        f"sum to each of its {lanes} lanes, and the final tl.sum adds the lanes "
                        f"up); add the vector, s_acc += s * exp2((m - m_row) * log2(e)), and "
                        f"let the final tl.sum reduce it")
            lanes *= 2
        return None

    def max_left_out(got, expected, bad):
        # The seventh learner audit's 04: s_acc += s * exp2(m * log2(e)), m_row left out
        if got.shape != expected.shape:
            return None
        model = _max_left_out_merge(m64, s64)
        if bool(model[bad].isfinite().any()) and _close(got, model, "float32", rtol=STAT_RTOL):
            return HINT_MERGE_MAX_LEFT_OUT
        return None

    def lane_max_for_m(got, expected, bad):
        # The seventh learner audit's 05: pass 1's m_acc (each lane's maximum over every loop
        # step) in the factor for the chunk's own m; the same while one step holds every chunk
        n_chunks = m64.shape[1]
        if got.shape != expected.shape or n_chunks < 2:
            return None
        m_row = m64.amax(dim=1, keepdim=True)
        lanes = 1 << (n_chunks - 1).bit_length() - 1  # the largest power of two < n_chunks
        while lanes >= 1:
            padded = torch.full((m64.shape[0], -(-n_chunks // lanes) * lanes), float("-inf"),
                                dtype=torch.float64)
            padded[:, :n_chunks] = m64
            lane_max = padded.reshape(m64.shape[0], -1, lanes).amax(dim=1)  # (M, lanes)
            m_acc = lane_max[:, torch.arange(n_chunks) % lanes]  # each chunk's lane's maximum
            model = (s64 * torch.exp(m_acc - m_row)).sum(dim=1)
            if _close(got, model, "float32", rtol=STAT_RTOL):
                return HINT_LANE_MAX_FOR_M.format(lanes=lanes, steps=-(-n_chunks // lanes))
            lanes //= 2
        return None

    def lanes_reduced_by_max(got, expected, bad):
        # The tenth learner audit's a13: tl.max(s_acc, axis=0) where the final tl.sum belongs:
        # s_row is the largest lane's sum, not the lanes' total. While one loop step holds
        # every chunk (BLOCK_C >= the chunks, the launcher's choice up to MERGE_BLOCK_C_MAX),
        # each lane holds one chunk's share, and s_row is the largest share. (That is also
        # lane_max_across_steps' model with one lane, a BLOCK_C no launcher picks: heard first.)
        n_chunks = m64.shape[1]
        if got.shape != expected.shape or n_chunks < 2:
            return None
        terms = rescaled_shares()
        # the launcher's lane count first (where a smaller one fits too, it names the truth),
        # then the others: from 2 lanes up to the first that holds every chunk in one step
        default = min(1 << (n_chunks - 1).bit_length(), MERGE_BLOCK_C_MAX)
        counts = [2]
        while counts[-1] < min(n_chunks, 2 * MERGE_BLOCK_C_MAX):
            counts.append(2 * counts[-1])
        for lanes in [default] + [c for c in counts if c != default]:
            steps = -(-n_chunks // lanes)
            model = by_lanes(terms, lanes).sum(dim=1).amax(dim=1)
            if _close(got, model, "float32", rtol=STAT_RTOL) and not _close(
                    expected, model, "float32", rtol=STAT_RTOL):
                held = ("each lane holds one chunk's rescaled share, so s_row is the largest "
                        "share" if steps == 1 else f"s_row is the largest of the {lanes} lanes' sums")
                return ("tl.max where the final tl.sum belongs in merge_stats: " + held
                        + ", not the total of s_acc's lanes; reduce them with tl.sum(s_acc, axis=0)")
        return None

    def lane_max_across_steps(got, expected, bad):
        # The ninth learner audit's c08: s_acc = tl.maximum(s_acc, s * exp2(...)), pass 1's
        # tl.maximum copied into pass 2: each lane keeps the largest rescaled sum of its loop
        # steps; the same as the sum while one step holds every chunk
        n_chunks = m64.shape[1]
        if got.shape != expected.shape or n_chunks < 2:
            return None
        terms = rescaled_shares()
        lanes = 1 << (n_chunks - 1).bit_length() - 1  # the largest power of two < n_chunks
        while lanes >= 1:
            model = by_lanes(terms, lanes).amax(dim=1).sum(dim=1)
            if _close(got, model, "float32", rtol=STAT_RTOL):
                return HINT_MERGE_LANE_MAXIMUM.format(lanes=lanes, steps=-(-n_chunks // lanes))
            lanes //= 2
        return None

    def nothing_added(got, expected, bad):
        # The ninth learner audit's c09: `s_acc + s * exp2(...)` as a statement (the sum is
        # computed and dropped), or the update left out: s_acc stays 0, and so does s_row,
        # while m_row (pass 1) is right
        if got.shape != expected.shape or not bool((expected[bad] > 0).all()):
            return None
        return HINT_MERGE_NOTHING_ADDED if bool((got == 0).all()) else None

    def log2e_distributed(got, expected, bad):
        # The ninth learner audit's c10: exp2(m * log2(e) - m_row * log2(e)), replayed in float32
        if got.shape != expected.shape:
            return None
        for model in _log2e_distributed_merge(m64, s64):
            if bool((~((model - expected).abs() <= STAT_RTOL * expected.abs()))[bad].any()) and (
                    _close(got, model, "float32", rtol=STAT_RTOL)):
                return HINT_MERGE_LOG2E_DISTRIBUTED
        return None

    # other_row is a symptom only ("row 0 right, a later row wrong"), so it is heard last:
    # every exact model of a wrong merge can leave row 0 within tolerance on some seeds (the
    # distributed log2(e) rounding; tl.maximum for the sum, where row 0's dropped terms were
    # small, as one CI seed of the (2, 1500) case showed) and must speak first.
    return [no_rescale, inverted, sums_left_out, overwritten, log2e_outside, block_max,
            log2e_distributed, wrong_base, reduced_into_lanes, log2e_on_max, max_left_out,
            lane_max_for_m, lanes_reduced_by_max, lane_max_across_steps, nothing_added, other_row]


HINT_MERGE_LANE_MAXIMUM = ("tl.maximum where the sum belongs in merge_stats' pass 2: s_row equals "
                           "the sum over {lanes} lanes of each lane's largest rescaled s_c of its "
                           "{steps} loop steps, so a lane keeps one chunk's share and drops the "
                           "others (right only while one loop step holds every chunk); add them: "
                           "s_acc += s * exp2((m - m_row) * log2(e))")
HINT_MERGE_NOTHING_ADDED = ("nothing was added to s_acc in merge_stats: s_row is 0 in every row "
                            "while m_row is right; `s_acc + s * ...` on its own line computes "
                            "the sum and drops it (or the update is missing): accumulate with "
                            "s_acc += s * exp2((m - m_row) * log2(e))")
HINT_MERGE_LOG2E_DISTRIBUTED = (
    "log2(e) distributed over the difference in merge_stats' rescale factor: exp2(m_c * log2(e) "
    "- m_row * log2(e)) rounds each product in float32 before subtracting, so for maxima of "
    "large |m| each factor carries an error of ~|m| * 2^-24; subtract first, then "
    "scale: exp2((m - m_row) * log2(e))")


def _log2e_distributed_merge(m, s):
    """(M,) merged sums with the factor exp2(m_c * log2(e) - m_row * log2(e)) in float32, as
    the interpreter rounds it (both products) and as a GPU does (one fma): see
    _log2e_distributed_normalize. m, s: the float32 states, as float64."""
    import torch

    m32 = m.float()
    # a padded or -inf chunk: -inf - finite = -inf, exp2 = 0, 0 * s = 0
    return [(s * torch.exp2(e.double())).nan_to_num(0.0).sum(dim=1)
            for e in _distributed_exponents(m32, m32.amax(dim=1, keepdim=True))]


HINT_MERGE_MAX_LEFT_OUT = ("m_row left out of merge_stats' rescale factor: s_row = sum_c s_c * "
                           "exp(m_c), each chunk scaled by its own maximum alone (a row's values "
                           "far from 0 overflow to inf or vanish); the factor is "
                           "exp(m_c - m_row): s * exp2((m - m_row) * log2(e))")
HINT_LANE_MAX_FOR_M = ("pass 1's running maximum m_acc used for the chunk's own m in merge_stats' "
                       "factor: s_row equals sum_c s_c * exp(m_acc[lane of c] - m_row) with "
                       "{lanes} lanes and {steps} loop steps, so a chunk that shares its lane "
                       "with a larger one is scaled up; right only while one loop step holds "
                       "every chunk. Use the m loaded in this step: s * exp2((m - m_row) * "
                       "log2(e))")


def _max_left_out_merge(m, s):
    """(M,) merged sums with m_row left out of the factor: sum_c s_c * exp(m_c) (0 for a chunk of
    only -inf); inf where float32 overflows, as the kernel's sum does."""
    import torch

    total = (s * torch.exp(m)).sum(dim=1)
    too_big = total > torch.finfo(torch.float32).max
    return torch.where(too_big, torch.full_like(total, float("inf")), total)


# ---------------------------------------------------------------------------------------------
# Stages 1 + 2 on a real input, against workshop 4's merge of float64 chunk statistics
# ---------------------------------------------------------------------------------------------
def _pipeline_cases(device: str) -> list[Case]:
    if device == "cuda":
        specs = [((3, 100), 16), ((8, 131072), 1024), ((64, 131072), 8192), ((2, 262144), 16384),
                 ((7, 131071), 2048)]
    else:
        specs = [((2, 12), 4), ((3, 100), 16), ((5, 1000), 64), ((2, 4097), 256)]
    return [Case(shape=s, chunk=c, dtype=d) for s, c in specs for d in DTYPES]


@register(W, "stats.pipeline", tier="kernel", uses=("partial_stats", "merge_stats"),
          cases=_pipeline_cases,
          doc="merge_stats(partial_stats(x)) equals workshop 4's merge of float64 chunk states")
def stats_pipeline(ctx, impl, case):
    x = ctx.randn(case.shape, case.dtype, scale=3.0)
    n_rows, n_cols = case.shape
    n_chunks = -(-n_cols // case.chunk)
    m, s = _call_stats(ctx, impl.partial_stats, x, case.chunk, expect_shape=(n_rows, n_chunks),
                       label="partial_stats(x, chunk)")
    m_row, s_row = _call_stats(ctx, impl.merge_stats, m, s, expect_shape=(n_rows,),
                               label="merge_stats(m, s)")
    m64, s64 = _chunk_stats64(x.detach().cpu().double(), case.chunk)
    m_cpu, s_cpu = _merge_cpu(ctx, m64, s64)
    x64 = x.detach().cpu().double()

    def partial_log2e_outside(got, expected, bad):
        # the partial sums log2(e) * sum 2^(x - m_c), merged right
        if got.shape != expected.shape:
            return None
        model = _merge64(m64, _log2e_outside_partial(x64, case.chunk))
        if not _close(got, model, "float32", rtol=STAT_RTOL):
            return None
        if _close(got, _log2e_outside_merge(m64, s64), "float32", rtol=STAT_RTOL):
            # every term e^0 = 2^0 or 0 (constant chunks): the merge's mistake gives this too
            return HINT_LOG2E_OUTSIDE.format(
                where=" in partial_stats or in merge_stats (this input cannot tell which)")
        return HINT_LOG2E_OUTSIDE.format(where=" in partial_stats")

    def partial_stage(got, expected, bad):
        # The partial states this check merged, judged as stats.partial judges them: when they
        # are wrong the merge is not to blame (tl.max for tl.sum there gives what a merge that
        # leaves the sums out gives), and stats.partial's diagnoses name the mistake.
        return _partial_sums_hint(x, case.chunk, m.detach().cpu().double(),
                                  s.detach().cpu().double(), m64, s64)

    diagnose = ([partial_log2e_outside, partial_stage, _stage_probe(impl, x, case.chunk),
                 _running_sum_probe(impl, ctx.torch_device)]
                + _merge_diagnoses(m64, s64) + [_inverted_probe(ctx, impl, nan_only=True)])
    ctx.assert_close(m_row, m_cpu, name="merged maxima m_row", rtol=0.0, atol=0.0,
                     diagnose=diagnose)
    ctx.assert_close(s_row, s_cpu, name="merged sums s_row", rtol=STAT_RTOL, atol=0.0,
                     diagnose=diagnose)


# ---------------------------------------------------------------------------------------------
# Stage 3 alone: normalize with given (correct) row statistics
# ---------------------------------------------------------------------------------------------
def _normalize_cases(device: str) -> list[Case]:
    # The chunks of stats.partial (ragged widths, several chunks per row, one chunk per row),
    # plus the default chunk on a ragged width.
    return ([c for c in _partial_cases(device) if "kind" not in c]
            + [Case(shape=(2, 4097), chunk=None, dtype=d) for d in DTYPES])


def _row_scale_only(dtype: str):
    """Diagnosis for normalize given the right statistics (after the named models): every row
    is the right softmax times one constant c_r != 1 of its own: got equals c_r * expected, c_r
    measured as the row's sum of got. Then the numerator's shape is right and only the per-row
    scale is wrong: the max shift or the 1 / s_row factor."""

    def diagnose(got, expected, bad):
        from checks.compare import agrees, tolerance_for

        tol = tolerance_for(dtype)
        if got.shape[-1] < 2 or not bool(got.isfinite().all()):
            return None
        c = got.sum(dim=1, keepdim=True) / expected.sum(dim=1, keepdim=True)
        bad_rows = bad.any(dim=1)
        # Each row's factor from its own sum; then every element must follow it. A row of
        # zeros (c = 0) is a symptom of many mistakes, not a scale.
        if not bool((c[bad_rows] > 0).all()) or not bool(
                ((c[bad_rows] - 1).abs() > 10 * tol.rtol).all()):
            return None
        # the rounding of the store is relative to the scaled value: 2 roundings' room
        if not bool(agrees(got, c * expected, 2 * tol.rtol, tol.atol).all()):
            return None
        factors = ", ".join(f"{float(v):.4g}" for v in c[bad_rows].flatten()[:3])
        return ("row scale wrong in normalize: every row has the right shape but is off by one "
                f"constant factor of its own (rows sum to {factors} instead of 1); with the "
                "right m_row and s_row given, the numerator's shift by m_row or the 1 / s_row "
                "factor is wrong: y = exp2((x - m_row) * log2(e)) * (1 / s_row)")

    return diagnose


def _exact_row_stats(ctx, x64):
    """The row statistics built right in float64, then rounded to the float32 the API takes (m
    exactly: a maximum of values float32 holds; s to half an eps32), on the check's device, and
    the float64 softmax computed from those rounded values: so only normalize's own arithmetic
    is judged. Returns (m_row, s_row, expected)."""
    torch = ctx.torch
    m64 = x64.amax(dim=1)
    s64 = torch.exp(x64 - m64[:, None]).sum(dim=1)
    m_row, s_row = m64.float().to(ctx.torch_device), s64.float().to(ctx.torch_device)
    expected = torch.exp(x64 - m_row.cpu().double()[:, None]) / s_row.cpu().double()[:, None]
    return m_row, s_row, expected


@register(W, "normalize.values", tier="kernel", uses=("normalize",), cases=_normalize_cases,
          doc="normalize(x, m_row, s_row) against float64 with correct statistics; fresh output")
def normalize_values(ctx, impl, case):
    torch = ctx.torch
    x = ctx.randn(case.shape, case.dtype, scale=3.0)
    x64 = x.detach().cpu().double()
    m_row, s_row, expected = _exact_row_stats(ctx, x64)
    kwargs = {} if case.chunk is None else {"chunk": case.chunk}
    label = "normalize(x, m_row, s_row, chunk)"
    # ctx.call fails if x, m_row or s_row changed, or if y is (a view of) one of them.
    y = ctx.call(impl.normalize, x, m_row, s_row, expect_shape=case.shape,
                 expect_dtype=case.dtype, expect_contiguous=True, name=label, **kwargs)
    chunk = _chunk_for(impl, case, x)

    def no_denominator(got, exp, bad):
        numerator = torch.exp(x64 - m_row.cpu().double()[:, None])
        if _close(got, numerator, case.dtype):
            return HINT_NO_DENOMINATOR
        if _close(got, numerator * s_row.cpu().double()[:, None], case.dtype):
            return HINT_TIMES_SUM
        return None

    diagnose = ([no_denominator]
                + _output_diagnoses(impl, x, chunk, case.dtype, merge=False)
                + [_row_scale_only(case.dtype)])
    ctx.assert_close(y, expected, name=label, diagnose=diagnose)
    # Again with the statistics as strided views (every other element of a wider buffer, as a
    # caller slicing a (2, M) workspace would pass them): same values, a new output.
    wide = torch.stack([m_row, s_row], dim=1).repeat(1, 2)  # (M, 4): m, s, m, s per row
    m_view, s_view = wide[:, 2], wide[:, 3]
    again = ctx.call(impl.normalize, x, m_view, s_view, expect_shape=case.shape,
                     expect_dtype=case.dtype, expect_contiguous=True,
                     name="normalize(x, strided m_row, strided s_row, chunk)", **kwargs)
    if again.data_ptr() == y.data_ptr():
        ctx.fail("two calls of normalize returned the same output tensor",
                 hint=CACHED_BUFFER_HINT)
    ctx.assert_close(again, expected, name="normalize with strided m_row, s_row", diagnose=[
        lambda g, e, bad: ("m_row / s_row strides ignored: with the statistics as strided views "
                           "the rows read the wrong values; index them by their stride, or "
                           "copy them contiguous first")] + diagnose)


# ---------------------------------------------------------------------------------------------
# Round once: y in float32, rounded to the output dtype only at the store (ulp-precise)
# ---------------------------------------------------------------------------------------------
# Found by the fifth learner audit: exp2(...) or 1 / s_row rounded to bfloat16 before the final
# multiply leaves outputs up to ~2.7 ulp off, inside normalize.values' rtol. The bound depends on
# how the device rounds float32 -> bfloat16 (tools/probe_round_once.py emulates both on the CPU;
# diagnostics/probe-round-once-20261202-cpu.txt):
# - a GPU rounds to nearest: the reference is at most 0.5 ulp off (plus float32's own error, a few
#   1e-4 ulp), and either mistake reaches 1.1-1.4 ulp with hundreds of elements past 0.75;
# - Triton's interpreter truncates: the reference itself reaches 1.0 ulp, the mistakes 2.4-2.8.
ROUND_ONCE_ULP = {"nearest": 0.75, "truncating": 1.5}


def _bf16_ulps(got, expected):
    """|got - expected| in units of bfloat16's spacing at |expected| (8 significand bits;
    normal numbers only: the callers keep to outputs above 2^-100)."""
    import torch

    exponent = torch.floor(torch.log2(expected.abs()))
    return (got - expected).abs() / torch.pow(2.0, exponent - 7)


def _round_bf16(x32, truncate: bool):
    """float32 -> float32 holding the value rounded to bfloat16: to nearest even, or toward zero
    (what Triton's interpreter does for float32 -> bfloat16)."""
    import torch

    if truncate:
        return (x32.contiguous().view(torch.int32) & -65536).view(torch.float32)
    return x32.to(torch.bfloat16).float()


def _early_rounding_models(x, m_row, s_row, truncate: bool):
    """The two early roundings replayed as the kernel computes them (float32, each rounding to
    bfloat16 as the device rounds): exp2(...) rounded before the multiply by 1 / s_row, and
    1 / s_row rounded before it multiplies exp2(...). Returns [(hint, y as float64)]."""
    import math

    import torch

    t = (x.detach().cpu().float() - m_row.cpu()[:, None]) * math.log2(math.e)
    e = torch.exp2(t)
    inv_s = (1.0 / s_row.cpu())[:, None]
    stored = [(_round_bf16(e, truncate) * inv_s, "exp2((x - m_row) * log2(e))"),
              (e * _round_bf16(inv_s, truncate), "1 / s_row")]
    return [(f"rounded to the output dtype before the final multiply: the output is what "
             f"{what} rounded to bfloat16 first gives (two roundings, up to ~3 ulp off); "
             "compute y = exp2((x - m_row) * log2(e)) * (1 / s_row) in float32 and round once, "
             "at the store (y.to(y_ptr.dtype.element_ty))",
             _round_bf16(y, truncate).double()) for y, what in stored]


@register(W, "contract.round_once", tier="kernel", uses=("normalize",),
          cases=[Case(shape=(8, 1000), chunk=256, scale=3.0),
                 Case(shape=(4, 4097), chunk=None, scale=2.0)],
          doc="bfloat16 normalize within 0.75 ulp of float64 on a GPU (1.5 under the interpreter, "
              "which truncates): y computed in float32 and rounded once, at the store")
def contract_round_once(ctx, impl, case):
    torch = ctx.torch
    x = ctx.randn(case.shape, "bfloat16", scale=case.scale)
    m_row, s_row, expected = _exact_row_stats(ctx, x.detach().cpu().double())
    kwargs = {} if case.chunk is None else {"chunk": case.chunk}
    label = "normalize(x, m_row, s_row) in bfloat16"
    y = ctx.call(impl.normalize, x, m_row, s_row, expect_shape=case.shape,
                 expect_dtype="bfloat16", expect_contiguous=True, name=label, **kwargs)
    # normalize.values judges the values (and names its mistakes here too, where they are
    # far off); here only their last bits, where they are close
    ctx.assert_close(y, expected, name=label, diagnose=_output_diagnoses(
        impl, x, _chunk_for(impl, case, x), "bfloat16", merge=False))
    got = y.detach().cpu().double()
    judged = expected >= 2.0 ** -100
    ulps = torch.where(judged, _bf16_ulps(got, expected), torch.zeros_like(expected))
    worst = float(ulps.max())
    truncate = ctx.device == "interpreter"  # how float32 -> bfloat16 rounds here
    bound = ROUND_ONCE_ULP["truncating" if truncate else "nearest"]
    if worst <= bound:
        return
    over = int((ulps > bound).sum())
    at = tuple(int(i) for i in torch.unravel_index(torch.argmax(ulps), ulps.shape))
    message = (f"{label}: {over} of {got.numel()} outputs more than {bound} ulp of "
               f"bfloat16 from float64; worst {worst:.2f} ulp at {at}: got {float(got[at]):.6g}, "
               f"expected {float(expected[at]):.6g}")
    hint = ("more than one rounding: compute y in float32 and round it to the output dtype "
            "once, at the store")
    for named, model in _early_rounding_models(x, m_row, s_row, truncate):
        # the learner's bits equal the replay's (a rare neighbour: exp2's last float32 bit)
        if float((got == model).double().mean()) >= 0.95:
            hint = named
            break
    ctx.fail(message, hint=hint)


# ---------------------------------------------------------------------------------------------
# The whole softmax
# ---------------------------------------------------------------------------------------------
def _values_cases(device: str) -> list[Case]:
    if device == "cuda":
        specs = [((1, 1), None), ((3, 5), 4), ((1, 131072), None), ((8, 131072), None),
                 ((8, 131072), 1024), ((64, 131072), None), ((64, 131072), 16384),
                 ((5, 131071), 4096), ((2, 262144), None), ((1, 262147), 8192),
                 ((1024, 4096), None), ((37, 4097), 512), ((1823, 781), None)]
    else:
        specs = [((1, 1), None), ((2, 12), 4), ((1, 16), 16), ((3, 100), 16), ((4, 512), 64),
                 ((2, 4097), 1024), ((2, 4097), None)]
    return [Case(shape=s, chunk=c, dtype=d) for s, c in specs for d in DTYPES]


@register(W, "forward.values", tier="kernel", uses=STAGES, cases=_values_cases,
          doc="split_softmax against float64 softmax; chunks that divide and do not divide N")
def forward_values(ctx, impl, case):
    x = ctx.randn(case.shape, case.dtype, scale=3.0)
    kwargs = {} if case.chunk is None else {"chunk": case.chunk}
    y = ctx.call(impl.split_softmax, x, expect_shape=case.shape, expect_dtype=case.dtype,
                 expect_contiguous=True, **kwargs)
    ctx.assert_close(y, _softmax64(x), name="split_softmax(x)",
                     diagnose=_output_diagnoses(impl, x, _chunk_for(impl, case, x), case.dtype))


def _strided_cases(device: str) -> list[Case]:
    shapes = [(3, 100), (5, 2000)] if device != "cuda" else [(3, 100), (64, 131072), (4096, 640)]
    layouts = ("transposed", "column_step", "row_slice", "broadcast_rows")
    return [Case(shape=s, layout=layout, dtype=d, chunk=64)
            for s in shapes for layout in layouts for d in DTYPES
            if not (device != "cuda" and s[1] > 1000 and d != "float32")]


def _strided_input(ctx, shape, layout: str, dtype: str):
    """A view of `shape` with the given layout (never contiguous)."""
    n_rows, n_cols = shape
    if layout == "transposed":
        return ctx.randn((n_cols, n_rows), dtype, scale=3.0).t()
    if layout == "column_step":
        return ctx.randn((n_rows, 2 * n_cols), dtype, scale=3.0)[:, ::2]
    if layout == "row_slice":  # rows padded in memory: stride(0) > n_cols
        return ctx.randn((n_rows + 1, n_cols + 13), dtype, scale=3.0)[1:, 5:5 + n_cols]
    if layout == "broadcast_rows":  # stride 0 between rows: every row is the same memory
        return ctx.randn((1, n_cols), dtype, scale=3.0).expand(n_rows, n_cols)
    raise ValueError(layout)


HINT_Y_WITH_X_STRIDES = ("y written with x's strides in normalize: for a transposed x the output's "
                         "memory holds the right values where x keeps them (read back with x's "
                         "strides); y is a new contiguous tensor: store with y.stride(0), "
                         "y.stride(1) (stride_ym, stride_yn), load with x's")


def _y_with_x_strides_probe(ctx, impl, x, chunk: int):
    """Diagnosis (the tenth learner audit's a09, named "stride ignored", which sends the learner
    to the load): normalize on the same values stored transposed, with the right statistics;
    named when its output is wrong but read back with x's strides is right, as a store with
    stride_xm, stride_xn for y's leaves it. Asked on a transposed copy, whose strides stay
    inside y's memory: a sliced or stepped x makes such a store leave it (an out-of-bounds
    store under the interpreter, which no output shows)."""

    def diagnose(*_):
        n_rows, n_cols = x.shape
        if n_rows < 2 or n_cols < 2:
            return None
        xt = x.detach().contiguous().t().contiguous().t()  # same values, column-major
        x64 = xt.cpu().double()
        m_row, s_row, right = _exact_row_stats(ctx, x64)
        try:
            y = impl.normalize(xt, m_row, s_row, chunk)
            y64 = y.detach().cpu().double()
        except Exception:  # noqa: BLE001 - no diagnosis then; the failure itself stands
            return None
        if tuple(y64.shape) != (n_rows, n_cols) or not y.is_contiguous():
            return None
        back = y64.reshape(-1).as_strided((n_rows, n_cols), tuple(xt.stride()), 0)
        dtype = str(x.dtype).replace("torch.", "")
        if _close(back, right, dtype) and not _close(y64, right, dtype):
            return HINT_Y_WITH_X_STRIDES
        return None

    return diagnose


@register(W, "forward.strided", tier="kernel", uses=STAGES, cases=_strided_cases,
          doc="transposed, stepped, sliced and broadcast views: strides passed, not assumed")
def forward_strided(ctx, impl, case):
    x = _strided_input(ctx, case.shape, case.layout, case.dtype)
    y_strides = _y_with_x_strides_probe(ctx, impl, x, case.chunk)
    try:
        y = ctx.call(impl.split_softmax, x, chunk=case.chunk, expect_shape=case.shape,
                     expect_dtype=case.dtype, expect_contiguous=True)
    except CheckFailed as exc:
        # a stepped or sliced x's strides reach past y's memory: the store itself faults
        if "out-of-bounds store" in exc.message:
            exc.hint = y_strides() or exc.hint
        raise

    def stride_ignored(got, expected, bad):
        # Only on failure: are the same values right when they come contiguous?
        if case.layout == "broadcast_rows":
            return None
        try:
            y_contig = impl.split_softmax(x.contiguous(), chunk=case.chunk)
        except Exception:  # noqa: BLE001 - no diagnosis then; the failure itself stands
            return None
        if _close(y_contig.detach().double().cpu(), expected, case.dtype):
            return ("stride ignored: the same values in a contiguous tensor give the right "
                    "answer, so a kernel assumes a layout; pass and use x.stride(0) and "
                    "x.stride(1) (stride_xm, stride_xn)")
        return None

    ctx.assert_close(y, _softmax64(x), name=f"split_softmax({case.layout} view)",
                     diagnose=[y_strides, stride_ignored]
                     + _output_diagnoses(impl, x, case.chunk, case.dtype))


def _invariance_cases(device: str) -> list[Case]:
    if device == "cuda":
        return [Case(shape=(8, 131072), dtype=d, chunks=(1024, 2048, 8192, 16384)) for d in DTYPES]
    return [Case(shape=(3, 1000), dtype=d, chunks=(16, 64, 256, 1024)) for d in DTYPES]


def _stats_stage_hint(ctx, impl, x, chunk: int, m, s, s_row) -> str | None:
    """What stats.pipeline would say of the statistics one chunk size gave: the partial states
    (m, s) judged by stats.partial's models, and where they are right, the merged sums s_row by
    stats.merge's. None where that chunk size's statistics are right or no model names them."""
    x64 = x.detach().cpu().double()
    m64, s64 = _chunk_stats64(x64, chunk)
    m_c, s_c = m.detach().cpu().double(), s.detach().cpu().double()
    wrong = _stats_wrong(m_c, s_c, m64, s64)
    if wrong is None:
        return None
    if bool(wrong.any()):  # wrong partial states: the merge is not to blame
        return (_partial_sums_hint(x, chunk, m_c, s_c, m64, s64)
                or _x_dtype_probe(impl, x, chunk)(None, None, None))
    right = _merge64(m64, s64)
    got = s_row.detach().cpu().double()
    bad = ~((got - right).abs() <= STAT_RTOL * right.abs())
    if got.shape != right.shape or not bool(bad.any()):
        return None
    for diagnosis in [_running_sum_probe(impl, ctx.torch_device)] + _merge_diagnoses(m64, s64):
        hint = diagnosis(got, right, bad)
        if hint:
            return hint
    return None


@register(W, "forward.chunk_invariance", tier="kernel", uses=STAGES, cases=_invariance_cases,
          doc="chunk size changes only rounding: same m_row exactly, s_row and y within tolerance")
def chunk_invariance(ctx, impl, case):
    x = ctx.randn(case.shape, case.dtype, scale=3.0)
    first = None
    for chunk in case.chunks:
        n_chunks = -(-case.shape[1] // chunk)
        m, s = _call_stats(ctx, impl.partial_stats, x, chunk,
                           expect_shape=(case.shape[0], n_chunks), label=f"partial_stats(chunk={chunk})")
        m_row, s_row = _call_stats(ctx, impl.merge_stats, m, s, expect_shape=(case.shape[0],),
                                   label="merge_stats(m, s)")
        y = ctx.call(impl.split_softmax, x, chunk=chunk, expect_shape=case.shape,
                     expect_dtype=case.dtype)
        if first is None:
            # copies: a later call must not be able to change what it is compared with
            first = (case.chunks[0], m_row.clone(), s_row.clone(), y.clone(), m.clone(), s.clone())
            continue
        c0, m0, s0, y0, m_first, s_first = first
        what = f"chunk={chunk} vs chunk={c0}"

        def stage_cause(got, expected, bad, chunk=chunk, m=m, s=s, s_row=s_row):
            # Which of the two chunk sizes' statistics are wrong, and how, read as
            # stats.pipeline reads them (the sixth learner audit's log2(e) mistakes got only
            # the generic hint below)
            return (_stats_stage_hint(ctx, impl, x, chunk, m, s, s_row)
                    or _stats_stage_hint(ctx, impl, x, c0, m_first, s_first, s0))

        ctx.assert_close(m_row, m0.double(), name=f"m_row, {what}", rtol=0.0, atol=0.0,
                         diagnose=[_argmax_probe(impl, ctx.torch_device),
                                   always("the row maximum must not depend on the chunk "
                                          "size: is the last chunk masked with -inf?")])
        # Two float32 sums of the same terms, grouped differently: within 2x the check's bound.
        ctx.assert_close(s_row, s0.double(), name=f"s_row, {what}", rtol=2 * STAT_RTOL, atol=0.0,
                         diagnose=[stage_cause,
                                   always("the denominator depends on the chunk size: "
                                          "a chunk's sum, the merge or the last chunk's mask is "
                                          "wrong (stats.partial and stats.merge name the cause)")])
        # Each output is within tolerance of float64 (forward.values); two of them may differ
        # by both errors: twice the output tolerance.
        from checks.compare import tolerance_for

        tol = tolerance_for(case.dtype)
        ctx.assert_close(y, y0.double(), name=f"y, {what}", rtol=2 * tol.rtol, atol=2 * tol.atol)


@register(W, "forward.launches", tier="kernel", uses=STAGES,
          cases=[Case(shape=(3, 100), chunk=16), Case(shape=(2, 12), chunk=None),
                 Case(shape=(1, 4097), chunk=1024),
                 # empty tensors: no launch at all, an empty output of x's shape and dtype
                 Case(shape=(0, 5), chunk=None, dtype="float16"),
                 Case(shape=(3, 0), chunk=16, dtype="float32"),
                 Case(shape=(0, 0), chunk=None, dtype="bfloat16")],
          doc="exactly three launches per call, in order: partial, merge, normalize; none for "
              "an empty tensor")
def forward_launches(ctx, impl, case):
    dtype = case.get("dtype", "float32")
    x = ctx.randn(case.shape, dtype)
    kwargs = {} if case.chunk is None else {"chunk": case.chunk}
    with ctx.count_launches() as log:
        y = ctx.call(impl.split_softmax, x, **kwargs, expect_shape=case.shape,
                     expect_dtype=dtype)
    if x.numel() == 0:
        if log:
            ctx.fail(f"split_softmax of an empty {tuple(case.shape)} tensor launched {log}; "
                     "expected no launch",
                     hint="an empty x needs no launch: return the empty output before "
                          "launching (with rows of width 0 a merge would still launch one "
                          "program per row)")
        return
    if len(log) != 3:
        ctx.fail(f"split_softmax launched {len(log)} kernel(s): {log}; expected exactly 3",
                 hint="one launch per stage: partial_stats, merge_stats, normalize (no extra "
                      "kernels, no per-row launches in a Python loop)")
    order = ("partial", "merge", "normal")
    if any(word not in name for word, name in zip(order, log)):
        ctx.fail(f"launch order {log}; expected partial_stats_kernel, merge_stats_kernel, "
                 "normalize_kernel", hint="the three stages run in order on one stream")
    ctx.assert_close(y, _softmax64(x), name="split_softmax(x)",
                     diagnose=_output_diagnoses(impl, x, _chunk_for(impl, case, x), "float32"))


@register(W, "forward.fresh", tier="kernel", uses=STAGES,
          cases=[Case(shape=(4, 100), dtype=d) for d in DTYPES],
          doc="inputs unchanged, new outputs on every call of every stage (no cached buffer)")
def forward_fresh(ctx, impl, case):
    torch = ctx.torch
    x = ctx.randn(case.shape, case.dtype, scale=3.0)
    # ctx.call fails if x changed, if y shares memory with x, or if y lies in an earlier call's
    # output (a cached buffer); _call_stats does the same for the two statistics tensors.
    y1 = ctx.call(impl.split_softmax, x, chunk=16, expect_shape=case.shape,
                  expect_dtype=case.dtype)
    y2 = ctx.call(impl.split_softmax, x, chunk=16, expect_shape=case.shape,
                  expect_dtype=case.dtype)
    if y1.data_ptr() == y2.data_ptr():
        ctx.fail("two calls returned the same output tensor", hint=CACHED_BUFFER_HINT)
    ctx.assert_close(y2, _softmax64(x), name="split_softmax(x), second call",
                     diagnose=_output_diagnoses(impl, x, 16, case.dtype))
    # Each stage twice on the same shapes: a buffer cached per shape shows on the second call.
    n_rows, n_chunks = case.shape[0], -(-case.shape[1] // 16)
    parts = [_call_stats(ctx, impl.partial_stats, x, 16, expect_shape=(n_rows, n_chunks),
                         label=f"partial_stats(x, 16), call {i}") for i in (1, 2)]
    rows = [_call_stats(ctx, impl.merge_stats, m, s, expect_shape=(n_rows,),
                        label=f"merge_stats(m, s), call {i}")
            for i, (m, s) in enumerate(parts, start=1)]
    ys = [ctx.call(impl.normalize, x, m_row, s_row, 16, expect_shape=case.shape,
                   expect_dtype=case.dtype, name=f"normalize(x, m_row, s_row, 16), call {i}")
          for i, (m_row, s_row) in enumerate(rows, start=1)]
    # The first call's results are still intact and equal to the second's.
    for what, first, second in (("partial m", parts[0][0], parts[1][0]),
                                ("partial s", parts[0][1], parts[1][1]),
                                ("m_row", rows[0][0], rows[1][0]),
                                ("s_row", rows[0][1], rows[1][1]), ("normalize", ys[0], ys[1])):
        if not torch.equal(first.cpu(), second.cpu()):
            ctx.fail(f"{what}: two calls on the same input gave different results",
                     hint=CACHED_BUFFER_HINT + ", and a stage must not depend on memory it "
                          "did not write")
    ctx.assert_close(ys[0], _softmax64(x), name="normalize(x, merge_stats(partial_stats(x)))",
                     diagnose=_output_diagnoses(impl, x, 16, case.dtype))


def _extreme_cases(device: str) -> list[Case]:
    return [Case(dtype="float16", kind="magnitude", magnitude=60000.0),
            Case(dtype="bfloat16", kind="magnitude", magnitude=1e30),
            Case(dtype="float32", kind="magnitude", magnitude=1e30),
            Case(dtype="float32", kind="magnitude", magnitude=-1e30),
            Case(dtype="float16", kind="far_apart_chunks", magnitude=30000.0),
            Case(dtype="float32", kind="far_apart_chunks", magnitude=1e4),
            Case(dtype="float32", kind="constant_rows", magnitude=3.25),
            Case(dtype="float32", kind="masked_chunk", magnitude=float("-inf")),
            Case(dtype="float32", kind="below_pad", magnitude=-1e31),
            Case(dtype="bfloat16", kind="below_pad", magnitude=-1e31)]


HINT_MISSING_MAX = ("missing max subtraction: exp(x) overflowed to inf (or underflowed to 0), "
                    "and inf/inf (or 0/0) is NaN; subtract the maximum before exp")
HINT_SHIFT_GUARD_THRESHOLD = ("a chunk with a finite but very negative maximum was shifted "
                              "by 0 as if empty: partial_stats reports its maximum m right but "
                              "s = 0 (exp(x - 0) underflows), while a chunk near 0 is right; "
                              "only m == -inf may use shift 0: m_shift = tl.where(m == "
                              "-float('inf'), 0.0, m), not a threshold such as m < -1e30")
HINT_FINITE_PAD = ("tail padded with a finite value instead of -inf: every value of these rows "
                   "lies below -1e31, and the last chunk's lanes past the width (100 = 6 x 16 "
                   "+ 4) must be loaded as -inf (other=-float('inf')); a finite pad such as "
                   "-1e30 is larger than every real value, becomes the chunk's maximum and "
                   "counts exp(0) = 1 per padded lane")


def _shift_guard_probe(ctx, impl):
    """Diagnosis (found by the fifth learner audit): does partial_stats guard the empty chunk
    with a threshold (m < -1e30, say) instead of m == -inf? Asked of the learner's code: one
    chunk of 16 float32 values in [-5, -1] and one in [-1.01e35, -2^103 = -1.01e31]. Named when
    both maxima are right, the first chunk's sum is right (so the max is subtracted: not a
    missing max, which gives exp(m) times too little there) and the second's is 0 (exp(x - 0)
    underflowed), where the right sum is at least 1. The second chunk's maximum is a power of
    two so that m * log2(e) is exact in float32: log2(e) distributed over the difference, as a
    GPU contracts it (fma(x, log2e, -(m * log2e)), one rounding), then gives exp2(0) = 1 for
    the maximum, as it does under the interpreter; with m = -1e31 the rounding of m * log2(e)
    alone (~1e23) made that sum 0 on a GPU, and this hint named the wrong mistake."""

    def diagnose(got, expected, bad):
        torch = ctx.torch
        u = torch.linspace(0.0, 1.0, 16, dtype=torch.float64)
        x64 = torch.stack([-5.0 + 4.0 * u, -(2.0 ** 103) * torch.pow(10.0, 4.0 * u)])
        x32 = x64.float()
        probe = _partial_probe(impl, x32.to(ctx.torch_device), 16)
        if probe is None or probe[0].shape != (2, 1) or probe[1].shape != (2, 1):
            return None
        m64, s64 = _chunk_stats64(x32.double(), 16)
        m, s = probe
        if not bool((m == m64).all()):
            return None
        if abs(float(s[0, 0]) - float(s64[0, 0])) > STAT_RTOL * float(s64[0, 0]):
            return None
        return HINT_SHIFT_GUARD_THRESHOLD if float(s[1, 0]) == 0.0 else None

    return diagnose


def _partial_benign_probe(ctx, impl):
    """Diagnosis: partial_stats on a small benign input (2 rows of 16 float32 values in [-3, 3],
    chunks of 4), judged by stats.partial's models of a wrong sum. For extreme inputs, where a
    wrong exponent makes every sum 0 or inf and no model there tells one mistake from another."""

    def diagnose(got, expected, bad):
        torch = ctx.torch
        x = (torch.linspace(-3.0, 3.0, 32, dtype=torch.float64).reshape(2, 16) ** 3 / 9).float()
        probe = _partial_probe(impl, x.to(ctx.torch_device), 4)
        if probe is None:
            return None
        return _partial_sums_hint(x, 4, *probe, *_chunk_stats64(x.double(), 4))

    return diagnose


@register(W, "forward.extreme", tier="kernel", uses=STAGES, cases=_extreme_cases,
          doc="huge finite logits, chunks with far-apart maxima, constant rows, a -inf chunk, "
              "rows entirely below -1e31 with a ragged tail")
def forward_extreme(ctx, impl, case):
    torch = ctx.torch
    shape, chunk = (3, 100), 16
    dtype = getattr(torch, case.dtype)
    if case.kind == "magnitude":  # values in [0.9, 1] * magnitude: exp(x) alone would overflow
        x = (ctx.rand_like_distinct(shape, "float64", 0.9, 1.0, device="cpu") * case.magnitude)
    elif case.kind == "far_apart_chunks":  # one chunk at +magnitude, the rest at -magnitude
        x = ctx.randn(shape, "float64", device="cpu") - case.magnitude
        x[:, 2 * chunk:3 * chunk] += 2 * case.magnitude
    elif case.kind == "constant_rows":
        x = torch.full(shape, case.magnitude, dtype=torch.float64)
    elif case.kind == "below_pad":
        # Values log-uniform in [-2.5e38, -1e31] (bfloat16 and float32 hold them), the row's
        # maximum -1e31 three times, once in the ragged last chunk: y = 1/3 there, 0 elsewhere.
        # Anything that pads the tail with a finite value above -1e31 takes it for the maximum.
        u = ctx.rand_like_distinct(shape, "float64", 0.0, 7.4, device="cpu")
        x = case.magnitude * torch.pow(10.0, u)
        x[:, [7, 50, 99]] = case.magnitude
    else:  # a whole chunk of -inf (a masked span): its state is the empty state (-inf, 0).
        # The other values lie near -200, below 0: a -inf chunk that reports m = 0 (the shift,
        # not its maximum) would become the row's maximum, and exp(-200) underflows float32.
        x = ctx.randn(shape, "float64", scale=3.0, shift=-200.0, device="cpu")
        x[:, chunk:2 * chunk] = float("-inf")
    x = x.to(dtype).to(ctx.torch_device)
    y = ctx.call(impl.split_softmax, x, chunk=chunk, expect_shape=shape, expect_dtype=dtype)

    x64 = x.detach().cpu().double()
    m64, s64 = _chunk_stats64(x64, chunk)

    def masked_chunk_state(g, e, bad):
        # Only on failure: what does partial_stats report for the chunk of only -inf?
        if case.kind != "masked_chunk":
            return None
        probe = _partial_probe(impl, x, chunk)
        if probe is None:
            return None
        if bool((probe[0][:, 1] != float("-inf")).any()):
            # tl.argmax reports 0 for the chunk of only -inf too (the seventh audit's 01)
            return _argmax_probe(impl, ctx.torch_device)(g, e, bad) or HINT_MASKED_M
        if bool(probe[1][:, 1].isnan().any()):
            return HINT_MASKED_NAN
        return None

    def finite_pad(g, e, bad):
        # The symptom (no NaN, rows that lost nearly all their mass), and the cause seen in
        # partial_stats: the last chunk's maximum lies above every value it holds (the pad's).
        if (case.kind != "below_pad" or bool(g.isnan().any())
                or not bool((g.sum(dim=1) < 0.5).any())):
            return None
        probe = _partial_probe(impl, x, chunk)
        if probe is None:
            return None
        m_last = probe[0][:, -1]
        return HINT_FINITE_PAD if bool((m_last.isfinite() & (m_last > m64[:, -1])).any()) else None

    def missing_max(g, e, bad):
        # exp(x) without the maximum subtracted overflows to inf (or underflows to a sum of 0):
        # seen in partial_stats' sums, or in normalize given the right row statistics. The
        # symptom: inf or NaN, or 0 where the softmax is not (a denominator of inf).
        if not bool((~g.isfinite()).any()) and not bool(((g == 0) & (e > 0) & bad).any()):
            return None
        probe = _partial_probe(impl, x, chunk)
        if probe is not None and probe[1].shape == s64.shape and bool(
                ((probe[1] == float("inf")) | ((probe[1] == 0) & (s64 > 0))).any()):
            return HINT_MISSING_MAX
        m_row = x64.amax(dim=1)
        s_row = torch.exp(x64 - m_row[:, None]).sum(dim=1)
        try:
            y_right_stats = impl.normalize(x, m_row.float().to(ctx.torch_device),
                                           s_row.float().to(ctx.torch_device), chunk)
        except Exception:  # noqa: BLE001 - no diagnosis then; the failure itself stands
            return None
        return HINT_MISSING_MAX if bool((~y_right_stats.isfinite()).any()) else None

    def pad_in_max(g, e, bad):
        # Only on failure: does partial_stats put a pad into the last chunk's maximum (the
        # ninth learner audit's c04, named "missing max subtraction" here: every value below
        # the pad 0, the merged maximum is 0 and every term underflows)?
        probe = _partial_probe(impl, x, chunk)
        if probe is None or probe[0].shape != m64.shape:
            return None
        return _pad_in_max(shape[1], chunk)(probe[0], m64, probe[0] != m64)

    ctx.assert_close(y, _softmax64(x), name=f"split_softmax({case.kind})", diagnose=[
        masked_chunk_state, finite_pad, pad_in_max, _shift_guard_probe(ctx, impl),
        # first among the models: on extreme inputs a wrong normalize's output is often inf or
        # 0, which no float64 model tells apart from a missing store
        _normalize_probe(impl, ctx.torch_device),
    ] + _output_diagnoses(impl, x, chunk, case.dtype, stages=False) + [
        _merge_pad_probe(ctx, impl, nan_only=True),
        _inverted_probe(ctx, impl, nan_only=True),
        _partial_benign_probe(ctx, impl),
        _merge_benign_probe(impl, ctx.torch_device, nan_only=False),
        # the partial states of this x, judged by stats.partial (argmax, 16-bit sums)
        _stage_probe(impl, x, chunk), missing_max])


@register(W, "bad_calls", tier="kernel", uses=STAGES,
          doc="bad calls raise TypeError/ValueError naming the argument, before any launch")
def bad_calls(ctx, impl, case):
    torch = ctx.torch
    dev = ctx.torch_device
    x = ctx.randn((4, 40))
    for chunk in (0, -16, 100, 3, 24):
        ctx.expect_error(impl.split_softmax, x, chunk=chunk, mentions=["chunk"],
                         what=f"split_softmax: chunk={chunk}")
    ctx.expect_error(impl.split_softmax, x, chunk=16.0, mentions=["chunk"],
                     what="split_softmax: float chunk")
    ctx.expect_error(impl.split_softmax, x, chunk=16, num_warps=3, mentions=["num_warps"],
                     what="split_softmax: num_warps=3")
    ctx.expect_error(impl.split_softmax, torch.ones((4, 40), dtype=torch.int32, device=dev),
                     mentions=["x"], what="split_softmax: integer dtype")
    ctx.expect_error(impl.split_softmax, ctx.randn((40,)), mentions=["2-D"],
                     what="split_softmax: 1-D")
    ctx.expect_error(impl.split_softmax, x.to_sparse(), chunk=16, mentions=["x", "dense"],
                     what="split_softmax: sparse x")
    # a view whose memory holds the values before a lazy negation (`z.conj().imag` makes one)
    ctx.expect_error(impl.split_softmax, torch._neg_view(x), chunk=16,
                     mentions=["x", "resolve_neg"], what="split_softmax: lazily negated view")
    ctx.expect_error(impl.split_softmax, ctx.randn((2, 3, 40)), mentions=["2-D"],
                     what="split_softmax: 3-D")
    ctx.expect_error(impl.split_softmax, [[1.0, 2.0]], mentions=["x"],
                     what="split_softmax: a list")
    ctx.expect_error(impl.partial_stats, x, 100, mentions=["chunk"],
                     what="partial_stats: chunk=100")
    # More (row, chunk) programs than a grid holds: 2^28 x cdiv(2^28, 4) = 2^54 > 2^31 - 1. The
    # broadcast view costs no memory. Its output would need 2^58 bytes, more than any address
    # space: a launcher without the grid check fails at once in torch.empty (a RuntimeError,
    # not a ValueError) instead of allocating and then launching 2^54 programs. (Just past the
    # limit, 2^17 x 2^16 values, the output is 32 GiB: a machine that can allocate it would
    # then run 2^31 programs under the interpreter, which never ends.)
    try:
        ctx.expect_error(impl.split_softmax, ctx.randn((1, 1)).expand(2**28, 2**28), chunk=4,
                         mentions=["chunk"], what="split_softmax: 2^54 programs for the grid")
    except CheckFailed as exc:
        if "does not mention" in exc.message:
            raise
        raise CheckFailed(exc.message, hint=(
            "grid too large: n_rows * cdiv(n_cols, chunk) programs must fit a grid (at most "
            "2^31 - 1); refuse more with a ValueError that suggests a larger chunk")) from exc
    m = torch.zeros((4, 3), dtype=torch.float32, device=dev)
    ctx.expect_error(impl.merge_stats, m.half(), m, mentions=["m"],
                     what="merge_stats: float16 m")
    ctx.expect_error(impl.merge_stats, m, m[:, :2], mentions=["s"],
                     what="merge_stats: s of another shape")
    ctx.expect_error(impl.merge_stats, m, m.half(), mentions=["s"],
                     what="merge_stats: float16 s")
    ctx.expect_error(impl.merge_stats, m, m, num_warps=3, mentions=["num_warps"],
                     what="merge_stats: num_warps=3")
    row = torch.ones((4,), dtype=torch.float32, device=dev)
    ctx.expect_error(impl.normalize, x, row[:3], row, 16, mentions=["m_row"],
                     what="normalize: m_row of the wrong length")
    ctx.expect_error(impl.normalize, x, row.half(), row, 16, mentions=["m_row"],
                     what="normalize: float16 m_row")
    ctx.expect_error(impl.normalize, x, row, row.half(), 16, mentions=["s_row"],
                     what="normalize: float16 s_row")
    ctx.expect_error(impl.normalize, x, row[:, None], row, 16, mentions=["m_row"],
                     what="normalize: 2-D m_row of shape (4, 1)")
    ctx.expect_error(impl.normalize, x, row, row, 48, mentions=["chunk"],
                     what="normalize: chunk=48")
    # The public default: a zero SM count used to divide by zero (ZeroDivisionError), a
    # negative one or a negative size gave some chunk instead of an error.
    for args, word in (((8, 131072, 0), "sm_count"), ((8, 131072, -132), "sm_count"),
                       ((-1, 4096), "n_rows"), ((8, -4096), "n_cols"),
                       ((8, 131072, 132.0), "sm_count"), ((8.0, 4096), "n_rows")):
        ctx.expect_error(impl.default_chunk, *args, mentions=[word],
                         what=f"default_chunk{args}")
    if ctx.device == "cuda":
        ctx.expect_error(impl.split_softmax, x.cpu(), mentions=["cuda"],
                         what="split_softmax: CPU tensor on a GPU run")


# ---------------------------------------------------------------------------------------------
# CUDA only: streams and graphs
# ---------------------------------------------------------------------------------------------
@register(W, "cuda.stream", tier="cuda", uses=STAGES,
          cases=[Case(shape=(8, 131072), dtype="float16")],
          doc="all three launches go to the caller's current (non-default) stream")
def cuda_stream(ctx, impl, case):
    ctx.require_cuda()
    torch = ctx.torch
    source = ctx.randn(case.shape, case.dtype, scale=3.0)
    impl.split_softmax(source)  # compile outside the timed race
    stream = torch.cuda.Stream()
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        busy = torch.randn((4096, 4096), device="cuda")
        for _ in range(4):
            busy = busy @ busy  # keep the side stream busy, so a launch elsewhere would race
        x = source * 1  # x is written on the side stream, after the busy work
        y = ctx.call(impl.split_softmax, x, expect_shape=case.shape, expect_dtype=case.dtype)
    stream.synchronize()
    ctx.assert_close(y, _softmax64(source), name="split_softmax on a side stream",
                     diagnose=[always("a stage launched on the default stream instead "
                                      "of the current one (it read x, or the statistics, too "
                                      "early)")])


@register(W, "cuda.graph", tier="cuda", uses=STAGES,
          cases=[Case(shape=(8, 131072), dtype="bfloat16"), Case(shape=(64, 4097), dtype="float32")],
          doc="the three launches capture into a CUDA graph and replay on new data")
def cuda_graph(ctx, impl, case):
    ctx.require_cuda()
    torch = ctx.torch
    from checks.context import call_learner

    x_static = ctx.randn(case.shape, case.dtype, scale=3.0)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up (compile) outside the capture, as torch advises
        call_learner(impl.split_softmax, x_static, label="split_softmax (warm-up)")
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    try:
        with ctx.count_launches() as log:
            with torch.cuda.graph(graph):
                y_static = impl.split_softmax(x_static)
    except Exception as exc:  # noqa: BLE001 - capture failures are the point of this check
        ctx.fail(f"capturing split_softmax into a CUDA graph raised {type(exc).__name__}: {exc}",
                 hint="nothing in the launcher may synchronize with the host during capture "
                      "(.item(), .cpu(), printing a tensor) or allocate on the CPU")
    if len(log) != 3:
        ctx.fail(f"{len(log)} launches captured ({log}), expected 3")
    for trial in range(2):
        fresh = ctx.randn(case.shape, case.dtype, scale=3.0 + trial)
        x_static.copy_(fresh)
        graph.replay()
        torch.cuda.synchronize()
        ctx.assert_close(y_static, _softmax64(fresh), name=f"graph replay {trial}",
                         diagnose=[always("the replay computed on stale data: a stage "
                                          "read a copy of x made at capture time")])
