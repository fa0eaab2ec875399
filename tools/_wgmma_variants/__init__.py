"""Attention in Gluon with explicit asynchronous warpgroup MMAs: the variants
tools/probe_attention_wgmma.py compiles and times (a diagnostic). (a), (c), (e), (h), (v) and
(vn) are here; (b), (d), (f), (g) are in git history at 4e44817, (w) and (w3) at 9c0a88e, (p) at
5f1eca4, (r) at 3cc6e61, (u) at bc27e9e. (w), warp specialized, became the reference's Hopper
path: references/_attention_hopper.py."""
