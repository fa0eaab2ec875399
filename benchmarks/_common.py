"""Pieces shared by the workshop benchmark modules: dtypes, tolerances, softmax problems, goals.

Everything that touches torch does so inside a function: importing a benchmark module costs
nothing and needs no GPU.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.harness import BASELINE, CEILING, OURS, Problem, Provider

ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4}
ELEMENTS = 1 << 26  # memory-bound rows: 2^26 elements (128 MiB fp16, 256 MiB fp32) fill the GPU


def torch_dtype(name: str):
    import torch

    return getattr(torch, name)


def tolerance(dtype: str) -> tuple[float, float]:
    """(rtol, atol) of the checks' table (checks/compare.py), keyed by the output dtype."""
    from checks.compare import TOLERANCES

    t = TOLERANCES[dtype]
    return t.rtol, t.atol


def randn(shape, dtype: str, device: str, generator, scale: float = 1.0):
    import torch

    x = torch.randn(tuple(shape), device=device, generator=generator, dtype=torch.float32)
    return (x * scale).to(torch_dtype(dtype))


def softmax64(x, dim: int = -1):
    """The float64 softmax of x, on x's device."""
    return x.double().softmax(dim=dim)


def copy_provider(buffer_name: str = "buffer") -> Provider:
    """A copy of the same bytes: the memory system's ceiling at this size (read + write)."""
    return Provider("copy", CEILING, lambda t: t[buffer_name].clone(),
                    note=f"{buffer_name}.clone(): one read and one write of the same bytes",
                    reference=lambda t: t[buffer_name].double(), tolerance=(0.0, 0.0))


def kwonly_defaults(fn: Callable) -> dict:
    """The keyword-only parameters of a launcher and their defaults: the knobs it offers."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}


def config_kwargs(config) -> dict:
    """A CONFIGS entry as launcher keyword arguments (a dict, or an object with .kwargs)."""
    if isinstance(config, dict):
        return dict(config)
    kwargs = dict(getattr(config, "kwargs", {}) or {})
    for extra in ("num_warps", "num_stages"):
        if getattr(config, extra, None) is not None:
            kwargs.setdefault(extra, getattr(config, extra))
    if not kwargs:
        raise TypeError(f"cannot read launcher knobs from CONFIGS entry {config!r}")
    return kwargs


def impl_configs(impl, name: str = "CONFIGS") -> list[dict]:
    """The module's candidate configurations as keyword dicts, without None values (None means
    "the launcher's default"), duplicates and the all-default entry removed (may be empty)."""
    out: list[dict] = []
    for config in getattr(impl, name, None) or []:
        knobs = {k: v for k, v in config_kwargs(config).items() if v is not None}
        if knobs and knobs not in out:
            out.append(knobs)
    return out


def row_softmax_problem(workshop: str, experiment: str, rows: int, width: int, dtype: str,
                        layout: str, ours: Callable | None, ours_knobs: dict | None = None,
                        extra: list[Provider] | None = None, torch_baseline: bool = True,
                        copy: bool = True, extra_params: dict | None = None) -> Problem:
    """Softmax over the last dim of a (rows, width) tensor, contiguous or a transposed view.

    layout "contiguous": x is a contiguous (rows, width) tensor.
    layout "transposed": x = buffer.t() with buffer (width, rows) contiguous, so each softmax
    row is strided (stride_n = rows) and the contiguous dimension runs across rows.
    """
    itemsize = ITEMSIZE[dtype]

    def make_inputs(device, generator):
        shape = (rows, width) if layout == "contiguous" else (width, rows)
        buffer = randn(shape, dtype, device, generator, scale=2.0)
        x = buffer if layout == "contiguous" else buffer.t()
        return {"x": x, "buffer": buffer}

    def run_torch(t):
        import torch

        return torch.softmax(t["x"], dim=-1)

    providers = []
    if ours is not None:
        knobs = dict(ours_knobs or {})
        providers.append(Provider("ours", OURS, lambda t: ours(t["x"], **knobs), knobs=knobs))
    if torch_baseline:
        providers.append(Provider("torch.softmax", BASELINE, run_torch,
                                  note="torch.softmax(x, dim=-1) on the same view"))
    if copy:
        providers.append(copy_provider())
    providers += extra or []
    params = {"rows": rows, "width": width, "dtype": dtype, "layout": layout}
    params.update(extra_params or {})
    return Problem(
        workshop=workshop, experiment=experiment, params=params, make_inputs=make_inputs,
        reference=lambda t: softmax64(t["x"]), tolerance=lambda t: tolerance(dtype),
        metric="bandwidth", bytes=2 * rows * width * itemsize,
        bytes_formula=f"2 * rows * width * {itemsize} (read x once, write y once)",
        providers=providers, baseline="torch.softmax" if torch_baseline else "")


# ---------------------------------------------------------------------------------------------
# Goals and plots: declared next to the variants, evaluated and drawn by benchmarks/report.py
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Goal:
    """A speed goal from the workshop's issue, checked on every matching problem of a run.

    measure "of_ceiling": ours' TB/s (the problem's declared bytes) / the session copy ceiling.
    measure "speedup": the `against` provider's median time / ours' median time.
    Met when the worst matching problem reaches `threshold`.
    """

    text: str
    measure: str
    threshold: float
    where: Callable[[dict], bool]  # filter on a problem's params
    against: str = ""
    experiment: str = "forward"


@dataclass(frozen=True)
class Plot:
    """A figure for the book's results page: book/figures/<workshop>_<name>.png."""

    name: str
    experiment: str
    x: str  # param on the x axis; a categorical axis when its values are not numbers
    panels: tuple = ()  # params that split the figure into subplots
    series: tuple = ()  # params that split lines further, besides the provider
    where: Callable[[dict], bool] = lambda params: True
    title: str = ""


def sweep_providers(call: Callable, configs: list[dict]) -> list[Provider]:
    """"ours" with the launcher's defaults, then "ours" with each configuration's knobs.

    `call(inputs, **knobs)` runs the implementation.
    """
    def bind(knobs):
        return lambda t: call(t, **knobs)

    return [Provider("ours", OURS, bind(dict(k)), knobs=dict(k),
                     note="launcher defaults" if not k else "")
            for k in [{}] + list(configs)]
