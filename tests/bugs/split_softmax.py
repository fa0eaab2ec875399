from tests.bugs import Bug, seen_later

BUGS = [
    # merge_stats adds the chunks' sums as they are: each was taken relative to its own max.
    Bug("merge_without_rescaling", find="s_acc += s * tl.exp2((m - m_row) * LOG2E)",
        replace="s_acc += s",
        check="stats.merge", hint="partial denominators not rescaled"),
    # The rescale exponent upside down: each chunk's sum is scaled by exp(m_row - m_c) >= 1
    # (and a padded lane, m = -inf, adds 0 * inf = NaN).
    Bug("merge_rescale_inverted", find="s_acc += s * tl.exp2((m - m_row) * LOG2E)",
        replace="s_acc += s * tl.exp2((m_row - m) * LOG2E)",
        check="stats.merge", hint="rescale factor inverted"),
    # normalize shifts by the chunk's own max, so chunks of one row are scaled differently.
    Bug("normalize_chunk_local_max", find="y = tl.exp2((x - m_row) * LOG2E) * inv_s",
        replace="y = tl.exp2((x - tl.max(x, axis=0)) * LOG2E) * inv_s",
        check="normalize.values", hint="chunk-local max"),
    # normalize reads every row's denominator at row 0's offset: row 0 right, the rest scaled.
    Bug("normalize_row0_denominator", find="s_row = tl.load(s_row_ptr + row)",
        replace="s_row = tl.load(s_row_ptr)",
        check="normalize.values", hint="another row's statistics"),
    # The partial statistics mask the chunk grid instead of the row: the last chunk of a
    # ragged row reads past the row (the next row's values, or past the end of x).
    Bug("last_chunk_unmasked", find="mask = cols < n_cols  # the last chunk",
        replace="mask = cols < n_chunks * CHUNK  # the last chunk",
        check="stats.partial", hint="tail not masked"),
    # The merge walks rows with the column stride: row r reads row 0's states shifted by r.
    Bug("merge_reads_another_row", find="m_row_start = m_ptr + row * stride_mm",
        replace="m_row_start = m_ptr + row * stride_mc",
        check="stats.merge", hint="another row's statistics"),
    # No guard for a chunk of only -inf: exp(-inf - (-inf)) = NaN poisons the row.
    Bug("masked_chunk_nan", find='m_shift = tl.where(m == -float("inf"), 0.0, m)',
        replace="m_shift = m", check="forward.extreme", hint="a chunk of only -inf"),
    # The launcher no longer validates chunk: a bad chunk reaches Triton (or divides by 0).
    Bug("chunk_not_validated",
        find='        check_power_of_two("chunk", chunk, MIN_CHUNK, MAX_CHUNK)\n',
        replace="        pass\n", check="bad_calls", hint="refuse bad calls"),
    # default_chunk trusts its SM count: sm_count=0 divides by zero instead of a ValueError.
    Bug("sm_count_not_validated",
        find='    check_int_range("sm_count", sm_count, 1, _MAX_COUNT)\n', replace="",
        check="bad_calls", hint="refuse bad calls"),
    # partial_stats hands out the same two buffers for every call of one shape: the second
    # call overwrites the statistics the first one returned.
    Bug("partial_stats_cached_buffers",
        find=("    m = torch.empty((n_rows, n_chunks), dtype=torch.float32, device=x.device)\n"
              "    s = torch.empty((n_rows, n_chunks), dtype=torch.float32, device=x.device)\n"),
        replace=("    cache = partial_stats.__dict__.setdefault('cache', {})\n"
                 "    key = (n_rows, n_chunks, x.device)\n"
                 "    if key not in cache:\n"
                 "        cache[key] = tuple(torch.empty((n_rows, n_chunks), dtype=torch.float32,"
                 " device=x.device) for _ in range(2))\n"
                 "    m, s = cache[key]\n"),
        check="forward.fresh", hint="no cached buffer"),
    # merge_stats does the same with its (M,) outputs.
    Bug("merge_stats_cached_buffers",
        find=("    m_row = torch.empty((n_rows,), dtype=torch.float32, device=m.device)\n"
              "    s_row = torch.empty((n_rows,), dtype=torch.float32, device=m.device)\n"),
        replace=("    cache = merge_stats.__dict__.setdefault('cache', {})\n"
                 "    if (n_rows, m.device) not in cache:\n"
                 "        cache[(n_rows, m.device)] = tuple(torch.empty((n_rows,), "
                 "dtype=torch.float32, device=m.device) for _ in range(2))\n"
                 "    m_row, s_row = cache[(n_rows, m.device)]\n"),
        check="forward.fresh", hint="no cached buffer"),
    # The grid-size check is gone: 2^54 programs get as far as allocating the output.
    Bug("grid_size_not_checked",
        find="    if n_rows * cdiv(n_cols, chunk) > 2**31 - 1:\n",
        replace="    if False:\n",
        check="bad_calls", hint="grid too large"),
    # The chunk's state stores the shift (0 for a chunk of only -inf) instead of its maximum:
    # the merge then takes 0 as the maximum of a row whose values lie below it.
    Bug("partial_stores_shift_not_max",
        find="    tl.store(m_ptr + row * stride_pm + chunk_id * stride_pc, m)\n",
        replace="    tl.store(m_ptr + row * stride_pm + chunk_id * stride_pc, m_shift)\n",
        check="stats.partial", hint="a chunk of only -inf must report m = -inf"),
    # The same, caught on the whole softmax (values near -200: the output is NaN).
    Bug("partial_stores_shift_not_max_forward",
        find="    tl.store(m_ptr + row * stride_pm + chunk_id * stride_pc, m)\n",
        replace="    tl.store(m_ptr + row * stride_pm + chunk_id * stride_pc, m_shift)\n",
        check="forward.extreme", hint="a chunk of only -inf must report m = -inf"),
    # The padding lanes of the last chunk loaded as a "very negative" finite number: rows whose
    # values all lie below it take the pad for their maximum.
    Bug("tail_padded_with_finite_value",
        find=("    x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=mask,\n"
              "                other=-float(\"inf\")).to(tl.float32)\n"),
        replace=("    x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=mask,\n"
                 "                other=-1e30).to(tl.float32)\n"),
        check="forward.extreme", hint="tail padded with a finite value instead of -inf"),
    # merge_stats steps between rows of s with m's row stride: right only while m and s share
    # one layout (as inside split_softmax), wrong for a strided s next to a contiguous m.
    Bug("merge_s_row_stride_from_m",
        find="    s_row_start = s_ptr + row * stride_sm\n",
        replace="    s_row_start = s_ptr + row * stride_mm\n",
        check="stats.merge", hint="m and s strides mixed up"),
    # The same with the column stride: s read at m's column steps.
    Bug("merge_s_col_stride_from_m",
        find="        s = tl.load(s_row_start + c * stride_sc,",
        replace="        s = tl.load(s_row_start + c * stride_mc,",
        check="stats.merge", hint="m and s strides mixed up"),
    # Padded merge lanes load m = 0 instead of -inf: for rows whose chunk maxima lie far below
    # 0, s = 0 times exp(0 - m_row) = inf is NaN.
    Bug("merge_pad_m_zero",
        find=("        m = tl.load(m_row_start + c * stride_mc, mask=c < n_chunks, "
              "other=-float(\"inf\"))\n        s = tl.load"),
        replace=("        m = tl.load(m_row_start + c * stride_mc, mask=c < n_chunks, "
                 "other=0.0)\n        s = tl.load"),
        check="stats.merge", hint="padded merge lanes"),
    # The same, caught on the whole softmax (rows near -1e30: the output is NaN).
    Bug("merge_pad_m_zero_forward",
        find=("        m = tl.load(m_row_start + c * stride_mc, mask=c < n_chunks, "
              "other=-float(\"inf\"))\n        s = tl.load"),
        replace=("        m = tl.load(m_row_start + c * stride_mc, mask=c < n_chunks, "
                 "other=0.0)\n        s = tl.load"),
        check="forward.extreme", hint="padded merge lanes"),
    # The first pass masks c <= n_chunks: one lane past the row is read (past the end of the
    # buffer on the last row).
    Bug("merge_pass1_mask_le",
        find=("        m = tl.load(m_row_start + c * stride_mc, mask=c < n_chunks, "
              "other=-float(\"inf\"))\n        m_acc"),
        replace=("        m = tl.load(m_row_start + c * stride_mc, mask=c <= n_chunks, "
                 "other=-float(\"inf\"))\n        m_acc"),
        check="stats.merge", hint="merge_stats read outside the (M, C) buffers"),
    # No -inf guard, caught on the partial statistics themselves: the chunk's s is NaN.
    Bug("masked_chunk_nan_partial", find='m_shift = tl.where(m == -float("inf"), 0.0, m)',
        replace="m_shift = m", check="stats.partial", hint="a chunk of only -inf gave NaN"),
    # merge_stats checks m's dtype but not s's: a float16 s is read as if it were float32.
    Bug("merge_s_dtype_unchecked",
        find='    check_tensor("s", s, dtypes=(torch.float32,), ndim=2)\n', replace="",
        check="bad_calls", hint="refuse bad calls"),
    # merge_stats passes num_warps to Triton unchecked (3 is no power of two).
    Bug("merge_num_warps_unchecked",
        find=("    if num_warps is not None:\n        check_power_of_two(\"num_warps\", "
              "num_warps, 1, 32)\n    check_device(\"m\", m)\n"),
        replace="    check_device(\"m\", m)\n",
        check="bad_calls", hint="refuse bad calls"),
    # normalize takes any m_row / s_row: float16 or 2-D statistics are read as float32 rows.
    Bug("normalize_stats_unchecked",
        find="        check_tensor(name, t, dtypes=(torch.float32,), ndim=1)\n", replace="",
        check="bad_calls", hint="refuse bad calls"),
    # No early return for an empty x: with rows of width 0 the merge still launches.
    Bug("empty_guard_removed", find="    if x.numel() == 0:\n        return y\n", replace="",
        check="forward.launches", hint="an empty x needs no launch"),
    # empty_like keeps x's strides: a transposed x gives a non-contiguous output.
    Bug("empty_like_output",
        find=("    y = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)  "
              "# contiguous, fresh\n    if x.numel() == 0:"),
        replace="    y = torch.empty_like(x)\n    if x.numel() == 0:",
        check="forward.strided", hint="the API promises a new contiguous output"),
    # normalize hands strided m_row / s_row views to a kernel that reads them at offset row.
    Bug("normalize_no_contig_stats",
        find="    m_row, s_row = m_row.contiguous(), s_row.contiguous()\n", replace="",
        check="normalize.values", hint="m_row / s_row strides ignored"),
]

BUGS += [
    # exp2 turned into exp with the log2(e) factor left in: e^(1.44 t), a wrong exponent base.
    Bug("normalize_exp_log2e_folded", find="y = tl.exp2((x - m_row) * LOG2E) * inv_s",
        replace="y = tl.exp((x - m_row) * LOG2E) * inv_s", check="normalize.values",
        hint="tl.exp given the log2(e) factor"),
    Bug("partial_exp_log2e_folded", find="s = tl.sum(tl.exp2((x - m_shift) * LOG2E), axis=0)",
        replace="s = tl.sum(tl.exp((x - m_shift) * LOG2E), axis=0)", check="stats.partial",
        hint="tl.exp given the log2(e) factor"),
    # The same in all three stages: the output is softmax(log2(e) x), every row summing to 1.
    Bug("every_stage_exp_log2e_folded", find="tl.exp2(", replace="tl.exp(", count=3,
        check="forward.values", hint="in every stage"),
]

BUGS += [
    # Found by the twenty-ninth session's learner audit (both were silent): the merge's
    # rescale factor in the wrong base, and normalize multiplying by the sum.
    Bug("merge_exp2_without_log2e", find="s_acc += s * tl.exp2((m - m_row) * LOG2E)",
        replace="s_acc += s * tl.exp2(m - m_row)", check="stats.merge",
        hint="exp2 without log2(e) in merge_stats"),
    Bug("normalize_multiplies_by_sum", find="inv_s = 1.0 / s_row", replace="inv_s = s_row",
        check="normalize.values", hint="multiplied by the sum instead of dividing"),
]
BUGS += [
    # Found by the twenty-ninth session's learner audit (three wrong hints in a row): the
    # empty chunk's shift written as max(m, 0), which clamps every negative maximum too.
    Bug("partial_shift_clamped_at_zero", find='m_shift = tl.where(m == -float("inf"), 0.0, m)',
        replace="m_shift = tl.maximum(m, 0.0)", check="stats.partial",
        hint="shift clamped at 0"),
    # The thirtieth session (the audit's s4, s6): the merge's running sum overwritten, so only
    # the last loop step's chunks count (stats.merge's (3, 1025) case has a last step of one);
    # normalize's exponent with its sign flipped.
    Bug("merge_sum_overwritten", find="        s_acc += s * tl.exp2((m - m_row) * LOG2E)\n",
        replace="        s_acc = s * tl.exp2((m - m_row) * LOG2E)\n", check="stats.merge",
        hint="s_acc overwritten"),
    Bug("normalize_exponent_sign", find="    y = tl.exp2((x - m_row) * LOG2E) * inv_s\n",
        replace="    y = tl.exp2((m_row - x) * LOG2E) * inv_s\n", check="normalize.values",
        hint="sign flipped"),
]

BUGS += [
    # The third learner audit (each silent): the max subtracted after x went to base-2 units,
    # in partial_stats and in normalize (exp2(x * log2(e) - m) = exp(x - m ln 2)); tl.min for
    # tl.max in partial_stats; the merge adding the rescale factors without the sums.
    Bug("partial_shift_outside_log2e",
        find="    s = tl.sum(tl.exp2((x - m_shift) * LOG2E), axis=0)",
        replace="    s = tl.sum(tl.exp2(x * LOG2E - m_shift), axis=0)", check="stats.partial",
        hint="max subtracted outside the log2(e) factor in partial_stats"),
    Bug("normalize_shift_outside_log2e", find="    y = tl.exp2((x - m_row) * LOG2E) * inv_s\n",
        replace="    y = tl.exp2(x * LOG2E - m_row) * inv_s\n", check="normalize.values",
        hint="max subtracted outside the log2(e) factor in normalize"),
    Bug("partial_min_for_max", find="    m = tl.max(x, axis=0)", replace="    m = tl.min(x, axis=0)",
        check="stats.partial", hint="minimum taken for the maximum"),
    Bug("merge_sums_left_out", find="        s_acc += s * tl.exp2((m - m_row) * LOG2E)\n",
        replace="        s_acc += tl.exp2((m - m_row) * LOG2E)\n", check="stats.merge",
        hint="partial sums left out of the merge"),
]

BUGS += [
    # The fourth learner audit (each silent): log2(e) multiplied onto exp2's result instead of
    # its argument, in partial_stats (S1) and in the merge (S2); the merge rescaled to each loop
    # block's own maximum, seen only past _MERGE_BLOCK_C chunks (S3); normalize without m_row
    # (S4), caught again on extreme inputs by a probe of normalize; the division folded into
    # the base-2 exponent as ln(s_row) (S7).
    Bug("partial_log2e_outside_exp2", find="s = tl.sum(tl.exp2((x - m_shift) * LOG2E), axis=0)",
        replace="s = tl.sum(tl.exp2(x - m_shift) * LOG2E, axis=0)", check="stats.partial",
        hint="log2(e) outside exp2 in partial_stats"),
    Bug("partial_log2e_outside_exp2_pipeline",
        find="s = tl.sum(tl.exp2((x - m_shift) * LOG2E), axis=0)",
        replace="s = tl.sum(tl.exp2(x - m_shift) * LOG2E, axis=0)", check="stats.pipeline",
        hint="log2(e) outside exp2 in partial_stats"),
    Bug("partial_log2e_outside_exp2_forward",
        find="s = tl.sum(tl.exp2((x - m_shift) * LOG2E), axis=0)",
        replace="s = tl.sum(tl.exp2(x - m_shift) * LOG2E, axis=0)", check="forward.values",
        hint="log2(e) outside exp2 in partial_stats"),
    Bug("merge_log2e_outside_exp2", find="s_acc += s * tl.exp2((m - m_row) * LOG2E)",
        replace="s_acc += s * tl.exp2(m - m_row) * LOG2E", check="stats.merge",
        hint="log2(e) outside exp2 in merge_stats"),
    Bug("merge_log2e_outside_exp2_forward", find="s_acc += s * tl.exp2((m - m_row) * LOG2E)",
        replace="s_acc += s * tl.exp2(m - m_row) * LOG2E", check="forward.values",
        hint="log2(e) outside exp2 in merge_stats"),
    Bug("merge_block_max", find="s_acc += s * tl.exp2((m - m_row) * LOG2E)",
        replace="s_acc += s * tl.exp2((m - tl.max(m, axis=0)) * LOG2E)", check="stats.merge",
        hint="rescaled to the loop block's own maximum"),
    Bug("normalize_no_max_shift", find="y = tl.exp2((x - m_row) * LOG2E) * inv_s",
        replace="y = tl.exp2(x * LOG2E) * inv_s", check="normalize.values",
        hint="max shift left out in normalize"),
    Bug("normalize_no_max_shift_extreme", find="y = tl.exp2((x - m_row) * LOG2E) * inv_s",
        replace="y = tl.exp2(x * LOG2E) * inv_s", check="forward.extreme",
        hint="max shift left out in normalize"),
    Bug("normalize_ln_s_in_exp2", find="y = tl.exp2((x - m_row) * LOG2E) * inv_s",
        replace="y = tl.exp2((x - m_row) * LOG2E - tl.log(s_row))", check="normalize.values",
        hint="ln(s_row) subtracted inside exp2"),
]
BUGS += [
    # The audit's S6 (named before; its hint now rests on the float32 model of exp(x) summed,
    # not on a sum above the chunk size, which any sum scaled up also gives).
    Bug("partial_sum_not_shifted", find="s = tl.sum(tl.exp2((x - m_shift) * LOG2E), axis=0)",
        replace="s = tl.sum(tl.exp2(x * LOG2E), axis=0)", check="stats.partial",
        hint="sum not shifted by the chunk max"),
]

BUGS += [
    # Found by the fifth learner audit: the merge adds a reduced scalar to every lane of s_acc,
    # so s_row is BLOCK_C times too big (it failed with no hint).
    Bug("merge_sum_into_every_lane", find="s_acc += s * tl.exp2((m - m_row) * LOG2E)",
        replace="s_acc += tl.sum(s * tl.exp2((m - m_row) * LOG2E), axis=0)", check="stats.merge",
        hint="a reduced scalar was added into every lane of s_acc"),
    # Found by the fifth learner audit: each chunk rescaled by its lane's running maximum m_acc,
    # not the row's m_row: NaN in padded lanes (it failed with no hint).
    Bug("merge_rescaled_per_lane", find="s_acc += s * tl.exp2((m - m_row) * LOG2E)",
        replace="s_acc += s * tl.exp2((m - m_acc) * LOG2E)", check="stats.merge",
        hint="rescale by the row maximum m_row = tl.max(m_acc)"),
    # Found by the fifth learner audit: the empty chunk guarded by a threshold, so a chunk whose
    # maximum is finite but below it is shifted by 0 (its hint was "missing max subtraction").
    Bug("empty_chunk_guard_threshold", find='m_shift = tl.where(m == -float("inf"), 0.0, m)',
        replace="m_shift = tl.where(m < -1e30, 0.0, m)", check="forward.extreme",
        hint="shifted by 0 as if empty"),
    # Found by the fifth learner audit: exp2(...) rounded to the output dtype before the final
    # multiply, and 1 / s_row rounded before it: bfloat16 outputs 1.1-2.8 ulp off, inside every
    # value check's tolerance (they passed every check). contract.round_once's bound follows the
    # device's float32 -> bfloat16 rounding: 0.75 ulp on a GPU (to nearest), 1.5 under the
    # interpreter (which truncates).
    Bug("normalize_exp_rounded_early", find="y = tl.exp2((x - m_row) * LOG2E) * inv_s",
        replace="y = tl.exp2((x - m_row) * LOG2E).to(y_ptr.dtype.element_ty) * inv_s",
        check="contract.round_once", hint="rounded to the output dtype before the final multiply"),
    Bug("normalize_inv_s_rounded", find="inv_s = 1.0 / s_row",
        replace="inv_s = (1.0 / s_row).to(y_ptr.dtype.element_ty)", check="contract.round_once",
        hint="rounded to the output dtype before the final multiply"),
]

BUGS += [
    # The sixth learner audit's 08, 09, 10 (each silent): `*` binds tighter than `-`, so log2(e)
    # multiplies the max alone, in partial_stats, in the merge's factor and in normalize.
    Bug("partial_log2e_on_max", find="    s = tl.sum(tl.exp2((x - m_shift) * LOG2E), axis=0)",
        replace="    s = tl.sum(tl.exp2(x - m_shift * LOG2E), axis=0)", check="stats.partial",
        hint="log2(e) multiplies the max alone in partial_stats"),
    Bug("merge_log2e_on_max", find="        s_acc += s * tl.exp2((m - m_row) * LOG2E)",
        replace="        s_acc += s * tl.exp2(m - m_row * LOG2E)", check="stats.merge",
        hint="log2(e) multiplies the max alone in merge_stats"),
    Bug("normalize_log2e_on_max", find="    y = tl.exp2((x - m_row) * LOG2E) * inv_s",
        replace="    y = tl.exp2(x - m_row * LOG2E) * inv_s", check="normalize.values",
        hint="log2(e) multiplies the max alone in normalize"),
    # The audit's 11: tl.max for tl.sum, every s is 1.
    Bug("partial_max_for_sum", find="    s = tl.sum(tl.exp2((x - m_shift) * LOG2E), axis=0)",
        replace="    s = tl.max(tl.exp2((x - m_shift) * LOG2E), axis=0)", check="stats.partial",
        hint="every partial s is 1"),
    # The audit's 13: the factor on the running sum; with one loop step it is the plain sum.
    Bug("merge_running_sum_rescaled", find="        s_acc += s * tl.exp2((m - m_row) * LOG2E)",
        replace="        s_acc = s_acc * tl.exp2((m - m_row) * LOG2E) + s", check="stats.merge",
        hint="the factor went on the running sum s_acc"),
]

# The same mistakes seen by later checks, which name them too: the planted text is the original
# bug's, only the check differs.
BUGS += [
    # In a 1 x 1 forward case the partial sums' and normalize's log2(e) mistakes give one value:
    # the check asks the learner's stages which one is wrong.
    seen_later(BUGS, "partial_log2e_on_max", name="partial_log2e_on_max_forward",
               check="forward.values"),
    # forward.extreme's inputs make normalize's output all 0 or inf: a benign probe names it.
    seen_later(BUGS, "normalize_log2e_on_max", name="normalize_log2e_on_max_extreme",
               check="forward.extreme"),
    # stats.pipeline took every s = 1 for a merge that leaves the sums out.
    seen_later(BUGS, "partial_max_for_sum", name="partial_max_for_sum_pipeline",
               check="stats.pipeline"),
]

BUGS += [
    # The sixth learner audit's 09, seen by later checks that said nothing of it: forward.extreme
    # (no hint, or "the output is all zeros": its factor overflows or vanishes there) names it
    # by merging benign states with the learner's merge_stats; forward.chunk_invariance (a
    # generic hint) reads each chunk size's statistics as stats.pipeline does.
    seen_later(BUGS, "merge_log2e_on_max", name="merge_log2e_on_max_extreme",
               check="forward.extreme"),
    seen_later(BUGS, "merge_log2e_on_max", name="merge_log2e_on_max_invariance",
               check="forward.chunk_invariance"),
]

BUGS += [
    # The seventh learner audit's 01: tl.argmax for tl.max, each m the position of its chunk's
    # maximum (its first FAIL said "the output is all zeros", later ones nothing).
    Bug("partial_argmax_for_max", find="    m = tl.max(x, axis=0)\n",
        replace="    m = tl.argmax(x, axis=0)\n", check="stats.partial",
        hint="tl.argmax where tl.max belongs"),
    # The seventh learner audit's 02: ln 2 for log2(e), exp2(t / log2(e)) = e^(0.48 t) (silent).
    Bug("partial_ln2_for_log2e", find="s = tl.sum(tl.exp2((x - m_shift) * LOG2E), axis=0)",
        replace="s = tl.sum(tl.exp2((x - m_shift) / LOG2E), axis=0)", check="stats.partial",
        hint="divided by log2(e) (or multiplied by ln 2) in partial_stats"),
    # The seventh learner audit's 03: the terms rounded to x's 16-bit dtype, and tl.sum (which
    # keeps that type) adding them there; float32 x is right (silent).
    Bug("partial_terms_in_x_dtype", find="s = tl.sum(tl.exp2((x - m_shift) * LOG2E), axis=0)",
        replace="s = tl.sum(tl.exp2((x - m_shift) * LOG2E).to(x_ptr.dtype.element_ty), axis=0)",
        check="stats.partial", hint="partial sums computed in x's dtype"),
    # The seventh learner audit's 04: m_row left out of the merge's factor, s * exp(m_c) (silent,
    # then "the output is all zeros").
    Bug("merge_max_left_out", find="        s_acc += s * tl.exp2((m - m_row) * LOG2E)\n",
        replace="        s_acc += s * tl.exp2(m * LOG2E)\n", check="stats.merge",
        hint="m_row left out of merge_stats' rescale factor"),
    # The seventh learner audit's 05: pass 1's lane maximum m_acc for the chunk's m; right while
    # one loop step holds every chunk (stats.merge's 1500 chunks fail, silent).
    Bug("merge_lane_max_for_m", find="        s_acc += s * tl.exp2((m - m_row) * LOG2E)\n",
        replace="        s_acc += s * tl.exp2((m_acc - m_row) * LOG2E)\n", check="stats.merge",
        hint="pass 1's running maximum m_acc used for the chunk's own m"),
    # The seventh learner audit's 06: log2(e) distributed, exp2(x * log2(e) - m_row * log2(e));
    # right on paper, ~1e-3 off for |x| near 1e4 in float32 (silent). The check replays both
    # roundings: the interpreter's two products, and a GPU's fma of x's product into the
    # subtraction (without that, the first GPU zoo to run it got the FAIL without the hint).
    Bug("normalize_log2e_distributed", find="    y = tl.exp2((x - m_row) * LOG2E) * inv_s\n",
        replace="    y = tl.exp2(x * LOG2E - m_row * LOG2E) * inv_s\n", check="forward.extreme",
        hint="log2(e) distributed over the difference in normalize"),
    # The seventh learner audit's 07: 1 / s_row multiplied inside the exponent (silent, then
    # "every partial s is 1" on forward.extreme).
    Bug("normalize_inv_s_in_exponent", find="    y = tl.exp2((x - m_row) * LOG2E) * inv_s\n",
        replace="    y = tl.exp2((x - m_row) * LOG2E * inv_s)\n", check="normalize.values",
        hint="1 / s_row multiplied inside the exponent in normalize"),
    # The seventh learner audit's 08: log2(s_row) subtracted inside the natural-units difference,
    # a division by s_row^log2(e) (normalize.values named only the row scale).
    Bug("normalize_log2_s_natural", find="    y = tl.exp2((x - m_row) * LOG2E) * inv_s\n",
        replace="    y = tl.exp2((x - m_row - tl.log2(s_row)) * LOG2E)\n", check="normalize.values",
        hint="log2(s_row) subtracted in natural units in normalize"),
]
BUGS += [
    # The same, seen by later checks that were silent or misleading before: the whole softmax
    # asks the learner's partial_stats, or merges benign states with its merge_stats.
    seen_later(BUGS, "partial_argmax_for_max", name="partial_argmax_for_max_forward",
               check="forward.values"),
    seen_later(BUGS, "partial_terms_in_x_dtype", name="partial_terms_in_x_dtype_forward",
               check="forward.values"),
    seen_later(BUGS, "merge_max_left_out", name="merge_max_left_out_extreme",
               check="forward.extreme"),
]

BUGS += [
    # The ninth learner audit (named already; guarded): exp2 given the exponent without log2(e),
    # in partial_stats (c01) and in normalize (c13), as merge_exp2_without_log2e is in the merge;
    # normalize dividing by the chunk's own sum of exp(x - m_row) (c14).
    Bug("partial_exp2_without_log2e", find="s = tl.sum(tl.exp2((x - m_shift) * LOG2E), axis=0)",
        replace="s = tl.sum(tl.exp2(x - m_shift), axis=0)", check="stats.partial",
        hint="exp2 without log2(e) in partial_stats"),
    Bug("normalize_exp2_without_log2e", find="    y = tl.exp2((x - m_row) * LOG2E) * inv_s\n",
        replace="    y = tl.exp2(x - m_row) * inv_s\n", check="normalize.values",
        hint="exp2 without log2(e) in normalize"),
    Bug("normalize_chunk_local_sum", find="    inv_s = 1.0 / s_row\n",
        replace="    inv_s = 1.0 / tl.sum(tl.exp2((x - m_row) * LOG2E), axis=0)\n",
        check="normalize.values", hint="each chunk sums to 1 on its own"),
    # The ninth learner audit's c04 (named "tail not masked" though the load was masked): the
    # padded lanes re-filled with 0 for the maximum, so a last chunk below 0 reports m = 0.
    Bug("partial_max_pads_zero", find="    m = tl.max(x, axis=0)\n",
        replace="    m = tl.max(tl.where(mask, x, 0.0), axis=0)\n", check="stats.partial",
        hint="tail padded with 0 in the maximum"),
    # c05 (silent in every check): each chunk's sum divided by the chunk size, a mean.
    Bug("partial_mean_for_sum", find="s = tl.sum(tl.exp2((x - m_shift) * LOG2E), axis=0)",
        replace="s = tl.sum(tl.exp2((x - m_shift) * LOG2E), axis=0) / CHUNK", check="stats.partial",
        hint="partial sums divided by the chunk size"),
    # c06 (forward.extreme only, without a hint): log2(e) distributed in partial_stats, each
    # product rounded in float32 (~1e-3 off for |x| near 1e4).
    Bug("partial_log2e_distributed", find="s = tl.sum(tl.exp2((x - m_shift) * LOG2E), axis=0)",
        replace="s = tl.sum(tl.exp2(x * LOG2E - m_shift * LOG2E), axis=0)", check="forward.extreme",
        hint="log2(e) distributed over the difference in partial_stats"),
    # c08 (one case, without a hint): pass 1's tl.maximum copied into pass 2; right while one
    # loop step holds every chunk (stats.merge's 1500 chunks take two).
    Bug("merge_maximum_for_sum", find="        s_acc += s * tl.exp2((m - m_row) * LOG2E)\n",
        replace="        s_acc = tl.maximum(s_acc, s * tl.exp2((m - m_row) * LOG2E))\n",
        check="stats.merge", hint="tl.maximum where the sum belongs in merge_stats"),
    # c09 ("the output is all zeros"): the sum computed on its own line and dropped.
    Bug("merge_sum_discarded", find="        s_acc += s * tl.exp2((m - m_row) * LOG2E)\n",
        replace="        s_acc + s * tl.exp2((m - m_row) * LOG2E)\n", check="stats.merge",
        hint="nothing was added to s_acc"),
    # c10 (silent in every check; stats.merge's new case of maxima near 1e4 shows it): log2(e)
    # distributed over the merge's exponent.
    Bug("merge_log2e_distributed", find="        s_acc += s * tl.exp2((m - m_row) * LOG2E)\n",
        replace="        s_acc += s * tl.exp2(m * LOG2E - m_row * LOG2E)\n", check="stats.merge",
        hint="log2(e) distributed over the difference in merge_stats"),
    # c15 (named only as a row scale): m_row and s_row swapped in normalize.
    Bug("normalize_stats_swapped",
        find="    inv_s = 1.0 / s_row\n    y = tl.exp2((x - m_row) * LOG2E) * inv_s\n",
        replace="    inv_s = 1.0 / m_row\n    y = tl.exp2((x - s_row) * LOG2E) * inv_s\n",
        check="normalize.values", hint="m_row and s_row swapped in normalize"),
    # c16 (silent in every check): y cast to a fixed tl.float16 before the store; a float16
    # output is right, a float32 one keeps 11 bits, a bfloat16 one loses float16's tiny values.
    Bug("normalize_cast_float16", find="    y = tl.exp2((x - m_row) * LOG2E) * inv_s\n",
        replace="    y = (tl.exp2((x - m_row) * LOG2E) * inv_s).to(tl.float16)\n",
        check="normalize.values", hint="output rounded through float16"),
]
BUGS += [
    # The ninth learner audit's mistakes seen by later checks that name them too (c04 was
    # "missing max subtraction" on forward.extreme, c15 "missing max subtraction" or "all
    # zeros" there, c05 and c16 silent on the whole softmax).
    seen_later(BUGS, "partial_max_pads_zero", name="partial_max_pads_zero_extreme",
               check="forward.extreme"),
    seen_later(BUGS, "normalize_stats_swapped", name="normalize_stats_swapped_extreme",
               check="forward.extreme"),
    seen_later(BUGS, "partial_mean_for_sum", name="partial_mean_for_sum_forward",
               check="forward.values"),
    seen_later(BUGS, "normalize_cast_float16", name="normalize_cast_float16_round_once",
               check="contract.round_once"),
]

BUGS += [
    # The tenth learner audit's a01 (normalize.values named it; the whole softmax said nothing,
    # or "1 / s_row inside the exponent" on forward.extreme's constant rows): no division.
    Bug("normalize_no_division", find="    y = tl.exp2((x - m_row) * LOG2E) * inv_s\n",
        replace="    y = tl.exp2((x - m_row) * LOG2E)\n", check="normalize.values",
        hint="denominator missing"),
    # a07 (named already): the merge steps between rows of m with s's row stride, the mirror of
    # merge_s_row_stride_from_m.
    Bug("merge_m_row_stride_from_s", find="    m_row_start = m_ptr + row * stride_mm\n",
        replace="    m_row_start = m_ptr + row * stride_sm\n", check="stats.merge",
        hint="m and s strides mixed up"),
    # a09 (named "stride ignored", which sends the learner to the load): normalize stores y
    # with x's strides; a transposed x lays the right values out transposed in y's memory.
    Bug("normalize_store_x_strides", find="tl.store(y_ptr + row * stride_ym + cols * stride_yn,",
        replace="tl.store(y_ptr + row * stride_xm + cols * stride_xn,", check="forward.strided",
        hint="y written with x's strides"),
    # a12 (named already): pass 2 of the merge loads without a mask (pass 1's mask kept). The
    # name comes from the interpreter's bounds check; on a GPU the lanes past the row read
    # other memory into s_row, which no GPU zoo has yet been seen to name.
    Bug("merge_pass2_unmasked",
        find=("        m = tl.load(m_row_start + c * stride_mc, mask=c < n_chunks, "
              "other=-float(\"inf\"))\n        s = tl.load(s_row_start + c * stride_sc, "
              "mask=c < n_chunks, other=0.0)\n"),
        replace=("        m = tl.load(m_row_start + c * stride_mc)\n"
                 "        s = tl.load(s_row_start + c * stride_sc)\n"),
        check="stats.merge", hint="merge_stats read outside the (M, C) buffers",
        interpreter_only=True),
]
BUGS += [
    # a01 seen by the whole softmax, which named nothing (forward.values) or a wrong mistake
    # (forward.extreme) before.
    seen_later(BUGS, "normalize_no_division", name="normalize_no_division_forward",
               check="forward.values"),
    seen_later(BUGS, "normalize_no_division", name="normalize_no_division_extreme",
               check="forward.extreme"),
]
BUGS += [
    # The tenth audit's a13 (named as pass 2's tl.maximum, a BLOCK_C of one lane, and as
    # "another row's statistics" in one forward.extreme case): the lanes reduced by tl.max
    # where the final tl.sum belongs.
    Bug("merge_final_max_for_sum", find="    tl.store(s_row_ptr + row, tl.sum(s_acc, axis=0))",
        replace="    tl.store(s_row_ptr + row, tl.max(s_acc, axis=0))",
        check="stats.merge", hint="tl.max where the final tl.sum belongs"),
]
BUGS.append(seen_later(BUGS, "merge_final_max_for_sum", name="merge_final_max_for_sum_extreme",
                       check="forward.extreme"))
