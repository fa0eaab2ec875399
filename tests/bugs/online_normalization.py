"""Planted bugs for the online normalization workshop: each is a classic mistake in the
mergeable state, written as a text substitution on references/online_normalization.py."""

from tests.bugs import Bug

BUGS = [
    # The formula alone on two empty states: 0 * exp(-inf - (-inf)) = 0 * exp(nan) = NaN.
    Bug("merge_no_identity_handling",
        find="    if a.m == -math.inf:\n        return b\n    if b.m == -math.inf:\n        return a\n",
        replace="", check="identity.laws", hint="no identity handling"),
    # The streaming-loop habit "rescale the running sum, add the new one" applied to a chunk.
    Bug("merge_rescales_one_side",
        find="s = a.s * math.exp(a.m - m) + b.s * math.exp(b.m - m)",
        replace="s = a.s * math.exp(a.m - m) + b.s",
        check="merge.partitions", hint="only one side rescaled"),
    # Keeps the first chunk's maximum: s is scaled by exp(b.m - a.m) instead (and overflows).
    Bug("merge_first_chunk_max", find="m = max(a.m, b.m)", replace="m = a.m",
        check="merge.partitions", hint="first chunk's max"),
    # Algebraically equal, numerically not: exp(x) overflows past 709 (inf * 0 = NaN).
    Bug("from_values_no_max_shift", find="s = float(np.sum(np.exp(x - m)))",
        replace="s = float(np.sum(np.exp(x))) * math.exp(-m)",
        check="log_sum_exp.high_precision", hint="missing max shift"),
    # Algebraically equal rearrangement that treats a and b differently: the bits depend on the
    # order of the arguments (and exp(b.m - a.m) can overflow).
    Bug("merge_not_symmetric",
        find="s = a.s * math.exp(a.m - m) + b.s * math.exp(b.m - m)",
        replace="s = (a.s + b.s * math.exp(b.m - a.m)) * math.exp(a.m - m)",
        check="merge.commutative", hint="merge not symmetric"),
    # A convenience import that drags torch (and its CUDA runtime) into a NumPy-only module.
    Bug("imports_torch", find="import numpy as np\n",
        replace="import numpy as np\nimport torch  # noqa: F401\n",
        check="imports.numpy_only", hint="numpy only"),
    # softmax of a chunk divided by the chunk's own sum: right for a whole row, wrong for a
    # chunk normalised with the merged state (split softmax's normalize stage).
    Bug("softmax_chunk_own_sum",
        find="        return np.exp(x - state.m) / state.s\n",
        replace="        e = np.exp(x - state.m)\n        return e / np.sum(e)\n",
        check="softmax.high_precision", hint="not the chunk's own"),
    # softmax shifted by the chunk's own maximum instead of the merged state's m.
    Bug("softmax_chunk_own_max",
        find="        return np.exp(x - state.m) / state.s\n",
        replace="        return np.exp(x - np.max(x)) / state.s\n",
        check="softmax.high_precision", hint="not the chunk's own"),
    # The consistency test made one-directional: State(-inf, 1.0) (mass without a maximum)
    # is accepted.
    Bug("state_accepts_neg_inf_max_with_mass",
        find="        if (m == -math.inf) != (s == 0.0):\n",
        replace="        if m != -math.inf and s == 0.0:\n",
        check="bad_calls", hint="m = -inf with s > 0"),
    # The validity test forgets +inf: State(0.0, inf) is accepted.
    Bug("state_accepts_infinite_s",
        find="        if math.isnan(s) or math.isinf(s) or s < 0.0:\n",
        replace="        if math.isnan(s) or s < 0.0:\n",
        check="bad_calls", hint="s = +inf"),
    # A bool array (a mask passed by mistake) converted to 0.0 / 1.0 logits.
    Bug("from_values_accepts_bool",
        find='    if array.dtype.kind not in "fiu":',
        replace='    if array.dtype.kind not in "fiub":',
        check="bad_calls", hint="accepts a bool array"),
    # A "negligible" shortcut: a side whose maximum lies more than 36.75 below the other is
    # dropped, but it can hold enough values to matter (131072 values at -37 next to one at 0
    # add 1.1e-11 to s, a thousand times the rounding budget).
    Bug("merge_skips_far_side",
        find="    m = max(a.m, b.m)\n",
        replace=("    if b.m < a.m - 36.75:\n        return a\n    if a.m < b.m - 36.75:\n"
                 "        return b\n    m = max(a.m, b.m)\n"),
        check="merge.far_apart", hint="far-below side dropped"),
    # A bool is an int to isinstance: State(True, 1.0) becomes State(1.0, 1.0) unnoticed.
    Bug("state_accepts_bool",
        find="    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):\n",
        replace="    if not isinstance(value, numbers.Real):\n",
        check="bad_calls", hint="State accepts a bool"),
    # The "x above m" test skipped for the empty state: softmax([5.0], identity()) returns
    # zeros for a value the state never saw.
    Bug("softmax_empty_state_no_above_check",
        find="    if x.size and np.max(x) > state.m:\n",
        replace="    if x.size and state.s != 0.0 and np.max(x) > state.m:\n",
        check="bad_calls", hint="softmax accepts a finite x with the empty state"),
    # Only float dtypes accepted: a row of ints (or uint8 pixels) is refused instead of
    # converted to float64.
    Bug("from_values_refuses_ints",
        find='    if array.dtype.kind not in "fiu":',
        replace='    if array.dtype.kind not in "f":',
        check="from_values.dtypes", hint="from_values refuses int/float32 rows"),
    # The exponentials summed in float32: the shift is right, but s keeps only ~7 digits.
    Bug("from_values_float32_sum",
        find="        s = float(np.sum(np.exp(x - m)))\n",
        replace=("        s = float(np.sum(np.exp((x - m).astype(np.float32)), "
                 "dtype=np.float32))\n"),
        check="merge.partitions", hint="s lost precision"),
    # log(s * exp(m)) instead of m + log(s), guarded against overflow only: exp(m) underflows
    # to 0 for a row near -1000 and log(0) raises.
    Bug("log_sum_exp_unshifted_form",
        find="    return state.m + math.log(state.s)\n",
        replace=("    return math.log(state.s * math.exp(state.m)) if state.m < 700 else "
                 "state.m + math.log(state.s)\n"),
        check="log_sum_exp.high_precision", hint="log_sum_exp not in the shifted form"),
    # The validity test forgets NaN for s (NaN < 0.0 is False): State(0.0, nan) is accepted.
    Bug("state_accepts_nan_s",
        find="        if math.isnan(s) or math.isinf(s) or s < 0.0:\n",
        replace="        if math.isinf(s) or s < 0.0:\n",
        check="bad_calls", hint="State accepts s = NaN"),
    # The empty state's log-sum-exp made NaN instead of -inf (log of an empty sum).
    Bug("log_sum_exp_empty_nan",
        find="    if state.s == 0.0:\n        return -math.inf\n    return state.m",
        replace="    if state.s == 0.0:\n        return math.nan\n    return state.m",
        check="log_sum_exp.high_precision", hint="not NaN: handle s == 0"),
    # The rank test written as ndim > 1: a 0-D scalar is taken for a row.
    Bug("as_row_accepts_0d",
        find="    if array.ndim != 1:\n", replace="    if array.ndim > 1:\n",
        check="bad_calls", hint="from_values accepts a 0-D scalar"),
    # merge returns the bare pair (m, s): the next merge (and log_sum_exp, softmax) refuses it,
    # far from the line that made it; the checks test the returned type and say so.
    Bug("merge_returns_tuple",
        find=("    s = a.s * math.exp(a.m - m) + b.s * math.exp(b.m - m)\n    # END EXERCISE\n"
              "    return State(m, s)\n"),
        replace=("    s = a.s * math.exp(a.m - m) + b.s * math.exp(b.m - m)\n    # END EXERCISE\n"
                 "    return m, s\n"),
        check="merge.commutative", hint="not a State"),
    # from_values without the all -inf branch: m = -inf, and x - m = -inf - (-inf) is NaN,
    # which strict mode raises as a FloatingPointError before any NaN test sees it.
    Bug("from_values_no_all_neg_inf_branch",
        find="    if m == -math.inf:\n        return identity()\n", replace="",
        check="identity.laws", hint="has no mass: return identity()"),
    # The same mistake seen by the first check that needs from_values alone (a learner who has
    # not written merge yet gets TODO from identity.laws).
    Bug("from_values_no_all_neg_inf_branch_dtypes",
        find="    if m == -math.inf:\n        return identity()\n", replace="",
        check="from_values.dtypes", hint="has no mass: return identity()"),
    # log_sum_exp without the s == 0 branch: math.log(0.0) raises ValueError (math domain error).
    Bug("log_sum_exp_no_empty_branch",
        find="    if state.s == 0.0:\n        return -math.inf\n", replace="",
        check="log_sum_exp.high_precision", hint="not NaN: handle s == 0"),
    # softmax without the zeros branch: exp(-inf - (-inf)) / 0 raises in strict mode.
    Bug("softmax_no_empty_branch",
        find="    if state.s == 0.0:\n        return np.zeros_like(x)\n", replace="",
        check="softmax.high_precision", hint="gives zeros, not exp(-inf - (-inf)) / 0"),
    # softmax's result cast to float32: right to 7 digits, but not the float64 the API promises.
    Bug("softmax_float32_out",
        find="        return np.exp(x - state.m) / state.s\n",
        replace="        return (np.exp(x - state.m) / state.s).astype(np.float32)\n",
        check="softmax.high_precision", hint="softmax returns float64"),
]

BUGS += [
    # Found by the twenty-ninth session's learner audit (both got another mistake's hint):
    # the largest term for the sum, and min for the merged maximum.
    Bug("sum_as_max", find="s = float(np.sum(np.exp(x - m)))",
        replace="s = float(np.max(np.exp(x - m)))", check="merge.partitions",
        hint="s is the largest term, not the sum"),
    Bug("merged_max_is_min", find="m = max(a.m, b.m)", replace="m = min(a.m, b.m)",
        check="merge.partitions", hint="min taken for the merged max"),
]

BUGS += [
    # Found by the third-round learner audit (each got another mistake's hint, or a generic one):
    # the exponent written exp(m - x), so a value 1 below the maximum adds e instead of 1/e...
    Bug("from_values_exp_sign_flipped", find="s = float(np.sum(np.exp(x - m)))",
        replace="s = float(np.sum(np.exp(m - x)))", check="identity.laws",
        hint="exponent sign flipped"),
    # ...the same flip in merge's factors (exp(m - own m) >= 1, overflowing for far sides)...
    Bug("merge_rescale_sign_flipped",
        find="s = a.s * math.exp(a.m - m) + b.s * math.exp(b.m - m)",
        replace="s = a.s * math.exp(m - a.m) + b.s * math.exp(m - b.m)",
        check="merge.commutative", hint="rescale exponent flipped"),
    # ...no factor on either side: sums against different maxima added as they are...
    Bug("merge_no_rescale", find="s = a.s * math.exp(a.m - m) + b.s * math.exp(b.m - m)",
        replace="s = a.s + b.s", check="merge.far_apart", hint="neither side rescaled"),
    # ...log_sum_exp in base 2...
    Bug("log_sum_exp_log2", find="    return state.m + math.log(state.s)\n",
        replace="    return state.m + math.log2(state.s)\n",
        check="log_sum_exp.high_precision", hint="wrong log base"),
    # ...and the empty state's softmax spread uniformly instead of zeros.
    Bug("softmax_empty_uniform", find="        return np.zeros_like(x)\n",
        replace="        return np.full_like(x, 1.0 / max(x.size, 1))\n",
        check="softmax.high_precision", hint="the empty state's softmax is zeros, not uniform"),
]

BUGS += [
    # Found by the fourth-round learner audit (each got no hint, another mistake's or a generic
    # one): the maximum seeded with 0 in merge (an all-negative pair merges to m = 0.0)...
    Bug("merge_max_seeded_zero", find="m = max(a.m, b.m)", replace="m = max(0.0, a.m, b.m)",
        check="merge.commutative", hint="max seeded with 0: merge("),
    # ...and in from_values (m is never -inf, so the all -inf branch is there but never taken)...
    Bug("from_values_max_seeded_zero", find="m = float(np.max(x))",
        replace="m = max(0.0, float(np.max(x)))", check="identity.laws",
        hint="max seeded with 0: from_values("),
    # ...merge adding the factors without the sums they rescale...
    Bug("merge_factors_without_sums",
        find="s = a.s * math.exp(a.m - m) + b.s * math.exp(b.m - m)",
        replace="s = math.exp(a.m - m) + math.exp(b.m - m)",
        check="merge.far_apart", hint="a.s and b.s left out"),
    # ...softmax unshifted, exp(x) / (s * exp(m)): inf / inf near 1000, 0 / 0 near -1000...
    Bug("softmax_unshifted",
        find="        return np.exp(x - state.m) / state.s\n",
        replace="        return np.exp(x) / (state.s * np.exp(state.m))\n",
        check="softmax.high_precision", hint="softmax without the max shift"),
    # ...softmax dividing inside the exp...
    Bug("softmax_divide_inside_exp",
        find="        return np.exp(x - state.m) / state.s\n",
        replace="        return np.exp((x - state.m) / state.s)\n",
        check="softmax.high_precision", hint="divided inside the exp"),
    # ...log1p(s) taken for log(s) (off by exactly ln 2 for a single value)...
    Bug("log_sum_exp_log1p", find="    return state.m + math.log(state.s)\n",
        replace="    return state.m + math.log1p(state.s)\n",
        check="log_sum_exp.high_precision", hint="log1p(s) is log(1 + s)"),
    # ...and b's sum rescaled with a's factor (a copy-paste of the first term).
    Bug("merge_b_factor_uses_a",
        find="s = a.s * math.exp(a.m - m) + b.s * math.exp(b.m - m)",
        replace="s = a.s * math.exp(a.m - m) + b.s * math.exp(a.m - m)",
        check="merge.commutative", hint="both sums rescaled with the same side's factor"),
]

BUGS += [
    # Found by the fifth learner audit (misleading: merge.far_apart said "far-below side
    # dropped", though nothing was dropped): the factors rescaled in base 2.
    Bug("merge_rescale_base_2",
        find="s = a.s * math.exp(a.m - m) + b.s * math.exp(b.m - m)",
        replace="s = a.s * 2.0 ** (a.m - m) + b.s * 2.0 ** (b.m - m)",
        check="merge.far_apart", hint="rescale factors in the wrong base"),
]

BUGS += [
    # Found by the sixth learner audit (its 21-23, 25, 26, 31; each got another mistake's hint or
    # a generic one): the maximum of the magnitudes for m...
    Bug("from_values_max_abs", find="m = float(np.max(x))", replace="m = float(np.max(np.abs(x)))",
        check="identity.laws", hint="m is max(|x|), not max(x)"),
    # ...merge's factors without the merged max (exp(a.m), which overflows past 709)...
    Bug("merge_factors_unshifted",
        find="s = a.s * math.exp(a.m - m) + b.s * math.exp(b.m - m)",
        replace="s = a.s * math.exp(a.m) + b.s * math.exp(b.m)",
        check="merge.commutative", hint="rescale factors without the merged max"),
    # ...log_sum_exp subtracting log(s)...
    Bug("log_sum_exp_sign_flipped", find="    return state.m + math.log(state.s)\n",
        replace="    return state.m - math.log(state.s)\n",
        check="log_sum_exp.high_precision", hint="sign of log(s) flipped"),
    # ...a "safe" epsilon in softmax's denominator (s >= 1 always: it only biases)...
    Bug("softmax_denominator_epsilon",
        find="        return np.exp(x - state.m) / state.s\n",
        replace="        return np.exp(x - state.m) / (state.s + 1e-12)\n",
        check="softmax.high_precision", hint="an epsilon in the denominator"),
    # ...the mean of the terms for s (below 1: State refuses it on any row without ties)...
    Bug("from_values_mean_for_sum", find="s = float(np.sum(np.exp(x - m)))",
        replace="s = float(np.mean(np.exp(x - m)))", check="identity.laws",
        hint="s is the mean, not the sum"),
    # ...and any -inf entry taken for an empty row (only an all -inf row has no mass).
    Bug("from_values_any_neg_inf_is_empty",
        find="    if m == -math.inf:\n        return identity()\n",
        replace="    if np.isinf(x).any():\n        return identity()\n",
        check="merge.partitions", hint="a row with some -inf entries is not empty"),
]

BUGS += [
    # The fifth learner audit's 20, named by the seventh (the hint only restated the formula):
    # softmax as exp(x - log_sum_exp(state)), where m + log(s) rounds at m's scale.
    Bug("softmax_via_log_sum_exp",
        find="        return np.exp(x - state.m) / state.s\n",
        replace="        return np.exp(x - log_sum_exp(state))\n",
        check="softmax.high_precision", hint="softmax as exp(x - log_sum_exp(state))"),
    # The seventh learner audit's 18 ("missing max shift" before): s summed over the values
    # below the maximum only, leaving out its own exp(0) = 1 (and every tie)...
    Bug("from_values_sum_without_max_term", find="s = float(np.sum(np.exp(x - m)))",
        replace="s = float(np.sum(np.exp(x[x < m] - m)))", check="identity.laws",
        hint="s leaves out the maximum's own term"),
    # ...its 19 ("merge not symmetric" before): merge multiplies the rescaled sums...
    Bug("merge_sums_multiplied",
        find="s = a.s * math.exp(a.m - m) + b.s * math.exp(b.m - m)",
        replace="s = a.s * math.exp(a.m - m) * b.s * math.exp(b.m - m)",
        check="merge.commutative", hint="sums multiplied, not added"),
    # ...its 21 (the formula restated): log_sum_exp as np.logaddexp(m, log(s)) = log(e^m + s)...
    Bug("log_sum_exp_logaddexp", find="    return state.m + math.log(state.s)\n",
        replace="    return float(np.logaddexp(state.m, math.log(state.s)))\n",
        check="log_sum_exp.high_precision", hint="log_sum_exp adds exp(m) and s"),
    # ...and its 22 (the formula restated): softmax's exponent written exp(m - x).
    Bug("softmax_exp_sign_flipped",
        find="        return np.exp(x - state.m) / state.s\n",
        replace="        return np.exp(state.m - x) / state.s\n",
        check="softmax.high_precision", hint="softmax's exponent sign flipped"),
]

BUGS += [
    # Found by the eighth learner audit (each got another mistake's hint, a generic one or
    # none): the identity branches returning the empty side (merge.partitions and later said
    # "m must be the maximum of all values")...
    Bug("merge_empty_side_returned",
        find="    if a.m == -math.inf:\n        return b\n    if b.m == -math.inf:\n        return a\n",
        replace="    if a.m == -math.inf:\n        return a\n    if b.m == -math.inf:\n        return b\n",
        check="identity.laws", hint="the empty side returned"),
    # ...the merged maximum taken over the sums (merge.commutative failed with no hint)...
    Bug("merge_max_of_sums", find="m = max(a.m, b.m)", replace="m = max(a.s, b.s)",
        check="merge.commutative", hint="merged max taken over the sums"),
    # ...from_values shifted by the minimum ("a row with some -inf entries is not empty")...
    Bug("from_values_min_for_max", find="m = float(np.max(x))", replace="m = float(np.min(x))",
        check="identity.laws", hint="m is the minimum, not the maximum"),
    # ...by the maximum's index ("max seeded with 0": np.argmax([-1.0] * 5) is 0)...
    Bug("from_values_argmax_for_max", find="m = float(np.max(x))",
        replace="m = float(np.argmax(x))", check="identity.laws",
        hint="m is the maximum's index, not its value"),
    # ...s as the exp of the summed gaps ("missing max shift")...
    Bug("from_values_exp_of_sum", find="s = float(np.sum(np.exp(x - m)))",
        replace="s = float(np.exp(np.sum(x - m)))", check="identity.laws",
        hint="exp of the sum, not the sum of the exps"),
    # ...log_sum_exp without m (the hint only restated the formula)...
    Bug("log_sum_exp_without_m", find="    return state.m + math.log(state.s)\n",
        replace="    return math.log(state.s)\n", check="log_sum_exp.high_precision",
        hint="m left out of log_sum_exp"),
    # ...and softmax multiplying by s, or leaving the numerator unshifted (the formula restated).
    Bug("softmax_times_s", find="        return np.exp(x - state.m) / state.s\n",
        replace="        return np.exp(x - state.m) * state.s\n", check="softmax.high_precision",
        hint="multiplied by s, not divided"),
    Bug("softmax_numerator_unshifted", find="        return np.exp(x - state.m) / state.s\n",
        replace="        return np.exp(x) / state.s\n", check="softmax.high_precision",
        hint="numerator not shifted by m"),
]
