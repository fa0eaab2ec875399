from tests.bugs import Bug, seen_later

# Path B's update of the running sum in its first pass (the line three of these bugs edit).
_RESCALE = "s = s * tl.exp2((m - shift) * LOG2E) + tl.sum(tl.exp2((x - shift[None, :]) * LOG2E),"

BUGS = [
    # The row's own stride dropped: neighbours along the softmax dimension read as adjacent.
    Bug("stride_n_ignored", find="i * stride_xi + r * stride_xr, mask=",
        replace="i * stride_xi + r, mask=", check="forward.layouts", hint="stride ignored"),
    Bug("no_max_subtraction", find="numerator = tl.exp2((x - m[:, None]) * LOG2E)",
        replace="numerator = tl.exp2(x * LOG2E)", check="forward.extreme",
        hint="missing max subtraction"),
    # The tail of a row padded with 0, which then adds exp(0 - max) to the row's sum.
    Bug("tail_other_zero", find='other=-float("inf")).to(tl.float32)',
        replace="other=0.0).to(tl.float32)",
        check="forward.ragged", hint="tail not masked"),
    # The launcher hands the kernel dense row-major strides instead of x's own.
    Bug("broadcast_read_as_dense", find="x_strides = x.stride()",
        replace="x_strides = (n_cols, 1)", check="forward.layouts", hint="read as if dense"),
    Bug("output_with_input_strides", find="out_strides = (n_cols, 1)",
        replace="out_strides = x.stride()", check="forward.layouts",
        hint="output written with the input's strides"),
    Bug("statistics_in_fp16", find=".to(tl.float32)", replace=".to(tl.float16)",
        check="forward.layouts", hint="statistics in fp16"),
    # No bug drops the upcast in _load_x (.to(tl.float32) left out): no output can show it.
    # Triton 3.6's tl.max and tl.sum widen 16-bit floats to float32 before reducing, and every
    # other use of x subtracts a float32 statistic first, which widens x exactly; the outputs
    # were bit for bit the reference's on both paths, one block, two passes and split, fp16
    # and bf16, under the interpreter (the GPU compiles the same promotions).
    # Every kernel computes the same softmax, so only the launched kernels' names (checked by
    # forward.paths) show a forced path that did not run: plan() choosing from the strides
    # whatever path was asked for...
    Bug("path_knob_ignored", find="path = path or _choose_path(", replace="path = _choose_path(",
        check="forward.paths", hint="path knob ignored"),
    # ...and a launcher that runs path B's kernel for every unsplit plan, path A's included.
    Bug("launcher_ignores_plan_path",
        find='kernel = softmax_along_kernel if p.path == "A" else softmax_across_kernel',
        replace="kernel = softmax_across_kernel", check="forward.paths",
        hint="path knob ignored"),
    # The old sum not rescaled by exp(m - m_new) when the running max grows.
    Bug("running_sum_not_rescaled", find=_RESCALE,
        replace="s = s + tl.sum(tl.exp2((x - shift[None, :]) * LOG2E),", check="forward.paths",
        hint="normalizer"),
    # The -inf guard dropped: a row starting with a block of -inf computes -inf - (-inf).
    Bug("running_max_minus_inf_unguarded", find=_RESCALE,
        replace="s = s * tl.exp2((m - m_new) * LOG2E) + "
                "tl.sum(tl.exp2((x - m_new[None, :]) * LOG2E),",
        check="forward.extreme", hint="running max still -inf"),
    # The exchange (a kernel only a GPU runs: its slices wait for each other). Workshop 5's
    # merge with each slice's sum added as if all slices shared one max...
    Bug("exchange_sums_not_rescaled",
        find="s_all = tl.sum(s_k * tl.exp2((m_k - shift_all[None, :]) * LOG2E), axis=0)",
        replace="s_all = tl.sum(s_k, axis=0)", check="cuda.exchange", hint="slices disagree",
        gpu_only=True),
    # ...and each slice's exp(x - m) divided by the merged sum without exp(m - M).
    Bug("exchange_numerator_not_rescaled", find="scale = tl.exp2((m - m_all) * LOG2E) / s_all",
        replace="scale = 1.0 / s_all", check="cuda.exchange", hint="slices disagree",
        gpu_only=True),
    # The same merge mistake in the shared-memory exchange (the Gluon kernel).
    Bug("smem_exchange_sums_not_rescaled",
        find="s_all = gl.sum(s_k * gl.exp2((m_k - shift_all[None, :]) * LOG2E), axis=0)",
        replace="s_all = gl.sum(s_k, axis=0)", check="cuda.exchange", hint="slices disagree",
        gpu_only=True),
    Bug("no_knob_validation", find='check_power_of_two("num_warps", num_warps, 1, 16)',
        replace="pass", check="bad_calls", hint="refuse bad calls"),
    # An output buffer cached across calls (keyed on shape, dtype, device): the second call
    # overwrites the first call's result.
    Bug("output_cached", find="    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)",
        replace="    out = softmax.__dict__.setdefault((tuple(x.shape), x.dtype, x.device), "
                "torch.empty(x.shape, dtype=x.dtype, device=x.device))",
        check="forward.fresh_output", hint="no cached buffer"),
    # The tail padded with a finite "very negative" number: right until every logit of a row
    # lies below it (-1e31), then the padding wins the max and takes the whole sum.
    Bug("tail_other_finite", find='other=-float("inf")).to(tl.float32)',
        replace="other=-1e30).to(tl.float32)", check="forward.extreme",
        hint="tail padded with a finite value instead of -inf"),
    # Path B's running max started at 0: logits far below 0 (-200) leave a sum of 0.
    Bug("running_max_starts_at_zero",
        find='m = tl.full([BLOCK_I], -float("inf"), tl.float32)  # running max of each row',
        replace="m = tl.zeros([BLOCK_I], tl.float32)  # running max of each row",
        check="forward.extreme", hint="running max must start at -inf"),
    # The split's merge pads its missing slices (SPLITS is a power of two) with a max of 0.
    Bug("merge_pads_missing_slices_with_zero",
        find='m_k = tl.load(stats_ptr + k * n_i + i, mask=ok, other=-float("inf"))',
        replace="m_k = tl.load(stats_ptr + k * n_i + i, mask=ok, other=0.0)",
        check="forward.extreme", hint="pad missing slices with max -inf"),
    # Path A's first pass stops one block short when n_r % BLOCK_R == 1: the last position
    # (its own block) never reaches the row's max and sum.
    Bug("along_first_pass_skips_last_block",
        find="        for start in range(0, n_r, BLOCK_R):\n            r = start + r0\n"
             "            x = _load_x(x_ptr, i, r, stride_xi, stride_xr, i_ok, r < n_r)\n"
             "            m_new",
        replace="        for start in range(0, n_r - 1, BLOCK_R):\n            r = start + r0\n"
                "            x = _load_x(x_ptr, i, r, stride_xi, stride_xr, i_ok, r < n_r)\n"
                "            m_new",
        check="forward.paths", hint="last position skipped"),
]

# Path A's update of the running sum in its two-pass walk (the same mistakes as path B's above).
_RESCALE_A = ("s = s * tl.exp2((m - shift) * LOG2E) + "
              "tl.sum(tl.exp2((x - shift[:, None]) * LOG2E),")

BUGS += [
    # dim defaults to 0 instead of -1: softmax(x) reduces down the columns.
    Bug("default_dim_zero", find="def softmax(x: torch.Tensor, dim: int = -1,",
        replace="def softmax(x: torch.Tensor, dim: int = 0,", check="forward.default_dim",
        hint="default dim must be -1"),
    # The tile limit off by one: block_r * block_i = 65536, the largest tile, refused.
    Bug("tile_limit_off_by_one", find="if block_r * block_i > _MAX_TILE:",
        replace="if block_r * block_i >= _MAX_TILE:", check="forward.paths",
        hint="tile limit off by one"),
    # The split's (max, sum) workspace in x's dtype: a float16 slice sum past 65504 is inf.
    Bug("split_stats_in_x_dtype",
        find="        # Stage 1 fills (max, sum) per slice and row; stage 2 merges them and "
             "normalises.\n        stats = torch.empty((2, p.splits, p.n_i), dtype=torch.float32,",
        replace="        # Stage 1 fills (max, sum) per slice and row; stage 2 merges them and "
                "normalises.\n        stats = torch.empty((2, p.splits, p.n_i), dtype=x.dtype,",
        check="forward.paths", hint="split statistics kept in 16 bits"),
    # The one-block branch chosen for rows up to twice BLOCK_R: the rest of the row is lost.
    Bug("one_block_for_longer_rows", find="n_r <= block_r and splits == 1",
        replace="n_r <= 2 * block_r and splits == 1", check="forward.paths",
        hint="ONE_BLOCK chosen for a row longer than BLOCK_R"),
    Bug("along_running_max_minus_inf_unguarded", find=_RESCALE_A,
        replace="s = s * tl.exp2((m - m_new) * LOG2E) + "
                "tl.sum(tl.exp2((x - m_new[:, None]) * LOG2E),",
        check="forward.extreme", hint="running max still -inf"),
    Bug("along_running_sum_not_rescaled", find=_RESCALE_A,
        replace="s = s + tl.sum(tl.exp2((x - shift[:, None]) * LOG2E),", check="forward.paths",
        hint="normalizer"),
    # Slices not rounded to whole blocks: a block straddles two slices and is counted twice.
    Bug("split_rows_not_whole_blocks",
        find="rows_per_split = cdiv(cdiv(n_r, splits), block_r) * block_r",
        replace="rows_per_split = cdiv(n_r, splits)", check="forward.paths", hint="normalizer"),
    # Knobs that change nothing the values show, seen in the launch record: num_stages never
    # passed to the launch...
    Bug("num_stages_ignored",
        find='stages = {} if p.num_stages is None else {"num_stages": p.num_stages}',
        replace="stages = {}", check="forward.paths", hint="knob ignored: num_stages="),
    # ...a fixed num_warps at the unsplit launch...
    Bug("num_warps_ignored", find="ONE_BLOCK=p.one_block, num_warps=p.num_warps,",
        replace="ONE_BLOCK=p.one_block, num_warps=4,", check="forward.paths",
        hint="knob ignored: num_warps="),
    # ...path B's block_i always chosen by the plan...
    Bug("block_i_ignored_path_b",
        find="        if block_i is None:\n            if short and block_r is None:",
        replace="        if True:\n            if short and block_r is None:",
        check="forward.paths", hint="knob ignored: block_i=2"),
    # ...and path A's block_r always the whole row (or the wide-row chunk).
    Bug("block_r_ignored_path_a",
        find="            if block_r is None:\n"
             "                block_r = max(_pow2(n_r), 2) if n_r <= _MAX_ONE_BLOCK",
        replace="            if True:\n"
                "                block_r = max(_pow2(n_r), 2) if n_r <= _MAX_ONE_BLOCK",
        check="forward.paths", hint="knob ignored: block_r=16"),
    # The input copied before the launch (values right, memory and bandwidth doubled): every
    # view made contiguous...
    Bug("input_copied", find="    p = plan(x, dim,",
        replace="    x = x.contiguous()\n    p = plan(x, dim,", check="forward.no_input_copy",
        hint="the input was copied"),
    # ...or only a broadcast one materialised, once the argument is known to be a tensor.
    Bug("broadcast_materialised", find="    p = plan(x, dim,",
        replace="    if isinstance(x, torch.Tensor) and 0 in x.stride():\n"
                "        x = x.contiguous()\n    p = plan(x, dim,",
        check="forward.no_input_copy", hint="the input was copied"),
]

BUGS += [
    # Found by the twenty-ninth session's learner audit: the store's row mask dropped, so the
    # rows past the last one are stored; the hint blamed the input's strides, which here are
    # the output's own. (Under the interpreter "store not masked", on a GPU the tail guard's
    # "tail not masked".)
    Bug("store_without_row_mask",
        find="tl.store(out_rows + r0 * stride_or, y.to(out_ptr.dtype.element_ty), mask=i_ok & r_ok)",
        replace="tl.store(out_rows + r0 * stride_or, y.to(out_ptr.dtype.element_ty), mask=r_ok)",
        check="forward.layouts", hint="not masked"),
    # The thirtieth session: the dim=0 plan swaps the strides but not the sizes (the
    # audit's S5). Under the interpreter the kernel reads past x; on a GPU it reads the wrong
    # cells. Either way softmax(x.t(), dim=-1) is right, which is what names it.
    Bug("dim0_sizes_not_swapped", find="        n_i, n_r = n_cols, n_rows\n",
        replace="        n_i, n_r = n_rows, n_cols\n", check="forward.layouts",
        hint="dim=0 set up wrong"),
]

BUGS += [
    # Found by the third-round learner audit (its S2 and S4). Path B's first pass without
    # `m = m_new`: m stays -inf, so normalize's exp(x - m) is +inf everywhere.
    Bug("across_running_max_not_updated", find="axis=0)\n        m = m_new\n",
        replace="axis=0)\n", check="forward.paths", hint="running max never updated"),
    # Path B's normalize with log2(s) inside the * LOG2E: each row off by s^(1 - log2 e).
    Bug("normalize_log2s_inside_log2e",
        find="y = tl.exp2((x - m[None, :]) * LOG2E - log2_s[None, :])",
        replace="y = tl.exp2((x - m[None, :] - log2_s[None, :]) * LOG2E)",
        check="forward.paths", hint="log2(s) inside the * LOG2E"),
]

BUGS += [
    # The thirtieth session's third audit (silent): path A's row sum taken down the tile's
    # columns, each element divided by the sum over its program's rows at its position.
    Bug("row_sum_down_the_tile",
        find="        y = numerator * (1.0 / tl.sum(numerator, axis=1))[:, None]  # one divide per row",
        replace="        y = numerator * (1.0 / tl.sum(numerator, axis=0))[None, :]  # one divide per row",
        check="forward.layouts", hint="row sum taken down the tile's columns"),
]

BUGS += [
    # The fourth-round learner audit (its S1-S7). The plan tests dim against -1, but dim
    # arrives normalised to 0 or 1: every dim=-1 and dim=1 call reduces over dim 0.
    Bug("plan_tests_dim_minus_one", find="    if dim == 1:\n        n_i, n_r = n_rows, n_cols\n",
        replace="    if dim == -1:\n        n_i, n_r = n_rows, n_cols\n", check="forward.layouts",
        hint="reduction over the wrong dimension"),
    # Path A's one-block exp2 without the LOG2E factor: the softmax of x * ln 2.
    Bug("along_exp2_without_log2e", find="numerator = tl.exp2((x - m[:, None]) * LOG2E)",
        replace="numerator = tl.exp2(x - m[:, None])", check="forward.layouts",
        hint="exp2 without log2(e)"),
    # Path A's one-block store with x's strides instead of the output's: the dim=0 probe on
    # x.t() is right too (there x's strides are the output's), so it must not speak first.
    Bug("along_store_with_x_strides",
        find="tl.store(out_rows + r0 * stride_or, y.to(out_ptr.dtype.element_ty), mask=i_ok & r_ok)",
        replace="tl.store(out_ptr + i * stride_xi + r0 * stride_xr, "
                "y.to(out_ptr.dtype.element_ty), mask=i_ok & r_ok)",
        check="forward.layouts", hint="output written with the input's strides"),
    # Path B's first pass adds the chunk's exp(x - m) with the old running max (-inf at the
    # first chunk): the sum is inf and every output 0.
    Bug("across_chunk_terms_old_max",
        find="tl.sum(tl.exp2((x - shift[None, :]) * LOG2E),\n",
        replace="tl.sum(tl.exp2((x - m[None, :]) * LOG2E),\n", check="forward.paths",
        hint="chunk terms shifted by the old running max"),
    # Path B's and path A's first pass add 2^(x - shift), the chunk terms without LOG2E, beside
    # a right rescale (a generic hint before; the forty-first session).
    Bug("across_chunk_terms_without_log2e",
        find="tl.sum(tl.exp2((x - shift[None, :]) * LOG2E),\n",
        replace="tl.sum(tl.exp2(x - shift[None, :]),\n", check="forward.paths",
        hint="chunk terms without LOG2E"),
    Bug("along_chunk_terms_without_log2e", find=_RESCALE_A,
        replace="s = s * tl.exp2((m - shift) * LOG2E) + tl.sum(tl.exp2(x - shift[:, None]),",
        check="forward.paths", hint="chunk terms without LOG2E"),
    # Path B's first pass keeps only each chunk's max: right while the maxima grow, an inf sum
    # once a chunk lies ~120 below an earlier one (forward.paths' drop=True cases).
    Bug("across_running_max_is_chunk_max", find="m_new = tl.maximum(m, tl.max(x, axis=0))",
        replace="m_new = tl.max(x, axis=0)", check="forward.paths",
        hint="running max must be max(m, chunk max)"),
    # _load_x's address with the two strides exchanged: a transposed read (out of bounds for
    # most views under the interpreter, where a square probe names it).
    Bug("load_strides_swapped", find="x_ptr + i * stride_xi + r * stride_xr, mask=",
        replace="x_ptr + i * stride_xr + r * stride_xi, mask=", check="forward.layouts",
        hint="x's two strides swapped"),
    # The audit's side finding: path A's max without [:, None] compiles only on a square tile
    # (rows of 17 packed 32 to a program: forward.ragged's [70, 17]).
    Bug("along_max_not_broadcast_square_tile",
        find="numerator = tl.exp2((x - m[:, None]) * LOG2E)",
        replace="numerator = tl.exp2((x - m) * LOG2E)", check="forward.ragged",
        hint="row max not broadcast along its row"),
]

BUGS += [
    # The dim=0 plan swaps x's sizes and strides but not the output's: the kernel stores
    # softmax row i at the output's row i. The probe softmax(x.t(), dim=-1) with the same knobs
    # is right, so the hint names the plan, not a kernel's store.
    Bug("dim0_output_strides_not_swapped", find="        stride_or, stride_oi = out_strides\n",
        replace="        stride_oi, stride_or = out_strides\n", check="forward.paths",
        hint="dim=0 set up wrong"),
    # Learner journey leftover (S7): path B's statistics reduced over the positions (axis=1)
    # instead of across them. Most cases stop at the broadcast in the same line; a split strip
    # of one row carries the (positions,) statistics to the split kernel's store, in given
    # code, where the framework's store-shape hint names the wrong axis too.
    Bug("across_stats_wrong_axis",
        find="""        m_new = tl.maximum(m, tl.max(x, axis=0))
        shift = tl.where(m_new == -float("inf"), 0.0, m_new)
        s = s * tl.exp2((m - shift) * LOG2E) + tl.sum(tl.exp2((x - shift[None, :]) * LOG2E),
                                                      axis=0)""",
        replace="""        m_new = tl.maximum(m, tl.max(x, axis=1))
        shift = tl.where(m_new == -float("inf"), 0.0, m_new)
        s = s * tl.exp2((m - shift) * LOG2E) + tl.sum(tl.exp2((x - shift[:, None]) * LOG2E),
                                                      axis=1)""",
        check="forward.paths", hint="reduction over the wrong axis"),
]

BUGS += [
    # The h_a learner audit (its 07, 08 and 24). Path A's one-block row max taken down the
    # tile's columns: each element shifted by its position's max over the program's rows (NaN
    # rows where every row of the tile is real and the row is padded to BLOCK_R).
    Bug("along_row_max_down_the_columns",
        find="        m = tl.max(x, axis=1)  # (BLOCK_I,)\n"
             "        numerator = tl.exp2((x - m[:, None]) * LOG2E)  # exp(x - m)\n",
        replace="        m = tl.max(x, axis=0)  # (BLOCK_I,)\n"
                "        numerator = tl.exp2((x - m[None, :]) * LOG2E)  # exp(x - m)\n",
        check="forward.layouts", hint="row max taken over the wrong axis of the tile"),
    # Path B's old sum rescaled with the sign flipped: exp(m_new - m) is inf at the first
    # chunk (m = -inf) and 0 * inf = NaN, so every output is NaN.
    Bug("across_rescale_flipped", find=_RESCALE,
        replace="s = s * tl.exp2((shift - m) * LOG2E) + tl.sum(tl.exp2((x - shift[None, :]) * LOG2E),",
        check="forward.paths", hint="old sum rescaled by exp(m_new - m)"),
    # Path B's -inf guard tests the old m: the first chunk is shifted by 0 (its terms exp(x))
    # while m becomes its max, so each row's sum is exp(first chunk's max) too large.
    Bug("across_guard_tests_old_m",
        find='        shift = tl.where(m_new == -float("inf"), 0.0, m_new)\n'
             "        s = s * tl.exp2((m - shift) * LOG2E) + tl.sum(tl.exp2((x - shift[None, :])",
        replace='        shift = tl.where(m == -float("inf"), 0.0, m_new)\n'
                "        s = s * tl.exp2((m - shift) * LOG2E) + tl.sum(tl.exp2((x - shift[None, :])",
        check="forward.paths", hint="the -inf guard must test m_new"),
    # The fifth audit's 09: path B's normalize divides by log2_s (s as a base-2 exponent)
    # instead of subtracting it inside the exp2: each row off by s / log2(s).
    Bug("normalize_divided_by_log2s",
        find="y = tl.exp2((x - m[None, :]) * LOG2E - log2_s[None, :])",
        replace="y = tl.exp2((x - m[None, :]) * LOG2E) / log2_s[None, :]",
        check="forward.paths", hint="divided by log2(s)"),
    # The fifth audit's 05: _load_x's mask without the row bound. The lanes of rows past the
    # last feed only results that are never stored, so a GPU shows nothing; the interpreter's
    # bounds check stops the read, and a probe on x followed by more rows names the mask.
    Bug("load_without_row_mask",
        find="x = tl.load(x_ptr + i * stride_xi + r * stride_xr, mask=i_ok & r_ok,",
        replace="x = tl.load(x_ptr + i * stride_xi + r * stride_xr, mask=r_ok,",
        check="forward.layouts", hint="load without the row mask", interpreter_only=True),
]
# The same mistake seen by forward.default_dim (softmax(x) with dim left out), which asks the
# same probe: the planted text is the bug's above, only the check differs.
BUGS.append(seen_later(BUGS, "load_without_row_mask", name="load_without_row_mask_default_dim",
                       check="forward.default_dim"))

BUGS += [
    # The sixth learner audit's 07 (A): path A's one-block store without * stride_or (right for dim=1,
    # where stride_or is 1; the hint blamed the dim=0 plan, whose path B runs right).
    Bug("along_store_without_stride_or",
        find="tl.store(out_rows + r0 * stride_or, y.to(out_ptr.dtype.element_ty), mask=i_ok & r_ok)",
        replace="tl.store(out_rows + r0, y.to(out_ptr.dtype.element_ty), mask=i_ok & r_ok)",
        check="forward.layouts", hint="position offset not multiplied by stride_or"),
    # Its 08: path B's running max over the whole tile (tl.max(x), no axis): exact until a row
    # lies far below another of its strip (the hint was "missing max subtraction").
    Bug("across_max_over_whole_tile", find="m_new = tl.maximum(m, tl.max(x, axis=0))",
        replace="m_new = tl.maximum(m, tl.max(x))", check="forward.extreme",
        hint="running max shared by the whole tile"),
    # Its 10: tl.exp of the LOG2E product: the softmax of x * log2(e) (no hint).
    Bug("along_exp_with_log2e", find="numerator = tl.exp2((x - m[:, None]) * LOG2E)",
        replace="numerator = tl.exp((x - m[:, None]) * LOG2E)", check="forward.layouts",
        hint="tl.exp with LOG2E"),
    # Its 12: the dim=1 plan's output strides swapped (the hint was "store not masked").
    Bug("dim1_output_strides_swapped",
        find="        stride_xi, stride_xr = x_strides\n        stride_oi, stride_or = out_strides",
        replace="        stride_xi, stride_xr = x_strides\n        stride_or, stride_oi = out_strides",
        check="forward.layouts", hint="output strides swapped"),
    # Its 27: path B's normalize multiplies by s instead of dividing (each row off by s^2).
    Bug("normalize_multiplied_by_s",
        find="y = tl.exp2((x - m[None, :]) * LOG2E - log2_s[None, :])",
        replace="y = tl.exp2((x - m[None, :]) * LOG2E) * s[None, :]", check="forward.paths",
        hint="multiplied by s instead of divided"),
]

BUGS += [
    # The seventh learner audit's 07 (on 16-bit rows a guess between two causes before):
    # _load_x zeroes the lanes past the row's end too, tl.where(i_ok & r_ok, x, 0.0), after
    # loading them as -inf...
    Bug("load_where_zeroes_tail", find="x = tl.where(i_ok, x, 0.0)",
        replace="x = tl.where(i_ok & r_ok, x, 0.0)", check="forward.layouts",
        hint="were 0 instead of -inf when the statistics ran"),
    # ...its 08 ("missing max subtraction" before): path A's one block subtracts the max after
    # the LOG2E scaling, exp2(x * LOG2E - m) = exp(x) * 2^-m...
    Bug("along_max_after_log2e", find="numerator = tl.exp2((x - m[:, None]) * LOG2E)",
        replace="numerator = tl.exp2(x * LOG2E - m[:, None])", check="forward.extreme",
        hint="max subtracted after the LOG2E scaling"),
    # ...its 09 ("the normalizer is wrong" before): path B's shift clamped at 0 instead of the
    # -inf guard...
    Bug("across_shift_clamped_at_zero",
        find='        shift = tl.where(m_new == -float("inf"), 0.0, m_new)\n'
             "        s = s * tl.exp2((m - shift) * LOG2E) + tl.sum(tl.exp2((x - shift[None, :])",
        replace="        shift = tl.maximum(m_new, 0.0)\n"
                "        s = s * tl.exp2((m - shift) * LOG2E) + tl.sum(tl.exp2((x - shift[None, :])",
        check="forward.paths", hint="the shift clamped at 0"),
    # ...and its 10 (the same): path B's normalize subtracts ln(s) where log2(s) belongs.
    Bug("normalize_natural_log_s",
        find="y = tl.exp2((x - m[None, :]) * LOG2E - log2_s[None, :])",
        replace="y = tl.exp2((x - m[None, :]) * LOG2E - tl.log(s)[None, :])",
        check="forward.paths", hint="ln(s) subtracted for log2(s)"),
]
# The seventh audit's 07 and 09 seen by later checks: the zeroed tail on logits near -1e31
# (forward.extreme: the zeros win the max, named among the finite paddings) and on the sums
# (forward.rows_sum_to_one, which now asks the values checks' diagnoses); the clamped shift on
# logits near -200 (forward.extreme: every shift 0, the very output of a max started at 0).
BUGS += [
    seen_later(BUGS, "load_where_zeroes_tail", name="load_where_zeroes_tail_extreme",
               check="forward.extreme", hint="0, from a tl.where that zeroes them after the load"),
    seen_later(BUGS, "load_where_zeroes_tail", name="load_where_zeroes_tail_rows_sum",
               check="forward.rows_sum_to_one", hint="tail not masked"),
    seen_later(BUGS, "across_shift_clamped_at_zero", name="across_shift_clamped_at_zero_extreme",
               check="forward.extreme", hint="or, the same output here, the shift clamped at 0"),
]

BUGS += [
    # The ninth learner audit. Path A's one block takes the max of the whole tile, tl.max(x)
    # with no axis, subtracted as a scalar: rows far below another of the program's rows
    # underflow (the hint was "missing max subtraction" on huge logits).
    Bug("along_max_over_whole_tile",
        find="m = tl.max(x, axis=1)  # (BLOCK_I,)\n"
             "        numerator = tl.exp2((x - m[:, None]) * LOG2E)",
        replace="m = tl.max(x)  # (BLOCK_I,)\n        numerator = tl.exp2((x - m) * LOG2E)",
        check="forward.extreme", hint="row max shared by the whole tile"),
    # Path B's normalize without - log2_s: the numerators exp(x - m) stored undivided (the
    # hint was "the normalizer is wrong", and "statistics in fp16" on a float32 near tie).
    Bug("normalize_without_log2s",
        find="y = tl.exp2((x - m[None, :]) * LOG2E - log2_s[None, :])",
        replace="y = tl.exp2((x - m[None, :]) * LOG2E)", check="forward.paths",
        hint="the numerators stored undivided"),
]
BUGS.append(seen_later(BUGS, "normalize_without_log2s", name="normalize_without_log2s_extreme",
                       check="forward.extreme"))
