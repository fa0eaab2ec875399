from tests.bugs import Bug, seen_later

BUGS = [
    Bug("numerator_not_rescaled", find="        acc = acc * alpha[:, None]\n",
        replace="        acc = acc\n", check="forward.values", hint="numerator not rescaled"),
    Bug("causal_mask_excludes_diagonal", find="offs_m[:, None] >= offs_n[None, :]",
        replace="offs_m[:, None] > offs_n[None, :]", check="forward.values",
        hint="causal mask excludes the diagonal"),
    Bug("scale_after_softmax", find="    qk_scale = scale * _LOG2E  #",
        replace="    qk_scale = _LOG2E; v = v * scale  #", check="forward.values",
        hint="scale applied after softmax"),
    Bug("keys_past_n_unmasked", find="keep = offs_n[None, :] < n_ctx",
        replace="keep = offs_n[None, :] >= 0", check="forward.values",
        hint="keys past N unmasked"),
    Bug("max_not_carried", find="m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)",
        replace="m_new = tl.max(s, 1) * qk_scale", check="forward.extreme",
        hint="max not carried across blocks"),
    Bug("full_score_matrix",
        find="    return _launch(q[None], k[None], v[None], causal, scale, config)[0]",
        replace="    return _attention_dense(q, k, v, causal=causal, scale=scale)",
        check="memory.no_square", hint="full score matrix allocated"),
    Bug("denominator_not_rescaled", find="l_i = l_i * alpha + tl.sum(p, 1)",
        replace="l_i = l_i + tl.sum(p, 1)", check="forward.values",
        hint="denominator not rescaled"),
    # The running numerator held in float16 between key blocks, as after `acc = tl.zeros(...,
    # tl.float16)` with every update cast back to acc's dtype (Triton refuses a loop-carried acc
    # whose dtype changes). One substitution with the same numerics: under the interpreter q,
    # k and v are upcast (UPCAST_DOT), so `v.dtype` there would not name the 16-bit type.
    Bug("accumulator_in_16_bits",
        find="acc = tl.dot(p.to(v.dtype), v, acc, input_precision=DOT_PRECISION)  # fp32 accumulate",
        replace="acc = tl.dot(p.to(v.dtype), v, acc, input_precision=DOT_PRECISION)"
                ".to(tl.float16).to(tl.float32)",
        check="forward.extreme", hint="accumulator kept in 16 bits"),
    Bug("exp_instead_of_exp2", find="p = tl.math.exp2(s * qk_scale - m_new[:, None])",
        replace="p = tl.exp(s * qk_scale - m_new[:, None])", check="forward.values",
        hint="exp used with log2-unit scores"),
    Bug("tail_rows_stored",
        find="tl.store(o_ptrs, out.to(out_ptr.dtype.element_ty), mask=offs_m[:, None] < n_ctx)",
        replace="tl.store(o_ptrs, out.to(out_ptr.dtype.element_ty))", check="forward.values",
        hint="tail not masked"),
    Bug("split_merge_not_rescaled",
        find="weight = tl.math.exp2(tl.load(m_part_ptr + rows, mask=ok, other=0.0) - m_max)",
        replace="weight = tl.math.exp2(tl.load(m_part_ptr + rows, mask=ok, other=0.0) * 0.0)",
        check="forward.kv_splits", hint="merged without rescaling"),
    Bug("masked_stage_in_every_split", find="hi2 = tl.where(split == KV_SPLITS - 1, hi2, lo2)",
        replace="hi2 = hi2", check="forward.kv_splits", hint="ran in every split"),
    # The Hopper path (a Gluon kernel only a GPU runs): the same mistake in its consumer loop.
    Bug("ws_numerator_not_rescaled",
        find="        acc = acc * gl.convert_layout(alpha, ROW_O)[:, None]\n",
        replace="        acc = acc\n", check="cuda.warp_specialized",
        hint="numerator not rescaled", module="_attention_hopper", gpu_only=True),
    Bug("scale_not_validated", find="    if not math.isfinite(scale) or scale <= 0.0:\n",
        replace="    if False:\n", check="bad_calls", hint="validate"),
]

BUGS += [
    # v's features addressed with k's feature stride: right while both are 1 (row-major).
    Bug("v_feature_stride_of_k",
        find="v_offs = offs_n0[:, None] * stride_vn + cols[None, :] * stride_vd",
        replace="v_offs = offs_n0[:, None] * stride_vn + cols[None, :] * stride_kd",
        check="forward.strided", hint="v's strides mixed up with k's"),
    # The output allocated like q: for a column-major q it is column-major too (right values,
    # but the API promises a new contiguous tensor).
    Bug("output_like_q",
        find="    out = torch.empty((heads, n_ctx, head_dim), dtype=q.dtype, device=q.device)\n"
             "    if out.numel() == 0:",
        replace="    out = torch.empty_like(q)\n    if out.numel() == 0:",
        check="forward.strided", hint="new contiguous output"),
    # The output cached per shape (on the launcher): a second call of the same shape overwrites
    # the first call's result.
    Bug("output_cached",
        find="    out = torch.empty((heads, n_ctx, head_dim), dtype=q.dtype, device=q.device)\n"
             "    if out.numel() == 0:",
        replace="    out = _launch.__dict__.setdefault((heads, n_ctx, head_dim, q.dtype, q.device), "
                "torch.empty((heads, n_ctx, head_dim), dtype=q.dtype, device=q.device))\n"
                "    if out.numel() == 0:",
        check="forward.values", hint="no cached buffer"),
    # The running max started at a "very negative" number: right until every logit of a row
    # lies below it (then l = 0 and the row is 0 / 0).
    Bug("max_started_finite", find='m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)',
        replace="m_i = tl.full([BLOCK_M], -1.0e30, tl.float32)", check="forward.extreme",
        hint="running max must start at -inf"),
    # The same in the merge of the key splits: M started at 0 weighs every split by
    # exp2(m_s - 0), 0 when all logits are very negative.
    Bug("merge_max_started_at_zero",
        find='    m_max = tl.full([BLOCK_M], -float("inf"), tl.float32)\n',
        replace="    m_max = tl.zeros([BLOCK_M], tl.float32)\n", check="forward.extreme",
        hint="running max must start at -inf"),
    # Dropped keys given a finite score: right until real scores lie below it.
    Bug("masked_score_finite", find='s = tl.where(keep, s, -float("inf"))',
        replace="s = tl.where(keep, s, -1.0e30)", check="forward.extreme",
        hint="masked scores must be -inf, not a finite sentinel"),
    # No check that scale * log2(e) fits float32: scale = 3e38 runs with qk_scale = inf.
    Bug("scale_overflow_unchecked", find="    if scale * _LOG2E > _FLOAT32_MAX:\n",
        replace="    if False:\n", check="bad_calls", hint="refuse bad calls"),
    # bool is an int: scale=True ran as 1.0.
    Bug("scale_bool_accepted",
        find="    if isinstance(scale, bool) or not isinstance(scale, (int, float)):",
        replace="    if not isinstance(scale, (int, float)):", check="bad_calls",
        hint="refuse bad calls"),
    # Non-causal stage 1 ended at a multiple of BLOCK_M: with BLOCK_N > BLOCK_M its last step
    # reads keys past N without a mask.
    Bug("first_stage_ends_on_block_m", find="        hi1 = (n_ctx // BLOCK_N) * BLOCK_N\n",
        replace="        hi1 = (n_ctx // BLOCK_M) * BLOCK_M\n", check="forward.strided",
        hint="the first stage must end on a BLOCK_N boundary"),
    # k's heads offset by v's head stride: right while the two are equal.
    Bug("k_head_offset_v_stride", find="k_src = k_ptr + head.to(tl.int64) * stride_kh",
        replace="k_src = k_ptr + head.to(tl.int64) * stride_vh", check="heads.values",
        hint="k's strides mixed up with v's"),
    # The combine kernel forgets that each head has KV_SPLITS row blocks of workspace.
    Bug("combine_head_offset", find="first = head.to(tl.int64) * KV_SPLITS * n_pad",
        replace="first = head.to(tl.int64) * n_pad", check="forward.kv_splits",
        hint="each split's workspace rows must be its own"),
    # The split kernel stores by split alone: every head's split s lands in the same rows.
    Bug("workspace_rows_by_split",
        find="rows = tl.program_id(1).to(tl.int64) * (tl.num_programs(0) * BLOCK_M) + offs_m",
        replace="rows = split.to(tl.int64) * (tl.num_programs(0) * BLOCK_M) + offs_m",
        check="forward.kv_splits", hint="each split's workspace rows must be its own"),
]

BUGS += [
    # causal defaults to True: every call that leaves causal out gets the causal mask.
    Bug("attention_default_causal_true",
        find="def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool = False,",
        replace="def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool = True,",
        check="forward.values", hint="causal mask applied to a non-causal call"),
    # The same default in attention_heads.
    Bug("heads_default_causal_true",
        find="def attention_heads(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, "
             "*, causal: bool = False,",
        replace="def attention_heads(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, "
                "*, causal: bool = True,",
        check="heads.values", hint="causal mask applied to a non-causal call"),
    # block_m given alone keeps the default block_n (64): a causal call with block_m=32 is
    # refused (block_n > block_m) instead of running with block_n = 32.
    Bug("block_n_not_capped_by_block_m",
        find='    if "block_n" not in explicit and isinstance(config["block_m"], int):\n'
             '        config["block_n"] = min(config["block_n"], config["block_m"])\n',
        replace="", check="forward.values", hint="block_m given alone is valid"),
    # kv_splits dropped: every call runs unsplit (right values, no split at all).
    Bug("kv_splits_ignored", find='    splits = config.get("kv_splits")\n',
        replace="    splits = None\n", check="forward.kv_splits", hint="kv_splits ignored"),
    # attention_heads drops its knobs unchecked: a misspelt or invalid knob runs the defaults.
    Bug("heads_knobs_ignored",
        find="    config = _config(knobs, q.shape[-1], q.dtype, causal, q.shape[1], q.shape[0])",
        replace="    config = _config({}, q.shape[-1], q.dtype, causal, q.shape[1], q.shape[0])",
        check="bad_calls", hint="refuse bad calls"),
    # attention_heads ignores its scale argument (always d ** -0.5).
    Bug("heads_scale_ignored", find="    return _launch(q, k, v, causal, scale, config)\n",
        replace="    return _launch(q, k, v, causal, q.shape[-1] ** -0.5, config)\n",
        check="heads.values", hint="the scale argument was ignored"),
    # Any power of two up to 128 taken as a head dim: d = 8 reaches tl.dot below its 16.
    Bug("head_dim_power_of_two_only", find="    if q.shape[-1] not in HEAD_DIMS:\n",
        replace="    if q.shape[-1] & (q.shape[-1] - 1) or q.shape[-1] > 128:\n",
        check="bad_calls", hint="refuse bad calls"),
    # k and v never compared with q's device: a k elsewhere reaches the launch.
    Bug("kv_device_unchecked",
        find="        if t.device != q.device:\n            raise ValueError",
        replace="        if False:\n            raise ValueError", check="bad_calls",
        hint="refuse bad calls"),
    # A scale whose float32 qk_scale is subnormal accepted (GPUs flush it to 0: -inf * 0 = NaN).
    Bug("scale_subnormal_accepted", find="    if scale * _LOG2E < _FLOAT32_TINY:\n",
        replace="    if scale * _LOG2E < 2.0 ** -149:  # the smallest float32\n",
        check="bad_calls", hint="refuse bad calls"),
    # An int scale (scale=1) refused: the API takes int or float.
    Bug("scale_int_refused",
        find="    if isinstance(scale, bool) or not isinstance(scale, (int, float)):",
        replace="    if not isinstance(scale, float):", check="forward.values",
        hint="an int scale (scale=1) is valid"),
    # Default blocks shrunk to N itself: N = 33 asks for a 33-row tile (not a power of two).
    Bug("fit_not_power_of_two", find="    fit = max(16, next_power_of_2(n_ctx))\n",
        replace="    fit = max(16, n_ctx)\n", check="forward.values",
        hint="the default tile must suit every N"),
    # The merge of the key splits weighs them with exp of log2-unit maxima.
    Bug("combine_exp_not_exp2",
        find="weight = tl.math.exp2(tl.load(m_part_ptr + rows, mask=ok, other=0.0) - m_max)",
        replace="weight = tl.exp(tl.load(m_part_ptr + rows, mask=ok, other=0.0) - m_max)",
        check="forward.kv_splits", hint="split weights computed with exp instead of exp2"),
    # Key mask j <= N: key N (loaded as 0) scores 0 and joins every non-causal row.
    Bug("key_mask_off_by_one", find="keep = offs_n[None, :] < n_ctx",
        replace="keep = offs_n[None, :] <= n_ctx", check="forward.values",
        hint="key mask off by one"),
    # The causal diagonal stage runs one key block: with BLOCK_N < BLOCK_M the row block's later
    # keys are never visited.
    Bug("diagonal_stage_one_key_block",
        find="        hi2 = tl.minimum((start_m + 1) * BLOCK_M, n_ctx)\n",
        replace="        hi2 = tl.minimum(start_m * BLOCK_M + BLOCK_N, n_ctx)\n",
        check="forward.values", hint="the causal diagonal stage stopped after BLOCK_N keys"),
    # attention_heads' default scale from q.shape[1] (N) instead of q.shape[-1] (d).
    Bug("heads_default_scale_uses_n",
        find="    scale = _check_scale(scale, q.shape[-1])\n"
             "    config = _config(knobs, q.shape[-1], q.dtype, causal, q.shape[1], q.shape[0])",
        replace="    scale = _check_scale(scale, q.shape[1])\n"
                "    config = _config(knobs, q.shape[-1], q.dtype, causal, q.shape[1], q.shape[0])",
        check="heads.values", hint="default scale taken from the wrong dimension"),
    # Key splits capped at N // BLOCK_N (rounded down): 0 for N < BLOCK_N, an empty grid.
    Bug("split_cap_floor", find="    splits = min(splits, cdiv(n_ctx, block_n))",
        replace="    splits = min(splits, n_ctx // block_n)", check="forward.values",
        hint="no program ran"),
    # alpha inverted, exp2(m_new - m_i): inf on the first block (m_i = -inf), so NaN.
    Bug("alpha_inverted", find="alpha = tl.math.exp2(m_i - m_new)",
        replace="alpha = tl.math.exp2(m_new - m_i)", check="forward.values",
        hint="NaN in the output"),
    # The scale folded into the caller's q in place.
    Bug("q_scaled_in_place",
        find="    return _launch(q[None], k[None], v[None], causal, scale, config)[0]",
        replace="    q.mul_(scale)  # fold the scale into q\n"
                "    return _launch(q[None], k[None], v[None], causal, 1.0, config)[0]",
        check="forward.values", hint="inputs must never be written"),
    # The output store's row mask off by one (rows <= N): row N is written past the end.
    Bug("store_mask_off_by_one",
        find="tl.store(o_ptrs, out.to(out_ptr.dtype.element_ty), mask=offs_m[:, None] < n_ctx)",
        replace="tl.store(o_ptrs, out.to(out_ptr.dtype.element_ty), mask=offs_m[:, None] <= n_ctx)",
        check="forward.values", hint="tail not masked"),
    # v's tail block loaded without a mask (k's is masked): rows past N are read.
    Bug("v_tail_unmasked",
        find="            v = tl.load(v_src + start_n.to(tl.int64) * stride_vn + v_offs,\n"
             "                        mask=offs_n[:, None] < n_ctx, other=0.0)",
        replace="            v = tl.load(v_src + start_n.to(tl.int64) * stride_vn + v_offs)",
        check="forward.values", hint="tail not masked"),  # fenced inputs: NaN past row N
    # The last split's share not clamped to the unmasked stage: it runs unmasked into the tail.
    Bug("split_last_hi1_unclamped",
        find="        hi1 = tl.minimum((split + 1) * per_split, steps) * BLOCK_N\n",
        replace="        hi1 = (split + 1) * per_split * BLOCK_N\n", check="forward.kv_splits",
        hint="tail not masked"),
    # attention's default scale 1.0 instead of d ** -0.5 (a call without scale).
    Bug("attention_default_scale_one",
        find="              scale: float | None = None, **knobs) -> torch.Tensor:\n"
             '    """softmax(q @ k.T',
        replace="              scale: float | None = 1.0, **knobs) -> torch.Tensor:\n"
                '    """softmax(q @ k.T',
        check="forward.strided", hint="scale not applied"),
    # GPU only (the grid's second axis): 65535 heads refused (>= instead of >).
    Bug("heads_limit_off_by_one", find="    if heads > _MAX_GRID_Y:  #",
        replace="    if heads >= _MAX_GRID_Y:  #", check="cuda.grid_limits",
        hint="grid limit off by one", gpu_only=True),
    # GPU only: heads * kv_splits past the grid's second axis launched (under the interpreter
    # the 65536 programs would run for minutes).
    Bug("heads_times_splits_unchecked", find="    if heads * splits > _MAX_GRID_Y:\n",
        replace="    if False:\n", check="cuda.grid_limits",
        hint="heads * kv_splits unchecked", gpu_only=True),
]

BUGS += [
    # m_i = m_new dropped: the running max stays -inf, so every step's alpha is exp2(-inf) = 0
    # and a row keeps only the last key block its program visits.
    Bug("running_max_never_updated", find="        m_i = m_new\n", replace="",
        check="forward.values", hint="running max never updated"),
    # The scores multiplied by qk_scale before m_new and p, which multiply them again.
    Bug("scale_applied_twice",
        find="        m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)  # (BLOCK_M,)\n",
        replace="        s = s * qk_scale\n"
                "        m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)  # (BLOCK_M,)\n",
        check="forward.values", hint="scale applied twice"),
    # keep without its causal term: the diagonal block keeps the keys after each row (the
    # blocks right of the diagonal are still skipped).
    Bug("causal_mask_missing_from_keep",
        find="                keep = keep & (offs_m[:, None] >= offs_n[None, :])\n",
        replace="                keep = keep\n", check="forward.values",
        hint="causal mask missing from keep"),
]

BUGS += [
    # The denominator broadcast as a row: column c divided by row c's l_i (it compiles only
    # where d == BLOCK_M, as for N = 64, d = 64, whose default blocks shrink to 64).
    Bug("divide_by_column", find="out = acc / l_i[:, None]  # (BLOCK_M, HEAD_DIM)",
        replace="out = acc / l_i  # (BLOCK_M, HEAD_DIM)", check="forward.values",
        hint="denominator broadcast along the wrong axis"),
]

BUGS += [
    # Found by the twenty-ninth session's learner audit (silent, or "the output is all
    # zeros"): alpha applied after this block was added, to the numerator or the denominator,
    # and the final division left out.
    Bug("acc_rescaled_after_add",
        find="        acc = acc * alpha[:, None]\n"
             "        acc = tl.dot(p.to(v.dtype), v, acc, input_precision=DOT_PRECISION)",
        replace="        acc = tl.dot(p.to(v.dtype), v, acc, input_precision=DOT_PRECISION)\n"
                "        acc = acc * alpha[:, None]",
        check="forward.values", hint="numerator rescaled after the add"),
    Bug("l_rescaled_after_add", find="l_i = l_i * alpha + tl.sum(p, 1)",
        replace="l_i = (l_i + tl.sum(p, 1)) * alpha", check="forward.values",
        hint="denominator rescaled after the add"),
    Bug("no_final_division", find="out = acc / l_i[:, None]  # (BLOCK_M, HEAD_DIM)",
        replace="out = acc  # (BLOCK_M, HEAD_DIM)", check="forward.values",
        hint="the final division missing"),
]

BUGS += [
    # Found by the twenty-ninth session's learner audit (silent, or "tail not masked" from the
    # interpreter's bounds check): alpha from this block's max instead of m_new; the running
    # max scaled again inside p; the causal stage 1 run to the end of the row block.
    Bug("alpha_from_block_max", find="alpha = tl.math.exp2(m_i - m_new)",
        replace="alpha = tl.math.exp2(m_i - tl.max(s, 1) * qk_scale)", check="forward.values",
        hint="alpha from the block's own max"),
    Bug("max_scaled_twice_in_p", find="p = tl.math.exp2(s * qk_scale - m_new[:, None])",
        replace="p = tl.math.exp2((s - m_new[:, None]) * qk_scale)", check="forward.values",
        hint="running max scaled twice in p"),
    # The diagonal block in the unmasked stage (and the masked stage, from hi1, left empty): its
    # keys past N are read without a mask, which the interpreter's bounds check stops.
    Bug("causal_stage1_includes_diagonal", find="        hi1 = start_m * BLOCK_M\n",
        replace="        hi1 = (start_m + 1) * BLOCK_M\n", check="forward.values",
        hint="stage 1 ran into the diagonal block"),
]

BUGS += [
    # causal=1 accepted: an int is not a bool, but a truthiness test or `in (True, False)` lets
    # it through.
    Bug("causal_int_accepted", find="    if not isinstance(causal, bool):\n",
        replace="    if causal not in (True, False):\n", check="bad_calls",
        hint="refuse bad calls"),
]

BUGS += [
    # Found by the third learner audit (silent, or a misleading hint): alpha's difference of
    # maxima (already log2 units) scaled again; the denominator summed over columns (it compiles
    # where BLOCK_M == BLOCK_N); the causal masked stage started at key 0 (the keys left of the
    # diagonal block count twice); p shifted by the old max (NaN everywhere); dropped keys scored
    # 0 (causal: the keys after each row join in).
    Bug("alpha_scaled_twice", find="alpha = tl.math.exp2(m_i - m_new)",
        replace="alpha = tl.math.exp2((m_i - m_new) * qk_scale)", check="forward.values",
        hint="alpha scaled twice"),
    Bug("denominator_column_sums", find="l_i = l_i * alpha + tl.sum(p, 1)",
        replace="l_i = l_i * alpha + tl.sum(p, 0)", check="forward.values",
        hint="denominator summed over the wrong axis"),
    Bug("causal_masked_stage_from_zero",
        find="        lo2 = hi1\n        hi2 = tl.minimum((start_m + 1) * BLOCK_M, n_ctx)\n",
        replace="        lo2 = 0\n        hi2 = tl.minimum((start_m + 1) * BLOCK_M, n_ctx)\n",
        check="forward.values", hint="the causal masked stage started at key 0"),
    Bug("p_shifted_by_old_max", find="p = tl.math.exp2(s * qk_scale - m_new[:, None])",
        replace="p = tl.math.exp2(s * qk_scale - m_i[:, None])", check="forward.values",
        hint="p shifted by the old running max"),
    Bug("masked_scores_zero", find='s = tl.where(keep, s, -float("inf"))',
        replace="s = tl.where(keep, s, 0.0)", check="forward.values",
        hint="masked scores set to 0, not -inf"),
]

BUGS += [
    # Found by the fourth learner audit (silent, or a misleading hint). Stage bounds: the
    # non-causal masked stage started at key 0 (the full key blocks count twice); stage 1 ended
    # at the block count N // BLOCK_N instead of a key index; the causal diagonal stage ended at
    # (start_m + 1) * BLOCK_N; the causal term of keep in block-local indices.
    Bug("noncausal_masked_stage_from_zero",
        find="        lo2 = hi1\n        hi2 = n_ctx\n",
        replace="        lo2 = 0\n        hi2 = n_ctx\n",
        check="forward.values", hint="the masked stage started at key 0: non-causal"),
    Bug("noncausal_hi1_block_count", find="hi1 = (n_ctx // BLOCK_N) * BLOCK_N",
        replace="hi1 = n_ctx // BLOCK_N", check="forward.values",
        hint="stage 1 ends at a block count, not a key index"),
    Bug("causal_hi2_block_n",
        find="        hi2 = tl.minimum((start_m + 1) * BLOCK_M, n_ctx)\n",
        replace="        hi2 = tl.minimum((start_m + 1) * BLOCK_N, n_ctx)\n",
        check="forward.values",
        hint="the causal diagonal stage ends at min((start_m + 1) * BLOCK_N, N)"),
    Bug("causal_keep_block_local",
        find="keep = keep & (offs_m[:, None] >= offs_n[None, :])",
        replace="keep = keep & (tl.arange(0, offs_m.shape[0])[:, None] >= offs_n0[None, :])",
        check="forward.values", hint="causal mask compares block-local indices"),
    # The online update: alpha with exp on log2-unit maxima; acc * alpha without [:, None]
    # (compiles where d == BLOCK_M: column c scaled by row c's alpha); the running max of the
    # raw scores (qk_scale left out), or with qk_scale outside the maximum (m_i scaled again
    # every step): exact on ordinary inputs, NaN on huge logits.
    Bug("alpha_exp_not_exp2", find="alpha = tl.math.exp2(m_i - m_new)",
        replace="alpha = tl.exp(m_i - m_new)", check="forward.values",
        hint="alpha computed with exp instead of exp2"),
    Bug("acc_rescaled_by_column", find="        acc = acc * alpha[:, None]\n",
        replace="        acc = acc * alpha\n", check="forward.values",
        hint="numerator rescaled along the wrong axis"),
    Bug("max_of_unscaled_scores", find="m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)",
        replace="m_new = tl.maximum(m_i, tl.max(s, 1))", check="forward.extreme",
        hint="running max in raw score units"),
    Bug("max_scaled_outside_maximum", find="m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)",
        replace="m_new = tl.maximum(m_i, tl.max(s, 1)) * qk_scale", check="forward.extreme",
        hint="running max scaled outside the maximum"),
    # Found by the fourth-round learner audit (leftover): p not cast to v's dtype before the
    # P V product. Under the interpreter v is upcast to float32 already, so nothing shows there;
    # a GPU refuses to compile a float32 x 16-bit tl.dot, and the framework's hint names it.
    Bug("p_not_cast_to_v_dtype",
        find="acc = tl.dot(p.to(v.dtype), v, acc, input_precision=DOT_PRECISION)",
        replace="acc = tl.dot(p, v, acc, input_precision=DOT_PRECISION)",
        check="cuda.stream", hint="tl.dot operands of two dtypes", gpu_only=True),
]

BUGS += [
    # Found by the fifth learner audit (a misleading or generic hint, or none). m_i = m_new
    # moved before alpha: alpha = exp2(m_new - m_new) = 1, so neither acc nor l is rescaled.
    Bug("max_updated_before_alpha",
        find="        alpha = tl.math.exp2(m_i - m_new)  #",
        replace="        m_i = m_new\n        alpha = tl.math.exp2(m_i - m_new)  #",
        check="forward.values", hint="alpha is 1 at every step"),
    # Non-causal stage 1 rounded up to a multiple of BLOCK_N: its last step reads keys past N
    # unmasked (the interpreter's bounds check stops it; forward.values retries on zero rows).
    Bug("first_stage_rounded_up", find="        hi1 = (n_ctx // BLOCK_N) * BLOCK_N\n",
        replace="        hi1 = tl.cdiv(n_ctx, BLOCK_N) * BLOCK_N\n", check="forward.values",
        hint="the first stage must end on a BLOCK_N boundary"),
    # The causal term of keep with rows and keys swapped: it compiles where BLOCK_M == BLOCK_N.
    Bug("causal_keep_transposed",
        find="keep = keep & (offs_m[:, None] >= offs_n[None, :])",
        replace="keep = keep & (offs_m[None, :] >= offs_n[:, None])", check="forward.values",
        hint="causal mask transposed"),
    # The output cast hard-coded to float16 before the store: a float32 output is rounded.
    Bug("output_cast_float16", find="out = acc / l_i[:, None]  # (BLOCK_M, HEAD_DIM)",
        replace="out = (acc / l_i[:, None]).to(tl.float16)  # (BLOCK_M, HEAD_DIM)",
        check="forward.values", hint="float32 output rounded through float16"),
    # acc not passed to tl.dot: each step replaces the numerator with this block's P V.
    Bug("acc_not_carried",
        find="acc = tl.dot(p.to(v.dtype), v, acc, input_precision=DOT_PRECISION)  # fp32",
        replace="acc = tl.dot(p.to(v.dtype), v, input_precision=DOT_PRECISION)  # fp32",
        check="forward.values", hint="accumulator not carried across key blocks"),
]

BUGS += [
    # Found by a learner audit (misleading or generic hints on forward.values).
    # tl.where's arguments swapped: kept scores -inf, dropped ones kept.
    Bug("mask_where_swapped", find='            s = tl.where(keep, s, -float("inf"))',
        replace='            s = tl.where(keep, -float("inf"), s)', check="forward.values",
        hint="where() arguments swapped"),
    # Dropped scores +inf: NaN wherever a row drops a key (everywhere with one key block).
    Bug("masked_scores_plus_inf", find='            s = tl.where(keep, s, -float("inf"))',
        replace='            s = tl.where(keep, s, float("inf"))', check="forward.values",
        hint="dropped scores set to +inf"),
    # tl.minimum for the running max: it never leaves -inf, so NaN everywhere.
    Bug("running_max_minimum", find="        m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)",
        replace="        m_new = tl.minimum(m_i, tl.max(s, 1) * qk_scale)", check="forward.values",
        hint="tl.minimum"),
    # p shifted by m_new[None, :]: compiles only where BLOCK_M == BLOCK_N.
    Bug("p_shift_by_column", find="        p = tl.math.exp2(s * qk_scale - m_new[:, None])",
        replace="        p = tl.math.exp2(s * qk_scale - m_new[None, :])", check="forward.values",
        hint="p shifted along the wrong axis"),
    # V transposed in P V: compiles only where BLOCK_N == d.
    Bug("v_transposed_in_pv",
        find="        acc = tl.dot(p.to(v.dtype), v, acc, input_precision=DOT_PRECISION)",
        replace="        acc = tl.dot(p.to(v.dtype), tl.trans(v), acc, input_precision=DOT_PRECISION)",
        check="forward.values", hint="V transposed in P V"),
    # alpha on the new block's sum instead of the old l_i.
    Bug("l_alpha_on_block_sum", find="        l_i = l_i * alpha + tl.sum(p, 1)",
        replace="        l_i = l_i + alpha * tl.sum(p, 1)", check="forward.values",
        hint="alpha on the wrong term of the denominator"),
    # Multiplied by the denominator instead of divided.
    Bug("output_times_denominator", find="        out = acc / l_i[:, None]",
        replace="        out = acc * l_i[:, None]", check="forward.values",
        hint="the output multiplied by the denominator"),
    # The causal diagonal stage cut at N - 1: a key block starting at N - 1 is skipped.
    Bug("causal_hi2_n_minus_one", find="        hi2 = tl.minimum((start_m + 1) * BLOCK_M, n_ctx)",
        replace="        hi2 = tl.minimum((start_m + 1) * BLOCK_M, n_ctx - 1)", check="forward.values",
        hint="the causal diagonal stage ends at N - 1"),
    # hi1 from program_id: causal launches run row blocks bottom first.
    Bug("causal_hi1_program_id", find="        hi1 = start_m * BLOCK_M\n",
        replace="        hi1 = tl.program_id(0) * BLOCK_M\n", check="forward.values",
        hint="causal stage bounds from tl.program_id(0)"),
    # acc += tl.dot(p, v, acc): the rescaled numerator counted twice.
    Bug("acc_added_twice",
        find="        acc = tl.dot(p.to(v.dtype), v, acc, input_precision=DOT_PRECISION)",
        replace="        acc += tl.dot(p.to(v.dtype), v, acc, input_precision=DOT_PRECISION)",
        check="forward.values", hint="numerator added twice"),
    # p from the raw scores, without qk_scale, against a max in log2 units.
    Bug("p_without_qk_scale", find="        p = tl.math.exp2(s * qk_scale - m_new[:, None])",
        replace="        p = tl.math.exp2(s - m_new[:, None])", check="forward.values",
        hint="p computed from the raw scores"),
    # The causal term compared with <=: a row keeps the keys from its own onwards.
    Bug("causal_keep_reversed", find="keep = keep & (offs_m[:, None] >= offs_n[None, :])",
        replace="keep = keep & (offs_m[:, None] <= offs_n[None, :])", check="forward.values",
        hint="compared with <="),
]

# The same mistakes seen by later checks, which name them too (the fifth audit's later-check
# leftovers): the planted text is the original bug's, only the check and its hint differ.
BUGS += [
    # forward.kv_splits, which runs after forward.values: no split replay explains a split run
    # of it, so the check calls attention again with kv_splits=1, where the single-stream
    # replay names it.
    seen_later(BUGS, "acc_not_carried", name="acc_not_carried_in_split_run",
               check="forward.kv_splits", hint="seen in the same call with kv_splits=1"),
    # forward.extreme's split cases (every logit near -1e38, or logits near 1e6), the same way.
    seen_later(BUGS, "acc_not_carried", name="acc_not_carried_extreme_split",
               check="forward.extreme", hint="seen in the same call with kv_splits=1"),
    # Stage 1 rounded up, seen by forward.strided: its call, stopped by the interpreter's
    # bounds check, asks the same stage-bound probes as forward.values. Interpreter only: on a
    # GPU nothing stops the read, and forward.strided's replays do not read past N
    # (forward.values' random-row probe names it there).
    seen_later(BUGS, "first_stage_rounded_up", name="first_stage_rounded_up_strided",
               check="forward.strided", hint="the first stage must end on a BLOCK_N boundary",
               interpreter_only=True),
    # The same through attention_heads (heads.values probes head 0 through attention).
    # Interpreter only, as above.
    seen_later(BUGS, "first_stage_rounded_up", name="first_stage_rounded_up_heads",
               check="heads.values", hint="the first stage must end on a BLOCK_N boundary",
               interpreter_only=True),
    # The causal term transposed, seen by forward.kv_splits: where BLOCK_M != BLOCK_N it does
    # not compile, and the same call without the mask (right) points at the causal term;
    # where they are equal the replay through kv_splits=1 names it. Either hint names it.
    seen_later(BUGS, "causal_keep_transposed", name="causal_keep_transposed_in_split_run",
               check="forward.kv_splits", hint="causal mask"),
    # ... and by forward.configs, whose every CONFIGS entry gets the same probe.
    seen_later(BUGS, "causal_keep_transposed", name="causal_keep_transposed_configs",
               check="forward.configs", hint="causal mask"),
]

# The seventh learner audit's later-check leftovers. The causal term compared with <=: the first
# row block's lower rows keep no key of their first key block (every key there lies before
# them), and exp2(-inf - -inf) = NaN there, which the key walk now models, so the checks after
# forward.values name it too (they said "NaN in the output: a row whose scores are all -inf").
BUGS += [
    seen_later(BUGS, "causal_keep_reversed", name="causal_keep_reversed_strided",
               check="forward.strided"),
    seen_later(BUGS, "causal_keep_reversed", name="causal_keep_reversed_in_split_run",
               check="forward.kv_splits"),
    seen_later(BUGS, "causal_keep_reversed", name="causal_keep_reversed_extreme",
               check="forward.extreme"),
    seen_later(BUGS, "causal_keep_reversed", name="causal_keep_reversed_configs",
               check="forward.configs"),
]

BUGS += [
    # The seventh learner audit's 03: m_i set to this block's own max at the end of the step
    # instead of m_new (acc and l stay in units of m_new; the next alpha starts from the wrong
    # max). No hint before (forward.values: 15 failing cases, none named).
    Bug("running_max_set_to_block_max", find="        m_i = m_new\n",
        replace="        m_i = tl.max(s, 1) * qk_scale\n", check="forward.values",
        hint="running max set to the block's own max"),
    # The seventh learner audit's 02: non-causal stage 1 ended at N - BLOCK_N ("all but the last
    # block"): with N not a multiple of BLOCK_N the masked stage adds some keys again (and with
    # N < BLOCK_N it starts before key 0: see first_stage_ends_block_before_n_short_n below).
    Bug("first_stage_ends_block_before_n", find="        hi1 = (n_ctx // BLOCK_N) * BLOCK_N\n",
        replace="        hi1 = n_ctx - BLOCK_N\n", check="forward.values",
        hint="stage 1 ends one key block before N"),
]

# The seventh learner audit's leftovers.
BUGS += [
    # The same mistake at forward.values' first case (N = 1 < BLOCK_N): the masked stage starts
    # at hi1 = 1 - BLOCK_N < 0 and loads rows in front of k and v; the interpreter's bounds check
    # stops the call, and the same call on inputs preceded by random rows names it (it said
    # "tail not masked"). The zoo stops at the first FAIL naming this hint: the N = 1 case.
    # Interpreter only: on a GPU nothing stops that read (the ragged cases name it there).
    seen_later(BUGS, "first_stage_ends_block_before_n",
               name="first_stage_ends_block_before_n_short_n", check="forward.values",
               hint="starts before key 0", interpreter_only=True),
    # keep built on the rows, offs_n[:, None] < N: a (BLOCK_N, 1) column that broadcasts over
    # the (BLOCK_M, BLOCK_N) scores only where BLOCK_M == BLOCK_N; there a tile row is kept or
    # dropped whole (N = 1: every row keeps the keys past N, the output of "keys past N
    # unmasked", named beside it). Elsewhere the block shapes do not broadcast, and the same
    # call on square tiles names it.
    Bug("key_mask_on_rows", find="            keep = offs_n[None, :] < n_ctx\n",
        replace="            keep = offs_n[:, None] < n_ctx\n", check="forward.values",
        hint="key mask built on the wrong axis"),
    # m_new from the max over the whole tile (tl.max(s), no axis): exact on ordinary inputs (any
    # shift cancels in acc / l), NaN on forward.extreme's huge logits, where a row's weights all
    # underflow under another row's max (it said "max not carried across blocks").
    Bug("running_max_over_tile", find="m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)",
        replace="m_new = tl.maximum(m_i, tl.max(s) * qk_scale)", check="forward.extreme",
        hint="running max taken over the whole tile"),
]

# The key mask on the rows seen by the later checks: their square tiles by the replay, the
# others (BLOCK_M != BLOCK_N: the block shapes do not broadcast) by the probe on square tiles.
BUGS += [seen_later(BUGS, "key_mask_on_rows", check=check,
                    name="key_mask_on_rows_" + check.replace("forward.", "").replace(".", "_"))
         for check in ("forward.kv_splits", "forward.strided", "forward.extreme", "heads.values",
                       "forward.configs")]

# The ninth learner audit (new mistakes in the exercise regions).
BUGS += [
    # Key N - 1 dropped (j < N - 1): causal, the last row loses its own key; non-causal, every
    # row loses it where BLOCK_N does not divide N (no hint before: "only the rows of the last
    # (partial) row block are wrong", or another mistake's name).
    Bug("key_mask_drops_last_key", find="keep = offs_n[None, :] < n_ctx",
        replace="keep = offs_n[None, :] < n_ctx - 1", check="forward.values",
        hint="key mask drops the last key"),
    # The causal term against offs_n0, the key's place in its block (no hint before).
    Bug("causal_keep_local_keys", find="keep = keep & (offs_m[:, None] >= offs_n[None, :])",
        replace="keep = keep & (offs_m[:, None] >= offs_n0[None, :])", check="forward.values",
        hint="causal mask compares the row with the key's block-local index"),
    # The key mask against offs_n0: every key of the tail block kept, the output of "keys past
    # N unmasked", which names it.
    Bug("key_mask_block_local", find="keep = offs_n[None, :] < n_ctx",
        replace="keep = offs_n0[None, :] < n_ctx", check="forward.values",
        hint="keys past N unmasked"),
    # tl.where indented into the causal branch: non-causal calls keep the keys past N.
    Bug("mask_where_causal_only",
        find='                keep = keep & (offs_m[:, None] >= offs_n[None, :])\n'
             '            s = tl.where(keep, s, -float("inf"))',
        replace='                keep = keep & (offs_m[:, None] >= offs_n[None, :])\n'
                '                s = tl.where(keep, s, -float("inf"))',
        check="forward.values", hint="keys past N unmasked"),
    # The running max over axis 0 (a column's max): it does not broadcast where BLOCK_M !=
    # BLOCK_N, and the framework's hint names the wrong axis (where the tiles are square the
    # shift is exact on ordinary inputs).
    Bug("running_max_column_max", find="m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)",
        replace="m_new = tl.maximum(m_i, tl.max(s, 0) * qk_scale)", check="forward.values",
        hint="a reduction over the wrong axis"),
    # l_i += tl.sum(p) without an axis: every row's denominator gets the whole tile's sum (no
    # hint before).
    Bug("denominator_summed_over_tile", find="l_i = l_i * alpha + tl.sum(p, 1)",
        replace="l_i = l_i * alpha + tl.sum(p)", check="forward.values",
        hint="denominator summed over the whole tile"),
    # p = exp2(logit) / exp2(m_new): exact on ordinary logits, inf / inf or 0 / 0 on
    # forward.extreme's (it said "max not carried across blocks" or "running max must start at
    # -inf").
    Bug("exp2_before_max_subtracted", find="p = tl.math.exp2(s * qk_scale - m_new[:, None])",
        replace="p = tl.math.exp2(s * qk_scale) / tl.math.exp2(m_new)[:, None]",
        check="forward.extreme", hint="exp2 before the max is subtracted"),
    # p cast to a fixed 16-bit dtype for P V: under the interpreter v is float32 for every input
    # dtype, and tl.dot refuses two dtypes (it said "the kernel failed under Triton's
    # interpreter"); on a GPU bfloat16 and float32 inputs fail to compile the same way.
    Bug("p_cast_to_fixed_dtype",
        find="acc = tl.dot(p.to(v.dtype), v, acc, input_precision=DOT_PRECISION)  # fp32",
        replace="acc = tl.dot(p.to(tl.float16), v, acc, input_precision=DOT_PRECISION)  # fp32",
        check="forward.values", hint="tl.dot operands of two dtypes"),
    # A guard against division by zero, acc / (l + 1e-6): l >= 1, and the guard pulls a row
    # with one dominant key toward 0 by a few float32 units: forward.extreme's huge logits (one
    # key per row, exact scores) show it on every seed, forward.values' N = 1 on some (no hint
    # before).
    Bug("epsilon_in_final_division", find="out = acc / l_i[:, None]  # (BLOCK_M, HEAD_DIM)",
        replace="out = acc / (l_i[:, None] + 1e-6)  # (BLOCK_M, HEAD_DIM)",
        check="forward.extreme", hint="epsilon in the final division"),
    # The store's row mask one short (rows < N - 1): the last row is never written. forward.values
    # names it; forward.extreme's NaN hints blamed an overflow or a row with no key for the
    # fill's NaN before (its NaN branch now leaves unwritten elements to assert_close).
    # interpreter_only: on a GPU forward.extreme's unsplit cases store through the TMA
    # descriptor, which clips rows past N by itself, so the masked store never runs there (the
    # GPU zoo saw every case PASS at 04225ab).
    Bug("store_mask_drops_last_row",
        find="tl.store(o_ptrs, out.to(out_ptr.dtype.element_ty), mask=offs_m[:, None] < n_ctx)",
        replace="tl.store(o_ptrs, out.to(out_ptr.dtype.element_ty), mask=offs_m[:, None] < n_ctx - 1)",
        check="forward.extreme", hint="output never written", interpreter_only=True),

    # The ninth learner audit's two unfinished mistakes. The denominator adds each key block's
    # largest p (tl.max copied from the running max's line): with one key block per row l = 1
    # and the output is acc undivided, where "the final division missing" names both (no
    # hint of its own before).
    Bug("denominator_max_not_sum", find="l_i = l_i * alpha + tl.sum(p, 1)",
        replace="l_i = l_i * alpha + tl.max(p, 1)", check="forward.values",
        hint="each key block's largest p, not its sum"),
    # The stage bounds' branches swapped: a non-causal call walks the causal key range (each
    # row's keys up to the end of its row block) and a causal one the non-causal range (every
    # full key block unmasked). Its first FAIL, a non-causal call, had no hint before.
    Bug("causal_branches_swapped", find="    if IS_CAUSAL:\n        hi1 = start_m * BLOCK_M\n",
        replace="    if not IS_CAUSAL:\n        hi1 = start_m * BLOCK_M\n", check="forward.values",
        hint="(are the two branches of `if IS_CAUSAL:` swapped?)"),
]
