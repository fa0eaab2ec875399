"""Gluon's Hopper pieces, as the Gluon probes use them (tools/_wgmma_variants/,
tools/probe_gemm_pingpong.py). Where this Triton has no Gluon they are None, and so is every
kernel `gluon_jit` decorates: the probes' GPU modes then never run, and the tests that compile
them skip."""

from __future__ import annotations

try:
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import (
        fence_async_shared,
        mbarrier,
        tma,
        warpgroup_mma,
        warpgroup_mma_wait,
    )
except ImportError:
    gluon = gl = fence_async_shared = mbarrier = tma = warpgroup_mma = warpgroup_mma_wait = None

__all__ = ["fence_async_shared", "gl", "gluon", "gluon_jit", "mbarrier", "tma", "warpgroup_mma",
           "warpgroup_mma_wait"]


def gluon_jit(fn):
    """gluon.jit where this Triton has Gluon; otherwise None."""
    return gluon.jit(fn) if gluon is not None else None
