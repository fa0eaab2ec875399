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
