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
