"""Attention in Gluon with explicit asynchronous warpgroup MMAs: the variants
tools/probe_attention_wgmma.py compiles and times (a diagnostic; the reference does not use them).
(a), (c), (e), (h), (w) are here; (b), (d), (f), (g) are in git history at 4e44817."""
