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
]
