"""What the key splits' merge costs: attention's two kernels timed apart, by the profiler.

    python3 tools/probe_attention_merge.py

One head of 16384 at d = 64 without a mask is the attention goal's worst case (0.89x cuDNN when
this ran; 0.93x since split programs that long take 4 pipeline stages),
while grids that fill the GPU without splits reach 0.95x. A split call runs two kernels:
`attention_kernel` (each split's unnormalised state into a float32 workspace) and
`combine_splits_kernel` (the merge), and between them the GPU idles for a moment. Fusing the
merge into the first kernel (the last split of a row block to finish merges it) would save the
second kernel and the gap but not the workspace traffic. This measures what there is to save:
for split problems, bf16, the device time of each kernel per call (torch.profiler, 20 calls)
and the wall time of a call in a CUDA graph, next to SDPA-cuDNN. A diagnostic, not evidence.

    git checkout a31caff -- references/streaming_attention.py   # the switch lives there
    python3 tools/probe_attention_merge.py --in-kernel

times that fusion, which commit a31caff wrote behind a module switch (`_MERGE_IN_KERNEL`) and
the next commit removed: it lost on every split problem (diagnostics/
probe-attention-merge-in-kernel-*).
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools._timing import graph_medians_us, sdpa_cudnn  # noqa: E402

SHAPES = [(1, 16384, 64), (1, 16384, 128), (1, 8192, 64), (3, 16384, 64), (2, 16384, 64)]
CALLS = 20


def main() -> int:
    import torch
    from torch.profiler import ProfilerActivity, profile

    from benchmarks import harness
    from references import streaming_attention as sa

    if not torch.cuda.is_available():
        print("probe_attention_merge profiles kernels on a GPU; none is visible here")
        return 2
    plan = harness.PLANS["sweep"]
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, bf16, {CALLS} profiled "
          f"calls; graph timing {plan.samples} samples")
    for heads, n, d in SHAPES:
        for causal in (False, True):
            q, k, v = (torch.randn(heads, n, d, device="cuda", dtype=torch.bfloat16)
                       for _ in range(3))
            config = sa._config({}, d, q.dtype, causal, n, heads)
            splits = sa.kv_splits_for(heads, n, config["block_m"], causal, q)
            ours = lambda q=q, k=k, v=v, causal=causal: sa.attention_heads(  # noqa: E731
                q, k, v, causal=causal)
            cudnn = sdpa_cudnn(q, k, v, causal)
            ours()
            cudnn()
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(CALLS):
                    ours()
                torch.cuda.synchronize()
            per_kernel = defaultdict(float)
            for event in prof.events():
                if str(event.device_type).endswith("CUDA"):  # a kernel, not a host op
                    us = getattr(event, "device_time_total", None)
                    if us is None:
                        us = event.cuda_time_total
                    per_kernel[event.name] += us / CALLS
            graph_ours, graph_cudnn = graph_medians_us([ours, cudnn], plan)
            busy = sum(per_kernel.values())
            path = "Hopper path" if sa._warp_specialize_pays(heads, n, d, causal, q) else \
                f"kv_splits {splits}"
            print(f"H={heads} N={n} d={d} causal={causal} ({path}): call {graph_ours:7.1f} us "
                  f"in a graph (cuDNN {graph_cudnn:7.1f} us, {graph_cudnn / graph_ours:.3f}x); "
                  f"kernels {busy:7.1f} us busy, {graph_ours - busy:5.1f} us between them",
                  flush=True)
            for name, us in sorted(per_kernel.items(), key=lambda kv: -kv[1]):
                print(f"   {us:8.1f} us  {us / graph_ours:6.1%}  {name[:90]}", flush=True)
    return 0


# --in-kernel: the merge moved into the attention kernel, against the two kernels.
IN_KERNEL_SHAPES = [(1, 4096), (1, 8192), (1, 16384), (2, 4096), (4, 4096), (2, 8192),
                    (3, 16384)]


def split_problems(dtypes):
    """The attention_problems (both head dims, both masks) whose default launch splits keys on
    the Triton kernel (not the Hopper path), with that split count."""
    from references import streaming_attention as sa
    from tools._timing import attention_problems

    for dtype in dtypes:
        for heads, n, d, causal, q, k, v, flops in attention_problems(IN_KERNEL_SHAPES,
                                                                      dtype=dtype):
            if sa._warp_specialize_pays(heads, n, d, causal, q):
                continue
            config = sa._config({}, d, q.dtype, causal, n, heads)
            splits = sa.kv_splits_for(heads, n, config["block_m"], causal, q)
            if splits > 1:
                yield heads, n, d, causal, q, k, v, flops, splits


def in_kernel(sets: int = 2) -> int:
    """Each split problem, bf16 and fp16: the launcher's plan with the merge in the attention
    kernel (the last split of a row block to finish merges) and with the second kernel, next to
    SDPA-cuDNN, in `sets` separate sets of graph rounds."""
    import torch

    from benchmarks import harness
    from references import streaming_attention as sa
    from tools._timing import time_attention_against_cudnn

    def merged(in_kernel_, q, k, v, causal):
        def run():
            # A module switch read at launch: a graph captures the variant it launched.
            sa._MERGE_IN_KERNEL = in_kernel_
            try:
                return sa.attention_heads(q, k, v, causal=causal)
            finally:
                sa._MERGE_IN_KERNEL = True
        return run

    if not hasattr(sa, "_MERGE_IN_KERNEL"):
        print("the switch this mode sets was removed after it ran: check out "
              "references/streaming_attention.py of commit a31caff first (see the docstring)")
        return 2
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}; graph timing, "
          f"{harness.PLANS['sweep'].samples} samples, {sets} sets per problem")
    for heads, n, d, causal, q, k, v, flops, splits in split_problems(
            (torch.bfloat16, torch.float16)):
        for set_ in range(sets):
            time_attention_against_cudnn(
                f"H={heads} N={n} d={d} causal={causal} {str(q.dtype)[6:]} kv_splits {splits}, "
                f"set {set_ + 1}", q, k, v, causal, flops,
                {"merge in the kernel": merged(True, q, k, v, causal),
                 "merge in a second kernel": merged(False, q, k, v, causal)},
                harness.PLANS["sweep"], digits=3)
    return 0


if __name__ == "__main__":
    raise SystemExit(in_kernel() if sys.argv[1:] == ["--in-kernel"] else main())
