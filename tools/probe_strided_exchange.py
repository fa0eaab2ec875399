"""Path B's exchange against its two-kernel split, and float32 row packing: a GPU diagnostic.

    python3 tools/probe_strided_exchange.py

1. Transposed views of 2^26 elements (float16 and float32; softmax rows 1024 to 32768 long):
   the copy ceiling, the launcher's default, the two-kernel split (exchange=False) and the
   one-kernel exchange at several slice shapes (block_r positions x block_i rows, warps), each
   as a fraction of the copy and checked against torch.softmax in float32.
2. Contiguous float32 rows of 256 and 512: torch.softmax, the default and other rows-per-program
   and warp counts, as a ratio to torch.softmax.
Graph timing, every variant of one problem timed in the same rounds. Prints one line per
variant; a diagnostic, not evidence (benchmarks/results/diagnostics/ keeps its output).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools._timing import graph_medians_us  # noqa: E402

ELEMENTS = 1 << 26
EXCHANGE_SHAPES = ((256, 32, 4), (512, 32, 8), (512, 16, 4), (1024, 16, 8), (256, 64, 8),
                   (128, 64, 4))


def _max_err(out, x):
    import torch
    return (out.float() - torch.softmax(x.float(), dim=-1)).abs().max().item()


def transposed(dtypes=("float16", "float32"), widths=(1024, 2048, 4096, 8192, 16384, 32768)):
    import torch
    from benchmarks import harness
    from references import strided_softmax as ss

    plan = harness.PLANS["sweep"]
    for dtype in dtypes:
        for width in widths:
            x = torch.randn(width, ELEMENTS // width, device="cuda",
                            dtype=getattr(torch, dtype)).t()  # (rows, width), stride (1, rows)
            buf = x.t().contiguous()
            calls = {"copy": lambda: buf.clone(), "default": lambda: ss.softmax(x)}
            calls["split (exchange=False)"] = lambda: ss.softmax(x, exchange=False)
            for br, bi, w in EXCHANGE_SHAPES:
                knobs = dict(exchange=True, block_r=br, block_i=bi, num_warps=w)
                try:
                    ss.plan(x, **knobs)
                except ValueError:
                    continue
                calls[f"exchange {br}x{bi} {w}w"] = lambda k=knobs: ss.softmax(x, **k)
            print(f"\n{x.shape[0]} x {width} {dtype} transposed: default plan {ss.plan(x)}")
            errs = {k: (_max_err(f(), x) if k != "copy" else 0.0) for k, f in calls.items()}
            times = graph_medians_us(list(calls.values()), plan)
            copy = times[0]
            for (label, _), us in zip(calls.items(), times, strict=True):
                print(f"   {label:32s} {us:8.1f} us   {copy / us:5.2f} of copy   "
                      f"max|err| {errs[label]:.1e}")


def contiguous_fp32(widths=(256, 512)):
    import torch
    from benchmarks import harness
    from references import strided_softmax as ss

    plan = harness.PLANS["sweep"]
    for width in widths:
        x = torch.randn(ELEMENTS // width, width, device="cuda", dtype=torch.float32)
        calls = {"torch.softmax": lambda: torch.softmax(x, dim=-1), "copy": lambda: x.clone(),
                 "default": lambda: ss.softmax(x)}
        for bi in (2, 4, 8, 16, 32):
            for w in (1, 2, 4, 8):
                if bi * width // (32 * w) < 4:
                    continue  # fewer than 4 elements per thread: not a 128-bit access
                knobs = dict(block_i=bi, num_warps=w)
                calls[f"block_i={bi} {w}w"] = lambda k=knobs: ss.softmax(x, **k)
        print(f"\n{x.shape[0]} x {width} float32 contiguous: default plan {ss.plan(x)}")
        times = graph_medians_us(list(calls.values()), plan)
        base = times[0]
        for label, us in zip(calls, times, strict=True):
            print(f"   {label:32s} {us:8.1f} us   {base / us:5.3f}x torch.softmax")


def main() -> int:
    import torch
    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 2
    transposed()
    contiguous_fp32()
    return 0


if __name__ == "__main__":
    sys.exit(main())
