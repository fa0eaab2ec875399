"""More programs per SM for attention at d = 64 by capping registers. A diagnostic.

    python3 tools/probe_attention_occupancy.py

The launch knob `maxnreg` caps the registers per thread (its outputs in diagnostics/ were
taken with a module switch that became the knob). The 128 x 64 tile over 8 warps takes 107
registers per thread: two programs (four warpgroups) per SM. Capped at 80 it spills 240 bytes
per thread but three fit (six warpgroups); the 64 x 64 tile over 4 warps with 2 stages (40 KiB
of shared memory, TMA loads) capped at 96 registers does not spill and five fit. d = 64, bf16,
16 heads of 4096 and 64 of 8192 with and without a causal mask, the Triton kernel only (a
tile knob keeps the warp-specialized path out), next to SDPA-cuDNN, graph timing.

    python3 tools/probe_attention_occupancy.py --grids

The launcher default against the five-per-SM tile on grids of 1024 to 8192 programs of 64
rows, both masks: where default_config's `_FIVE_PER_SM_PROGRAMS` comes from.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools._timing import attention_problems, time_attention_against_cudnn  # noqa: E402

VARIANTS = [  # (label, knobs, registers cap)
    ("128x64/8w/3s", dict(block_m=128, block_n=64, num_warps=8, num_stages=3), None),
    ("128x64/8w/3s maxnreg 80", dict(block_m=128, block_n=64, num_warps=8, num_stages=3), 80),
    ("64x64/4w/3s", dict(block_m=64, block_n=64, num_warps=4, num_stages=3), None),
    ("64x64/4w/2s", dict(block_m=64, block_n=64, num_warps=4, num_stages=2), None),
    ("64x64/4w/2s maxnreg 96", dict(block_m=64, block_n=64, num_warps=4, num_stages=2,
                                    tma=True), 96),
    ("64x64/4w/3s maxnreg 96", dict(block_m=64, block_n=64, num_warps=4, num_stages=3,
                                    tma=True), 96),
]


def grids_probe(plan) -> None:
    """--grids: the launcher default against 64 x 64 / 4 warps / 2 stages at 96 registers (five
    programs per SM) on grids of 1024-8192 programs of 64 rows, both masks."""
    import torch

    from references._gpu import sm_count

    slots = 5 * sm_count(0)
    shapes = [(16, 4096), (32, 4096), (64, 4096), (8, 8192), (16, 8192), (32, 8192),
              (64, 8192), (4, 16384), (8, 16384), (128, 4096), (32, 16384)]
    five = dict(block_m=64, block_n=64, num_warps=4, num_stages=2, tma=True, maxnreg=96)
    for heads, n, d, causal, q, k, v, flops in attention_problems(shapes, dims=(64,)):
        programs = heads * n // 64
        time_attention_against_cudnn(
            f"H={heads} N={n} d={d} causal={causal}: {programs} programs of 64 rows = "
            f"{programs / slots:.2f} waves of {slots}", q, k, v, causal, flops,
            {"launcher default": {}, "64x64/4w/2s maxnreg 96": five}, plan, digits=3)
        del q, k, v
        torch.cuda.empty_cache()


def main() -> int:
    import torch

    from benchmarks import harness

    if not torch.cuda.is_available():
        print("probe_attention_occupancy times kernels on a GPU; none is visible here")
        return 2
    plan = harness.PLANS["sweep"]
    if "--grids" in sys.argv[1:]:
        grids_probe(plan)
        return 0
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, graph timing, "
          f"{plan.samples} samples, bf16, d = 64")
    for heads, n, d, causal, q, k, v, flops in attention_problems([(16, 4096), (64, 8192)],
                                                                   dims=(64,)):
        variants = {"launcher default": {}} | {label: dict(knobs, maxnreg=cap)
                                               for label, knobs, cap in VARIANTS}
        time_attention_against_cudnn(f"H={heads} N={n} d={d} causal={causal}:", q, k, v,
                                     causal, flops, variants, plan, digits=3)
    return 0


if __name__ == "__main__":
    sys.exit(main())
