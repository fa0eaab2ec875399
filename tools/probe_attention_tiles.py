"""Attention tiles on the grids where we are furthest behind cuDNN. A diagnostic.

    python3 tools/probe_attention_tiles.py [64 | pointers]

Batched attention at d = 128 without a mask runs at 0.79-0.82x SDPA-cuDNN (validation report).
Its default tile, 128 x 64 over 4 warps with 2 stages, needs 255 registers on sm_90 and spills
72 bytes per thread; over 8 warps the same tile needs 138 and does not spill
(tools/compile_sm90.py; tests/test_gpu_compile.py checks it in CI). The sweep and the later A/B
never timed these two against each other. This times, for 16 heads of 4096 and 64 heads of
8192 (bf16, d = 64 and 128, causal and not), the launcher's default and the tiles of TILES
(that 4-warp tile and others that compile without spilling), next to SDPA-cuDNN, in
interleaved graph-timing rounds (tools/_timing.py), after checking every output against
cuDNN's. Prints one line per variant; benchmarks/results/diagnostics/ keeps outputs.

Measured (diagnostics/probe-attention-tiles-20261130-59a9970.txt): the spilling 4-warp tile is
the fastest of these at d = 128 (16 x 4096: 259 us; 8 warps 409 us with 2 stages, 298 us with 3),
so the launcher's defaults stand.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools._timing import (  # noqa: E402
    attention_problems,
    graph_medians_us,
    matching,
    sdpa_cudnn,
)

# d -> tiles; comments: bf16 on sm_90 with TMA loads, registers per thread, spilled bytes,
# shared memory per program (python3 tools/compile_sm90.py; diagnostics/compile-sm90-*)
TILES = {
    128: [dict(block_m=128, block_n=64, num_warps=4, num_stages=2),  # 255, 72 B, 96 KiB
          dict(block_m=128, block_n=64, num_warps=8, num_stages=2),  # 138, none, 96 KiB
          dict(block_m=128, block_n=64, num_warps=8, num_stages=3),  # 139, none, 129 KiB
          dict(block_m=128, block_n=128, num_warps=8, num_stages=2),  # 191, none, 161 KiB
          dict(block_m=128, block_n=32, num_warps=8, num_stages=4),  # 114, none, 96 KiB
          dict(block_m=64, block_n=64, num_warps=4, num_stages=3)],  # 138, none, 113 KiB
    64: [dict(block_m=128, block_n=64, num_warps=8, num_stages=3),  # 107, none, 65 KiB
         dict(block_m=128, block_n=64, num_warps=4, num_stages=2),  # 189, none, 48 KiB
         dict(block_m=128, block_n=128, num_warps=8, num_stages=2),  # 156, none, 81 KiB
         dict(block_m=64, block_n=64, num_warps=4, num_stages=3)],  # 106, none, 57 KiB
}
# `python3 tools/probe_attention_tiles.py 64`: d = 64 only, taller tiles and deeper pipelines
# (pointer loads, the default's; registers per thread, spilled bytes, shared memory): 256-row
# programs over 16 warps read each key and value block once for twice the rows.
TILES_64_TALL = [dict(block_m=256, block_n=64, num_warps=16, num_stages=3),  # 128, none, 40 KiB
                 dict(block_m=256, block_n=64, num_warps=16, num_stages=2),  # 128, none, 40 KiB
                 dict(block_m=256, block_n=32, num_warps=16, num_stages=4),  # 102, none, 36 KiB
                 dict(block_m=128, block_n=32, num_warps=8, num_stages=4),  # 128, none, 20 KiB
                 dict(block_m=128, block_n=64, num_warps=8, num_stages=4)]  # 201, none, 24 KiB

# `python3 tools/probe_attention_tiles.py pointers`: d = 128 without a mask on the pointer path
# (tma=False: what runs where TMA cannot describe the inputs, or on a GPU without TMA), where
# the TMA path's tile (the first below) spills 920 bytes per thread. Its output
# (diagnostics/probe-attention-tiles-pointers-*) chose the launcher's pointer tile, 128 x 128
# over 8 warps, which "launcher default" runs since. Pointer loads, bf16, sm_90: registers per
# thread, spilled bytes (tools/compile_sm90.py).
TILES_128_POINTERS = [dict(block_m=128, block_n=64, num_warps=4, num_stages=2),  # 255, 920 B
                      dict(block_m=128, block_n=64, num_warps=8, num_stages=2),  # 255, none
                      dict(block_m=128, block_n=64, num_warps=8, num_stages=3),  # 255, none
                      dict(block_m=128, block_n=32, num_warps=8, num_stages=4),  # 215, none
                      dict(block_m=128, block_n=128, num_warps=8, num_stages=3),  # 255, 376 B
                      dict(block_m=64, block_n=64, num_warps=4, num_stages=3)]  # 255, 256 B


def _label(knobs: dict) -> str:
    if not knobs:
        return "launcher default"
    return f"{knobs['block_m']}x{knobs['block_n']}/{knobs['num_warps']}w/{knobs['num_stages']}s"


def main(tall_64: bool = False, pointers: bool = False) -> int:
    import torch

    from benchmarks import harness
    from references import streaming_attention as sa

    if not torch.cuda.is_available():
        print("probe_attention_tiles times kernels on a GPU; none is visible here")
        return 2
    plan = harness.PLANS["sweep"]
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, graph timing, "
          f"{plan.samples} samples, bf16")
    shapes = [(16, 4096), (64, 8192)] + ([(1, 16384)] if tall_64 else [])
    if pointers:
        shapes = [(16, 4096), (64, 8192), (4, 16384), (1, 16384)]
    dims = (64,) if tall_64 else (128,) if pointers else (64, 128)
    for heads, n, d, causal, q, k, v, flops in attention_problems(shapes, dims=dims):
        if pointers and causal:
            continue
        cudnn = sdpa_cudnn(q, k, v, causal)
        candidates = TILES_64_TALL if tall_64 else TILES_128_POINTERS if pointers else TILES[d]
        tiles = [{}] + [t for t in candidates if not causal or t["block_n"] <= t["block_m"]]
        forced = dict(tma=False) if pointers else {}  # the launcher's default is tiles = {}

        def ours(knobs, q=q, k=k, v=v, causal=causal):
            return lambda: sa.attention_heads(q, k, v, causal=causal, **knobs, **forced)

        calls = {"sdpa-cudnn": cudnn} | matching(cudnn, {_label(t): ours(t) for t in tiles})
        fns, labels = list(calls.values()), list(calls)
        times = graph_medians_us(fns, plan)
        default = sa._config(forced, d, q.dtype, causal, n, heads)  # what the launcher runs
        if pointers and default.get("pointer_tile"):  # _launch swaps it in without TMA
            default = {**default, **default["pointer_tile"]}
        print(f"H={heads} N={n} d={d} causal={causal} (default {_label(default)}):", flush=True)
        for label, us in zip(labels, times, strict=True):
            print(f"   {label:22s} {us:8.1f} us  {flops / us / 1e6:5.0f} TFLOP/s  "
                  f"{times[0] / us:.2f}x cudnn", flush=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1:] not in ([], ["64"], ["pointers"]):
        raise SystemExit("usage: python3 tools/probe_attention_tiles.py [64 | pointers]")
    raise SystemExit(main(tall_64=sys.argv[1:] == ["64"], pointers=sys.argv[1:] == ["pointers"]))
