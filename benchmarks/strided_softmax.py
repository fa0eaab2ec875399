"""Benchmark variants of the strided softmax workshop (issue 3).

`softmax(x, dim=-1)` against `torch.softmax` and a copy of the same bytes, float16, bfloat16
and float32, widths 256 to 32768, heights filling the GPU (2^26 elements per tensor), for
contiguous rows and for a transposed view (each softmax row strided, the contiguous dimension
running across rows).
"""

from __future__ import annotations

from benchmarks._common import ELEMENTS, Goal, Plot, impl_configs, row_softmax_problem, sweep_providers

WORKSHOP = "strided_softmax"
DTYPES = ("float16", "bfloat16", "float32")
LAYOUTS = ("contiguous", "transposed")


def _mid(params):  # widths 2K-16K, contiguous rows
    return params["layout"] == "contiguous" and 2048 <= params["width"] <= 16384


GOALS = [
    Goal("contiguous rows, widths 2K-16K: >= 0.85 of the copy bandwidth", "of_ceiling", 0.85,
         _mid),
    Goal("contiguous rows: never slower than torch.softmax", "speedup", 1.0,
         lambda p: p["layout"] == "contiguous", against="torch.softmax"),
    Goal("transposed views: >= 0.6 of the copy bandwidth", "of_ceiling", 0.6,
         lambda p: p["layout"] == "transposed"),
]
PLOTS = [Plot("bandwidth", "forward", x="width", panels=("layout", "dtype"),
              title="strided softmax: bandwidth against row width")]


def _shapes(scale: str):
    if scale == "dry":
        return [(8, 33, "float32"), (5, 64, "float16"), (3, 100, "bfloat16")]
    if scale == "quick":
        return [(ELEMENTS // w, w, d) for d in ("float16", "float32") for w in (1024, 4096, 32768)]
    widths = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
    return [(ELEMENTS // w, w, d) for d in DTYPES for w in widths]


def _call(impl):
    return lambda x, **knobs: impl.softmax(x, dim=-1, **knobs)


def problems(impl, scale: str) -> list:
    return [row_softmax_problem(WORKSHOP, "forward", rows, width, dtype, layout, _call(impl))
            for layout in LAYOUTS for rows, width, dtype in _shapes(scale)]


def sweep_problems(impl, scale: str) -> list:
    """Every CONFIGS entry on a contiguous 4096 x 4096 float16 tensor and on transposed
    8192 x 8192, 2048 x 32768 (the longest reductions, where path B lost most), 32768 x 2048
    and 262144 x 256 (the shortest rows) ones: 2^26 elements each, 128 MiB, twice the L2."""
    configs = impl_configs(impl)
    if not configs:
        return []
    cases = [(8, 33, "float32", layout) for layout in LAYOUTS] if scale == "dry" else \
        [(4096, 4096, "float16", "contiguous")] + \
        [(rows, width, "float16", "transposed")
         for rows, width in ((8192, 8192), (2048, 32768), (32768, 2048), (262144, 256))]
    out = []
    for rows, width, dtype, layout in cases:
        problem = row_softmax_problem(WORKSHOP, "sweep", rows, width, dtype, layout, None)
        problem.providers[:0] = sweep_providers(
            lambda t, **k: impl.softmax(t["x"], dim=-1, **k), configs)
        out.append(problem)
    return out
