"""Softmax across a transposed view in bands that L2 holds: a diagnostic for issue 3.

    python3 tools/probe_strided_banded.py          # a GPU: check and time the variants

The exchange kernels keep each slice on chip (registers, then shared memory) from its read to
its write, so at most about 25 MiB of the tensor can be between the two at any time, and the
slices of one strip wait for each other. This probe keeps nothing on chip. A persistent grid
of P co-resident programs (a cooperative launch) walks the work in bands of P units; a unit is
a (BLOCK_I rows) x (slice_len positions) piece of one strip. For each band:
  A. statistics: each program reads its unit once from memory, chunk by chunk, keeping an
     online (max, sum) per row, and publishes it. The last unit of a strip to arrive merges
     the strip's partials into one (M, S) per row.
  B. output: after every program has finished A for this band *and the next one* (a strip may
     end in the next band), each program reads its unit again, computes exp(x - M) / S and
     stores it along the output's rows.
A(b + 1) runs before B(b), so the wait for the band's statistics has a band of reads behind
it, and the second read of a unit comes one band (P units, a few MiB) after its first: from
L2, if L2 keeps it. Three transfers to DRAM at worst, two if L2 holds two bands.
"""

from __future__ import annotations

import sys
from pathlib import Path

import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def _unit(unit, n_r, slice_len, SPLITS):
    strip = unit // SPLITS
    r_begin = (unit % SPLITS) * slice_len
    return strip, unit % SPLITS, r_begin, tl.minimum(r_begin + slice_len, n_r)


@triton.jit
def _band_stats(x_ptr, stats_ptr, final_ptr, arrivals_ptr, done_ptr, band, n_units, n_i, n_r,
                stride_xi, stride_xr, slice_len, SPLITS, BLOCK_I: tl.constexpr,
                BLOCK_R: tl.constexpr, MERGE: tl.constexpr, EVICT: tl.constexpr):
    """Phase A of one band for this program: its unit's (max, sum) per row; the strip's last
    unit to arrive merges all of them into final_ptr. Then count this program in for the band."""
    unit = band * tl.num_programs(0) + tl.program_id(0)
    if unit < n_units:
        strip, slice_id, r_begin, r_end = _unit(unit, n_r, slice_len, SPLITS)
        i = strip.to(tl.int64) * BLOCK_I + tl.arange(0, BLOCK_I)
        i_ok = i < n_i
        m = tl.full([BLOCK_I], -float("inf"), tl.float32)
        s = tl.zeros([BLOCK_I], tl.float32)
        for r0 in range(r_begin, r_end, BLOCK_R):
            r = r0 + tl.arange(0, BLOCK_R).to(tl.int64)
            x = tl.load(x_ptr + i[None, :] * stride_xi + r[:, None] * stride_xr,
                        mask=i_ok[None, :] & (r < r_end)[:, None], other=-float("inf"),
                        eviction_policy=EVICT).to(tl.float32)
            m_new = tl.maximum(m, tl.max(x, axis=0))
            shift = tl.where(m_new == -float("inf"), 0.0, m_new)
            s = s * tl.exp2((m - shift) * LOG2E) + \
                tl.sum(tl.exp2((x - shift[None, :]) * LOG2E), axis=0)
            m = m_new
        tl.store(stats_ptr + slice_id * n_i + i, m, mask=i_ok)
        tl.store(stats_ptr + (SPLITS + slice_id) * n_i + i, s, mask=i_ok)
        tl.debug_barrier()
        if tl.atomic_add(arrivals_ptr + strip, 1, sem="acq_rel") == SPLITS - 1:
            # The merge, MERGE partials at a time (an online merge: few registers).
            m_all = tl.full([BLOCK_I], -float("inf"), tl.float32)
            s_all = tl.zeros([BLOCK_I], tl.float32)
            for k0 in range(0, SPLITS, MERGE):
                k = k0 + tl.arange(0, MERGE)[:, None]
                ok = (k < SPLITS) & i_ok[None, :]
                m_k = tl.load(stats_ptr + k * n_i + i[None, :], mask=ok, other=-float("inf"),
                              cache_modifier=".cg")
                s_k = tl.load(stats_ptr + (SPLITS + k) * n_i + i[None, :], mask=ok, other=0.0,
                              cache_modifier=".cg")
                m_new = tl.maximum(m_all, tl.max(m_k, axis=0))
                shift = tl.where(m_new == -float("inf"), 0.0, m_new)
                s_all = s_all * tl.exp2((m_all - shift) * LOG2E) + \
                    tl.sum(s_k * tl.exp2((m_k - shift[None, :]) * LOG2E), axis=0)
                m_all = m_new
            tl.store(final_ptr + i, m_all, mask=i_ok)
            tl.store(final_ptr + n_i + i, s_all, mask=i_ok)
    tl.debug_barrier()
    tl.atomic_add(done_ptr + band, 1, sem="release")


@triton.jit
def _band_output(x_ptr, out_ptr, final_ptr, band, n_units, n_i, n_r, stride_xi, stride_xr,
                 stride_oi, stride_or, slice_len, SPLITS, BLOCK_I: tl.constexpr,
                 BLOCK_R: tl.constexpr):
    """Phase B of one band for this program: its unit again, normalised and stored."""
    unit = band * tl.num_programs(0) + tl.program_id(0)
    if unit < n_units:
        strip, slice_id, r_begin, r_end = _unit(unit, n_r, slice_len, SPLITS)
        i = strip.to(tl.int64) * BLOCK_I + tl.arange(0, BLOCK_I)
        i_ok = i < n_i
        m_all = tl.load(final_ptr + i, mask=i_ok, other=0.0, cache_modifier=".cg")
        inv_s = 1.0 / tl.load(final_ptr + n_i + i, mask=i_ok, other=1.0, cache_modifier=".cg")
        for r0 in range(r_begin, r_end, BLOCK_R):
            r = r0 + tl.arange(0, BLOCK_R).to(tl.int64)
            keep = i_ok[None, :] & (r < r_end)[:, None]
            x = tl.load(x_ptr + i[None, :] * stride_xi + r[:, None] * stride_xr, mask=keep,
                        other=0.0, eviction_policy="evict_first").to(tl.float32)
            y = tl.exp2((x - m_all[None, :]) * LOG2E) * inv_s[None, :]
            tl.store(out_ptr + i[None, :] * stride_oi + r[:, None] * stride_or,
                     y.to(out_ptr.dtype.element_ty), mask=keep)


@triton.jit
def banded_softmax_kernel(x_ptr, out_ptr, stats_ptr, final_ptr, arrivals_ptr, done_ptr,
                          n_i, n_r, stride_xi: tl.constexpr, stride_xr, stride_oi,
                          stride_or: tl.constexpr,  # constexprs: Triton 3.6 does not
                          # specialize a stride of 1, and these two are 1 (see launch)
                          n_units, n_bands, slice_len, SPLITS,
                          BLOCK_I: tl.constexpr, BLOCK_R: tl.constexpr, MERGE: tl.constexpr,
                          EVICT: tl.constexpr):
    programs = tl.num_programs(0)
    _band_stats(x_ptr, stats_ptr, final_ptr, arrivals_ptr, done_ptr, 0, n_units, n_i, n_r,
                stride_xi, stride_xr, slice_len, SPLITS, BLOCK_I, BLOCK_R, MERGE, EVICT)
    for band in range(n_bands):
        if band + 1 < n_bands:
            _band_stats(x_ptr, stats_ptr, final_ptr, arrivals_ptr, done_ptr, band + 1,
                        n_units, n_i, n_r, stride_xi, stride_xr, slice_len, SPLITS, BLOCK_I,
                        BLOCK_R, MERGE, EVICT)
        # Every program has finished A for band + 1 (so for band too): every strip that band
        # touches is merged. (A program counts in for a band only after the one before.)
        last = tl.minimum(band + 1, n_bands - 1)
        seen = tl.atomic_add(done_ptr + last, 0, sem="acquire")
        while seen < programs:
            seen = tl.atomic_add(done_ptr + last, 0, sem="acquire")
        _band_output(x_ptr, out_ptr, final_ptr, band, n_units, n_i, n_r, stride_xi, stride_xr,
                     stride_oi, stride_or, slice_len, SPLITS, BLOCK_I, BLOCK_R)


def max_registers(per_sm: int, warps: int) -> int:
    """Registers a thread may take for per_sm programs to fit an SM (ptxas takes up to 255)."""
    return min(255, 65536 // (per_sm * 32 * warps) // 8 * 8)


def launch(x, block_i: int, block_r: int, slice_len: int, per_sm: int, warps: int,
           evict: str = "evict_last"):
    """softmax(x, dim=-1) of a 2-D view whose rows are strided (x.stride(0) == 1 expected)."""
    import torch

    from references import strided_softmax as ss

    n_i, n_r = x.shape  # softmax along dim 1: rows are I, positions are R
    stride_xi, stride_xr = x.stride()
    if stride_xi != 1:
        raise ValueError("the banded probe wants a transposed view (unit stride across rows)")
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    splits = ss.cdiv(n_r, slice_len)
    strips = ss.cdiv(n_i, block_i)
    n_units = strips * splits
    programs = min(n_units, per_sm * ss.sm_count(x.device.index or 0))
    if splits > programs:
        raise ValueError(f"{splits} units per strip need at least as many programs")
    n_bands = ss.cdiv(n_units, programs)
    stats = torch.empty((2, splits, n_i), dtype=torch.float32, device=x.device)
    final = torch.empty((2, n_i), dtype=torch.float32, device=x.device)
    arrivals = torch.zeros(strips, dtype=torch.int32, device=x.device)
    done = torch.zeros(n_bands, dtype=torch.int32, device=x.device)
    banded_softmax_kernel[(programs,)](
        x, out, stats, final, arrivals, done, n_i, n_r, stride_xi, stride_xr, out.stride(0),
        out.stride(1), n_units, n_bands, slice_len, splits, BLOCK_I=block_i, BLOCK_R=block_r,
        MERGE=16, EVICT=evict, num_warps=warps, launch_cooperative_grid=True,
        maxnreg=max_registers(per_sm, warps))
    return out


# (BLOCK_I rows, BLOCK_R positions a chunk, slice_len positions a unit, programs per SM, warps)
VARIANTS = ((64, 32, 256, 4, 4), (64, 32, 512, 4, 4), (64, 32, 512, 2, 4), (32, 128, 512, 4, 4),
            (32, 64, 512, 4, 4), (32, 128, 1024, 4, 4))
SHAPES = ((4096, 16384), (8192, 8192), (16384, 4096), (32768, 2048))  # (width, rows): 2^26


def band_mib(variant) -> float:
    from references import strided_softmax as ss

    block_i, _, slice_len, per_sm, _ = variant
    return per_sm * ss.sm_count(0) * block_i * slice_len * 2 / 2**20


def time_all() -> int:
    from tools._timing import time_transposed_softmax

    def variants_for(width: int):
        return [(f"banded {bi} x {br} chunks, units of {sl}, {per} per SM, {w} warps, "
                 f"{evict or 'no hint'} (bands of {band_mib(variant):.1f} MiB at 16 bits)",
                 lambda x, variant=variant, evict=evict: launch(x, *variant, evict=evict))
                for variant in VARIANTS for evict in ("evict_last", "")
                for bi, br, sl, per, w in [variant]]

    time_transposed_softmax(SHAPES, variants_for)
    return 0


if __name__ == "__main__":
    sys.exit(time_all())
