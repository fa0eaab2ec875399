"""A/B of streaming attention's TMA descriptors on a GPU: built on the device or on the host.

    python3 tools/ab_attention_descriptors.py [--quick]

For the shapes of the attention goal (bf16, d = 64 and 128, causal and not, one head and
batches of heads), times `attention_heads` with `DESCRIPTORS_ON_HOST` off and on at the default
tiles, a few other tiles with host descriptors, and pointer loads, next to SDPA-cuDNN, after
checking each output against SDPA-cuDNN's (graph timing, the benchmark harness's timers; events
timing for the default tiles). Prints one line per variant; benchmarks/results/diagnostics/
keeps its output. A diagnostic, not evidence.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(argv: list[str]) -> int:
    import torch

    from benchmarks import harness
    from references import streaming_attention as sa
    from tools._timing import attention_problems, sdpa_cudnn

    plan = harness.PLANS["sweep"]
    flush = torch.empty(harness.L2_FLUSH_BYTES // 4, device="cuda")
    quick = "--quick" in argv
    shapes = [(16, 4096), (1, 4096), (1, 16384), (64, 8192)]
    if quick:
        shapes = [(16, 4096), (1, 4096)]
    variants = [  # (label, host descriptors, knobs)
        ("device-desc 64x64/4w/3s", False, {}),
        ("host-desc   64x64/4w/3s", True, {}),
        ("host-desc   128x64/4w/2s", True, dict(block_m=128, block_n=64, num_warps=4, num_stages=2)),
        ("host-desc   128x128/8w/3s", True, dict(block_m=128, block_n=128, num_warps=8, num_stages=3)),
        ("host-desc   128x64/8w/3s", True, dict(block_m=128, block_n=64, num_warps=8, num_stages=3)),
        ("pointers    64x64/4w/3s", False, dict(tma=False)),
    ]
    for heads, n, d, causal, q, k, v, flops in attention_problems(shapes):
        cudnn = sdpa_cudnn(q, k, v, causal)
        expected = cudnn().float()
        base = harness.summarize(harness.time_graph(cudnn, plan)["samples_ms"])["median"]
        print(f"H={heads} N={n} d={d} causal={causal}: cudnn graph {base * 1e3:.1f} us "
              f"({flops / base / 1e9:.0f} TFLOP/s)", flush=True)
        for label, host, knobs in variants:
            if causal and knobs.get("block_n", 0) > knobs.get("block_m", 1 << 20):
                continue
            sa.DESCRIPTORS_ON_HOST = host

            def ours():
                return sa.attention_heads(q, k, v, causal=causal, **knobs)

            err = (ours().float() - expected).abs().max().item()
            graph = harness.summarize(harness.time_graph(ours, plan)["samples_ms"])
            line = (f"   {label}: graph {graph['median'] * 1e3:8.1f} us "
                    f"({flops / graph['median'] / 1e9:4.0f} TFLOP/s, "
                    f"{base / graph['median']:.2f}x cudnn)")
            if not knobs:
                events = harness.summarize(
                    harness.time_events(ours, plan, flush)["samples_ms"])
                line += f", events {events['median'] * 1e3:8.1f} us"
            print(f"{line}, max |diff| vs cudnn {err:.1e}", flush=True)
        sa.DESCRIPTORS_ON_HOST = False
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
