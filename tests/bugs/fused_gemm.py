"""Planted bugs for the fused GEMM workshop: one-line substitutions on references/fused_gemm.py,
each caught by the named check with a hint naming the mistake."""

from tests.bugs import Bug, seen_later

BUGS = [
    # The last K step reads past column K of A and row K of B.
    Bug("k_tail_not_masked", find="k_mask = offs_k < K - k0", replace="k_mask = offs_k < BLOCK_K",
        check="forward.k_tail", hint="K tail not masked"),
    # The accumulator is rounded to the output dtype before the bias is added.
    Bug("rounded_before_epilogue", find="    if HAS_BIAS:\n",
        replace="    acc = acc.to(OUT_DTYPE).to(tl.float32)\n    if HAS_BIAS:\n",
        check="contract.early_rounding", hint="rounding before the epilogue"),
    # The bias is added in float16/bfloat16 instead of float32.
    Bug("bias_in_operand_dtype", find="acc = acc + bias",
        replace="acc = (acc.to(OUT_DTYPE) + bias.to(OUT_DTYPE)).to(tl.float32)",
        check="contract.early_rounding", hint="bias added in the operand dtype"),
    # bias[m] added to row m instead of bias[n] to column n.
    Bug("bias_indexed_by_row",
        find="bias = tl.load(bias_ptr + offs_n[None, :], mask=offs_n[None, :] < N, other=0.0)",
        replace="bias = tl.load(bias_ptr + offs_m[:, None], mask=offs_m[:, None] < N, other=0.0)",
        check="forward.ragged", hint="bias indexed by row"),
    # Bands overlap by one tile row: some tiles computed twice, others never.
    Bug("group_off_by_one", find="first_pid_m = group_id * GROUP_M",
        replace="first_pid_m = group_id * (GROUP_M - 1)",
        check="knobs.group_m", hint="grouped index arithmetic"),
    # Stream-K: the last program to arrive at a shared tile drops the others' partial sums.
    Bug("stream_k_partials_dropped",
        find="total += tl.load(partials_ptr + q_slot * (BLOCK_M * BLOCK_N)",
        replace="total += 0.0 * tl.load(partials_ptr + q_slot * (BLOCK_M * BLOCK_N)",
        check="persistent.stream_k", hint="hand-off of the shared last-wave tiles"),
    # Stream-K: the arrivals are miscounted, so nobody finishes a shared tile.
    Bug("stream_k_nobody_finishes", find="if tl.atomic_add(counter, 1) == last - first:",
        replace="if tl.atomic_add(counter, 1) == last - first + 1:",
        check="persistent.stream_k", hint="hand-off of the shared last-wave tiles"),
    # max(acc, 0) taken before the bias is added.
    Bug("relu_before_bias", find="acc = acc + bias", replace="acc = tl.maximum(acc, 0.0) + bias",
        check="forward.ragged", hint="ReLU applied before the bias"),
    # The launcher hands a strided bias to kernels that read bias[n] at bias_ptr + n.
    Bug("bias_stride_ignored", find="        bias = bias.contiguous()\n", replace="        pass\n",
        check="forward.bias_layouts", hint="bias stride ignored"),
    # stage_unaligned=True ignored: the per-element pointer kernel runs on the unaligned
    # operands (right values, slow; and persistent=True is refused for want of TMA alignment).
    Bug("staging_skipped", find="    if stage_unaligned and K > 0 and M > 0 and N > 0:\n",
        replace="    if False:\n", check="staged.unaligned", hint="staging skipped"),
    # The output cached per (M, N, dtype, device) and handed out again: a second call of the
    # same shape overwrites the first call's result.
    Bug("output_cached",
        find="    c = torch.empty((M, N), device=a.device, dtype=a.dtype)\n",
        replace="    c = globals().setdefault(\"_C_CACHE\", {}).setdefault(\n"
                "        (M, N, a.dtype, a.device), torch.empty((M, N), device=a.device, "
                "dtype=a.dtype))\n",
        check="knobs.group_m", hint="no cached buffer"),
    # The epilogue flushes |acc| < 2^-14 (float16's smallest normal) to zero.
    Bug("small_results_flushed",
        find="    c = acc.to(OUT_DTYPE)  # (BLOCK_M, BLOCK_N)\n",
        replace="    acc = tl.where(tl.abs(acc) < 6.103515625e-05, 0.0, acc)\n"
                "    c = acc.to(OUT_DTYPE)  # (BLOCK_M, BLOCK_N)\n",
        check="forward.ragged", hint="small results flushed to zero"),
    # Stream-K: the first program sharing a tile computed one program too early when a tile
    # edge falls on a program boundary, so the tile's partials are never all added.
    Bug("stream_k_first_program_off_by_one",
        find="return (((k_step.to(tl.int64) + 1) * NUM_PROGRAMS - 1) // total_steps)"
             ".to(tl.int32)",
        replace="return ((k_step.to(tl.int64) * NUM_PROGRAMS) // total_steps).to(tl.int32)",
        check="persistent.stream_k", hint="hand-off of the shared last-wave tiles"),
    # The launcher forgets to check that the inner dimensions agree.
    Bug("no_k_check", find="    if a.shape[1] != b.shape[0]:\n",
        replace="    if False:\n", check="bad_calls", hint="refuse bad calls"),
    # relu defaults to False: gemm_bias_relu(a, b, bias) silently skips the ReLU.
    Bug("relu_default_false", find="                   relu: bool = True, block_m",
        replace="                   relu: bool = False, block_m",
        check="forward.ragged", hint="ReLU off by default"),
    # persistent=True accepts rows that are not 16-byte aligned (odd K): TMA cannot load them.
    Bug("tma_row_stride_unchecked",
        find="    if s1 == 1 and (s0 * item) % 16 == 0 and s0 >= t.shape[1]:\n",
        replace="    if s1 == 1 and s0 >= t.shape[1]:\n",
        check="bad_calls", hint="refuse bad calls"),
    # persistent=True accepts a broadcast operand (row stride 0), which TMA cannot describe.
    Bug("tma_broadcast_accepted",
        find="    if s1 == 1 and (s0 * item) % 16 == 0 and s0 >= t.shape[1]:\n",
        replace="    if s1 == 1 and (s0 * item) % 16 == 0:\n",
        check="bad_calls", hint="refuse bad calls"),
    # No early return for M = 0 or N = 0: persistent=True then sizes a grid of 0 programs.
    Bug("empty_mn_not_returned", find="    if M == 0 or N == 0:\n        return c\n",
        replace="", check="forward.empty", hint="empty output"),
    # block_k = 8 accepted: below the 16 that tl.dot needs.
    Bug("block_k_min_8",
        find="    ranges = dict(block_m=(16, 256), block_n=(16, 256), block_k=(16, 256))",
        replace="    ranges = dict(block_m=(16, 256), block_n=(16, 256), block_k=(8, 256))",
        check="bad_calls", hint="refuse bad calls"),
    # Stream-K: the fix-up adds every band of a shared tile into rows 0..FIXUP_ROWS-1, so the
    # tile's lower rows are never written.
    Bug("stream_k_fixup_band_offset_dropped", find="        rows = r0 + tl.arange(0, FIXUP_ROWS)\n",
        replace="        rows = tl.arange(0, FIXUP_ROWS)\n",
        check="persistent.stream_k", hint="hand-off of the shared last-wave tiles"),
    # group_m never reaches the kernel: default_config's GROUP_M runs (same values, no effect).
    Bug("group_m_ignored",
        find="    given = dict(block_m=block_m, block_n=block_n, block_k=block_k, "
             "group_m=group_m,\n",
        replace="    given = dict(block_m=block_m, block_n=block_n, block_k=block_k,\n",
        check="knobs.group_m", hint="knob ignored"),
    # block_k never reaches the kernel: default_config's BLOCK_K runs.
    Bug("block_k_ignored",
        find="    given = dict(block_m=block_m, block_n=block_n, block_k=block_k, "
             "group_m=group_m,\n",
        replace="    given = dict(block_m=block_m, block_n=block_n, group_m=group_m,\n",
        check="knobs.blocks", hint="knob ignored"),
    # stream_k=True never shares: the test compares tiles, not K-steps, with the programs.
    Bug("stream_k_never",
        find="    if not leftover or stream_k is False or leftover * k_steps < programs:\n",
        replace="    if not leftover or stream_k is False or leftover < programs:\n",
        check="persistent.stream_k", hint="knob ignored"),
    # tma_store=True accepted but the kernel always stores through pointers.
    Bug("tma_store_ignored",
        find='B_MAJOR_K=layouts[1] == "col", TMA_STORE=tma_store,',
        replace='B_MAJOR_K=layouts[1] == "col", TMA_STORE=False,',
        check="persistent.tma", hint="knob ignored"),
    # The staged copy of A leaves its padding columns uninitialized (torch.empty garbage).
    Bug("staged_a_padding_not_zeroed", find="    a_pad[:, K:] = 0\n", replace="",
        check="staged.unaligned", hint="padding of the staged copies not zeroed"),
    # The last band of the grouped order is taken as GROUP_M rows tall even when fewer remain.
    Bug("group_size_not_clamped",
        find="    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)",
        replace="    group_size_m = GROUP_M", check="knobs.group_m",
        hint="grouped index arithmetic"),
    # Each K step's product rounded to the output dtype before it is accumulated.
    Bug("dot_rounded_per_step",
        find="        acc = tl.dot(a, b, acc)  # float32 accumulation\n",
        replace="        acc += tl.dot(a, b).to(c_ptr.dtype.element_ty).to(tl.float32)\n",
        check="contract.early_rounding", hint="rounding before the epilogue"),
    # The accumulator overwritten at each K step: only the last K block's product remains. In
    # the pointer kernel, the one forward.ragged runs under the interpreter (and on a GPU for
    # its unaligned shapes).
    Bug("acc_not_carried",
        find="        acc = tl.dot(a, b, acc)  # float32 accumulation\n",
        replace="        acc = tl.dot(a, b)  # float32 accumulation\n",
        check="forward.ragged", hint="accumulator not carried across K steps"),
    # The pointer kernel launched with A's strides taken as those of a contiguous A (K, 1).
    Bug("a_strides_ignored",
        find="a, b, bias, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),",
        replace="a, b, bias, c, M, N, K, K, 1, b.stride(0), b.stride(1),",
        check="forward.layouts", hint="stride ignored: the output matches a read as if"),
    # K = 0 treated like an empty output: the launcher returns the new (uninitialized) C.
    Bug("zero_k_not_computed", find="    if M == 0 or N == 0:\n        return c\n",
        replace="    if M == 0 or N == 0 or K == 0:\n        return c\n",
        check="forward.zero_k", hint="zero K"),
    # Rows past M not wrapped: the last tile row loads A past its end.
    Bug("a_rows_no_wrap", find="    a_rows = (offs_m % M).to(tl.int64)",
        replace="    a_rows = offs_m.to(tl.int64)", check="forward.ragged",
        hint="tail not masked", interpreter_only=True),  # rows past M are never stored
    # The bias loaded without the column mask: the last tile column reads past bias[N - 1].
    Bug("bias_unmasked",
        find="bias = tl.load(bias_ptr + offs_n[None, :], mask=offs_n[None, :] < N, other=0.0)",
        replace="bias = tl.load(bias_ptr + offs_n[None, :])", check="forward.ragged",
        hint="tail not masked", interpreter_only=True),  # columns past N are never stored
]

BUGS += [
    # Found by the twenty-ninth session's learner audit: the ReLU applied whatever relu says
    # (its hint was "small results flushed to zero").
    Bug("relu_always_applied", find="    if APPLY_RELU:\n        acc = tl.maximum(acc, 0.0)\n",
        replace="    acc = tl.maximum(acc, 0.0)\n", check="forward.ragged",
        hint="ReLU applied though relu=False"),
    # Found by a learner audit: the band index of the grouped order divided by GROUP_M, not by
    # the GROUP_M * num_pid_n tiles of a band: some tiles computed twice, others never or
    # outside the tile grid (its hint was "tail not masked": the stray tiles' loads fault).
    Bug("group_id_by_group_m", find="group_id = tile_id // num_pid_in_group",
        replace="group_id = tile_id // GROUP_M", check="knobs.group_m",
        hint="band index taken as tile_id // GROUP_M"),
    # Found by a learner audit: the K tail's masked lanes loaded as 1: every output gains one
    # 1 * 1 product per padded k (it failed with no hint).
    Bug("k_tail_other_one",
        find="other=0.0)  # (BLOCK_M, BLOCK_K)\n"
             "        b = tl.load(b_ptrs, mask=k_mask[:, None], other=0.0)",
        replace="other=1.0)  # (BLOCK_M, BLOCK_K)\n"
                "        b = tl.load(b_ptrs, mask=k_mask[:, None], other=1.0)",
        check="forward.k_tail", hint="K tail loaded as 1 (other=1.0)"),
    # Found by a learner audit: the store cast hard-coded to float16, so bfloat16 outputs went
    # through float16 (inf past 65504; mostly within tolerance otherwise, and no hint).
    Bug("output_cast_float16", find="    c = acc.to(OUT_DTYPE)  # (BLOCK_M, BLOCK_N)\n",
        replace="    c = acc.to(tl.float16)  # (BLOCK_M, BLOCK_N)\n", check="forward.ragged",
        hint="output rounded through float16"),
]

BUGS += [
    # Found by a learner audit: the accumulator added twice per K step (tl.dot(a, b, acc) already
    # returns acc + a @ b), so each step doubles the running sum (it failed with no hint).
    Bug("acc_added_twice",
        find="        acc = tl.dot(a, b, acc)  # float32 accumulation\n",
        replace="        acc += tl.dot(a, b, acc)  # float32 accumulation\n",
        check="forward.ragged", hint="accumulator added twice"),
    # Found by a learner audit: the band's // and % swapped, so some tiles are computed twice
    # (or outside the tile grid) and others never (its hint was "output never written").
    Bug("tile_divmod_swapped",
        find="    pid_m = first_pid_m + local % group_size_m\n"
             "    pid_n = local // group_size_m\n",
        replace="    pid_m = first_pid_m + local // group_size_m\n"
                "    pid_n = local % group_size_m\n",
        check="forward.ragged", hint="reaches some tiles twice (or outside the tile grid) and "
                                     "others never"),
    # Found by a learner audit: pid_n divided by GROUP_M, not by the band's group_size_m (its
    # hint was "output never written").
    Bug("pid_n_by_group_m", find="    pid_n = local // group_size_m\n",
        replace="    pid_n = local // GROUP_M\n", check="forward.ragged",
        hint="reaches some tiles twice (or outside the tile grid) and others never"),
    # Found by a learner audit: the ReLU written as tl.minimum (it failed with no hint).
    Bug("relu_minimum", find="        acc = tl.maximum(acc, 0.0)\n",
        replace="        acc = tl.minimum(acc, 0.0)\n", check="forward.ragged",
        hint="ReLU written as a minimum"),
]

BUGS += [
    # Found by learner audit 4 (G1): the tutorial's step-index mask with an element offset k0,
    # so every K step after the first is masked off (it failed with no hint).
    Bug("k_mask_step_times_block", find="k_mask = offs_k < K - k0  #",
        replace="k_mask = offs_k < K - k0 * BLOCK_K  #", check="forward.ragged",
        hint="K mask with k0 * BLOCK_K"),
    # Found by learner audit 4 (G2): the pointer advance written inside the exercise as well as
    # after it, so each K step moves 2 * BLOCK_K (its hint was "tail not masked"). Named on
    # forward.k_tail, whose operands sit in wider parents (reads past K land in memory on a GPU
    # too); under the interpreter forward.ragged fails first, with the same hint.
    Bug("ptr_advance_twice",
        find="        acc = tl.dot(a, b, acc)  # float32 accumulation\n",
        replace="        acc = tl.dot(a, b, acc)  # float32 accumulation\n"
                "        a_ptrs += BLOCK_K * stride_ak\n        b_ptrs += BLOCK_K * stride_bk\n",
        check="forward.k_tail", hint="pointers advanced twice per K step"),
    Bug("b_ptr_advance_twice",
        find="        acc = tl.dot(a, b, acc)  # float32 accumulation\n",
        replace="        acc = tl.dot(a, b, acc)  # float32 accumulation\n"
                "        b_ptrs += BLOCK_K * stride_bk\n",
        check="forward.ragged", hint="pointers advanced twice per K step"),
    # Found by learner audit 4 (G4): the grouped order skipped, row-major whatever GROUP_M is
    # (right values: every other check passed).
    Bug("grouped_order_skipped",
        find="    pid_m = first_pid_m + local % group_size_m\n"
             "    pid_n = local // group_size_m\n",
        replace="    pid_m = tile_id // num_pid_n\n    pid_n = tile_id % num_pid_n\n",
        check="order.grouped", hint="grouped order skipped"),
    # Found by learner audit 4 (G7): B's K-tail mask dropped while A's stays: 0 * B's tail is 0
    # as long as that memory holds numbers (on a GPU it passed forward.k_tail). Under the
    # interpreter forward.ragged's bounds check fails first ("tail not masked").
    Bug("b_k_tail_unmasked", find="b = tl.load(b_ptrs, mask=k_mask[:, None], other=0.0)",
        replace="b = tl.load(b_ptrs)", check="forward.k_tail",
        hint="K tail masked on one operand only: B's load"),
    Bug("a_k_tail_unmasked", find="a = tl.load(a_ptrs, mask=k_mask[None, :], other=0.0)",
        replace="a = tl.load(a_ptrs)", check="forward.k_tail",
        hint="K tail masked on one operand only: A's load"),
    # Found by learner audit 4 (G5): the ReLU never applied. With K = 0 (acc = 0) relu(acc) +
    # bias is acc + bias, and forward.zero_k's hint was "ReLU applied before the bias".
    Bug("relu_never_applied", find="    if APPLY_RELU:\n        acc = tl.maximum(acc, 0.0)\n",
        replace="", check="forward.zero_k", hint="ReLU missing or misplaced"),
    # Found by learner audit 4 (G11): the last band's height taken from num_pid_n. order.grouped
    # sees it on every device (its grids end in a short band); staged.unaligned, whose hint was
    # "padding of the staged copies not zeroed", sees it only where the last band is short
    # (under the interpreter, not on the GPU's larger cases), and now says the same.
    Bug("group_size_from_num_pid_n",
        find="    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)",
        replace="    group_size_m = tl.minimum(num_pid_n - first_pid_m, GROUP_M)",
        check="order.grouped", hint="grouped index arithmetic"),
    # Found by learner audit (G2 #3): the bias loaded without `if HAS_BIAS:`; with bias=None the
    # launcher passes bias_ptr=None and every bias=None row raised AttributeError ('NoneType'
    # has no attribute 'type') under a generic hint.
    Bug("bias_load_unguarded",
        find="    if HAS_BIAS:\n        bias = tl.load(bias_ptr + offs_n[None, :], mask=offs_n[None, :] < N, "
             "other=0.0)  # (1, BLOCK_N)\n        acc = acc + bias\n",
        replace="    bias = tl.load(bias_ptr + offs_n[None, :], mask=offs_n[None, :] < N, "
                "other=0.0)  # (1, BLOCK_N)\n    acc = acc + bias\n",
        check="forward.ragged", hint="bias loaded without `if HAS_BIAS:`"),
]

BUGS += [
    # Found by the fifth learner audit: a band counted as GROUP_M * num_pid_m tiles (its hint
    # listed the grouped order's variables but not num_pid_in_group).
    Bug("band_of_num_pid_m", find="num_pid_in_group = GROUP_M * num_pid_n  # tiles in one band",
        replace="num_pid_in_group = GROUP_M * num_pid_m  # tiles in one band",
        check="knobs.group_m", hint="num_pid_in_group = GROUP_M * num_pid_m"),
    Bug("band_of_num_pid_m_order",
        find="num_pid_in_group = GROUP_M * num_pid_n  # tiles in one band",
        replace="num_pid_in_group = GROUP_M * num_pid_m  # tiles in one band",
        check="order.grouped", hint="num_pid_in_group = GROUP_M * num_pid_m"),
    # Found by the fifth learner audit: the store mask with M and N swapped (its hint was "K tail
    # not masked", though the message named the tl.store).
    Bug("store_mask_mn_swapped", find="c_mask = (rows < M) & (cols < N)",
        replace="c_mask = (rows < N) & (cols < M)", check="forward.ragged",
        hint="out-of-bounds store: the store mask lets rows >= M or cols >= N through"),
    # Found by the fifth learner audit: C's strides swapped in the store (its hint was the
    # generic "tail not masked (or a wrong offset or stride)").
    Bug("store_strides_swapped", find="tl.store(c_ptr + rows * stride_cm + cols * stride_cn, c",
        replace="tl.store(c_ptr + rows * stride_cn + cols * stride_cm, c", check="forward.ragged",
        hint="C written transposed"),
    # Found by the fifth learner audit: A's K mask broadcast along A's rows. It does not compile
    # where BLOCK_M != BLOCK_K (the hint spoke of reductions over the wrong axis) and gives wrong
    # values, with no hint, where BLOCK_M = BLOCK_K.
    Bug("a_k_mask_wrong_axis", find="a = tl.load(a_ptrs, mask=k_mask[None, :], other=0.0)",
        replace="a = tl.load(a_ptrs, mask=k_mask[:, None], other=0.0)", check="forward.ragged",
        hint="a mask broadcast along the wrong axis"),
    # The sixth learner audit's 01 (B): the band's first tile row taken as group_id (knobs.group_m
    # named the grouped order; knobs.blocks named num_pid_in_group, whose replay misses the same
    # tile on a 5 x 1 grid).
    Bug("band_start_unscaled", find="first_pid_m = group_id * GROUP_M",
        replace="first_pid_m = group_id", check="knobs.group_m",
        hint="first_pid_m = group_id * GROUP_M"),
    # Its 03: tl.dot's operands swapped (the hint was the interpreter's "the kernel failed").
    Bug("dot_operands_swapped", find="        acc = tl.dot(a, b, acc)  # float32 accumulation\n",
        replace="        acc = tl.dot(b, a, acc)  # float32 accumulation\n", check="forward.ragged",
        hint="tl.dot operands swapped"),
    # Its 04: only A upcast under DOT_IN_FP32 (the interpreter's bf16 branch, never on a GPU).
    Bug("dot_b_not_upcast",
        find="            a = a.to(tl.float32)\n            b = b.to(tl.float32)\n",
        replace="            a = a.to(tl.float32)\n", check="forward.ragged",
        hint="tl.dot's operands of different dtypes", interpreter_only=True),
    # Its 06: C's column offset multiplied by stride_cm (the hint was the generic "tail not
    # masked (or a wrong offset or stride)").
    Bug("store_cols_by_stride_cm",
        find="tl.store(c_ptr + rows * stride_cm + cols * stride_cn, c, mask=c_mask)",
        replace="tl.store(c_ptr + rows * stride_cm + cols * stride_cm, c, mask=c_mask)",
        check="forward.ragged", hint="C's column offset uses the wrong stride"),
    # Its 07: the store mask compares the columns with M (the hint was "output never written").
    Bug("store_mask_cols_by_m", find="    c_mask = (rows < M) & (cols < N)",
        replace="    c_mask = (rows < M) & (cols < M)", check="forward.ragged",
        hint="store mask compares columns with M"),
]
# The band mistake seen by knobs.blocks, whose num_pid_in_group replay missed the same tile on a
# 5 x 1 grid: the planted text is the bug's above, only the check differs.
BUGS.append(seen_later(BUGS, "band_start_unscaled", name="band_start_unscaled_blocks",
                       check="knobs.blocks"))
# The sixth audit's 03 where tl.dot(b, a) compiles: forward.layouts' 37 x 45 x 70 runs in 32 x 32
# x 32 tiles under the interpreter, and its output is B_tile @ A_tile summed over the K steps
# (the hint was none; _compare now replays it). The planted text is the bug's above.
# Interpreter only: on a GPU forward.layouts' default tiles are not square, so the call stops at
# the tl.dot and the compile probe names the mistake as it does for dot_operands_swapped (the
# first GPU zoo to run this bug got that hint).
BUGS.append(seen_later(BUGS, "dot_operands_swapped", name="dot_operands_swapped_square",
                       check="forward.layouts",
                       hint="the output matches tl.dot(b, a, acc) on square tiles",
                       interpreter_only=True))
# C's strides swapped, seen by persistent.stream_k: its hint there went with the shape (none at
# 40 x 40, "output never written" at 104 x 40, the store probe's at 40 x 104); the stream-K
# check now asks the store probe whenever the run without sharing is wrong too.
BUGS.append(seen_later(BUGS, "store_strides_swapped", name="store_strides_swapped_stream_k",
                       check="persistent.stream_k"))

BUGS += [
    # The seventh learner audit's 01: the band's height with tl.maximum (its hint named the
    # grouped order's variables, not the mistake).
    Bug("group_size_max",
        find="    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)",
        replace="    group_size_m = tl.maximum(num_pid_m - first_pid_m, GROUP_M)",
        check="forward.ragged", hint="group_size_m = tl.maximum"),
    # The seventh learner audit's 03: the store cast hard-coded to tl.bfloat16, so float16
    # outputs went through bfloat16 (it failed with no hint).
    Bug("output_cast_bfloat16", find="    c = acc.to(OUT_DTYPE)  # (BLOCK_M, BLOCK_N)\n",
        replace="    c = acc.to(tl.bfloat16)  # (BLOCK_M, BLOCK_N)\n", check="forward.ragged",
        hint="output rounded through bfloat16"),
    # The seventh learner audit's 04 and 05: the store mask off by one (<=), and no store mask
    # (the hint was the bounds check's generic "tail not masked (or a wrong offset or
    # stride)"). Named from the lanes the interpreter's bounds check counts in the faulting
    # store: on a GPU the tail guard counts none, so the GPU zoo leaves them out.
    Bug("store_mask_le", find="    c_mask = (rows < M) & (cols < N)  # (BLOCK_M, BLOCK_N)\n",
        replace="    c_mask = (rows <= M) & (cols <= N)  # (BLOCK_M, BLOCK_N)\n",
        check="forward.ragged", hint="store mask off by one (<=)", interpreter_only=True),
    Bug("store_unmasked",
        find="    tl.store(c_ptr + rows * stride_cm + cols * stride_cn, c, mask=c_mask)\n",
        replace="    tl.store(c_ptr + rows * stride_cm + cols * stride_cn, c)\n",
        check="forward.ragged", hint="store not masked", interpreter_only=True),
    # The seventh learner audit's 06: B's tile transposed in the product, as attention's Q K^T
    # (the hint was the interpreter's "the kernel failed", and none where BLOCK_K = BLOCK_N).
    Bug("dot_b_transposed", find="        acc = tl.dot(a, b, acc)  # float32 accumulation\n",
        replace="        acc = tl.dot(a, tl.trans(b), acc)  # float32 accumulation\n",
        check="forward.ragged", hint="B's tile transposed in tl.dot"),
    # The seventh learner audit's 07: the store's rows and columns broadcast along the wrong
    # axes: each square tile written transposed, no hint; other tiles do not compile, and the
    # hint spoke of reductions over the wrong axis.
    Bug("store_axes_swapped",
        find="    rows = offs_m.to(tl.int64)[:, None]  # (BLOCK_M, 1)\n"
             "    cols = offs_n.to(tl.int64)[None, :]  # (1, BLOCK_N)\n",
        replace="    rows = offs_m.to(tl.int64)[None, :]  # (BLOCK_M, 1)\n"
                "    cols = offs_n.to(tl.int64)[:, None]  # (1, BLOCK_N)\n",
        check="forward.ragged", hint="each tile stored transposed"),
    # The seventh learner audit's 08: the ReLU guarded by HAS_BIAS (its hints named the symptom
    # of each case, "ReLU missing" without a bias and "applied though relu=False" with one).
    Bug("relu_follows_has_bias", find="    if APPLY_RELU:\n        acc = tl.maximum(acc, 0.0)\n",
        replace="    if HAS_BIAS:\n        acc = tl.maximum(acc, 0.0)\n", check="forward.ragged",
        hint="ReLU follows HAS_BIAS"),
]
# The band's height mistake seen by order.grouped, which compares _tile_coords's order with the
# replay exactly.
BUGS.append(seen_later(BUGS, "group_size_max", name="group_size_max_order", check="order.grouped"))
# The tile stored transposed, seen by forward.zero_k: with K = 0 and C inside one tile (5 x 9)
# its output is bias[m] along each row m, exactly what the bias indexed by row gives, and the
# hint named that alone; it now names both as twins there (the transposed tiles alone at 33 x 70).
# On a GPU the 5 x 9 case runs in 64 x 128 tiles, where the transposed store does not compile,
# and the probe names the mistake alone: the hint held to is the part both devices give.
BUGS.append(seen_later(BUGS, "store_axes_swapped", name="store_axes_swapped_zero_k",
                       check="forward.zero_k", hint="each tile stored transposed"))

BUGS += [
    # The eighth learner audit: the K mask one short, offs_k < K - k0 - 1, so the last K
    # position is never added (no hint on the first FAIL; later ones named tl.dot's operands
    # swapped, the ReLU before the bias or the k0 * BLOCK_K mask).
    Bug("k_mask_one_short", find="k_mask = offs_k < K - k0  #",
        replace="k_mask = offs_k < K - k0 - 1  #", check="forward.ragged",
        hint="K mask one short"),
    # Its K mask one too long (<=) and without k0 (offs_k < K): both read past K in the last
    # step, and the K-tail probe names that on the first FAIL already.
    Bug("k_mask_le", find="k_mask = offs_k < K - k0  #", replace="k_mask = offs_k <= K - k0  #",
        check="forward.k_tail", hint="K tail not masked"),
    # Its pid_m without first_pid_m and pid_n from tile_id instead of local (the generic
    # grouped-order hints; knobs.blocks named num_pid_in_group = GROUP_M * num_pid_m).
    Bug("pid_m_without_first", find="    pid_m = first_pid_m + local % group_size_m\n",
        replace="    pid_m = local % group_size_m\n", check="knobs.group_m",
        hint="pid_m without first_pid_m"),
    Bug("pid_n_from_tile_id", find="    pid_n = local // group_size_m\n",
        replace="    pid_n = tile_id // group_size_m\n", check="knobs.group_m",
        hint="pid_n from tile_id, not local"),
    # Its store masks joined with | and on the rows only: named already, from the lanes the
    # interpreter's bounds check counts in the faulting store (none on a GPU).
    Bug("store_mask_or", find="    c_mask = (rows < M) & (cols < N)",
        replace="    c_mask = (rows < M) | (cols < N)", check="forward.ragged",
        hint="store mask joined with | instead of &", interpreter_only=True),
    Bug("store_mask_rows_only", find="    c_mask = (rows < M) & (cols < N)",
        replace="    c_mask = rows < M", check="forward.ragged",
        hint="store mask on the rows only", interpreter_only=True),
]
BUGS.append(seen_later(BUGS, "pid_m_without_first", name="pid_m_without_first_order",
                       check="order.grouped"))
BUGS.append(seen_later(BUGS, "pid_n_from_tile_id", name="pid_n_from_tile_id_blocks",
                       check="knobs.blocks"))
BUGS += [
    # The ninth learner audit (the eighth's leftover): in later cases the faulting tile kept
    # as many lanes under | (or the rows only) as under other masks, and the bounds check's
    # generic "tail not masked" stood; a probe with M = 1, N = 2 in one 16 x 16 tile, where
    # every mask tried keeps a different number of lanes, names them (interpreter only, as the
    # originals: a GPU's tail guard counts no lanes).
    seen_later(BUGS, "store_mask_or", name="store_mask_or_layouts", check="forward.layouts"),
    seen_later(BUGS, "store_mask_rows_only", name="store_mask_rows_only_early_rounding",
               check="contract.early_rounding"),
    # The same probe names the unmasked store where its first tiles could not tell it.
    seen_later(BUGS, "store_unmasked", name="store_unmasked_zero_k", check="forward.zero_k"),
]

BUGS += [
    # The tenth learner audit's 01: the bias rounded to the operand dtype and added to the
    # float32 accumulator (acc + bias.to(OUT_DTYPE)); it failed with no hint (the replay of the
    # bias added in the operand dtype rounds acc too).
    Bug("bias_rounded_to_operand_dtype", find="        acc = acc + bias\n",
        replace="        acc = acc + bias.to(OUT_DTYPE)\n", check="contract.early_rounding",
        hint="bias rounded to the operand dtype"),
    # Its 02: the ReLU taken inside the K loop too, after each step's product (no hint, or "ReLU
    # applied before the bias").
    Bug("relu_in_k_loop", find="        acc = tl.dot(a, b, acc)  # float32 accumulation\n",
        replace="        acc = tl.dot(a, b, acc)  # float32 accumulation\n"
                "        if APPLY_RELU:\n            acc = tl.maximum(acc, 0.0)\n",
        check="forward.ragged", hint="ReLU applied inside the K loop"),
    # Its 06: _tile_coords computing the band from tl.program_id(0), the tutorial's pid, instead
    # of its tile_id: right wherever one program owns one tile; it passed every check (the
    # persistent kernel, whose programs loop over tiles, runs one band under the interpreter).
    Bug("tile_coords_program_id", find="    group_id = tile_id // num_pid_in_group\n",
        replace="    group_id = tl.program_id(0) // num_pid_in_group\n", check="order.grouped",
        hint="_tile_coords reads the program id, not its tile_id argument"),
    # The same with every use of tile_id (pid = tl.program_id(0) as in the tutorial): the
    # persistent kernel's hint was "output never written".
    Bug("tile_coords_program_id_all", find="    group_id = tile_id // num_pid_in_group\n",
        replace="    tile_id = tl.program_id(0)\n    group_id = tile_id // num_pid_in_group\n",
        check="persistent.tma", hint="_tile_coords reads the program id, not its tile_id argument"),
    # Its 10 and 11: the last band's height without first_pid_m (its hint named first_pid_m =
    # group_id * GROUP_M, whose replay misses the same tiles).
    Bug("group_size_without_first",
        find="    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)",
        replace="    group_size_m = tl.minimum(num_pid_m, GROUP_M)", check="knobs.group_m",
        hint="the last band taken GROUP_M tile rows tall where fewer remain"),
    Bug("group_size_from_group_id",
        find="    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)",
        replace="    group_size_m = tl.minimum(num_pid_m - group_id, GROUP_M)", check="order.grouped",
        hint="the last band taken GROUP_M tile rows tall where fewer remain"),
    # Its 12: the DOT_IN_FP32 upcast left out (the interpreter's bfloat16 branch only).
    Bug("dot_not_upcast",
        find="        if DOT_IN_FP32:\n            a = a.to(tl.float32)\n            b = b.to(tl.float32)\n",
        replace="", check="forward.ragged", hint="bfloat16 multiplied as raw bits",
        interpreter_only=True),
]
# group_size_m = GROUP_M unclamped (planted above, named "grouped index arithmetic" alone): its
# hint was the band start's too; the order probe now names the last band.
BUGS.append(seen_later(BUGS, "group_size_not_clamped", name="group_size_not_clamped_named",
                       check="knobs.group_m",
                       hint="the last band taken GROUP_M tile rows tall where fewer remain"))
BUGS += [
    # The tenth learner audit's 16: the K mask bounded by N (offs_k < N - k0): where N < K the
    # positions N..K-1 are never added (no hint); where N > K the bounds check stops the read
    # past K ("tail not masked").
    Bug("k_mask_bounded_by_n", find="k_mask = offs_k < K - k0  #",
        replace="k_mask = offs_k < N - k0  #", check="forward.ragged", hint="K mask bounded by N"),
    # Its 14: the store mask on the columns only, named already from the lanes the interpreter's
    # bounds check counts (a GPU's tail guard counts none).
    Bug("store_mask_cols_only", find="    c_mask = (rows < M) & (cols < N)",
        replace="    c_mask = cols < N", check="forward.ragged",
        hint="store mask on the columns only", interpreter_only=True),
]

BUGS += [
    # The tenth learner audit: B's K mask broadcast along B's columns, the mirror of
    # a_k_mask_wrong_axis (named already: the call stops at the broadcast where BLOCK_K !=
    # BLOCK_N, and the square probe matches B's load masked by its columns).
    Bug("b_k_mask_wrong_axis", find="b = tl.load(b_ptrs, mask=k_mask[:, None], other=0.0)",
        replace="b = tl.load(b_ptrs, mask=k_mask[None, :], other=0.0)", check="forward.ragged",
        hint="a mask broadcast along the wrong axis"),
    # Its mirror of dot_b_not_upcast: only B upcast under DOT_IN_FP32 (named already).
    Bug("dot_a_not_upcast",
        find="            a = a.to(tl.float32)\n            b = b.to(tl.float32)\n",
        replace="            b = b.to(tl.float32)\n", check="forward.ragged",
        hint="tl.dot's operands of different dtypes", interpreter_only=True),
    # The tutorial's loads at a_ptrs + k0 * stride_ak on pointers the loop already advances: the
    # same reads as the advance written twice (its hint said "do not advance inside it too",
    # which this code does not do; the hint now names both).
    Bug("k0_added_to_advanced_ptrs",
        find="        a = tl.load(a_ptrs, mask=k_mask[None, :], other=0.0)  # (BLOCK_M, BLOCK_K)\n"
             "        b = tl.load(b_ptrs, mask=k_mask[:, None], other=0.0)",
        replace="        a = tl.load(a_ptrs + k0 * stride_ak, mask=k_mask[None, :], other=0.0)  "
                "# (BLOCK_M, BLOCK_K)\n"
                "        b = tl.load(b_ptrs + k0 * stride_bk, mask=k_mask[:, None], other=0.0)",
        check="forward.k_tail", hint="nor add k0 to them"),
    # The position inside the band taken as tile_id % GROUP_M (its hint named the band index
    # tile_id // GROUP_M, whose replay misses the same tiles on forward.zero_k's 2 x 3 grid).
    Bug("local_mod_group_m", find="    local = tile_id % num_pid_in_group",
        replace="    local = tile_id % GROUP_M", check="knobs.group_m",
        hint="local = tile_id % GROUP_M"),
    # pid_m and pid_n swapped in _tile_coords (the generic "whole output tiles never written").
    Bug("pid_mn_swapped",
        find="    pid_m = first_pid_m + local % group_size_m\n    pid_n = local // group_size_m\n",
        replace="    pid_n = first_pid_m + local % group_size_m\n    pid_m = local // group_size_m\n",
        check="forward.ragged", hint="pid_m and pid_n swapped"),
]
BUGS.append(seen_later(BUGS, "local_mod_group_m", name="local_mod_group_m_order",
                       check="order.grouped"))
BUGS.append(seen_later(BUGS, "pid_mn_swapped", name="pid_mn_swapped_order", check="order.grouped"))
BUGS += [
    # The tenth learner audit: the K mask taken as the tail's length, offs_k < K % BLOCK_K, in
    # every step (it failed with no hint).
    Bug("k_mask_mod", find="k_mask = offs_k < K - k0  #", replace="k_mask = offs_k < K % BLOCK_K  #",
        check="forward.ragged", hint="K mask with K % BLOCK_K"),
    # Its early return: `if not HAS_BIAS: return acc.to(OUT_DTYPE)` before the ReLU (its hint
    # said the ReLU follows HAS_BIAS, which would apply it with a bias and relu=False too).
    Bug("epilogue_return_without_bias", find="    if HAS_BIAS:\n        bias = tl.load(",
        replace="    if not HAS_BIAS:\n        return acc.to(OUT_DTYPE)\n"
                "    if HAS_BIAS:\n        bias = tl.load(",
        check="forward.ragged", hint="ReLU skipped without a bias"),
    # The band's height without its minimum with GROUP_M (the generic grouped-order hint;
    # knobs.blocks named num_pid_in_group = GROUP_M * num_pid_m).
    Bug("group_size_no_min",
        find="    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)",
        replace="    group_size_m = num_pid_m - first_pid_m", check="knobs.group_m",
        hint="group_size_m = num_pid_m - first_pid_m without the minimum"),
]
BUGS.append(seen_later(BUGS, "group_size_no_min", name="group_size_no_min_blocks",
                       check="knobs.blocks"))

BUGS += [
    # The fortieth session: at K = 1 the K mask one short drops the only position, and its
    # output (relu(bias), or zeros) was named "ReLU applied before the bias", "ReLU applied
    # though relu=False" or "tl.dot operands swapped" by chance; the K = 0 output's replay
    # names it now (the K = 1 cases of forward.ragged run on every seed).
    seen_later(BUGS, "k_mask_one_short", name="k_mask_one_short_k1", check="forward.ragged",
               hint="with K = 1, a K mask one short"),
]
