"""Tile shapes of strided softmax's shared-memory exchange on a GPU. A diagnostic.

    python3 tools/probe_strided_gluon.py

The exchange keeps each slice in shared memory (`softmax_across_exchange_smem_kernel`, Gluon;
lesson 1, section 5). This times it at several slice shapes (`smem=True` with block_r, block_i,
num_warps), next to the launcher's default and a device copy of the same bytes, on 128 MiB
transposed views of float16, bfloat16 and float32 rows of 4096 to 32768 (graph timing, every
variant in the same rounds), each output first compared with a float64 softmax. The defaults
`_SMEM_SHORT` and `_SMEM_LONG` come from its runs (benchmarks/results/diagnostics/).

    python3 tools/probe_strided_gluon.py --narrow

16-bit only, strips of 16 and 8 rows (VARIANTS_NARROW): longer slices for the same shared
memory, or half of it per program.

Earlier versions of this file held the kernel itself while it was being written, and a
persistent, double-buffered variant that was slower and not adopted; their outputs are kept
in diagnostics/ with the commit that produced them (`git show <commit>:tools/...`).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools._timing import graph_medians_us  # noqa: E402

VARIANTS = [dict(block_r=1024, block_i=32, num_warps=4), dict(block_r=512, block_i=64, num_warps=8),
            dict(block_r=512, block_i=32, num_warps=4), dict(block_r=256, block_i=64, num_warps=4),
            dict(block_r=1024, block_i=32, num_warps=8)]
SHAPES = ((4096, 16384), (8192, 8192), (16384, 4096), (32768, 2048))  # (width, rows): 2^26
# --narrow: strips of 16 and 8 rows (32- and 16-byte runs of 16-bit x per row): longer slices,
# so fewer per strip, or half the shared memory per program, so six programs per SM.
VARIANTS_NARROW = [dict(block_r=1024, block_i=16, num_warps=4), dict(block_r=1024, block_i=16,
                   num_warps=2), dict(block_r=2048, block_i=16, num_warps=4),
                   dict(block_r=2048, block_i=16, num_warps=8), dict(block_r=2048, block_i=8,
                   num_warps=2), dict(block_r=4096, block_i=8, num_warps=4)]


def main(argv: list[str]) -> int:
    import torch

    from benchmarks import harness
    from references import strided_softmax as ss

    plan = harness.PLANS["sweep"]
    narrow = "--narrow" in argv
    dtypes = (torch.float16, torch.bfloat16) if narrow else (torch.float16, torch.bfloat16,
                                                             torch.float32)
    for dtype in dtypes:
        for width, rows in SHAPES:
            x = torch.randn(width, rows, device="cuda", dtype=dtype).t()  # a transposed view
            expected = torch.softmax(x.double(), dim=-1)
            dst = torch.empty_like(x.t())
            p = ss.plan(x)
            calls = {"copy": lambda: dst.copy_(x.t()),
                     f"default smem={p.smem} block_r={p.block_r} block_i={p.block_i}":
                     lambda: ss.softmax(x)}
            for knobs in (VARIANTS_NARROW if narrow else VARIANTS):
                label = " ".join(f"{k}={v}" for k, v in knobs.items())
                try:
                    err = (ss.softmax(x, smem=True, **knobs).double() - expected).abs().max()
                except ValueError as exc:  # e.g. a slice over 64 KiB of float32: say so
                    print(f"   {label}: {exc}", flush=True)
                    continue
                calls[f"smem {label} max|err| {err.item():.1e}"] = \
                    lambda knobs=knobs: ss.softmax(x, smem=True, **knobs)
            medians = graph_medians_us(calls.values(), plan)
            print(f"\n{rows} x {width} {str(dtype)[6:]} transposed (graph timing)", flush=True)
            for label, us in zip(calls, medians, strict=True):
                print(f"   {us:8.1f} us  {medians[0] / us:5.2f} of copy  {label}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
