"""Why do events-timed samples of short calls sometimes stretch 2-4x? (A diagnostic probe.)

The benchmark's events timing (`benchmarks/harness.py: EventTimer`) writes the 256 MiB L2
flush, records a start event, launches the call from Python and records an end event, with
no synchronization between samples. If the host takes longer to launch the call than the GPU
takes to run the flush, the GPU idles between the start event and the kernel, and that idle
time is timed. This probe times short attention calls three ways, in the same rounds:

- `events`: exactly the harness's EventTimer;
- `events+sleep`: the same, with a GPU sleep of about 100 us enqueued before the flush, so the
  host is ahead of the GPU when it launches the call (any remaining spread is on the GPU);
- `host`: the host's own time to launch one call (perf_counter around the call, no sync).

    python3 tools/probe_events_stalls.py        # on the GPU machine, about 30 s

If `events` spreads and `events+sleep` does not, the stalls are the host's launch time showing
through, not the kernel. Nothing here changes the harness.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


class SleepFirstTimer:
    """EventTimer with a GPU sleep before each sample's flush (the host gets ahead)."""

    def __init__(self, fn, plan, flush, cycles: int):
        from benchmarks import harness

        self.inner = harness.EventTimer(fn, plan, flush)
        self.cycles = cycles

    def prepare(self) -> None:
        self.inner.prepare()

    def sample(self) -> None:
        import torch

        torch.cuda._sleep(self.cycles)
        self.inner.sample()

    def result(self) -> dict:
        return self.inner.result()


def host_launch_us(fn, calls: int = 200) -> list[float]:
    import torch

    torch.cuda.synchronize()
    out = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e6)
        if len(out) % 20 == 0:
            torch.cuda.synchronize()  # keep the queue short: launch time, not back-pressure
    return out


def spread_line(name: str, samples_ms: list[float]) -> str:
    s = sorted(samples_ms)
    p10, med, p90 = s[len(s) // 10], statistics.median(s), s[(9 * len(s)) // 10]
    return (f"  {name:14} median {med * 1e3:7.1f} us  p10 {p10 * 1e3:7.1f}  p90 {p90 * 1e3:7.1f}"
            f"  p90/p10 {p90 / p10:4.2f}")


def main() -> int:
    import torch

    from benchmarks import harness
    from references import streaming_attention
    from tools._timing import sdpa_cudnn

    plan = harness.Plan(samples=40, warmup_ms=50.0, graph_ms=5.0)
    flush = torch.empty(harness.L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    cycles = int(torch.cuda.get_device_properties(0).clock_rate * 1e3 * 100e-6)  # ~100 us
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, 40 samples per timer, "
          f"sleep {cycles} cycles before each sample of events+sleep")
    gen = torch.Generator(device="cuda").manual_seed(0)
    for n, d, causal in ((4096, 64, False), (4096, 128, False), (4096, 64, True), (1024, 64, False)):
        q, k, v = (torch.randn(n, d, generator=gen, device="cuda", dtype=torch.bfloat16)
                   for _ in range(3))
        calls = {"ours": lambda: streaming_attention.attention(q, k, v, causal=causal),
                 "sdpa-cudnn": sdpa_cudnn(q[None], k[None], v[None], causal)}
        print(f"one head, N = {n}, d = {d}, causal = {causal}, bfloat16")
        for name, fn in calls.items():
            timers = [harness.EventTimer(fn, plan, flush), SleepFirstTimer(fn, plan, flush, cycles)]
            for t in timers:
                t.prepare()
            harness.time_interleaved(timers, plan.samples)
            host = host_launch_us(fn)
            print(f" {name}: host launch median {statistics.median(host):.1f} us, "
                  f"p90 {sorted(host)[len(host) * 9 // 10]:.1f} us")
            print(spread_line("events", timers[0].result()["samples_ms"]))
            print(spread_line("events+sleep", timers[1].result()["samples_ms"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
