from tests.bugs import Bug

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
