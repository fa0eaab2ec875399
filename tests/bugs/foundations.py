from tests.bugs import Bug, seen_later

BUGS = [
    Bug("softmax_tail_other_zero", find='other=-float("inf")', replace="other=0.0",
        check="row_softmax.values", hint="tail not masked"),
    # The same mistake on 16-bit rows only (float32 rows stay right), so the zoo proves that the
    # diagnosis names it where the output's rounding hides a per-row ratio (float16, bfloat16).
    Bug("softmax_tail_other_zero_16bit", find='other=-float("inf")',
        replace='other=-float("inf") if out_ptr.dtype.element_ty == tl.float32 else 0.0',
        check="row_softmax.values", hint="tail not masked"),
    Bug("softmax_no_max_subtraction", find="z = x - tl.max(x, axis=0)", replace="z = x",
        check="row_softmax.extreme", hint="missing max subtraction"),
    Bug("add_program_id_unused", find="offsets = pid * BLOCK + tl.arange(0, BLOCK)",
        replace="offsets = tl.arange(0, BLOCK) + 0 * pid", check="add.values",
        hint="program id not used"),
    Bug("add_mask_always_true", find="mask = offsets < n_elements", replace="mask = offsets >= 0",
        check="add.values", hint="tail not masked"),
    Bug("softmax_no_bad_call_check", find='    check_tensor("x", x, ndim=2)\n', replace="",
        check="bad_calls", hint="name the argument"),
]

BUGS += [
    # The contiguity check dropped: add(x, y.t()) adds x to y's memory order, not to y.
    Bug("add_no_contiguity_check",
        find="    if not (x.is_contiguous() and y.is_contiguous()):\n"
             '        raise ValueError("add expects contiguous x and y (strided views are '
             'workshop 1)")\n',
        replace="", check="bad_calls", hint="must be refused"),
    # An output buffer cached across calls (keyed on shape, dtype, device): the second call
    # overwrites the first call's result.
    Bug("add_output_cached", find="    out = torch.empty_like(x)\n    n = x.numel()",
        replace="    out = add.__dict__.setdefault((tuple(x.shape), x.dtype, x.device), "
                "torch.empty_like(x))\n    n = x.numel()",
        check="add.fresh_output", hint="no cached buffer"),
    Bug("softmax_output_cached", find="    out = torch.empty_like(x)\n    if x.numel() == 0:",
        replace="    out = row_softmax.__dict__.setdefault((tuple(x.shape), x.dtype, x.device), "
                "torch.empty_like(x))\n    if x.numel() == 0:",
        check="row_softmax.fresh_output", hint="no cached buffer"),
    Bug("softmax_num_warps_unchecked",
        find='        check_power_of_two("num_warps", num_warps, 1, 32)\n',
        replace="        pass\n", check="bad_calls",
        hint="num_warps must be a power of two"),
    # The tail padded with a finite "very negative" number: right until every logit of a row
    # lies below it (-1e31), then the padding wins the max and takes the whole sum.
    Bug("softmax_tail_other_finite", find='other=-float("inf")', replace="other=-1e30",
        check="row_softmax.extreme", hint="tail padded with a finite value instead of -inf"),
    Bug("softmax_width_limit_off_by_one", find="if n_cols > _MAX_ROW_BLOCK:",
        replace="if n_cols >= _MAX_ROW_BLOCK:", check="row_softmax.values",
        hint="width limit off by one"),
    # The program id left int32: pid * BLOCK wraps past 2^31 elements (a GPU with 12 GiB free).
    Bug("add_program_id_int32",
        find="pid = tl.program_id(0).to(tl.int64)  # int64: n_elements may exceed 2^31",
        replace="pid = tl.program_id(0)  # int64: n_elements may exceed 2^31",
        check="cuda.int64_offsets", hint="offsets overflowed 32 bits", gpu_only=True),
]

BUGS += [
    # n taken as len(x), the number of rows: only the first len(x) elements of a 2-D add.
    Bug("add_n_is_len", find="    n = x.numel()\n", replace="    n = len(x)\n",
        check="add.values", hint="not len(x)"),
    # The grid rounded down (n // BLOCK programs): the ragged last block is never written.
    Bug("add_grid_rounded_down", find="grid = (triton.cdiv(n, block),)",
        replace="grid = (max(n // block, 1),)", check="add.values", hint="grid too small"),
    # Off by one in the mask: the lane at n_elements itself loads and stores past the end.
    Bug("add_mask_off_by_one", find="mask = offsets < n_elements",
        replace="mask = offsets <= n_elements", check="add.values", hint="tail not masked"),
    # An empty input returned as the output (the output must be a fresh tensor).
    Bug("add_empty_returns_x", find="    if n == 0:\n        return out",
        replace="    if n == 0:\n        return x", check="add.values",
        hint="outputs must be freshly allocated"),
    # No early return for an empty input: rows of 0 columns launch a block of 0 lanes.
    Bug("softmax_no_empty_guard", find="    if x.numel() == 0:\n        return out\n    block_n",
        replace="    block_n", check="row_softmax.values", hint="zero-size input"),
    # The store left unmasked: the padded lanes of the block write past the row.
    Bug("softmax_store_unmasked", find="y.to(out_ptr.dtype.element_ty), mask=mask)",
        replace="y.to(out_ptr.dtype.element_ty))", check="row_softmax.values",
        hint="tail not masked"),
    # The shift clamped at 0 (a max seeded with 0): rows far below 0 underflow to 0 / 0.
    Bug("softmax_max_seeded_zero", find="z = x - tl.max(x, axis=0)",
        replace="z = x - tl.maximum(tl.max(x, axis=0), 0.0)", check="row_softmax.extreme",
        hint="max taken as 0"),
    # `if num_warps:` skips the check for 0, which then quietly picks the default.
    Bug("softmax_num_warps_zero_accepted",
        find='    if num_warps is not None:\n        check_power_of_two("num_warps"',
        replace='    if num_warps:\n        check_power_of_two("num_warps"', check="bad_calls",
        hint="num_warps must be a power of two"),
    # float64 accepted (the statistics would silently be float32, the kernels are not float64).
    Bug("softmax_float64_accepted", find='check_tensor("x", x, ndim=2)',
        replace='check_tensor("x", x, ndim=2, dtypes=(torch.float16, torch.bfloat16, '
                'torch.float32, torch.float64))',
        check="bad_calls", hint="refuse float64"),
    # row_softmax's row index left int32: row * stride_xm wraps past 2^31 elements.
    Bug("softmax_row_id_int32",
        find="row = tl.program_id(0).to(tl.int64)  # one program per row",
        replace="row = tl.program_id(0)  # one program per row",
        check="cuda.int64_offsets", hint="offsets overflowed 32 bits", gpu_only=True),
    # Knobs that change nothing the values show, seen in the launch record: add's block
    # replaced by a fixed 1024...
    Bug("add_block_ignored",
        find="    grid = (triton.cdiv(n, block),)\n    add_kernel[grid](x, y, out, n, BLOCK=block)",
        replace="    grid = (triton.cdiv(n, 1024),)\n    add_kernel[grid](x, y, out, n, BLOCK=1024)",
        check="add.values", hint="knob ignored: block=128"),
    # ...and row_softmax's num_warps overridden by the width heuristic.
    Bug("softmax_num_warps_ignored",
        find="warps = num_warps or min(max(block_n // 256, 1), 16)",
        replace="warps = min(max(block_n // 256, 1), 16)", check="row_softmax.values",
        hint="knob ignored: num_warps="),
]

BUGS += [
    # The store forgotten: the output keeps whatever fresh memory held. The checks fill fresh
    # memory with a NaN of their own, so the row reads as "never written", not as the NaN of
    # an overflow (which "missing max subtraction" would name on the extreme rows).
    Bug("softmax_store_missing",
        find="    tl.store(out_ptr + row * stride_om + cols, y.to(out_ptr.dtype.element_ty), "
             "mask=mask)\n",
        replace="", check="row_softmax.extreme", hint="output never written"),
    # The store's mask one short: the last element is never written.
    Bug("add_store_mask_one_short",
        find="    tl.store(out_ptr + offsets, total.to(out_ptr.dtype.element_ty), mask=mask)",
        replace="    tl.store(out_ptr + offsets, total.to(out_ptr.dtype.element_ty), "
                "mask=offsets < n_elements - 1)",
        check="add.values", hint="output never written: 1 of"),
]

BUGS += [
    # Found by the twenty-ninth session's learner audit: tl.max where tl.sum belongs (the row
    # divided by its largest numerator, 1), which the "tail not masked" hint used to claim.
    Bug("softmax_denominator_max", find="denominator = tl.sum(numerator, axis=0)",
        replace="denominator = tl.max(numerator, axis=0)", check="row_softmax.values",
        hint="denominator is the max, not the sum"),
    # ...and y loaded from x's pointer: the output is x + x.
    Bug("add_y_from_x_ptr", find="y = tl.load(y_ptr + offsets, mask=mask)",
        replace="y = tl.load(x_ptr + offsets, mask=mask)", check="add.values",
        hint="one operand loaded twice"),
    # The thirtieth session: one program per column instead of per row (the audit's F3).
    # With more columns than rows the extra programs address rows that do not exist.
    Bug("grid_over_columns", find="row_softmax_kernel[(n_rows,)]",
        replace="row_softmax_kernel[(n_cols,)]", check="row_softmax.values",
        hint="grid larger than the work"),
]

BUGS += [
    # Found by the third-round learner audit (its F3-F5), silent until then. The row index
    # added without the row stride: row r reads x.flatten()[r : r + n_cols] (row 0 is right).
    Bug("softmax_row_offset_no_stride", find="x_ptr + row * stride_xm + cols",
        replace="x_ptr + row + cols", check="row_softmax.values",
        hint="row offset without the row stride"),
    # The denominator sums z = x - max instead of exp(z): inf on a row of one element, -0 on
    # ragged rows (the padded lanes' z is -inf), negative on the others.
    Bug("softmax_denominator_sums_z", find="denominator = tl.sum(numerator, axis=0)",
        replace="denominator = tl.sum(z, axis=0)", check="row_softmax.values",
        hint="denominator sums x - max, not exp(x - max)"),
    # The store cast to a fixed tl.float16: float32 (and bfloat16) outputs go through float16.
    Bug("softmax_store_cast_fp16", find="y.to(out_ptr.dtype.element_ty)",
        replace="y.to(tl.float16)", check="row_softmax.values",
        hint="output rounded through float16"),
]

BUGS += [
    # The fourth learner audit (its F1-F3, F5-F7), each named now. The shift's sign flipped:
    # softmax(-x) on power-of-two rows, all zeros on ragged ones (the padding's max - -inf = inf).
    Bug("softmax_shift_sign_flipped", find="z = x - tl.max(x, axis=0)",
        replace="z = tl.max(x, axis=0) - x", check="row_softmax.values",
        hint="shift sign flipped"),
    # The tail padded with +inf (a sign slip of -inf): every ragged row is NaN.
    Bug("softmax_tail_other_plus_inf", find='other=-float("inf")', replace='other=float("inf")',
        check="row_softmax.values", hint="tail padded with +inf"),
    # The store without the row offset: every program stores at row 0 (the last one stays).
    Bug("softmax_store_no_row_offset", find="tl.store(out_ptr + row * stride_om + cols,",
        replace="tl.store(out_ptr + cols,", check="row_softmax.values",
        hint="store address without the row offset"),
    # The row index from the wrong grid axis: program_id(1) of a 1-D grid is 0 everywhere.
    Bug("softmax_row_pid_axis1",
        find="row = tl.program_id(0).to(tl.int64)  # one program per row",
        replace="row = tl.program_id(1).to(tl.int64)  # one program per row",
        check="row_softmax.values", hint="every program wrote row 0"),
    # Multiplied by the denominator instead of divided: off by sum^2 per row.
    Bug("softmax_multiplied_by_sum", find="y = numerator / denominator",
        replace="y = numerator * denominator", check="row_softmax.values",
        hint="multiplied by the sum instead of dividing"),
    # y loaded without the program id: every program adds block 0 of y.
    Bug("add_y_first_block", find="y = tl.load(y_ptr + offsets, mask=mask)",
        replace="y = tl.load(y_ptr + tl.arange(0, BLOCK), mask=mask)", check="add.values",
        hint="y's load ignores the program id"),
]

BUGS += [
    # The load address without the row offset: every program loads row 0, so every row of the
    # output is softmax(x[0]) (row 0 right).
    Bug("softmax_load_without_row_offset", find="x = tl.load(x_ptr + row * stride_xm + cols,",
        replace="x = tl.load(x_ptr + cols,", check="row_softmax.values",
        hint="load address without the row offset"),
]

BUGS += [
    # Found by the fifth learner audit (no hint on row_softmax.values; later checks said
    # "output all zeros" and "tail not masked"): the denominator sums exp(x), not exp(x - max),
    # so every row is off by the factor exp(max) (and overflows to 0 for huge logits).
    Bug("softmax_denominator_sums_exp_x", find="denominator = tl.sum(numerator, axis=0)",
        replace="denominator = tl.sum(tl.exp(x), axis=0)", check="row_softmax.values",
        hint="the denominator sums exp(x), not exp(x - max)"),
]

BUGS += [
    # Found by the sixth learner audit (its 02, 03). The shift by the row mean: a ragged row's
    # mean takes in the -inf padding (all NaN, as a +inf padding gives), and a row far above
    # its mean overflows exp even without padding.
    Bug("softmax_shift_by_mean", find="z = x - tl.max(x, axis=0)",
        replace="z = x - tl.sum(x, axis=0) / n_cols", check="row_softmax.values",
        hint="shift is the mean, not the max"),
    # log2(e) with exp instead of exp2: the output is softmax(x * log2 e).
    Bug("softmax_log2e_with_exp", find="z = x - tl.max(x, axis=0)",
        replace="z = (x - tl.max(x, axis=0)) * 1.4426950408889634", check="row_softmax.values",
        hint="log2(e) used with exp"),
    # ...and its mirror image, exp2 without log2(e): the output is softmax(x * ln 2).
    Bug("softmax_exp2_without_log2e", find="    numerator = tl.exp(z)\n",
        replace="    numerator = tl.exp2(z)\n", check="row_softmax.values",
        hint="exp2 without log2(e)"),
]

BUGS += [
    # The seventh learner audit's 02 (a generic out-of-bounds hint before): the row offset
    # taken as row * BLOCK_N, the padded width, which is the row stride only for a power-of-two
    # width. Named by a rerun on a longer storage, which only the interpreter's bounds check
    # asks for; on a GPU the reads past x return whatever memory follows, which no replay
    # models, so the GPU zoo leaves it out.
    Bug("softmax_row_offset_block_n", find="x_ptr + row * stride_xm + cols",
        replace="x_ptr + row * BLOCK_N + cols", check="row_softmax.values",
        hint="row offset uses the block width BLOCK_N", interpreter_only=True),
    # Its 04 ("denominator is the max" alone before): the numerators stored undivided, which
    # gives the very output of a max for the sum (the largest numerator is 1).
    Bug("softmax_stores_numerator",
        find="tl.store(out_ptr + row * stride_om + cols, y.to(",
        replace="tl.store(out_ptr + row * stride_om + cols, numerator.to(",
        check="row_softmax.values", hint="the numerators stored undivided"),
    # Its 05 ("the normalizer is wrong" before): the denominator a mean, sum / n_cols.
    Bug("softmax_denominator_mean", find="denominator = tl.sum(numerator, axis=0)",
        replace="denominator = tl.sum(numerator, axis=0) / n_cols", check="row_softmax.values",
        hint="denominator is the mean, not the sum"),
    # Its 06 ("tail padded with +inf" before): the shift by max(|x|), +inf on the -inf padding.
    Bug("softmax_shift_by_max_abs", find="z = x - tl.max(x, axis=0)",
        replace="z = x - tl.max(tl.abs(x), axis=0)", check="row_softmax.values",
        hint="shift is max(|x|), not max(x)"),
]
# The mean for the sum seen by row_softmax.extreme: its row of identical values comes out 1
# everywhere, as a max for the sum (or undivided numerators) gives, so the hint names both.
BUGS.append(seen_later(BUGS, "softmax_denominator_mean", name="softmax_denominator_mean_identical",
                       check="row_softmax.extreme",
                       hint="or, the same output here, denominator is the mean"))

BUGS += [
    # The ninth learner audit. add's loads without the mask (the store keeps it): the last
    # program reads past the end of x and y. Only the interpreter's bounds check sees it: on a
    # GPU the extra lanes load whatever follows and the masked store drops them.
    Bug("add_loads_unmasked",
        find="x = tl.load(x_ptr + offsets, mask=mask)\n    y = tl.load(y_ptr + offsets, mask=mask)",
        replace="x = tl.load(x_ptr + offsets)\n    y = tl.load(y_ptr + offsets)",
        check="add.values", hint="tail not masked", interpreter_only=True),
    # row_softmax's load without mask and other: the padded lanes read the next row (past x for
    # the last one) into the max and the sum. Interpreter only: on a GPU they read whatever
    # memory follows, which no replay models (as softmax_row_offset_block_n).
    Bug("softmax_load_unmasked",
        find='x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=-float("inf"))',
        replace="x = tl.load(x_ptr + row * stride_xm + cols)", check="row_softmax.values",
        hint="tail not masked", interpreter_only=True),
    # The mask kept but other= left out: the padded lanes load 0 (Triton's default).
    Bug("softmax_load_other_omitted", find=', mask=mask, other=-float("inf")).to(tl.float32)',
        replace=", mask=mask).to(tl.float32)", check="row_softmax.values",
        hint="tail not masked"),
    # The row converted to float16, not float32 (no hint before: "missing max subtraction" and
    # "max taken as 0" on the extreme rows, where float16 overflows to inf or -inf).
    Bug("softmax_statistics_in_fp16", find='other=-float("inf")).to(tl.float32)',
        replace='other=-float("inf")).to(tl.float16)', check="row_softmax.values",
        hint="statistics in float16"),
    # The denominator sums the logits x (no hint on a row of one element before, "all zeros"
    # on ragged rows and "tail padded with a finite value" near -1e31).
    Bug("softmax_denominator_sums_x", find="denominator = tl.sum(numerator, axis=0)",
        replace="denominator = tl.sum(x, axis=0)", check="row_softmax.values",
        hint="denominator sums x, not exp(x - max)"),
    # The division reversed, sum / exp(x - max): 1 / softmax (a generic hint or none before;
    # the forty-first session).
    Bug("softmax_division_reversed", find="y = numerator / denominator",
        replace="y = denominator / numerator", check="row_softmax.values",
        hint="division reversed"),
]
BUGS += [
    seen_later(BUGS, "softmax_statistics_in_fp16", name="softmax_statistics_in_fp16_extreme",
               check="row_softmax.extreme"),
    seen_later(BUGS, "softmax_denominator_sums_x", name="softmax_denominator_sums_x_extreme",
               check="row_softmax.extreme"),
    seen_later(BUGS, "softmax_division_reversed", name="softmax_division_reversed_extreme",
               check="row_softmax.extreme"),
]
