from tests.bugs import Bug

BUGS = [
    Bug("missing_dot_term", find="dx = y * (dy - dot[:, None])", replace="dx = y * dy", count=2,
        check="backward.values", hint="missing the - <dy, y> term"),
    Bug("reduction_over_wrong_dim", find="if dim == 0:", replace="if dim == 1:",
        check="backward.dim", hint="reduction over the wrong dimension"),
    Bug("reduction_in_fp16", find="other=0.0, eviction_policy=EVICT).to(tl.float32)",
        replace="other=0.0, eviction_policy=EVICT)",
        check="backward.fp32_reduction", hint="reduction in fp16"),
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
    # Softmax.backward computes dx with PyTorch: right values, but not this workshop's kernel.
    Bug("backward_in_torch", find="dx = softmax_backward(y, dy, ctx.dim)",
        replace="dx = torch._softmax_backward_data(dy, y, ctx.dim, y.dtype)",
        check="autograd.softmax_apply", hint="backward fell back to torch"),
    Bug("no_shape_check", find='    check_same("dy", dy, "y", y)\n', replace="",
        check="bad_calls", hint="validate"),
]
