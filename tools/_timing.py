"""Timing helper shared by the probes in tools/ (diagnostics, not the benchmark harness)."""

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
