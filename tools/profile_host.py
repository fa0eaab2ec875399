"""Where does a launcher's host time go? A diagnostic for the lent GPU, not a benchmark.

Events-mode timings of the multi-launch launchers (split softmax, the TMA GEMM, attention) sat
far above their graph-mode timings: the GPU waited for Python. This script measures, per call,
the host time of each public launcher and of its parts (a bare Triton launch, torch.empty, the
argument checks), then prints a cProfile of the worst ones.

    python3 tools/profile_host.py [--out FILE.json] [--root DIR] [--parts]

--root DIR imports `references` from another checkout (an A/B of two commits' launchers: run the
script once per tree, alternating). --parts adds attention's launcher taken apart: each step of
`streaming_attention._launch` timed on its own, and the kernel launched directly.

Host time per call = wall time of many calls in a row, without synchronizing, divided by the
count; the shapes are small so the GPU never becomes the bottleneck (the sync at the end is timed
separately and reported as `drain_us`).
"""

from __future__ import annotations

import argparse
import cProfile
import inspect
import io
import json
import pstats
import sys
import time
from pathlib import Path

import triton
import triton.language as tl

# --root decides which `references` is imported, so it is read before anything imports it.
_pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
_pre.add_argument("--root")
ROOT = Path(_pre.parse_known_args()[0].root or Path(__file__).resolve().parent.parent).resolve()
sys.path.insert(0, str(ROOT))


@triton.jit
def empty_kernel(a, b, c, n, s0, s1, BLOCK: tl.constexpr):
    """Does nothing: its launch is the cost of a bare Triton launch with 7 arguments."""
    pass


def host_us(fn, calls: int = 300) -> dict:
    import torch

    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    return {"host_us": round((t1 - t0) / calls * 1e6, 2), "drain_us": round((t2 - t1) * 1e6, 1)}


def profile(fn, calls: int = 200, top: int = 25) -> str:
    for _ in range(5):
        fn()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def attention_parts(sa, q, k, v) -> dict:
    """Each step of attention's launcher on its own, at one (N, d) head (what `_launch` does)."""
    import torch

    from references._gpu import descriptor_scratch
    from references._validate import interpreting

    q3, k3, v3 = q[None], k[None], v[None]
    heads, n_ctx, head_dim = q3.shape
    out = torch.empty_like(q3)
    scale = head_dim ** -0.5 * 1.4426950408889634
    parts = {
        "interpreting()": interpreting,
        "checks (inputs, scale)": lambda: (sa._check_inputs(q, k, v, 2, False),
                                           sa._check_scale(None, head_dim)),
        "_config (no knobs)": lambda: sa._config({}, head_dim, q.dtype, False, n_ctx),
        "q[None], k[None], v[None]": lambda: (q[None], k[None], v[None]),
        "torch.empty (1, N, d)": lambda: torch.empty((heads, n_ctx, head_dim), dtype=q.dtype,
                                                     device=q.device),
    }
    if len(inspect.signature(sa._tma_problem).parameters) == 1:  # up to commit c22389f
        parts["_warp_specialize_problem"] = lambda: sa._warp_specialize_problem(q3, k3, v3)
        parts["_tma_problem x3"] = lambda: [sa._tma_problem(t) for t in (q3, k3, v3)]
    else:  # q, k and v's layouts asked once per call, for both paths
        parts["_tma_problem (q, k, v)"] = lambda: sa._tma_problem(q3, k3, v3, False)
        parts["_warp_specialize_problem"] = lambda: sa._warp_specialize_problem(q3, None, False)
    parts["kv_splits_for"] = lambda: sa.kv_splits_for(heads, n_ctx, 64, False, q3)
    parts["triton.set_allocator"] = lambda: triton.set_allocator(descriptor_scratch)
    parts["descriptor_scratch (what Triton asks per launch)"] = lambda: descriptor_scratch(
        16 * 128, 128, None)

    def launch(use_tma: bool):
        return lambda: sa.attention_kernel[(n_ctx // 64, heads)](
            q3, k3, v3, out, out, out, out, n_ctx, scale,
            *q3.stride(), *k3.stride(), *v3.stride(), *out.stride(),
            HEAD_DIM=head_dim, BLOCK_M=64, BLOCK_N=64, IS_CAUSAL=False, USE_TMA=use_tma,
            HOST_DESCRIPTORS=False, UPCAST_DOT=False, DOT_PRECISION="tf32", KV_SPLITS=1,
            num_warps=4, num_stages=3)

    triton.set_allocator(descriptor_scratch)
    parts["attention_kernel launch, device descriptors"] = launch(True)
    parts["attention_kernel launch, pointers"] = launch(False)
    results = {}
    for name, fn in parts.items():
        results[name] = host_us(fn)
        print(f"  attention part: {name:42s} {results[name]}", flush=True)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False)
    parser.add_argument("--out")
    parser.add_argument("--root", help="the checkout whose references to import (see above)")
    parser.add_argument("--parts", action="store_true", help="attention's launcher, step by step")
    args = parser.parse_args()
    print(f"references from {ROOT}", flush=True)

    import torch

    from references import fused_gemm, softmax_backward, split_softmax, streaming_attention, strided_softmax
    from references._gpu import descriptor_scratch

    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(0)

    def randn(*shape, dtype=torch.float16):
        return torch.randn(*shape, device=dev, dtype=dtype, generator=g)

    x_split = randn(8, 131072)
    m, s = split_softmax.partial_stats(x_split)
    m_row, s_row = split_softmax.merge_stats(m, s)
    a, b = randn(1024, 1024), randn(1024, 1024)
    bias = torch.randn(1024, device=dev, generator=g)
    q, k, v = randn(1024, 64), randn(1024, 64), randn(1024, 64)
    x_small = randn(64, 4096)
    y_small = torch.softmax(x_small.float(), -1).half()
    dy_small = randn(64, 4096)
    buf = torch.empty(16, device=dev)

    cases = {
        "bare triton launch (7 args)": lambda: empty_kernel[(1,)](buf, buf, buf, 16, 1, 1,
                                                                   BLOCK=16),
        "torch.empty((8, 64))": lambda: torch.empty((8, 64), device=dev),
        "torch.cuda.get_device_properties": lambda: torch.cuda.get_device_properties(0),
        "torch.cuda.get_device_capability": lambda: torch.cuda.get_device_capability(0),
        "triton.set_allocator": lambda: triton.set_allocator(descriptor_scratch),
        "torch.softmax 8x131072": lambda: torch.softmax(x_split, -1),
        "split_softmax 8x131072": lambda: split_softmax.split_softmax(x_split),
        "partial_stats": lambda: split_softmax.partial_stats(x_split),
        "merge_stats": lambda: split_softmax.merge_stats(m, s),
        "normalize": lambda: split_softmax.normalize(x_split, m_row, s_row),
        "torch.mm 1024^3": lambda: torch.mm(a, b),
        "gemm_bias_relu 1024^3 (default)": lambda: fused_gemm.gemm_bias_relu(a, b, bias),
        "gemm_bias_relu 1024^3 persistent=False": lambda: fused_gemm.gemm_bias_relu(
            a, b, bias, persistent=False),
        "attention N=1024 d=64 (default, TMA)": lambda: streaming_attention.attention(q, k, v),
        "attention N=1024 d=64 tma=False": lambda: streaming_attention.attention(q, k, v,
                                                                                  tma=False),
        "strided softmax 64x4096": lambda: strided_softmax.softmax(x_small),
        "softmax_backward 64x4096": lambda: softmax_backward.softmax_backward(y_small, dy_small),
    }
    results = {}
    for name, fn in cases.items():
        try:
            results[name] = host_us(fn)
        except Exception as exc:  # noqa: BLE001 - a diagnostic: record and go on
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
        print(f"{name:45s} {results[name]}", flush=True)

    if args.parts:
        results["attention parts (N=1024, d=64)"] = attention_parts(streaming_attention, q, k, v)

    profiles = {}
    for name in ("split_softmax 8x131072", "gemm_bias_relu 1024^3 (default)",
                 "attention N=1024 d=64 (default, TMA)", "bare triton launch (7 args)"):
        profiles[name] = profile(cases[name])
        print(f"\n===== cProfile: {name} (200 calls, by own time) =====\n{profiles[name]}",
              flush=True)

    if args.out:
        Path(args.out).write_text(json.dumps({"host": results, "profiles": profiles}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
