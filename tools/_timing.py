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


def sdpa_cudnn(q, k, v, causal: bool):
    """A zero-argument call of torch's SDPA pinned to the cuDNN backend on (H, N, d) q, k, v:
    the attention probes' yardstick (the benchmark's own provider is in benchmarks/)."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def run():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=causal)[0]

    return run


def attention_problems(shapes, dims=(64, 128)):
    """(heads, n, d, causal, q, k, v, flops) for each (heads, n) of `shapes`, each head dim and
    both masks: fresh random bf16 (H, N, d) inputs on the GPU, FLOPs counted as the benchmark
    counts them (4 H N^2 d, halved when causal)."""
    import torch

    for heads, n in shapes:
        for d in dims:
            for causal in (False, True):
                q, k, v = (torch.randn(heads, n, d, device="cuda", dtype=torch.bfloat16)
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
