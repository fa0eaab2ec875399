"""Checks for the fused GEMM workshop: `gemm_bias_relu(a, b, bias=None, *, relu=True, **knobs)`.

The reference is the same precision contract, computed in float64 on the CPU: the float16 or
bfloat16 operands upcast exactly, the products summed in float64, the bias added and the ReLU
applied in float64, then ONE rounding to the output dtype. Element-wise tolerances are stated
relative to the magnitude sum_k |a_ik b_kj| + |bias_j| of what was summed (see `_tolerance`).

When a comparison fails, the output is also compared with what the classic mistakes would
produce (the accumulator rounded before the epilogue, the bias added in the operand dtype, the
ReLU applied before the bias or written as a minimum, the bias indexed by row, the output rounded
through float16, the accumulator overwritten or added twice at each K step, the K tail read past
K or loaded as ones, the K mask one short or cut to K % BLOCK_K in every step, bfloat16
multiplied as raw bits under the interpreter, operands or the bias read as if contiguous, the
output rounded through bfloat16, and where square tiles let them compile, tl.dot's operands
swapped, B's tile transposed in it, or each tile stored transposed, which at K = 0 may equal the
bias indexed by row: the hint names both),
computed exactly the same way; a match names the mistake in the hint. Whole output tiles wrong
while others are right name the grouped tile-order arithmetic, and so does a call that fails or
leaves elements unwritten with one group_m but not with a single band (see _order_hint), or that
leaves whole tiles unwritten though its grid had a program for every tile (_unreached_tiles);
where the module's _tile_coords gives exactly the order of a named slip (_coords_mistakes), the
hint names that slip.
A call that fails with no hint, or with the bounds check's generic one, is asked (_probe_failure)
whether its K steps advance 2 * BLOCK_K or its loads read past K (small probes on operands
sliced from wider tensors, see _k_advance_probe and _k_tail_probe), and a store the bounds check
stopped which store mask let its lanes through (_store_mask_lanes). The tile order itself, which
no output shows, is asked of the module's _tile_coords in a probe kernel (order.grouped). A call
without a bias that raises about NoneType is asked again with a bias of zeros: if that runs, the
bias is loaded without `if HAS_BIAS:` (_bias_guard_hint).
"""

from __future__ import annotations

from checks import launches
from checks.compare import never_written_hint, never_written_line
from checks.core import Case, CheckFailed, register

W = "fused_gemm"
DTYPES = ("float16", "bfloat16")
UPCAST_NOTE = "bf16 tl.dot ran upcast to fp32 under Triton's interpreter"
# What a check that runs gemm_bias_relu waits for: its exercises and _tile_coords's, which
# both kernels call (order.grouped asks _tile_coords alone: uses=("tile_coords",)).
USES = ("gemm_bias_relu", "tile_coords")


# ---------------------------------------------------------------------------------------------
# The float64 reference, the tolerance and the comparison
# ---------------------------------------------------------------------------------------------
def _reference(a, b, bias, relu):
    """(exact, rounded, magnitude) as float64 CPU tensors, for the contract.

    exact: relu(a @ b + bias) in float64 (no rounding at all; float64 sums of at most ~1e4
    products of 16-bit numbers are exact to ~1e-12 relative, far below any tolerance here).
    rounded: `exact` rounded once to a's dtype. magnitude: sum_k |a_ik b_kj| + |bias_j|.
    """
    import torch

    a64, b64 = a.detach().cpu().double(), b.detach().cpu().double()
    exact = a64 @ b64
    magnitude = a64.abs() @ b64.abs()
    if bias is not None:
        bias64 = bias.detach().cpu().double()
        exact = exact + bias64
        magnitude = magnitude + bias64.abs()
    if relu:
        exact = exact.clamp_min(0.0)
    rounded = exact.to(a.dtype).double()
    del torch
    return exact, rounded, magnitude


def _tolerance(rounded, magnitude, k: int, dtype):
    """Element-wise tolerance for one output of the contract, as a float64 tensor.

    Why this form:
    - Accumulation: every product of two float16 (11 significant bits) or bfloat16 (8 bits)
      numbers is exact in float32 (24 bits), so the accumulator's only error is the rounding of
      its K additions. The classic bound for a float32 sum in any order is about
      K * eps32/2 * sum_k |a_ik b_kj| (tensor cores and tree orders do better); adding the fp32
      bias costs one more eps32/2 of |bias_j|. We allow K * eps32 * magnitude, twice the bound.
      It is relative to the magnitude of the terms, not to |c|: where positive and negative
      products cancel, |c| is small but the rounding errors are set by the terms.
    - Output rounding: the kernel rounds its float32 result once and the reference rounds the
      exact result once; near a rounding boundary the two can land one unit in the last place
      apart (and Triton's interpreter truncates float32 -> bfloat16: also within one unit).
      One unit in the last place of |x| is at most eps(dtype) * |x|.
    - A floor: float16 results below 2^-14 are subnormal, spaced 2^-24 apart.
    """
    import torch

    eps32 = torch.finfo(torch.float32).eps
    eps_out = torch.finfo(dtype).eps
    floor = 2.0 ** -24 if dtype == torch.float16 else 1e-38
    return max(k, 1) * eps32 * magnitude + eps_out * rounded.abs() + floor


def _tolerance_formula(bias, dtype) -> str:
    """`_tolerance` in words, as FAIL messages print it (the terms this call's tolerance has)."""
    import torch

    magnitude = "sum|a b|" if bias is None else "(sum|a b| + |bias|)"
    floor = " + 2^-24 (float16's subnormal spacing)" if dtype == torch.float16 else ""
    return f"max(K, 1) * eps32 * {magnitude} + eps(out) * |c|{floor}"


def _round_to(x32, dtype, truncate: bool):
    """float32 tensor -> float32 tensor of the values rounded to `dtype` (round to nearest even),
    or truncated toward zero (what Triton's interpreter does for float32 -> bfloat16)."""
    import torch

    if truncate and dtype == torch.bfloat16:
        return (x32.contiguous().view(torch.int32) & -65536).view(torch.float32)
    return x32.to(dtype).float()


BIAS_BY_ROW = "bias indexed by row"
BIAS_ROUNDED = "bias rounded to the operand dtype"


def _mistakes(a, b, bias, relu, exact_acc64, truncate):
    """What each classic mistake outputs for these inputs, as (hint, float64 tensor) pairs.

    Each is computed in float32/operand-dtype arithmetic on the CPU, exactly as the mistaken
    kernel would, from the float32 accumulator (the float64 sum rounded to float32).
    """
    import torch

    dtype = a.dtype
    acc = exact_acc64.float()  # (M, N) what the float32 accumulator holds

    def rnd(x):
        return _round_to(x, dtype, truncate)

    def finish(x):
        return rnd(x.clamp_min(0.0) if relu else x).double()

    out = []
    if bias is not None:
        b32 = bias.detach().cpu().float()
        out.append(("rounding before the epilogue: the output matches the accumulator rounded to "
                    f"{str(dtype).replace('torch.', '')} first and the bias added after; keep acc "
                    "in float32 through the bias and the ReLU, round once at the store",
                    finish(rnd(acc) + b32)))
        out.append(("bias added in the operand dtype: the output matches round(acc) + round(bias) "
                    f"added in {str(dtype).replace('torch.', '')}; add the float32 bias to the "
                    "float32 accumulator",
                    finish((acc.to(dtype) + b32.to(dtype)).float())))
        # The tenth learner audit: the bias alone rounded (acc + bias.to(OUT_DTYPE)), added to
        # the float32 accumulator (the sum promotes to float32). The bias loses its low bits
        # exactly where the accumulator cancels it (contract.early_rounding).
        out.append((f"{BIAS_ROUNDED}: the output matches acc + round(bias), the float32 "
                    f"accumulator plus the bias rounded to {str(dtype).replace('torch.', '')} "
                    "(bias.to(OUT_DTYPE)); the bias is float32 already: add it as it is, "
                    "acc + bias, and round once at the store", finish(acc + rnd(b32))))
        relu_first = acc.clamp_min(0.0) + b32
        # With acc >= 0 everywhere (K = 0, or a product the bias cancels) relu(acc) + bias is
        # acc + bias: the ReLU applied before the bias and the ReLU left out give the same
        # output, and the ReLU's replay below names both.
        if not bool((acc >= 0).all()):
            # A ReLU inside the K loop gives this too where K fits one step (_relu_every_k_step
            # replays the loop where it takes several).
            text = ("ReLU applied before the bias: the output matches relu(acc) + bias; add "
                    "the bias first, then take max(., 0)" + (
                        " (a ReLU inside the K loop does this too when K fits one K step)"
                        if a.shape[1] <= _BLOCK_KS[-1] else ""))
            out.append((text, finish(relu_first)))
            out.append((text, rnd(relu_first).double()))
        m = acc.shape[0]
        by_row = torch.zeros(m)
        k = min(m, b32.shape[0])
        by_row[:k] = b32[:k]
        out.append((f"{BIAS_BY_ROW}: the output matches acc[m, n] + bias[m]; bias[n] belongs "
                    "to column n (broadcast it down the rows: offs_n[None, :])",
                    finish(acc + by_row[:, None])))
    # The ReLU's switch: left out where it was asked for, applied where it was not.
    pre = acc + bias.detach().cpu().float() if bias is not None else acc
    if relu:
        same = (" (or relu(acc) + bias: here acc >= 0, so applying the ReLU before the bias "
                "gives the same); take max(acc + bias, 0) after the bias, when APPLY_RELU"
                if bias is not None and bool((acc >= 0).all()) else "")
        out.append(("ReLU missing or misplaced: the output matches acc"
                    f"{' + bias' if bias is not None else ''} without the ReLU{same}",
                    rnd(pre).double()))
        # The right switch, the wrong function: positive results zeroed, negative ones kept.
        out.append(("ReLU written as a minimum: the output matches min(acc"
                    f"{' + bias' if bias is not None else ''}, 0) (every positive result is 0, "
                    "every negative one kept); ReLU is tl.maximum(acc, 0.0)",
                    rnd(pre.clamp_max(0.0)).double()))
    else:
        out.append(("ReLU applied though relu=False: the output matches max(acc"
                    f"{' + bias' if bias is not None else ''}, 0); apply it only when "
                    "APPLY_RELU (relu=True)", rnd(pre.clamp_min(0.0)).double()))
    if dtype == torch.bfloat16:
        # The store cast hard-coded to float16 (acc.to(tl.float16), not OUT_DTYPE): the store
        # then converts float16 to bfloat16, so the value went through float16's range and
        # precision first (beyond 65504 it is inf; below 2^-14 its spacing is 2^-24).
        out.append(("output rounded through float16: the output matches the result rounded to "
                    "float16 and then to bfloat16 (|c| > 65504 comes out inf, tiny values lose "
                    "their bits); round the float32 result once to the output's dtype "
                    "(.to(OUT_DTYPE), i.e. c_ptr.dtype.element_ty), not to a fixed tl.float16",
                    rnd((pre.clamp_min(0.0) if relu else pre).to(torch.float16).float()).double()))
    if dtype == torch.float16:
        # The mirror mistake (the seventh learner audit's 03): the cast hard-coded to
        # tl.bfloat16, so a float16 output keeps bfloat16's 8 significant bits of its 11 (the
        # interpreter truncates to bfloat16, as _round_to does; the store converts to float16).
        out.append(("output rounded through bfloat16: the output matches the result rounded to "
                    "bfloat16 and then to float16 (3 of float16's 11 significant bits lost); "
                    "round the float32 result once to the output's dtype (.to(OUT_DTYPE), i.e. "
                    "c_ptr.dtype.element_ty), not to a fixed tl.bfloat16",
                    _round_to((pre.clamp_min(0.0) if relu else pre).float(), torch.bfloat16,
                              truncate).to(torch.float16).double()))
    return out


def _share_within(got, rounded, magnitude, k: int, dtype) -> float:
    """Share of the outputs within the contract's tolerance of `rounded` (float64 CPU tensors)."""
    tol = _tolerance(rounded, magnitude, k, dtype)
    return float(((got - rounded).abs() <= tol).double().mean())


def _explains(got, bad, a, b, bias, relu) -> bool:
    """Whether the contract computed from these (mistaken) inputs explains `got`: within
    tolerance for at least 90% of the outputs and for clearly more than the right inputs give
    (the rule of _compare's classic mistakes)."""
    _, rounded, magnitude = _reference(a, b, bias, relu)
    share = _share_within(got, rounded, magnitude, a.shape[1], a.dtype)
    return share >= 0.9 and share > float((~bad).double().mean()) + 0.05


def _read_dense(t):
    """t's memory read as a kernel that ignores t's strides reads it: t.numel() elements in a
    row from t's first one (the strides of a contiguous tensor of t's shape). None when t's
    storage ends before that (a broadcast operand's stride 0 needs far less memory than its
    shape: such a kernel reads past the end, which no tensor here can reproduce)."""
    dense, step = [], 1
    for size in reversed(t.shape):
        dense.insert(0, step)
        step *= size
    try:
        return t.detach().as_strided(t.shape, tuple(dense))
    except RuntimeError:
        return None


# block_k a launcher may pick: tl.dot needs at least 16, the launchers allow up to 256.
_BLOCK_KS = (16, 32, 64, 128, 256)


def _last_k_step(a, b, bias, relu):
    """What a kernel outputs whose accumulator is overwritten at each K step (acc = tl.dot(a, b)
    instead of tl.dot(a, b, acc)): the contract over the last K step's block only. One
    (start, block_ks, rounded, magnitude) per distinct last block, for the block_k that split K
    into several steps (the launch's block_k is not known here; any of them may match)."""
    k = a.shape[1]
    starts: dict[int, list[int]] = {}
    for bk in _BLOCK_KS:
        if bk < k:
            starts.setdefault((k - 1) // bk * bk, []).append(bk)  # (k_tiles - 1) * block_k
    out = []
    for start, bks in starts.items():
        _, rounded, magnitude = _reference(a[:, start:], b[start:, :], bias, relu)
        out.append((start, bks, rounded, magnitude))
    return out


def _acc_added_twice(a, b, bias, relu):
    """What a kernel outputs that adds the accumulator twice per K step (acc += tl.dot(a, b, acc):
    tl.dot(a, b, acc) already returns acc + a @ b, so each step doubles the running sum before
    adding its block's product): the contract over sum_s 2^(steps-1-s) A_s B_s, the K steps s
    weighted. One (block_k, steps, rounded, magnitude) per block_k that splits K into several
    steps (with one step the output is right; as in _last_k_step, the launch's block_k is not
    known here). Weighting A's columns in float64 is exact, and so is the kernel's doubling."""
    import torch

    k = a.shape[1]
    a64 = a.detach().cpu().double()
    out = []
    for bk in _BLOCK_KS:
        if bk < k:
            steps = -(-k // bk)
            weight = torch.pow(2.0, (steps - 1 - torch.arange(k) // bk).double())  # per column k
            exact, _, magnitude = _reference(a64 * weight, b, bias, relu)
            out.append((bk, steps, exact.to(a.dtype).double(), magnitude))
    return out


def _relu_every_k_step(a, b, bias, relu):
    """What a kernel outputs that takes the ReLU inside the K loop, after each step's tl.dot
    (the tenth learner audit), then runs the contract's epilogue: acc = max(acc + A_s B_s, 0)
    step by step, so a partial sum's negative part is dropped before the later steps add to
    it. In float64: max(., 0) moves no two values further apart, so the float32 kernel stays
    within the contract's tolerance of it. One (block_k, steps, rounded, magnitude) per
    block_k that splits K into several steps (with one step it is relu(acc) + bias, the ReLU
    before the bias; as in _last_k_step, the launch's block_k is not known here)."""
    import torch

    k = a.shape[1]
    a64, b64 = a.detach().cpu().double(), b.detach().cpu().double()
    _, _, magnitude = _reference(a, b, bias, relu)
    out = []
    for bk in _BLOCK_KS:
        if bk >= k:
            continue
        acc = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float64)
        for k0 in range(0, k, bk):
            acc = (acc + a64[:, k0:k0 + bk] @ b64[k0:k0 + bk, :]).clamp_min(0.0)
        if bias is not None:
            acc = acc + bias.detach().cpu().double()
        if relu:
            acc = acc.clamp_min(0.0)
        out.append((bk, -(-k // bk), acc.to(a.dtype).double(), magnitude))
    return out


RELU_IN_K_LOOP = "ReLU applied inside the K loop"


def _spans(keep) -> str:
    """'0..31, 64..95' for the True positions of a 1-D bool tensor (ranges of consecutive ones)."""
    spans, start = [], None
    flags = keep.tolist() + [False]
    for i, flag in enumerate(flags):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            spans.append(f"{start}..{i - 1}" if i - 1 > start else f"{start}")
            start = None
    return ", ".join(spans[:4]) + (" ..." if len(spans) > 4 else "")


def _k_mask_step_times_block(a, b, bias, relu):
    """What a kernel outputs whose K mask is offs_k < K - k0 * BLOCK_K (k0 taken as a step index,
    but `for k0 in range(0, K, BLOCK_K)` makes it the element offset already): lane j of the step
    at k0 counts only while j < K - k0 * BLOCK_K, so after the first step (almost) every lane is
    masked to 0. The contract over A with the masked columns zeroed (exact in float64). One
    (block_k, kept columns, rounded, magnitude) per block_k that drops some column (with one K
    step the mask is right; as in _last_k_step, the launch's block_k is not known here)."""
    import torch

    k = a.shape[1]
    col = torch.arange(k)
    a64 = a.detach().cpu().double()
    out, seen = [], set()
    for bk in _BLOCK_KS:
        k0 = col // bk * bk
        keep = (col - k0) < k - k0 * bk
        if bool(keep.all()) or bytes(keep.numpy()) in seen:
            continue
        seen.add(bytes(keep.numpy()))
        _, rounded, magnitude = _reference(a64 * keep.double(), b, bias, relu)
        out.append((bk, keep, rounded, magnitude))
    return out


def _k_last_dropped(a, b, bias, relu):
    """(rounded, magnitude) of what a kernel outputs whose K mask is one short, offs_k < K - k0
    - 1 (the eighth learner audit): in the last K step lane j holds position k0 + j, so the mask
    drops position K - 1 alone, whatever block_k is; earlier steps keep every lane. The
    contract over the first K - 1 positions. None for K < 2: nothing is left, and _compare's
    replay of the K = 0 output ("nothing summed over K") names that case with its twins."""
    k = a.shape[1]
    if k < 2:
        return None
    _, rounded, magnitude = _reference(a[:, :k - 1], b[:k - 1, :], bias, relu)
    return rounded, magnitude


K_LAST_DROPPED = "K mask one short"
NOTHING_SUMMED = "nothing summed over K"


def _k_mask_mod(a, b, bias, relu):
    """What a kernel outputs whose K mask is offs_k < K % BLOCK_K (the tenth learner audit: the
    tail's length taken as the mask of every step): lane j of each step counts only while j < K
    % BLOCK_K, so every step keeps its first K % BLOCK_K positions. The contract over A with
    the other columns zeroed (exact in float64). One (block_k, kept columns, rounded,
    magnitude) per block_k that splits K into several steps and keeps some column but not all
    (K % BLOCK_K = 0 keeps none: relu(bias), the output of many mistakes, is not named)."""
    import torch

    k = a.shape[1]
    col = torch.arange(k)
    a64 = a.detach().cpu().double()
    out = []
    for bk in _BLOCK_KS:
        keep = col % bk < k % bk
        if bk >= k or not bool(keep.any()):
            continue
        _, rounded, magnitude = _reference(a64 * keep.double(), b, bias, relu)
        out.append((bk, keep, rounded, magnitude))
    return out


def _k_tail_ones(a, b, bias, relu):
    """What a kernel outputs that loads the K tail's masked lanes as 1 (other=1.0) instead of 0:
    the contract over A and B padded with ones up to whole K steps. One (launched K, padded K,
    block_ks, rounded, magnitude) per distinct padding, for the block_k that do not divide the
    launched K (as in _last_k_step, the launch's block_k is not known here). The launched K is
    K, or K rounded up to 8 where stage_unaligned ran the kernel on copies whose rows it padded
    with zeros to 16 bytes (see STAGING_HINT): the ones come after those zeros."""
    import torch

    (m, k), n = a.shape, b.shape[1]
    padded: dict[tuple[int, int], list[int]] = {}
    for start in sorted({k, -(-k // 8) * 8}):
        for bk in _BLOCK_KS:
            if start % bk:
                padded.setdefault((start, -(-start // bk) * bk), []).append(bk)
    out = []
    for (start, kk), bks in padded.items():
        fill = [torch.zeros(start - k), torch.ones(kk - start)]
        a1 = torch.cat([a.detach().cpu()] + [f.expand(m, -1).to(a.dtype) for f in fill], dim=1)
        b1 = torch.cat([b.detach().cpu()] + [f[:, None].expand(-1, n).to(b.dtype) for f in fill])
        _, rounded, magnitude = _reference(a1, b1, bias, relu)
        out.append((start, kk, bks, rounded, magnitude))
    return out


def _raw_bf16_product(a, b, bias, relu):
    """(rounded, magnitude) of what Triton's interpreter outputs for a bfloat16 tl.dot whose tiles
    were not upcast: it stores bfloat16 as uint16 and multiplies the bit patterns as integers
    (in float32; the float64 sum here is within the tolerance of that)."""
    import torch

    def bits(t):
        return (t.detach().cpu().view(torch.int16).to(torch.int32) & 0xFFFF).double()

    exact, _, magnitude = _reference(bits(a), bits(b), bias, relu)
    return exact.to(torch.bfloat16).double(), magnitude


# The work (multiply-adds, per block size) beyond which _dot_swapped_tiles replays nothing: the
# interpreter's shapes are far below it, and the GPU's default tiles are never square (block_k
# <= 64 < block_m or block_n), so there tl.dot(b, a) stops at its shapes and the square probe
# (_dot_swapped_probe) names it instead, without float64 products of a 4095 x 4097 x 1023 size.
_SWAPPED_REPLAY_MAX_WORK = 1 << 27


def _dot_swapped_tiles(a, b, bias, relu):
    """What the pointer kernel outputs with tl.dot's operands swapped (tl.dot(b, a, acc)) where
    that compiles: square tiles, BLOCK_M = BLOCK_N = BLOCK_K = s. Tile (pid_m, pid_n) then sums
    over its K steps k0 the (s, s) product B_tile @ A_tile, whose element (i, j) is
    sum_t B[k0 + i, n0 + t] * A[m0 + t, k0 + j]: the starter's wrapped rows of A (row
    (m0 + t) % M) and columns of B ((n0 + t) % N) meet in the sum, and the K tail is 0 (A's
    columns and B's rows k0 + offs_k >= K masked). The contract's epilogue follows, in float64.
    One (s, staged, rounded, magnitude) per block size s of _BLOCK_KS that the launcher may
    pick, for the operands as given and, where K or N is not a multiple of 8, for the zero-padded
    copies stage_unaligned runs the kernel on (staged True: their padded columns of B wrap into
    the sum too; see STAGING_HINT). None for K = 0 (nothing is multiplied)."""
    import torch

    (m, k), n = a.shape, b.shape[1]
    if 0 in (m, n, k):
        return []
    a64, b64 = a.detach().cpu().double(), b.detach().cpu().double()
    out = []
    for kk, nn in sorted({(k, n), (-(-k // 8) * 8, -(-n // 8) * 8)}):
        for s in _BLOCK_KS:
            tm, tn, steps = -(-m // s), -(-nn // s), -(-kk // s)
            if tm * tn * steps * s ** 3 > _SWAPPED_REPLAY_MAX_WORK:
                continue
            # A's rows and B's columns wrapped to whole tiles, K padded with zeros to whole steps
            at = torch.zeros(tm * s, steps * s, dtype=torch.float64)
            at[:, :k] = a64[torch.arange(tm * s) % m]
            padded_b = torch.zeros(kk, nn, dtype=torch.float64)
            padded_b[:k, :n] = b64
            bt = torch.zeros(steps * s, tn * s, dtype=torch.float64)
            bt[:kk, :] = padded_b[:, torch.arange(tn * s) % nn]

            def tiles(x, y):
                # x (tile row, t, K step, j), y (K step, i, tile col, t) -> C (M, N)
                c = torch.einsum("kipt,mtkj->mpij", y.reshape(steps, s, tn, s),
                                 x.reshape(tm, s, steps, s))  # (tm, tn, s, s)
                return c.permute(0, 2, 1, 3).reshape(tm * s, tn * s)[:m, :n]

            exact, magnitude = tiles(at, bt), tiles(at.abs(), bt.abs())
            if bias is not None:
                bias64 = bias.detach().cpu().double()
                exact, magnitude = exact + bias64, magnitude + bias64.abs()
            if relu:
                exact = exact.clamp_min(0.0)
            out.append((s, (kk, nn) != (k, n), exact.to(a.dtype).double(), magnitude))
    return out


def _dot_b_transposed_tiles(a, b, bias, relu):
    """What the pointer kernel outputs with B's tile transposed in the product (tl.dot(a,
    tl.trans(b), acc), as in attention's Q K^T) where that compiles: BLOCK_K = BLOCK_N = s (any
    BLOCK_M: each row of A is used on its own). Column j of tile column pid_n then sums over the
    K steps k0 and t < s the products A[m, k0 + t] * B[k0 + j, n0 + t]: B's K and N swap roles,
    with the starter's wrapped columns of B ((n0 + t) % N) and the K tail 0 (A's columns and B's
    rows k0 + offs_k >= K masked). One (s, rounded, magnitude) per s of _BLOCK_KS, with the
    contract's epilogue in float64; none for K = 0 or beyond _SWAPPED_REPLAY_MAX_WORK."""
    import torch

    (m, k), n = a.shape, b.shape[1]
    if 0 in (m, n, k):
        return []
    a64, b64 = a.detach().cpu().double(), b.detach().cpu().double()
    out = []
    for s in _BLOCK_KS:
        tn, steps = -(-n // s), -(-k // s)
        if m * tn * steps * s * s > _SWAPPED_REPLAY_MAX_WORK:
            continue
        at = torch.zeros(m, steps * s, dtype=torch.float64)
        at[:, :k] = a64
        bt = torch.zeros(steps * s, tn * s, dtype=torch.float64)
        bt[:k, :] = b64[:, torch.arange(tn * s) % n]

        def tiles(x, y):
            # x (M, K step, t), y (K step, j, tile col, t) -> C (M, N)
            c = torch.einsum("mkt,kjpt->mpj", x.reshape(m, steps, s), y.reshape(steps, s, tn, s))
            return c.reshape(m, tn * s)[:, :n]

        exact, magnitude = tiles(at, bt), tiles(at.abs(), bt.abs())
        if bias is not None:
            bias64 = bias.detach().cpu().double()
            exact, magnitude = exact + bias64, magnitude + bias64.abs()
        if relu:
            exact = exact.clamp_min(0.0)
        out.append((s, exact.to(a.dtype).double(), magnitude))
    return out


def _tiles_stored_transposed(a, b, bias, relu):
    """What the pointer kernel outputs when its store broadcasts the rows along the tile's
    columns and the columns along its rows (rows = offs_m[None, :], cols = offs_n[:, None]),
    where that compiles: square tiles, BLOCK_M = BLOCK_N = s. Each tile is then written
    transposed in place: C[m0 + j, n0 + i] = the tile's (i, j), whose row (m0 + i) % M and column
    (n0 + j) % N are the starter's wrapped ones (a column past N gets no bias: its load is
    masked), stored where m0 + j < M and n0 + i < N. One (s, rounded, magnitude) per s of
    _BLOCK_KS; none for an empty output, or past _SWAPPED_REPLAY_MAX_WORK (one more float64
    product of the whole size: the GPU's first such failure is a small shape whose default
    tiles are not square, where _store_axes_probe names it)."""
    import torch

    (m, k), n = a.shape, b.shape[1]
    if 0 in (m, n) or m * n * k > _SWAPPED_REPLAY_MAX_WORK:
        return []
    a64, b64 = a.detach().cpu().double(), b.detach().cpu().double()
    acc, size = a64 @ b64, a64.abs() @ b64.abs()  # the product alone: the bias goes by column
    if bias is not None:
        bias64 = bias.detach().cpu().double()
    out = []
    rows, cols = torch.arange(m), torch.arange(n)
    for s in _BLOCK_KS:
        if m == n and s >= m:
            # one tile holds a square C: its transpose is C's, what C's strides swapped in the
            # store write too (_store_probe names that); no replay tells the two apart here
            continue
        m0, n0 = rows // s * s, cols // s * s
        src_m = (m0[:, None] + (cols - n0)[None, :]) % m  # the tile row i = c - n0 ...
        src_n = n0[None, :] + (rows - m0)[:, None]  # ... and its column j = r - m0
        inside = src_n < n
        src_n = src_n % n
        value, mag = acc[src_m, src_n], size[src_m, src_n]
        if bias is not None:
            bias_at = torch.where(inside, bias64[src_n], torch.zeros(()).double())
            value, mag = value + bias_at, mag + bias_at.abs()
        if relu:
            value = value.clamp_min(0.0)
        out.append((s, value.to(a.dtype).double(), mag))
    return out


def _tile_pattern(block_m: int, block_n: int):
    """Diagnosis: whole output tiles wrong while other tiles are right (tile order broken)."""

    def diagnose(got, expected, bad):
        m, n = bad.shape
        tm, tn = -(-m // block_m), -(-n // block_n)
        wrong, share = [], []
        for i in range(tm):
            for j in range(tn):
                tile = bad[i * block_m:(i + 1) * block_m, j * block_n:(j + 1) * block_n]
                if bool(tile.any()):
                    wrong.append((i, j))
                    share.append(float(tile.double().mean()))
        if not wrong or len(wrong) == tm * tn or sum(share) / len(share) < 0.25:
            return None
        last_row = {(tm - 1, j) for j in range(tn)}
        last_col = {(i, tn - 1) for i in range(tm)}
        if set(wrong) in (last_row, last_col, last_row | last_col):
            return None  # exactly the tail tiles: a tail problem, not the tile order
        shown = ", ".join(f"({i},{j})" for i, j in wrong[:6]) + (" ..." if len(wrong) > 6 else "")
        return (f"grouped index arithmetic: {len(wrong)} of {tm * tn} output tiles "
                f"({block_m}x{block_n}) are wrong as whole tiles [(tile row, tile col): {shown}] "
                "while the others are right: the tile id -> (pid_m, pid_n) mapping computes some "
                "tiles twice and others never (check num_pid_in_group = GROUP_M * num_pid_n, "
                "group_id, first_pid_m, group_size_m, pid_m and pid_n for an off-by-one)")

    return diagnose


def _compare(ctx, got, a, b, bias, relu, *, name="gemm_bias_relu", tile=None, extra=(),
             first=()):
    """FAIL unless |got - reference| <= tolerance element-wise; name the likely mistake.
    `first`: diagnoses heard before the replayed mistakes (a case built for one mistake, whose
    output another replay also explains: the missing ReLU of relu's wrong default)."""
    import torch

    k = a.shape[1]
    exact, rounded, magnitude = _reference(a, b, bias, relu)
    tol = _tolerance(rounded, magnitude, k, a.dtype)
    got64 = got.detach().cpu().double()
    err = (got64 - rounded).abs()
    err = torch.where(err.isnan(), torch.full_like(err, float("inf")), err)
    # Where the reference itself is not finite (a sum past the dtype's range rounds to inf), its
    # tolerance is inf too and `err > tol` would accept any output: demand the same value there,
    # as compare.assert_close does.
    finite = rounded.isfinite()
    same = (got64 == rounded) | (got64.isnan() & rounded.isnan())
    err = torch.where(finite | ~same, err, torch.zeros_like(err))
    bad = torch.where(finite, err > tol, ~same)
    ratio = torch.where(finite, err / tol,
                        torch.where(bad, float("inf"), 0.0).to(torch.float64))
    worst = int(torch.argmax(ratio.reshape(-1)))
    ctx_max, ctx_tol = float(err.reshape(-1)[worst]), float(tol.reshape(-1)[worst])
    if ctx.max_error is None or ctx_max / ctx_tol > ctx.max_error / max(ctx.tolerance, 1e-300):
        ctx.max_error, ctx.tolerance = ctx_max, ctx_tol  # the worst ratio of all comparisons
    n_bad = int(bad.sum())
    if n_bad == 0:
        return
    idx = tuple(int(i) for i in torch.unravel_index(torch.tensor(worst), bad.shape))
    how_far = (f"|error| {ctx_max:.3g} > {ctx_tol:.3g} (tolerance = "
               f"{_tolerance_formula(bias, a.dtype)}, K = {k})" if bool(finite[idx])
               else "where the reference is not finite and must be matched exactly")
    lines = [f"{name}: {n_bad} of {bad.numel()} elements outside tolerance; worst at index {idx}: "
             f"got {got64[idx].item():.6g}, expected {rounded[idx].item():.6g}, {how_far}"]
    nan_got = int((got64.isnan() & ~rounded.isnan()).sum())
    if nan_got:
        lines.append(f"{nan_got} NaN where the reference is a number")
    never_written = ctx.never_written(got)
    if never_written is not None:
        lines.append(never_written_line(never_written))
    listed = bad.nonzero()[:5].tolist()
    lines.append("first mismatches: " + "; ".join(
        f"{tuple(i)} got {got64[tuple(i)].item():.6g} expected {rounded[tuple(i)].item():.6g}"
        for i in listed))
    # Which classic mistake explains the output best? (all computed exactly, see _mistakes.)
    # A mistake that reproduces the output is the most specific hint, so it goes first; the
    # checks' own diagnoses (patterns of wrong tiles, strides) speak only when none does.
    acc = a.detach().cpu().double() @ b.detach().cpu().double()
    truncate = ctx.device == "interpreter"
    hint, best_share = "", (~bad).double().mean().item()
    for diagnose in first:
        hint = diagnose(got64, rounded, bad) or ""
        if hint:
            best_share = 2.0  # nothing below replaces it
            break
    def prefer(share: float, text: str) -> None:
        """Take `text` as the hint when its replay explains >= 90% of the output and clearly
        more than the best so far."""
        nonlocal hint, best_share
        if share >= 0.9 and share > best_share + 0.05:
            hint, best_share = text, share

    by_row = None  # the bias-by-row replay: each tile stored transposed may equal it
    # First: nothing summed over K, the output K = 0 gives (relu(bias), the bias or zeros).
    # With K = 1 that is the K mask one short (it drops the only position), and on such small
    # problems several replays below reproduce it by chance (relu(acc) + bias where acc < 0;
    # tl.dot's operands swapped, zero but for one element): named first, with any such twin.
    if k > 0:
        _, zero_k, _ = _reference(a[:, :0], b[:0, :], bias, relu)
        prefer((((got64 - zero_k).abs() <= tol) | (got64 == zero_k)).double().mean().item(),
               f"{NOTHING_SUMMED}: the output is what K = 0 gives ("
               + ("relu(bias)" if bias is not None and relu else "the bias" if bias is not None
                  else "zeros") + f" in every row) though K = {k}: every K position was masked "
               "off or the K loop never ran" + (" (with K = 1, a K mask one short, offs_k < K - "
                                                "k0 - 1, drops the only position)" if k == 1 else ""))
    full = []  # the hints of the replays that explain every output: see below the diagnoses
    for text, candidate in _mistakes(a, b, bias, relu, acc, truncate):
        # Equal values agree even where they are infinite (inf - inf is NaN): float16's
        # overflow replayed is inf.
        share = (((got64 - candidate).abs() <= tol) | (got64 == candidate)).double().mean().item()
        prefer(share, text)
        if text.startswith(BIAS_BY_ROW):
            by_row = candidate
        if share == 1.0:
            full.append(text)
    if hint.startswith(NOTHING_SUMMED):
        # its twins: the first replay above that gives this output too, and (zeros where every
        # result is tiny) what a flush of small results to zero gives
        flushed = _flushed(got64, rounded, bad)
        for twin in full[:1] + ([flushed] if flushed else []):
            hint += "; or, the same output here, " + twin
    # The same for mistakes whose output has its own magnitude (so its own tolerance): the
    # accumulator overwritten or added twice at each K step, the K tail loaded as ones, and bfloat16
    # multiplied as raw bits under the interpreter (the DOT_IN_FP32 upcast left out).
    for start, bks, candidate, cand_magnitude in _last_k_step(a, b, bias, relu):
        shown = " or ".join(str(bk) for bk in bks)
        prefer(_share_within(got64, candidate, cand_magnitude, k - start, a.dtype),
               f"accumulator not carried across K steps: the output matches the last K step "
               f"alone (K positions {start}..{k - 1} of K = {k}, block_k = {shown}); "
               "acc = tl.dot(a, b, acc) adds each K block's product to the running sum, "
               "acc = tl.dot(a, b) keeps only the last block")
    for bk, steps, candidate, cand_magnitude in _relu_every_k_step(a, b, bias, relu):
        prefer(_share_within(got64, candidate, cand_magnitude, k, a.dtype),
               f"{RELU_IN_K_LOOP}: the output matches max(acc, 0) taken after each of the "
               f"{steps} K steps' products (block_k = {bk}), so a partial sum's negative part "
               "is dropped before the later steps add to it; the ReLU belongs to the epilogue: "
               "once, after the whole K loop and the bias (when APPLY_RELU)")
    for bk, steps, candidate, cand_magnitude in _acc_added_twice(a, b, bias, relu):
        prefer(_share_within(got64, candidate, cand_magnitude, k, a.dtype),
               f"accumulator added twice: the output matches each K step doubling the running "
               f"sum before adding its product (sum over the {steps} steps s of "
               f"2^({steps - 1} - s) * A_s B_s, block_k = {bk}; with one K step it is right); "
               "tl.dot(a, b, acc) already returns acc + a @ b, so acc += tl.dot(a, b, acc) "
               "adds acc twice: write acc = tl.dot(a, b, acc)")
    step_keep = None  # the columns the k0 * BLOCK_K replay named (if it did) keeps
    for bk, keep, candidate, cand_magnitude in _k_mask_step_times_block(a, b, bias, relu):
        before = hint
        prefer(_share_within(got64, candidate, cand_magnitude, k, a.dtype),
               f"K mask with k0 * BLOCK_K: the output matches the sum over K positions "
               f"{_spans(keep)} only (K = {k}, block_k = {bk}), what offs_k < K - k0 * BLOCK_K "
               "keeps: k0 runs over range(0, K, BLOCK_K), so it is already the element offset of "
               "the step, and k0 * BLOCK_K masks off every later step; the mask is "
               "offs_k < K - k0")
        if hint != before:
            step_keep = keep
    last_dropped = _k_last_dropped(a, b, bias, relu)
    if last_dropped is not None:
        text = (f"{K_LAST_DROPPED}: the output matches the sum over K positions 0..{k - 2} "
                f"(K = {k}): position K - 1 alone is left out, what offs_k < K - k0 - 1 masks "
                "in the last K step (lane j of the step at k0 holds position k0 + j, which "
                "exists while k0 + j < K); the mask is offs_k < K - k0")
        # K = block_k + 1: the k0 * BLOCK_K mask keeps 0..K-2 too, the same output.
        if step_keep is not None and bool(step_keep[:-1].all()) and not bool(step_keep[-1]):
            hint += "; or, the same output here, " + text
        prefer(_share_within(got64, last_dropped[0], last_dropped[1], k - 1, a.dtype), text)
    # The tenth learner audit: the K mask bounded by N (or M), offs_k < N - k0: lane j of the
    # step at k0 holds position k0 + j, kept while it is below N, so where N < K the output is
    # the sum over positions 0..N-1 (where N > K the last step reads past K: under the
    # interpreter its bounds check stops the load, "tail not masked").
    bounds: dict[int, str] = {}
    for name_, size in (("N", b.shape[1]), ("M", a.shape[0])):
        bounds[size] = f"{bounds[size]} or {name_}" if size in bounds else name_
    for size, bound in sorted(bounds.items()):
        if 0 < size < k:
            _, candidate, cand_magnitude = _reference(a[:, :size], b[:size, :], bias, relu)
            prefer(_share_within(got64, candidate, cand_magnitude, size, a.dtype),
                   f"K mask bounded by {bound}: the output matches the sum over K positions "
                   f"0..{size - 1} only ({bound} = {size}, K = {k}), what offs_k < {bound} - k0 "
                   "keeps; the K tail's bound is K: offs_k < K - k0")
    for bk, keep, candidate, cand_magnitude in _k_mask_mod(a, b, bias, relu):
        prefer(_share_within(got64, candidate, cand_magnitude, k, a.dtype),
               f"K mask with K % BLOCK_K: the output matches the sum over K positions "
               f"{_spans(keep)} only (K = {k}, block_k = {bk}), what offs_k < K % BLOCK_K keeps: "
               "it cuts every K step to the tail's length, not only the last one; the lanes that "
               "exist are those with k0 + offs_k < K, i.e. offs_k < K - k0")
    for start, kk, bks, candidate, cand_magnitude in _k_tail_ones(a, b, bias, relu):
        shown = " or ".join(str(bk) for bk in bks)
        staged = f", staged to {start}" if start > k else ""
        prefer(_share_within(got64, candidate, cand_magnitude, kk, a.dtype),
               f"K tail loaded as 1 (other=1.0): the output matches A and B padded with ones "
               f"up to K = {kk} (K = {k}{staged}, block_k = {shown}): each of the "
               f"{kk - start} masked k of the last step adds a 1 * 1 product to every "
               "output; load the masked lanes with other=0.0 on both loads (0 adds nothing "
               "to a dot product)")
    if truncate and a.dtype == torch.bfloat16 and k > 0:
        candidate, cand_magnitude = _raw_bf16_product(a, b, bias, relu)
        prefer(_share_within(got64, candidate, cand_magnitude, k, a.dtype),
               "bfloat16 multiplied as raw bits: the output matches Triton's interpreter "
               "multiplying the bfloat16 bit patterns as 16-bit integers (it stores bfloat16 "
               "as uint16); if DOT_IN_FP32, upcast both tiles to float32 before tl.dot "
               "(exact, see the module docstring)")
    # tl.dot(b, a, acc): it compiles only on square tiles, where it multiplies B's tile by A's
    # (elsewhere the call stops at tl.dot's shapes and _dot_swapped_probe names it).
    for size, staged, candidate, cand_magnitude in _dot_swapped_tiles(a, b, bias, relu):
        prefer(_share_within(got64, candidate, cand_magnitude, k, a.dtype),
               "tl.dot operands swapped: the output matches tl.dot(b, a, acc) on square tiles "
               f"(BLOCK_M = BLOCK_N = BLOCK_K = {size}, where it compiles"
               f"{', on the staged copies' if staged else ''}): each K step adds B's tile "
               "times A's tile, B_tile @ A_tile, instead of A_tile @ B_tile; tl.dot(a, b, acc) "
               "takes A's (BLOCK_M, BLOCK_K) tile first, then B's (BLOCK_K, BLOCK_N)")
    # tl.dot(a, tl.trans(b), acc) (the seventh learner audit's 06): it compiles where BLOCK_K =
    # BLOCK_N (elsewhere the call stops at tl.dot's shapes and _dot_swapped_probe names it).
    for size, candidate, cand_magnitude in _dot_b_transposed_tiles(a, b, bias, relu):
        prefer(_share_within(got64, candidate, cand_magnitude, k, a.dtype),
               f"{DOT_B_TRANSPOSED}: the output matches tl.dot(a, tl.trans(b), acc) on tiles "
               f"with BLOCK_K = BLOCK_N = {size} (where it compiles): each K step multiplies A's "
               "tile by B's tile transposed; B's (BLOCK_K, BLOCK_N) tile is already laid out "
               "for A_tile @ B_tile: tl.dot(a, b, acc) (only attention's K is transposed)")
    # rows = offs_m[None, :], cols = offs_n[:, None] in the store (the seventh learner audit's
    # 07): it compiles on square tiles, each then written transposed in place (elsewhere the
    # shapes do not broadcast and _store_axes_probe names it).
    for size, candidate, cand_magnitude in _tiles_stored_transposed(a, b, bias, relu):
        text = (f"{TILE_TRANSPOSED}: the output matches every {size}x{size} tile written "
                "transposed in place (where BLOCK_M = BLOCK_N, so the store compiles), as rows = "
                "offs_m[None, :] and cols = offs_n[:, None] do; the tile's rows run down C: "
                "rows = offs_m[:, None], cols = offs_n[None, :] (and the mask from them)")
        # With K = 0 and C inside one tile, C[r, c] = bias[r] both ways (0 past N): the
        # transposed tile writes its element (c, r), bias[r], at C[r, c]. The replays are then
        # one output, so the hint that came first (bias by row) names this one as its twin
        # (once: every tile size that holds C says the same).
        if (hint.startswith(BIAS_BY_ROW) and TILE_TRANSPOSED not in hint and by_row is not None
                and _share_within(by_row, candidate, cand_magnitude, k, a.dtype) == 1.0):
            hint += "; or, the same output here, " + text
        prefer(_share_within(got64, candidate, cand_magnitude, k, a.dtype), text)
    diagnoses = list(extra)
    if tile is not None:
        diagnoses.append(_tile_pattern(*tile))
    if not hint:
        for diagnose in diagnoses:
            hint = diagnose(got64, rounded, bad) or ""
            if hint:
                break
    # The bias rounded to the operand dtype moves each output by at most half a unit of the
    # bias's last place: on ordinary inputs most outputs stay within tolerance, so the rule
    # above (clearly more than the right answer explains) cannot hear it. Where nothing else
    # spoke and its replay alone explains every output, wrong ones included, it is named (not
    # where another replay does too: the accumulator rounded first can look the same).
    if not hint and len(full) == 1 and full[0].startswith(BIAS_ROUNDED):
        hint = full[0]
    if not hint and never_written is not None:
        hint = never_written_hint(never_written)
    raise CheckFailed("\n".join(lines), hint=hint, max_error=ctx_max, tolerance=ctx_tol)


# ---------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------
def _dtype(name):
    import torch

    return getattr(torch, name)


def _operand(ctx, rows: int, cols: int, dtype: str, layout: str = "row", scale: float = 1.0):
    """A (rows, cols) operand with the given memory layout (values from ctx.randn).

    row: contiguous. col: a transposed view (unit stride along the rows). slice: every other row
    of a wider tensor, starting 3 columns in (row stride 2 * (cols + 5), base not 16-byte
    aligned): strides that neither a copy-free TMA descriptor nor a contiguous kernel can use.
    broadcast: one row expand()ed to all rows (row stride 0: every row is the same memory).
    """
    if layout == "row":
        return ctx.randn((rows, cols), dtype, scale=scale)
    if layout == "col":
        return ctx.randn((cols, rows), dtype, scale=scale).t()
    if layout == "slice":
        parent = ctx.randn((2 * rows + 1, cols + 5), dtype, scale=scale)
        return parent[1::2, 3:3 + cols]
    if layout == "broadcast":
        return ctx.randn((1, cols), dtype, scale=scale).expand(rows, cols)
    raise ValueError(f"unknown layout {layout!r}")


def _bias(ctx, n: int, present: bool, scale: float = 1.0):
    return ctx.randn((n,), "float32", scale=scale) if present else None


def _note_upcast(ctx, dtype: str) -> None:
    if ctx.device == "interpreter" and dtype == "bfloat16":
        ctx.note(UPCAST_NOTE)


def _call(ctx, impl, a, b, bias, relu, knobs):
    m, n = a.shape[0], b.shape[1]
    return ctx.call(impl.gemm_bias_relu, a, b, bias, relu=relu, expect_shape=(m, n),
                    expect_dtype=a.dtype, expect_contiguous=True, name="gemm_bias_relu",
                    **knobs)


def _mentions_none_or_compile(exc) -> bool:
    """The failure names NoneType somewhere in its chain of causes, or Triton could not compile
    the kernel (on a GPU the outer CompilationError shows only the line of the call into
    _epilogue; measured in the thirty-first session's GPU zoo)."""
    seen, link = [exc.message], exc.__cause__
    while link is not None and len(seen) < 8:
        seen.append(f"{type(link).__name__}: {link}")
        link = link.__cause__ or link.__context__
    return any("NoneType" in text or "CompilationError" in text for text in seen)


def _bias_guard_hint(ctx, impl, a, b, bias, relu, knobs, exc) -> str:
    """Diagnosis of a call without a bias that raised: is the bias loaded without `if HAS_BIAS:`?
    The launcher passes bias_ptr=None then, and loading through None raises an AttributeError or
    TypeError about NoneType (under the interpreter "AttributeError: 'NoneType' object has no
    attribute 'type'"; on a GPU the CompilationError that wraps it names NoneType too). Asked of
    the learner's code: the same call with a bias of zeros (the same output) must run; if it
    fails too, the error is not about the missing bias."""
    if bias is not None or not _mentions_none_or_compile(exc):
        return ""
    zeros = ctx.torch.zeros(b.shape[1], dtype=ctx.torch.float32, device=a.device)
    try:
        _call(ctx, impl, a, b, zeros, relu, knobs)
    except CheckFailed:
        return ""
    return ("bias loaded without `if HAS_BIAS:`: with bias=None the launcher passes "
            "bias_ptr=None (and HAS_BIAS=False), and loading through it raises the error above; "
            "the same call with a bias of zeros runs. Guard the bias load and the add with "
            "`if HAS_BIAS:` (a tl.constexpr, so the unused branch is never compiled)")


def _run(ctx, impl, a, b, bias, relu, **knobs):
    """gemm_bias_relu(a, b, bias, relu=relu, **knobs) through ctx.call. A call that fails (an
    error, a load the interpreter's bounds check stopped) or leaves elements unwritten is
    asked whether the grouped tile order is what went wrong (_order_hint, _unreached_tiles)."""
    with launches.recording() as launched:
        try:
            out = _call(ctx, impl, a, b, bias, relu, knobs)
        except CheckFailed as exc:
            hint = (_bias_guard_hint(ctx, impl, a, b, bias, relu, knobs, exc)
                    or _order_hint(ctx, impl, a, b, bias, relu, knobs, launched[:1], None))
            if not hint:
                _probe_failure(ctx, impl, exc, launched[:1])
                raise
            raise CheckFailed(exc.message, hint=hint) from exc.__cause__
    unwritten = ctx.never_written(out)
    if unwritten is not None:
        hint = (_mask_bound_hint(unwritten)
                or _order_hint(ctx, impl, a, b, bias, relu, knobs, launched[:1], unwritten)
                or _group_size_max_hint(ctx, impl, launched[:1], unwritten)
                # a slip of _tile_coords that one band does not mend (group_size_m = GROUP_M:
                # _order_hint's call with a single band fails too), named by its exact order;
                # _unreached_hint asks the same where whole tiles were never reached
                or _unreached_hint(ctx, impl, launched[:1], unwritten)
                or _coords_mistake_hint(ctx, impl)
                or _tile_id_ignored_hint(ctx, impl))
        if hint:
            shown = ", ".join(f"{name}={value!r}" for name, value in knobs.items())
            raise CheckFailed(f"gemm_bias_relu({shown}): {never_written_line(unwritten)}",
                              hint=hint)
    return out


def _mask_bound_hint(unwritten) -> str:
    """Diagnosis of a call that left the elements `unwritten` unwritten: are they exactly the
    columns >= M (M < N), as a store mask cols < M leaves them, or the rows >= N (M > N)?"""
    import torch

    m, n = unwritten.shape
    mask = unwritten.to("cpu").bool()
    if m < n and torch.equal(mask, (torch.arange(n) >= m)[None, :].expand(m, n)):
        which, bound = "columns", "M"
    elif m > n and torch.equal(mask, (torch.arange(m) >= n)[:, None].expand(m, n)):
        which, bound = "rows", "N"
    else:
        return ""
    return (f"store mask compares {which} with {bound}: the elements never written are exactly "
            f"the {which} >= {bound} = {min(m, n)} (C is {m} x {n}); mask rows < M and cols < N: "
            "c_mask = (rows < M) & (cols < N)")


def _unreached_tiles(launched, unwritten) -> str:
    """Diagnosis of a call that left the elements `unwritten` unwritten: are they exactly whole
    output tiles of the launch (BLOCK_M x BLOCK_N of the reference's argument names), some of
    the tiles but not all, while the grid had a program for every tile? A store missing leaves
    every tile, a store mask too narrow parts of tiles, a grid stopping short has too few programs
    (and a persistent grid loops over its tiles, so it is not judged): what is left is a tile
    id -> (pid_m, pid_n) mapping that sends some programs to the same tile (or outside the
    tile grid, where the masked store writes nothing) and none to others."""
    args = launched[0].arguments if launched else {}
    names = ("M", "N", "BLOCK_M", "BLOCK_N")
    if not all(type(args.get(name)) is int for name in names) or not launched[0].grid:
        return ""
    m, n, bm, bn = (args[name] for name in names)
    rows, cols = unwritten.shape
    if rows > m or cols > n or rows < m - bm or cols < n - bn or bm <= 0 or bn <= 0:
        return ""  # the launch computed another matrix
    # The output is the launch's matrix, or its top-left corner (stage_unaligned's copies pad N
    # to a multiple of 8 and the output drops those columns): judge the tiles it shows.
    tm, tn = -(-m // bm), -(-n // bn)
    tiles = tm * tn
    if launched[0].grid[0] < tiles:
        return ""
    left = sorted({(i // bm, j // bn) for i, j in unwritten.nonzero().tolist()})
    if not left or len(left) == -(-rows // bm) * -(-cols // bn):
        return ""
    whole = all(bool(unwritten[i * bm:(i + 1) * bm, j * bn:(j + 1) * bn].all()) for i, j in left)
    if not whole:
        return ""
    shown = ", ".join(f"({i},{j})" for i, j in left[:6]) + (" ..." if len(left) > 6 else "")
    return (f"grouped index arithmetic: whole output tiles never written ({len(left)} of the "
            f"{tm} x {tn} tiles of {bm}x{bn}) [(tile row, tile col): {shown}], though the grid "
            f"launched {launched[0].grid[0]} programs for {tiles} tiles: the tile id -> "
            "(pid_m, pid_n) mapping reaches some tiles twice (or outside the tile grid) and "
            "others never. Inside a band the ids run down a column of "
            "group_size_m tiles: pid_m = first_pid_m + local % group_size_m, pid_n = local // "
            "group_size_m (check num_pid_in_group = GROUP_M * num_pid_n, group_id, "
            "first_pid_m, group_size_m, pid_m and pid_n)")


def _unreached_hint(ctx, impl, launched, unwritten) -> str:
    """_unreached_tiles' diagnosis, and where it finds whole tiles unreached, the named slip
    whose order the learner's _tile_coords gives exactly on order.grouped's grids (an exact
    replay, so it goes first; pid_m and pid_n swapped leaves tiles unwritten even in one band,
    where _order_hint cannot ask)."""
    found = _unreached_tiles(launched, unwritten)
    if not found:
        return ""
    named = _coords_mistake_hint(ctx, impl)
    return f"{named} (here {found.split(': ', 1)[1].split(', though')[0]})" if named else found


def _grouped_replay(tm: int, tn: int, group_m: int, group_div: int, band: int,
                    band_step: int | None = None):
    """Replay of the grouped order with group_id = tile_id // group_div and local = tile_id %
    band (the reference divides both by num_pid_in_group = GROUP_M * num_pid_n), in Triton's
    integer arithmetic (// and % truncate toward zero, as in C), bands starting band_step tile
    rows apart (first_pid_m = group_id * band_step; GROUP_M unless given). Returns (pid_m, pid_n)
    per tile id of the tm x tn grid, None for a band of no rows (a division by zero)."""

    def div(x, y):
        q = abs(x) // abs(y)
        return q if (x < 0) == (y < 0) else -q

    pids = []
    for t in range(tm * tn):
        first = (t // group_div) * (group_m if band_step is None else band_step)
        size = min(tm - first, group_m)  # negative or 0 past the last band
        local = t % band
        if size == 0:
            pids.append(None)
            continue
        pids.append((first + local - div(local, size) * size, div(local, size)))
    return pids


def _missed_and_outside(pids, tm: int, tn: int):
    """(missed, outside) of a replayed order: the tiles (pid_m, pid_n) of the tm x tn grid that
    no tile id reaches, and the tile ids sent outside the grid as (tile_id, (pid_m, pid_n)), or
    (tile_id, None) for a band of no rows."""
    reached, outside = set(), []
    for t, pid in enumerate(pids):
        if pid is not None and 0 <= pid[0] < tm and 0 <= pid[1] < tn:
            reached.add(pid)
        else:
            outside.append((t, pid))
    missed = [(i, j) for i in range(tm) for j in range(tn) if (i, j) not in reached]
    return missed, outside


def _band_by_group_m(tm: int, tn: int, group_m: int):
    """Replay of the grouped order with the band index taken as tile_id // GROUP_M (a band
    holds GROUP_M * num_pid_n tiles, so it is tile_id // num_pid_in_group). Returns (missed,
    outside) as _missed_and_outside does."""
    return _missed_and_outside(_grouped_replay(tm, tn, group_m, group_m, group_m * tn), tm, tn)


def _band_of_num_pid_m(tm: int, tn: int, group_m: int):
    """The order a band counted as num_pid_in_group = GROUP_M * num_pid_m tiles gives (a band
    is GROUP_M tile rows of num_pid_n tiles each): pid per tile id, as _grouped_replay."""
    return _grouped_replay(tm, tn, group_m, group_m * tm, group_m * tm)


def _band_start_unscaled(tm: int, tn: int, group_m: int):
    """The order first_pid_m = group_id (bands one tile row apart instead of GROUP_M) gives:
    (missed, outside) as _missed_and_outside."""
    return _missed_and_outside(_grouped_replay(tm, tn, group_m, group_m * tn, group_m * tn, 1),
                               tm, tn)


# Found by the sixth learner audit (B, its 01): the band's first tile row taken as group_id.
BAND_START_UNSCALED = ("bands start GROUP_M tile rows apart: first_pid_m = group_id * GROUP_M "
                       "(group_id counts bands, first_pid_m is a tile row)")


def _band_start_unscaled_order(tm: int, tn: int, group_m: int):
    """The order first_pid_m = group_id gives: (pid_m, pid_n) per tile id, as _grouped_replay."""
    return _grouped_replay(tm, tn, group_m, group_m * tn, group_m * tn, 1)


def _coords_contradict(ctx, impl, replay) -> bool:
    """Whether the module's _tile_coords, asked on every grid of order.grouped, gives an order
    other than `replay(tm, tn, group_m)` on one of them (False when it cannot be asked)."""
    for case in _order_cases(ctx.device):
        order = _tile_coords_order(ctx, impl, *case.grid)
        if order is None:
            return False
        if order != replay(*case.grid):
            return True
    return False


def _group_size_max(tm: int, tn: int, group_m: int):
    """The order group_size_m = max(num_pid_m - first_pid_m, GROUP_M) gives (tl.maximum for
    tl.minimum): every band but the last as tall as all the tile rows left, the last one
    GROUP_M rows. (pid_m, pid_n) per tile id, as _grouped_replay."""
    pids = []
    for t in range(tm * tn):
        first = t // (group_m * tn) * group_m
        size = max(tm - first, group_m)
        local = t % (group_m * tn)
        pids.append((first + local % size, local // size))
    return pids


# Found by the seventh learner audit (its 01): the band's height with tl.maximum.
GROUP_SIZE_MAX = ("group_size_m = tl.maximum(num_pid_m - first_pid_m, GROUP_M): a band is at "
                  "most GROUP_M tile rows tall (the last one may be shorter), so group_size_m = "
                  "tl.minimum(num_pid_m - first_pid_m, GROUP_M); with the maximum every band but "
                  "the last spans all the tile rows left and the last one runs past the grid")


# Found by the eighth learner audit: a band's tile row or column computed from the wrong base
# (first_pid_m left out of pid_m; tile_id for local in pid_n). Their hints were the generic
# grouped-order ones, and knobs.blocks named num_pid_in_group = GROUP_M * num_pid_m, whose
# replay misses the same tiles on one of its grids.
PID_M_WITHOUT_FIRST = ("pid_m without first_pid_m: pid_m = local % group_size_m counts rows from "
                       "the band's top, so every band lands on tile rows 0..GROUP_M-1 and the "
                       "rows below are never computed; pid_m = first_pid_m + local % "
                       "group_size_m")
PID_N_FROM_TILE_ID = ("pid_n from tile_id, not local: pid_n = tile_id // group_size_m keeps "
                      "counting across the bands, so every band after the first runs past the "
                      "last tile column; the column inside a band is pid_n = local // "
                      "group_size_m (local = tile_id % num_pid_in_group)")


# The tenth learner audit: the last band's height not clamped to the tile rows left below the
# band's first row. group_size_m = GROUP_M, tl.minimum(num_pid_m, GROUP_M) and
# tl.minimum(num_pid_m - group_id, GROUP_M) give every band GROUP_M rows wherever there are two
# bands or more (num_pid_m - group_id >= GROUP_M there), so one hint names them all; the first
# differs from the other two only with one band taller than the grid. Their hint was the band
# start's (first_pid_m = group_id * GROUP_M), whose replay misses the same tiles.
_LAST_BAND = ("the last band taken GROUP_M tile rows tall where fewer remain: group_size_m is "
              "the rows left below the band's first row, tl.minimum(num_pid_m - first_pid_m, "
              "GROUP_M); ")
GROUP_SIZE_UNCLAMPED = (_LAST_BAND + "_tile_coords gives the order of group_size_m = GROUP_M "
                        "(on a grid of two bands or more, tl.minimum(num_pid_m, GROUP_M) and "
                        "tl.minimum(num_pid_m - group_id, GROUP_M) give it too)")
GROUP_SIZE_WITHOUT_FIRST = (_LAST_BAND + "_tile_coords gives the order of group_size_m = "
                            "tl.minimum(num_pid_m, GROUP_M) or tl.minimum(num_pid_m - group_id, "
                            "GROUP_M) (the same order)")


# Found by the tenth learner audit: the position inside the band taken as tile_id % GROUP_M (its
# hint, where the tiles it misses were those of group_id = tile_id // GROUP_M, named that), the
# band's height without its minimum with GROUP_M (the generic grouped-order hint, and
# knobs.blocks named num_pid_in_group = GROUP_M * num_pid_m), and pid_m and pid_n swapped (the
# generic "whole output tiles never written").
LOCAL_MOD_GROUP_M = ("local = tile_id % GROUP_M: the position inside a band runs over the band's "
                     "GROUP_M * num_pid_n tiles, so local = tile_id % num_pid_in_group; modulo "
                     "GROUP_M every band stays in its first tile column (or first few), and the "
                     "others are never computed")
GROUP_SIZE_NO_MIN = ("group_size_m = num_pid_m - first_pid_m without the minimum with GROUP_M: "
                     "every band but the last then spans all the tile rows left, so the ids of "
                     "a band run down columns taller than the band and the bands overlap; "
                     "group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)")
PID_MN_SWAPPED = ("pid_m and pid_n swapped: inside a band the ids run down a column, so the tile "
                  "row is pid_m = first_pid_m + local % group_size_m and the tile column pid_n = "
                  "local // group_size_m; swapped, each id lands on its tile's mirror (row and "
                  "column exchanged), so some tiles are computed twice or fall outside the grid "
                  "and others are never computed")


def _coords_mistakes(tm: int, tn: int, group_m: int):
    """(hint, order) of the _tile_coords mistakes above on a tm x tn grid: (pid_m, pid_n) per
    tile id, as _grouped_replay."""
    out = {PID_M_WITHOUT_FIRST: [], PID_N_FROM_TILE_ID: [], GROUP_SIZE_UNCLAMPED: [],
           GROUP_SIZE_WITHOUT_FIRST: [], LOCAL_MOD_GROUP_M: [], PID_MN_SWAPPED: [],
           GROUP_SIZE_NO_MIN: []}
    for t in range(tm * tn):
        first = t // (group_m * tn) * group_m
        size = min(tm - first, group_m)
        local = t % (group_m * tn)
        out[PID_M_WITHOUT_FIRST].append((local % size, local // size))
        out[PID_N_FROM_TILE_ID].append((first + local % size, t // size))
        out[GROUP_SIZE_UNCLAMPED].append((first + local % group_m, local // group_m))
        tall = min(tm, group_m)
        out[GROUP_SIZE_WITHOUT_FIRST].append((first + local % tall, local // tall))
        out[LOCAL_MOD_GROUP_M].append((first + t % group_m % size, t % group_m // size))
        out[PID_MN_SWAPPED].append((local // size, first + local % size))
        out[GROUP_SIZE_NO_MIN].append((first + local % (tm - first), local // (tm - first)))
    return list(out.items())


def _coords_mistake_hint(ctx, impl) -> str:
    """Diagnosis: does the learner's _tile_coords, asked on every grid of order.grouped, give
    exactly the order one of _coords_mistakes gives (and not the right one)? The hint names it;
    "" otherwise (or when _tile_coords cannot be asked)."""
    cases = [case.grid for case in _order_cases(ctx.device)]
    orders = [_tile_coords_order(ctx, impl, *grid) for grid in cases]
    if None in orders:
        return ""
    for i, (text, _) in enumerate(_coords_mistakes(*cases[0])):
        replays = [_coords_mistakes(*grid)[i][1] for grid in cases]
        rights = [_grouped_replay(tm, tn, g, g * tn, g * tn) for tm, tn, g in cases]
        if orders == replays and replays != rights:
            return (f"grouped index arithmetic: {text}; _tile_coords gives exactly the order "
                    "this mistake gives on order.grouped's grids")
    return ""


def _tile_coords_order(ctx, impl, tm: int, tn: int, group_m: int):
    """The learner's _tile_coords(t, tm, tn, GROUP_M) for every tile id t, asked in the probe
    kernel of order.grouped: a list of (pid_m, pid_n), or None when it cannot be asked."""
    from checks.context import call_learner

    coords = getattr(impl, "_tile_coords", None)
    if coords is None or not callable(coords):
        return None
    try:
        kernel = _order_probe(coords)
        out = ctx.torch.full((2 * tm * tn,), -1, dtype=ctx.torch.int32, device=ctx.torch_device)
        call_learner(lambda: kernel[(tm * tn,)](out, tm, tn, GROUP_M=group_m))
    except Exception:  # noqa: BLE001 - any failure: the helper cannot be asked
        return None
    return [tuple(p) for p in out.cpu().view(tm * tn, 2).tolist()]


def _group_size_max_hint(ctx, impl, launched, unwritten) -> str:
    """Diagnosis of a call that left whole tiles unwritten: does group_size_m take the maximum?
    Its replay for the launch's grid must miss exactly the tiles left unwritten, and the
    learner's _tile_coords, asked on order.grouped's grids, must give exactly the replay's
    order there (which tells it from GROUP_M unclamped, the same on a grid of one short band)."""
    args = launched[0].arguments if launched else {}
    names = ("M", "N", "BLOCK_M", "BLOCK_N", "GROUP_M")
    if not all(type(args.get(name)) is int for name in names) or not launched[0].grid:
        return ""
    m, n, bm, bn, group_m = (args[name] for name in names)
    if min(bm, bn, group_m) <= 0:
        return ""
    tm, tn = -(-m // bm), -(-n // bn)
    if launched[0].grid[0] != tm * tn or tm * tn > 1 << 12 or unwritten.shape != (m, n):
        return ""
    left = {(i // bm, j // bn) for i, j in unwritten.nonzero().tolist()}
    missed, _ = _missed_and_outside(_group_size_max(tm, tn, group_m), tm, tn)
    if not missed or set(missed) != left:
        return ""
    for case in _order_cases(ctx.device):
        if _tile_coords_order(ctx, impl, *case.grid) != _group_size_max(*case.grid):
            return ""
    shown = ", ".join(f"({i},{j})" for i, j in missed[:6]) + (" ..." if len(missed) > 6 else "")
    return (f"grouped index arithmetic: {GROUP_SIZE_MAX}. Replayed for this launch ({tm} x {tn} "
            f"tiles, GROUP_M = {group_m}) it never computes tiles [(tile row, tile col): {shown}]: "
            "exactly the tiles left unwritten, and _tile_coords gives exactly its order on "
            "order.grouped's grids")


def _which_band_mistake(ctx, impl, a, b, bias, relu, knobs, grid) -> str:
    """"start" (first_pid_m = group_id), "band" (num_pid_in_group = GROUP_M * num_pid_m) or
    "neither" by the same call with the first group_m whose two replays miss different tiles,
    compared with the tiles that call leaves unwritten; "" when it cannot ask (no such group_m,
    or the call fails). `grid`: (tm, tn, bm, bn)."""
    tm, tn, bm, bn = grid
    for group_m in range(1, min(tm * tn, 17)):
        start = set(_band_start_unscaled(tm, tn, group_m)[0])
        band = set(_missed_and_outside(_band_of_num_pid_m(tm, tn, group_m), tm, tn)[0])
        if start == band:
            continue
        try:
            again = _call(ctx, impl, a, b, bias, relu, dict(knobs, group_m=group_m))
        except CheckFailed:
            return ""
        unwritten = ctx.never_written(again)
        left = (set() if unwritten is None
                else {(i // bm, j // bn) for i, j in unwritten.nonzero().tolist()})
        return "start" if left == start else "band" if left == band else "neither"
    return ""


# Found by the fifth learner audit: a band counted as GROUP_M * num_pid_m tiles.
BAND_OF_NUM_PID_M = ("num_pid_in_group = GROUP_M * num_pid_m: a band holds GROUP_M tile rows "
                     "of num_pid_n tiles each, so num_pid_in_group = GROUP_M * num_pid_n (it "
                     "sets both group_id = tile_id // num_pid_in_group and local = tile_id % "
                     "num_pid_in_group)")


def _order_hint(ctx, impl, a, b, bias, relu, knobs, launched, unwritten) -> str:
    """Diagnosis of a call that raised (unwritten None) or left the elements `unwritten`
    unwritten: is the grouped tile order at fault? Asked of the learner's code: the same call
    with group_m = the number of tiles (one band holding every tile row, where the band index
    is 0 whatever it is computed as) must then run and write every element. Then replay
    tile_id // GROUP_M for the launch: if it misses exactly the tiles left unwritten (or sends
    tile ids before the grid's start, where a load of the operands faults), name it."""
    args = launched[0].arguments if launched else {}
    names = ("M", "N", "BLOCK_M", "BLOCK_N", "GROUP_M")
    if not all(type(args.get(name)) is int for name in names):
        return ""  # not a launch of the reference's argument names
    m, n, bm, bn, group_m = (args[name] for name in names)
    tm, tn = -(-m // bm), -(-n // bn)
    tiles = tm * tn
    if tiles <= group_m or tiles > 1 << 16:
        return ""  # already one band (or more tiles than group_m may be)
    try:
        again = _call(ctx, impl, a, b, bias, relu, dict(knobs, group_m=tiles))
    except CheckFailed:
        return ""
    if ctx.never_written(again) is not None:
        return ""
    what = "raised" if unwritten is None else f"left {int(unwritten.sum())} elements unwritten"
    seen = (f"launched with GROUP_M = {group_m} the call {what}, but with group_m={tiles} (one "
            f"band: every tile row of the {tm} x {tn} grid of {bm}x{bn} tiles) it runs and "
            "writes every element")
    left = (None if unwritten is None
            else {(i // bm, j // bn) for i, j in unwritten.nonzero().tolist()})

    def explains(missed, outside):
        # a raised call: a replayed tile id before the grid's start, where a load faults; a
        # call that left tiles unwritten: the replay misses exactly those tiles
        if left is None:
            return any(pid is None or min(pid) < 0 for _, pid in outside)
        return bool(missed) and set(missed) == left

    named = _coords_mistake_hint(ctx, impl)
    if named:
        return f"{named} ({seen})"
    missed, outside = _band_by_group_m(tm, tn, group_m)
    explained = explains(missed, outside)
    # The band's first row taken as group_id (only for tiles left unwritten), and the band
    # counted as GROUP_M * num_pid_m tiles (the same as the right order on a square tile grid):
    # each named only when its replay, and not the one above, explains the failure. The two can
    # miss the same tiles (a 5 x 1 grid with GROUP_M = 4 misses tile (4, 0) both ways): a call
    # with a group_m where they differ then tells them apart.
    missed_s, outside_s = _band_start_unscaled(tm, tn, group_m)
    start_fits = left is not None and not explained and explains(missed_s, outside_s)
    missed_m, outside_m = _missed_and_outside(_band_of_num_pid_m(tm, tn, group_m), tm, tn)
    band_fits = tm != tn and explains(missed_m, outside_m) and not explained
    # Other slips miss the same tiles on some launches (the last band taken GROUP_M rows tall
    # misses what first_pid_m = group_id misses on a 4 x 3 grid with GROUP_M = 3): where the
    # module's _tile_coords can be asked and its order is not the replay's, it is not that slip.
    if start_fits and _coords_contradict(ctx, impl, _band_start_unscaled_order):
        start_fits = False
    if band_fits and _coords_contradict(ctx, impl, _band_of_num_pid_m):
        band_fits = False
    if start_fits and band_fits:
        which = _which_band_mistake(ctx, impl, a, b, bias, relu, knobs, (tm, tn, bm, bn))
        start_fits, band_fits = which in ("start", ""), which in ("band", "")
    if start_fits:
        shown = ", ".join(f"({i},{j})" for i, j in missed_s[:6])
        return (f"grouped index arithmetic: {BAND_START_UNSCALED}. {seen}; replayed, "
                f"first_pid_m = group_id never computes tiles [(tile row, tile col): {shown}"
                f"{' ...' if len(missed_s) > 6 else ''}]: exactly the tiles left unwritten"
                + (" (so does num_pid_in_group = GROUP_M * num_pid_m: check both)"
                   if band_fits else ""))
    if band_fits:
        shown = ", ".join(f"({i},{j})" for i, j in missed_m[:6])
        return (f"grouped index arithmetic: {BAND_OF_NUM_PID_M}. {seen}; replayed, "
                f"num_pid_in_group = GROUP_M * num_pid_m never computes tiles [(tile row, tile "
                f"col): {shown}{' ...' if len(missed_m) > 6 else ''}]"
                + (", and sends tile ids before the grid's start, where the loads fault"
                   if left is None else ": exactly the tiles left unwritten"))
    if not explained:
        return (f"grouped index arithmetic: {seen}: the tile id -> (pid_m, pid_n) mapping "
                "computes some tiles twice and others never or outside the grid (check "
                "num_pid_in_group = GROUP_M * num_pid_n, group_id, first_pid_m, group_size_m, "
                "pid_m and pid_n)")
    shown = ", ".join(f"({i},{j})" for i, j in missed[:6]) + (" ..." if len(missed) > 6 else "")
    sent = ", ".join(f"{t} -> {'no band' if pid is None else pid}" for t, pid in outside[:3])
    return (f"grouped index arithmetic: band index taken as tile_id // GROUP_M: {seen}. "
            f"Replayed, group_id = tile_id // GROUP_M never computes tiles [(tile row, tile "
            f"col): {shown}] and sends tile ids outside the grid ({sent}"
            f"{' ...' if len(outside) > 3 else ''})"
            + (", where the loads reach before the operands' start" if unwritten is None
               else ": exactly the tiles left unwritten")
            + "; a band holds GROUP_M * num_pid_n tiles: group_id = tile_id // num_pid_in_group")


# The hints a failing call gets that say where, not what: the interpreter's bounds check
# stopping a load. _probe_failure may replace them (and no hint at all) with a probe's finding.
_GENERIC_HINTS = ("tail not masked (or a wrong offset or stride", "a whole program addressed")


# The tutorial's loads at a_ptrs + k0 * stride_ak (the tenth learner audit) read what pointers
# advanced twice read: the loop already moves a_ptrs and b_ptrs by BLOCK_K after the exercise.
_K0_OFFSET = {"a_ptrs and b_ptrs": "a_ptrs + k0 * stride_ak and b_ptrs + k0 * stride_bk",
              "a_ptrs": "a_ptrs + k0 * stride_ak", "b_ptrs": "b_ptrs + k0 * stride_bk"}


def _k_advance_probe(ctx, impl) -> str:
    """Diagnosis of a failing call (a load the bounds check stopped, or wrong values nothing
    replayed): do the pointer kernel's K steps advance 2 * BLOCK_K (the advance written inside the
    exercise as well as after it)? Asked of the learner's code: a small product whose A and B are
    the first K columns and rows of parents 3K wide, so reads past K stay in memory (no fault,
    even under the bounds check), compared with what such a kernel outputs: step s reads K
    positions s * 2 * BLOCK_K + j (j < min(BLOCK_K, K - s * BLOCK_K), the reference's mask) of
    the parents, through A's pointers, B's or both. The pointer kernel only (persistent=False):
    the persistent kernel's K loop has no pointers."""
    import torch

    m, n, k, bk = 16, 24, 100, 32
    parent_a = ctx.randn((m, 3 * k), "float16")
    parent_b = ctx.randn((3 * k, n), "float16")
    a, b = parent_a[:, :k], parent_b[:k, :]
    try:
        out = _call(ctx, impl, a, b, None, False, dict(block_k=bk, persistent=False))
    except CheckFailed:
        return ""
    got = out.detach().cpu().double()
    pa, pb = parent_a.detach().cpu().double(), parent_b.detach().cpu().double()
    _, rounded, magnitude = _reference(a, b, None, False)
    right = _share_within(got, rounded, magnitude, k, a.dtype)
    plain = torch.arange(k)
    for step in _BLOCK_KS:  # the knob's block_k, unless the launcher ignored it
        if step >= k:
            continue
        doubled = plain + plain // step * step  # lane j of step s at s * 2 * step + j
        for which, ca, cb in (("a_ptrs and b_ptrs", doubled, doubled), ("a_ptrs", doubled, plain),
                              ("b_ptrs", plain, doubled)):
            model = (pa[:, ca] @ pb[cb, :]).to(a.dtype).double()
            share = _share_within(got, model, pa[:, ca].abs() @ pb[cb, :].abs(), k, a.dtype)
            if share >= 0.9 and share > right + 0.05:
                return (f"pointers advanced twice per K step: a probe ({m} x {n} x {k}, block_k = "
                        f"{step}, A and B sliced from wider tensors so that reads past K stay in "
                        f"memory) matches {which} moving 2 * BLOCK_K per step (its steps read K "
                        f"positions {_spans(torch.isin(torch.arange(3 * k), doubled))} instead "
                        f"of 0..{k - 1}), so the loads run past K; the loop already advances "
                        "a_ptrs and b_ptrs by BLOCK_K after the exercise: do not advance "
                        f"{which} inside it too, nor add k0 to them (with {_K0_OFFSET[which]}, "
                        "lane j reads position 2 * k0 + j: the pointers already hold k0)")
    return ""


def _k_tail_probe(ctx, impl) -> str:
    """Diagnosis of a failing call: does a load read past K? Asked of the learner's code: a small
    product (K = 40, block_k = 32: one full K step, one ragged) whose A and B are the first K
    columns and rows of wider parents holding NaN past K, first A's, then B's. Only memory past
    K differs from a finite problem, so NaN in the output means that operand's load reads there."""
    m, n, k = 16, 24, 40
    parent_a = ctx.randn((m, k + 64), "float16")
    parent_b = ctx.randn((k + 64, n), "float16")
    unmasked = []
    for which, name in (("a", "A's load (columns k0 + offs_k >= K)"),
                        ("b", "B's load (rows k0 + offs_k >= K)")):
        pa, pb = _nan_tails(ctx, parent_a, parent_b, k, which)
        try:
            out = _call(ctx, impl, pa[:, :k], pb[:k, :], None, False,
                        dict(block_k=32, persistent=False))
        except CheckFailed:
            return ""
        if ctx.never_written(out) is not None:
            return ""  # NaN of memory never written (a store mask, say), not of a read past K
        if bool(out.detach().cpu().isnan().any()):
            unmasked.append(name)
    probe = (f"a probe ({m} x {n} x {k}, block_k = 32, A and B sliced from wider tensors "
             "holding NaN past K, one operand at a time) gives NaN")
    if len(unmasked) == 1:
        return (f"K tail masked on one operand only: {unmasked[0]} is not masked: {probe} "
                "through that operand alone. The other operand's masked lanes are 0, but 0 times "
                "what lies past K is only 0 while it is a number (and past a tensor's end the "
                "interpreter's bounds check stops the load); mask both loads with "
                "k0 + offs_k < K and other=0.0")
    if len(unmasked) == 2:
        return (f"K tail not masked: {probe} through A and through B: both loads read past "
                "column K of A and row K of B in the last K step; mask the lanes "
                "k0 + offs_k >= K (offs_k < K - k0: k0 is the step's element offset) with "
                "other=0.0 on both loads")
    return ""


# Found by the fifth learner audit: C's store mask with M and N swapped, and C's strides
# swapped. Both fault at the store on a ragged non-square C (the hint then spoke of the K tail
# or of any mask): a square C tells them apart.
STORE_MASK_HINT = ("out-of-bounds store: the store mask lets rows >= M or cols >= N through "
                   "(mask rows < M, cols < N: c_mask = (rows < M) & (cols < N)); the call "
                   "stored past C at its tl.store, while a square probe (M = N) stores every element "
                   "right: M and N swapped in the mask, or one bound used for both")
TRANSPOSED_STORE_HINT = ("C written transposed: rows step by stride_cm, columns by stride_cn "
                         "(c_ptr + rows * stride_cm + cols * stride_cn); a square probe (M = N) "
                         "stored the transpose of the result, as offsets rows * stride_cn + "
                         "cols * stride_cm do")


def _store_probe(ctx, impl, message: str) -> str:
    """Diagnosis of a failing call: is C's store at fault? Asked of the learner's code: a square
    product (M = N = 40, two tile rows and columns, the second ragged) where a mask with M and N
    swapped is right and strides swapped store the exact transpose of C (C is contiguous and
    square). Transposed output names the strides; right output, after a call that stored past C
    (the interpreter's bounds check, or a GPU's tail guard, says so), names the store mask."""
    m = n = 40
    k = 24
    a = ctx.randn((m, k), "float16")
    b = ctx.randn((k, n), "float16")
    try:
        out = _call(ctx, impl, a, b, None, False, dict(persistent=False))
    except CheckFailed as exc:
        return (_column_offset_probe(ctx, impl) if any(
            text in exc.message for text in ("out-of-bounds store", "wrote past the end")) else "")
    if ctx.never_written(out) is not None:
        return ""
    got = out.detach().cpu().double()
    _, rounded, magnitude = _reference(a, b, None, False)
    right = _share_within(got, rounded, magnitude, k, a.dtype)
    transposed = _share_within(got, rounded.t(), magnitude.t(), k, a.dtype)
    if transposed == 1.0 and right < 0.5:
        return TRANSPOSED_STORE_HINT
    # A store past C: the interpreter's bounds check stops it ("out-of-bounds store"); on a GPU
    # the tail guard behind the output sees it ("wrote past the end of its output").
    if right == 1.0 and ("out-of-bounds store" in message
                         or "wrote past the end of its output" in message):
        return STORE_MASK_HINT
    return ""


# Found by the sixth learner audit (B, its 06): C's column offset multiplied by stride_cm.
COLUMN_OFFSET_HINT = ("C's column offset uses the wrong stride: a square probe (M = N = 40) "
                      "stored past C, while a probe with N = 1 (one column: its offset is 0 "
                      "whatever multiplies it) stores every element right; columns step by "
                      "stride_cn: c_ptr + rows * stride_cm + cols * stride_cn (cols * stride_cm "
                      "runs past C)")


def _column_offset_probe(ctx, impl) -> str:
    """Diagnosis after a square product stored past C: is the column term of C's offset wrong?
    Asked of the learner's code: the same product with one column (N = 1), where the column
    offset is 0 whatever it is multiplied by, must come out right."""
    m, k = 40, 24
    a = ctx.randn((m, k), "float16")
    b = ctx.randn((k, 1), "float16")
    try:
        out = _call(ctx, impl, a, b, None, False, dict(persistent=False))
    except CheckFailed:
        return ""
    if ctx.never_written(out) is not None:
        return ""
    _, rounded, magnitude = _reference(a, b, None, False)
    if _share_within(out.detach().cpu().double(), rounded, magnitude, k, a.dtype) < 1.0:
        return ""
    return COLUMN_OFFSET_HINT


# Found by the sixth learner audit (B, its 03 and 04): tl.dot's operands swapped, and one tile
# left un-upcast under DOT_IN_FP32. Both stop at the tl.dot with Triton's own message.
DOT_SWAPPED_HINT = ("tl.dot operands swapped: tl.dot(a, b, acc) takes A's tile (BLOCK_M, "
                    "BLOCK_K) first, then B's (BLOCK_K, BLOCK_N); the call stopped at the "
                    "tl.dot on its shapes, and a probe with M = N = K = BLOCK_M = BLOCK_N = "
                    "BLOCK_K = 32 (where tl.dot(b, a) compiles) returns B @ A")
# Found by the seventh learner audit (its 06): B's tile transposed in the product, as
# attention transposes K for Q K^T.
DOT_B_TRANSPOSED = "B's tile transposed in tl.dot"
DOT_B_TRANSPOSED_HINT = (f"{DOT_B_TRANSPOSED}: the call stopped at the tl.dot on its shapes, and "
                         "a probe with M = N = K = BLOCK_M = BLOCK_N = BLOCK_K = 32 (where "
                         "tl.dot(a, tl.trans(b)) compiles) returns A @ B^T; B's (BLOCK_K, "
                         "BLOCK_N) tile is already laid out for the product: tl.dot(a, b, acc) "
                         "(only attention's K is transposed, for Q K^T)")
DOT_DTYPES_HINT = ("tl.dot's operands of different dtypes ({got}): under DOT_IN_FP32 upcast "
                   "both tiles, a = a.to(tl.float32) and b = b.to(tl.float32), before tl.dot")


def _dot_swapped_probe(ctx, impl) -> str:
    """Diagnosis of a call that stopped at tl.dot on its operands' shapes: are they swapped?
    Asked of the learner's code: one square 32 x 32 tile and one K step, where tl.dot(b, a)
    compiles and computes B @ A; named when the output is B @ A and not A @ B."""
    n = 32
    a = ctx.randn((n, n), "float16")
    b = ctx.randn((n, n), "float16")
    knobs = dict(block_m=n, block_n=n, block_k=n, persistent=False)
    try:
        out = _call(ctx, impl, a, b, None, False, knobs)
    except CheckFailed:
        return ""
    got = out.detach().cpu().double()
    _, rounded, magnitude = _reference(a, b, None, False)
    if _share_within(got, rounded, magnitude, n, a.dtype) >= 0.5:
        return ""
    _, swapped, swapped_magnitude = _reference(b, a, None, False)
    if _share_within(got, swapped, swapped_magnitude, n, a.dtype) == 1.0:
        return DOT_SWAPPED_HINT
    # One 32 x 32 tile: tl.dot(a, tl.trans(b)) computes A @ B^T (the seventh audit's 06).
    _, transposed, transposed_magnitude = _reference(a, b.t(), None, False)
    if _share_within(got, transposed, transposed_magnitude, n, a.dtype) == 1.0:
        return DOT_B_TRANSPOSED_HINT
    return ""


def _dot_failure_hint(ctx, impl, message: str) -> str:
    """The hint for a call that stopped at tl.dot with Triton's message about its operands."""
    import re

    dtypes = re.search(r"Both operands must be same dtype\. Got (\w+) and (\w+)", message)
    if dtypes and "fp32" in dtypes.groups() and dtypes.group(1) != dtypes.group(2):
        return DOT_DTYPES_HINT.format(got=" and ".join(dtypes.groups()))
    if any(text in message for text in ("accumulator shape is incompatible",
                                        "not compatible for matmul",
                                        "must have equal reduction dimensions")):
        return _dot_swapped_probe(ctx, impl)
    return ""


# Found by the fifth learner audit: A's K mask broadcast along A's rows (k_mask[:, None]). It
# compiles only where BLOCK_M = BLOCK_K (elsewhere the shapes do not broadcast).
MASK_AXIS_HINT = ("a mask broadcast along the wrong axis: A's K is its columns "
                  "(k_mask[None, :]), B's its rows (k_mask[:, None]); a probe with BLOCK_M = "
                  "BLOCK_N = BLOCK_K = 32 (where the wrong broadcast compiles) matches {which}")


def _mask_axis_probe(ctx, impl) -> str:
    """Diagnosis of a failing call (shapes that do not broadcast, or wrong values): is a K mask
    broadcast along the wrong axis? Asked of the learner's code: M = N = K = 40 with blocks of
    32 (one full K step, one of 8), A and B the first K columns and rows of wider parents of
    numbers, compared with float64 replays of A's load masked by its tile rows (row r of the
    tile zeroed where r >= K - k0, its K tail read) and of B's by its tile columns."""
    import torch

    m = n = k = 40
    blk = 32
    parent_a = ctx.randn((m, k + 64), "float16")
    parent_b = ctx.randn((k + 64, n), "float16")
    a, b = parent_a[:, :k], parent_b[:k, :]
    knobs = dict(block_m=blk, block_n=blk, block_k=blk, persistent=False)
    try:
        out = _call(ctx, impl, a, b, None, False, knobs)
    except CheckFailed:
        return ""
    if ctx.never_written(out) is not None:
        return ""
    got = out.detach().cpu().double()
    pa, pb = parent_a.detach().cpu().double(), parent_b.detach().cpu().double()
    _, rounded, magnitude = _reference(a, b, None, False)
    right = _share_within(got, rounded, magnitude, k, a.dtype)
    local = torch.arange(blk)
    tile_row, tile_col = torch.arange(m) % blk, torch.arange(n) % blk

    def replay(a_by_rows: bool, b_by_cols: bool):
        acc, size = torch.zeros(m, n, dtype=torch.float64), torch.zeros(m, n, dtype=torch.float64)
        for k0 in range(0, k, blk):
            lim = k - k0
            at, bt = pa[:, k0:k0 + blk].clone(), pb[k0:k0 + blk, :].clone()
            if a_by_rows:
                at[tile_row >= lim, :] = 0.0
            else:
                at[:, local >= lim] = 0.0
            if b_by_cols:
                bt[:, tile_col >= lim] = 0.0
            else:
                bt[local >= lim, :] = 0.0
            acc += at @ bt
            size += at.abs() @ bt.abs()
        return acc.to(a.dtype).double(), size

    for which, a_by_rows, b_by_cols in (
            ("A's load masked by its rows (k_mask[:, None])", True, False),
            ("B's load masked by its columns (k_mask[None, :])", False, True),
            ("both loads masked along the wrong axis", True, True)):
        model, size = replay(a_by_rows, b_by_cols)
        share = _share_within(got, model, size, k, a.dtype)
        if share >= 0.9 and share > right + 0.05:
            return MASK_AXIS_HINT.format(which=which)
    return ""


# Store masks a learner may write, as (name, what it keeps, its hint's lead): rows r and columns
# c of a tile (the reference's first; None: not named here, their own probes speak).
_STORE_MASKS = (
    (None, lambda r, c, m, n: (r < m) & (c < n), ""),
    ("none", lambda r, c, m, n: (r >= 0) & (c >= 0),
     "store not masked: the tl.store has no mask, so the tail tiles write past C"),
    ("<=", lambda r, c, m, n: (r <= m) & (c <= n),
     "store mask off by one (<=): rows <= M and cols <= N also write row M and column N, "
     "which lie outside C (column N of row r is C[r + 1, 0])"),
    ("rows <=", lambda r, c, m, n: (r <= m) & (c < n),
     "store mask off by one (<=) on the rows: rows <= M also writes row M, past C's end"),
    ("cols <=", lambda r, c, m, n: (r < m) & (c <= n),
     "store mask off by one (<=) on the columns: cols <= N also writes column N, which is "
     "C[r + 1, 0] (and past C's end in the last row)"),
    ("rows only", lambda r, c, m, n: r < m,
     "store mask on the rows only: the columns >= N of the last tile column write past C"),
    ("cols only", lambda r, c, m, n: c < n,
     "store mask on the columns only: the rows >= M of the last tile row write past C"),
    ("or", lambda r, c, m, n: (r < m) | (c < n),
     "store mask joined with | instead of &: a lane is stored when its row or its column exists"),
    (None, lambda r, c, m, n: (r < n) & (c < m), ""),  # M and N swapped: _store_probe
    (None, lambda r, c, m, n: (r < m) & (c < m), ""),  # columns by M: _mask_bound_hint
)


def _store_mask_lanes(launched, message: str) -> str:
    """Diagnosis of a pointer-kernel call whose store the interpreter's bounds check stopped:
    which store mask was it? The check's message counts the store's active lanes (those its
    mask lets through) in the program that faulted; the launch gives M, N, the tile shape and
    GROUP_M, so the program's tile (in the reference's grouped order) and each mask of
    _STORE_MASKS give a count of their own. Named when exactly one mask gives the message's
    count, and it is a mistake. Interpreter only: a GPU's tail guard counts no lanes."""
    import re

    import torch

    found = re.search(r"out-of-bounds store: (?:all (\d+)|\d+ of (\d+)) active lanes .* in "
                      r"program \((\d+), 0, 0\) of a grid of \((\d+), 1, 1\)", message)
    args = launched[0].arguments if launched else {}
    names = ("M", "N", "BLOCK_M", "BLOCK_N", "GROUP_M")
    if not found or not all(type(args.get(name)) is int for name in names):
        return ""
    active, program, programs = int(found.group(1) or found.group(2)), int(found.group(3)), \
        int(found.group(4))
    m, n, bm, bn, group_m = (args[name] for name in names)
    tm, tn = -(-m // bm), -(-n // bn)
    if programs != tm * tn or not 0 <= program < programs or min(bm, bn, group_m) <= 0:
        return ""  # not one program per tile (a persistent grid): the tile is not known
    pid_m, pid_n = _grouped_replay(tm, tn, group_m, group_m * tn, group_m * tn)[program]
    rows = (pid_m * bm + torch.arange(bm))[:, None]
    cols = (pid_n * bn + torch.arange(bn))[None, :]
    counts = [(name, int(keep(rows, cols, m, n).expand(bm, bn).sum()), lead)
              for name, keep, lead in _STORE_MASKS]
    matches = [(name, lead) for name, count, lead in counts if count == active]
    if {name for name, _ in matches} in ({"<=", "rows <="}, {"<=", "cols <="}):
        # a tile at one edge only: <= on that side, on both or on that one alone agree
        matches = [(name, lead) for name, lead in matches if name == "<="]
    if len(matches) != 1 or matches[0][0] is None:
        return ""
    right = counts[0][1]
    return (f"{matches[0][1]}. The interpreter's bounds check stopped the store of program "
            f"{program} (tile ({pid_m}, {pid_n}) of {bm}x{bn}, C {m} x {n}) with {active} "
            f"active lanes: exactly what this mask lets through, and what no other mask tried "
            f"does (rows < M and cols < N keep {right}); mask the store with c_mask = (rows < M) & "
            "(cols < N)")


# Found by the seventh learner audit (its 07): the store's rows and columns broadcast along the
# wrong axes. It compiles only on square tiles (elsewhere the shapes do not broadcast).
TILE_TRANSPOSED = "each tile stored transposed"


def _store_axes_probe(ctx, impl) -> str:
    """Diagnosis of a call whose shapes did not broadcast: does the store put rows along the
    tile's columns? Asked of the learner's code: M = 40, N = 48 in 32 x 32 tiles (where such a
    store compiles), compared with the replay of every tile written transposed in place."""
    m, n, k = 40, 48, 24
    a = ctx.randn((m, k), "float16")
    b = ctx.randn((k, n), "float16")
    knobs = dict(block_m=32, block_n=32, block_k=32, persistent=False)
    try:
        out = _call(ctx, impl, a, b, None, False, knobs)
    except CheckFailed:
        return ""
    if ctx.never_written(out) is not None:
        return ""
    got = out.detach().cpu().double()
    _, rounded, magnitude = _reference(a, b, None, False)
    if _share_within(got, rounded, magnitude, k, a.dtype) >= 0.5:
        return ""
    for size, candidate, cand_magnitude in _tiles_stored_transposed(a, b, None, False):
        if size == 32 and _share_within(got, candidate, cand_magnitude, k, a.dtype) == 1.0:
            return (f"{TILE_TRANSPOSED}: a probe (M = {m}, N = {n}, 32 x 32 tiles, where the "
                    "shapes broadcast) writes every tile transposed in place, as a store with "
                    "rows = offs_m[None, :] and cols = offs_n[:, None] does; the tile's rows run "
                    "down C: rows = offs_m[:, None], cols = offs_n[None, :] (and the mask from "
                    "them)")
    return ""


# The framework's hint for block shapes that do not broadcast: _mask_axis_probe may name the
# mask whose broadcast it was.
_BROADCAST_HINT = "block shapes do not broadcast"


def _probe_failure(ctx, impl, exc, launched=()) -> None:
    """Re-raise the failure `exc` (a CheckFailed with no hint or a generic one) with a probe's
    hint when a probe names the mistake; return otherwise (the caller re-raises exc).
    `launched`: the failing call's launch, when known (_store_mask_lanes reads it)."""
    if exc.hint.startswith(_BROADCAST_HINT):
        hint = _mask_axis_probe(ctx, impl) or _store_axes_probe(ctx, impl)
        if hint:
            raise CheckFailed(exc.message, hint=hint, max_error=exc.max_error,
                              tolerance=exc.tolerance) from exc
        return
    hint = _dot_failure_hint(ctx, impl, exc.message)
    if hint:
        raise CheckFailed(exc.message, hint=hint, max_error=exc.max_error,
                          tolerance=exc.tolerance) from exc
    if exc.hint and not exc.hint.startswith(_GENERIC_HINTS):
        return
    hint = (_store_probe(ctx, impl, exc.message) or _k_advance_probe(ctx, impl)
            or _k_tail_probe(ctx, impl) or _mask_axis_probe(ctx, impl)
            or _store_mask_lanes(launched, exc.message)
            or (_store_mask_lanes_probe(ctx, impl) if "out-of-bounds store" in exc.message
                else ""))
    if hint:
        raise CheckFailed(exc.message, hint=hint, max_error=exc.max_error,
                          tolerance=exc.tolerance) from exc


def _store_mask_lanes_probe(ctx, impl) -> str:
    """Diagnosis of a store the interpreter's bounds check stopped where _store_mask_lanes
    could not tell the mask: in the faulting tile several masks let the same lanes through
    (a first tile whose columns all lie below N: no mask, the columns only and | all store
    every lane). The ninth learner audit (the eighth's leftover: store_mask_or's later cases
    kept the generic hint). Asked of the learner's code: M = 1, N = 2 in one 16 x 16 tile,
    where every mask of _STORE_MASKS keeps a different number of lanes (256 with none, 46
    with |, 32 with the columns only, 16 with the rows only, 6 with <=, 4 and 3 with <= on
    one side, 2 right). Interpreter only (a GPU's tail guard counts no lanes)."""
    if ctx.device != "interpreter":
        return ""
    a = ctx.randn((1, 16), "float16")
    b = ctx.randn((16, 2), "float16")
    knobs = dict(block_m=16, block_n=16, block_k=16, persistent=False)
    with launches.recording() as launched:
        try:
            _call(ctx, impl, a, b, None, False, knobs)
        except CheckFailed as exc:
            named = _store_mask_lanes(launched[:1], exc.message)
            return (f"{named.split('. ', 1)[0]}: a probe with M = 1, N = 2 in one 16 x 16 tile "
                    f"(where each mask tried keeps a different number of lanes) says so. "
                    f"{named.split('. ', 1)[1]}" if named else "")
    return ""


# ---------------------------------------------------------------------------------------------
# Forward values: ragged sizes, layouts, zero K, the K tail
# ---------------------------------------------------------------------------------------------
_COMBOS = ((True, True), (False, False), (True, False), (False, True))  # (bias, relu)


def _ragged_cases(device: str) -> list[Case]:
    # A power of two, sizes smaller than one tile, weird sizes on both sides of a tile edge.
    if device == "cuda":
        shapes = [(1, 1, 1), (7, 33, 127), (33, 7, 129), (64, 64, 64), (127, 129, 33),
                  (1, 4096, 4096), (4096, 1, 4096), (1024, 1024, 1024), (1000, 3000, 999),
                  (2048, 512, 8192), (4095, 4097, 1023)]
        combos = [(s, c) for s in shapes for c in _COMBOS]
    else:
        shapes = [(1, 1, 1), (7, 33, 127), (33, 7, 129), (64, 64, 64), (45, 50, 31)]
        # Two (bias, relu) combinations per shape, alternating, so each dtype sees all four.
        combos = [(s, _COMBOS[(2 * i + j) % 4]) for i, s in enumerate(shapes) for j in range(2)]
    # Small results: operands of about 5e-3 and K of 1 or 3 give |c| of about 2.5e-5 to 1e-4,
    # around float16's smallest normal 2^-14 ~ 6.1e-5 (below it float16 keeps subnormals,
    # bfloat16 normal numbers): a threshold that flushes them to zero changes every one.
    small = [Case(shape=s, dtype=d, bias=False, relu=relu, scale=5e-3)
             for s, relu in (((9, 40, 1), True), ((33, 17, 3), False)) for d in DTYPES]
    # Large results: bfloat16 operands of about 1e3 and K = 5 give |c| of about 2e6, far past
    # float16's largest 65504 (bfloat16 has float32's range): an output that went through
    # float16 is inf. First: in the small cases such an output is only a few ulp off, often
    # in too few elements for its diagnosis to tell it from the right answer. No bias: next to
    # |c| ~ 2e6 a bias of ~2 vanishes, and the replays of the bias mistakes would all agree.
    wide = [Case(shape=(17, 24, 5), dtype="bfloat16", bias=False, relu=False, scale=1e3)]
    # relu= left out: the documented default is relu=True.
    default = [Case(shape=(20, 24, 40), dtype=d, bias=True, relu=True, relu_default=True)
               for d in DTYPES]
    # The small cases first: the bug zoo stops at the first FAIL with the bug's hint, and on a
    # GPU the large shapes below take minutes to compile and compare.
    return wide + small + default + [Case(shape=s, dtype=d, bias=bias, relu=relu)
                                     for s, (bias, relu) in combos for d in DTYPES]


def _relu_default_off(ctx, impl, a, b, bias):
    """Diagnosis: a call without relu= returned the output of relu=False, and the same call
    with relu=True is right (else the ReLU is missing whatever relu says: the replays name it)."""

    def diagnose(got, expected, bad):
        _, plain, magnitude = _reference(a, b, bias, False)
        tol = _tolerance(plain, magnitude, a.shape[1], a.dtype)
        if float(((got - plain).abs() <= tol).double().mean()) < 0.9:
            return None
        try:
            explicit = _call(ctx, impl, a, b, bias, True, {}).detach().cpu().double()
        except CheckFailed:
            return None
        if bool((explicit - expected).abs().gt(_tolerance(expected, magnitude, a.shape[1],
                                                           a.dtype)).any()):
            return None
        return ("ReLU off by default: gemm_bias_relu(a, b, bias) without relu= returned "
                "a @ b + bias with no ReLU; the signature's default is relu=True")

    return diagnose


def _flushed(got, expected, bad):
    """Diagnosis: every wrong output is 0 where the result is a small nonzero number."""
    g, e = got[bad], expected[bad]
    if g.numel() == 0 or not bool((g == 0).all()) or not bool((e != 0).all()):
        return None
    largest = float(e.abs().max())
    if largest >= 2.0 ** -10:
        return None
    return (f"small results flushed to zero: every wrong output is 0 where the result is a "
            f"small nonzero number (|c| up to {largest:.3g}, around float16's smallest normal "
            "2^-14 ~ 6.1e-5); keep tiny values: no threshold on acc in the epilogue, convert "
            "the float32 value with .to(OUT_DTYPE) (float16 subnormals included)")


@register(W, "forward.ragged", tier="kernel", uses=USES, cases=_ragged_cases,
          doc="relu(a @ b + bias) against the float64 contract, ragged M, N, K, bias/relu on/off, "
              "small results near float16's smallest normal, bfloat16 results past float16's "
              "largest")
def forward_ragged(ctx, impl, case):
    try:
        _forward_ragged(ctx, impl, case)
    except CheckFailed as exc:
        _probe_failure(ctx, impl, exc)  # e.g. on a GPU, wrong values where the bounds check faults
        raise


def _forward_ragged(ctx, impl, case):
    m, n, k = case.shape
    scale = case.get("scale", 1.0)
    a = ctx.randn((m, k), case.dtype, scale=scale)
    b = ctx.randn((k, n), case.dtype, scale=scale)
    bias = _bias(ctx, n, case.bias, scale=2.0)
    if case.get("relu_default"):
        out = ctx.call(impl.gemm_bias_relu, a, b, bias, expect_shape=(m, n),
                       expect_dtype=a.dtype, expect_contiguous=True,
                       name="gemm_bias_relu without relu=")
        _compare(ctx, out, a, b, bias, True, name="gemm_bias_relu without relu=",
                 first=[_relu_default_off(ctx, impl, a, b, bias)])
        _note_upcast(ctx, case.dtype)
        return
    out = _run(ctx, impl, a, b, bias, case.relu)
    _compare(ctx, out, a, b, bias, case.relu, extra=[_flushed],
             first=[_relu_follows_bias(ctx, impl, a, b, bias, case.relu)])
    _note_upcast(ctx, case.dtype)


def _relu_follows_bias(ctx, impl, a, b, bias, relu):
    """Diagnosis (the seventh learner audit's 08): is the ReLU applied exactly when a bias is
    given (guarded by HAS_BIAS instead of APPLY_RELU)? The output must be the other ReLU
    switch's (no ReLU though relu=True without a bias, a ReLU though relu=False with one), and
    the learner's code, asked again with the bias flipped (a bias of zeros for None, None for
    the bias: the same contract otherwise), must then be right. A ReLU missing or applied
    whatever the bias is stays wrong with the bias flipped, and keeps the replays' hints."""

    def diagnose(got, expected, bad):
        if relu == (bias is not None):
            return None  # here the HAS_BIAS guard and the APPLY_RELU one agree
        _, toggled, magnitude = _reference(a, b, bias, not relu)
        if _share_within(got, toggled, magnitude, a.shape[1], a.dtype) < 0.9:
            return None
        flipped = (ctx.torch.zeros(b.shape[1], dtype=ctx.torch.float32, device=a.device)
                   if bias is None else None)
        try:
            again = _call(ctx, impl, a, b, flipped, relu, {}).detach().cpu().double()
        except CheckFailed:
            return None
        _, right, magnitude = _reference(a, b, flipped, relu)
        if _share_within(again, right, magnitude, a.shape[1], a.dtype) < 1.0:
            return None
        if relu:
            # No ReLU without a bias, and with one it follows relu: asked with a bias of zeros
            # and relu=False, a ReLU that follows HAS_BIAS is applied (wrong), while an epilogue
            # that returns (or skips the ReLU) when there is no bias is right (the tenth
            # learner audit: `if not HAS_BIAS: return acc.to(OUT_DTYPE)` before the ReLU).
            try:
                plain = _call(ctx, impl, a, b, flipped, False, {}).detach().cpu().double()
            except CheckFailed:
                return None
            _, right, magnitude = _reference(a, b, flipped, False)
            if _share_within(plain, right, magnitude, a.shape[1], a.dtype) == 1.0:
                return ("ReLU skipped without a bias: with relu=True and bias=None the output "
                        "matches no ReLU, but with a bias of zeros it is right for relu=True "
                        "and for relu=False: the epilogue leaves out the ReLU when HAS_BIAS is "
                        "off (an early return, or the ReLU inside `if HAS_BIAS:`); add the bias "
                        "under `if HAS_BIAS:`, then apply the ReLU under `if APPLY_RELU:` "
                        "whatever the bias, then round once")
        return (f"ReLU follows HAS_BIAS, not APPLY_RELU: with relu={relu} and "
                f"bias={'None' if bias is None else 'a tensor'} the output matches "
                f"{'no ReLU' if relu else 'a ReLU'}, but the same call with "
                f"bias={'zeros' if bias is None else 'None'} is right: the ReLU is applied "
                "exactly when a bias is given; guard it with `if APPLY_RELU:` (relu=True), the "
                "bias with `if HAS_BIAS:`")

    return diagnose


_LAYOUTS = [("col", "row"), ("row", "col"), ("col", "col"), ("slice", "row"), ("row", "slice"),
            ("slice", "col"), ("broadcast", "col"), ("row", "broadcast")]


def _layout_cases(device: str) -> list[Case]:
    shapes = [(37, 45, 70)] if device != "cuda" else [(37, 45, 70), (1000, 1030, 515),
                                                       (1024, 512, 256)]
    return [Case(shape=s, a=la, b=lb, dtype=d) for s in shapes for la, lb in _LAYOUTS
            for d in DTYPES]


@register(W, "forward.layouts", tier="kernel", uses=USES, cases=_layout_cases,
          doc="transposed, sliced and broadcast (stride 0) operands, read in place through "
              "their strides")
def forward_layouts(ctx, impl, case):
    m, n, k = case.shape
    a = _operand(ctx, m, k, case.dtype, case.a)
    b = _operand(ctx, k, n, case.dtype, case.b)
    bias = _bias(ctx, n, True)
    out = _run(ctx, impl, a, b, bias, True)
    _compare(ctx, out, a, b, bias, True, extra=[_strides_ignored(a, b, bias, True)])
    _note_upcast(ctx, case.dtype)


def _strides_ignored(a, b, bias, relu):
    """Diagnosis: the output is what a kernel outputs that reads a non-contiguous operand (or
    both) as if it were contiguous. Most outputs wrong is not evidence enough: any wrong sum
    does that on these layouts."""

    def diagnose(got, expected, bad):
        dense_a = None if a.is_contiguous() else _read_dense(a)
        dense_b = None if b.is_contiguous() else _read_dense(b)
        tried = [(dense_a, b, "a"), (a, dense_b, "b"), (dense_a, dense_b, "a and b")]
        for x, y, which in tried:
            if x is None or y is None:
                continue
            if _explains(got, bad, x, y, bias, relu):
                return (f"stride ignored: the output matches {which} read as if contiguous (a "
                        f"strides {a.stride()}, b strides {b.stride()}); address A[m, k] as "
                        "a_ptr + m * stride_am + k * stride_ak (and B likewise) for every "
                        "dimension, never assume contiguity")
        return None

    return diagnose


def _bias_layout_cases(device: str) -> list[Case]:
    shapes = [(37, 45, 70), (5, 9, 0)] if device != "cuda" else [(37, 45, 70), (5, 9, 0),
                                                                  (1024, 512, 256)]
    return [Case(shape=s, bias_layout=lay, dtype=d) for s in shapes for lay in ("step", "expand")
            for d in DTYPES]


@register(W, "forward.bias_layouts", tier="kernel", uses=USES,
          cases=_bias_layout_cases,
          doc="a strided bias (every other element of a longer vector; one value expand()ed, "
              "stride 0) adds bias[n], not the n-th float of its storage")
def forward_bias_layouts(ctx, impl, case):
    m, n, k = case.shape
    a = _operand(ctx, m, k, case.dtype)
    b = _operand(ctx, k, n, case.dtype)
    if case.bias_layout == "step":
        bias = ctx.randn((2 * n,), "float32", scale=2.0)[::2]
    else:
        bias = ctx.randn((1,), "float32", scale=2.0).expand(n)
    out = _run(ctx, impl, a, b, bias, False)
    _compare(ctx, out, a, b, bias, False, extra=[_bias_stride_ignored(a, b, bias, False)])
    _note_upcast(ctx, case.dtype)


def _bias_stride_ignored(a, b, bias, relu):
    """Diagnosis: the output matches the bias read with stride 1 (bias_ptr + n). Not for the
    expand()ed bias: its one float of storage cannot show what lies past it."""

    def diagnose(got, expected, bad):
        dense = _read_dense(bias)
        if dense is None or not _explains(got, bad, a, b, dense, relu):
            return None
        return (f"bias stride ignored: the output matches bias read at bias_ptr + n, but bias "
                f"has stride {bias.stride(0)}, so bias[n] lives at bias_ptr + n * stride (or "
                "make the launcher pass a contiguous copy)")

    return diagnose


def _zero_k_cases(device: str) -> list[Case]:
    shapes = [(5, 9), (33, 70)] if device != "cuda" else [(5, 9), (33, 70), (4096, 4096)]
    return [Case(m=m, n=n, dtype=d, bias=bias, relu=relu) for m, n in shapes for d in DTYPES
            for bias, relu in _COMBOS]


@register(W, "forward.zero_k", tier="kernel", uses=USES, cases=_zero_k_cases,
          doc="K = 0: relu(bias) broadcast (or zeros), without reading A or B")
def forward_zero_k(ctx, impl, case):
    torch = ctx.torch
    dtype = _dtype(case.dtype)
    # Operands with no elements at all: there is nothing to read, and under the interpreter any
    # read would be caught by its bounds check as an out-of-bounds load.
    a = torch.empty((case.m, 0), dtype=dtype, device=ctx.torch_device)
    b = torch.empty((0, case.n), dtype=dtype, device=ctx.torch_device)
    bias = _bias(ctx, case.n, case.bias)
    # ctx.call fills new memory with NaN: an output never written shows as NaN, not as whatever
    # the allocator held (often zeros, which would pass without a bias).
    out = _run(ctx, impl, a, b, bias, case.relu)
    _compare(ctx, out, a, b, bias, case.relu, extra=[_zero_k_skipped])


def _zero_k_skipped(got, expected, bad):
    """Diagnosis (K = 0): every wrong output is 0 (acc = 0 stored without the epilogue's bias)
    or NaN (the output never written: no launch, or a kernel that returned before its store)."""
    g = got[bad]
    zeros, nans = int((g == 0).sum()), int(g.isnan().sum())
    if g.numel() == 0 or zeros + nans < g.numel():
        return None
    seen = " and ".join(s for s, n in ((f"{zeros} are 0 (no bias added)", zeros),
                                        (f"{nans} NaN (never written)", nans)) if n)
    return (f"zero K: of the wrong outputs {seen}; with K = 0 the sum over k is empty, so "
            "acc = 0 and the output is relu(bias) (or zeros): the K loop must run zero times and "
            "the epilogue and the store still run")


def _empty_cases(device: str) -> list[Case]:
    shapes = [(0, 16, 16), (8, 0, 16), (0, 0, 0)]
    return [Case(shape=s, dtype=DTYPES[i % 2], persistent=p) for i, s in enumerate(shapes)
            for p in (None, True)]


EMPTY_HINT = ("empty output: with M = 0 or N = 0 there is nothing to compute; return the new "
              "empty (M, N) tensor before any launch (a persistent grid of min(SMs, 0 tiles) = 0 "
              "programs is nothing to launch), also with persistent=True")


@register(W, "forward.empty", tier="kernel", uses=USES, cases=_empty_cases,
          doc="M = 0 or N = 0: a new empty (M, N) output of a's dtype and no error, "
              "persistent=True included")
def forward_empty(ctx, impl, case):
    m, n, k = case.shape
    knobs = {}
    if case.persistent:
        from checks.core import Unavailable

        if ctx.device == "cuda" and ctx.torch.cuda.get_device_capability()[0] < 9:
            raise Unavailable("the persistent TMA path needs compute capability 9.0 or newer")
        if ctx.device == "interpreter":
            _allow_descriptor_loads_under_bounds_check()
        knobs["persistent"] = True
    # Empty slices of parents with 16-byte rows: operands a TMA descriptor could describe, so
    # persistent=True has no reason to refuse them.
    a = ctx.randn((max(m, 8), k), case.dtype)[:m]
    b = ctx.randn((k, max(n, 8)), case.dtype)[:, :n]
    bias = _bias(ctx, n, True)
    try:
        _run(ctx, impl, a, b, bias, True, **knobs)
    except CheckFailed as exc:
        raised = exc.__cause__ is not None and not isinstance(exc.__cause__, CheckFailed)
        raise CheckFailed(f"{exc.message} (a {tuple(a.shape)}, b {tuple(b.shape)}, {knobs})",
                          hint=EMPTY_HINT if raised else exc.hint) from None


def _k_tail_cases(device: str) -> list[Case]:
    shapes = [(20, 24, 40), (9, 33, 100)]
    blocks = [32] if device != "cuda" else [32, 64]
    paths = [None] if device != "cuda" else [False, None]
    return [Case(shape=s, block_k=bk, dtype=d, persistent=p) for s in shapes for bk in blocks
            for d in DTYPES for p in paths]


# The knobs of a call and the kernel arguments they set (the reference's names; a kernel that
# takes none of these names is not compared).
_KNOB_ARGUMENTS = dict(block_m="BLOCK_M", block_n="BLOCK_N", block_k="BLOCK_K",
                       group_m="GROUP_M", num_warps="num_warps", num_stages="num_stages",
                       tma_store="TMA_STORE")


def _knobs_ignored(launched, knobs, label="gemm_bias_relu") -> None:
    """FAIL if a kernel the call launched received another value for a knob the call gave
    (right values, but the knob did nothing: e.g. GROUP_M=4 for group_m=8, or default_config's
    block_k instead of the caller's). Kernels without the argument's name are not compared."""
    ignored = launches.ignored_knob(launched, knobs, _KNOB_ARGUMENTS)
    if ignored:
        knob, wanted, launch, shown = ignored
        raise CheckFailed(
            f"{label}({', '.join(f'{k}={v!r}' for k, v in knobs.items())}) launched "
            f"{launch.name} with {shown}",
            hint=f"knob ignored: {knob}={wanted!r} was asked for, but {launch.name} ran "
                 f"with {shown}; pass the caller's knobs to the launch "
                 "(default_config fills in only those left at None)")


@register(W, "forward.k_tail", tier="kernel", uses=USES, cases=_k_tail_cases,
          doc="K not a multiple of block_k, operands sliced from wider tensors (tail reads land "
              "in real memory: random numbers, then NaN)")
def forward_k_tail(ctx, impl, case):
    try:
        _forward_k_tail(ctx, impl, case)
    except CheckFailed as exc:
        _probe_failure(ctx, impl, exc)  # reads past K that land in the parents: wrong values
        raise


def _nan_tails(ctx, parent_a, parent_b, k: int, which: str = "ab"):
    """Copies of the parents with NaN past column k of A's (if "a" in which) and past row k of
    B's (if "b" in which): a quiet NaN, not the fill of fresh memory (so not 'never written')."""
    pa, pb = parent_a.clone(), parent_b.clone()
    if "a" in which:
        pa[:, k:] = float("nan")
    if "b" in which:
        pb[k:, :] = float("nan")
    return pa, pb


def _forward_k_tail(ctx, impl, case):
    m, n, k = case.shape
    # A = first k columns of a wider tensor, B = first k rows of a taller one: reading past K
    # stays inside memory (no crash, even under the interpreter's bounds check) but picks up the
    # extra values, so an unmasked K tail changes the result.
    parent_a = ctx.randn((m, k + 64), case.dtype)
    parent_b = ctx.randn((k + 64, n), case.dtype)
    a, b = parent_a[:, :k], parent_b[:k, :]
    knobs = dict(block_k=case.block_k)
    if case.persistent is not None:
        knobs["persistent"] = case.persistent
    with launches.recording() as launched:
        out = _run(ctx, impl, a, b, None, False, **knobs)

    def k_tail(got, expected, bad):
        kk = -(-k // case.block_k) * case.block_k  # K rounded up to whole K steps
        pa, pb = parent_a[:, :kk].double().cpu(), parent_b[:kk, :].double().cpu()
        wrong = (pa @ pb).to(a.dtype).double()
        tol = _tolerance(wrong, pa.abs() @ pb.abs(), kk, a.dtype)
        if float(((got - wrong).abs() <= tol).double().mean()) > 0.9:
            return (f"K tail not masked: the output matches A[:, :{kk}] @ B[:{kk}, :], i.e. the "
                    f"last K step (K = {k}, block_k = {case.block_k}) read past column K of A "
                    "and row K of B; mask the lanes k0 + offs_k >= K with other=0.0 on both loads")
        return None

    _compare(ctx, out, a, b, None, False, extra=[k_tail, _strides_ignored(a, b, None, False)])
    _knobs_ignored(launched, knobs)
    # The same operands in parents holding NaN past K. A kernel that masks only one of the two
    # loads passed above: the masked operand's 0 times the other's tail is 0 while that tail is
    # a number (and on a GPU, memory past the end of a tensor usually holds numbers too). Times
    # NaN it is NaN, on every device.
    nan_a, nan_b = _nan_tails(ctx, parent_a, parent_b, k)
    out_nan = _run(ctx, impl, nan_a[:, :k], nan_b[:k, :], None, False, **knobs)

    def one_sided(got, expected, bad):
        if not bool((got[bad].isnan() & ~expected[bad].isnan()).any()):
            return None
        # Which load reads past K? Put the NaN past K of one operand at a time.
        unmasked = []
        for which, name in (("a", "A's load (columns k0 + offs_k >= K)"),
                            ("b", "B's load (rows k0 + offs_k >= K)")):
            pa, pb = _nan_tails(ctx, parent_a, parent_b, k, which)
            try:
                again = _call(ctx, impl, pa[:, :k], pb[:k, :], None, False, knobs)
            except CheckFailed:
                return None
            if bool(again.detach().cpu().isnan().any()):
                unmasked.append(name)
        if len(unmasked) != 1:
            return None
        return (f"K tail masked on one operand only: {unmasked[0]} is not masked. With NaN "
                "stored past column K of A and row K of B the output is NaN, though with numbers "
                "there it was right: the other operand's masked lanes are 0, and 0 times a "
                "number read past K is 0, but 0 * NaN is NaN (and on a GPU the memory past a "
                "tensor's end can hold anything, NaN included); mask both loads with "
                "k0 + offs_k < K and other=0.0")

    _compare(ctx, out_nan, nan_a[:, :k], nan_b[:k, :], None, False,
             name="gemm_bias_relu (NaN stored past K)", extra=[one_sided])
    _note_upcast(ctx, case.dtype)


# ---------------------------------------------------------------------------------------------
# The precision contract: a case where rounding before the bias is visibly wrong
# ---------------------------------------------------------------------------------------------
def _cancellation_inputs(ctx, dtype: str, m=16, n=24, k=16):
    """A, B, bias with acc[i, j] = T_j + s_ij and bias_j = -T_j + u_j (u_j not representable).

    T_j is large (512..1024 in float16, 64..128 in bfloat16: where the dtype's spacing is 0.5),
    s_ij and u_j are O(1). The contract gives relu(s_ij + u_j), an O(1) number rounded once.
    Rounding acc first moves it by up to 0.25 (half a spacing at T) before the bias cancels T:
    an error of ~0.1 on an O(1) result, hundreds of times the tolerance.
    """
    torch = ctx.torch
    big = 512.0 if dtype == "float16" else 64.0
    t = (big * (1.0 + ctx.rand_like_distinct((n,), "float64", 0.0, 1.0, device="cpu")))
    t = t.to(_dtype(dtype))  # representable T_j
    a = ctx.randn((m, k), dtype, scale=0.5, device="cpu")
    b = ctx.randn((k, n), dtype, scale=0.5, device="cpu")
    a[:, 0] = 1.0
    b[0, :] = t
    u = ctx.rand_like_distinct((n,), "float64", -1.0, 1.0, device="cpu")
    bias = (-t.double() + u).float()
    dev = ctx.torch_device
    del torch
    return a.to(dev), b.to(dev), bias.to(dev)


@register(W, "contract.early_rounding", tier="kernel", uses=USES,
          cases=[Case(dtype=d, relu=r) for d in DTYPES for r in (True, False)],
          doc="bias cancels a large product: rounding before the epilogue is caught")
def contract_early_rounding(ctx, impl, case):
    torch = ctx.torch
    a, b, bias = _cancellation_inputs(ctx, case.dtype)
    # The construction must separate the contract from early rounding, or the check proves
    # nothing: make sure of it before judging the implementation.
    exact, rounded, magnitude = _reference(a, b, bias, case.relu)
    tol = _tolerance(rounded, magnitude, a.shape[1], a.dtype)
    acc = a.double().cpu() @ b.double().cpu()
    early = _mistakes(a, b, bias, case.relu, acc, ctx.device == "interpreter")[0][1]
    separated = float(((early - rounded).abs() > tol).double().mean())
    if separated < 0.3:
        raise RuntimeError(f"check bug: early rounding differs beyond tolerance on only "
                           f"{separated:.0%} of the outputs")
    out = _run(ctx, impl, a, b, bias, case.relu)
    _compare(ctx, out, a, b, bias, case.relu)
    _note_upcast(ctx, case.dtype)
    del torch


# ---------------------------------------------------------------------------------------------
# Knobs change nothing in the result
# ---------------------------------------------------------------------------------------------
def _group_cases(device: str) -> list[Case]:
    if device == "cuda":  # the second shape is TMA-aligned: on an H200 it runs the persistent path
        return [Case(shape=(1000, 900, 300), blocks=(64, 64, 32), dtype=d) for d in DTYPES] + \
               [Case(shape=(2048, 1152, 256), blocks=(128, 128, 64), dtype=d) for d in DTYPES]
    return [Case(shape=(100, 90, 40), blocks=(32, 32, 16), dtype=d) for d in DTYPES]


@register(W, "knobs.group_m", tier="kernel", uses=USES, cases=_group_cases,
          doc="GROUP_M only reorders tiles: every value gives the bitwise same output")
def knobs_group_m(ctx, impl, case):
    torch = ctx.torch
    m, n, k = case.shape
    bm, bn, bk = case.blocks
    a = ctx.randn((m, k), case.dtype)
    b = ctx.randn((k, n), case.dtype)
    bias = _bias(ctx, n, True)
    # 1 = row-major order; 2, 3 = several bands (the last one shorter); 64 = one band for all.
    groups = (1, 2, 3, 8, 64)
    outs = []  # kept alive: a freed output's memory must not be handed to the next call
    for g in groups:
        knobs = dict(block_m=bm, block_n=bn, block_k=bk, group_m=g)
        # ctx.call fills new memory with NaN: a tile never computed is wrong as a whole tile,
        # never right by the luck of what the allocator held.
        with launches.recording() as launched:
            out = _run(ctx, impl, a, b, bias, True, **knobs)
        outs.append(out)
        _compare(ctx, out, a, b, bias, True, name=f"gemm_bias_relu(group_m={g})", tile=(bm, bn))
        # The same bits for every group_m prove nothing if group_m never reached the kernel.
        _knobs_ignored(launched, knobs)
    first = outs[0].cpu().view(torch.int16)
    for g, out in zip(groups[1:], outs[1:], strict=True):
        if not torch.equal(out.cpu().view(torch.int16), first):
            diff = int((out.cpu().view(torch.int16) != first).sum())
            ctx.fail(f"group_m={g} changed {diff} output bits compared with group_m=1",
                     hint="grouped index arithmetic: the order of tiles must not change any tile's "
                          "value; each (pid_m, pid_n) must be computed exactly once")
    _note_upcast(ctx, case.dtype)


# ---------------------------------------------------------------------------------------------
# The grouped tile order itself (the values cannot show it: every order gives the same bits)
# ---------------------------------------------------------------------------------------------
_ORDER_PROBE_SOURCE = """def _tile_order_probe(out_ptr, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    tile_id = tl.program_id(0)
    pid_m, pid_n = _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
    tl.store(out_ptr + 2 * tile_id, pid_m)
    tl.store(out_ptr + 2 * tile_id + 1, pid_n)
"""
_order_probes: dict = {}  # id(the module's _tile_coords) -> (it, the probe kernel calling it)


def _order_probe(coords):
    """A @triton.jit kernel whose program t stores _tile_coords(t, ...) = (pid_m, pid_n) at
    out[2t], out[2t + 1], for the given _tile_coords (made once per function: Triton resolves a
    kernel's globals when it compiles, so each implementation gets its own kernel). Its source
    is registered with linecache, where triton.jit reads a kernel's source from."""
    import linecache

    import triton
    import triton.language as tl

    if id(coords) in _order_probes:
        return _order_probes[id(coords)][1]
    filename = f"<checks.fused_gemm tile-order probe {len(_order_probes)}>"
    lines = _ORDER_PROBE_SOURCE.splitlines(True)
    linecache.cache[filename] = (len(_ORDER_PROBE_SOURCE), None, lines, filename)
    namespace = {"tl": tl, "_tile_coords": coords}
    exec(compile(_ORDER_PROBE_SOURCE, filename, "exec"), namespace)  # noqa: S102 - our own source
    kernel = triton.jit(namespace["_tile_order_probe"])
    _order_probes[id(coords)] = (coords, kernel)
    return kernel


# The tenth learner audit: _tile_coords reading tl.program_id(0) where tile_id belongs (the
# pid of Triton's tutorial, where it is the tile id). The probe above runs one program per
# tile id, where the two are equal, and the pointer kernel does the same; only the persistent
# kernel, one program looping over several tiles, tells them apart, and under the interpreter
# its tiles all lie in one band (group_id = 0 either way): the mistake passed every check.
# This probe asks _tile_coords for every tile id from one program, as the persistent kernel
# does.
_ORDER_LOOP_PROBE_SOURCE = """def _tile_order_loop_probe(out_ptr, num_pid_m, num_pid_n,
                           GROUP_M: tl.constexpr):
    for tile_id in range(0, num_pid_m * num_pid_n):
        pid_m, pid_n = _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        tl.store(out_ptr + 2 * tile_id, pid_m)
        tl.store(out_ptr + 2 * tile_id + 1, pid_n)
"""
_order_loop_probes: dict = {}  # id(the module's _tile_coords) -> (it, the loop probe kernel)

TILE_ID_IGNORED = "_tile_coords reads the program id, not its tile_id argument"


def _order_loop_probe(coords):
    """The one-program kernel of _ORDER_LOOP_PROBE_SOURCE for the given _tile_coords (made as
    _order_probe makes its kernel)."""
    import linecache

    import triton
    import triton.language as tl

    if id(coords) in _order_loop_probes:
        return _order_loop_probes[id(coords)][1]
    filename = f"<checks.fused_gemm tile-order loop probe {len(_order_loop_probes)}>"
    lines = _ORDER_LOOP_PROBE_SOURCE.splitlines(True)
    linecache.cache[filename] = (len(_ORDER_LOOP_PROBE_SOURCE), None, lines, filename)
    namespace = {"tl": tl, "_tile_coords": coords}
    exec(compile(_ORDER_LOOP_PROBE_SOURCE, filename, "exec"), namespace)  # noqa: S102 - ours
    kernel = triton.jit(namespace["_tile_order_loop_probe"])
    _order_loop_probes[id(coords)] = (coords, kernel)
    return kernel


def _tile_id_ignored_hint(ctx, impl) -> str:
    """Diagnosis: does the learner's _tile_coords depend on the program that calls it, not only
    on tile_id? Asked on order.grouped's first grid (5 x 3 tiles, GROUP_M = 2: three bands) from
    one program per tile id (_order_probe) and from one program looping over every tile id
    (_order_loop_probe): a function of tile_id alone gives the same pairs both ways. ""
    otherwise, or when either cannot be asked."""
    from checks.context import call_learner

    coords = getattr(impl, "_tile_coords", None)
    if coords is None or not callable(coords):
        return ""
    tm, tn, group_m = _order_cases(ctx.device)[0].grid
    tiles = tm * tn
    try:
        kernel = _order_loop_probe(coords)
        out = ctx.torch.full((2 * tiles,), -1, dtype=ctx.torch.int32, device=ctx.torch_device)
        call_learner(lambda: kernel[(1,)](out, tm, tn, GROUP_M=group_m))
    except Exception:  # noqa: BLE001 - any failure: the helper cannot be asked
        return ""
    looped = [tuple(p) for p in out.cpu().view(tiles, 2).tolist()]
    per_program = _tile_coords_order(ctx, impl, tm, tn, group_m)
    if per_program is None or looped == per_program:
        return ""
    differ = [t for t in range(tiles) if looped[t] != per_program[t]]
    shown = ", ".join(f"{t}: {per_program[t]} vs {looped[t]}" for t in differ[:4])
    return (f"{TILE_ID_IGNORED}: on a {tm} x {tn} tile grid (GROUP_M = {group_m}) one program per "
            f"tile id and one program looping over every tile id, as the persistent kernel "
            f"does (a program per SM, several tiles each), get different (pid_m, pid_n) for "
            f"{len(differ)} of the {tiles} tile ids [tile id: per program vs looped: {shown}"
            f"{' ...' if len(differ) > 4 else ''}]; the tutorial's pid = tl.program_id(0) is "
            "the tile id only when every program owns one tile: compute group_id, local, pid_m "
            "and pid_n from tile_id alone")


def _grouped_band(t: int, tm: int, tn: int, group_m: int):
    """(first tile row, rows, tile column) that tile id t has in the grouped order: the band's
    rows first .. first + rows - 1 (the last band may be shorter) and the column local // rows."""
    first = t // (group_m * tn) * group_m
    rows = min(tm - first, group_m)
    return first, rows, t % (group_m * tn) // rows


def _order_cases(device: str) -> list[Case]:
    # (num_pid_m, num_pid_n, GROUP_M): bands with a shorter last one (5 = 2 + 2 + 1 rows,
    # 7 = 3 + 3 + 1, 9 = 4 + 4 + 1), and GROUP_M above the tile rows (one band for all).
    return [Case(grid=g) for g in ((5, 3, 2), (7, 4, 3), (9, 2, 4), (4, 6, 8))]


NO_TILE_COORDS_HINT = ("no _tile_coords helper: this check asks the module's "
                       "_tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M), a @triton.jit "
                       "function returning (pid_m, pid_n), for the order of the tiles (the "
                       "output cannot show it); keep the starter's helper, fill it in, and call "
                       "it from the kernels")


@register(W, "order.grouped", tier="kernel", uses=("tile_coords",), cases=_order_cases,
          doc="_tile_coords hands out tiles in grouped order: GROUP_M tile rows per band, ids "
              "running down the band's columns (asked of the helper in a probe kernel)")
def order_grouped(ctx, impl, case):
    from checks.context import call_learner

    torch = ctx.torch
    tm, tn, group_m = case.grid
    tiles = tm * tn
    coords = getattr(impl, "_tile_coords", None)
    if coords is None or not callable(coords):
        ctx.fail("the module has no _tile_coords function", hint=NO_TILE_COORDS_HINT)
    try:
        kernel = _order_probe(coords)
    except Exception as exc:  # noqa: BLE001 - e.g. a plain Python function, no source to read
        ctx.fail(f"_tile_coords could not be called from a probe kernel: "
                 f"{type(exc).__name__}: {exc}", hint=NO_TILE_COORDS_HINT)
    out = torch.full((2 * tiles,), -1, dtype=torch.int32, device=ctx.torch_device)
    label = f"a probe kernel calling _tile_coords(tile_id, {tm}, {tn}, GROUP_M={group_m})"
    call_learner(lambda: kernel[(tiles,)](out, tm, tn, GROUP_M=group_m), label=label)
    got = [tuple(p) for p in out.cpu().view(tiles, 2).tolist()]
    shown = ", ".join(f"{t}: {p}" for t, p in list(enumerate(got))[:8]) + " ..."
    message = (f"_tile_coords on a {tm} x {tn} tile grid with GROUP_M = {group_m} gave "
               f"(pid_m, pid_n) by tile id: {shown}")
    grid = {(i, j) for i in range(tm) for j in range(tn)}
    # (the mistaken order equals the right one on a square grid, or with a single band)
    mistaken = _band_of_num_pid_m(tm, tn, group_m)
    right = _grouped_replay(tm, tn, group_m, group_m * tn, group_m * tn)
    if got == mistaken != right:
        ctx.fail(message, hint=f"grouped index arithmetic: {BAND_OF_NUM_PID_M}; _tile_coords "
                 "gives exactly the order this mistake gives")
    if got == _group_size_max(tm, tn, group_m) != right:
        ctx.fail(message, hint=f"grouped index arithmetic: {GROUP_SIZE_MAX}; _tile_coords "
                 "gives exactly the order this mistake gives")
    for text, order in _coords_mistakes(tm, tn, group_m):
        if got == order != right:
            # In one band (first_pid_m = 0) pid_m and pid_n swapped and the band's // and %
            # swapped give the same order: name both there.
            divmod_swapped = [(first + local // size, local % size) for first, size, local in (
                (t // (group_m * tn) * group_m, min(tm - t // (group_m * tn) * group_m, group_m),
                 t % (group_m * tn)) for t in range(tiles))]
            twin = ("; or, the same order on this grid of one band, the band's // and % swapped "
                    "(pid_m = first_pid_m + local // group_size_m, pid_n = local % group_size_m)"
                    if text == PID_MN_SWAPPED and order == divmod_swapped else "")
            ctx.fail(message, hint=f"grouped index arithmetic: {text}; _tile_coords gives "
                     f"exactly the order this mistake gives{twin}")
    if set(got) != grid:
        missed = sorted(grid - set(got))[:4]
        twice = sorted({p for p in got if got.count(p) > 1})[:4]
        outside = sorted({p for p in got if p not in grid})[:4]
        ctx.fail(message, hint=f"grouped index arithmetic: the tile ids do not reach every tile "
                 f"once (never: {missed}; twice: {twice}; outside the grid: {outside}); inside a "
                 "band of group_size_m = min(num_pid_m - first_pid_m, GROUP_M) rows the ids run "
                 "down a column: pid_m = first_pid_m + local % group_size_m, pid_n = local // "
                 "group_size_m (check num_pid_in_group = GROUP_M * num_pid_n, group_id, "
            "first_pid_m, group_size_m, pid_m and pid_n)")
    wrong = []
    for t, (pm, pn) in enumerate(got):
        first, rows, col = _grouped_band(t, tm, tn, group_m)
        if pn != col or not first <= pm < first + rows:
            wrong.append((t, (pm, pn), first, rows, col))
    if not wrong:
        # grouped (any order of the rows inside a band's column will do), asked from one
        # program per tile: is it the same asked from one program for every tile?
        hint = _tile_id_ignored_hint(ctx, impl)
        if hint:
            ctx.fail(message, hint=hint)
        return
    if got == [(t // tn, t % tn) for t in range(tiles)]:
        hint = ("grouped order skipped: _tile_coords returns row-major order (pid_m = tile_id // "
                f"num_pid_n, pid_n = tile_id % num_pid_n) whatever GROUP_M is (here {group_m}; ids "
                "running along each band's rows, pid_m = first_pid_m + local // num_pid_n, give "
                "this very order, the bands being whole tile rows); the output is right, but "
                "programs that run at the same time no longer share rows of A and columns of B. "
                "Group the tiles in bands of GROUP_M tile rows whose "
                "ids run down each column: group_id = tile_id // (GROUP_M * num_pid_n), "
                "first_pid_m = group_id * GROUP_M, group_size_m = min(num_pid_m - first_pid_m, "
                "GROUP_M), local = tile_id % (GROUP_M * num_pid_n), pid_m = first_pid_m + local "
                "% group_size_m, pid_n = local // group_size_m")
    elif got == [(t % tm, t // tm) for t in range(tiles)]:
        hint = ("one band for every tile row: _tile_coords returns column-major order (pid_m = "
                f"tile_id % num_pid_m, pid_n = tile_id // num_pid_m) whatever GROUP_M is (here "
                f"{group_m}); a band holds GROUP_M tile rows: group_id = tile_id // (GROUP_M * "
                "num_pid_n), and the ids run down the band's columns of group_size_m tiles")
    else:
        t, p, first, rows, col = wrong[0]
        hint = (f"not the grouped order: tile id {t} should be in band rows {first}..."
                f"{first + rows - 1}, column {col} (bands of GROUP_M = {group_m} tile rows, the "
                f"last one shorter; inside a band the ids run down a column of group_size_m "
                f"tiles), but _tile_coords gave {p} ({len(wrong)} of {tiles} ids out of place): "
                "pid_m = first_pid_m + local % group_size_m, pid_n = local // group_size_m")
    ctx.fail(message, hint=hint)


def _block_cases(device: str) -> list[Case]:
    if device == "cuda":
        # Every entry of the module's CONFIGS, one case per kernel (cases are listed before
        # the module is imported, so the entries are read inside the check). persistent=True,
        # not None: at 1000 x 1032 the launcher's own choice is the pointer kernel (72 tiles of
        # 128 x 128 for 132 SMs, see few_tiles), so None would check that kernel twice.
        return [Case(config="CONFIGS", persistent=p, dtype="bfloat16") for p in (False, True)]
    configs = [(16, 16, 16, 1, 1), (32, 64, 16, 4, 2), (64, 32, 32, 2, 3), (16, 128, 64, 4, 1)]
    return [Case(config=c, dtype=d) for c in configs for d in DTYPES]


@register(W, "knobs.blocks", tier="kernel", uses=USES, cases=_block_cases,
          doc="block sizes, warps and stages change nothing beyond float32 rounding")
def knobs_blocks(ctx, impl, case):
    if case.config == "CONFIGS":
        # GPU: the module's own CONFIGS list (the benchmark sweep's candidates), every entry
        # checked for correctness before anyone times it.
        from checks.core import Unavailable

        configs = [dict(c) for c in getattr(impl, "CONFIGS", None) or []]
        if not configs:
            raise Unavailable("the module has no CONFIGS list")
        for knobs in configs:
            if case.persistent is not None:
                knobs["persistent"] = case.persistent
        m, n, k = 1000, 1032, 520
    else:
        bm, bn, bk, warps, stages = case.config
        configs = [dict(block_m=bm, block_n=bn, block_k=bk, num_warps=warps, num_stages=stages)]
        m, n, k = 70, 90, 50
    for knobs in configs:
        a = ctx.randn((m, k), case.dtype)
        b = ctx.randn((k, n), case.dtype)
        bias = _bias(ctx, n, True)
        with launches.recording() as launched:
            out = _run(ctx, impl, a, b, bias, True, **knobs)
        _compare(ctx, out, a, b, bias, True, name=f"gemm_bias_relu({knobs})",
                 tile=(knobs["block_m"], knobs["block_n"]))
        _knobs_ignored(launched, knobs)
    _note_upcast(ctx, case.dtype)


# ---------------------------------------------------------------------------------------------
# The persistent TMA path
# ---------------------------------------------------------------------------------------------
def _persistent_cases(device: str) -> list[Case]:
    # TMA needs 16-byte aligned row strides: K and N multiples of 8 for 16-bit "row" operands,
    # M multiples of 8 for transposed A. Tails in M, N, K are still ragged w.r.t. the blocks.
    # tma_store: None lets the launcher store C through a descriptor when N * 2 is a multiple of
    # 16 (all shapes but N = 20, whose B is a transposed view); False forces pointer stores.
    shapes = [(72, 80, 40), (8, 24, 56)] if device != "cuda" else [
        (72, 80, 40), (1000, 1032, 520), (2048, 2048, 2048), (8, 4096, 1024)]
    layouts = [("row", "row"), ("col", "row"), ("row", "col"), ("col", "col")]
    cases = []
    for i, s in enumerate(shapes):
        for j, (la, lb) in enumerate(layouts):
            for d in DTYPES:
                bias, relu = _COMBOS[(i + j) % 4]
                cases.append(Case(shape=s, a=la, b=lb, dtype=d, bias=bias, relu=relu,
                                  tma_store=None))
    if device != "cuda":  # the interpreter: one layout pair per shape and dtype is enough
        cases = [c for c in cases if (c.a, c.b) in (("row", "row"), ("col", "col"))
                 or (c.shape == (72, 80, 40) and c.dtype == "float16")]
    extra = [(24, 20, 56)] if device != "cuda" else [(24, 20, 56), (1000, 1020, 520)]
    cases += [Case(shape=s, a="row", b="col", dtype=d, bias=True, relu=True, tma_store=None)
              for s in extra for d in DTYPES]
    cases += [Case(shape=shapes[0], a="row", b="row", dtype=d, bias=True, relu=False,
                   tma_store=False) for d in DTYPES]
    # tma_store=True asked for explicitly: the kernel must get it (TMA_STORE), not only give
    # right values, which the pointer stores give too.
    cases += [Case(shape=shapes[0], a="row", b="row", dtype="float16", bias=True, relu=True,
                   tma_store=True)]
    return cases


def _allow_descriptor_loads_under_bounds_check() -> None:
    """Interpreter only: let TMA descriptor loads through the framework's bounds check.

    The interpreter implements a descriptor load as a masked load called with keyword arguments
    (cache_modifier=..., eviction_policy=..., is_volatile=...); checks/device.py's bounds-check
    wrapper takes them positionally only. This adapter passes them on positionally. It changes
    nothing once the wrapper accepts **kwargs (the lead's fix), and is removed then.
    """
    import inspect

    from triton.runtime import interpreter

    cls = type(interpreter.interpreter_builder)
    current = cls.create_masked_load
    if getattr(current, "_accepts_keywords", False):
        return
    params = inspect.signature(current).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return
    if not any(p.name == "cache_modifier" for p in params) and not any(
            p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return

    def load(self, ptrs, mask, other, cache_modifier=None, eviction_policy=None,
             is_volatile=False):
        return current(self, ptrs, mask, other, cache_modifier, eviction_policy, is_volatile)

    load._accepts_keywords = True
    cls.create_masked_load = load


def _persistent_inputs(ctx, case, **knobs):
    """A, B and the bias of a persistent-kernel case, and the knobs to pass: `knobs` plus
    persistent=True, and small blocks under the interpreter (several tiles and K steps per
    program). UNAVAILABLE before compute capability 9.0."""
    from checks.core import Unavailable

    if ctx.device == "cuda" and ctx.torch.cuda.get_device_capability()[0] < 9:
        raise Unavailable("the persistent TMA path needs compute capability 9.0 or newer")
    if ctx.device == "interpreter":
        _allow_descriptor_loads_under_bounds_check()
    m, n, k = case.shape
    a = _operand(ctx, m, k, case.dtype, case.a)
    b = _operand(ctx, k, n, case.dtype, case.b)
    bias = _bias(ctx, n, case.bias, scale=2.0)
    knobs = dict(persistent=True, **knobs)
    if ctx.device != "cuda":
        knobs.update(block_m=32, block_n=32, block_k=16)
    return a, b, bias, knobs


@register(W, "persistent.tma", tier="kernel", uses=USES, cases=_persistent_cases,
          doc="persistent=True: the persistent TMA-descriptor kernel, row-major and transposed "
              "operands")
def persistent_tma(ctx, impl, case):
    extra = {} if case.tma_store is None else dict(tma_store=case.tma_store)
    a, b, bias, knobs = _persistent_inputs(ctx, case, **extra)
    with launches.recording() as launched:
        out = _run_persistent(ctx, impl, a, b, bias, case.relu, knobs)
    _compare(ctx, out, a, b, bias, case.relu)
    _knobs_ignored(launched, knobs)
    _note_upcast(ctx, case.dtype)


def _run_persistent(ctx, impl, a, b, bias, relu, knobs):
    """_run, and fail unless the persistent kernel is what ran: a launcher that ignored
    persistent=True would still give right values."""
    with ctx.count_launches() as log:
        out = _run(ctx, impl, a, b, bias, relu, **knobs)
    if not any("persistent" in name for name in log):
        raise CheckFailed(f"gemm_bias_relu({knobs}) launched {log or 'no kernel'}, not the "
                          "persistent kernel",
                          hint="persistent=True must run gemm_bias_relu_persistent_kernel (or "
                               "refuse with a ValueError where it cannot run)")
    return out


def _stream_k_cases(device: str) -> list[Case]:
    # Shapes whose tiles leave a partly filled last wave, so stream_k=True shares those tiles'
    # K-steps among all programs: the interpreter runs 3 programs over 32 x 32 x 16 blocks
    # (40 x 40 x 56: 4 tiles, the last one shared by all three programs; 104 x 40 x 136: 8
    # tiles, the last two shared, runs starting and ending mid-tile; 40 x 104 x 24: 8 tiles of
    # 2 K-steps, the last two shared as 4 steps over 3 programs, and program 1's run is the
    # last K-step of the first shared tile alone: the owner of a tile's last step is not
    # step * programs // steps, an off-by-one the other shapes do not expose); the GPU one
    # program per SM at the default tiles (on 132 SMs: 48 of 576, 84 of 216, 57 of 585 and 124
    # of 256 tiles shared; ragged M, N and K), transposed A included.
    if device != "cuda":
        shapes = [((40, 40, 56), "row"), ((104, 40, 136), "row"), ((104, 40, 136), "col"),
                  ((40, 104, 24), "row")]
    else:
        shapes = [((3072, 3072, 1024), "row"), ((3000, 2056, 1016), "col"),
                  ((1032, 8200, 1000), "row"), ((1024, 8192, 2040), "row")]
    cases = [Case(shape=s, a=la, b="row", dtype=d, bias=bias, relu=relu)
             for i, (s, la) in enumerate(shapes) for d in DTYPES
             for bias, relu in [_COMBOS[i % 4]]]
    if device != "cuda":
        # 128-row tiles: the reference adds a shared tile's partials up 64 rows at a time
        # (_MAX_FIXUP_ROWS), so this shared tile takes two bands (4 tiles of 128 x 16 x 16 on 3
        # programs: the last one shared); in 32-row tiles the band loop runs once.
        cases.append(Case(shape=(128, 64, 56), a="row", b="row", dtype="float16", bias=True,
                          relu=False, blocks=(128, 16, 16)))
    return cases


def _stream_k_ignored(launched, m: int, n: int, k: int, knobs) -> None:
    """FAIL if stream_k=True launched a kernel whose STREAM_K is off although its tiles leave a
    partly filled last wave with at least as many K-steps as programs to deal out. Kernels
    without STREAM_K, BLOCK_M, BLOCK_N, BLOCK_K or a plain grid are not judged."""
    for launch in launched:
        args = launch.arguments
        if "STREAM_K" not in args or launch.grid is None or not launch.grid:
            continue
        if not all(isinstance(args.get(name), int) for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K")):
            continue
        programs = launch.grid[0]
        tiles = -(-m // args["BLOCK_M"]) * -(-n // args["BLOCK_N"])
        leftover = tiles % programs if programs > 0 else 0
        if leftover and leftover * -(-k // args["BLOCK_K"]) >= programs and not args["STREAM_K"]:
            raise CheckFailed(
                f"gemm_bias_relu({knobs}) launched {launch.name} with STREAM_K="
                f"{args['STREAM_K']!r} on {programs} programs for {tiles} tiles",
                hint=f"knob ignored: stream_k=True was asked for and {tiles} tiles on {programs} "
                     f"programs leave {leftover} in a partly filled last wave, but "
                     f"{launch.name} ran with STREAM_K={args['STREAM_K']!r}: the last wave's "
                     "K-steps were not shared (see stream_k_tiles)")


@register(W, "persistent.stream_k", tier="kernel", uses=USES,
          cases=_stream_k_cases,
          doc="stream_k=True: the tiles of a partly filled last wave shared among all programs; "
              "right, and the same bits on a second call")
def persistent_stream_k(ctx, impl, case):
    torch = ctx.torch
    a, b, bias, knobs = _persistent_inputs(ctx, case, stream_k=True)
    if case.get("blocks"):
        knobs.update(zip(("block_m", "block_n", "block_k"), case.blocks, strict=True))
    with launches.recording() as launched:
        out = _run_persistent(ctx, impl, a, b, bias, case.relu, knobs)
    try:
        _compare(ctx, out, a, b, bias, case.relu, name=f"gemm_bias_relu({knobs})")
    except CheckFailed as exc:
        # Right without the sharing? Then the hand-off is what is wrong. tma_store=False: the
        # shared tiles are stored through _store_tile, so the run without sharing must store
        # through it too (a TMA store clips the tails itself and would hide an unmasked
        # _store_tile); a failing call, like wrong values, leaves the hand-off unblamed.
        try:
            plain = _run(ctx, impl, a, b, bias, case.relu,
                         **dict(knobs, stream_k=False, tma_store=False))
            _compare(ctx, plain, a, b, bias, case.relu)
        except CheckFailed:
            # Wrong without the sharing too: not the hand-off. Where nothing replayed names
            # the mistake, ask the store itself, as _probe_failure does: the shared tiles are
            # stored through _store_tile and the others here through a TMA descriptor, so a
            # wrong _store_tile shows differently from shape to shape (C's strides swapped:
            # stores inside C that overwrite other tiles, no hint, at 40 x 40; the shared
            # tiles' own places left unwritten at 104 x 40; stores past C, which the bounds
            # check stops and _run's probes name, at 40 x 104), and on a GPU its misplaced
            # stores race with the TMA stores of the same places. The square probe of the
            # pointer kernel gives every case the same answer.
            if not exc.hint or exc.hint.startswith("output never written"):
                hint = _store_probe(ctx, impl, exc.message)
                if hint:
                    raise CheckFailed(exc.message, hint=hint, max_error=exc.max_error,
                                      tolerance=exc.tolerance) from None
            raise exc from None
        raise CheckFailed(exc.message, hint="stream_k=False is right, stream_k=True is not: the "
                          "hand-off of the shared last-wave tiles loses a partial sum, adds one "
                          "twice or reads one before it is written", max_error=exc.max_error,
                          tolerance=exc.tolerance) from None
    # The partial sums are added in K order by whichever program arrives last: the bits must
    # not depend on who that was. A race in the hand-off would show here too.
    again = _run(ctx, impl, a, b, bias, case.relu, **knobs)
    if not torch.equal(out, again):
        n_diff = int((out != again).sum())
        raise CheckFailed(f"two identical calls with {knobs} differ in {n_diff} of "
                          f"{out.numel()} elements",
                          hint="shared tiles depend on arrival order (partials not summed in a "
                               "fixed order, or read before they were written)")
    _knobs_ignored(launched, knobs)
    _stream_k_ignored(launched, *case.shape, knobs)
    _note_upcast(ctx, case.dtype)


# ---------------------------------------------------------------------------------------------
# Staging unaligned operands
# ---------------------------------------------------------------------------------------------
def _staged_cases(device: str) -> list[Case]:
    # Odd K and N: no row of A or B starts on a 16-byte boundary. persistent=None lets the
    # launcher choose the kernel for the staged copies (the pointer kernel under the
    # interpreter); persistent=True needs TMA-aligned operands, which only the staged copies
    # are, so it shows the staging is what makes the TMA path possible (the interpreter runs
    # it too, in small blocks, as persistent.tma does).
    shapes = [(33, 17, 29), (5, 9, 7)] if device != "cuda" else [(33, 17, 29), (4095, 4097, 4093)]
    cases = [Case(shape=s, dtype=d, bias=True, relu=True, persistent=p) for s in shapes
             for d in DTYPES for p in (None, True)]
    # ReLU off as well: on a GPU max(NaN, 0) is 0 (PTX max.f32 returns the number), so under
    # ReLU unzeroed padding shows as zeros, not as the NaN it put in the sums.
    return cases + [Case(shape=shapes[0], dtype=d, bias=True, relu=False, persistent=p)
                    for d in DTYPES for p in (None, True)]


STAGING_HINT = ("staging skipped: stage_unaligned=True must copy each operand whose rows are not "
                "16-byte aligned into a zero-padded buffer with rows of a multiple of 16 bytes "
                "(8 elements of 16 bits, see _gemm_staged) and run the GEMM on the copies; on the "
                "operands as given the pointer kernel loads every element on its own, and "
                "persistent=True is refused (TMA needs the alignment)")


def _aligned_holders(log, t) -> set[int]:
    """Indices of the allocation-log entries that could hold a 16-byte aligned copy of the 2-D
    operand t: t's dtype, at least t's extent in each dimension (or its transpose's: a copy may
    be stored column-major), and rows of a multiple of 16 bytes."""
    rows, cols = t.shape
    item = t.element_size()
    found = set()
    for i, (shape, dtype) in enumerate(log):
        if dtype != t.dtype or len(shape) != 2 or (shape[1] * item) % 16:
            continue
        if (shape[0] >= rows and shape[1] >= cols) or (shape[0] >= cols and shape[1] >= rows):
            found.add(i)
    return found


def _rows_unaligned(t) -> bool:
    return t.data_ptr() % 16 != 0 or (t.stride(0) * t.element_size()) % 16 != 0


def _staging_missing(log, launched, knobs, operands) -> str:
    """'' if the allocation log holds an aligned copy of every unaligned operand (two distinct
    tensors for two operands), else a message naming the operands and what was launched."""
    unaligned = [(name, t) for name, t in operands if _rows_unaligned(t)]
    holders = [_aligned_holders(log, t) for _, t in unaligned]
    if all(holders) and (len(holders) < 2 or len(holders[0] | holders[1]) >= 2):
        return ""
    shown = " and ".join(f"{name} {tuple(t.shape)} (rows of {t.stride(0) * t.element_size()} "
                         "bytes)" for name, t in unaligned)
    return (f"gemm_bias_relu({knobs}) allocated no 16-byte aligned copy of {shown} and launched "
            f"{launched or 'no kernel'} on the operands as given")


PADDING_HINT = ("padding of the staged copies not zeroed: the output has NaN where the result is "
                "a number; the checks fill the memory torch.empty returns with NaN during a call, so "
                "padding read before it was written shows. Write "
                "0 into the padded columns of A's copy and the padded rows of B's copy (see "
                "_gemm_staged): 0 adds nothing to a dot product, garbage or NaN does")


def _padding_not_zeroed(got, expected, bad):
    if bool((got[bad].isnan() & ~expected[bad].isnan()).any()):
        return PADDING_HINT
    # On a GPU ReLU turns NaN into 0 (max.f32 returns its number operand): NaN padding in
    # every row of A's copy then leaves the whole output 0 where the result is positive.
    if bool((got == 0).all()) and bool((expected[bad] > 0).all()):
        return PADDING_HINT + " (under ReLU a NaN sum comes out as 0 on a GPU: the whole output is 0)"
    return None


@register(W, "staged.unaligned", tier="kernel", uses=USES, cases=_staged_cases,
          doc="stage_unaligned=True: odd K and N through zero-padded aligned copies (the copies "
              "are made, and persistent=True runs the TMA kernel on them)")
def staged_unaligned(ctx, impl, case):
    m, n, k = case.shape
    if case.persistent:
        a, b, bias, knobs = _persistent_inputs(ctx, Case(case, a="row", b="row"))
    else:
        a = ctx.randn((m, k), case.dtype)
        b = ctx.randn((k, n), case.dtype)
        bias = _bias(ctx, n, case.bias, scale=2.0)
        knobs = {}
    knobs["stage_unaligned"] = True
    # Right values prove nothing here: the pointer kernel reads unaligned operands correctly,
    # only slowly. What shows the staging ran is what the launcher allocated (a padded copy of
    # each unaligned operand) and, with persistent=True, that the TMA kernel could run at all.
    # ctx.call fills new memory with NaN, so padding left unwritten poisons the result every
    # time.
    with ctx.track_allocations() as log, ctx.count_launches() as launched:
        try:
            out = _run(ctx, impl, a, b, bias, case.relu, **knobs)
        except CheckFailed as exc:
            error = exc  # e.g. persistent=True refused because the operands were never staged
        else:
            error = None
    missing = _staging_missing(log, launched, knobs, (("a", a), ("b", b)))
    if error is not None:
        raise CheckFailed(error.message + (f"\n{missing}" if missing else ""),
                          hint=STAGING_HINT if missing else error.hint) from None
    if missing:
        raise CheckFailed(missing, hint=STAGING_HINT)
    if not launched:
        raise CheckFailed(f"gemm_bias_relu({knobs}) made the aligned copies but launched no "
                          "kernel", hint="the GEMM on the staged copies must run the Triton "
                                         "kernel (gemm_bias_relu with stage_unaligned=False)")
    if case.persistent and not any("persistent" in name for name in launched):
        raise CheckFailed(f"gemm_bias_relu({knobs}) launched {launched}, not the persistent "
                          "kernel", hint="persistent=True with stage_unaligned=True must run "
                                         "gemm_bias_relu_persistent_kernel on the staged copies")
    _compare(ctx, out, a, b, bias, case.relu, name=f"gemm_bias_relu({knobs})",
             extra=[_padding_not_zeroed])
    _note_upcast(ctx, case.dtype)


# ---------------------------------------------------------------------------------------------
# Bad calls
# ---------------------------------------------------------------------------------------------
@register(W, "bad_calls", tier="kernel", uses=USES,
          doc="bad calls raise TypeError/ValueError naming the argument, before any launch")
def bad_calls(ctx, impl, case):
    torch = ctx.torch
    dev = ctx.torch_device
    f = impl.gemm_bias_relu
    a = ctx.randn((8, 16), "float16")
    b = ctx.randn((16, 12), "float16")
    bias = ctx.randn((12,), "float32")
    e = ctx.expect_error
    e(f, ctx.randn((16,), "float16"), b, mentions=["a", "2-D"], what="a is 1-D")
    e(f, a, ctx.randn((16,), "float16"), mentions=["b", "2-D"], what="b is 1-D")
    e(f, a, ctx.randn((2, 16, 12), "float16"), mentions=["b", "2-D"], what="b is 3-D")
    e(f, a, ctx.randn((15, 12), "float16"), mentions=["K"], what="mismatched K")
    e(f, a, b.to(torch.bfloat16), mentions=["b", "dtype"], what="mixed dtypes")
    e(f, a.float(), b.float(), mentions=["a", "float16"], what="float32 operands")
    e(f, [[1.0]], b, mentions=["a"], what="a not a tensor")
    e(f, a.to_sparse(), b, mentions=["a", "dense"], what="sparse a")
    # views whose memory holds the values before a lazy negation (`z.conj().imag` makes one)
    e(f, a, torch._neg_view(b), mentions=["b", "resolve_neg"], what="lazily negated b")
    e(f, a, b, torch._neg_view(bias), mentions=["bias", "resolve_neg"],
      what="lazily negated bias")
    e(f, a, b, ctx.randn((13,), "float32"), mentions=["bias", "12"], what="bias of length 13")
    e(f, a, b, bias.half(), mentions=["bias", "float32"], what="float16 bias")
    e(f, a, b, bias[None, :], mentions=["bias", "1-D"], what="2-D bias")
    e(f, a, b, bias, relu="yes", mentions=["relu"], what="relu not a bool")
    e(f, a, b, block_m=48, mentions=["block_m"], what="block_m not a power of two")
    e(f, a, b, block_n=8, mentions=["block_n"], what="block_n below 16")
    e(f, a, b, block_k=512, mentions=["block_k"], what="block_k above 256")
    e(f, a, b, block_k=8, mentions=["block_k"], what="block_k below 16")
    e(f, a, b, block_m=32.0, mentions=["block_m"], what="block_m a float")
    e(f, a, b, group_m=0, mentions=["group_m"], what="group_m = 0")
    e(f, a, b, group_m=-2, mentions=["group_m"], what="group_m < 0")
    e(f, a, b, num_warps=3, mentions=["num_warps"], what="num_warps = 3")
    e(f, a, b, num_warps=32, mentions=["num_warps"], what="num_warps = 32")
    e(f, a, b, num_warps=4.0, mentions=["num_warps"], what="num_warps a float")
    e(f, a, b, num_stages=0, mentions=["num_stages"], what="num_stages = 0")
    e(f, a, b, num_stages=9, mentions=["num_stages"], what="num_stages = 9")
    e(f, a, b, persistent="yes", mentions=["persistent"], what="persistent not a bool")
    e(f, a, b, stream_k=1, mentions=["stream_k"], what="stream_k not a bool")
    e(f, a, b, persistent=False, stream_k=True, mentions=["stream_k", "persistent"],
      what="stream_k without the persistent kernel")
    e(f, a, b, stage_unaligned=1, mentions=["stage_unaligned"], what="stage_unaligned not a bool")
    e(f, a, b, tma_store=1, mentions=["tma_store"], what="tma_store not a bool")
    e(f, a, b, persistent=False, tma_store=True, mentions=["tma_store"],
      what="tma_store without the persistent kernel")
    e(f, a, ctx.randn((10, 16), "float16").t(), persistent=True, tma_store=True,
      mentions=["tma_store"], what="tma_store with 20-byte output rows")
    e(f, a[:, 1:9], b[:8], persistent=True, mentions=["persistent", "aligned"],
      what="persistent with an unaligned slice")
    # TMA also needs 16-byte aligned row strides (an aligned base is not enough), and a row
    # stride of 0 (a broadcast operand) is not one it can describe.
    aligned_b = ctx.randn((16, 16), "float16")
    e(f, ctx.randn((8, 15), "float16"), ctx.randn((15, 16), "float16"), persistent=True,
      mentions=["persistent", "aligned"], what="persistent with 30-byte rows of a (odd K)")
    e(f, a, b, persistent=True, mentions=["persistent", "aligned"],
      what="persistent with 24-byte rows of b (N = 12)")
    e(f, ctx.randn((1, 16), "float16").expand(8, 16), aligned_b, persistent=True,
      mentions=["persistent"], what="persistent with a broadcast a (row stride 0)")
    e(f, a, ctx.randn((1, 16), "float16").expand(16, 16), persistent=True,
      mentions=["persistent"], what="persistent with a broadcast b (row stride 0)")
    e(f, a, b, block_m=256, block_n=256, num_warps=4, mentions=["num_warps"],
      what="accumulator too large for the threads")
    e(f, a, b, persistent=True, block_m=256, block_n=256, num_warps=4, mentions=["num_warps"],
      what="accumulator too large (persistent)")
    # The public helpers spread tiles over SMs (programs): a count of 0 must be refused, not
    # end in a ZeroDivisionError.
    if hasattr(impl, "default_config"):
        e(impl.default_config, 64, 64, 64, num_sms=0, mentions=["num_sms"],
          what="default_config with num_sms = 0")
        e(impl.default_config, 64, 64, 64, num_sms=1.5, mentions=["num_sms"],
          what="default_config with a float num_sms")
    if hasattr(impl, "stream_k_tiles"):
        e(impl.stream_k_tiles, 4, 0, 8, None, mentions=["programs"],
          what="stream_k_tiles with 0 programs")
    if ctx.device == "cuda":
        e(f, a.cpu(), b.cpu(), mentions=["cuda"], what="CPU tensors on a GPU run")
        e(f, a, b, bias.cpu(), mentions=["bias"], what="bias on the CPU")
        e(f, a, b.cpu(), mentions=["b", "device"], what="b on the CPU, a on the GPU")
    del dev


# ---------------------------------------------------------------------------------------------
# CUDA only
# ---------------------------------------------------------------------------------------------
@register(W, "cuda.stream", tier="cuda", uses=USES,
          cases=[Case(shape=(2048, 2048, 1024), dtype="bfloat16", persistent=p)
                 for p in (False, None)],
          doc="launches on the caller's current (non-default) stream")
def cuda_stream(ctx, impl, case):
    ctx.require_cuda()
    torch = ctx.torch
    m, n, k = case.shape
    source_a = ctx.randn((m, k), case.dtype)
    b = ctx.randn((k, n), case.dtype)
    bias = _bias(ctx, n, True)
    knobs = {} if case.persistent is None else dict(persistent=case.persistent)
    stream = torch.cuda.Stream()
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        busy = torch.randn((4096, 4096), device="cuda")
        _ = busy @ busy  # keep the side stream busy so a launch on another stream would race
        a = source_a * 1  # a is written on the side stream, after the busy work
        out = _run(ctx, impl, a, b, bias, True, **knobs)
    stream.synchronize()
    try:
        _compare(ctx, out, source_a, b, bias, True, name="gemm_bias_relu on a side stream")
    except CheckFailed as exc:
        raise CheckFailed(exc.message, hint="launched on the default stream instead of the current "
                          "one (read a before it was written)") from exc
