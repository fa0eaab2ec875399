"""Variant (vn): (v) with its mask left out of the code (`launch(..., mask=False)`), to time
what the mask costs in (v)'s loop, where its run-time test compiles to selects that run on
every step (the loop is 715 instructions at d = 64 with it, 480 without). Right only without a causal
mask and for N a multiple of 128; tools/probe_attention_wgmma.py's `matching` drops its other
outputs untimed. What was timed was a full copy of (v) with the mask's `if` made `if False`
(git show 687c46a:tools/_wgmma_variants/vn.py); this switch removes the same code
(benchmarks/results/diagnostics/compile-attention-wgmma-vn-*)."""

from __future__ import annotations

from . import v

TILES = v.TILES


def launch(q, k, vv, out, causal, qk_scale):
    v.launch(q, k, vv, out, causal, qk_scale, mask=False)
