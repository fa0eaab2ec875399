"""Attention in Gluon with explicit asynchronous warpgroup MMAs: the variants
tools/probe_attention_wgmma.py compiles and times (a diagnostic; the reference does not use them)."""
