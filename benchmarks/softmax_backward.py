"""Benchmark variants of the softmax backward workshop (issue 4).

`softmax_backward(y, dy)` against `torch._softmax_backward_data` (what autograd runs) and a
copy, float16, bfloat16 and float32, widths 1K-32K, heights filling the GPU. Three tensors move
(y and dy read, dx written), so bytes = 3 * rows * width * itemsize.
"""

from __future__ import annotations

from benchmarks._common import (
    ELEMENTS,
    ITEMSIZE,
    Goal,
    Plot,
    copy_provider,
    impl_configs,
    randn,
    sweep_providers,
    tolerance,
)
from benchmarks.harness import BASELINE, OURS, Problem, Provider

WORKSHOP = "softmax_backward"
DTYPES = ("float16", "bfloat16", "float32")

GOALS = [
    Goal("widths 2K-16K: >= 0.85 of the copy bandwidth (3 tensors moved)", "of_ceiling", 0.85,
         lambda p: 2048 <= p["width"] <= 16384, experiment="backward"),
    Goal(">= 1.2x torch._softmax_backward_data (every width measured)", "speedup", 1.2,
         lambda p: True, against="torch._softmax_backward_data", experiment="backward"),
]
PLOTS = [Plot("bandwidth", "backward", x="width", panels=("dtype",),
              title="softmax backward: bandwidth against row width (3 tensors moved)")]


def backward_problem(rows: int, width: int, dtype: str, experiment: str = "backward",
                     providers: list | None = None, impl=None) -> Problem:
    itemsize = ITEMSIZE[dtype]

    def make_inputs(device, generator):
        import torch

        x = randn((rows, width), dtype, device, generator, scale=2.0)
        y = torch.softmax(x.float(), dim=-1).to(x.dtype)  # a real softmax output
        dy = randn((rows, width), dtype, device, generator)
        return {"y": y, "dy": dy, "buffer": y}

    def reference(t):
        y, dy = t["y"].double(), t["dy"].double()
        return y * (dy - (dy * y).sum(dim=-1, keepdim=True))

    def run_torch(t):
        import torch

        return torch._softmax_backward_data(t["dy"], t["y"], -1, t["y"].dtype)

    if providers is None:
        providers = [Provider("ours", OURS, lambda t: impl.softmax_backward(t["y"], t["dy"], -1))]
    providers = providers + [
        Provider("torch._softmax_backward_data", BASELINE, run_torch,
                 note="torch._softmax_backward_data(dy, y, dim=-1, input_dtype)"),
        copy_provider()]
    providers[-1].bytes_moved = 2 * rows * width * itemsize
    providers[-1].bytes_moved_formula = f"2 * rows * width * {itemsize} (a copy moves 2 tensors)"
    return Problem(
        workshop=WORKSHOP, experiment=experiment,
        params={"rows": rows, "width": width, "dtype": dtype, "layout": "contiguous"},
        make_inputs=make_inputs, reference=reference, tolerance=lambda t: _tolerance(t, dtype),
        metric="bandwidth", bytes=3 * rows * width * itemsize,
        bytes_formula=f"3 * rows * width * {itemsize} (read y and dy, write dx)",
        providers=providers, baseline="torch._softmax_backward_data")


def _tolerance(t: dict, dtype: str) -> tuple[float, float]:
    """The table's (rtol, atol), plus an absolute floor for near-cancellation.

    dx = y * (dy - <dy, y>) is rounded once at the store (the table's rtol). Where dy is close
    to <dy, y> the fp32 subtraction keeps only an absolute accuracy of a few eps32 * |dy|, so
    an element may be off by y * 32 * eps32 * max|dy| without any mistake in the kernel.
    """
    rtol, atol = tolerance(dtype)
    floor = 32 * 2.0**-23 * float(t["y"].abs().max()) * float(t["dy"].abs().max())
    return rtol, max(atol, floor)


def _shapes(scale: str):
    if scale == "dry":
        return [(8, 33, "float32"), (5, 64, "float16"), (3, 100, "bfloat16")]
    if scale == "quick":
        return [(ELEMENTS // w, w, d) for d in ("float16", "float32") for w in (1024, 4096, 16384)]
    widths = (1024, 2048, 4096, 8192, 16384, 32768)
    return [(ELEMENTS // w, w, d) for d in DTYPES for w in widths]


def problems(impl, scale: str) -> list:
    return [backward_problem(rows, width, dtype, impl=impl) for rows, width, dtype in _shapes(scale)]


def sweep_problems(impl, scale: str) -> list:
    """Every CONFIGS entry on float16 rows of 4096 and of 32768 (the looped path)."""
    configs = impl_configs(impl)
    if not configs:
        return []
    shapes = [(8, 33, "float32")] if scale == "dry" else [(ELEMENTS // 4096, 4096, "float16"),
                                                          (ELEMENTS // 32768, 32768, "float16")]
    call = lambda t, **k: impl.softmax_backward(t["y"], t["dy"], -1, **k)  # noqa: E731
    return [backward_problem(r, w, d, "sweep", sweep_providers(call, configs))
            for r, w, d in shapes]
