"""Two ways to take work off attention's softmax at d = 64, measured: neither paid.

    git checkout 5dfa4de -- references/streaming_attention.py   # the switches live there
    python3 tools/probe_attention_exp2.py

At d = 64 a key block's exponentials keep the special-function unit (16 per clock per SM) as
busy as the block's two products keep the tensor cores, by the published rates. Commit 5dfa4de
gave the reference two module switches, removed in the next commit because both lost
(benchmarks/results/diagnostics/probe-attention-exp2-*):
- POLY_EXP2_OF_4 = 1 or 2: that many of every 4 exponentials of the unmasked key blocks
  computed on the FMA pipes instead (FlashAttention-4's trick on Blackwell): 2^x = 2^floor(x)
  * 2^f, 2^f a fitted cubic (relative error 8.6e-5), floor(x) from adding 1.5 * 2^23 rounded
  toward -inf, 2^floor(x) an integer add to the exponent bits; 8 instructions per element in
  place of one MUFU.EX2. 2-10% slower at 1 of 4, 8-23% at 2 of 4.
- LAZY_RESCALE_ABOVE = 8: keep the old running max, and skip rescaling acc and l, until some
  row's max grew by more than 2^8 (the block decides together, so each step adds a reduction
  across the program's warps). 10-15% slower.
So the softmax is bound by instruction issue, not by the special-function unit: more
instructions per element cost time in proportion, whichever unit runs them.
For the Triton kernel's grids (d = 64, bf16 and fp16, with and without a causal mask) this
checks each variant against a float64 reference (max error, next to the hardware exp2's), then
times it next to SDPA-cuDNN in interleaved graph-timing rounds (tools/_timing.py). A
diagnostic, not evidence.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools._timing import graph_medians_us, sdpa_cudnn  # noqa: E402

VARIANTS = {  # label -> (POLY_EXP2_OF_4, LAZY_RESCALE_ABOVE)
    "as is": (0, 0.0), "poly 1/4": (1, 0.0), "lazy 8": (0, 8.0), "lazy 8 + poly 1/4": (1, 8.0),
}
SHAPES = [(1, 16384), (16, 4096), (16, 8192)]


def main() -> int:
    import torch

    from benchmarks import harness
    from references import streaming_attention as sa

    if not torch.cuda.is_available():
        print("probe_attention_exp2 times kernels on a GPU; none is visible here")
        return 2
    if not hasattr(sa, "LAZY_RESCALE_ABOVE"):
        print("the switches this probe sets were removed after it ran: check out "
              "references/streaming_attention.py of commit 5dfa4de first (see the docstring)")
        return 2
    plan = harness.PLANS["sweep"]

    def ours(q, k, v, causal, variant, **knobs):
        poly, lazy = VARIANTS[variant]

        def run():
            # Module switches, read at launch: a graph captures the variant it launched.
            sa.POLY_EXP2_OF_4, sa.LAZY_RESCALE_ABOVE = poly, lazy
            try:
                return sa.attention_heads(q, k, v, causal=causal, **knobs)
            finally:
                sa.POLY_EXP2_OF_4, sa.LAZY_RESCALE_ABOVE = 0, 0.0
        return run

    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, graph timing, "
          f"{plan.samples} samples, d = 64")
    # Accuracy: a small problem against float64, with ordinary and with large logits.
    torch.manual_seed(0)
    for dtype in (torch.float16, torch.bfloat16):
        for scale in (None, 2.0):
            q, k, v = (torch.randn(2, 1000, 64, device="cuda", dtype=dtype) for _ in range(3))
            s = (q.double() @ k.double().transpose(1, 2)) * (scale or 64 ** -0.5)
            ref = torch.softmax(s, -1) @ v.double()
            errs = []
            for variant in VARIANTS:
                out = ours(q, k, v, False, variant, scale=scale)()
                errs.append(f"{variant}: {(out.double() - ref).abs().max().item():.2e}")
            print(f"max |err| vs float64, {str(dtype)[6:]}, scale {scale or 'd^-0.5'}: "
                  + ", ".join(errs), flush=True)
    for dtype in (torch.bfloat16,):
        for heads, n in SHAPES:
            for causal in (False, True):
                q, k, v = (torch.randn(heads, n, 64, device="cuda", dtype=dtype)
                           for _ in range(3))
                flops = 4 * heads * n * n * 64 // (2 if causal else 1)
                cudnn = sdpa_cudnn(q, k, v, causal)
                path = "Triton kernel"
                if sa._warp_specialize_pays(heads, n, 64, causal, q):
                    path = "Hopper path by default: timed with warp_specialize=False"
                calls = {"sdpa-cudnn": cudnn}
                expected = cudnn().float()
                for variant in VARIANTS:
                    call = ours(q, k, v, causal, variant, warp_specialize=False)
                    err = (call().float() - expected).abs().max().item()
                    if err > 0.05:
                        print(f"   {variant}: max |diff| vs cuDNN {err:.2e}: WRONG, not timed")
                        continue
                    calls[variant] = call
                times = graph_medians_us(list(calls.values()), plan)
                print(f"H={heads} N={n} causal={causal} {str(dtype)[6:]} ({path}):", flush=True)
                for label, us in zip(calls, times, strict=True):
                    print(f"   {label:18s} {us:8.1f} us  {flops / us / 1e6:5.0f} TFLOP/s  "
                          f"{times[0] / us:.3f}x cudnn", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
