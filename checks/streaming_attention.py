"""Checks for the streaming attention workshop: `attention(q, k, v, *, causal, scale)` and
`attention_heads` for (H, N, d).

The reference is the explicit formula in float64 on the CPU: softmax(Q K^T * scale + mask) V,
with the mask -inf above the diagonal when causal. Interpreter runs use a covering subset of
(N, d, dtype, causal, scale, block sizes); GPU runs take nearly the full product.

When a comparison fails, the classic streaming mistakes are replayed in float64 on the same
inputs (numerator or denominator not rescaled, alpha from the block's own max, max never updated,
dropped keys given a finite score instead of -inf, keys past N left unmasked, the diagonal
excluded or not masked, the accumulator kept in 16 bits, the scale applied after the softmax or
twice, a tensor read with another's strides or as if contiguous, the key mask built on the
rows, the running max taken over the whole tile, ...): the hint names the one whose output the
implementation reproduces.
"""

from __future__ import annotations

import contextlib
import math

from checks.compare import agrees, always, not_from_values
from checks.context import CACHED_BUFFER_HINT
from checks.core import Case, CheckFailed, Unavailable, register

W = "streaming_attention"
DTYPES = ("float16", "bfloat16", "float32")
HEAD_DIMS = (16, 32, 64, 128)
LOG2E = 1.4426950408889634


# ---------------------------------------------------------------------------------------------
# Reference, tolerance, notes
# ---------------------------------------------------------------------------------------------
def _scores64(q, k, scale):
    """(N, N) float64 scaled scores of one head (CPU)."""
    return (q.double().cpu() @ k.double().cpu().T) * scale


def _causal_mask(n, *, inclusive=True):
    import torch

    rows = torch.arange(n)[:, None]
    cols = torch.arange(n)[None, :]
    return cols <= rows if inclusive else cols < rows  # True where the key is visible


def reference(q, k, v, *, causal, scale):
    """softmax(q k^T * scale + mask) v in float64 on the CPU, for (N, d) or (H, N, d)."""
    import torch

    if q.dim() == 3:
        return torch.stack([reference(q[h], k[h], v[h], causal=causal, scale=scale)
                            for h in range(q.shape[0])])
    s = _scores64(q, k, scale)
    if causal:
        s = s.masked_fill(~_causal_mask(q.shape[0]), -math.inf)
    return s.softmax(dim=-1) @ v.double().cpu()


def _sample_rows(n: int, most: int = 1024):
    """Row indices for a diagnosis whose cost grows with its rows: every row up to `most`, else
    `most` rows spread over all N, the first and the last included."""
    import torch

    if n <= most:
        return torch.arange(n)
    return torch.linspace(0, n - 1, most).round().long().unique()


def _attention_rows64(q, k, v, rows, *, causal, scale):
    """reference() on the given rows only: rows x N x d of work instead of N x N x d."""
    import torch

    s = (q.double().cpu()[rows] @ k.double().cpu().T) * scale
    if causal:
        s = s.masked_fill(torch.arange(k.shape[0])[None, :] > rows[:, None], -math.inf)
    return s.softmax(dim=-1) @ v.double().cpu()


def tolerance(dtype: str, v, max_logit: float) -> tuple[float, float]:
    """(rtol, atol) for an attention output; see the comments for where each term comes from.

    rtol = 2 eps(dtype): the output is rounded once at the store (eps/2), and Triton's
    interpreter truncates fp32 -> bf16 (up to 1 eps).
    atol, in units of max|v| (every output is a weighted average of rows of v):
      16-bit inputs: eps(dtype). A fast kernel rounds P to the input dtype before P @ V (the
        tensor cores take 16-bit operands, as in every FlashAttention): each weight moves by at
        most eps/2 relative, so the output by at most eps/2 * max|v|; 2x margin.
      every dtype: 4 * eps(fp32) * max(1, max|logit|). A logit x = score * scale is computed in
        fp32 and carries about eps32 * |x| of rounding (the d-term dot, the scale, the exp2
        unit); an exponent error delta changes a weight by delta relative.
    """
    import torch

    eps = torch.finfo(getattr(torch, dtype)).eps
    eps32 = torch.finfo(torch.float32).eps
    vmax = float(v.detach().abs().max().cpu()) if v.numel() else 1.0
    weight_error = (0.0 if dtype == "float32" else eps) + 4 * eps32 * max(1.0, max_logit)
    return 2 * eps, max(vmax, 1e-30) * weight_error


def _max_logit(q, k, scale) -> float:
    if q.dim() == 3:
        return max(_max_logit(q[h], k[h], scale) for h in range(q.shape[0]))
    if q.shape[0] == 0:
        return 0.0
    return float(_scores64(q, k, scale).abs().max())


def _interpreter_notes(ctx, dtype: str) -> None:
    if ctx.device != "interpreter":
        return
    if dtype == "bfloat16":
        ctx.note("bf16 tl.dot ran upcast to fp32 under Triton's interpreter")
    elif dtype == "float16":
        ctx.note("fp16 tl.dot ran upcast to fp32 under Triton's interpreter (the same products, "
                 "fp32 accumulation; numpy's fp16 matmul is too slow)")


def _resolve_scale(case) -> float | int | None:
    """None for the default; an int scale stays an int (the API takes an int or a float)."""
    scale = case.get("scale", "default")
    if scale == "default":
        return None
    return scale if isinstance(scale, int) else float(scale)


def _misses(got, expected, rtol: float, atol: float):
    """A probe call's output against the float64 reference: the mask of its elements outside
    the tolerance (NaN counts), or None when it has another shape. The probes that ask "is the
    same call right another way" (_unsplit_probe, _causal_shapes, heads run alone) judge here."""
    if got is None or tuple(got.shape) != tuple(expected.shape):
        return None
    return ~agrees(got.detach().double().cpu(), expected, rtol, atol)


def _knobs(case) -> dict:
    """blocks: "default", (block_m, block_n), or (block_m, None): block_n left to the launcher."""
    blocks = case.get("blocks", "default")
    if blocks == "default":
        return {}
    if blocks[1] is None:
        return {"block_m": blocks[0]}
    return {"block_m": blocks[0], "block_n": blocks[1]}


# ---------------------------------------------------------------------------------------------
# Known mistakes, replayed in float64
# ---------------------------------------------------------------------------------------------
def _streamed64(q, k, v, *, causal, scale, block_m, block_n, rescale_acc=True, rescale_l=True,
                update_max=True, mask_keys=True, inclusive=True, acc_dtype=None,
                mask_logit=None, key_limit=None, diagonal_one_block=False,
                diagonal_unmasked=False, divide_by_column=False, acc_scaled_after_add=False,
                l_scaled_after_add=False, divide=True, alpha_block_max=False,
                max_scaled_twice=False, diagonal_in_stage1=False, alpha_scaled_twice=False,
                den_column_sums=False, left_keys_twice=False, p_old_max=False,
                alpha_base_e=False, acc_by_column=False, acc_not_carried=False,
                p_base_e=False, keep_inverted=False, p_by_column=False, v_transposed=False,
                acc_added_twice=False, l_alpha_on_block=False, multiply_den=False,
                p_unscaled=False, m_block_only=False, key_mask_rows=False, tile_max=False,
                den_tile_sum=False, den_block_max=False):
    """The kernel's key-block walk in float64, with switches that reproduce known mistakes.

    Row r belongs to program r // block_m; that program visits key blocks of block_n from 0 up
    to the end of its row block (causal) or to the end of the padded key range (non-causal).
    Keys past N are zero rows of k and v (masked to -inf unless mask_keys is False).
    acc_dtype ("float16", "bfloat16"): the running numerator is rounded to it after every block.
    mask_logit: the logit (natural units) a masked key gets instead of -inf, in the blocks its
    row's program visits: a finite "very negative" sentinel.
    key_limit: with mask_keys, the keys below it are kept (N + 1: the mask `j <= N`).
    diagonal_one_block: causal, the masked stage ran BLOCK_N keys from the row block's first
    row instead of to its end (keys from there on dropped).
    update_max=False: m_i never takes m_new, so it stays -inf; every step's alpha is then
    exp(-inf) = 0 and a row keeps only the last key block its program visits.
    diagonal_unmasked: causal without the causal term of the mask: a row keeps every key of the
    blocks its program visits (up to the end of its row block), the ones after it included.
    divide_by_column: out = acc / l_i without [:, None]. The (BLOCK_M,) vector broadcasts as a
    row, so column c of a row block is divided by the denominator of the block's c-th row:
    it compiles only where d == block_m (elsewhere this replay gives the right output). A row
    past N (q loaded as 0, every logit 0) has the denominator N, one for each key.
    acc_scaled_after_add, l_scaled_after_add: alpha applied after this block was added,
    (acc + P V) * alpha or (l + rowsum(P)) * alpha: the first block's alpha is
    exp(-inf - m) = 0, so what the first block added is lost. divide=False: out = acc.
    alpha_block_max: alpha = exp(m_i - max of this block), not exp(m_i - m_new): above 1 where
    the block's max is below the running max, and exp(+inf) = inf for a block whose scores are
    all -inf (a causal row's sub-blocks right of its diagonal), so those rows become NaN.
    max_scaled_twice: p = exp2((s - m_new) * qk_scale), the max (already scaled, log2 units)
    multiplied by qk_scale again; in natural units p = exp(s - m_new * scale * log2(e)).
    diagonal_in_stage1: causal, the unmasked stage ran to the end of the row block (hi1 =
    (start_m + 1) * BLOCK_M, leaving the masked stage empty): the diagonal block without any
    mask, so each row keeps the keys after it and the keys past N (zero rows: inputs padded
    with zeros past N, each key scoring 0), up to the end of its row block, not cut at N.
    alpha_scaled_twice: alpha = exp2((m_i - m_new) * qk_scale), the difference of two maxima
    (already log2 units) scaled again; in natural units alpha = exp((m - m_new) * scale *
    log2(e)): above the right alpha where scale * log2(e) < 1, so the old terms weigh too much.
    den_column_sums: l_i += tl.sum(p, 0), the column sums of p: it compiles only where
    block_m == block_n (elsewhere this replay gives the right output). Row c's denominator gets
    column c of every row of its block, the rows past N (q loaded as 0) included.
    left_keys_twice: causal, the masked stage started at key 0 (lo2 = 0, not hi1): each key
    left of the row block's diagonal block is added twice, by both stages.
    p_old_max: p = exp2(s * qk_scale - m_i), shifted by the max before this block: on the first
    block m_i = -inf and p = exp2(+inf) = inf, so every row is inf / inf or NaN.
    alpha_base_e: alpha = exp(m_i - m_new) (base e) on maxima in log2 units, p with exp2: in
    natural units alpha = exp((m - m_new) * log2(e)), below the right alpha, so the old terms
    weigh too little.
    p_base_e: p = exp(s * qk_scale - m_new) (base e) on scores and maxima in log2 units, alpha
    with exp2: in natural units p = exp((s - m_new) * log2(e)), as if log2(e) were folded
    twice, but alpha rescales the old terms in the right units. With one key block per row this
    is softmax(Q K^T * scale * log2(e)) V; where the running max grows across blocks it is not.
    acc_by_column: acc * alpha without [:, None]: the (BLOCK_M,) alpha broadcasts as a row, so
    column c of a row block's acc is scaled by the alpha of the block's c-th row; it compiles
    only where d == block_m (elsewhere this replay gives the right output). The last row
    block's rows past N (q loaded as 0, every kept key scoring 0) have alphas of their own.
    acc_not_carried: acc = tl.dot(p, v) without acc as the accumulator: each step replaces the
    numerator with this block's P V, so a row keeps only the last key block its program visits
    in its numerator (its denominator still sums them all).
    keep_inverted: tl.where(keep, -inf, s) in the masked stage: the kept scores become -inf and
    the dropped ones keep their score (keys past N load as 0 and score 0), in the key blocks of
    the masked stage only (causal: from the row block's first key; else the ragged tail).
    p_by_column: p = exp2(s * qk_scale - m_new[None, :]): column c of a (block_m, block_n)
    tile shifted by the running max of the block's c-th row; it compiles only where block_m
    == block_n (elsewhere this replay gives the right output). The last row block's rows past
    N (q loaded as 0) lend their maxima too.
    v_transposed: acc += P trans(V): column c of the new numerator is P times the c-th key's
    row of the tile, p @ v_tile.T; it compiles only where block_n == d (elsewhere this replay
    gives the right output).
    acc_added_twice: acc += tl.dot(p, v, acc): the dot already adds acc, so acc = 2 acc alpha
    + P V (right where a row's program visits one key block).
    l_alpha_on_block: l_i = l_i + alpha * rowsum(P): alpha scales the new block's sum instead of
    the old l_i (the first block's alpha is 0, so it is lost).
    multiply_den: out = acc * l_i, not acc / l_i.
    p_unscaled: p = exp2(s - m_new), the raw score against a max in log2 units of s * qk_scale;
    in natural units p = exp(s_nat / (scale * log2(e)) - m_new).
    m_block_only: m_i = this block's max (tl.max(s, 1) * qk_scale) at the end of the step, not
    m_new: acc and l stay in units of m_new, but the next alpha = exp2(m_i - m_new) starts from
    the block's own max, wrong wherever an earlier block held the row's maximum.
    key_mask_rows: keep = offs_n[:, None] < N, a (BLOCK_N, 1) column: it compiles only where
    block_m == block_n (elsewhere this replay gives the right output), and there row i of the
    (BLOCK_M, BLOCK_N) tile is kept or dropped whole by key start_n + i: in the masked stage's
    blocks a row whose place in its row block is i keeps every key of the block (those past N
    load as 0 and score 0) where start_n + i < N, and none where not (the causal term still
    applies: causal, start_n + i is the row itself, and the output is right).
    tile_max: m_new = max(m_i, tl.max(s) * qk_scale), the max over the whole (BLOCK_M, BLOCK_N)
    tile (the last row block's rows past N, q loaded as 0, included) instead of each row's: a
    larger shift cancels in acc / l, but float32's exp2 flushes a weight below 2^-126 to 0
    (modelled here: float64 would keep it), so a row whose logits all lie more than 126 log2
    units below another row's loses its keys (l = 0: 0 / 0 = NaN).
    den_tile_sum: l_i += tl.sum(p) without an axis: every row of a program's tile adds the sum
    of the whole (BLOCK_M, BLOCK_N) tile of p, the last row block's rows past N (q loaded as 0,
    every kept key scoring 0) included.
    den_block_max: l_i = l_i * alpha + tl.max(p, 1): each key block adds its largest p, not
    their sum (the max line above copied); with one key block per row l = exp2(0) = 1 and
    the output is acc undivided.
    """
    import torch

    n = q.shape[0]
    n_pad = -(-n // block_n) * block_n
    if diagonal_in_stage1:  # keys up to the end of the last row block (block_n divides block_m)
        n_pad = -(-n // block_m) * block_m
    kp = torch.zeros((n_pad, k.shape[1]), dtype=torch.float64)
    vp = torch.zeros((n_pad, v.shape[1]), dtype=torch.float64)
    kp[:n], vp[:n] = k.double().cpu(), v.double().cpu()
    q64 = q.double().cpu()
    column_sums = den_column_sums and block_m == block_n
    by_column = acc_by_column and v.shape[1] == block_m
    p_cols = p_by_column and block_m == block_n
    v_trans = v_transposed and v.shape[1] == block_n
    # the last row block's rows past N (q loaded as 0) join in
    if column_sums or by_column or p_cols or tile_max or den_tile_sum:
        q64 = torch.cat([q64, q64.new_zeros((-(-n // block_m) * block_m - n, q64.shape[1]))])
    n_rows = q64.shape[0]
    s_all = (q64 @ kp.T) * scale  # (n_rows, n_pad)
    rows = torch.arange(n_rows)[:, None]
    cols = torch.arange(n_pad)[None, :]
    visible = torch.ones((n_rows, n_pad), dtype=torch.bool)
    if key_mask_rows and block_m == block_n:
        # In the masked stage's key blocks (causal: from the row block's first key; else the
        # ragged tail) a tile row i = row % block_m is kept whole where start_n + i < N.
        first_masked = (rows // block_m) * block_m if causal else (n // block_n) * block_n
        by_row = (cols // block_n) * block_n + rows % block_m < n
        visible &= torch.where(cols >= first_masked, by_row, cols < n)
    elif mask_keys and not diagonal_in_stage1:
        visible &= cols < (n if key_limit is None else key_limit)
    if causal and not (diagonal_unmasked or diagonal_in_stage1):
        visible &= (cols <= rows) if inclusive else (cols < rows)
        if diagonal_one_block:
            visible &= cols < (rows // block_m) * block_m + block_n
    if keep_inverted:  # the masked stage's blocks: kept keys -inf, dropped ones (past N: 0) kept
        first_masked = (rows // block_m) * block_m if causal else (n // block_n) * block_n
        s_all = s_all.masked_fill((cols >= first_masked) & visible, -math.inf)
    else:
        s_all = s_all.masked_fill(~visible, -math.inf if mask_logit is None else mask_logit)
    # A key added twice weighs twice: a weight on p, not log(2) added to its logit, which a
    # logit near -1e38 (forward.extreme's negative_logits) would absorb.
    weight = None
    if causal and left_keys_twice:
        weight = 1.0 + (cols < (rows // block_m) * block_m).double()
    row_end = (rows.squeeze(1) // block_m + 1) * block_m  # causal: last key a program visits
    m = torch.full((n_rows,), -math.inf, dtype=torch.float64)
    den = torch.zeros(n_rows, dtype=torch.float64)
    acc = torch.zeros((n_rows, v.shape[1]), dtype=torch.float64)
    with torch.no_grad():
        for start in range(0, n_pad, block_n):
            if causal and diagonal_in_stage1:
                live = start < row_end  # hi1 = (start_m + 1) * BLOCK_M, not cut at N
            elif causal:
                live = start < torch.minimum(row_end, torch.tensor(n))  # rows whose program visits
            else:
                live = torch.ones(n_rows, dtype=torch.bool)
            if not bool(live.any()):
                break
            s = s_all[:, start:start + block_n]
            block_max = s.max(dim=1).values
            if tile_max:  # one max for all the rows of a program's tile
                block_max = block_max.reshape(-1, block_m).max(dim=1).values.repeat_interleave(
                    block_m)
            m_new = torch.maximum(m, block_max)
            # natural units: the same as exp2 in log2 units
            shift = m if p_old_max else m_new * (scale * LOG2E if max_scaled_twice else 1.0)
            if p_cols:  # (block_m, block_n = block_m) tiles: column c shifted by row c's max
                p = torch.exp(s.reshape(-1, block_m, block_n) - m_new.reshape(-1, 1, block_m))
                p = p.reshape(n_rows, block_n)
            elif p_unscaled:  # the raw score s_nat / scale in log2 units, the max in logits
                p = torch.exp(s / (scale * LOG2E) - m_new[:, None])
            else:
                p = torch.exp((s - shift[:, None]) * (LOG2E if p_base_e else 1.0))
            if weight is not None:
                p = p * weight[:, start:start + block_n]
            if tile_max:  # float32's exp2 flushes below 2^-126 to 0 (float64 would not)
                p = p.masked_fill((s - shift[:, None]) * LOG2E < -126.0, 0.0)
            alpha = torch.exp((m - (block_max if alpha_block_max else m_new))
                              * (scale * LOG2E if alpha_scaled_twice else
                                 LOG2E if alpha_base_e else 1.0))
            if tile_max:  # alpha too
                alpha = alpha.masked_fill((m - m_new) * LOG2E < -126.0, 0.0)
            p_sum = p.sum(dim=1)
            if column_sums:  # (block_m, block_n) tiles: sum each tile over its rows
                p_sum = p.reshape(-1, block_m, block_n).sum(dim=1).reshape(-1)
            if den_tile_sum:  # one sum for the whole tile, added to each of its rows
                p_sum = p.reshape(-1, block_m * block_n).sum(
                    dim=1).repeat_interleave(block_m)
            if den_block_max:  # the block's largest p (masked keys: p = 0)
                p_sum = p.max(dim=1).values
            v_tile = vp[start:start + block_n]
            if v_trans:  # (block_n = d, d) tile: p @ v.T
                v_tile = v_tile.T
            if acc_scaled_after_add:
                acc_new = (acc + p @ v_tile) * alpha[:, None]
            elif acc_not_carried:  # the old (rescaled) acc thrown away
                acc_new = p @ v_tile
            elif acc_added_twice:  # acc += dot(p, v, acc): the rescaled acc counted twice
                acc_new = 2.0 * acc * alpha[:, None] + p @ v_tile
            elif by_column:  # (block_m, d = block_m) tiles: column c times row c's alpha
                acc_new = ((acc.reshape(-1, block_m, block_m) * alpha.reshape(-1, 1, block_m))
                           .reshape(n_rows, block_m) + p @ v_tile)
            else:
                acc_new = ((acc * alpha[:, None] if rescale_acc else acc)
                           + p @ v_tile)
            if acc_dtype is not None:
                acc_new = acc_new.to(getattr(torch, acc_dtype)).double()
            if l_scaled_after_add:
                den_new = (den + p_sum) * alpha
            elif l_alpha_on_block:
                den_new = den + alpha * p_sum
            else:
                den_new = (den * alpha if rescale_l else den) + p_sum
            acc = torch.where(live[:, None], acc_new, acc)
            den = torch.where(live, den_new, den)
            if update_max:
                m = torch.where(live, block_max if m_block_only else m_new, m)
    acc, den = acc[:n], den[:n]
    if not divide:
        return acc
    if multiply_den:
        return acc * den[:, None]
    if divide_by_column and v.shape[1] == block_m:
        n_rows_pad = -(-n // block_m) * block_m
        den_pad = torch.full((n_rows_pad,), float(n), dtype=torch.float64)
        den_pad[:n] = den
        by_column = den_pad.reshape(-1, 1, block_m).expand(-1, block_m, block_m)
        return acc / by_column.reshape(n_rows_pad, block_m)[:n]
    return acc / den[:, None]


def _key_walk64(q, k, v, *, causal, scale, block_m, block_n, stages, local_keep=False,
                transposed_keep=False, reversed_keep=False, local_keys=False):
    """The output of a kernel whose two stages walk other key ranges than the reference's, in
    float64: a key a row's program adds twice weighs as twice one key (the online update is
    exact whatever the order and the multiplicity), a key never added weighs 0.

    stages(start_m) -> (hi1, lo2, hi2): the unmasked stage runs [0, hi1) and the masked one
    [lo2, hi2), each in steps of block_n from its start (as tl.range(lo, hi, BLOCK_N) does,
    whether or not lo is a multiple of BLOCK_N). In the masked stage a key is kept where it is
    below N and, when causal, not after the row; local_keep: the causal term compares indices
    local to the blocks, tl.arange(0, BLOCK_M)[:, None] >= tl.arange(0, BLOCK_N)[None, :],
    the row's place in its row block against the key's place in its key block.
    transposed_keep: the causal term built as offs_m[None, :] >= offs_n[:, None], a (BLOCK_N,
    BLOCK_M) tile that Triton lays over the (BLOCK_M, BLOCK_N) scores only where block_m ==
    block_n (elsewhere it does not compile: None): score (a, b), row first + a and key start +
    b, is kept where offs_m[b] >= offs_n[a], first + b >= start + a.
    reversed_keep: the causal term compared the other way, offs_m[:, None] <= offs_n[None, :]:
    a row keeps the keys from its own onwards (to the end of its row block, cut at N).
    local_keys: the causal term compares the row's index with the key's place in its key block,
    offs_m[:, None] >= offs_n0[None, :] (offs_n0 = tl.arange(0, BLOCK_N), offs_n without
    start_n): in every key block of the masked stage a row keeps the keys whose place in the
    block is at most the row's index (from the second row block on, every key up to the end of
    its row block).
    None where the unmasked stage reads keys past N (not modelled). A row that adds no key is
    NaN (0 / 0), as in the kernel, and so is a row whose first key block keeps none of its
    keys: with m_i still -inf, every score -inf gives m_new = -inf and p = exp2(-inf - -inf) =
    NaN, which no later block washes out (alpha = exp2(-inf - m) = 0 times NaN is NaN); a
    mask compared the wrong way does that to the lower rows of the first row block. Costs
    N x N x d; one row block's N counts at a time.
    """
    import torch

    n = q.shape[0]
    if transposed_keep and block_m != block_n:
        return None
    q64, k64, v64 = q.double().cpu(), k.double().cpu(), v.double().cpu()
    out = torch.empty((n, v.shape[1]), dtype=torch.float64)
    for start_m in range(-(-n // block_m)):
        first = start_m * block_m
        rows = torch.arange(first, min(first + block_m, n))
        hi1, lo2, hi2 = stages(start_m)
        count = torch.zeros((len(rows), n), dtype=torch.float64)
        for start in range(0, hi1, block_n):
            if start + block_n > n:
                return None
            count[:, start:start + block_n] += 1.0
        poisoned = torch.zeros(len(rows), dtype=torch.bool)  # a first block of all -inf: NaN
        for start in range(lo2, hi2, block_n):
            keys = torch.arange(start, min(start + block_n, n))
            if not causal:
                kept = torch.ones((len(rows), len(keys)), dtype=torch.float64)
            elif local_keep:
                kept = ((rows - first)[:, None] >= (keys - start)[None, :]).double()
            elif local_keys:
                kept = (rows[:, None] >= (keys - start)[None, :]).double()
            elif transposed_keep:
                kept = ((first + keys - start)[None, :] >= (start + rows - first)[:, None]).double()
            elif reversed_keep:
                kept = (rows[:, None] <= keys[None, :]).double()
            else:
                kept = (rows[:, None] >= keys[None, :]).double()
            poisoned |= (count.sum(dim=1) == 0) & (kept.sum(dim=1) == 0)
            count[:, keys] += kept
        s = ((q64[rows] @ k64.T) * scale).masked_fill(count == 0, -math.inf)
        w = count * torch.exp(s - s.max(dim=1, keepdim=True).values)
        out[rows] = ((w @ v64) / w.sum(dim=1, keepdim=True)).masked_fill(poisoned[:, None],
                                                                          math.nan)
    return out

# The replays of mistakes that the same check's smaller cases show as well skip larger N: each
# replays the whole key walk in float64 on the CPU (N x N x d per block candidate).
_REPLAY_MAX_N = 2048

# Finite "very negative" numbers a kernel may put in place of -inf for a dropped key (the
# hint of forward.extreme's huge_scores and negative_logits cases names the mistake).
_SENTINELS = (-1e30, -1e20, -1e9, -1e4)


def _block_candidates(impl, case, n, d, dtype, causal):
    """The (block_m, block_n) the implementation most likely used, then common defaults."""
    knobs = _knobs(case)
    if "block_n" in knobs:
        return [(knobs["block_m"], knobs["block_n"])]
    out = []
    config = getattr(impl, "_config", None)
    if callable(config):
        try:
            import torch

            c = config(dict(knobs), d, getattr(torch, dtype), causal, n)
            out.append((c["block_m"], c["block_n"]))
        except Exception:  # noqa: BLE001 - a learner's module may differ; fall back to guesses
            pass
    fit = max(16, 1 << max(n - 1, 0).bit_length())
    for bm, bn in ((128, 64), (128, 128), (64, 64), (64, 32), (128, 32), (32, 16), (16, 16)):
        if "block_m" in knobs:  # block_m given, block_n the launcher's (at most block_m)
            bm = knobs["block_m"]
            pair = (bm, min(bn, bm, fit))
        else:
            pair = (min(bm, fit), min(bn, bm, fit))
        if pair not in out:
            out.append(pair)
    return out[:4]


def _diagnoses(impl, case, q, k, v, *, causal, scale_used, scale_given, rtol, atol,
               generic=True, before_symptoms=()):
    """Diagnoses for compare.assert_close: replay the classic mistakes on one (N, d) head.

    generic=False leaves out the last two, which judge by the symptom alone (NaN somewhere, only
    tail rows wrong) instead of reproducing the output: for outputs already known to hold NaN.
    before_symptoms: the check's own diagnoses, tried after the replays and before those two.
    """
    import torch

    n, d = q.shape
    dtype = str(q.dtype).replace("torch.", "")

    def close(got, candidate, expected):
        """Elementwise: got reproduces the replay here, within the check's tolerance, or
        (where the replay is far off) within 1% of the replay's own distance from the reference.
        A mistake that divides by a tiny denominator or multiplies by a large scale magnifies
        float32's rounding beyond a tolerance set for right answers (a numerator doubled at
        each of 9 key blocks, say, is 256 times its rounding), and the replay is still the
        output's explanation."""
        near = agrees(got, candidate, rtol, atol)
        departure = (candidate - expected).abs()
        return near | ((got - candidate).abs()
                       <= 0.01 * departure.nan_to_num(nan=0.0, posinf=0.0))

    def matches(got, candidate, expected):
        """got reproduces the replay (close()) in 99% of its elements."""
        if tuple(candidate.shape) != tuple(got.shape):
            return False
        return float(close(got, candidate, expected).double().mean()) >= 0.99

    finite_max = torch.finfo(q.dtype).max

    def stored(candidate):
        """The replay as the kernel's store leaves it: the output is cast to q's dtype, and a
        value past that dtype's largest finite number becomes an infinity of its sign (a
        numerator doubled at each of 64 key blocks, 2^63 times too large, is inf in float16).
        Only the overflow: the cast's rounding lies within the tolerance."""
        return candidate.where(candidate.abs() <= finite_max, candidate * math.inf)

    def differs(candidate, expected):
        err = (candidate - expected).abs()
        return bool(((err > atol + rtol * expected.abs()) | candidate.isnan()).any())

    def replay(label, max_n=None, finite=False, strict=False, not_all_nan=False, also=(),
               **switches):
        """max_n: skip the replay above that N (see _REPLAY_MAX_N). finite: use the replay only
        where it is wrong somewhere it is finite: one wrong by NaN alone (huge logits overflow
        it, as they overflow many other mistakes) would match any NaN output. strict: the
        output must reproduce the replay in its wrong elements too (matches() alone lets 1%
        disagree): for a replay near other mistakes' outputs, which then match it but for a
        few rows. not_all_nan: skip a replay that is NaN everywhere (the generic NaN hint
        below names those mistakes together). also: (label, switches) of other mistakes that
        give the same output on some inputs (one key block per row, say): each one whose
        replay the output reproduces too is named after the label."""
        def diagnose(got, expected, bad):
            if max_n is not None and n > max_n:
                return None
            for bm, bn in _block_candidates(impl, case, n, d, dtype, causal):
                cand = _streamed64(q, k, v, causal=causal, scale=scale_used, block_m=bm,
                                   block_n=bn, **switches)
                if finite and not differs(cand.where(cand.isfinite(), expected), expected):
                    continue
                if not_all_nan and bool(cand.isnan().all()):
                    continue
                cand = stored(cand)
                if not (differs(cand, expected) and matches(got, cand, expected)):
                    continue
                # strict: every wrong element, by the same measure as matches()
                if not strict or bool(close(got[bad], cand[bad], expected[bad]).all()):
                    twins = [twin for twin, twin_switches in also if matches(got, stored(
                        _streamed64(q, k, v, causal=causal, scale=scale_used, block_m=bm,
                                    block_n=bn, **twin_switches)), expected)]
                    return "; or, the same output here, ".join([label, *twins])
            return None

        return diagnose

    def replay_any(label, variants):
        """replay() over several mask_logit values: the label if any of them reproduces the
        output, its wrong elements included (matches() alone lets 1% disagree: a few wrong
        rows). A value far below every row's largest logit weighs exp(-800) = 0 even in float64:
        it cannot differ from the reference, and is not replayed (on ordinary inputs none is)."""
        def diagnose(got, expected, bad):
            if n == 0:
                return None
            s = _scores64(q, k, scale_used)
            if causal:
                s = s.masked_fill(~_causal_mask(n), -math.inf)
            floor = float(s.max(dim=1).values.min()) - 800.0
            for switches in (sw for sw in variants if sw["mask_logit"] > floor):
                for bm, bn in _block_candidates(impl, case, n, d, dtype, causal):
                    cand = _streamed64(q, k, v, causal=causal, scale=scale_used, block_m=bm,
                                       block_n=bn, **switches)
                    if not (differs(cand, expected) and matches(got, cand, expected)):
                        continue
                    g, c = got[bad], cand[bad]
                    same = ((g - c).abs() <= atol + rtol * c.abs()) | (g.isnan() & c.isnan())
                    if bool(same.all()):
                        return label
            return None

        return diagnose

    def or_same(diagnosis, twins):
        """diagnosis, and where it names a mistake, each of `twins` (other diagnoses) that
        reproduces the same output too, after it: as replay's `also`, for a twin that is not a
        _streamed64 switch (a walk) or a diagnosis that is not a replay (replay_any)."""
        def diagnose(got, expected, bad):
            label = diagnosis(got, expected, bad)
            if not label:
                return None
            return "; or, the same output here, ".join(
                [label, *(twin for twin in (tw(got, expected, bad) for tw in twins) if twin)])

        return diagnose

    def walk(label, stages, local_keep=False, transposed_keep=False, reversed_keep=False,
             local_keys=False):
        """A stage-bound mistake: _key_walk64 with stages(start_m, block_m, block_n) -> (hi1,
        lo2, hi2). The label (or label(block_m, block_n)) where that output differs from the
        reference and the implementation reproduces it, its wrong elements included (as
        replay_any does). Up to _REPLAY_MAX_N."""
        def diagnose(got, expected, bad):
            if n == 0 or n > _REPLAY_MAX_N:
                return None
            for bm, bn in _block_candidates(impl, case, n, d, dtype, causal):
                cand = _key_walk64(q, k, v, causal=causal, scale=scale_used, block_m=bm,
                                   block_n=bn, local_keep=local_keep,
                                   transposed_keep=transposed_keep,
                                   reversed_keep=reversed_keep, local_keys=local_keys,
                                   stages=lambda sm, bm=bm, bn=bn: stages(sm, bm, bn))
                if cand is None or not (differs(cand, expected)
                                        and matches(got, cand, expected)):
                    continue
                if bool(agrees(got[bad], cand[bad], rtol, atol).all()):
                    return label(bm, bn) if callable(label) else label
            return None

        return diagnose

    def formula(label, fn):
        def diagnose(got, expected, bad):
            cand = fn()
            if differs(cand, expected) and matches(got, cand, expected):
                return label
            return None

        return diagnose

    def scales(candidates):
        """formula() for outputs that differ from the reference in the scale alone: of the
        scales whose output the implementation reproduces, the closest. Two scales can be near
        (d = 64: d ** -0.5 = 0.125 and 0.3 * 0.3 * log2(e) = 0.130), and two mistakes can give
        one scale (with scale 1, applying it twice is folding log2(e) twice): the hint then
        names every mistake that gives it. Past 1024 rows, on 1024 of them (each candidate costs
        rows x N x d)."""
        def diagnose(got, expected, bad):
            rows = _sample_rows(n)
            g, e = got[rows], expected[rows]
            found = []  # (distance to got, scale)
            for sc in sorted({sc for _, sc in candidates}):
                cand = _attention_rows64(q, k, v, rows, causal=causal, scale=sc)
                if differs(cand, e) and matches(g, cand, e):
                    err = (g - cand).abs().masked_fill(g.isnan() & cand.isnan(), 0.0)
                    found.append((float(err.nan_to_num(nan=math.inf).mean()), sc))
            if not found:
                return None
            best = min(found)[1]
            return "; or ".join(label for label, sc in candidates
                                if math.isclose(sc, best, rel_tol=1e-12))

        return diagnose

    def rounded_through():
        """The output rounded to another 16-bit dtype before the store (a cast hard-coded in
        the kernel, e.g. .to(tl.float16) on a float32 output): every element is then a value of
        that dtype exactly, which a float32 (or the other 16-bit) result almost never is, and
        equals the reference rounded to it, up to one unit in its last place (the kernel rounds
        its own float32 result, which may lie on the other side of a rounding boundary)."""
        import torch

        def diagnose(got, expected, bad):
            for narrow in ("float16", "bfloat16"):
                if narrow == dtype:
                    continue
                t = getattr(torch, narrow)
                finite = got.isfinite()
                if not bool((got[finite].to(t).double() == got[finite]).all()):
                    continue
                model = expected.to(t).double()
                if differs(model, expected) and bool(
                        agrees(got, model, torch.finfo(t).eps, atol).all()):
                    return (f"{dtype} output rounded through {narrow}: every element of the "
                            f"output is a {narrow} value (the reference rounded to {narrow}), "
                            f"as from a cast hard-coded in the kernel, e.g. (acc / l_i[:, None])"
                            f".to(tl.{narrow}); cast to the output's dtype at the store, "
                            f"out.to(out_ptr.dtype.element_ty)")
            return None

        return diagnose

    def epsilon_in_division():
        """out = acc / (l_i + eps), a guard against division by zero: l >= 1 (the row's largest
        key weighs exp2(0) = 1), so no guard is needed, and the eps pulls each row toward 0 by
        eps / l relative: a few float32 units for eps = 1e-6, visible where l is near 1 (one
        key, or one that dominates). The replay: the reference times l / (l + eps), with l =
        sum_j exp(s_j - max_j s_j) over the row's visible keys."""
        def diagnose(got, expected, bad):
            if n == 0 or n > _REPLAY_MAX_N:
                return None
            s = _scores64(q, k, scale_used)
            if causal:
                s = s.masked_fill(~_causal_mask(n), -math.inf)
            den = (s - s.max(dim=1, keepdim=True).values).exp().sum(dim=1, keepdim=True)
            for eps in (1e-6, 1e-5, 1e-7, 1e-4, 1e-3, 1e-8):
                cand = expected * (den / (den + eps))
                if (differs(cand, expected) and matches(got, cand, expected)
                        and bool(close(got[bad], cand[bad], expected[bad]).all())):
                    return (f"epsilon in the final division: the output equals acc / (l_i + "
                            f"{eps:g}), each row pulled toward 0 by {eps:g} / l; l_i is at "
                            f"least 1 (the row's largest key weighs exp2(0) = 1), so no guard "
                            f"is needed: out = acc / l_i[:, None]")
            return None

        return diagnose

    scale_mistakes = [
        ("scale not applied: the output equals softmax(Q K^T) V without the scale", 1.0),
        ("log2(e) folded twice, or exp used with log2-unit scores: the output equals "
         "softmax(Q K^T * scale * log2(e)) V", scale_used * LOG2E),
        ("exp2 used without folding log2(e) into the scale: the output equals "
         "softmax(Q K^T * scale / log2(e)) V", scale_used / LOG2E),
        ("scale applied twice: the output equals softmax(Q K^T * scale^2 * log2(e)) V, as when "
         "the scores are multiplied by qk_scale (s = s * qk_scale) and then again in m_new and "
         "p; multiply them by qk_scale once", scale_used * scale_used * LOG2E),
    ]
    if scale_given is not None:
        scale_mistakes.append(("the scale argument was ignored: the output equals the default "
                               "scale d ** -0.5", d ** -0.5))
    elif n > 0:
        scale_mistakes.append(("default scale taken from the wrong dimension: the output equals "
                               "softmax(Q K^T * N ** -0.5) V; the default is d ** -0.5, d = "
                               "q.shape[-1] (the head dim), not the sequence length N",
                               n ** -0.5))
    # Mistakes that give another's output on some inputs (one key block per row, say): the
    # replay that speaks first names both there (replay's also).
    keep_inverted = ("where() arguments swapped in the mask: tl.where(keep, -float(\"inf\"), s) "
                     "sets the kept scores to -inf and keeps the dropped ones (keys past N score "
                     "0; when causal, keys after the row); tl.where(keep, s, -float(\"inf\"))",
                     {"keep_inverted": True})
    l_alpha_on_block = ("alpha on the wrong term of the denominator: l_i = l_i + alpha * "
                        "rowsum(P) scales this key block's sum instead of the old l_i (and the "
                        "first block's alpha is exp2(-inf - m) = 0, which drops it); l_i = l_i "
                        "* alpha + rowsum(P)", {"l_alpha_on_block": True})
    where_swapped = replay(keep_inverted[0], max_n=_REPLAY_MAX_N, strict=True, **keep_inverted[1])
    compared_le = walk(
        "causal mask compared with <=: keep = offs_m[:, None] <= offs_n[None, :] keeps the "
        "keys from the row onwards in the diagonal stage instead of up to it; a row sees "
        "the keys up to and including its own: keep &= offs_m[:, None] >= offs_n[None, :]",
        lambda sm, bm, bn: (sm * bm, sm * bm, min((sm + 1) * bm, n)), reversed_keep=True)
    mask_plus_inf = ("dropped scores set to +inf, not -inf: tl.where(keep, s, float(\"inf\")) "
                     "makes m_new = +inf in every key block with a dropped key (past N, or after "
                     "the row when causal), and there exp2(+inf - +inf) = NaN; set them to "
                     "-float(\"inf\"), exp2(-inf) = 0", {"mask_logit": math.inf})
    keys_unmasked = ("keys past N unmasked: the last key block reaches past N; those keys load as "
                     "0, score 0 and add exp2(0 - m) to the denominator unless set to -inf",
                     {"mask_keys": False})
    acc_after_add = ("numerator rescaled after the add: acc = (acc + P V) * alpha scales this key "
                     "block's P V too (and the first block's alpha is exp2(-inf - m) = 0, which "
                     "drops it); rescale the old sum, then add: acc = acc * alpha[:, None] + P V",
                     {"acc_scaled_after_add": True})
    den_tile_sum = ("denominator summed over the whole tile: l_i += tl.sum(p) without an axis "
                    "adds one number, the sum of every row's p in the (BLOCK_M, BLOCK_N) tile, "
                    "to each row's denominator, so l is far too large and every output too "
                    "small; each row sums its own: l_i = l_i * alpha + tl.sum(p, 1)",
                    {"den_tile_sum": True})
    den_block_max = ("denominator adds each key block's largest p, not its sum: l_i = l_i * "
                     "alpha + tl.max(p, 1) (with one key block per row l is exp2(0) = 1 and "
                     "the output is acc undivided); l_i = l_i * alpha + tl.sum(p, 1)",
                     {"den_block_max": True})
    drops_last_key = ("key mask drops the last key: keep = offs_n < N - 1 (or <= N - 2) drops "
                      "key N - 1, a real key, in the masked stage (causal: the last row loses "
                      "its own key, and with N = 1 it has none: NaN); keys 0..N - 1 are real: "
                      "keep key j when j < N", {"key_limit": n - 1})
    key_mask_on_rows = (
        "key mask built on the wrong axis: keep = offs_n[:, None] < N is a (BLOCK_N, 1) column, "
        "which Triton lays over the (BLOCK_M, BLOCK_N) scores only where BLOCK_M == BLOCK_N "
        "(elsewhere it does not compile): row i of the tile is then kept or dropped whole by key "
        "start_n + i, so in the masked stage some rows keep the keys past N (loaded as 0, "
        "scoring 0) and the others lose the ragged block's real keys; keys are the columns: "
        "keep = offs_n[None, :] < N", {"key_mask_rows": True})
    # Causal: where the key block that starts at N - 1 holds that key alone, the cut at N - 1
    # drops the same key as a key mask that drops the last key: named beside it.
    n_minus_one = walk(lambda bm, bn: (
        f"the causal diagonal stage ends at N - 1: hi2 is an exclusive bound, so with "
        f"hi2 = min((start_m + 1) * BLOCK_M, N - 1) the loop skips a key block that starts "
        f"at key N - 1 (here N = {n}, BLOCK_N = {bn}) and the last row block never sees "
        f"key N - 1, the last row's own key (with N = 1 that row has no key at all: NaN); "
        f"hi2 = min((start_m + 1) * BLOCK_M, N)"),
        lambda sm, bm, bn: (sm * bm, sm * bm, min((sm + 1) * bm, n - 1)))
    # Strict: where it leaves one row wrong other outputs come near it. Not where it is NaN
    # everywhere (N = 1: no key left), where the NaN hints name it with the rest.
    drops_last_key_replay = replay(drops_last_key[0], strict=True, not_all_nan=True,
                                   **drops_last_key[1])
    def drops_last_key_first(got, expected, bad):
        """drops_last_key_replay, unless the causal cut at N - 1 gives the same output (asked
        only where the replay matches: the walk costs N x N x d)."""
        label = drops_last_key_replay(got, expected, bad)
        return None if label and causal and n_minus_one(got, expected, bad) else label

    max_scaled_twice = (
        "running max scaled twice in p: p = exp2((s - m_new) * qk_scale) multiplies m_new, "
        "already a scaled logit in log2 units, by qk_scale again; scale the score alone: "
        "p = exp2(s * qk_scale - m_new)", {"max_scaled_twice": True})
    alpha_scaled_twice = (
        "alpha scaled twice: alpha = exp2((m_i - m_new) * qk_scale) multiplies a difference of "
        "two running maxima, already scaled logits in log2 units, by qk_scale again; "
        "alpha = exp2(m_i - m_new)", {"alpha_scaled_twice": True})

    def noncausal_fails_too(got, expected, bad):
        """First, for a causal output NaN everywhere: if the same call without the mask fails
        too, the mistake is not in the mask, and the unmasked call's own diagnosis names it.
        A row of NaN (N = 1) is what many mistakes give (alpha = exp2(m_new - m_i) inverted, a
        running max taken with tl.minimum), and the causal walks' replays (the diagonal left
        out, the diagonal stage ending at N - 1) give it too."""
        if not causal or not bool(got.isnan().all()):
            return None
        unmasked = _noncausal_call(impl, case, q, k, v, scale_given)
        if unmasked is None:
            return None
        out, expected_out, rtol_out, atol_out = unmasked
        wrong = _misses(out, expected_out, rtol_out, atol_out)
        if wrong is None or not bool(wrong.any()):
            return None  # the unmasked call is right: the mask is the suspect, heard below
        out64 = out.detach().to("cpu", torch.float64)
        for diagnosis in _diagnoses(impl, case, q, k, v, causal=False, scale_used=scale_used,
                                    scale_given=scale_given, rtol=rtol_out, atol=atol_out):
            hint = diagnosis(out64, expected_out, wrong)
            if hint:
                return f"{hint} (named on the same call without causal=True, which fails too)"
        return None

    hints = [
        noncausal_fails_too,
        rounded_through(),
        replay("numerator not rescaled: acc (the running P @ V) must be multiplied by alpha = "
               "exp2(m_old - m_new) whenever the running max grows, like the denominator",
               rescale_acc=False),
        replay("numerator rescaled along the wrong axis: acc * alpha scales column c of acc by "
               "row c's alpha (alpha, of shape (BLOCK_M,), broadcasts as a row, which Triton "
               "allows when d == BLOCK_M); scale each row by its own: acc * alpha[:, None]",
               max_n=_REPLAY_MAX_N, acc_by_column=True),
        replay("p shifted along the wrong axis: s * qk_scale - m_new[None, :] subtracts row c's "
               "running max from column c of the scores (m_new, of shape (BLOCK_M,), broadcasts "
               "as a row, which Triton allows when BLOCK_M == BLOCK_N); shift each row by its "
               "own max: p = exp2(s * qk_scale - m_new[:, None])", max_n=_REPLAY_MAX_N,
               p_by_column=True),
        replay("V transposed in P V: tl.dot(p, tl.trans(v)) multiplies P by the (d, BLOCK_N) "
               "transpose of the value tile (it compiles only where BLOCK_N == d); only K is "
               "transposed, in Q K^T: P V takes the (BLOCK_N, d) tile as loaded, "
               "tl.dot(p.to(v.dtype), v, acc)", max_n=_REPLAY_MAX_N, v_transposed=True),
        replay("denominator not rescaled: l_i must be multiplied by alpha = exp2(m_old - m_new) "
               "whenever the running max grows, like the numerator", rescale_l=False),
        # Both at once: m_i overwritten with m_new before alpha. Strict: its output is near
        # "numerator not rescaled"'s and "denominator not rescaled"'s, and near the reference
        # where a row's running max rarely grows.
        replay("alpha is 1 at every step (neither acc nor l rescaled): m_i was overwritten "
               "with m_new before alpha = exp2(m_i - m_new), so alpha = exp2(m_new - m_new) = "
               "1; compute alpha from the old max first, and set m_i = m_new last, after acc "
               "and l_i are updated", strict=True, rescale_acc=False, rescale_l=False),
        # No replay for a max not carried across blocks (m_new = the block's own max): any
        # shift is exact while alpha follows it, so its output differs only where alpha
        # overflows, by NaN alone, and such a replay matched every NaN output (the mistakes
        # below in forward.extreme). forward.extreme's _nan_hint names it, once attention is
        # right on ordinary inputs.
        # Key N - 1 dropped where the masked stage holds it (causal: the last row's own key
        # alone; else every row's, where BLOCK_N does not divide N). Before "alpha from the
        # block's own max", whose replay, far off in the one row this leaves wrong (causal),
        # comes within 1% of its departure there. Where the causal cut at N - 1 gives the same
        # output it steps aside: that walk speaks in its own place and names this one after it.
        drops_last_key_first,
        replay("alpha from the block's own max: alpha = exp2(m_i - max(s) * qk_scale) must be "
               "exp2(m_i - m_new), with the new running max that p was shifted by; where this "
               "block's max is below the running max, alpha > 1 inflates the old terms (and a "
               "block whose scores are all -inf gives exp2(+inf) = inf, so NaN)",
               max_n=_REPLAY_MAX_N, finite=True, alpha_block_max=True),
        # Before "running max scaled twice in p", which also lets the old terms weigh too
        # little and matched this mistake's output in cases where few rows are wrong.
        # Named with its twins where the output reproduces them too: in 16-bit tolerances the
        # running max scaled twice in p, and, with scale = 1 (qk_scale = log2(e)), alpha scaled
        # twice, which is then exactly exp(m_i - m_new).
        replay("alpha computed with exp instead of exp2: the running maxima are in log2 units "
               "(scores times qk_scale = scale * log2(e)), so alpha = exp2(m_i - m_new), like "
               "p; exp(m_i - m_new) shrinks the old terms too much", max_n=_REPLAY_MAX_N,
               also=[max_scaled_twice, alpha_scaled_twice], alpha_base_e=True),
        replay(max_scaled_twice[0], max_n=_REPLAY_MAX_N, finite=True, **max_scaled_twice[1]),
        # Strict, as the next: where alpha is 1 at the last step (the running max no longer
        # grows) each is near the other's output.
        replay("accumulator not carried across key blocks: acc = tl.dot(p, v) starts a new "
               "sum at every step, so the numerator holds the last key block's P V alone "
               "(the denominator still sums every block); pass acc as the accumulator, "
               "tl.dot(p, v, acc), after rescaling it by alpha", max_n=_REPLAY_MAX_N,
               strict=True, acc_not_carried=True),
        # Where N < BLOCK_N every row keeps every key past N under the key mask on the wrong
        # axis: the classic "keys past N unmasked" gives that output and is named first.
        replay(keys_unmasked[0], max_n=_REPLAY_MAX_N, strict=True,
               also=[key_mask_on_rows, acc_after_add, keep_inverted], **keys_unmasked[1]),
        # Before "numerator rescaled after the add", whose output (0 where a row has one key
        # block) lies within 1% of this one's departure where a row's one key is far outweighed
        # by the keys past N it keeps: named after it there, with its own twin (where() swapped).
        replay(key_mask_on_rows[0], max_n=_REPLAY_MAX_N, strict=True,
               also=[acc_after_add, keep_inverted], **key_mask_on_rows[1]),
        replay(acc_after_add[0], strict=True, also=[keep_inverted], **acc_after_add[1]),
        # Strict: right where a row's program visits one key block, so near the reference
        # (and other mistakes' outputs) where few rows span two.
        replay("numerator added twice: acc += tl.dot(p, v, acc) adds acc to a dot that already "
               "accumulates into acc, so acc = 2 * acc * alpha + P V (right only where a row's "
               "program visits one key block); acc = tl.dot(p.to(v.dtype), v, acc)",
               max_n=_REPLAY_MAX_N, strict=True, acc_added_twice=True),
        replay("denominator rescaled after the add: l_i = (l_i + rowsum(P)) * alpha scales this "
               "key block's sum too (and the first block's alpha is exp2(-inf - m) = 0, which "
               "drops it); l_i = l_i * alpha + rowsum(P)", also=[l_alpha_on_block],
               l_scaled_after_add=True),
        replay(l_alpha_on_block[0], **l_alpha_on_block[1]),
        replay("the final division missing: the output is acc, the running P V, not divided "
               "by the running denominator; out = acc / l_i[:, None]", also=[den_block_max],
               divide=False),
        replay(den_block_max[0], **den_block_max[1]),
        replay("the output multiplied by the denominator: out = acc * l_i[:, None]; divide, "
               "out = acc / l_i[:, None]", multiply_den=True),
        replay("denominator broadcast along the wrong axis: acc / l_i divides column c by row "
               "c's denominator (l_i, of shape (BLOCK_M,), broadcasts as a row, which Triton "
               "allows when d == BLOCK_M); divide each row by its own: acc / l_i[:, None]",
               divide_by_column=True),
        replay("running max never updated: m_i = m_new is missing at the end of the loop step, "
               "so m_i stays -inf, every step's alpha = exp2(-inf - m_new) = 0 and a row keeps "
               "only the last key block its program visits", max_n=_REPLAY_MAX_N,
               update_max=False),
        # A finite "very negative" number for a dropped key (on the raw score, or on the logit
        # in log2 units): right until real scores (logits) lie below it, as in forward.extreme's
        # huge_scores (scores -2e31 and below) and negative_logits (logits about -1e38) cases.
        # Before "keys past N unmasked": where every real score is far below the sentinel, a
        # dropped key scored -1e30 and one scored 0 weigh nearly the same (within bf16's
        # tolerance), and a kernel that drops no key at all already failed forward.values.
        # Where every real logit is about -1e38 a key past N that scores 0 outweighs them all,
        # kept by a swapped where() as by a sentinel or no mask: the same output, named too.
        or_same(replay_any("masked scores must be -inf, not a finite sentinel: a dropped key "
                           "(past N, or after the row when causal) got a finite score such as "
                           "-1e30 (or, with no mask at all, the 0 a key past N scores), and real "
                           "scores (or logits) can lie below it: then the dropped key outweighs "
                           "every real one; set dropped keys to -float(\"inf\") (exp2(-inf) = 0 "
                           "for any running max)",
                           [{"mask_logit": c * factor} for c in _SENTINELS
                            for factor in (scale_used, 1.0 / LOG2E)]),
                [where_swapped]),
        # Strict and never where it is NaN everywhere: there the generic NaN hint below names
        # it with the other mistakes that give NaN everywhere.
        replay(mask_plus_inf[0], max_n=_REPLAY_MAX_N, strict=True, not_all_nan=True,
               **mask_plus_inf[1]),
        replay(keys_unmasked[0], **keys_unmasked[1]),
        replay("key mask off by one: key N (one past the last key, loaded as 0) was kept; keep "
               "key j when j < N, not j <= N: it scores 0 and adds exp2(0 - m) to the "
               "denominator", key_limit=n + 1),
        # Strict: on forward.extreme's inputs a causal mask compared with <= came within 1%.
        # After the key-mask replays: where every real logit is about -1e38 a kept key past N
        # (score 0) outweighs them all whether the mask was swapped or left out, and those
        # name the more common mistakes. Causal, on huge logits (the largest kept logit decides
        # a row), the swap and a causal term compared with <= keep nearly the same keys: the
        # walk of the latter is named after it where it gives the same output.
        or_same(where_swapped, [compared_le]) if causal else where_swapped,
        replay("causal mask excludes the diagonal: a row must see its own key (row >= key, not "
               "row > key); row 0 then has no key at all and becomes NaN",
               also=[mask_plus_inf, drops_last_key], inclusive=False),
        # A 16-bit acc is rounded after every key block; on random inputs that stays inside the
        # tolerance, so this replay only ever matches where it differs: forward.extreme's
        # small_tail case, built to make the dropped contributions add up.
        *(replay(f"accumulator kept in 16 bits: acc (the running P @ V) was rounded to {acc16} "
                 "between key blocks, which loses every block's contribution smaller than half "
                 "a unit in the last place of acc; keep acc float32 (tl.zeros(..., tl.float32), "
                 "tl.dot(p, v, acc)) and round once, at the store", acc_dtype=acc16)
          for acc16 in ((dtype,) if dtype != "float32" else ("float16", "bfloat16"))),
        formula("scale applied after softmax: the output equals scale * softmax(Q K^T) V; the "
                "scale belongs inside the exponent, softmax(Q K^T * scale) V",
                lambda: scale_used * reference(q, k, v, causal=causal, scale=1.0)),
        scales(scale_mistakes),
        # After the scale formulas: with one key block per row it is their "log2(e) folded
        # twice" (which names both mistakes), and with scale = 1 also "scale applied twice".
        replay("p computed with exp instead of exp2 (exp used with log2-unit scores): s * "
               "qk_scale - m_new is in log2 units (qk_scale = scale * log2(e)), so p = "
               "exp2(s * qk_scale - m_new); tl.exp of it weighs each key as if log2(e) were "
               "folded twice, while alpha's exp2 rescales in the right units",
               max_n=_REPLAY_MAX_N, p_base_e=True),
        # After the scale formulas, as the one above: with one key block per row the output is
        # softmax(Q K^T / log2(e)) V, which with scale = 1 is "exp2 used without folding".
        # Finite: on forward.extreme's huge logits it overflows to NaN, as other mistakes do.
        replay("p computed from the raw scores: p = exp2(s - m_new) leaves out qk_scale, while "
               "the running max m_new (and alpha) are in log2 units of s * qk_scale; p = "
               "exp2(s * qk_scale - m_new[:, None])", max_n=_REPLAY_MAX_N, finite=True,
               p_unscaled=True),
        # After the others, and strict: a replay that differs from the reference in a few
        # elements only would match (99% agreement) other mistakes' outputs that are wrong
        # there alone (alpha = 1 at every step, say, where the scale is small).
        replay(alpha_scaled_twice[0], max_n=_REPLAY_MAX_N, strict=True, **alpha_scaled_twice[1]),
        # Where a row block's only real row is its first (N = 1) the column sums and the
        # tile's sum give that row the same denominator: each names the other there.
        replay("denominator summed over the wrong axis: l_i += tl.sum(p, 0) adds the column "
               "sums of p (the shapes agree only where BLOCK_M == BLOCK_N); each row's "
               "denominator sums its own row: tl.sum(p, 1)", max_n=_REPLAY_MAX_N,
               also=[den_tile_sum], den_column_sums=True),
        replay(den_tile_sum[0], max_n=_REPLAY_MAX_N, **den_tile_sum[1]),
        # Last, and strict: right where no earlier key block held a row's maximum, so near the
        # reference (and other mistakes' outputs) where few rows are wrong.
        replay("running max set to the block's own max: m_i = tl.max(s, 1) * qk_scale at the "
               "end of the step, where m_i = m_new belongs; acc and l are in units of m_new, so "
               "the next alpha = exp2(m_i - m_new) rescales them from the wrong max wherever an "
               "earlier key block held the row's maximum; m_i = m_new", max_n=_REPLAY_MAX_N,
               strict=True, m_block_only=True),
        # Right wherever no row's logits lie 126 log2 units below another row's of the same
        # tile: forward.extreme's huge logits (NaN rows), never ordinary inputs. Strict: most
        # of its rows are NaN, as other mistakes' are there.
        replay("running max taken over the whole tile: tl.max(s) without an axis reduces the "
               "(BLOCK_M, BLOCK_N) scores to one number, so every row is shifted by the largest "
               "logit of any row of the block; harmless while the rows' logits lie close, but "
               "a row whose logits all lie more than 126 log2 units below it gets exp2(...) = 0 "
               "for every key (float32 flushes it), l = 0 and 0 / 0 = NaN; each row its own "
               "max: m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)", max_n=_REPLAY_MAX_N,
               strict=True, tile_max=True),
    ]
    if causal:
        # The stage bounds' two branches swapped (`if not IS_CAUSAL:`): a causal call walks the
        # non-causal range, every full key block unmasked and only the ragged tail masked (the
        # ninth learner audit's causal_branches_swapped). Where N is a multiple of BLOCK_N that
        # is non-causal attention, and the formula speaks first.
        causal_walks_noncausal = walk(
            "stage bounds of a non-causal call: the unmasked stage 1 ran over every full key "
            "block (hi1 = (N // BLOCK_N) * BLOCK_N), so the rows saw the keys after them, and "
            "only the ragged tail went through the masked stage; a causal call walks hi1 = "
            "start_m * BLOCK_M, then its diagonal block to hi2 = min((start_m + 1) * BLOCK_M, "
            "N) (are the two branches of `if IS_CAUSAL:` swapped?)",
            lambda sm, bm, bn: ((n // bn) * bn, (n // bn) * bn, n))
        hints.append(or_same(formula(
            "causal mask not applied: the output equals non-causal attention",
            lambda: reference(q, k, v, causal=False, scale=scale_used)),
            [causal_walks_noncausal]))
        hints.append(causal_walks_noncausal)
        # Where one row block holds every row the two are the same output, and the formula
        # above, true of both, speaks first.
        # Stage 1 run to the end of the row block gives the same output where N is a multiple
        # of BLOCK_M (elsewhere it also reads keys past N: see _diagonal_in_stage1).
        hints.append(replay("causal mask missing from keep: the diagonal block kept the keys "
                            "after each row (its program's keys run to the end of the row "
                            "block); in the masked stage keep = (j < N) & (row >= j); or the "
                            "unmasked stage 1 ran into the diagonal block (hi1 = start_m * "
                            "BLOCK_M, not (start_m + 1) * BLOCK_M)",
                            max_n=_REPLAY_MAX_N, diagonal_unmasked=True))
        # Stage bounds and the causal term of keep in other index units: _key_walk64. A
        # hi2 with BLOCK_N for BLOCK_M gives the output of "stopped after BLOCK_N keys" below
        # where one row block holds every row (start_m = 0): that one speaks there.
        hints.append(walk(lambda bm, bn: (
            f"the causal diagonal stage ends at min((start_m + 1) * BLOCK_N, N): BLOCK_N "
            f"where BLOCK_M belongs, so with BLOCK_N = {bn} < BLOCK_M = {bm} the masked stage "
            f"stops short of the row block's end (and is empty for every row block after the "
            f"first): hi2 = min((start_m + 1) * BLOCK_M, N)"),
            lambda sm, bm, bn: (sm * bm, sm * bm, min((sm + 1) * (bn if n > bm else bm), n))))
        # Causal launches run the row blocks bottom first: program_id(0) is not start_m.
        hints.append(walk(
            "causal stage bounds from tl.program_id(0): a causal launch runs the row blocks "
            "bottom first (start_m = tl.num_programs(0) - 1 - tl.program_id(0)), so "
            "tl.program_id(0) * BLOCK_M is another row block's first row and each program walks "
            "another row block's key range; hi1 = start_m * BLOCK_M",
            lambda sm, bm, bn: ((-(-n // bm) - 1 - sm) * bm, (-(-n // bm) - 1 - sm) * bm,
                                min((sm + 1) * bm, n))))
        hints.append(walk(lambda bm, bn: (
            f"causal mask compares block-local indices: keep must compare the row's index "
            f"offs_m (start_m * BLOCK_M + i) with the key's offs_n (start_n + j), not "
            f"tl.arange(0, BLOCK_M) with tl.arange(0, BLOCK_N): the local ones agree only in "
            f"the diagonal stage's first key block, and here a row block of BLOCK_M = {bm} "
            f"has {bm // bn} key blocks of BLOCK_N = {bn}; keep &= offs_m[:, None] >= "
            f"offs_n[None, :]"),
            lambda sm, bm, bn: (sm * bm, sm * bm, min((sm + 1) * bm, n)), local_keep=True))
        # The row's index against the key's place in its key block (offs_n0, in scope beside
        # offs_n): from the second row block on every row is past every local index, so the
        # diagonal block keeps the keys after each row, as with no causal term at all (named
        # above) but for the first row block's later key blocks, which this walk tells apart.
        hints.append(walk(lambda bm, bn: (
            f"causal mask compares the row with the key's block-local index: offs_n0 = "
            f"tl.arange(0, BLOCK_N) is the key's place in its key block, offs_n = start_n + "
            f"offs_n0 its index; offs_m[:, None] >= offs_n0[None, :] holds for every key of "
            f"the block once the row's index reaches BLOCK_N (here {bn}; BLOCK_M = {bm}), so "
            f"the rows keep the keys after them; keep &= offs_m[:, None] >= offs_n[None, :]"),
            lambda sm, bm, bn: (sm * bm, sm * bm, min((sm + 1) * bm, n)), local_keys=True))
        # The rows and keys of keep swapped: a (BLOCK_N, BLOCK_M) tile, which compiles only
        # where BLOCK_M == BLOCK_N (elsewhere Triton's broadcast error names the line); in the
        # diagonal block a row then keeps the keys from its own to the block's end.
        hints.append(walk(
            "causal mask transposed: keep = offs_m[None, :] >= offs_n[:, None] is a (BLOCK_N, "
            "BLOCK_M) tile whose rows are keys, so in the diagonal block each row kept the keys "
            "from its own onwards instead of up to it (with BLOCK_M != BLOCK_N it does not "
            "compile); or compared with <= (offs_m[:, None] <= offs_n[None, :]), the same output "
            "where BLOCK_M == BLOCK_N; rows are offs_m[:, None], keys offs_n[None, :]: keep &= "
            "offs_m[:, None] >= offs_n[None, :]",
            lambda sm, bm, bn: (sm * bm, sm * bm, min((sm + 1) * bm, n)), transposed_keep=True))
        hints.append(compared_le)
        # Where the last row block's diagonal stage holds one key block and its last key block
        # starts at N - 1, the cut at N - 1 drops the same keys: named after it.
        hints.append(or_same(replay("the causal diagonal stage stopped after BLOCK_N keys: it "
                                    "must run from the row block's first key to the end of the "
                                    "row block, hi2 = min((start_m + 1) * BLOCK_M, N), not "
                                    "start_m * BLOCK_M + BLOCK_N (nor (start_m + 1) * BLOCK_N: "
                                    "where one row block holds every row the two are the "
                                    "same): later keys of the diagonal block were dropped",
                                    diagonal_one_block=True), [n_minus_one]))
        # After "stopped after BLOCK_N keys", the more common mistake, which speaks first where
        # the two give the same output (above).
        hints.append(or_same(n_minus_one, [drops_last_key_replay]))
        hints.append(replay("the causal masked stage started at key 0: with lo2 = 0 it runs "
                            "again over the keys left of the diagonal block, which stage 1 "
                            "already added, so they count twice; stage 2 starts where stage 1 "
                            "ends, lo2 = hi1 = start_m * BLOCK_M", max_n=_REPLAY_MAX_N,
                            left_keys_twice=True))
        # Non-causal, a dropped key scored 0 is the output of "keys past N unmasked" above.
        hints.append(replay("masked scores set to 0, not -inf: a dropped key (after the row, "
                            "or past N) scores 0 and adds exp2(0 - m) to the denominator (and "
                            "its v row to the numerator); tl.where(keep, s, -float(\"inf\"))",
                            max_n=_REPLAY_MAX_N, mask_logit=0.0))
    else:
        hints.append(formula("causal mask applied to a non-causal call",
                             lambda: reference(q, k, v, causal=True, scale=scale_used)))
        # ... and the same swap seen from a non-causal call: the causal range, each row's keys
        # up to the end of its row block.
        hints.append(walk(
            "stage bounds of a causal call: stage 1 stopped at the row block's first row (hi1 = "
            "start_m * BLOCK_M) and the masked stage at its last (hi2 = (start_m + 1) * "
            "BLOCK_M), so each row saw only the keys up to the end of its row block; a "
            "non-causal call walks every key, hi1 = (N // BLOCK_N) * BLOCK_N and the tail to "
            "hi2 = N (are the two branches of `if IS_CAUSAL:` swapped?)",
            lambda sm, bm, bn: (sm * bm, sm * bm, min((sm + 1) * bm, n))))
        hints.append(walk(lambda bm, bn: (
            f"the masked stage started at key 0: non-causal, lo2 = 0 walks every key again in "
            f"the masked stage, so the keys of stage 1 (0..{(n // bn) * bn - 1}, the full "
            f"blocks of BLOCK_N = {bn}) count twice; stage 2 takes only the ragged tail, "
            f"lo2 = hi1 = (N // BLOCK_N) * BLOCK_N"),
            lambda sm, bm, bn: ((n // bn) * bn, 0, n)))
        block_before_n = walk(lambda bm, bn: (
            f"stage 1 ends one key block before N: hi1 = N - BLOCK_N (= {n - bn} for N = {n}, "
            f"BLOCK_N = {bn}) is not a multiple of BLOCK_N, so stage 1's last block runs to key "
            f"{-(-(n - bn) // bn) * bn - 1} and the masked stage, from lo2 = hi1, adds keys "
            f"{n - bn}..{-(-(n - bn) // bn) * bn - 1} a second time; stage 1 takes the full "
            f"key blocks, hi1 = (N // BLOCK_N) * BLOCK_N"),
            lambda sm, bm, bn: (n - bn, n - bn, n) if n >= bn else (0, 0, n))
        # Where N - BLOCK_N == N // BLOCK_N (N = 17, BLOCK_N = 16) the two walks are one: named
        # after it.
        hints.append(or_same(walk(lambda bm, bn: (
            f"stage 1 ends at a block count, not a key index: hi1 = N // BLOCK_N "
            f"(= {n // bn} for N = {n}, BLOCK_N = {bn}) counts key blocks, but the loops run "
            f"over keys, so stage 1 ends at key (N // BLOCK_N) * BLOCK_N = {(n // bn) * bn}; "
            f"here the masked stage then ran from key {n // bn} and counted keys "
            f"{n // bn}..{-(-(n // bn) // bn) * bn - 1} a second time"),
            lambda sm, bm, bn: (n // bn, n // bn, n)), [block_before_n]))
        hints.append(block_before_n)
    # Last of the replays, and strict: its output lies within a few float32 units of the
    # reference, so only an output whose every wrong element it reproduces is named.
    hints.append(epsilon_in_division())
    hints.extend(before_symptoms)
    if not generic:
        return hints
    # p shifted by the old max is NaN in every row on any input (p = exp2(+inf) on the first
    # block), so its replay matches any output that is NaN nearly everywhere: the hint names
    # the other mistakes that give that too. Not among the replays above: forward.extreme
    # calls those alone for NaN outputs, where huge logits make other mistakes NaN everywhere.
    old_max = replay("NaN in the output, in nearly every element, as from exp2(+inf) on the "
                     "first key block, where m_i is still -inf: p shifted by the old running "
                     "max (p = exp2(s * qk_scale - m_i) must be exp2(s * qk_scale - m_new), "
                     "shifted by the max that includes this block), or alpha inverted "
                     "(exp2(m_new - m_i) must be exp2(m_i - m_new)); or the running max taken "
                     "with tl.minimum (m_new = tl.minimum(m_i, ...) stays -inf, so p = "
                     "exp2(+inf) and alpha = exp2(-inf - -inf) = NaN; tl.maximum); or every "
                     "score of every row set to -inf (exp2(-inf - -inf) = NaN)",
                     max_n=_REPLAY_MAX_N, also=[mask_plus_inf, drops_last_key], p_old_max=True)
    hints.append(lambda got, expected, bad: (
        (old_max(got, expected, bad)
         or "NaN in the output: a row whose scores are all -inf gives exp2(-inf - -inf) = NaN "
            "(every row must keep at least one key), or alpha overflowed (max not carried?)")
        if bool((got.isnan() & ~expected.isnan()).any()) else None))
    hints.append(_tail_rows_hint(_block_candidates(impl, case, n, d, dtype, causal)[0][0], n,
                                 causal))
    return hints


def _tail_rows_hint(block_m, n, causal):
    """Only when there is a tail: N > block_m, N not a multiple of it, and every wrong row lies
    in the last (partial) row block. With N <= block_m the one block is all tail, so a wrong row
    there says nothing about masking.

    The tail is blamed only for NaN or Inf there, under a causal mask: then that program alone
    loads the key block that reaches past N, and a v row past N loaded without its mask (NaN or
    Inf in memory) survives p = 0 (0 * NaN = NaN). Wrong finite values there have other causes
    too (that program also walks the most key blocks: a running max never updated shows only
    there when it alone spans two), so those get the symptom, not a cause."""
    def diagnose(got, expected, bad):
        rows = bad.reshape(-1, got.shape[-1]).any(dim=1).nonzero().flatten()
        first_tail_row = (n // block_m) * block_m
        if not (len(rows) and n > block_m and n % block_m and int(rows.min()) >= first_tail_row):
            return None
        if causal and bool((bad & ~got.isfinite()).any()):
            return ("tail not masked: NaN or Inf only in the rows of the last (partial) row "
                    "block, whose program alone loads keys past N here: a k or v load of the "
                    "last key block without the mask offs_n < N (other=0) read whatever lies "
                    "past N, and p = 0 does not cancel NaN or Inf (0 * NaN = NaN)")
        return (f"only the rows of the last (partial) row block are wrong (rows "
                f"{first_tail_row}..{n - 1}), and no mistake replayed here reproduces them: "
                f"look at what that program alone does (its rows past N; when causal, the "
                f"longest walk over the key blocks)")

    return diagnose


def _compare_head(ctx, impl, case, got, q, k, v, *, causal, scale_given, name,
                  exact_scores=False, extra=(), first=()):
    """assert_close for one (N, d) head with the attention tolerance and the mistake replays.

    exact_scores: q k^T is exact (small integers), so equal scores give bitwise equal logits and
    unequal ones differ by far more than any rounding: no logit-size term in the tolerance.
    first / extra: the check's own diagnoses, tried before / after the replays.
    """
    d = q.shape[-1]
    scale_used = d ** -0.5 if scale_given is None else scale_given
    dtype = str(q.dtype).replace("torch.", "")
    rtol, atol = tolerance(dtype, v, 1.0 if exact_scores else _max_logit(q, k, scale_used))
    expected = reference(q, k, v, causal=causal, scale=scale_used)
    ctx.assert_close(got, expected, name=name, rtol=rtol, atol=atol,
                     diagnose=list(first) + _diagnoses(impl, case, q, k, v, causal=causal,
                                                       scale_used=scale_used,
                                                       scale_given=scale_given,
                                                       rtol=rtol, atol=atol) + list(extra))


# ---------------------------------------------------------------------------------------------
# forward.values: the formula, over N, d, dtype, causal, scale and block sizes
# ---------------------------------------------------------------------------------------------
_N_SET = (1, 2, 17, 64, 100, 257, 1000)
_SECOND_CALL_MAX_N = 17  # forward.values: sequences this short call attention twice
# forward.values on every device: q, k and v fenced (views of the first N rows of longer
# buffers whose later rows are NaN: a load past row N that a GPU does not fault on reads NaN,
# and NaN times p = 0 is still NaN); block_m alone (the launcher's block_n must then be at
# most block_m, or the causal call is refused); an int scale (the API takes int or float);
# N = 0 (an empty output of the right shape and dtype).
_VALUES_EDGE_CASES = [
    Case(n=100, d=64, dtype="float16", causal=True, scale="default", blocks="default",
         fenced=True),
    Case(n=100, d=32, dtype="float16", causal=True, scale="default", blocks=(32, None)),
    Case(n=17, d=16, dtype="float32", causal=False, scale=1, blocks=(16, 16)),
    Case(n=0, d=32, dtype="bfloat16", causal=True, scale="default", blocks="default"),
    Case(n=0, d=16, dtype="float16", causal=False, scale=0.3, blocks=(16, 16)),
]


def _values_cases(device: str) -> list[Case]:
    if device == "cuda":
        # Every (N, d, dtype, causal); the explicit scale on every other N (each compile is a
        # few seconds, so the product with the scale axis would double the run for little).
        cases = [Case(n=n, d=d, dtype=dt, causal=c, scale="default" if i % 2 else 0.3,
                      blocks="default")
                 for i, n in enumerate(_N_SET) for d in HEAD_DIMS for dt in DTYPES
                 for c in (False, True)]
        cases += [Case(n=n, d=d, dtype=dt, causal=c, scale="default", blocks=b)
                  for n in (257, 1000) for d in (64, 128) for dt in ("float16", "bfloat16")
                  for c in (False, True) for b in ((16, 16), (64, 64), (128, 128))]
        cases += [Case(n=4096, d=d, dtype=dt, causal=c, scale="default", blocks="default")
                  for d in (64, 128) for dt in ("float16", "bfloat16") for c in (False, True)]
        # The edge cases first: they are cheap, and the bug zoo stops at the first FAIL with
        # the bug's hint (behind the 224 cases above a mutant's run takes minutes on a GPU).
        return _VALUES_EDGE_CASES + cases
    # Interpreter: every (d, dtype, causal) once, the lengths and scales spread over them; the
    # block sizes are chosen so each case has several key blocks but few loop steps.
    blocks_for = {1: (16, 16), 2: "default", 17: (16, 16), 64: (32, 16), 100: (32, 16),
                  257: (64, 32)}
    cases, i = [], 0
    for d in HEAD_DIMS:
        for dt in DTYPES:
            for c in (False, True):
                n = (1, 2, 17, 64, 100, 257)[(i + i // 6) % 6]  # rotate the lengths per d
                cases.append(Case(n=n, d=d, dtype=dt, causal=c,
                                  scale="default" if (i // 2) % 2 == 0 else 0.3,
                                  blocks=blocks_for[n]))
                i += 1
    cases += [Case(n=1000, d=16, dtype="float16", causal=False, scale="default", blocks=(128, 128)),
              Case(n=1000, d=32, dtype="bfloat16", causal=True, scale=0.3, blocks=(128, 64)),
              # default blocks for a length between 16 and 64 that is not a power of two: the
              # launcher shrinks them to the next power of two (a tile must be one), not to N
              Case(n=33, d=16, dtype="float32", causal=True, scale="default", blocks="default")]
    return cases + _VALUES_EDGE_CASES


@register(W, "forward.values", tier="kernel", uses=("attention",), cases=_values_cases,
          doc="attention(q, k, v) against float64 softmax(QK^T*scale + mask)V")
def forward_values(ctx, impl, case):
    torch = ctx.torch
    scale = _resolve_scale(case)
    # Under the interpreter the short sequences only (cheap) run a second call of the same
    # shape on fresh inputs: its output must be fresh memory (ctx.call fails one in the first
    # call's), and the first output must come through the second call unchanged.
    from checks import launches

    calls = 2 if ctx.device == "cuda" or case.n <= _SECOND_CALL_MAX_N else 1
    # Non-causal cases leave causal out: its default must be False.
    mask = {"causal": True} if case.causal else {}
    outputs = []
    for i in range(calls):
        if case.get("fenced"):
            q, k, v = (_fenced(ctx, case.n, case.d, case.dtype) for _ in range(3))
        else:
            q, k, v = (ctx.randn((case.n, case.d), case.dtype) for _ in range(3))
        try:
            with (_failed_call_probed(ctx, impl, case, q, k, v, scale),
                  launches.recording() as launched):
                out = ctx.call(impl.attention, q, k, v, **mask, scale=scale, **_knobs(case),
                               expect_shape=(case.n, case.d), expect_dtype=case.dtype,
                               expect_contiguous=True)
        except CheckFailed as exc:
            if not exc.hint and isinstance(exc.__cause__, (TypeError, ValueError)):
                exc.hint = _valid_call_refused(case)
            raise
        _interpreter_notes(ctx, case.dtype)
        _compare_head(ctx, impl, case, out, q, k, v, causal=case.causal, scale_given=scale,
                      name="attention(q, k, v)" if i == 0 else
                           "attention(q, k, v), a second call of the same shape",
                      first=[_empty_grid(launched),
                             _fenced_tail_read(ctx, impl, case, q, k, v, scale),
                             _first_stage_past_n_values(ctx, impl, case, q, k, v, scale)])
        outputs.append((out, out.clone()))
    for i, (out, saved) in enumerate(outputs[:-1]):
        if not torch.equal(out, saved):  # both NaN-free: each passed its comparison
            ctx.fail(f"the output of call {i + 1} changed during a later call of the same shape "
                     f"(a buffer shared between calls)", hint=CACHED_BUFFER_HINT)


_FENCE_ROWS = 256  # NaN rows after a fenced input: more than one key block of any tile


def _fenced(ctx, n: int, d: int, dtype: str):
    """An (n, d) input that is the first n rows of an (n + _FENCE_ROWS, d) buffer whose later
    rows are NaN: contiguous and aligned as a plain tensor, but a load past row n reads NaN (the
    interpreter's bounds check would not object: the buffer is longer)."""
    buffer = ctx.randn((n + _FENCE_ROWS, d), dtype)
    buffer[n:] = float("nan")
    return buffer[:n]


def _fenced_tail_read(ctx, impl, case, q, k, v, scale):
    """A diagnosis for fenced inputs: NaN in the output where the result is a number can only
    come from the NaN rows past row N (read by a load without its mask, or by a causal stage 1
    that ran into the diagonal block)."""
    def diagnose(got, expected, bad):
        if not case.get("fenced"):
            return None
        if not bool((got[bad].isnan() & ~expected[bad].isnan()).any()):
            return None
        stage1 = _diagonal_in_stage1(ctx, impl, case, q, k, v, scale)
        if stage1:
            return stage1
        # The NaN must come from the fence: on the same inputs followed by zero rows instead of
        # NaN rows it is gone (a row left with no key, e.g. a causal mask without the diagonal,
        # is NaN either way and is named by other diagnoses).
        nan_here = got.isnan() & ~expected.isnan()
        again = _call_on_zero_padded(ctx, impl, case, q, k, v, scale)
        if again is None or bool(again.double().cpu()[nan_here].isnan().any()):
            return None
        return ("tail not masked: the output has NaN, and in this case q, k and v are views of "
                "the first N rows of longer buffers whose later rows are NaN, so a load read "
                "rows past N; every load of k and v in the last key block needs the mask "
                "offs_n < N (other=0), even where p = 0 would seem to cancel it (NaN * 0 = NaN)")

    return diagnose


def _padded(ctx, q, k, v, *, rows="zero", before=False):
    """Copies of q, k and v that are the first N rows of longer buffers whose later rows are
    "zero", "random" numbers, or "resampled": rows of the inputs themselves, row j of q, k and
    v together (keys of the same kind as the real ones: an extreme case's scale keeps them
    finite). Reads past N then succeed and add nothing that is NaN. before=True: the last N
    rows instead, those rows in front of them (reads before row 0 succeed)."""
    torch = ctx.torch
    n, d = q.shape
    if rows == "resampled" and n:
        picked = torch.randint(0, n, (_FENCE_ROWS,), generator=ctx.generator).to(q.device)
    first = _FENCE_ROWS if before else 0  # where the real rows lie in the buffer
    extra = slice(0, _FENCE_ROWS) if before else slice(n, None)
    padded = []
    for t in (q, k, v):
        if rows == "random":
            buffer = ctx.randn((n + _FENCE_ROWS, d), str(t.dtype).replace("torch.", ""))
        else:
            buffer = torch.zeros((n + _FENCE_ROWS, d), dtype=t.dtype, device=t.device)
            if rows == "resampled" and n:
                buffer[extra] = t[picked]
        buffer[first:first + n] = t
        padded.append(buffer[first:first + n])
    return padded


def _call_on_padded(ctx, impl, case, padded, scale, rows, where="followed by"):
    """The learner's attention on `padded` (from _padded; `rows`: what follows row N, or
    precedes row 0 where `where` says so) with the case's mask and knobs, or None if that call
    fails."""
    try:
        return ctx.call(impl.attention, *padded, causal=bool(case.causal), scale=scale,
                        **_knobs(case), name=f"attention on q, k, v {where} {rows} rows",
                        expect_shape=tuple(padded[0].shape), expect_dtype=padded[0].dtype)
    except CheckFailed:
        return None


def _call_on_zero_padded(ctx, impl, case, q, k, v, scale):
    """The learner's attention on copies of q, k and v followed by zero rows, or None if that
    call fails."""
    return _call_on_padded(ctx, impl, case, _padded(ctx, q, k, v), scale, "zero")


def _diagonal_in_stage1(ctx, impl, case, q, k, v, scale):
    """The hint for a causal call that read keys past N (the interpreter's bounds check stopped
    it, or the NaN rows past fenced inputs reached the output), when the unmasked stage 1 ran
    to the end of the row block: attention is called again on copies of q, k and v followed by
    zero rows, so the same reads succeed, and the mistake is named only if that output is its
    float64 replay (_streamed64's diagonal_in_stage1). None otherwise: e.g. a v load without
    its mask gives the right output on zero rows."""
    n, d = q.shape
    if not case.causal or n == 0:
        return None
    got = _call_on_zero_padded(ctx, impl, case, q, k, v, scale)
    if got is None:
        return None
    scale_used = d ** -0.5 if scale is None else scale
    expected = reference(q, k, v, causal=True, scale=scale_used)
    dtype = str(q.dtype).replace("torch.", "")
    for bm, bn in _block_candidates(impl, case, n, d, dtype, True):
        cand = _streamed64(q, k, v, causal=True, scale=scale_used, block_m=bm, block_n=bn,
                           diagonal_in_stage1=True)
        if _reproduces(got.double().cpu(), cand, expected, dtype, v,
                       _max_logit(q, k, scale_used)):
            return ("causal stage 1 ran into the diagonal block: the unmasked stage must end "
                    "at the row block's first key, hi1 = start_m * BLOCK_M; with hi1 = "
                    "(start_m + 1) * BLOCK_M the diagonal block ran without any mask (the keys "
                    "after each row kept, and keys past N read: on q, k, v followed by zero "
                    "rows the output is that replay) and the masked stage [lo2, hi2) was empty")
    return None


def _first_stage_past_n_probe(ctx, impl, case, q, k, v, scale, beyond=("memory", "zeros"),
                              logit_term=None):
    """The hint for a non-causal call that read keys past N (the interpreter's bounds check
    stopped it) when the unmasked stage 1 ran past the last full key block: attention is called
    again on copies of q, k and v followed by random rows, so the same reads succeed, and the
    mistake is named only if that output is _first_stage_past_n's replay reading those rows.
    Random rows, not zeros: a few keys scoring 0 among many can stay inside the tolerance (d =
    64 in bf16), random keys and values move the output further. Then rows resampled from the
    inputs: under forward.extreme's scales random keys overflow (every logit near -1e38) or
    are rounded apart from their replay (logits near 1e6), and the inputs' own rows are not.
    None otherwise: e.g. a v load without its mask, whose p = 0 cancels any finite row.
    logit_term: the logit size in the replay's tolerance, where the caller's scores are exact
    (forward.extreme: 1.0, which resampled rows keep exact; near 1e38 the default, the largest
    |logit|, would accept any output)."""
    n, d = q.shape
    if case.causal or n == 0:
        return None
    scale_used = d ** -0.5 if scale is None else scale
    expected = reference(q, k, v, causal=False, scale=scale_used)
    dtype = str(q.dtype).replace("torch.", "")
    for rows in ("random", "resampled"):
        padded = _padded(ctx, q, k, v, rows=rows)
        got = _call_on_padded(ctx, impl, case, padded, scale, rows)
        if got is None:
            continue
        got = got.double().cpu()
        for bn in dict.fromkeys(bn for _, bn in _block_candidates(impl, case, n, d, dtype,
                                                                  False)):
            hint = _first_stage_past_n(*padded, scale=scale_used, block_n=bn, dtype=dtype,
                                       beyond=beyond, max_logit=logit_term)(
                got, expected, None)
            if hint:
                return hint
    return None


def _first_stage_past_n_values(ctx, impl, case, q, k, v, scale):
    """A diagnosis for wrong values where no bounds check stopped the call (a GPU reads past N
    whatever memory follows, the interpreter refuses): the same question as above, asked of q,
    k and v followed by random rows, with a replay that reads those rows. Not the replay of
    zeros past N (TMA's clipping): keys past N left unmasked in the masked stage, whose loads
    read zeros there, give that output too, and "keys past N unmasked" names it."""
    def diagnose(got, expected, bad):
        return _first_stage_past_n_probe(ctx, impl, case, q, k, v, scale, beyond=("memory",))

    return diagnose


@contextlib.contextmanager
def _failed_call_probed(ctx, impl, case, q, k, v, scale, logit_term=None):
    """Around a ctx.call of attention on one (N, d) head, for a call that raised:
    - the interpreter's bounds check stopped a load: ask the two stage-bound probes (on copies
      of q, k and v followed by zero or random rows, whose reads then succeed) whether a stage
      ran past its end, and name it;
    - a causal call failed on block shapes: ask the same call without the mask (_causal_shapes).
    Otherwise, or where no probe names it, the error's own hint stands. logit_term: see
    _first_stage_past_n_probe."""
    try:
        yield
    except CheckFailed as exc:
        if "out-of-bounds load" in exc.message:
            exc.hint = (_diagonal_in_stage1(ctx, impl, case, q, k, v, scale)
                        or _first_stage_past_n_probe(ctx, impl, case, q, k, v, scale,
                                                     logit_term=logit_term)
                        or _masked_stage_before_key0(ctx, impl, case, q, k, v, scale)
                        or exc.hint)
        elif "Both operands must be same dtype" in exc.message:
            # The interpreter's own tl.dot assertion (a GPU's compile error has a hint of its
            # own): in this kernel p cast to a fixed dtype, where v's is another.
            exc.hint = ("tl.dot operands of two dtypes: p was cast to a fixed dtype (p.to("
                        "tl.float16), say) while v has another (under the interpreter v is "
                        "float32 for every input dtype, see UPCAST_DOT; on a GPU it is the "
                        "input's, so bfloat16 and float32 inputs fail the same way); cast p to "
                        "v's own dtype: tl.dot(p.to(v.dtype), v, acc)")
        elif (exc.hint or "").startswith("block shapes do not"):
            # The key mask first: under the interpreter a non-causal call whose masked stage
            # is empty (BLOCK_N divides N) runs, so _causal_shapes would blame the causal term.
            exc.hint = (_key_mask_axis(impl, case, q, k, v, scale)
                        or (case.causal and _causal_shapes(impl, case, q, k, v, scale))
                        or exc.hint)
        raise


def _masked_stage_before_key0(ctx, impl, case, q, k, v, scale):
    """The hint for a non-causal call that read before row 0 (the interpreter's bounds check
    stopped it) when stage 1 ended one key block before N, hi1 = N - BLOCK_N, with N < BLOCK_N:
    hi1 < 0, so stage 1 runs no block and the masked stage, from lo2 = hi1, loads the keys
    N - BLOCK_N..N - 1, the BLOCK_N - N rows in front of k and v included (the mask offs_n < N
    keeps them). attention is called again on copies of q, k and v preceded by random rows (then
    rows resampled from the inputs, as _first_stage_past_n_probe does), so the same reads
    succeed, and the mistake is named only if that output is softmax over those BLOCK_N keys.
    With N >= BLOCK_N the same mistake reads nothing before row 0: walk() names it there."""
    import torch

    n, d = q.shape
    if case.causal or n == 0:
        return None
    scale_used = d ** -0.5 if scale is None else scale
    expected = reference(q, k, v, causal=False, scale=scale_used)
    dtype = str(q.dtype).replace("torch.", "")
    widths = [bn for bn in dict.fromkeys(bn for _, bn in _block_candidates(impl, case, n, d,
                                                                           dtype, False))
              if bn > n]
    for rows in ("random", "resampled") if widths else ():
        padded = _padded(ctx, q, k, v, rows=rows, before=True)
        got = _call_on_padded(ctx, impl, case, padded, scale, rows, where="preceded by")
        if got is None:
            continue
        for bn in widths:
            kk, vv = (_strided_view(t, (bn, d), tuple(t.stride()),
                                    t.storage_offset() - (bn - n) * t.stride(0))
                      for t in padded[1:])
            if kk is None or vv is None:
                continue
            cand = torch.softmax((q.double().cpu() @ kk.double().cpu().T) * scale_used,
                                 dim=-1) @ vv.double().cpu()
            if _reproduces(got.double().cpu(), cand, expected, dtype, v,
                           _max_logit(q, kk, scale_used)):
                return (f"stage 1 ends one key block before N: hi1 = N - BLOCK_N (= {n - bn} "
                        f"for N = {n}, BLOCK_N = {bn}) is negative, so stage 1 runs no block "
                        f"and the masked stage, from lo2 = hi1, starts before key 0: it loads "
                        f"the {bn - n} rows in front of k and v, which the mask offs_n < N keeps "
                        f"(on q, k, v preceded by {rows} rows the output is softmax over keys "
                        f"{n - bn}..{n - 1}); stage 1 takes the full key blocks, hi1 = (N // "
                        f"BLOCK_N) * BLOCK_N, here 0")
    return None


def _key_mask_axis(impl, case, q, k, v, scale):
    """A call refused for block shapes that do not broadcast, where the key mask was built on
    the rows: keep = offs_n[:, None] < N is (BLOCK_N, 1), which fits the (BLOCK_M, BLOCK_N)
    scores only where BLOCK_M == BLOCK_N. The same inputs are run again on square tiles
    (BLOCK_N of the failed call's most likely tile, for both), without the causal mask (which
    is harmless there: the diagonal block's tile row i is row start_m * BLOCK_M + i) and on a
    ragged N (N - 1 where BLOCK_N divides N: the masked stage must run), and the mistake is
    named only if that output is _streamed64's key_mask_rows replay."""
    from checks.context import call_learner

    n, d = q.shape
    dtype = str(q.dtype).replace("torch.", "")
    bm, bn = _block_candidates(impl, case, n, d, dtype, bool(case.causal))[0]
    m = n if n % bn else n - 1
    if bm == bn or m <= 0:
        return None
    q, k, v = q[:m], k[:m], v[:m]
    try:
        got = call_learner(impl.attention, q, k, v, causal=False, scale=scale, block_m=bn,
                           block_n=bn)
    except Exception:  # noqa: BLE001 - a diagnosis only: no verdict of its own
        return None
    scale_used = d ** -0.5 if scale is None else scale
    expected = reference(q, k, v, causal=False, scale=scale_used)
    cand = _streamed64(q, k, v, causal=False, scale=scale_used, block_m=bn, block_n=bn,
                       key_mask_rows=True)
    if not _reproduces(got.double().cpu(), cand, expected, dtype, v,
                       _max_logit(q, k, scale_used)):
        return None
    return (f"key mask built on the wrong axis: keep = offs_n[:, None] < N is a (BLOCK_N, 1) "
            f"column, which does not broadcast against the (BLOCK_M, BLOCK_N) scores where "
            f"BLOCK_M != BLOCK_N (here {bm} and {bn}); on square tiles (BLOCK_M = BLOCK_N = "
            f"{bn}, N = {m}, no causal mask), where it compiles, the same call gives that "
            f"mistake's output (row i of a tile kept or dropped whole by key start_n + i); keys "
            f"are the columns: keep = offs_n[None, :] < N")


def _noncausal_call(impl, case, q, k, v, scale):
    """The learner's attention on the same one-head inputs without the causal mask, with its
    float64 reference and tolerance: (got, expected, rtol, atol), or None where the call
    raises (a diagnosis only: no verdict of its own)."""
    from checks.context import call_learner

    try:
        got = call_learner(impl.attention, q, k, v, causal=False, scale=scale, **_knobs(case))
    except Exception:  # noqa: BLE001 - a diagnosis only: no verdict of its own
        return None
    scale_used = q.shape[-1] ** -0.5 if scale is None else scale
    expected = reference(q, k, v, causal=False, scale=scale_used)
    rtol, atol = tolerance(str(q.dtype).replace("torch.", ""), v, _max_logit(q, k, scale_used))
    return got, expected, rtol, atol


def _causal_shapes(impl, case, q, k, v, scale):
    """A causal call refused for block shapes that do not fit: if the same call without the
    mask runs and is right, the shapes fail only in the causal term, almost always keep built
    keys by rows, (BLOCK_N, BLOCK_M) (it compiles, transposed, only where the two are equal)."""
    unmasked = _noncausal_call(impl, case, q, k, v, scale)
    if unmasked is None:
        return None
    wrong = _misses(*unmasked)
    if wrong is None or bool(wrong.any()):
        return None
    return ("the causal mask's tile has the wrong shape: the same call without causal=True "
            "runs and is right, so the block shapes fail only in the causal term; keep is "
            "(BLOCK_M, BLOCK_N), rows by keys: offs_m[:, None] >= offs_n[None, :] "
            "(offs_m[None, :] >= offs_n[:, None] is (BLOCK_N, BLOCK_M): it compiles only where "
            "BLOCK_M == BLOCK_N, and is then the transposed mask)")


def _valid_call_refused(case) -> str:
    """forward.values' hint for a TypeError or ValueError raised by a valid call."""
    if case.n == 0:
        why = "N = 0 is valid: return an empty (0, d) output (no kernel to launch)"
    elif isinstance(_resolve_scale(case), int):
        why = "an int scale (scale=1) is valid: accept int and float scales (but not bool)"
    elif case.get("blocks") == "default":
        why = ("the default tile must suit every N: shrink the default block sizes to the next "
               "power of two >= N (at least 16), not to N itself (a tile must be a power of two)")
    elif case.blocks[1] is None:
        why = ("block_m given alone is valid: the launcher picks block_n, at most block_m (a "
               "causal call needs block_n <= block_m)")
    else:
        why = "the arguments are valid"
    return f"a valid call was refused: {why}"


def _empty_grid(launched):
    """A diagnosis: a kernel was launched with a grid axis of 0 (so no program ran, and the
    output holds the fill of fresh memory)."""
    def diagnose(got, expected, bad):
        for launch in launched:
            if launch.grid is not None and 0 in launch.grid:
                return (f"{launch.name} was launched with the grid {launch.grid}: no program "
                        f"ran, so the output was never written; a grid size must round up "
                        f"(cdiv), e.g. key splits capped at cdiv(N, BLOCK_N), not N // BLOCK_N")
        return None

    return not_from_values(diagnose)


# ---------------------------------------------------------------------------------------------
# forward.kv_splits: a row block's keys shared among several programs, then merged
# ---------------------------------------------------------------------------------------------
def _split_merged64(q, k, v, *, causal, scale, block_m, block_n, splits, rescale=True,
                    tail_in_every_split=False, weight_exponent=1.0, share_unclamped=False):
    """Split-KV in float64: each split's (m, l, acc) over its share of the keys, then merged.

    The shares follow the reference's plan: a row block's key blocks before its masked stage
    (causal: left of the row block; else: every full key block) are dealt out in consecutive
    runs of ceil(steps / splits) blocks; the last split also takes the masked stage (causal:
    the diagonal block; else: the ragged tail). rescale=False merges the splits' sums without
    the weights exp(m_s - M); tail_in_every_split=True lets every split run the masked stage;
    weight_exponent=log2(e): the weights are exp((m_s - M) * log2(e)), the merge's exp2 of
    log2-unit maxima written as exp. share_unclamped=True: each split's unmasked run ends at
    (split + 1) * ceil(steps / splits) blocks, not clamped to the stage's end, so a share runs
    on, unmasked, into the masked stage's keys (counted again there) and past N, where a TMA
    load reads zero rows (score 0, value 0: each such key adds exp(0 - m) to l alone).
    """
    import torch

    n = q.shape[0]
    s_raw = (q.double().cpu() @ k.double().cpu().T) * scale  # (N, N), no mask
    s_all = s_raw.clone()
    if causal:
        s_all = s_all.masked_fill(torch.ones((n, n), dtype=torch.bool).triu(1), -math.inf)
    vd = v.double().cpu()
    out = torch.empty((n, v.shape[1]), dtype=torch.float64)
    for start_m in range(0, n, block_m):
        rows = slice(start_m, min(start_m + block_m, n))
        hi1 = start_m if causal else (n // block_n) * block_n  # end of the unmasked stage
        hi2 = min(start_m + block_m, n) if causal else n
        steps = hi1 // block_n
        per = -(-steps // splits)
        m_s, l_s, acc_s = [], [], []
        for split in range(splits):
            lo, hi = min(split * per, steps) * block_n, min((split + 1) * per, steps) * block_n
            # share_unclamped: the unmasked run goes on to (split + 1) * per blocks; of those
            # keys, the ones past N are zero rows (score 0, value 0)
            over = range(hi, (split + 1) * per * block_n) if share_unclamped else range(0)
            unmasked = list(range(lo, hi)) + [j for j in over if j < n]
            phantom = len(over) - (len(unmasked) - (hi - lo))
            masked = list(range(hi1, hi2)) if split == splits - 1 or tail_in_every_split else []
            rows_n = rows.stop - rows.start
            s = torch.cat([s_raw[rows][:, unmasked], s_all[rows][:, masked],
                           torch.zeros((rows_n, phantom), dtype=torch.float64)], dim=1)
            values = torch.cat([vd[unmasked + masked],
                                torch.zeros((phantom, vd.shape[1]), dtype=torch.float64)])
            if s.shape[1]:
                m = s.max(dim=1).values
                p = torch.exp(s - m[:, None])
            else:  # an empty share hands on m = -inf, l = 0, acc = 0
                m = torch.full((rows_n,), -math.inf, dtype=torch.float64)
                p = s
            m_s.append(m)
            l_s.append(p.sum(dim=1))
            acc_s.append(p @ values)
        m_max = torch.stack(m_s).max(dim=0).values
        num = torch.zeros_like(acc_s[0])
        den = torch.zeros_like(l_s[0])
        for m, l_part, acc in zip(m_s, l_s, acc_s, strict=True):
            w = (torch.exp((m - m_max) * weight_exponent) if rescale
                 else torch.where(m.isfinite(), 1.0, 0.0))
            num += w[:, None] * acc
            den += w * l_part
        out[rows] = num / den[:, None]
    return out


def _kv_splits_cases(device: str) -> list[Case]:
    if device == "cuda":
        cases = [Case(n=n, d=d, dtype=dt, causal=c, splits=sp, blocks="default")
                 for n in (257, 1000, 4097) for d in (64, 128) for dt in ("float16", "bfloat16")
                 for c in (False, True) for sp in (2, 3, 8)]
        # Several heads in one call (attention_heads): every (head, split) its own workspace.
        cases += [Case(n=n, d=d, dtype=dt, causal=c, splits=sp, blocks="default", heads=3)
                  for n in (257, 1000) for d in (64, 128) for dt in ("float16", "bfloat16")
                  for c in (False, True) for sp in (2, 3)]
        return cases
    # Interpreter: 64 x 32 or 32 x 16 tiles, so every split holds a few key blocks; 8 splits
    # asked for N = 100 (7 after the launcher's cap of one split per key block of 16) leave
    # some splits of a short causal row block empty (their state must weigh nothing). The
    # last two run several heads in one call of attention_heads.
    return [Case(n=257, d=32, dtype="float16", causal=False, splits=3, blocks=(64, 32)),
            Case(n=257, d=64, dtype="bfloat16", causal=True, splits=2, blocks=(64, 32)),
            Case(n=100, d=16, dtype="float32", causal=True, splits=8, blocks=(32, 16)),
            Case(n=100, d=128, dtype="float16", causal=False, splits=8, blocks=(32, 16)),
            Case(n=64, d=16, dtype="float16", causal=False, splits=2, blocks=(16, 16), heads=2),
            Case(n=40, d=32, dtype="bfloat16", causal=True, splits=3, blocks=(16, 16), heads=3)]


@register(W, "forward.kv_splits", tier="kernel", uses=("attention", "attention_heads"),
          cases=_kv_splits_cases,
          doc="kv_splits > 1: each row block's keys shared by several programs, states merged; "
              "one head (attention) and several in one call (attention_heads)")
def forward_kv_splits(ctx, impl, case):
    if "heads" in case:
        _kv_splits_heads(ctx, impl, case)
        return
    q, k, v = (ctx.randn((case.n, case.d), case.dtype) for _ in range(3))
    knobs = dict(_knobs(case), kv_splits=case.splits)
    with (_failed_call_probed(ctx, impl, case, q, k, v, None),
          _split_launches(ctx, "attention", case)):
        out = ctx.call(impl.attention, q, k, v, causal=case.causal, **knobs,
                       expect_shape=(case.n, case.d), expect_dtype=case.dtype,
                       expect_contiguous=True)
    _interpreter_notes(ctx, case.dtype)
    scale = case.d ** -0.5
    rtol, atol = tolerance(case.dtype, v, _max_logit(q, k, scale))
    expected = reference(q, k, v, causal=case.causal, scale=scale)
    ctx.assert_close(out, expected, name=f"attention with kv_splits={case.splits}", rtol=rtol,
                     atol=atol, diagnose=[*_split_replays(impl, case, q, k, v, scale=scale,
                                                          rtol=rtol, atol=atol),
                                          _unsplit_probe(impl, case, q, k, v, scale=scale,
                                                         rtol=rtol, atol=atol)])


@contextlib.contextmanager
def _split_launches(ctx, label, case):
    """Around a call with kv_splits > 1 on several key blocks: FAIL unless it launched at least
    two kernels (the split one and the merge), whatever the output."""
    from checks import launches

    with launches.counting() as log:
        yield
    if len(log) < 2:
        ctx.fail(f"{label} with kv_splits={case.splits} ({case.n} keys, blocks {case.blocks}) "
                 f"launched {len(log)} kernel(s) {log}: a split run launches the split kernel "
                 f"and then the kernel that merges the splits' states",
                 hint=f"kv_splits ignored: kv_splits={case.splits} must give each row block "
                      f"{case.splits} programs, each on a share of its keys, and a second kernel "
                      f"must merge their states (acc, l, m)")


def _split_replays(impl, case, q, k, v, *, scale, rtol, atol):
    """Diagnoses for one (N, d) head run with case.splits key splits: the split-KV mistakes."""
    def replay(label, **switches):
        def diagnose(got, expected, bad):
            for bm, bn in _block_candidates(impl, case, case.n, case.d, case.dtype, case.causal):
                cand = _split_merged64(q, k, v, causal=case.causal, scale=scale, block_m=bm,
                                       block_n=bn, splits=case.splits, **switches)
                err = (got.double().cpu() - cand).abs()
                if bool(((err <= atol + rtol * cand.abs()) & cand.isfinite()).all()):
                    return label
            return None

        return diagnose

    return [replay("split states merged without rescaling: weigh each split's acc and l by "
                   "exp2(m_s - M), M the largest of the splits' maxima, before adding them",
                   rescale=False),
            replay("the masked stage (tail or diagonal block) ran in every split: only the last "
                   "split may take it, or its keys count more than once",
                   tail_in_every_split=True),
            replay("split weights computed with exp instead of exp2: the splits' maxima m_s are "
                   "in log2 units, so each split weighs exp2(m_s - M), not exp(m_s - M)",
                   weight_exponent=LOG2E),
            # On a GPU only: the interpreter's bounds check stops this run at the read past N.
            replay("tail not masked: a split's unmasked share runs past the end of the unmasked "
                   "stage (its end is not clamped: hi1 = min((split + 1) * per_split, steps) * "
                   "BLOCK_N), so it counts the masked stage's keys again and keys past N",
                   share_unclamped=True)]


def _unsplit_probe(impl, case, q, k, v, *, scale, rtol, atol, scale_given=None,
                   named_only=False):
    """A diagnosis for a kv_splits run that no split replay explains: the learner's attention
    is called again on the same head with kv_splits=1 (and the scale the call was given, if
    any; `scale` is the one used). Wrong there too, the mistake sits in the key-block walk
    every split runs (forward.values fails as well), and the single-stream replays name it
    where they can; right there, it sits in the split shares or the merge. named_only: speak
    only where a single-stream replay names the mistake (for a caller whose own hint, said
    otherwise, knows more than "wrong with kv_splits=1 too")."""
    def diagnose(got, expected, bad):
        from checks.context import call_learner

        # scale only where the call gave one: left out, the learner's own default applies,
        # as in the call being diagnosed (a default of 1.0 is a mistake to name, not to hide)
        given = {} if scale_given is None else {"scale": scale_given}
        try:
            single = call_learner(impl.attention, q, k, v, causal=bool(case.causal), **given,
                                  **dict(_knobs(case), kv_splits=1))
        except Exception:  # noqa: BLE001 - a diagnosis only: no verdict of its own
            return None
        wrong = _misses(single, expected, rtol, atol)
        if wrong is None:
            return None
        single = single.double().cpu()
        if not bool(wrong.any()):
            if named_only:
                return None
            return (f"the split run alone is wrong: the same call with kv_splits=1 is right, "
                    f"so the mistake is in how the {case.splits} splits share a row block's "
                    "key blocks or in the merge of their states (acc, l, m)")
        named = None
        for replay in _diagnoses(impl, case, q, k, v, causal=bool(case.causal),
                                 scale_used=scale, scale_given=scale_given, rtol=rtol,
                                 atol=atol, generic=False):
            named = replay(single, expected, wrong)
            if named:
                break
        where = "the key-block walk every split runs, not in the split; forward.values fails too"
        if named:
            return f"{named} (seen in the same call with kv_splits=1: the mistake is in {where})"
        return None if named_only else f"wrong with kv_splits=1 too: the mistake is in {where}"

    return diagnose


def _kv_splits_heads(ctx, impl, case):
    """forward.kv_splits on (H, N, d) through attention_heads: each head against float64; where
    one is wrong, the heads are run again one call each, and if those are right the heads of
    one call trod on each other's split states."""
    shape = (case.heads, case.n, case.d)
    q, k, v = (ctx.randn(shape, case.dtype) for _ in range(3))
    knobs = dict(_knobs(case), kv_splits=case.splits)
    with _split_launches(ctx, "attention_heads", case):
        out = ctx.call(impl.attention_heads, q, k, v, causal=case.causal, **knobs,
                       expect_shape=shape, expect_dtype=case.dtype, expect_contiguous=True)
    _interpreter_notes(ctx, case.dtype)
    scale = case.d ** -0.5
    alone = {}  # head -> its output from a call of that head alone (run once, if needed)

    def heads_interfere(h):
        def diagnose(got, expected, bad):
            from checks.context import call_learner

            if h not in alone:
                try:
                    alone[h] = call_learner(impl.attention_heads, q[h:h + 1], k[h:h + 1],
                                            v[h:h + 1], causal=case.causal, **knobs)[0]
                except Exception:  # noqa: BLE001 - a diagnosis only: no verdict of its own
                    alone[h] = None
            rtol, atol = tolerance(case.dtype, v[h], _max_logit(q[h], k[h], scale))
            wrong = _misses(alone[h], expected, rtol, atol)
            if wrong is None or bool(wrong.any()):
                return None  # wrong alone too: not an interaction of heads
            return ("heads of one call disagree with the same heads run alone: with kv_splits > "
                    "1 each split's workspace rows must be its own, for every head: (head, "
                    "split) owns row block head * KV_SPLITS + split of the workspace (n_pad "
                    "rows each), in the split kernel's stores and in the combine kernel's loads")

        return diagnose

    for h in range(case.heads):
        rtol, atol = tolerance(case.dtype, v[h], _max_logit(q[h], k[h], scale))
        _compare_head(ctx, impl, case, out[h], q[h], k[h], v[h], causal=case.causal,
                      scale_given=None,
                      name=f"attention_heads(..., kv_splits={case.splits})[{h}]",
                      first=[heads_interfere(h), *_split_replays(impl, case, q[h], k[h], v[h],
                                                                 scale=scale, rtol=rtol,
                                                                 atol=atol)],
                      extra=[_unsplit_probe(impl, case, q[h], k[h], v[h], scale=scale,
                                            rtol=rtol, atol=atol)])


# ---------------------------------------------------------------------------------------------
# forward.strided: slices of a packed qkv tensor and other views, passed as they are
# ---------------------------------------------------------------------------------------------
_PREFIX_SLACK = 256  # row_prefix: rows of storage past N (a key block of up to 256 reaches in)


def _strided_inputs(ctx, layout: str, n: int, d: int, dtype: str):
    if layout == "packed_qkv":
        # (N, 3, d): one projection output, q, k, v interleaved per row (row stride 3 * d).
        qkv = ctx.randn((n, 3, d), dtype)
        return qkv[:, 0], qkv[:, 1], qkv[:, 2]
    if layout == "packed_heads":
        # (N, 3 * 2 * d): two heads' q, k, v side by side; we take head 1 (a column offset).
        qkv = ctx.randn((n, 3, 2, d), dtype)
        return qkv[:, 0, 1], qkv[:, 1, 1], qkv[:, 2, 1]
    if layout == "mixed_rows":
        # Three row strides (d, 2 * d, 3 * d): a launcher that passes one tensor's strides for
        # another's (k's for v, say) reads the wrong rows. Unit feature stride: TMA can run.
        q = ctx.randn((n, d), dtype)
        k = ctx.randn((n, 2, d), dtype)[:, 1]
        v = ctx.randn((n, 3, d), dtype)[:, 2]
        return q, k, v
    if layout == "transposed_stepped":
        # q column-major (feature stride N), k every other row, v a column slice.
        q = ctx.randn((d, n), dtype).t()
        k = ctx.randn((2 * n, d), dtype)[::2]
        v = ctx.randn((n, 2 * d), dtype)[:, d:]
        return q, k, v
    if layout == "column_v":
        # k row-major (feature stride 1), v column-major (feature stride N): a kernel that
        # addresses v's features with k's stride (or k's with v's) reads the wrong elements.
        q = ctx.randn((n, d), dtype)
        k = ctx.randn((n, d), dtype)
        v = ctx.randn((d, n), dtype).t()
        return q, k, v
    if layout == "row_prefix":
        # The first N rows of longer tensors (a KV cache filled up to N): their memory goes on
        # past row N with other values, so a key block read past N without a mask changes the
        # output (on tensors that end at N the interpreter's bounds check would stop it instead).
        return tuple(ctx.randn((n + _PREFIX_SLACK, d), dtype)[:n] for _ in range(3))
    raise ValueError(layout)


def _strided_cases(device: str) -> list[Case]:
    if device == "cuda":
        cases = [Case(layout=lay, n=n, d=d, dtype="float16" if d == 64 else "bfloat16",
                      causal=c, tma=t)
                 for lay in ("packed_qkv", "packed_heads", "mixed_rows", "transposed_stepped",
                             "column_v")
                 for n in (17, 1000) for d in (64, 128) for c in (False, True)
                 for t in (False, True)
                 # TMA needs a unit feature stride
                 if not (t and lay in ("transposed_stepped", "column_v"))]
        # Key blocks wider than row blocks (non-causal only): the unmasked first stage must
        # stop at the last full key block, a multiple of block_n (48 and 1000 are not of 32).
        cases += [Case(layout="row_prefix", n=n, d=d, dtype="float16" if d == 64 else "bfloat16",
                       causal=False, tma=t, blocks=b)
                  for n in (48, 1000) for d in (64, 128) for t in (False, True)
                  for b in ((16, 64), (32, 64))]
        return cases
    return [Case(layout="packed_qkv", n=100, d=32, dtype="float16", causal=False, tma=False),
            Case(layout="packed_heads", n=33, d=16, dtype="bfloat16", causal=True, tma=False),
            Case(layout="mixed_rows", n=50, d=32, dtype="float16", causal=True, tma=False),
            Case(layout="transposed_stepped", n=65, d=64, dtype="float32", causal=True, tma=False),
            Case(layout="transposed_stepped", n=40, d=16, dtype="float16", causal=False,
                 tma=False),
            Case(layout="column_v", n=40, d=32, dtype="float16", causal=False, tma=False),
            Case(layout="row_prefix", n=48, d=32, dtype="float16", causal=False, tma=False,
                 blocks=(16, 32)),
            Case(layout="row_prefix", n=48, d=16, dtype="bfloat16", causal=False, tma=False,
                 blocks=(16, 64))]


@register(W, "forward.strided", tier="kernel", uses=("attention",), cases=_strided_cases,
          doc="q, k, v as slices of a packed qkv tensor, with three different row strides, "
              "transposed and stepped views, a column-major v beside a row-major k, and the "
              "first N rows of longer tensors under key blocks wider than row blocks")
def forward_strided(ctx, impl, case):
    q, k, v = _strided_inputs(ctx, case.layout, case.n, case.d, case.dtype)
    if "blocks" in case:
        knobs = _knobs(case)
    else:
        knobs = {"block_m": 32, "block_n": 16} if ctx.device != "cuda" else {}
    if case.tma:
        knobs["tma"] = True
    elif case.layout == "row_prefix" and ctx.device == "cuda":
        # Pointer loads (auto would take TMA, which reads rows past N as zeros): the memory
        # past N is read as it is.
        knobs["tma"] = False
    blocks = (knobs["block_m"], knobs["block_n"]) if knobs.get("block_m") else "default"
    with _failed_call_probed(ctx, impl, Case(case, blocks=blocks), q, k, v, None):
        out = ctx.call(impl.attention, q, k, v, causal=case.causal, **knobs,
                       expect_shape=(case.n, case.d), expect_dtype=case.dtype,
                       expect_contiguous=True)
    _interpreter_notes(ctx, case.dtype)
    scale = case.d ** -0.5
    extra = []
    if case.layout == "row_prefix":
        extra.append(_first_stage_past_n(q, k, v, scale=scale, block_n=knobs.get("block_n"),
                                         dtype=case.dtype))
    extra += [_stride_replays(q, k, v, causal=case.causal, scale=scale, dtype=case.dtype),
              _strides_ignored(q, k, v, causal=case.causal, scale=scale, dtype=case.dtype)]
    _compare_head(ctx, impl, Case(case, blocks=blocks), out, q, k, v, causal=case.causal,
                  scale_given=None,
                  name=f"attention on {case.layout} views (strides q {tuple(q.stride())}, "
                       f"k {tuple(k.stride())}, v {tuple(v.stride())})",
                  extra=extra)


def _strides_ignored(q, k, v, *, causal, scale, dtype):
    """A diagnosis: the output equals attention with q, k and v read as if contiguous (strides
    (d, 1) from each view's first element), or one of them so, or one read with both strides
    of another (_stride_replays tries one stride at a time), or all three with one tensor's
    strides. Only reads that stay inside each tensor's memory (others fail to run); on at most
    1024 rows of the output (each candidate costs rows x N x d)."""
    n, d = q.shape
    tensors = {"q": q, "k": k, "v": v}
    own = {x: tuple(t.stride()) for x, t in tensors.items()}
    flat = (d, 1)
    # Each hypothesis: {tensor: the strides it was read with}.
    hypotheses = [{x: flat for x in own if own[x] != flat}]
    hypotheses += [{x: flat} for x in own if own[x] != flat]
    hypotheses += [{x: own[y]} for x in own for y in _STRIDE_PARTNERS[x] if own[y] != own[x]]
    hypotheses += [{x: own[y] for x in own if own[x] != own[y]} for y in own]

    def whose(x, strides):
        """Who the strides x was read with belong to: a contiguous tensor, q, k or v."""
        names = (["a contiguous tensor's"] if strides == flat else []) + [
            f"{y}'s" for y in own if y != x and own[y] == strides]
        return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 2 else names)

    def diagnose(got, expected, bad):
        rows = _sample_rows(n)
        max_logit = _max_logit(q, k, scale)
        tried = set()
        for reads in hypotheses:
            key = tuple(sorted(reads.items()))
            if not reads or key in tried:
                continue
            tried.add(key)
            args = dict(tensors)
            for x, strides in reads.items():
                args[x] = _strided_view(tensors[x], (n, d), strides, tensors[x].storage_offset())
            if any(a is None for a in args.values()):
                continue
            cand = _attention_rows64(args["q"], args["k"], args["v"], rows, causal=causal,
                                     scale=scale)
            if _reproduces(got[rows], cand, expected[rows], dtype, v, max_logit):
                ignored = all(st == flat for st in reads.values())
                mixed = all(st in [own[y] for y in own if y != x] for x, st in reads.items())
                what = "; ".join(f"{x} was read with strides {st} ({whose(x, st)}) instead of "
                                 f"its own {own[x]}" for x, st in reads.items())
                verdict = ("ignored or mixed up" if ignored and mixed
                           else "ignored" if ignored else "mixed up")
                return (f"strides {verdict}: {what}; pass each tensor's own strides and address "
                        f"row n of k as k_ptr + n * stride_kn + c * stride_kd, never assuming "
                        f"contiguous rows")
        return None

    return diagnose


def _reproduces(got, candidate, expected, dtype: str, v, max_logit: float) -> bool:
    """Whether `candidate` (float64) differs from `expected` where `got` does and `got` matches
    it on 99% of the elements, both within the attention tolerance."""
    rtol, atol = tolerance(dtype, v, max_logit)
    candidate = candidate.double().cpu()
    if tuple(candidate.shape) != tuple(got.shape):
        return False
    wrong = ((candidate - expected).abs() > atol + rtol * expected.abs()) | candidate.isnan()
    # ... and got is wrong there too: a right output agrees with a candidate that differs on
    # under 1% of the elements (a stage that read a copy of each row's largest key, say)
    if not bool((wrong & ~agrees(got, expected, rtol, atol)).any()):
        return False
    return float(agrees(got, candidate, rtol, atol).double().mean()) >= 0.99


def _strided_view(x, size, stride, offset):
    """x's storage seen with another size, strides and (absolute) offset, or None where that
    reaches outside the storage (such a read would have failed, not given wrong values)."""
    last = offset + sum((n - 1) * st for n, st in zip(size, stride, strict=True))
    if min(size) == 0 or last >= x.untyped_storage().nbytes() // x.element_size():
        return None
    return x.as_strided(size, stride, offset)


_STRIDE_LETTERS = {("q", "row"): "qm", ("k", "row"): "kn", ("v", "row"): "vn",
                   ("q", "feature"): "qd", ("k", "feature"): "kd", ("v", "feature"): "vd",
                   ("q", "head"): "qh", ("k", "head"): "kh", ("v", "head"): "vh"}


_STRIDE_PARTNERS = {"q": ("k", "v"), "k": ("v", "q"), "v": ("k", "q")}


def _stride_replays(q, k, v, *, causal, scale, dtype, head=None):
    """A diagnosis: the output equals attention with one of q, k, v read with another's row or
    feature stride ((N, d) inputs), or, for head `head` of (H, N, d) inputs, from another's head
    offset. Only where that read stays inside the tensor's memory (else it fails to run)."""
    tensors = {"q": q, "k": k, "v": v}
    kinds = (("row", 0), ("feature", 1)) if head is None else (("head", 0),)

    def diagnose(got, expected, bad):
        own = {name: (t if head is None else t[head]) for name, t in tensors.items()}
        max_logit = _max_logit(own["q"], own["k"], scale)
        for x, xt in tensors.items():
            for y in _STRIDE_PARTNERS[x]:  # k and v first: one loop loads both
                yt = tensors[y]
                for kind, dim in kinds:
                    if xt.stride(dim) == yt.stride(dim):
                        continue
                    if head is None:
                        stride = list(xt.stride())
                        stride[dim] = yt.stride(dim)
                        view = _strided_view(xt, tuple(xt.shape), tuple(stride),
                                             xt.storage_offset())
                    else:
                        view = _strided_view(xt, tuple(xt.shape[1:]), tuple(xt.stride()[1:]),
                                             xt.storage_offset() + head * yt.stride(0))
                    if view is None:
                        continue
                    args = dict(own, **{x: view})
                    cand = reference(args["q"], args["k"], args["v"], causal=causal,
                                     scale=scale)
                    if _reproduces(got, cand, expected, dtype, own["v"], max_logit):
                        mine, theirs = _STRIDE_LETTERS[x, kind], _STRIDE_LETTERS[y, kind]
                        return (f"{x}'s strides mixed up with {y}'s: {x} was read with {y}'s "
                                f"{kind} stride ({yt.stride(dim)}) instead of its own "
                                f"({xt.stride(dim)}); address each tensor with its own strides "
                                f"(stride_{mine}, not stride_{theirs})")
        return None

    return diagnose


def _first_stage_past_n(q, k, v, *, scale, block_n, dtype, beyond=("memory", "zeros"),
                        max_logit=None):
    """A diagnosis for the row_prefix layout (non-causal, memory past row N): the unmasked first
    stage ran to some hi1 past the last full key block (N // BLOCK_N) * BLOCK_N, so its last
    step read keys up to the next multiple of BLOCK_N unmasked (the rows past N that the
    memory holds, or zeros where TMA clips them), and the masked stage then ran [hi1, N) again.
    hi1 = cdiv(N, BLOCK_N) * BLOCK_N (rounded up, past N) reads up to there and leaves the
    masked stage empty. forward.values asks this of inputs followed by random rows, after the
    interpreter's bounds check stopped the same read of plain inputs. `beyond`: what the
    replay reads past N, the memory there and/or zeros (as TMA's clipping gives). `max_logit`:
    the logit size in the tolerance (default twice the inputs' largest |logit|, for the rows
    past N).
    """
    n, d = q.shape

    def diagnose(got, expected, bad):
        import torch

        if not block_n or n == 0:
            return None
        right = (n // block_n) * block_n
        rounded_up = -(-n // block_n) * block_n
        ends = sorted({n, rounded_up} | {(n // b) * b for b in (16, 32, 64, 128, 256)}
                      - {right})
        logit_term = _max_logit(q, k, scale) * 2 if max_logit is None else max_logit
        for hi1 in (e for e in ends if right < e <= max(n, rounded_up)):
            reach = -(-hi1 // block_n) * block_n  # the first stage's last step ends here
            for past_n in beyond:
                kk, vv = (_strided_view(t, (reach, d), tuple(t.stride()), t.storage_offset())
                          for t in (k, v))
                if kk is None or vv is None:
                    continue
                kk, vv = kk.double().cpu(), vv.double().cpu()
                if past_n == "zeros":
                    kk[n:], vv[n:] = 0.0, 0.0
                keys = torch.cat([kk, kk[hi1:n]])
                vals = torch.cat([vv, vv[hi1:n]])
                cand = torch.softmax((q.double().cpu() @ keys.T) * scale, dim=-1) @ vals
                if _reproduces(got, cand, expected, dtype, v, logit_term):
                    # hi1 = N and hi1 = cdiv(N, BLOCK_N) * BLOCK_N read the same keys and
                    # leave the masked stage empty: the output cannot tell them apart.
                    ran = (f"ran to key {hi1}" if hi1 < n else
                           f"ran to N = {n} or past it (hi1 = N, or rounded up as cdiv does: "
                           f"{rounded_up})")
                    again = (f"the masked stage counted keys {hi1}..{n - 1} again" if hi1 < n
                             else "the masked stage was left empty")
                    return (f"the first stage must end on a BLOCK_N boundary: the unmasked "
                            f"stage {ran}, past the last full key block "
                            f"((N // BLOCK_N) * BLOCK_N = {right} for N = {n}, BLOCK_N = "
                            f"{block_n}), so its last step read keys up to {reach} without a "
                            f"mask ({again}); without a causal mask stage 1 is "
                            f"[0, (N // BLOCK_N) * BLOCK_N), rounded down, whatever BLOCK_M "
                            f"is")
        return None

    return diagnose


# ---------------------------------------------------------------------------------------------
# forward.extreme: huge finite logits; rows whose scores are all equal; a long tail of small
# weights; every logit far below zero; huge scores under a tiny scale
# ---------------------------------------------------------------------------------------------
_EXTREME_SCALE = {"float16": 1000.0, "bfloat16": 1e5, "float32": 1e4}


def _extreme_cases(device: str) -> list[Case]:
    base = [Case(kind=kind, n=100, d=32, dtype=dt, causal=c, blocks=(32, 16))
            for kind in ("huge_logits", "equal_scores") for dt in DTYPES
            for c in ((False, True) if device == "cuda" else ((dt != "float16"),))]
    # small_tail: 64 key blocks of 16 (256 on a GPU), so a 16-bit accumulator drops 63 (255)
    # contributions; 16-bit dtypes only (the mistake is rounding to them). 128-row programs
    # under the interpreter: half the loop steps of 64-row ones.
    base += [Case(kind="small_tail", n=1024, d=16, dtype=dt, causal=False,
                  blocks=(64 if device == "cuda" else 128, 16))
             for dt in ("float16", "bfloat16")]
    # negative_logits: every logit of every row about -1e38 (all equal within a row); the
    # running max must start at -inf, and so must the merge's max over the key splits.
    # huge_scores: raw scores -2e31 and below under a tiny scale; a dropped key must score -inf.
    # Both on a ragged N (40: a tail block of 8 keys past N) and causal: masked keys in play.
    # huge_logits again with 2 key splits: splits whose maxima lie far apart.
    if device == "cuda":
        base += [Case(kind=kind, n=n, d=d, dtype=dt, causal=c, blocks=b, splits=sp)
                 for kind, dtypes in (("negative_logits", DTYPES),
                                      ("huge_scores", ("bfloat16", "float32")))
                 for n, d, b in ((40, 16, (16, 16)), (1000, 64, (64, 32)))
                 for dt in dtypes for c in (False, True) for sp in (1, 2)]
        base += [Case(kind="huge_logits", n=100, d=32, dtype=dt, causal=c, blocks=(32, 16),
                      splits=2) for dt in DTYPES for c in (False, True)]
    else:
        base += [Case(kind="negative_logits", n=40, d=16, dtype=dt, causal=c, blocks=(16, 16),
                      splits=sp)
                 for dt, c, sp in (("float16", True, 1), ("float32", False, 2),
                                   ("bfloat16", True, 2))]
        base += [Case(kind="huge_scores", n=40, d=16, dtype="float32", causal=c,
                      blocks=(16, 16), splits=1) for c in (False, True)]
        base += [Case(kind="huge_logits", n=100, d=32, dtype="float32", causal=True,
                      blocks=(32, 16), splits=2)]
    if device == "cuda":
        base += [Case(kind=kind, n=1000, d=128, dtype=dt, causal=c, blocks="default")
                 for kind in ("huge_logits", "equal_scores") for dt in ("float16", "bfloat16")
                 for c in (False, True)]
        base += [Case(kind="small_tail", n=n, d=d, dtype=dt, causal=c, blocks=(64, 16))
                 for n, d, c in ((1024, 16, True), (4096, 64, False), (4096, 64, True))
                 for dt in ("float16", "bfloat16")]
    return base


# negative_logits: scores -1, -2 or -4 (powers of two, so score * qk_scale is exact and one
# FMA computes score * qk_scale - m exactly) under qk_scale = scale * log2(e) = 8e37: logits
# -8e37 to -3.2e38 in log2 units, float32's largest magnitude being 3.4e38.
_NEGATIVE_LOGITS_SCALE = 8e37 / LOG2E
# huge_scores: q and k are 2^50 times small integers, so every score is an exact multiple of
# 2^100 (1.3e30; the scores lie between -2e31 and -8e32 at d <= 64); the scale 2^-100 * 2 / d
# brings the logits back to -18 .. -2. A dropped key scored -1e30 then gets a logit of
# -1.6 / d (-0.1 at d = 16): it outweighs every real key, and differs from one left unmasked
# (score 0, loaded as 0) by more than the tolerance, so the replays tell the two apart.
_HUGE_SCORES_UNIT = 2.0 ** 50


def _nan_hint(ctx, impl, case, knobs, bad) -> str:
    """forward.extreme's hint for NaN or Inf (`bad`) that no replay reproduces.

    The mistakes it names are right on ordinary logits: a running max started at a finite value
    (m_i, or the merge's M; negative_logits: it lies above every logit, so every weight
    underflows to 0 and every row is 0 / 0), a max not carried across blocks or none subtracted
    (huge logits: exp2 overflows). Others give NaN here too (a scale applied twice overflows
    every logit to -inf) but are wrong on ordinary inputs as well: so the hint names those
    mistakes only for an implementation that is right on random q, k, v of the same shape and
    knobs (one more call), and otherwise passes on what is wrong there."""
    if case.kind == "negative_logits" and not bool(bad.all()):
        return ("NaN or Inf in some rows, with every logit about -1e38 (near float32's largest "
                "magnitude; a running max started at a finite value would make every row 0 / "
                "0): look for a logit that overflowed to -inf (then exp2(-inf - -inf) = NaN) or "
                "a denominator l that came out 0")
    ordinary = _ordinary_inputs_hint(ctx, impl, case, knobs)
    if ordinary is not None:
        return (f"NaN or Inf here, and attention is wrong on ordinary inputs of this shape too "
                f"(random q, k, v, the default scale, the same knobs), so look there first: "
                f"{ordinary}")
    units = _max_units_hint(ctx, impl, case, knobs) or _unshifted_exp2_hint(ctx, impl, case,
                                                                            knobs)
    if units is not None:
        return units
    merge = (" (and so must the combine kernel's max over the key splits, M: a split's m_s "
             "weighs exp2(m_s - M))") if case.get("splits", 1) > 1 else ""
    if case.kind == "negative_logits":
        return ("running max must start at -inf: every logit here is about -1e38, below any "
                "finite start (-1e30, 0): m then never moves, exp2(logit - m) is 0 for every "
                "key, l = 0 and acc / l = 0 / 0; start m_i at -float(\"inf\")" + merge)
    return ("max not carried across blocks (m_new must be max(m_i, block max)), or no max "
            "subtracted: exp2 of a large logit difference overflowed to inf and inf/inf = NaN"
            + ("; with key splits, also the combine kernel's max over the splits, M, must "
               "start at -inf and be subtracted (weights exp2(m_s - M))" if merge else ""))


def _max_units_hint(ctx, impl, case, knobs):
    """forward.extreme's hint for a running max kept in other units than p's exponent
    s * qk_scale, or None. Both mistakes below are exact on ordinary inputs (p and alpha use
    the same max, and any shift cancels in acc / l) and overflow on huge logits like a max not
    carried, so the hint rests on two probes, each right for the other mistakes named in
    _nan_hint (max not carried, no max subtracted, a finite start) and NaN for one of these:
      raw: m_new = max(m_i, max(s)), qk_scale left out: on raw scores -1024 to -103424 under
        qk_scale = 2^-10 (logits -1 .. -101), p = exp2(s * qk_scale - max(s)) reaches
        exp2(+1000) and more: inf.
      outside: m_new = max(m_i, max(s)) * qk_scale: on raw scores 1 .. 25 under qk_scale = 4
        (logits 4 .. 100), m_i is multiplied by 4 again at every step, so from the second key
        block on exp2(s * qk_scale - m_new) and alpha are 0, and l = 0 (0 / 0).
    Scores on feature 0 alone (small integers times powers of two: exact in float32); random
    v; one program per row block (kv_splits=1); non-causal; the case's N, d and blocks."""
    torch = ctx.torch
    n = case.n
    if n == 0:
        return None

    def probe(raw, qk_scale):
        return _feature0_probe(ctx, impl, case, knobs, raw, qk_scale)

    gen = ctx.generator
    raw_nan = probe(-1024.0 * torch.randint(1, 102, (n,), generator=gen).double(), 2.0 ** -10)
    outside_nan = probe(torch.randint(1, 26, (n,), generator=gen).double(), 4.0)
    if raw_nan is True and outside_nan == "right":
        return ("running max in raw score units: m_new = max(m_i, tl.max(s, 1)) leaves "
                "qk_scale out, but p = exp2(s * qk_scale - m_new) subtracts it from logits: the "
                "two are in different units, so p is not shifted by its own max and overflows "
                "on large logits (on raw scores -1024 to -103424 under qk_scale = 2^-10, logits "
                "-1 to -101, it is exp2(+1000) or more: inf, where the right kernel is exact); "
                "m_new = max(m_i, "
                "tl.max(s, 1) * qk_scale)")
    if outside_nan is True and raw_nan == "right":
        return ("running max scaled outside the maximum: m_new = max(m_i, tl.max(s, 1)) * "
                "qk_scale multiplies the carried m_i (already a logit in log2 units) by qk_scale "
                "again at every key block, so the max drifts away from p's logits s * qk_scale "
                "(on logits 4 .. 100 under qk_scale = 4 every weight and alpha underflows to 0 "
                "from the second key block on: 0 / 0, where the right kernel is exact); scale "
                "the block's max alone: m_new = max(m_i, tl.max(s, 1) * qk_scale)")
    return None


def _feature0_probe(ctx, impl, case, knobs, raw, qk_scale):
    """The learner's attention (float32, non-causal, kv_splits=1, the case's N, d and knobs) on
    scores that feature 0 alone makes: q[:, 0] = 1 and k[:, 0] = raw (N values), under the
    scale that makes qk_scale = scale * log2(e). "right" where it matches the reference, True
    where it is wrong with NaN or Inf, False where wrong by finite values, None if it raised."""
    from checks.compare import assert_close
    from checks.context import call_learner

    torch = ctx.torch
    n, d = case.n, case.d
    q = torch.zeros((n, d), dtype=torch.float32)
    q[:, 0] = 1.0
    k = torch.zeros((n, d), dtype=torch.float32)
    k[:, 0] = raw
    q, k = q.to(ctx.torch_device), k.to(ctx.torch_device)
    v = ctx.randn((n, d), "float32")
    scale = qk_scale / LOG2E
    out = None
    try:
        out = call_learner(impl.attention, q, k, v, scale=scale, **dict(knobs, kv_splits=1))
        rtol, atol = tolerance("float32", v, _max_logit(q, k, scale))
        assert_close(out, reference(q, k, v, causal=False, scale=scale), rtol=rtol, atol=atol)
    except CheckFailed:  # NaN or Inf: True; wrong values: False
        return out is not None and bool((~out.double().isfinite()).any())
    except Exception:  # noqa: BLE001 - a diagnosis only: no verdict of its own
        return None
    return "right"


def _unshifted_exp2_hint(ctx, impl, case, knobs):
    """forward.extreme's hint for p = exp2(s * qk_scale) / exp2(m_new) (the max divided out
    after the exp2 instead of subtracted inside it), or None. Exact in real numbers and on
    ordinary logits, but float32's exp2 overflows past 2^128 (and flushes to 0 below 2^-149):
    on huge logits inf / inf, on every logit near -1e38 0 / 0, where the hints for a max not
    carried or started finite would speak. The probe: raw scores 200 .. 210 under qk_scale = 1
    (logits in log2 units, exact): the right kernel is exact, and so are a max not carried (the
    differences stay small), one started at a finite value below them, and a max kept in raw
    units or scaled again (qk_scale = 1); exp2(200) alone is inf in float32, so this mistake is
    NaN there."""
    if case.n == 0:
        return None
    raw = 200.0 + ctx.torch.randint(0, 11, (case.n,), generator=ctx.generator).double()
    if _feature0_probe(ctx, impl, case, knobs, raw, 1.0) is not True:
        return None
    return ("exp2 before the max is subtracted: p = exp2(s * qk_scale) / exp2(m_new) (or any "
            "exp2 of an unshifted logit) is exact in real numbers, but float32's exp2 "
            "overflows to inf past 2^128 and flushes to 0 far below 1, so on large logits it "
            "is inf / inf and on very negative ones 0 / 0 (on logits 200 .. 210, where the "
            "right kernel is exact, it is NaN); subtract inside the exponent: p = exp2(s * "
            "qk_scale - m_new[:, None]), alpha = exp2(m_i - m_new)")


def _ordinary_inputs_hint(ctx, impl, case, knobs):
    """None where attention is right on random q, k, v of the case's shape under the default
    scale and the same knobs; else the hint of that failure (or why it failed). Past
    _REPLAY_MAX_N the failure is not diagnosed: the smaller cases name it."""
    from checks.compare import assert_close
    from checks.context import call_learner

    q, k, v = (ctx.randn((case.n, case.d), case.dtype) for _ in range(3))
    scale = case.d ** -0.5
    try:
        out = call_learner(impl.attention, q, k, v, causal=case.causal, **knobs)
        rtol, atol = tolerance(case.dtype, v, _max_logit(q, k, scale))
        diagnoses = _diagnoses(impl, case, q, k, v, causal=case.causal, scale_used=scale,
                               scale_given=None, rtol=rtol, atol=atol)
        assert_close(out, reference(q, k, v, causal=case.causal, scale=scale), rtol=rtol,
                     atol=atol, diagnose=diagnoses if case.n <= _REPLAY_MAX_N else ())
    except CheckFailed as exc:
        return exc.hint or "no mistake replayed here reproduces that output"
    except Exception as exc:  # noqa: BLE001 - a diagnosis only: no verdict of its own
        return f"the call there failed ({type(exc).__name__})"
    return None


def _small_tail_inputs(ctx, case):
    """q, k, v whose output is sum_j w_j v_j / sum_j w_j with w_0 = 1 and w_j = 2^-delta for
    every other key, and the scale that gives those weights (see forward_extreme)."""
    torch = ctx.torch
    dt = getattr(torch, case.dtype)
    block_n = case.blocks[1]
    delta = round(math.log2(block_n / torch.finfo(dt).eps))  # 2^-delta = eps / BLOCK_N
    q = torch.randint(-3, 4, (case.n, case.d), generator=ctx.generator)
    q[:, 0] = 1
    k = torch.zeros((case.n, case.d), dtype=torch.int64)
    k[0, 0] = delta  # every row scores key 0 at delta, every other key at 0
    q, k = (t.to(dt).to(ctx.torch_device) for t in (q, k))
    v = ctx.rand_like_distinct((case.n, case.d), case.dtype, 0.25, 0.5)
    v[0] = ctx.rand_like_distinct((case.d,), case.dtype, 1.0, 1.25)
    return q, k, v, 1.0 / LOG2E  # qk_scale = scale * log2(e) is exactly 1.0 in float32


@register(W, "forward.extreme", tier="kernel", uses=("attention",), cases=_extreme_cases,
          doc="finite logits up to ~1e6 (the running max must carry), all-equal scores, "
              "a long tail of small weights (the running numerator must stay float32), every "
              "logit near -1e38 (the max starts at -inf) and scores below -1e31 under a tiny "
              "scale (dropped keys score -inf), with and without key splits")
def forward_extreme(ctx, impl, case):
    torch = ctx.torch
    dt = getattr(torch, case.dtype)
    rng = ctx.generator
    scale = None
    knobs = _knobs(case)
    if case.kind == "huge_logits":
        # Small-integer q and k make every score an exact integer (no rounding anywhere before
        # the scale), so equal scores stay exactly equal; the large scale then puts the logits
        # of one row hundreds of log2 units apart: exp2 of any unshifted difference overflows.
        q = torch.randint(-3, 4, (case.n, case.d), generator=rng).to(dt).to(ctx.torch_device)
        k = torch.randint(-3, 4, (case.n, case.d), generator=rng).to(dt).to(ctx.torch_device)
        scale = _EXTREME_SCALE[case.dtype]
    elif case.kind == "small_tail":
        # Key 0 weighs 1, every other key 2^-delta: the logits (log2 units) are exact integers
        # and every weight a power of two, exact in any dtype, so rounding P to 16 bits for
        # P @ V costs nothing. The acc of a row starts near v_0 in [1, 1.25) and each later key
        # block adds BLOCK_N * 2^-delta * v_j = eps * v_j, v_j in [0.25, 0.5): a quarter to a
        # half of acc's unit in the last place in the input's 16 bits. A float32 acc keeps them
        # all (fp32 sums of terms near 1: about N * eps32); the only error left is the
        # output's one rounding (eps/2 |out|, up to eps |out| for the interpreter's bf16
        # truncation): under 0.2 of tolerance() on fresh seeds (interpreter). An acc kept in 16
        # bits rounds each block's contribution away: out loses about (N - BLOCK_N) eps v_j /
        # BLOCK_N over sum_j w_j, 5-7x the tolerance at N = 1024.
        q, k, v, scale = _small_tail_inputs(ctx, case)
        # One program per row block must walk every key: split-KV would restart the sum (and
        # the loss) in every split.
        knobs["kv_splits"] = 1
    elif case.kind == "negative_logits":
        # Feature 0 alone scores: q[:, 0] in {-1, -2, -4}, k[:, 0] = 1, so every key of a row
        # scores the same and the output is the mean of the visible rows of v, as below.
        q = torch.zeros((case.n, case.d), dtype=torch.float64)
        q[:, 0] = -(2.0 ** torch.randint(0, 3, (case.n,), generator=rng))
        k = torch.randn((case.n, case.d), generator=rng, dtype=torch.float64)
        k[:, 0] = 1.0
        q, k = (t.to(dt).to(ctx.torch_device) for t in (q, k))
        scale = _NEGATIVE_LOGITS_SCALE
    elif case.kind == "huge_scores":
        # Scores -2e31 and below (every one negative), logits -18 .. -2: a dropped key given a
        # finite score (-1e30, say) would outweigh every real key.
        unit = _HUGE_SCORES_UNIT
        q = (torch.randint(1, 4, (case.n, case.d), generator=rng) * unit).to(dt)
        k = (torch.randint(1, 4, (case.n, case.d), generator=rng) * -unit).to(dt)
        q, k = q.to(ctx.torch_device), k.to(ctx.torch_device)
        scale = 2.0 / (unit * unit * case.d)
    else:
        # Every key is the same vector: each row's scores are all equal, so the output is the
        # plain mean of the visible rows of v (the causal prefix mean).
        q = ctx.randn((case.n, case.d), case.dtype)
        k = ctx.randn((1, case.d), case.dtype).expand(case.n, case.d).contiguous()
    if "splits" in case:
        knobs["kv_splits"] = case.splits
    if case.kind != "small_tail":
        v = ctx.randn((case.n, case.d), case.dtype)
    # Exact (integer) or equal scores: no logit-size term in the tolerance (see _compare_head),
    # here and in the probes of a failed call; huge_scores' exact scores give logits that
    # differ by 1/8 or less (rounding counts).
    exact_scores = case.kind != "huge_scores"
    with _failed_call_probed(ctx, impl, case, q, k, v, scale,
                             logit_term=1.0 if exact_scores else None):
        out = ctx.call(impl.attention, q, k, v, causal=case.causal, scale=scale, **knobs,
                       expect_shape=(case.n, case.d), expect_dtype=case.dtype,
                       expect_contiguous=True)
    _interpreter_notes(ctx, case.dtype)
    scale_used = case.d ** -0.5 if scale is None else scale
    if case.kind in ("equal_scores", "negative_logits"):
        vv = v.double().cpu()
        if case.causal:
            expected = vv.cumsum(dim=0) / torch.arange(1, case.n + 1, dtype=torch.float64)[:, None]
        else:
            expected = vv.mean(dim=0, keepdim=True).expand(case.n, case.d)
        name = ("attention with all-equal scores (mean of v)" if case.kind == "equal_scores"
                else f"attention with every logit about -1e38 (scale {scale:.3g}: mean of v)")
    else:
        expected = reference(q, k, v, causal=case.causal, scale=scale_used)
        name = {"huge_logits": f"attention with logits up to {_max_logit(q, k, scale_used):.3g}",
                "huge_scores": f"attention with scores down to "
                               f"{-_max_logit(q, k, 1.0):.3g} (scale {scale:.3g})",
                "small_tail": "attention with one dominant key and a long tail of weights "
                              "eps / BLOCK_N"}[case.kind]
    rtol, atol = tolerance(case.dtype, v, 1.0 if exact_scores else _max_logit(q, k, scale_used))
    same = dict(causal=case.causal, scale_used=scale_used, scale_given=scale, rtol=rtol,
                atol=atol)
    split_diagnoses = []
    if knobs.get("kv_splits", 1) > 1:
        # As in forward.kv_splits: the split mistakes, then the same call with kv_splits=1,
        # before the hints that judge by the symptom alone (a wrong last row block, say). Not
        # for NaN: _nan_hint names the merge's mistakes there, which kv_splits=1 would hide.
        split_diagnoses = [
            *_split_replays(impl, case, q, k, v, scale=scale_used, rtol=rtol, atol=atol),
            _unsplit_probe(impl, case, q, k, v, scale=scale_used, rtol=rtol, atol=atol,
                           scale_given=scale)]
    got = out.double().cpu()
    # Elements the kernel never wrote hold our NaN fill: assert_close below names them ("output
    # never written"), where the NaN hints here would blame an overflow or a row with no key.
    unwritten = ctx.never_written(out)
    if bool((got.isnan() | got.isinf()).any()) and not (unwritten is not None
                                                         and bool(unwritten.any())):
        # A replayed mistake that reproduces the NaN names it (row 0 of a causal mask without
        # the diagonal has no key: 0 / 0); otherwise the usual suspect is an overflowed exp2.
        bad = got.isnan() | got.isinf()
        replays = _diagnoses(impl, case, q, k, v, **same, generic=False)
        if knobs.get("kv_splits", 1) > 1:
            # No single-stream replay models a split run's NaN (a split whose share of a row
            # holds only dropped keys hands on NaN where one stream had a finite max already):
            # the same call with kv_splits=1, named by a replay there, names the walk's
            # mistake. Only then: _nan_hint names the merge's mistakes, which that call hides.
            replays.append(_unsplit_probe(impl, case, q, k, v, scale=scale_used, rtol=rtol,
                                          atol=atol, scale_given=scale, named_only=True))
        hint = next((h for h in (dg(got, expected, bad) for dg in replays) if h), None)
        bad_row = int(bad.any(dim=1).nonzero()[0])
        ctx.fail(f"attention returned NaN/Inf (first in row {bad_row}) for finite inputs with "
                 f"logits up to {_max_logit(q, k, scale_used):.3g}",
                 hint=hint or _nan_hint(ctx, impl, case, knobs, bad))
    ctx.assert_close(out, expected, name=name, rtol=rtol, atol=atol,
                     diagnose=_diagnoses(impl, case, q, k, v, **same,
                                         before_symptoms=split_diagnoses))


# ---------------------------------------------------------------------------------------------
# heads.values: attention_heads on (H, N, d) views with per-head strides
# ---------------------------------------------------------------------------------------------
# attention_heads on every device: an explicit scale, and H = 0 (an empty output).
_HEADS_EDGE_CASES = [Case(h=2, n=24, d=16, dtype="float32", causal=True, layout="contiguous",
                          scale=0.3),
                     Case(h=0, n=24, d=32, dtype="float16", causal=False, layout="contiguous")]


def _heads_cases(device: str) -> list[Case]:
    if device == "cuda":
        return [Case(h=h, n=n, d=d, dtype=dt, causal=c, layout=lay)
                for h, n in ((3, 100), (16, 1000)) for d in (64, 128)
                for dt in ("float16", "bfloat16") for c in (False, True)
                for lay in ("contiguous", "nhd_view", "shared_kv", "mixed_heads")
                ] + _HEADS_EDGE_CASES
    return [Case(h=3, n=33, d=32, dtype="float16", causal=True, layout="nhd_view"),
            Case(h=2, n=40, d=16, dtype="bfloat16", causal=False, layout="contiguous"),
            Case(h=3, n=20, d=16, dtype="float32", causal=False, layout="shared_kv"),
            Case(h=3, n=40, d=16, dtype="float16", causal=False, layout="mixed_heads"),
            *_HEADS_EDGE_CASES]


@register(W, "heads.values", tier="kernel", uses=("attention_heads",), cases=_heads_cases,
          doc="attention_heads on (H, N, d): contiguous, as a view of an (N, H, d) tensor, "
              "with k and v shared by every head (expand(), head stride 0), and with three "
              "different head strides; an explicit scale; H = 0")
def heads_values(ctx, impl, case):
    shape = (case.h, case.n, case.d)
    if case.layout == "contiguous":
        q, k, v = (ctx.randn(shape, case.dtype) for _ in range(3))
    elif case.layout == "shared_kv":
        # One k and one v for every head (multi-query attention), expand()ed: head stride 0,
        # which TMA descriptors take (on a GPU the default path loads them by TMA).
        q = ctx.randn(shape, case.dtype)
        k, v = (ctx.randn((1, case.n, case.d), case.dtype).expand(shape) for _ in range(2))
    elif case.layout == "mixed_heads":
        # Three head strides: q contiguous (N * d), k every other row of (H, 2N, d) (2 * N * d),
        # v a view of (N, H, d) (d): a kernel that offsets one tensor's heads by another's
        # head stride (k's by v's, say) reads another head's rows, or rows of no head.
        q = ctx.randn(shape, case.dtype)
        k = ctx.randn((case.h, 2 * case.n, case.d), case.dtype)[:, ::2]
        v = ctx.randn((case.n, case.h, case.d), case.dtype).transpose(0, 1)
    else:
        # (N, H, d) storage, as a projection produces it; the (H, N, d) view has strides
        # (d, H * d, 1): the head stride is smaller than the row stride.
        q, k, v = (ctx.randn((case.n, case.h, case.d), case.dtype).transpose(0, 1)
                   for _ in range(3))
    knobs = {"block_m": 16, "block_n": 16} if ctx.device != "cuda" else {}
    scale = _resolve_scale(case)
    if scale is not None:
        knobs["scale"] = scale
    # Non-causal cases leave causal out: its default must be False.
    mask = {"causal": True} if case.causal else {}
    one_head = Case(case, blocks=(16, 16) if "block_m" in knobs else "default")
    # A call that failed is asked about through attention on head 0 (the same kernel on one
    # head): the stage-bound probes where the interpreter stopped a read past N.
    probed = (_failed_call_probed(ctx, impl, one_head, q[0], k[0], v[0], scale) if case.h
              else contextlib.nullcontext())
    with probed:
        out = ctx.call(impl.attention_heads, q, k, v, **mask, **knobs,
                       expect_shape=shape, expect_dtype=case.dtype, expect_contiguous=True)
    _interpreter_notes(ctx, case.dtype)
    for h in range(case.h):
        _compare_head(ctx, impl, one_head,
                      out[h], q[h], k[h], v[h], causal=case.causal, scale_given=scale,
                      name=f"attention_heads(...)[{h}]",
                      extra=[_stride_replays(q, k, v, causal=case.causal,
                                             scale=case.d ** -0.5 if scale is None else scale,
                                             dtype=case.dtype, head=h)])


# ---------------------------------------------------------------------------------------------
# forward.configs: every candidate launch configuration computes the same thing
# ---------------------------------------------------------------------------------------------
def _configs_cases(device: str) -> list[Case]:
    if device == "cuda":
        return [Case(n=1000, d=128, dtype="bfloat16", causal=True),
                Case(n=1000, d=64, dtype="float16", causal=False)]
    return [Case(n=100, d=64, dtype="float16", causal=True)]


@register(W, "forward.configs", tier="kernel", uses=("attention",), cases=_configs_cases,
          timeout=3600,
          doc="every CONFIGS entry (the benchmark sweep's candidates) against float64")
def forward_configs(ctx, impl, case):
    """On a GPU every entry runs (one compile each); under the interpreter, which ignores warps
    and stages and runs pointer loads only, each distinct (block_m, block_n) runs once."""
    configs = [{key: value for key, value in dict(c).items() if value is not None}
               for c in (getattr(impl, "CONFIGS", None) or [])]
    if not configs:
        raise Unavailable("the implementation has no CONFIGS list")
    if ctx.device != "cuda":
        pairs = sorted({(c.get("block_m"), c.get("block_n")) for c in configs
                        if c.get("block_m") and c.get("block_n")})
        configs = [{"block_m": bm, "block_n": bn} for bm, bn in pairs]
    q, k, v = (ctx.randn((case.n, case.d), case.dtype) for _ in range(3))
    skipped = []
    for knobs in configs:
        label = f"attention with CONFIGS entry {knobs}"
        entry = Case(case, blocks=(knobs.get("block_m", 128), knobs.get("block_n", 64)))
        try:
            # Through ctx.call: every entry's output must be fresh memory (no buffer cached
            # across the calls of one shape), inputs unchanged, shape and dtype as promised.
            with _failed_call_probed(ctx, impl, entry, q, k, v, None):
                out = ctx.call(impl.attention, q, k, v, causal=case.causal, **knobs,
                               name=label, expect_shape=(case.n, case.d),
                               expect_dtype=case.dtype, expect_contiguous=True)
        except CheckFailed as exc:
            if type(exc.__cause__).__name__ == "OutOfResources":
                skipped.append(knobs)  # does not fit this GPU: the sweep skips it too
                continue
            raise
        _compare_head(ctx, impl, entry, out, q, k, v, causal=case.causal, scale_given=None,
                      name=label)
    ctx.note(f"{len(configs) - len(skipped)} configurations checked")
    if skipped:
        ctx.note(f"{len(skipped)} do not fit this GPU (OutOfResources), e.g. {skipped[0]}")
    _interpreter_notes(ctx, case.dtype)


# ---------------------------------------------------------------------------------------------
# memory.no_square: nothing of N x N elements is ever allocated
# ---------------------------------------------------------------------------------------------
def _memory_cases(device: str) -> list[Case]:
    # N = 257, d = 16: N^2 = 66049 elements, 16x the output (4112); any score matrix shows.
    cases = [Case(n=257, d=16, dtype="float16", causal=c) for c in (False, True)]
    if device == "cuda":
        cases += [Case(n=n, d=d, dtype="bfloat16", causal=c) for n in (4096, 16384)
                  for d in (64, 128) for c in (False, True)]
    return cases


@register(W, "memory.no_square", tier="kernel", uses=("attention",), cases=_memory_cases,
          doc="no tensor of N^2 elements is created; on a GPU, peak memory well below 4 N^2 bytes")
def memory_no_square(ctx, impl, case):
    q, k, v = (ctx.randn((case.n, case.d), case.dtype) for _ in range(3))
    n2 = case.n * case.n
    with _failed_call_probed(ctx, impl, case, q, k, v, None), ctx.track_allocations() as log:
        out = ctx.call(impl.attention, q, k, v, causal=case.causal,
                       expect_shape=(case.n, case.d), expect_dtype=case.dtype,
                       expect_contiguous=True)
    big = [(shape, str(dtype).replace("torch.", "")) for shape, dtype in log
           if math.prod(shape) >= n2]
    if big:
        ctx.fail(f"attention created {len(big)} tensor(s) of >= N^2 = {n2} elements, e.g. "
                 f"{big[0][0]} {big[0][1]}",
                 hint="full score matrix allocated: the point of streaming is to keep only "
                      "(BLOCK_M, BLOCK_N) tiles of the scores, never the (N, N) matrix")
    if log.peak_bytes is not None:
        io_bytes = case.n * case.d * q.element_size()
        # Inside the block: the output plus ctx.call's copies of q, k and v (to prove they are
        # unchanged), so 4 tensors of (N, d); 8x of them and 2 MiB of slack, plus the float32
        # states of up to 8 key splits (kv_splits: (acc, m, l) per row, 8 * N * (d + 2) floats),
        # is generous and still below the 2 * N^2 bytes of a 16-bit score matrix at these N
        # (26 MiB against 32 MiB at N = 4096, d = 128).
        bound = 8 * io_bytes + (2 << 20) + 8 * case.n * (case.d + 2) * 4
        ctx.max_error, ctx.tolerance = float(log.peak_bytes), float(bound)
        if log.peak_bytes > bound:
            ctx.fail(f"peak GPU memory during attention was {log.peak_bytes / 2**20:.1f} MiB, "
                     f"above {bound / 2**20:.1f} MiB (an N x N float32 matrix is "
                     f"{4 * n2 / 2**20:.0f} MiB)",
                     hint="full score matrix allocated (or another O(N^2) buffer)")
    del out
    if ctx.device != "cuda":
        ctx.note("peak device memory is measured on a GPU only; here every torch allocation "
                 "inside the call was recorded instead")


# ---------------------------------------------------------------------------------------------
# bad_calls: refused before any launch
# ---------------------------------------------------------------------------------------------
@register(W, "bad_calls", tier="kernel", uses=("attention", "attention_heads"),
          doc="bad calls raise TypeError/ValueError naming the argument, before any launch")
def bad_calls(ctx, impl, case):
    torch = ctx.torch
    dev = ctx.torch_device
    q, k, v = (ctx.randn((24, 32), "float16") for _ in range(3))
    att, heads = impl.attention, impl.attention_heads
    ctx.expect_error(att, q, ctx.randn((25, 32), "float16"), v, mentions=["k"],
                     what="attention: k longer than q")
    ctx.expect_error(att, q, k, ctx.randn((24, 64), "float16"), mentions=["v"],
                     what="attention: v with another head dim")
    ctx.expect_error(att, *(ctx.randn((24, 48), "float16") for _ in range(3)), mentions=["48"],
                     what="attention: d = 48 is not supported")
    ctx.expect_error(att, *(ctx.randn((8, 256), "float16") for _ in range(3)), mentions=["256"],
                     what="attention: d = 256 is not supported")
    ctx.expect_error(att, *(ctx.randn((24, 8), "float16") for _ in range(3)), mentions=["8"],
                     what="attention: d = 8 is not supported (a power of two, but below the "
                          "smallest tl.dot tile, 16)")
    # A meta tensor has no memory: a launch with it would read from nowhere.
    ctx.expect_error(att, q, k.to("meta"), v, mentions=["k", "device"],
                     what="attention: k on another device than q (meta)")
    ctx.expect_error(att, q, k.float(), v, mentions=["k", "dtype"],
                     what="attention: k float32, q float16")
    ctx.expect_error(att, q.to_sparse(), k, v, mentions=["q", "dense"], what="attention: sparse q")
    # a view whose memory holds the values before a lazy negation (`z.conj().imag` makes one)
    ctx.expect_error(att, q, k, torch._neg_view(v), mentions=["v", "resolve_neg"],
                     what="attention: lazily negated v")
    ctx.expect_error(att, q, k, v.bfloat16(), mentions=["v", "dtype"],
                     what="attention: v bfloat16, q float16")
    ints = torch.ones((24, 32), dtype=torch.int32, device=dev)
    ctx.expect_error(att, ints, ints, ints, mentions=["q"], what="attention: integer dtype")
    ctx.expect_error(att, q[None], k[None], v[None], mentions=["2-D"],
                     what="attention: 3-D input (use attention_heads)")
    ctx.expect_error(att, q[0], k[0], v[0], mentions=["2-D"], what="attention: 1-D input")
    ctx.expect_error(att, q.tolist(), k, v, mentions=["q"], what="attention: q not a tensor")
    for bad in (float("inf"), float("nan"), -float("inf")):
        ctx.expect_error(att, q, k, v, scale=bad, mentions=["scale"],
                         what=f"attention: scale={bad}")
    for bad in (0.0, -0.125):
        ctx.expect_error(att, q, k, v, scale=bad, mentions=["scale"],
                         what=f"attention: scale={bad}")
    ctx.expect_error(att, q, k, v, scale="0.1", mentions=["scale"],
                     what="attention: scale given as a string")
    ctx.expect_error(att, q, k, v, scale=1e-300, mentions=["scale"],
                     what="attention: scale so small that scale * log2(e) is 0 in float32")
    # Not 0 in float32, but subnormal: GPUs flush it to 0, and a masked score, -inf * 0, is NaN.
    ctx.expect_error(att, q, k, v, scale=1e-39, mentions=["scale"],
                     what="attention: scale=1e-39, subnormal in float32 once log2(e) is folded "
                          "in")
    ctx.expect_error(att, q, k, v, scale=10 ** 400, mentions=["scale"],
                     what="attention: scale an int too large for a float")
    # A float32 number, but not once log2(e) is folded in: qk_scale would be inf, and every
    # logit inf or NaN.
    ctx.expect_error(att, q, k, v, scale=3e38, errors=(ValueError,), mentions=["scale"],
                     what="attention: scale=3e38, so large that scale * log2(e) overflows "
                          "float32")
    # bool is an int in Python: True would pass for a scale of 1.0.
    ctx.expect_error(att, q, k, v, scale=True, errors=(TypeError,), mentions=["scale"],
                     what="attention: scale=True (a bool, not a number)")
    many = ctx.randn((65536, 1, 16), "float16")
    ctx.expect_error(heads, many, many, many, mentions=["heads"],
                     what="attention_heads: 65536 heads, past a CUDA grid's second axis")
    ctx.expect_error(att, q, k, v, causal="yes", mentions=["causal"],
                     what="attention: causal not a bool")
    # 1 is truthy, and True == 1: a check for `causal in (True, False)` lets it through.
    ctx.expect_error(att, q, k, v, causal=1, errors=(TypeError,), mentions=["causal"],
                     what="attention: causal=1 (an int, not a bool)")
    ctx.expect_error(att, q, k, v, block_m=100, mentions=["block_m"],
                     what="attention: block_m not a power of two")
    ctx.expect_error(att, q, k, v, block_n=8, mentions=["block_n"],
                     what="attention: block_n below the smallest tl.dot tile (16)")
    ctx.expect_error(att, q, k, v, num_warps=3, mentions=["num_warps"],
                     what="attention: num_warps = 3")
    ctx.expect_error(att, q, k, v, num_stages=0, mentions=["num_stages"],
                     what="attention: num_stages = 0")
    ctx.expect_error(att, q, k, v, maxnreg=7, mentions=["maxnreg"],
                     what="attention: maxnreg = 7 registers")
    ctx.expect_error(att, q, k, v, causal=True, block_m=16, block_n=32, mentions=["block_n"],
                     what="attention: causal with block_n > block_m")
    ctx.expect_error(att, q, k, v, blockm=64, mentions=["blockm"],
                     what="attention: an unknown keyword argument")
    ctx.expect_error(att, q, k, v, tma="yes", mentions=["tma"], what="attention: tma not a bool")
    ctx.expect_error(att, q, k, v, kv_splits=0, mentions=["kv_splits"],
                     what="attention: kv_splits = 0")
    ctx.expect_error(att, q, k, v, kv_splits=2.0, mentions=["kv_splits"],
                     what="attention: kv_splits not an int")
    ctx.expect_error(att, q, k, v, warp_specialize="yes", mentions=["warp_specialize"],
                     what="attention: warp_specialize not a bool")
    ctx.expect_error(att, q, k, v, warp_specialize=True, block_m=64,
                     mentions=["warp_specialize", "block_m"],
                     what="attention: warp_specialize=True with a Triton tile knob")
    # Where the Hopper path cannot run: under the interpreter, off Hopper, or (here on an
    # H100/H200) d = 32, which it does not support.
    ctx.expect_error(att, q, k, v, warp_specialize=True, mentions=["warp_specialize"],
                     what="attention: warp_specialize=True where it cannot run (d = 32, or no "
                          "Hopper GPU)")
    if ctx.device == "cuda":
        ctx.expect_error(att, q.t().contiguous().t(), k, v, tma=True, mentions=["tma"],
                         what="attention: tma=True with a column-major q (no unit stride)")
    else:
        ctx.expect_error(att, q, k, v, tma=True, mentions=["tma"],
                         what="attention: tma=True under the interpreter")
    h3 = [ctx.randn((2, 24, 32), "float16") for _ in range(3)]
    ctx.expect_error(heads, q, k, v, mentions=["3-D"], what="attention_heads: 2-D input")
    ctx.expect_error(heads, h3[0], ctx.randn((3, 24, 32), "float16"), h3[2], mentions=["k"],
                     what="attention_heads: k with another number of heads")
    ctx.expect_error(heads, *h3, scale=float("nan"), mentions=["scale"],
                     what="attention_heads: scale=nan")
    ctx.expect_error(heads, *h3, blockm=64, mentions=["blockm"],
                     what="attention_heads: an unknown keyword argument")
    ctx.expect_error(heads, *h3, block_m=100, mentions=["block_m"],
                     what="attention_heads: block_m not a power of two")
    if ctx.device == "cuda":
        ctx.expect_error(att, q.cpu(), k.cpu(), v.cpu(), mentions=["cuda"],
                         what="attention: CPU tensors on a GPU run")
        ctx.expect_error(att, q, k.cpu(), v, mentions=["k", "device"],
                         what="attention: k on the CPU, q and v on the GPU")


# ---------------------------------------------------------------------------------------------
# cuda.warp_specialized: the Hopper path (a Gluon kernel, outside the exercises)
# ---------------------------------------------------------------------------------------------
# Ragged N (1 and 17: one partial row block; 257 and 1000: several key blocks, so the ring of
# K and V stages wraps), both masks and 16-bit dtypes, d = 64 and 128; the views on the longer
# N only; 4096 contiguous for many trips around the ring.
_WARP_SPECIALIZED_CASES = [Case(layout=lay, n=n, d=d, dtype=dt, causal=c)
                           for lay in ("contiguous", "packed_qkv", "mixed_rows", "heads_view",
                                       "shared_kv")
                           for n in (1, 17, 257, 1000, 4096) for d in (64, 128)
                           for dt in ("float16", "bfloat16") for c in (False, True)
                           if lay == "contiguous" or n in (257, 1000)
                           if lay != "shared_kv" or (n == 1000 and dt == "bfloat16")]


@register(W, "cuda.warp_specialized", tier="cuda", uses=("attention", "attention_heads"),
          cases=_WARP_SPECIALIZED_CASES,
          doc="warp_specialize=True (the Hopper path): ragged N, causal or not, fp16/bf16, "
              "packed-qkv views, q, k and v with three row strides, per-head views, k and v "
              "shared by every head, against float64")
def cuda_warp_specialized(ctx, impl, case):
    import importlib.util

    ctx.require_cuda()
    torch = ctx.torch
    if torch.cuda.get_device_capability() != (9, 0):
        raise Unavailable(f"the warp-specialized path runs Hopper's warpgroup MMAs (compute "
                          f"capability 9.0); this GPU is {torch.cuda.get_device_name()}")
    if importlib.util.find_spec("triton.experimental.gluon") is None:
        raise Unavailable("the warp-specialized path is written in Gluon, which this Triton "
                          "lacks (Triton 3.5 or newer has it)")
    blocks = Case(case, blocks=(128, 128))  # its tiles, for the mistake replays
    if case.layout in ("heads_view", "shared_kv"):
        if case.layout == "heads_view":
            # (N, H, d) storage seen as (H, N, d): strides (d, H * d, 1), per-head TMA boxes.
            q, k, v = (ctx.randn((case.n, 3, case.d), case.dtype).transpose(0, 1)
                       for _ in range(3))
        else:  # k and v shared by 3 heads, expand()ed: head stride 0 in their descriptors
            q = ctx.randn((3, case.n, case.d), case.dtype)
            k, v = (ctx.randn((1, case.n, case.d), case.dtype).expand(3, case.n, case.d)
                    for _ in range(2))
        out = ctx.call(impl.attention_heads, q, k, v, causal=case.causal, warp_specialize=True,
                       expect_shape=tuple(q.shape), expect_dtype=case.dtype,
                       expect_contiguous=True)
        for h in range(q.shape[0]):
            _compare_head(ctx, impl, blocks, out[h], q[h], k[h], v[h], causal=case.causal,
                          scale_given=None, name=f"attention_heads(..., warp_specialize=True)[{h}]")
        return
    if case.layout in ("packed_qkv", "mixed_rows"):
        q, k, v = _strided_inputs(ctx, case.layout, case.n, case.d, case.dtype)
    else:
        q, k, v = (ctx.randn((case.n, case.d), case.dtype) for _ in range(3))
    out = ctx.call(impl.attention, q, k, v, causal=case.causal, warp_specialize=True,
                   expect_shape=(case.n, case.d), expect_dtype=case.dtype,
                   expect_contiguous=True)
    _compare_head(ctx, impl, blocks, out, q, k, v, causal=case.causal, scale_given=None,
                  name=f"attention(..., warp_specialize=True) on {case.layout} q, k, v")


# ---------------------------------------------------------------------------------------------
# cuda tier: the grid's second axis (heads times key splits), at and past its limit
# ---------------------------------------------------------------------------------------------
_MAX_GRID_Y = 65535  # CUDA's limit on a grid's second (y) axis


@register(W, "cuda.grid_limits", tier="cuda", uses=("attention_heads",),
          cases=[Case(heads=_MAX_GRID_Y, n=1, d=16, dtype="float16")],
          doc="65535 heads (a full grid axis) run and are right; 32768 heads x 2 key splits "
              "(65536 programs on that axis) are refused before any launch")
def cuda_grid_limits(ctx, impl, case):
    """GPU only: under the interpreter 65535 programs would each run in Python for minutes."""
    ctx.require_cuda()
    shape = (case.heads, case.n, case.d)
    q, k, v = (ctx.randn(shape, case.dtype) for _ in range(3))
    try:
        out = ctx.call(impl.attention_heads, q, k, v, expect_shape=shape,
                       expect_dtype=case.dtype, expect_contiguous=True)
    except CheckFailed as exc:
        if not exc.hint and isinstance(exc.__cause__, (TypeError, ValueError)):
            exc.hint = (f"grid limit off by one: a CUDA grid's second axis takes up to "
                        f"{_MAX_GRID_Y} programs, that many included; refuse heads * kv_splits "
                        f"> {_MAX_GRID_Y}, not >=")
        raise
    # N = 1: each row sees its own key alone (weight exactly 1), so the output is v.
    rtol, atol = tolerance(case.dtype, v, 1.0)
    ctx.assert_close(out, v.double().cpu(), name=f"attention_heads on {case.heads} heads of N = 1",
                     rtol=rtol, atol=atol)
    del out, q, k, v
    wide = ctx.randn((32768, 17, 16), "float16")  # 17 keys: two key blocks of 16, so 2 splits
    try:
        ctx.expect_error(impl.attention_heads, wide, wide, wide, kv_splits=2, block_m=16,
                         block_n=16, mentions=["kv_splits"],
                         what=f"attention_heads: 32768 heads x 2 key splits, past the "
                              f"{_MAX_GRID_Y} programs of a CUDA grid's second axis")
    except CheckFailed as exc:
        if "does not mention" not in exc.message:  # not refused, or refused too late
            exc.hint = (f"heads * kv_splits unchecked: (head, split) pairs run along the grid's "
                        f"second axis, so refuse heads * kv_splits > {_MAX_GRID_Y} (after "
                        f"capping the splits), before launching")
        raise


# ---------------------------------------------------------------------------------------------
# cuda tier: the caller's stream; long sequences against sampled float64 rows
# ---------------------------------------------------------------------------------------------
@register(W, "cuda.stream", tier="cuda", uses=("attention",),
          cases=[Case(n=4096, d=64, dtype="float16", causal=c) for c in (False, True)],
          doc="launches on the caller's current (non-default) stream")
def cuda_stream(ctx, impl, case):
    ctx.require_cuda()
    torch = ctx.torch
    sources = [ctx.randn((case.n, case.d), case.dtype) for _ in range(3)]
    stream = torch.cuda.Stream()
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        busy = torch.randn((4096, 4096), device="cuda")
        _ = busy @ busy  # keep the side stream busy so a launch on another stream would race
        q, k, v = (s * 1 for s in sources)  # written on the side stream, after the busy work
        out = ctx.call(impl.attention, q, k, v, causal=case.causal, expect_shape=q.shape,
                       expect_dtype=case.dtype, expect_contiguous=True)
    stream.synchronize()
    q, k, v = sources
    rtol, atol = tolerance(case.dtype, v, _max_logit(q, k, case.d ** -0.5))
    ctx.assert_close(out, reference(q, k, v, causal=case.causal, scale=case.d ** -0.5),
                     name="attention on a side stream", rtol=rtol, atol=atol,
                     diagnose=[always("launched on the default stream instead of the "
                                      "current one (read q, k, v before they were written)")])


@register(W, "cuda.long_sequences", tier="cuda", uses=("attention", "attention_heads"),
          cases=[Case(n=n, d=d, dtype="bfloat16", causal=c, heads=h)
                 for n, h in ((16384, 1), (8192, 4), (16384, 3)) for d in (64, 128)
                 for c in (False, True)],
          doc="the benchmark's sizes, default launch, tma=True and tma=False (pointer loads, "
              "at d = 128 without a mask on their own default tile), float64 on sampled rows; "
              "3 heads of 16384: a grid the launcher splits to fill its last wave")
def cuda_long_sequences(ctx, impl, case):
    ctx.require_cuda()
    torch = ctx.torch
    shape = (case.heads, case.n, case.d)
    q, k, v = (ctx.randn(shape, case.dtype) for _ in range(3))
    scale = case.d ** -0.5
    # Rows 0..63 (few keys when causal), the rows around every 1024th and the last 64 (the tail).
    rows = sorted(set(range(64)) | set(range(case.n - 64, case.n))
                  | {r for b in range(1024, case.n, 1024) for r in (b - 1, b, b + 1)})
    rows_t = torch.tensor(rows)
    for knobs in ({}, {"tma": True}, {"tma": False}):
        if case.heads == 1:
            out = ctx.call(impl.attention, q[0], k[0], v[0], causal=case.causal, **knobs,
                           expect_shape=shape[1:], expect_dtype=case.dtype,
                           expect_contiguous=True)[None]
        else:
            out = ctx.call(impl.attention_heads, q, k, v, causal=case.causal, **knobs,
                           expect_shape=shape, expect_dtype=case.dtype,
                           expect_contiguous=True)
        for h in range(case.heads):
            qh, kh, vh = (t[h].double().cpu() for t in (q, k, v))
            s = (qh[rows_t] @ kh.T) * scale  # (rows, N)
            if case.causal:
                s = s.masked_fill(torch.arange(case.n)[None, :] > rows_t[:, None], -math.inf)
            expected = s.softmax(dim=-1) @ vh
            rtol, atol = tolerance(case.dtype, v[h], float(s[s.isfinite()].abs().max()))
            ctx.assert_close(out[h][rows_t.to(out.device)], expected,
                             name=f"head {h}, sampled rows, knobs {knobs}", rtol=rtol, atol=atol)
