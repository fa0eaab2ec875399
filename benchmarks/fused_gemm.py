"""Benchmark variants of the fused GEMM workshop (issue 5).

`gemm_bias_relu(a, b, bias)` (fp32 accumulation, fp32 bias + ReLU, one rounding) against
- `torch.mm(a, b)`: cuBLAS with no epilogue, the ceiling to approach;
- the same precision contract in torch: `torch.mm(a, b, out_dtype=torch.float32)` + bias + ReLU
  + cast (or `a.float() @ b.float()` where out_dtype is not supported; the note says which);
bf16 and fp16, 1024^3 to 8192^3, odd tails 4095 x 4097 x 4093, skinny 8192 x 8192 x 1024 and
16384 x 1024 x 4096. Grouped against ungrouped tile order is its own experiment. FLOPs = 2*M*N*K
(the epilogue's M*N adds are not counted).
"""

from __future__ import annotations

from benchmarks._common import Goal, Plot, impl_configs, kwonly_defaults, randn, sweep_providers, tolerance
from benchmarks.harness import BASELINE, CEILING, OURS, Problem, Provider

WORKSHOP = "fused_gemm"
DTYPES = ("bfloat16", "float16")
SQUARE = (1024, 2048, 4096, 8192)
ODD = (4095, 4097, 4093)
SKINNY = ((8192, 8192, 1024), (16384, 1024, 4096))


def _big_square(p):
    return (p["M"], p["N"], p["K"]) in ((4096, 4096, 4096), (8192, 8192, 8192))


GOALS = [
    Goal("4096^3 and 8192^3, both dtypes: >= 0.97x torch.mm while fusing the epilogue",
         "speedup", 0.97, _big_square, against="torch.mm"),
    Goal(">= 1.3x the same-contract torch baseline, every shape", "speedup", 1.3,
         lambda p: True, against="same-contract"),
    Goal("odd tails 4095 x 4097 x 4093: ahead of torch.mm (>= 1.0x)", "speedup", 1.0,
         lambda p: (p["M"], p["N"], p["K"]) == ODD, against="torch.mm"),
]
PLOTS = [Plot("tflops", "forward", x="shape", panels=("dtype",),
              title="GEMM + bias + ReLU: TFLOP/s by shape"),
         Plot("grouping", "grouped_order", x="shape", panels=("dtype",),
              title="grouped against ungrouped tile order")]


def _shapes(scale: str):
    if scale == "dry":
        return [((64, 48, 32), "float16"), ((33, 17, 40), "bfloat16")]
    if scale == "quick":
        return [((4096,) * 3, "bfloat16"), ((8192,) * 3, "bfloat16"), (ODD, "bfloat16"),
                (SKINNY[0], "bfloat16"), ((4096,) * 3, "float16")]
    shapes = [(n, n, n) for n in SQUARE] + [ODD] + list(SKINNY)
    return [(s, d) for d in DTYPES for s in shapes]


def gemm_problem(shape, dtype: str, providers: list, experiment: str = "forward",
                 baselines: bool = True) -> Problem:
    m, n, k = shape
    itemsize = 2

    def make_inputs(device, generator):
        a = randn((m, k), dtype, device, generator)
        b = randn((k, n), dtype, device, generator)
        bias = randn((n,), "float32", device, generator)
        return {"a": a, "b": b, "bias": bias}

    def reference(t):
        # The contract in float64: exact products of the upcast operands, fp64 accumulation
        # (at least as good as fp32), bias and ReLU, compared before any rounding.
        c = t["a"].double() @ t["b"].double()
        return (c + t["bias"].double()).clamp_min(0)

    all_providers = list(providers)
    if baselines:
        all_providers += [
            Provider("torch.mm", CEILING, lambda t: t["a"] @ t["b"],
                     note="cuBLAS, no epilogue (not the same operation: the ceiling)",
                     reference=lambda t: t["a"].double() @ t["b"].double(),
                     # twice the contract's bounds: cuBLAS may reduce fp16 partial sums in
                     # reduced precision (torch's default); the gate only asks "is it a matmul"
                     tolerance=lambda t: tuple(2 * v for v in _tolerance(t, dtype, k))),
            _same_contract()]
    return Problem(
        workshop=WORKSHOP, experiment=experiment,
        params={"M": m, "N": n, "K": k, "shape": f"{m}x{n}x{k}", "dtype": dtype,
                "layout": "row-major a, b"},
        make_inputs=make_inputs, reference=reference,
        tolerance=lambda t: _tolerance(t, dtype, k), metric="flops",
        bytes=(m * k + k * n + m * n) * itemsize + 4 * n,
        bytes_formula=f"(M*K + K*N + M*N) * {itemsize} + 4*N (a, b read once, c written, bias)",
        flops=2 * m * n * k, flops_formula="2 * M * N * K",
        providers=all_providers, baseline="same-contract" if baselines else "",
        ceiling="torch.mm" if baselines else "")


def _tolerance(t: dict, dtype: str, k: int) -> tuple[float, float]:
    """The output dtype's rtol, plus an absolute floor of one output rounding step at the
    typical magnitude of C (sqrt(K) * rms(a) * rms(b)): fp32 accumulation in a different order
    leaves an absolute error on entries that cancel to near zero."""
    rtol, atol = tolerance(dtype)
    typical = (k ** 0.5) * float(t["a"].float().pow(2).mean().sqrt()) * \
        float(t["b"].float().pow(2).mean().sqrt())
    return rtol, max(atol, rtol * typical)


def _same_contract() -> Provider:
    """torch.mm with a float32 output, then bias, ReLU and one cast: the same precision
    contract as ours, in four torch ops. Falls back to a float32 matmul where the installed
    torch has no out_dtype (the record's state.path says which)."""
    state = {}

    def run(t):
        import torch

        a, b = t["a"], t["b"]
        if state.get("path") != "float":
            try:
                c = torch.mm(a, b, out_dtype=torch.float32)
                state["path"] = "out_dtype"
            except (TypeError, RuntimeError):
                state["path"] = "float"
        if state["path"] == "float":
            c = a.float() @ b.float()
        return c.add_(t["bias"]).relu_().to(a.dtype)

    return Provider("same-contract", BASELINE, run, state=state,
                    note="torch.mm(a, b, out_dtype=torch.float32).add_(bias).relu_().to(dtype)"
                         " (fallback: a.float() @ b.float()); state.path says which ran")


def _ours(impl, knobs=None) -> Provider:
    knobs = dict(knobs or {})
    return Provider("ours", OURS, lambda t: impl.gemm_bias_relu(t["a"], t["b"], t["bias"], **knobs),
                    knobs=knobs)


def _group_knob(impl) -> str | None:
    defaults = kwonly_defaults(impl.gemm_bias_relu)
    for name in ("group_m", "GROUP_M", "group_size_m"):
        if name in defaults:
            return name
    return None


def _default_group(impl, knob: str, shape) -> int:
    """The group size the launcher itself would pick for `shape`: its default_config's where it
    has one (the reference's depends on the tile: 16 for 128 x 256 tiles, 8 otherwise; the
    H200's 132 SMs assumed), else the keyword's default, else 8."""
    config = getattr(impl, "default_config", None)
    if callable(config):
        try:
            value = config(*shape).get(knob)
        except (TypeError, ValueError, AttributeError):  # another signature: use the fallbacks
            value = None
        if isinstance(value, int) and value > 1:
            return value
    default = kwonly_defaults(impl.gemm_bias_relu)[knob]
    return default if isinstance(default, int) and default > 1 else 8


def problems(impl, scale: str) -> list:
    out = [gemm_problem(shape, dtype, [_ours(impl)]) for shape, dtype in _shapes(scale)]
    # Grouped against ungrouped launch order: the same kernel, group_m = 1 against its default.
    knob = _group_knob(impl)
    if knob:
        if scale == "dry":
            shapes = [((64, 48, 32), "float16")]
        elif scale == "quick":
            shapes = [((8192,) * 3, "bfloat16")]
        else:
            shapes = [((n,) * 3, d) for d in DTYPES for n in (4096, 8192)]
        for shape, dtype in shapes:
            grouped = _default_group(impl, knob, shape)
            ungrouped = _ours(impl, {knob: 1})
            ungrouped.name, ungrouped.role = "ungrouped", BASELINE
            problem = gemm_problem(shape, dtype, [_ours(impl, {knob: grouped}), ungrouped],
                                   experiment="grouped_order", baselines=False)
            problem.baseline = "ungrouped"
            out.append(problem)
    return out


def sweep_problems(impl, scale: str) -> list:
    """Every CONFIGS entry at 4096^3 and 4095 x 4097 x 4093, bf16; where the launcher has a
    `persistent` knob, each entry both on the automatic path and with persistent=False."""
    configs = impl_configs(impl)
    if not configs:
        return []
    if "persistent" in kwonly_defaults(impl.gemm_bias_relu):
        configs = [c for config in configs for c in (config, dict(config, persistent=False))]
    shapes = [((64, 48, 32), "float16")] if scale == "dry" else [((4096,) * 3, "bfloat16"),
                                                                 (ODD, "bfloat16")]
    call = lambda t, **k: impl.gemm_bias_relu(t["a"], t["b"], t["bias"], **k)  # noqa: E731
    return [gemm_problem(shape, dtype, sweep_providers(call, configs), experiment="sweep")
            for shape, dtype in shapes]
