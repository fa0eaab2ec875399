"""The Hopper path at d = 64 without a mask, two programs per SM: measured, it did not pay.

    git checkout 62353a0 -- references/_attention_hopper.py   # the switch lives there
    python3 tools/probe_attention_ws64.py

The warp-specialized kernel (references/_attention_hopper.py) runs one 128-row program per SM
(12 warps at 168 registers, consumers raised to 232), so at d = 64 it has two consumer
warpgroups per SM where the Triton kernel runs two programs of 8 warps: four warpgroups. At
d = 64 with 64-key steps a consumer needs far fewer registers (S 32, P 16, O 32 per thread), so
two programs fit an SM at 80 registers per thread at launch (12 warps x 32 x 80 = half the
register file), the loader dropping to 24 and the consumers sharing the rest (about 108 each).
This checks each variant (module switch TILE_OVERRIDE, for calls without a mask) against a
float64 reference on ragged shapes, then times it next to SDPA-cuDNN, the Triton kernel and
the Hopper path's own tile in interleaved graph-timing rounds. A diagnostic, not evidence.

Measured (diagnostics/probe-attention-ws64-*): right everywhere, but 0.84x-0.86x cuDNN against
the Hopper path's own tile's 0.91x-0.92x and the Triton kernel's 0.95x-0.96x (16 heads of
4096, 32 of 8192, 4 of 16384), whatever the stages or the split of registers between the two
consumers (both spill 24-32 bytes at about 108 registers). Commit 62353a0 had the switch; the
next removed it.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools._timing import graph_medians_us, sdpa_cudnn  # noqa: E402

VARIANTS = {  # label -> TILE_OVERRIDE of references/_attention_hopper.py
    "ws 64-key c104 2s": dict(block_n=64, stages=2, maxnreg=80, consumer_regs=104),
    "ws 64-key c112 2s": dict(block_n=64, stages=2, maxnreg=80, consumer_regs=112),
    "ws 64-key c104 3s": dict(block_n=64, stages=3, maxnreg=80, consumer_regs=104),
    "ws 64-key c104 4s": dict(block_n=64, stages=4, maxnreg=80, consumer_regs=104),
}
SHAPES = [(16, 4096), (32, 8192), (4, 16384)]


def main() -> int:
    import torch

    from benchmarks import harness
    from references import _attention_hopper as hopper
    from references import streaming_attention as sa

    if not torch.cuda.is_available():
        print("probe_attention_ws64 times kernels on a GPU; none is visible here")
        return 2
    if not hasattr(hopper, "TILE_OVERRIDE"):
        print("the switch this probe sets was removed after it ran: check out "
              "references/_attention_hopper.py of commit 62353a0 first (see the docstring)")
        return 2
    plan = harness.PLANS["sweep"]

    def ours(q, k, v, override, **knobs):
        def run():
            hopper.TILE_OVERRIDE = override  # read at launch: a graph keeps what it captured
            try:
                return sa.attention_heads(q, k, v, **knobs)
            finally:
                hopper.TILE_OVERRIDE = None
        return run

    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, graph timing, "
          f"{plan.samples} samples, d = 64, no mask")
    torch.manual_seed(0)
    for heads, n in ((3, 1000), (2, 257), (1, 64), (1, 17)):
        for dtype in (torch.bfloat16, torch.float16):
            q, k, v = (torch.randn(heads, n, 64, device="cuda", dtype=dtype) for _ in range(3))
            ref = torch.softmax((q.double() @ k.double().transpose(1, 2)) / 8, -1) @ v.double()
            errs = []
            for label, override in [("ws as is", None)] + list(VARIANTS.items()):
                out = ours(q, k, v, override, warp_specialize=True)().double()
                errs.append(f"{label}: {(out - ref).abs().max().item():.1e}")
            print(f"H={heads} N={n} {str(dtype)[6:]} max |err| vs float64: " + ", ".join(errs),
                  flush=True)
    for heads, n in SHAPES:
        q, k, v = (torch.randn(heads, n, 64, device="cuda", dtype=torch.bfloat16)
                   for _ in range(3))
        flops = 4 * heads * n * n * 64
        cudnn = sdpa_cudnn(q, k, v, False)
        calls = {"sdpa-cudnn": cudnn,
                 "triton kernel": ours(q, k, v, None, warp_specialize=False),
                 "ws as is (128-key)": ours(q, k, v, None, warp_specialize=True)}
        calls |= {label: ours(q, k, v, o, warp_specialize=True) for label, o in VARIANTS.items()}
        expected = cudnn().float()
        for label in list(calls)[1:]:
            err = (calls[label]().float() - expected).abs().max().item()
            if err > 0.05:
                print(f"   {label}: max |diff| vs cuDNN {err:.2e}: WRONG, not timed")
                del calls[label]
        times = graph_medians_us(list(calls.values()), plan)
        print(f"H={heads} N={n} bf16:", flush=True)
        for label, us in zip(calls, times, strict=True):
            print(f"   {label:20s} {us:8.1f} us  {flops / us / 1e6:5.0f} TFLOP/s  "
                  f"{times[0] / us:.3f}x cudnn", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
