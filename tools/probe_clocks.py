"""Clock and power while we and the baseline run: is the baseline's edge a faster clock?

    python3 tools/probe_clocks.py

Where we trail the library by a few percent on a problem that fills the GPU (GEMM at 4096^3
against cuBLAS, attention at d = 64 against cuDNN), one candidate cause is not in either
kernel's instructions: an H200 runs near its power limit on dense tensor-core work and lowers its
SM clock to stay there, so the kernel that draws more power per FLOP runs at a lower clock. This
runs each kernel back to back for a few seconds while `nvidia-smi` samples the SM clock and the
board power every 20 ms, alternating ours and the baseline three times, and prints per run the
median clock, power and the throughput reached in that same window. A diagnostic, not evidence.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SECONDS = 3.0


def _sampled_run(fn, flops_per_call: float):
    """Call fn back to back for SECONDS while nvidia-smi samples; (calls/s, TFLOP/s, median
    SM MHz, median W, median memory MHz)."""
    import statistics

    import torch

    smi = subprocess.Popen(
        ["nvidia-smi", "--query-gpu=clocks.sm,power.draw,clocks.mem",
         "--format=csv,noheader,nounits", "-lms", "20"],
        stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.3)  # let the sampler start
        calls = 0
        torch.cuda.synchronize()
        start = time.perf_counter()
        while time.perf_counter() - start < SECONDS:
            for _ in range(10):
                fn()
            calls += 10
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
    finally:
        smi.terminate()
        out, _ = smi.communicate(timeout=10)
    rows = [line.split(",") for line in out.strip().splitlines() if line.count(",") == 2]
    # Drop the samples from before the run started and the first half second of it.
    rows = rows[int(0.8 / 0.02):] or rows
    sm = statistics.median(float(r[0]) for r in rows)
    watts = statistics.median(float(r[1]) for r in rows)
    mem = statistics.median(float(r[2]) for r in rows)
    return calls / elapsed, calls * flops_per_call / elapsed / 1e12, sm, watts, mem


def main() -> int:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from references import fused_gemm as fg
    from references import streaming_attention as sa

    if not torch.cuda.is_available():
        print("probe_clocks runs kernels on a GPU; none is visible here")
        return 2
    try:
        subprocess.run(["nvidia-smi", "-L"], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"probe_clocks samples clocks with nvidia-smi, which did not run here: {exc}")
        return 2
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, {SECONDS} s per run, "
          f"nvidia-smi every 20 ms")
    problems = []
    for n in (4096, 8192):
        for dtype in (torch.bfloat16, torch.float16):
            a = torch.randn(n, n, device="cuda", dtype=dtype)
            b = torch.randn(n, n, device="cuda", dtype=dtype)
            bias = torch.randn(n, device="cuda", dtype=torch.float32)
            problems.append((f"GEMM {n}^3 {str(dtype)[6:]}", 2.0 * n ** 3,
                             {"ours (fused epilogue)": lambda a=a, b=b, bias=bias:
                              fg.gemm_bias_relu(a, b, bias),
                              "torch.mm (cuBLAS)": lambda a=a, b=b: a @ b}))
    for heads, n in ((16, 4096), (64, 8192)):
        q, k, v = (torch.randn(heads, n, 64, device="cuda", dtype=torch.bfloat16)
                   for _ in range(3))

        def cudnn(q=q, k=k, v=v):
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return F.scaled_dot_product_attention(q[None], k[None], v[None])

        problems.append((f"attention {heads} x {n}, d = 64, no mask, bf16",
                         4.0 * heads * n * n * 64,
                         {"ours": lambda q=q, k=k, v=v: sa.attention_heads(q, k, v),
                          "sdpa-cudnn": cudnn}))
    for label, flops, calls in problems:
        print(f"\n{label}", flush=True)
        for fn in calls.values():  # compile and warm up
            fn()
        for rnd in range(3):
            for name, fn in calls.items():
                per_s, tflops, sm, watts, mem = _sampled_run(fn, flops)
                print(f"   round {rnd}  {name:22s} {tflops:6.1f} TFLOP/s  SM {sm:6.0f} MHz  "
                      f"{watts:5.0f} W  memory {mem:5.0f} MHz", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
