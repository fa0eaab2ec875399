"""Does TMA take a stride of 0? A diagnostic for attention's TMA precondition.

    python3 tools/probe_tma_stride0.py      # a GPU of compute capability 9.0

`_attention_hopper.tma_stride_problem` refuses a stride of 0 (k and v expand()ed over the
heads, as multi-query attention shares them), so such views run through plain pointers. This
lifts that one clause and runs k, v of head stride 0 through each TMA path (the Triton kernel
with descriptors built on the host, the same built by each program, and the Hopper path),
comparing with torch's SDPA on the same inputs made dense: it says whether the refusal is
needed or only cautious. Nothing is timed.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    import torch
    import torch.nn.functional as F

    from references import _attention_hopper as hopper
    from references import streaming_attention as sa

    def without_stride0_clause(t):  # the rule as it was: 0 is a multiple of 16 bytes
        size = t.element_size()
        if t.stride(-1) != 1 or any((s * size) % 16 for s in t.stride()[:-1]) \
                or t.data_ptr() % 16:
            return "not TMA's layout"
        return None

    hopper.tma_stride_problem = without_stride0_clause
    torch.manual_seed(0)
    for heads, n_ctx, d in ((2, 300, 64), (16, 2048, 128)):
        q = torch.randn(heads, n_ctx, d, device="cuda", dtype=torch.bfloat16)
        k, v = (torch.randn(1, n_ctx, d, device="cuda", dtype=torch.bfloat16)
                .expand(heads, n_ctx, d) for _ in range(2))
        expected = F.scaled_dot_product_attention(q, k.contiguous(), v.contiguous())
        runs = {"pointers": dict(tma=False, warp_specialize=False),
                "Triton TMA, host descriptors": dict(tma=True, warp_specialize=False, host=True),
                "Triton TMA, in-kernel descriptors": dict(tma=True, warp_specialize=False,
                                                          host=False),
                "Hopper path": dict(warp_specialize=True)}
        for label, knobs in runs.items():
            host = knobs.pop("host", None)
            sa.DESCRIPTORS_ON_HOST = host
            try:
                out = sa.attention_heads(q, k, v, **knobs)
                torch.cuda.synchronize()
                err = (out.float() - expected.float()).abs().max().item()
                verdict = f"max|err| {err:.2e} ({'right' if err < 2e-2 else 'WRONG'})"
            except Exception as exc:  # noqa: BLE001 - the finding is which error, if any
                verdict = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
                torch.cuda.synchronize()
            print(f"H={heads} N={n_ctx} d={d}, k, v strides {tuple(k.stride())}: {label}: "
                  f"{verdict}", flush=True)
    sa.DESCRIPTORS_ON_HOST = None
    return 0


if __name__ == "__main__":
    sys.exit(main())
