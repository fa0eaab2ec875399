"""Benchmark variants of the streaming attention workshop (issue 8).

`attention(q, k, v, causal=...)` for one head, and `attention_heads` (one launch for many heads;
a loop over `attention` where an implementation lacks it) for a batch of heads, against torch's
`scaled_dot_product_attention` with each backend pinned (flash, cuDNN, memory-efficient),
bfloat16 and float16, d = 64 and 128, N = 1024 to 16384, causal and not; batches of 4, 16 and
64 heads (a few heads fill the GPU differently from one or many: 4 heads of 4096 is 256 programs
of 64 rows, about 2 per SM).
FLOPs = 4 * N^2 * d per head (QK^T and PV, 2 FLOPs per multiply-add), halved when causal.
"""

from __future__ import annotations

from benchmarks._common import ITEMSIZE, Goal, Plot, impl_configs, randn, tolerance
from benchmarks.harness import BASELINE, OURS, Problem, Provider

WORKSHOP = "streaming_attention"
DTYPES = ("bfloat16", "float16")
BACKENDS = (("sdpa-flash", "FLASH_ATTENTION"), ("sdpa-cudnn", "CUDNN_ATTENTION"),
            ("sdpa-efficient", "EFFICIENT_ATTENTION"))

GOALS = [
    Goal("N >= 4096, d = 64 and 128, causal and not: >= 1.0x SDPA-cuDNN", "speedup", 1.0,
         lambda p: p["N"] >= 4096, against="sdpa-cudnn"),
]
PLOTS = [Plot("tflops", "forward", x="N", panels=("d", "causal"),
              where=lambda p: p["heads"] == "1x1" and p["dtype"] == "bfloat16",
              title="attention, one head, bf16: TFLOP/s against sequence length")]


def attention_problem(batch: int, heads: int, n: int, d: int, causal: bool, dtype: str,
                      ours: list, experiment: str = "forward", baselines: bool = True) -> Problem:
    itemsize = ITEMSIZE[dtype]
    scale = d ** -0.5

    def make_inputs(device, generator):
        shape = (batch, heads, n, d)
        return {name: randn(shape, dtype, device, generator) for name in ("q", "k", "v")}

    def reference(t):
        import torch

        q, k, v = (t[name].double() for name in ("q", "k", "v"))
        out = torch.empty_like(q)
        rows = max(1, (1 << 25) // n)  # about 256 MiB of float64 scores at a time
        for b in range(batch):
            for h in range(heads):
                for r0 in range(0, n, rows):
                    r1 = min(n, r0 + rows)
                    s = q[b, h, r0:r1] @ k[b, h].T * scale  # (r1 - r0, N)
                    if causal:  # row i sees keys 0..i
                        i = torch.arange(r0, r1, device=s.device)[:, None]
                        j = torch.arange(n, device=s.device)[None, :]
                        s = s.masked_fill(j > i, -float("inf"))
                    out[b, h, r0:r1] = s.softmax(dim=-1) @ v[b, h]
        return out

    def tol(t):
        # P is rounded to the input dtype before P @ V (as every fast kernel does), which moves
        # an output by up to eps * max|v|: the table's rtol, with atol = rtol * max|v|.
        rtol, atol = tolerance(dtype)
        return rtol, max(atol, rtol * float(t["v"].abs().max()))

    providers = list(ours)
    if baselines:
        providers += [_sdpa(name, backend, causal) for name, backend in BACKENDS]
    flops = 4 * batch * heads * n * n * d // (2 if causal else 1)
    return Problem(
        workshop=WORKSHOP, experiment=experiment,
        params={"heads": f"{batch}x{heads}", "N": n, "d": d, "causal": causal, "dtype": dtype,
                "layout": "(B, H, N, d) contiguous"},
        make_inputs=make_inputs, reference=reference, tolerance=tol, metric="flops",
        bytes=4 * batch * heads * n * d * itemsize,
        bytes_formula=f"4 * B * H * N * d * {itemsize} (q, k, v read once, out written)",
        flops=flops,
        flops_formula="4 * B * H * N^2 * d" + (" / 2 (causal)" if causal else ""),
        providers=providers, baseline="sdpa-cudnn" if baselines else "")


def _sdpa(name: str, backend: str, causal: bool) -> Provider:
    def run(t):
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel(getattr(SDPBackend, backend)):
            return F.scaled_dot_product_attention(t["q"], t["k"], t["v"], is_causal=causal)

    return Provider(name, BASELINE, run, cuda_only=True,
                    note=f"F.scaled_dot_product_attention under sdpa_kernel(SDPBackend.{backend})")


def _ours(impl, batch: int, heads: int, causal: bool, knobs: dict | None = None) -> Provider:
    knobs = dict(knobs or {})
    if batch * heads == 1:
        def run(t):
            return impl.attention(t["q"][0, 0], t["k"][0, 0], t["v"][0, 0], causal=causal,
                                  **knobs)
        note = "attention(q, k, v) on one (N, d) head"
    elif hasattr(impl, "attention_heads"):
        def run(t):
            b, h, n, d = t["q"].shape
            q, k, v = (t[name].reshape(b * h, n, d) for name in ("q", "k", "v"))  # views
            return impl.attention_heads(q, k, v, causal=causal, **knobs)
        note = ("attention_heads on (B*H, N, d) views: one launch for all heads (and one "
                "merge of key splits where split)")
    else:
        def run(t):
            q, k, v = t["q"], t["k"], t["v"]
            return [impl.attention(q[b, h], k[b, h], v[b, h], causal=causal, **knobs)
                    for b in range(q.shape[0]) for h in range(q.shape[1])]
        note = "a Python loop of attention over the heads (no attention_heads here)"
    return Provider("ours", OURS, run, knobs=knobs, note=note)


def _shapes(scale: str):
    """(batch, heads, N, d, causal, dtype)"""
    if scale == "dry":
        return [(1, 1, 33, 16, True, "float16"), (1, 1, 64, 32, False, "bfloat16"),
                (1, 2, 17, 16, False, "float32")]
    if scale == "quick":
        single = [(1, 1, n, d, c, "bfloat16") for n in (4096, 16384) for d in (64, 128)
                  for c in (False, True)]
        return single + [(1, 16, 4096, d, c, "bfloat16") for d in (64, 128) for c in (False, True)]
    out = []
    for dtype in DTYPES:
        for d in (64, 128):
            for causal in (False, True):
                out += [(1, 1, n, d, causal, dtype) for n in (1024, 2048, 4096, 8192, 16384)]
                out += [(1, 4, 4096, d, causal, dtype), (1, 16, 4096, d, causal, dtype),
                        (4, 16, 8192, d, causal, dtype)]
    return out


def problems(impl, scale: str) -> list:
    return [attention_problem(b, h, n, d, c, dtype, [_ours(impl, b, h, c)])
            for b, h, n, d, c, dtype in _shapes(scale)]


def sweep_problems(impl, scale: str) -> list:
    """Every CONFIGS entry on 16 heads x 4096, bf16: d = 128 non-causal and d = 64 causal; and
    on one head (few programs: where block sizes decide how many SMs get work)."""
    configs = impl_configs(impl)
    if not configs:
        return []
    shapes = [(1, 2, 33, 16, True, "float16")] if scale == "dry" else \
        [(1, 16, 4096, 128, False, "bfloat16"), (1, 16, 4096, 64, True, "bfloat16"),
         (1, 1, 4096, 128, False, "bfloat16"), (1, 1, 8192, 64, True, "bfloat16"),
         (1, 1, 16384, 64, False, "bfloat16")]
    out = []
    for b, h, n, d, c, dtype in shapes:
        ours = [_ours(impl, b, h, c, knobs) for knobs in [{}] + configs]
        ours[0].note += " (launcher defaults)"
        out.append(attention_problem(b, h, n, d, c, dtype, ours, experiment="sweep"))
    return out
