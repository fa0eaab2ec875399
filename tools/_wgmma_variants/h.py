"""Variant (h) of Hopper attention in Gluon (tools/probe_attention_wgmma.py): (a) with one
side-effecting instruction (`nanosleep.u32 0`, inline assembly) just before the wait for P V.
ptxas does not move that wait above it, so the softmax's exponentials run while P V is on the
tensor cores. The kernel is (a)'s, compiled with NANOSLEEP_BEFORE_WAIT.

A diagnostic, not adopted: see the probe's docstring for what was measured.
"""

from tools._wgmma_variants.a import attention_wgmma_kernel

__all__ = ["CONSTEXPRS", "attention_wgmma_kernel"]

CONSTEXPRS = {"NANOSLEEP_BEFORE_WAIT": True}
