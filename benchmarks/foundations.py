"""Benchmark variants of the foundations workshop: `row_softmax` against `torch.softmax`.

One program per contiguous row; the copy of the same bytes is the ceiling. No speed goal is set
for the recap (issue 2): the numbers are context for the later workshops.
"""

from __future__ import annotations

from benchmarks._common import ELEMENTS, Plot, impl_configs, row_softmax_problem, sweep_providers

WORKSHOP = "foundations"
GOALS: list = []
PLOTS = [Plot("bandwidth", "forward", x="width", panels=("dtype",),
              title="row_softmax: bandwidth against row width")]


def _shapes(scale: str):
    if scale == "dry":
        return [(8, 33, "float32"), (4, 64, "float16"), (3, 100, "bfloat16")]
    widths = (1024, 4096, 16384) if scale == "quick" else (256, 1024, 4096, 16384, 32768)
    dtypes = ("float16",) if scale == "quick" else ("float16", "float32")
    return [(ELEMENTS // w, w, d) for d in dtypes for w in widths]


def problems(impl, scale: str) -> list:
    return [row_softmax_problem(WORKSHOP, "forward", rows, width, dtype, "contiguous",
                                impl.row_softmax)
            for rows, width, dtype in _shapes(scale)]


def sweep_problems(impl, scale: str) -> list:
    """Each entry of the reference's CONFIGS (if it has one) on one representative shape."""
    configs = impl_configs(impl)
    if not configs:
        return []
    shapes = [(8, 33, "float32")] if scale == "dry" else [(ELEMENTS // 4096, 4096, "float16")]
    out = []
    for rows, width, dtype in shapes:
        problem = row_softmax_problem(WORKSHOP, "sweep", rows, width, dtype, "contiguous", None)
        problem.providers[:0] = sweep_providers(lambda t, **k: impl.row_softmax(t["x"], **k),
                                                configs)
        out.append(problem)
    return out
