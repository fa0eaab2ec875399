"""Timing helpers shared by the probes in tools/ (diagnostics, not the benchmark harness)."""

from __future__ import annotations


def graph_medians_us(fns, plan) -> list[float]:
    """Median time per call (us) of each function in graph timing: every function captured
    first, then all timed in the same rounds (`harness.time_interleaved`), so clock drift hits
    them alike."""
    from benchmarks import harness

    timers = []
    try:
        for fn in fns:
            timers.append(harness.GraphTimer(fn, plan))
            timers[-1].prepare()
        harness.time_interleaved(timers, plan.samples)
        return [harness.summarize(t.result()["samples_ms"])["median"] * 1e3 for t in timers]
    finally:
        for t in timers:
            t.close()


def time_against_copy_in_sets(calls: dict, title: str, plan, bytes_ratio: float = 1.0,
                              sets: int = 3) -> None:
    """Time every call (the first is a copy) in `sets` separate sets of interleaved graph
    rounds, so that the run-to-run spread shows next to the differences; each line gives the
    call's bandwidth as a share of the copy's. bytes_ratio: the bytes each call moves over the
    copy's (1.5 for softmax backward: three tensors against the copy's two)."""
    for set_ in range(sets):
        medians = graph_medians_us(calls.values(), plan)
        print(f"\n{title}, set {set_ + 1} of {sets} (graph timing, interleaved rounds)",
              flush=True)
        for i, (label, us) in enumerate(zip(calls, medians, strict=True)):
            share = 1.0 if i == 0 else bytes_ratio * medians[0] / us
            print(f"   {us:8.1f} us  {share:5.3f} of copy  {label}", flush=True)


def sdpa_cudnn(q, k, v, causal: bool):
    """A zero-argument call of torch's SDPA pinned to the cuDNN backend on (H, N, d) q, k, v:
    the attention probes' yardstick (the benchmark's own provider is in benchmarks/)."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def run():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=causal)[0]

    return run


def attention_problems(shapes, dims=(64, 128), dtype=None):
    """(heads, n, d, causal, q, k, v, flops) for each (heads, n) of `shapes`, each head dim and
    both masks: fresh random (H, N, d) inputs on the GPU (bf16 unless `dtype` says), FLOPs
    counted as the benchmark counts them (4 H N^2 d, halved when causal)."""
    import torch

    dtype = dtype or torch.bfloat16
    for heads, n in shapes:
        for d in dims:
            for causal in (False, True):
                q, k, v = (torch.randn(heads, n, d, device="cuda", dtype=dtype)
                           for _ in range(3))
                yield heads, n, d, causal, q, k, v, 4 * heads * n * n * d // (2 if causal else 1)


def matching(reference, candidates: dict, tolerance: float = 0.05) -> dict:
    """The candidates (label -> zero-argument call) whose output is within `tolerance` (max
    absolute difference) of reference()'s; each one left out is printed with the reason
    (wrong output, or an error such as running out of shared memory), so it is never timed."""
    expected = reference().float()
    kept = {}
    for label, call in candidates.items():
        try:
            err = (call().float() - expected).abs().max().item()
        except Exception as exc:  # noqa: BLE001 - a diagnostic reports and goes on
            print(f"   {label}: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
            continue
        if err > tolerance:
            print(f"   {label}: max |diff| vs the reference {err:.2e}: WRONG, not timed")
            continue
        kept[label] = call
    return kept


def time_attention_against_cudnn(title: str, q, k, v, causal: bool, flops: int, variants: dict,
                                 plan, digits: int = 2) -> None:
    """The attention probes' loop body: each variant (label -> `attention_heads` knobs, or a
    zero-argument call) whose output matches SDPA-cuDNN's is timed next to SDPA-cuDNN in graph
    rounds; prints `title`, then one line per call (time, TFLOP/s, ratio to cuDNN)."""
    from references import streaming_attention as sa

    cudnn = sdpa_cudnn(q, k, v, causal)
    calls = {"sdpa-cudnn": cudnn} | matching(cudnn, {
        label: knobs if callable(knobs) else
        (lambda knobs=knobs: sa.attention_heads(q, k, v, causal=causal, **knobs))
        for label, knobs in variants.items()})
    times = graph_medians_us(list(calls.values()), plan)
    print(title, flush=True)
    for label, us in zip(calls, times, strict=True):
        print(f"   {label:34s} {us:8.1f} us  {flops / us / 1e6:5.0f} TFLOP/s  "
              f"{times[0] / us:.{digits}f}x cudnn", flush=True)


def time_transposed_softmax(shapes, variants_for) -> None:
    """The strided-softmax probes' loop. For float16 and bfloat16 and each (width, rows) of
    `shapes`: a transposed view of fresh random values (every 7th row scaled by 30, so that
    2^t reaches far below 0), each variant of `variants_for(width)` -- (label, call(x)) pairs --
    checked against a float64 softmax (2 eps, plus fp16's subnormal step), then timed in graph
    rounds next to a copy of the same bytes and the reference; prints one line per variant. A
    variant that raises is reported and skipped."""
    import torch

    from benchmarks import harness
    from references import strided_softmax as ss

    for dtype in (torch.float16, torch.bfloat16):
        for width, rows in shapes:
            x = torch.randn(width, rows, device="cuda", dtype=dtype).t()
            x[:, :: 7] *= 30
            expected = torch.softmax(x.double(), dim=-1)
            dst = torch.empty_like(x.t())
            calls = {"copy": lambda dst=dst, x=x: dst.copy_(x.t()),
                     "reference": lambda x=x: ss.softmax(x)}
            for label, call in variants_for(width):
                try:
                    got = call(x).double()
                except Exception as exc:  # noqa: BLE001 - a diagnostic reports and goes on
                    print(f"   {label}: {type(exc).__name__}: {str(exc)[:160]}", flush=True)
                    continue
                err = (got - expected).abs()
                allowed = 2 * torch.finfo(dtype).eps * expected.abs() + (
                    6e-8 if dtype == torch.float16 else 1e-30)
                fits = "ok" if bool((err <= allowed).all()) else "OUT OF TOLERANCE"
                calls[f"{label} max|err| {err.max().item():.1e} {fits}"] = \
                    lambda call=call, x=x: call(x)
            medians = graph_medians_us(calls.values(), harness.PLANS["sweep"])
            print(f"\n{rows} x {width} {str(dtype)[6:]} transposed (graph timing)", flush=True)
            for label, us in zip(calls, medians, strict=True):
                print(f"   {us:8.1f} us  {medians[0] / us:5.2f} of copy  {label}", flush=True)
