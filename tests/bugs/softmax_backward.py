from tests.bugs import Bug, seen_later

_SAVED_Y = """\
        {save}
        ctx.dim = dim
        # END EXERCISE
        return y

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dy: torch.Tensor):
        # EXERCISE Softmax: compute `dx` with softmax_backward from the saved y and the incoming
        # dy (autograd may hand you a non-contiguous or broadcast dy: the kernel takes strides).
        {load}
"""

BUGS = [
    Bug("missing_dot_term", find="dx = y * (dy - dot[:, None])", replace="dx = y * dy", count=2,
        check="backward.values", hint="missing the - <dy, y> term"),
    Bug("reduction_over_wrong_dim", find="if dim == 0:", replace="if dim == 1:",
        check="backward.dim", hint="reduction over the wrong dimension"),
    Bug("reduction_in_fp16", find="other=0.0, eviction_policy=EVICT).to(tl.float32)",
        replace="other=0.0, eviction_policy=EVICT)",
        check="backward.fp32_reduction", hint="reduction in fp16"),
    # bfloat16 on the looped paths: the running <dy, y> rounded to bf16 after every tile.
    Bug("dot_rounded_to_bf16_per_tile", find="            dot += tl.sum(dy * y, axis=1)\n",
        replace="            dot += tl.sum(dy * y, axis=1)\n"
                "            if dx_ptr.dtype.element_ty == tl.bfloat16:\n"
                "                dot = dot.to(tl.bfloat16).to(tl.float32)\n",
        check="backward.fp32_reduction", hint="reduction in fp16/bf16"),
    Bug("dy_strides_from_y", find="dy.stride(0), dy.stride(1),  # strides of dy",
        replace="y.stride(0), y.stride(1),  # strides of dy",
        check="backward.layouts", hint="dy's strides taken from y"),
    Bug("dense_jacobian",
        find="_launch_vjp(y, dy, dx, dim, block_m=block_m, block_n=block_n, num_warps=num_warps)",
        replace="dx.copy_(_dense_jacobian_vjp(y, dy, dim))",
        check="backward.no_dense_jacobian", hint="dense Jacobian"),
    Bug("tail_not_masked", find="mask = row_mask & (cols[None, :] < n_cols)  # (BLOCK_M, BLOCK_N)",
        replace="mask = row_mask  # (BLOCK_M, BLOCK_N)",
        check="backward.values", hint="tail not masked"),
    Bug("saved_x_instead_of_y", find="ctx.save_for_backward(y)", replace="ctx.save_for_backward(x)",
        check="autograd.softmax_apply", hint="saved x instead of y"),
    # The program id left int32: row * stride_ym overflows past 2^31 elements (a GPU-sized
    # tensor: only the GPU zoo runs it).
    Bug("program_id_int32", find="pid = tl.program_id(0).to(tl.int64)",
        replace="pid = tl.program_id(0)", check="cuda.int64_offsets",
        hint="offsets overflowed 32 bits", gpu_only=True),
    # y kept as an attribute of ctx instead of saved: an in-place edit of y goes unnoticed.
    # (the forward's save and the backward's read, with the lines between them unchanged)
    Bug("y_kept_on_ctx", find=_SAVED_Y.format(save="ctx.save_for_backward(y)",
                                              load="(y,) = ctx.saved_tensors"),
        replace=_SAVED_Y.format(save="ctx.y = y", load="y = ctx.y"),
        check="autograd.softmax_apply",
        hint="save y with ctx.save_for_backward so autograd can detect in-place edits"),
    # Softmax.backward computes dx with PyTorch: right values, but not this workshop's kernel.
    Bug("backward_in_torch", find="dx = softmax_backward(y, dy, ctx.dim)",
        replace="dx = torch._softmax_backward_data(dy, y, ctx.dim, y.dtype)",
        check="autograd.softmax_apply", hint="backward fell back to torch"),
    Bug("no_shape_check", find='    check_same("dy", dy, "y", y)\n', replace="",
        check="bad_calls", hint="validate"),
]

BUGS += [
    # dim defaults to 0 instead of -1, in the launcher and in Softmax's forward.
    Bug("default_dim_zero",
        find="def softmax_backward(y: torch.Tensor, dy: torch.Tensor, dim: int = -1,",
        replace="def softmax_backward(y: torch.Tensor, dy: torch.Tensor, dim: int = 0,",
        check="backward.default_dim", hint="default dim must be -1"),
    Bug("apply_default_dim_zero",
        find="def forward(ctx, x: torch.Tensor, dim: int = -1) -> torch.Tensor:",
        replace="def forward(ctx, x: torch.Tensor, dim: int = 0) -> torch.Tensor:",
        check="autograd.default_dim", hint="default dim must be -1"),
    # No guard for empty tensors: a grid of 0 programs, or a block of 0 columns, is launched.
    Bug("no_empty_guard", find="    if y.numel() > 0:\n        _launch_vjp(",
        replace="    if True:\n        _launch_vjp(", check="backward.dim", hint="zero-size input"),
    # One pass chosen for rows up to twice BLOCK_N: the rest of the row is never read or written.
    Bug("one_pass_for_wider_rows", find="ONE_PASS=bn >= n_cols", replace="ONE_PASS=2 * bn >= n_cols",
        check="backward.values", hint="ONE_PASS chosen for rows wider than BLOCK_N"),
    # dx written with y's strides (dx is new and contiguous).
    Bug("dx_strides_from_y", find="dx.stride(0), dx.stride(1),  # strides of dx",
        replace="y.stride(0), y.stride(1),  # strides of dx",
        check="backward.layouts", hint="dx written with y's strides"),
    # The looped path's `dot +=` written `dot =`: only the last column tile's part is kept.
    Bug("dot_overwritten_per_tile", find="            dot += tl.sum(dy * y, axis=1)\n",
        replace="            dot = tl.sum(dy * y, axis=1)\n",
        check="backward.values", hint="not accumulated over the column tiles"),
    # Pass 1's mask built from the tile-relative columns: the ragged last tile loads past the row.
    Bug("pass1_mask_tile_relative",
        find='            mask = row_mask & (c[None, :] < n_cols)\n'
             '            y = _load_f32(y_rows, c, stride_yn, mask, "evict_last")',
        replace='            mask = row_mask & (cols[None, :] < n_cols)\n'
                '            y = _load_f32(y_rows, c, stride_yn, mask, "evict_last")',
        check="backward.values", hint="tail not masked"),
    # Knobs that change nothing the values show, seen in the launch record: block_m always the
    # heuristic's on the row path...
    Bug("block_m_ignored",
        find="bm = block_m or max(1, min(_ROW_TILE // bn, 64, triton.next_power_of_2(n_rows)))",
        replace="bm = max(1, min(_ROW_TILE // bn, 64, triton.next_power_of_2(n_rows)))",
        check="backward.values", hint="knob ignored: block_m=4"),
    # ...num_warps always the heuristic's...
    Bug("num_warps_ignored", find="warps = num_warps or min(max((bm * bn) // 512, 1), 16)",
        replace="warps = min(max((bm * bn) // 512, 1), 16)", check="backward.values",
        hint="knob ignored: num_warps=2"),
    # ...and block_n ignored on the column-tile path (a transposed layout).
    Bug("block_n_ignored_columns", find="bn = block_n or (width if bm * width <= 4096",
        replace="bn = (width if bm * width <= 4096", check="backward.values",
        hint="knob ignored: block_n=32"),
]

BUGS += [
    # tl.sum without its axis: the looped path adds the whole tile's sum to every row's dot.
    Bug("dot_summed_over_tile", find="dot += tl.sum(dy * y, axis=1)",
        replace="dot += tl.sum(dy * y)", check="backward.values",
        hint="<dy, y> summed over the whole tile"),
    # The same in the one-pass branch (a scalar dot, subtracted from every row).
    Bug("one_pass_dot_summed_over_tile",
        find="        dot = tl.sum(dy * y, axis=1)  # (BLOCK_M,) one dot product per row\n"
             "        dx = y * (dy - dot[:, None])  # (BLOCK_M, BLOCK_N)\n",
        replace="        dot = tl.sum(dy * y)\n        dx = y * (dy - dot)\n",
        check="backward.values", hint="<dy, y> summed over the whole tile"),
]

BUGS += [
    # Found by the twenty-ninth session's learner audit (both were silent): y and dy swapped
    # in the formula (both branches), and in autograd's backward call...
    Bug("y_dy_swapped", find="dx = y * (dy - dot[:, None])  # (BLOCK_M, BLOCK_N)",
        replace="dx = dy * (y - dot[:, None])  # (BLOCK_M, BLOCK_N)", count=2,
        check="backward.values", hint="y and dy swapped"),
    # ...autograd's backward call without the saved dim: dim=0 reduces over dim -1 instead.
    Bug("apply_drops_saved_dim", find="dx = softmax_backward(y, dy, ctx.dim)",
        replace="dx = softmax_backward(y, dy)", check="autograd.softmax_apply",
        hint="Softmax.backward dropped the saved dim"),
    Bug("apply_y_dy_swapped", find="dx = softmax_backward(y, dy, ctx.dim)",
        replace="dx = softmax_backward(dy, y, ctx.dim)", check="autograd.softmax_apply",
        hint="y and dy swapped"),
    # ...and the dot product taken over dy alone.
    Bug("dot_without_y", find="dot = tl.sum(dy * y, axis=1)  # (BLOCK_M,) one dot product per row",
        replace="dot = tl.sum(dy, axis=1)  # (BLOCK_M,) one dot product per row",
        check="backward.values", hint="the dot product left out y"),
    # The thirtieth session: for dim=0 the launcher transposes y and dy but not dx (the
    # audit's B3), so the kernel writes dx through the untransposed tensor.
    Bug("dx_not_transposed_for_dim0", find="        y, dy, dx = y.t(), dy.t(), dx.t()\n",
        replace="        y, dy = y.t(), dy.t()\n", check="backward.layouts",
        hint="dim=0 set up wrong"),
]

BUGS += [
    # Found by the third-round learner audit (silent): the looped path's pass 2 with the
    # subtraction reversed, dx = y * (<dy, y> - dy), exactly -dx (the one-pass branch is right,
    # so only rows wider than BLOCK_N show it).
    Bug("loop_pass2_sign_flipped",
        find="            # EXERCISE softmax_backward, vjp: `dx` for this tile, from the finished `dot`\n"
             "            dx = y * (dy - dot[:, None])",
        replace="            # EXERCISE softmax_backward, vjp: `dx` for this tile, from the finished `dot`\n"
                "            dx = y * (dot[:, None] - dy)",
        check="backward.values", hint="sign flipped"),
]

BUGS += [
    # Found by the fourth-round learner audit (B2, B7: silent): the factor y left out of dx,
    # dx = dy - <dy, y>, in the one-pass branch...
    Bug("dx_without_y_factor",
        find="        dot = tl.sum(dy * y, axis=1)  # (BLOCK_M,) one dot product per row\n"
             "        dx = y * (dy - dot[:, None])  # (BLOCK_M, BLOCK_N)\n",
        replace="        dot = tl.sum(dy * y, axis=1)  # (BLOCK_M,) one dot product per row\n"
                "        dx = dy - dot[:, None]  # (BLOCK_M, BLOCK_N)\n",
        check="backward.values", hint="the factor y left out"),
    # ...and in the looped path's pass 2 (rows wider than BLOCK_N only).
    Bug("loop_pass2_without_y_factor",
        find="            # EXERCISE softmax_backward, vjp: `dx` for this tile, from the finished `dot`\n"
             "            dx = y * (dy - dot[:, None])",
        replace="            # EXERCISE softmax_backward, vjp: `dx` for this tile, from the finished `dot`\n"
                "            dx = dy - dot[:, None]",
        check="backward.values", hint="the factor y left out"),
    # B1 (silent): <dy, y> divided by the width, a mean instead of a sum.
    Bug("dot_as_mean", find="dot = tl.sum(dy * y, axis=1)  # (BLOCK_M,) one dot product per row",
        replace="dot = tl.sum(dy * y, axis=1) / n_cols  # (BLOCK_M,) one dot product per row",
        check="backward.values", hint="<dy, y> divided by the width"),
    # B6 (misleading on a 1x1 row, where y = 1 and y/dy swapped gives the same dy - dy^2):
    # <dy, dy> for <dy, y>.
    Bug("dot_dy_dy", find="dot = tl.sum(dy * y, axis=1)  # (BLOCK_M,) one dot product per row",
        replace="dot = tl.sum(dy * dy, axis=1)  # (BLOCK_M,) one dot product per row",
        check="backward.values", hint="<dy, dy> for <dy, y>"),
    # B4 (only "output never written"): for dim=0 the views copied with .contiguous(), so the
    # kernel writes a copy of dx and the returned dx stays empty.
    Bug("dim0_contiguous_copies", find="        y, dy, dx = y.t(), dy.t(), dx.t()\n",
        replace="        y, dy, dx = y.t().contiguous(), dy.t().contiguous(), dx.t().contiguous()\n",
        check="backward.layouts", hint="dx for dim=0 written into a copy"),
]

BUGS += [
    # Found by the fifth learner audit (no hint: "y must be a torch.Tensor, got tuple"): the
    # tuple ctx.saved_tensors passed on as y, not unpacked.
    Bug("saved_tensors_not_unpacked", find="(y,) = ctx.saved_tensors\n        dx =",
        replace="y = ctx.saved_tensors\n        dx =", check="autograd.softmax_apply",
        hint="ctx.saved_tensors is a tuple: unpack it"),
    # Found by the fifth learner audit (silent): Softmax.backward copies dy with .contiguous()
    # before the kernel, which takes strides: right values, one copy of dy per backward.
    Bug("backward_copies_dy", find="dx = softmax_backward(y, dy, ctx.dim)",
        replace="dx = softmax_backward(y, dy.contiguous(), ctx.dim)", check="autograd.no_dy_copy",
        hint="Softmax.backward copied dy"),
]

BUGS += [
    # Found by the sixth learner audit (its 16-19). forward saved a fixed dim: backward reduces
    # over -1 whatever dim was given...
    Bug("forward_saves_dim_minus_one", find="ctx.dim = dim", replace="ctx.dim = -1",
        check="autograd.softmax_apply", hint="forward saved the wrong dim"),
    # ...Softmax.backward upcast dy, which softmax_backward refuses (dy must have y's dtype)...
    Bug("backward_dy_upcast", find="dx = softmax_backward(y, dy, ctx.dim)",
        replace="dx = softmax_backward(y, dy.float(), ctx.dim)",
        check="autograd.softmax_apply", hint="Softmax.backward changed dy's dtype"),
    # ...the finished dot product rounded to the 16-bit output dtype before the formula...
    Bug("dot_rounded_to_output_dtype",
        find="dot = tl.sum(dy * y, axis=1)  # (BLOCK_M,) one dot product per row",
        replace="dot = tl.sum(dy * y, axis=1).to(dx_ptr.dtype.element_ty)  # (BLOCK_M,) one dot "
                "product per row",
        check="backward.fp32_reduction", hint="<dy, y> rounded to"),
    # ...and keep_dims=True with dot[:, None]: a (BLOCK_M, 1, 1) dot makes dx 3-D.
    Bug("dot_keep_dims_and_none",
        find="dot = tl.sum(dy * y, axis=1)  # (BLOCK_M,) one dot product per row",
        replace="dot = tl.sum(dy * y, axis=1, keep_dims=True)  # (BLOCK_M,) one dot product per "
                "row",
        check="backward.values", hint="keep_dims=True and [:, None] both add the row axis"),
]

BUGS += [
    # The seventh learner audit's 13 (no hint before): only the Jacobian's diagonal,
    # dx = dy * y * (1 - y), a sigmoid's derivative, in the one-pass branch...
    Bug("jacobian_diagonal_only",
        find="\n        dx = y * (dy - dot[:, None])  # (BLOCK_M, BLOCK_N)",
        replace="\n        dx = dy * y * (1.0 - y)  # (BLOCK_M, BLOCK_N)",
        check="backward.values", hint="only the Jacobian's diagonal"),
    # ...and its 14 (no hint before: "too many values to unpack"): forward saves x and y,
    # backward unpacks one tensor.
    Bug("forward_saves_x_and_y", find="ctx.save_for_backward(y)",
        replace="ctx.save_for_backward(x, y)", check="autograd.softmax_apply",
        hint="forward saved 2 tensors"),
]
# The diagonal alone seen by later checks that gave no hint before: no_dense_jacobian and
# autograd.default_dim now ask the values check's diagnoses when the values are wrong.
BUGS += [
    seen_later(BUGS, "jacobian_diagonal_only", name="jacobian_diagonal_only_no_dense",
               check="backward.no_dense_jacobian"),
    seen_later(BUGS, "jacobian_diagonal_only", name="jacobian_diagonal_only_default_dim",
               check="autograd.default_dim"),
]

BUGS += [
    # The ninth learner audit (no hint before): the dot product of y with 1, sum(y) = 1...
    Bug("dot_without_dy", find="dot = tl.sum(dy * y, axis=1)  # (BLOCK_M,) one dot product per row",
        replace="dot = tl.sum(y, axis=1)  # (BLOCK_M,) one dot product per row",
        check="backward.values", hint="the dot product left out dy"),
    # ...and forward without ctx.dim = dim: backward's ctx.dim raises AttributeError.
    Bug("forward_dim_not_saved", find="        ctx.dim = dim\n", replace="",
        check="autograd.softmax_apply", hint="forward did not save dim"),
]

BUGS += [
    # Left from the ninth learner audit (FAILed every autograd case with no hint, and the launch
    # check said "the values are right"): backward allocates dx and returns it unwritten.
    Bug("backward_returns_empty", find="        dx = softmax_backward(y, dy, ctx.dim)\n",
        replace="        dx = torch.empty_like(dy)\n", check="autograd.softmax_apply",
        hint="dx allocated but never computed"),
    # ...and its B21 (no hint: the launcher refuses mixed dtypes): the saved y upcast.
    Bug("backward_y_upcast", find="dx = softmax_backward(y, dy, ctx.dim)",
        replace="dx = softmax_backward(y.float(), dy, ctx.dim)", check="autograd.softmax_apply",
        hint="Softmax.backward changed y's dtype"),
]

BUGS += [
    # The tenth learner audit's b05 (named already; its diagnosis had no guard): the dot product
    # subtracted outside the parentheses, y * dy - <dy, y>, in both branches.
    Bug("dx_misplaced_parenthesis", find="dx = y * (dy - dot[:, None])", replace="dx = y * dy - dot[:, None]",
        count=2, check="backward.values", hint="misplaced parenthesis"),
    # b04 (named already): the per-row dot subtracted from the tile without [:, None]; a
    # (BLOCK_M,) vector does not broadcast against (BLOCK_M, BLOCK_N) (Triton refuses it).
    Bug("one_pass_dot_not_broadcast",
        find="        dx = y * (dy - dot[:, None])  # (BLOCK_M, BLOCK_N)\n        # END EXERCISE\n"
             "        tl.store(dx_rows + cols",
        replace="        dx = y * (dy - dot)  # (BLOCK_M, BLOCK_N)\n        # END EXERCISE\n"
                "        tl.store(dx_rows + cols",
        check="backward.values", hint="block shapes do not broadcast"),
    # b15 (no hint before): y y^T read as y squared elementwise, <dy, y * y> for <dy, y>.
    Bug("dot_y_squared", find="tl.sum(dy * y, axis=1)", replace="tl.sum(dy * y * y, axis=1)",
        count=2, check="backward.values", hint="y squared in the dot product"),
]

BUGS += [
    # The tenth audit's b10 (its first FAIL named, three later cases without a hint): the
    # same slip in pass 2 of the looped path. Other tile shapes do not compile, but the
    # (40, 50) transposed case runs a square 32 x 32 tile, where the (BLOCK_M,) dot broadcasts
    # along the rows without an error; its replay names it there.
    Bug("two_pass_dot_not_broadcast",
        find="            dx = y * (dy - dot[:, None])  # (BLOCK_M, BLOCK_N)",
        replace="            dx = y * (dy - dot)  # (BLOCK_M, BLOCK_N)",
        check="backward.values", hint="block shapes do not broadcast"),
]
BUGS.append(seen_later(BUGS, "two_pass_dot_not_broadcast", name="two_pass_dot_not_broadcast_square",
                       check="backward.values", hint="not broadcast along its row"))
