"""The strided softmax's exchange with its slice held in shared memory (Gluon). A diagnostic.

    python3 tools/probe_strided_gluon.py

Why: the exchange kernel (references/strided_softmax.py) keeps its slice in registers while it
waits for the other slices of its strip. Registers hold about 64 KiB of slices per SM, so a
transposed 16-bit tensor of 128 MiB goes through an SM in about 16 rounds, and each round's
wait (count in, read the others' statistics) is latency nobody hides: the bisection in
diagnostics/probe-strided-exchange-bisect-* measured 57 us of 137 us for it. Shared memory is
227 KiB per SM. Here the slice is copied into shared memory with cp.async (no registers held),
the statistics are computed from there, and after the exchange each chunk is read back,
normalised, transposed through the compiler's layout conversion and stored. Several such
programs fit one SM, so a round moves about three times the bytes for the same latency.

Gluon (triton.experimental.gluon) is Triton's lower-level dialect: layouts and shared memory
are explicit. It does not run under the interpreter.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402
from triton.experimental.gluon.language.nvidia.ampere import async_copy  # noqa: E402

LOG2E = gl.constexpr(1.4426950408889634)


@gluon.jit
def _load_slice(bufs, buf, ticket, x_ptr, n_i, n_r, stride_xr, n_slices,
                BLOCK_I: gl.constexpr, BLOCK_R: gl.constexpr, CHUNK_R: gl.constexpr,
                LOAD: gl.constexpr):
    """Start copying slice `ticket` into buffer `buf` of `bufs` (cp.async, one group)."""
    NCHUNK: gl.constexpr = BLOCK_R // CHUNK_R
    strip = (ticket // n_slices).to(gl.int64)
    r0 = (ticket % n_slices).to(gl.int64) * BLOCK_R
    i = strip * BLOCK_I + gl.arange(0, BLOCK_I, layout=gl.SliceLayout(0, LOAD)).to(gl.int64)
    rc = gl.arange(0, CHUNK_R, layout=gl.SliceLayout(1, LOAD)).to(gl.int64)
    for c in range(NCHUNK):
        r = r0 + c * CHUNK_R + rc
        async_copy.async_copy_global_to_shared(bufs.index(buf * NCHUNK + c),
                                               x_ptr + i[None, :] + r[:, None] * stride_xr,
                                               mask=(r < n_r)[:, None] & (i < n_i)[None, :])
    async_copy.commit_group()


@gluon.jit
def _publish(bufs, buf, ticket, stats_ptr, counters_ptr, n_i, n_r, n_slices,
             BLOCK_I: gl.constexpr, BLOCK_R: gl.constexpr, CHUNK_R: gl.constexpr,
             LOAD: gl.constexpr, EVEN_R: gl.constexpr):
    """The loaded slice's max and sum per row i, from shared memory, written to the workspace;
    then count the slice in. Elementwise over the chunks first, one reduction at the end."""
    NCHUNK: gl.constexpr = BLOCK_R // CHUNK_R
    strip = (ticket // n_slices).to(gl.int64)
    slice_id = (ticket % n_slices).to(gl.int64)
    r0 = slice_id * BLOCK_R
    rc = gl.arange(0, CHUNK_R, layout=gl.SliceLayout(1, LOAD))
    # The maxima in x's own dtype (two 16-bit values per instruction; max is exact in any).
    m2 = gl.full([CHUNK_R, BLOCK_I], -float("inf"), bufs.dtype, layout=LOAD)
    for c in range(NCHUNK):
        x = bufs.index(buf * NCHUNK + c).load(LOAD)
        if not EVEN_R:
            x = gl.where((r0 + c * CHUNK_R + rc < n_r)[:, None], x, -float("inf"))
        m2 = gl.maximum(m2, x).to(m2.dtype)  # bfloat16 maxima come back as float32
    m = gl.max(m2, axis=0).to(gl.float32)
    shift = gl.where(m == -float("inf"), 0.0, m)
    s2 = gl.zeros([CHUNK_R, BLOCK_I], gl.float32, layout=LOAD)
    for c in range(NCHUNK):
        x = bufs.index(buf * NCHUNK + c).load(LOAD).to(gl.float32)
        p = gl.exp2((x - shift[None, :]) * LOG2E)
        if not EVEN_R:
            p = gl.where((r0 + c * CHUNK_R + rc < n_r)[:, None], p, 0.0)
        s2 += p
    s = gl.sum(s2, axis=0)
    i = strip * BLOCK_I + gl.arange(0, BLOCK_I, layout=gl.SliceLayout(0, LOAD)).to(gl.int64)
    slot = slice_id * n_i + i
    gl.store(stats_ptr + slot, m, mask=i < n_i)
    gl.store(stats_ptr + n_slices * n_i + slot, s, mask=i < n_i)
    gl.thread_barrier()  # every thread's statistics are written before the count says so
    gl.atomic_add(counters_ptr + 1 + strip, 1, sem="release")


@gluon.jit
def _finish(bufs, buf, ticket, out_ptr, stats_ptr, counters_ptr, n_i, n_r, stride_oi,
            stride_or, n_slices, BLOCK_I: gl.constexpr, BLOCK_R: gl.constexpr,
            CHUNK_R: gl.constexpr, SLICES: gl.constexpr, LOAD: gl.constexpr,
            STORE: gl.constexpr, STATS: gl.constexpr):
    """Wait for every slice of the strip, merge their statistics, normalise the slice in
    `buf` chunk by chunk and store it, transposed through a layout conversion."""
    NCHUNK: gl.constexpr = BLOCK_R // CHUNK_R
    strip = (ticket // n_slices).to(gl.int64)
    r0 = (ticket % n_slices).to(gl.int64) * BLOCK_R
    arrived = gl.atomic_add(counters_ptr + 1 + strip, 0, sem="acquire")
    while arrived < n_slices:
        arrived = gl.atomic_add(counters_ptr + 1 + strip, 0, sem="acquire")
    k = gl.arange(0, SLICES, layout=gl.SliceLayout(1, STATS)).to(gl.int64)[:, None]
    i_s = strip * BLOCK_I + gl.arange(0, BLOCK_I, layout=gl.SliceLayout(0, STATS)).to(gl.int64)
    ok = (k < n_slices) & (i_s < n_i)[None, :]
    m_k = gl.load(stats_ptr + k * n_i + i_s[None, :], mask=ok, other=-float("inf"),
                  cache_modifier=".cg")
    s_k = gl.load(stats_ptr + (n_slices + k) * n_i + i_s[None, :], mask=ok, other=0.0,
                  cache_modifier=".cg")
    m_all = gl.max(m_k, axis=0)
    shift_all = gl.where(m_all == -float("inf"), 0.0, m_all)
    s_all = gl.sum(s_k * gl.exp2((m_k - shift_all[None, :]) * LOG2E), axis=0)
    m_all = gl.convert_layout(m_all, gl.SliceLayout(0, LOAD))
    inv_s = gl.convert_layout(1.0 / s_all, gl.SliceLayout(0, LOAD))
    i_o = strip * BLOCK_I + gl.arange(0, BLOCK_I, layout=gl.SliceLayout(0, STORE)).to(gl.int64)
    rc = gl.arange(0, CHUNK_R, layout=gl.SliceLayout(1, STORE)).to(gl.int64)
    for c in range(NCHUNK):
        x = bufs.index(buf * NCHUNK + c).load(LOAD).to(gl.float32)
        y = (gl.exp2((x - m_all[None, :]) * LOG2E) * inv_s[None, :]).to(out_ptr.dtype.element_ty)
        y = gl.convert_layout(y, STORE)
        r = r0 + c * CHUNK_R + rc
        gl.store(out_ptr + i_o[None, :] * stride_oi + r[:, None] * stride_or, y,
                 mask=(r < n_r)[:, None] & (i_o < n_i)[None, :])


@gluon.jit
def exchange_smem_kernel(
    x_ptr, out_ptr,  # input (n_i, n_r) view; output contiguous along r
    stats_ptr,  # float32 (2, n_slices, n_i): each slice's maxima, then its sums
    counters_ptr,  # int32 (1 + strips,), zeroed: the next ticket, then arrivals per strip
    n_i, n_r, stride_xr, stride_oi, stride_or,  # x has unit stride along i (cp.async needs
    # 16-byte runs; Triton 3.6 does not specialize an integer argument equal to 1)
    n_slices,
    total,  # strips * n_slices: tickets to hand out
    BLOCK_I: gl.constexpr, BLOCK_R: gl.constexpr, CHUNK_R: gl.constexpr, SLICES: gl.constexpr,
    VEC: gl.constexpr,  # elements per 16-byte copy along i
    PERSISTENT: gl.constexpr,  # loop over tickets with two buffers (else one ticket, one buffer)
    EVEN_R: gl.constexpr,  # n_r is a multiple of BLOCK_R: no slice needs a mask along r
    num_warps: gl.constexpr,
):
    # Copy layout: lanes along i (x's contiguous dimension), VEC elements (16 bytes) each.
    TPW_I: gl.constexpr = BLOCK_I // VEC
    LOAD: gl.constexpr = gl.BlockedLayout([1, VEC], [32 // TPW_I, TPW_I], [num_warps, 1], [1, 0])
    # Store layout: lanes along r (the output's contiguous dimension), 8 elements each.
    STORE: gl.constexpr = gl.BlockedLayout([8, 1], [CHUNK_R // 8, 256 // CHUNK_R],
                                           [1, num_warps], [0, 1])
    STATS: gl.constexpr = gl.BlockedLayout([1, 1], [32 // TPW_I, TPW_I], [num_warps, 1], [1, 0])
    SMEM: gl.constexpr = gl.SwizzledSharedLayout(VEC, 1, 1, [1, 0])
    NCHUNK: gl.constexpr = BLOCK_R // CHUNK_R
    BUFFERS: gl.constexpr = 2 if PERSISTENT else 1
    bufs = gl.allocate_shared_memory(x_ptr.dtype.element_ty, [BUFFERS * NCHUNK, CHUNK_R, BLOCK_I],
                                     SMEM)

    current = gl.atomic_add(counters_ptr, 1)
    if current < total:
        _load_slice(bufs, 0, current, x_ptr, n_i, n_r, stride_xr, n_slices, BLOCK_I, BLOCK_R,
                    CHUNK_R, LOAD)
        async_copy.wait_group(0)
        gl.thread_barrier()
        _publish(bufs, 0, current, stats_ptr, counters_ptr, n_i, n_r, n_slices, BLOCK_I,
                 BLOCK_R, CHUNK_R, LOAD, EVEN_R)
        if PERSISTENT:
            # Take the next ticket, load and publish it BEFORE waiting for the current strip:
            # a program never waits while holding an unpublished ticket, so every strip whose
            # tickets were handed out completes (given half a strip's programs at once).
            buf = 0
            while current < total:
                nxt = gl.atomic_add(counters_ptr, 1)
                if nxt < total:
                    _load_slice(bufs, 1 - buf, nxt, x_ptr, n_i, n_r, stride_xr, n_slices,
                                BLOCK_I, BLOCK_R, CHUNK_R, LOAD)
                    async_copy.wait_group(0)
                    gl.thread_barrier()
                    _publish(bufs, 1 - buf, nxt, stats_ptr, counters_ptr, n_i, n_r, n_slices,
                             BLOCK_I, BLOCK_R, CHUNK_R, LOAD, EVEN_R)
                _finish(bufs, buf, current, out_ptr, stats_ptr, counters_ptr, n_i, n_r,
                        stride_oi, stride_or, n_slices, BLOCK_I, BLOCK_R, CHUNK_R, SLICES,
                        LOAD, STORE, STATS)
                gl.thread_barrier()  # buffer `buf` is read by all before it is loaded again
                current = nxt
                buf = 1 - buf
        else:
            _finish(bufs, 0, current, out_ptr, stats_ptr, counters_ptr, n_i, n_r, stride_oi,
                    stride_or, n_slices, BLOCK_I, BLOCK_R, CHUNK_R, SLICES, LOAD, STORE, STATS)


def softmax_exchange_smem(x, block_r=512, block_i=32, chunk_r=64, num_warps=4, programs=None):
    """Softmax over dim 1 of a 2-D CUDA tensor x through exchange_smem_kernel; `programs`:
    a persistent grid of that many programs (None: one program per ticket)."""
    import torch

    n_i, n_r = x.shape
    assert x.stride(0) == 1, "this probe's kernel wants unit stride along dim 0 (a transposed view)"
    out = torch.empty((n_i, n_r), dtype=x.dtype, device=x.device)
    slices = -(-n_r // block_r)
    strips = -(-n_i // block_i)
    stats = torch.empty((2, slices, n_i), dtype=torch.float32, device=x.device)
    counters = torch.zeros(1 + strips, dtype=torch.int32, device=x.device)
    vec = 16 // x.element_size()
    grid = programs or strips * slices
    exchange_smem_kernel[(grid,)](
        x, out, stats, counters, n_i, n_r, x.stride(1), out.stride(0),
        out.stride(1), slices, strips * slices, BLOCK_I=block_i, BLOCK_R=block_r,
        CHUNK_R=chunk_r, SLICES=max(2, 1 << (slices - 1).bit_length()), VEC=vec,
        PERSISTENT=programs is not None, EVEN_R=n_r % block_r == 0, num_warps=num_warps)
    return out


def main() -> int:
    import torch

    from benchmarks import harness
    from references import strided_softmax as ss
    from tools._timing import graph_medians_us

    plan = harness.PLANS["sweep"]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    variants = [dict(block_r=1024, block_i=32), dict(block_r=512, block_i=64, num_warps=8),
                dict(block_r=1024, block_i=32, num_warps=8),
                dict(block_r=1024, block_i=32, chunk_r=32),
                dict(block_r=1024, block_i=64, num_warps=8),
                dict(block_r=2048, block_i=32, num_warps=8),
                dict(block_r=256, block_i=32, programs=5 * sms)]
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        for width, height in ((4096, 16384), (8192, 8192), (16384, 4096), (32768, 2048)):
            x = torch.randn(width, height, device="cuda", dtype=dtype).t()  # transposed view
            expected = torch.softmax(x.double(), dim=-1)
            dst = torch.empty_like(x.t().contiguous())
            calls = {"copy": lambda: dst.copy_(x.t()), "default": lambda: ss.softmax(x)}
            for knobs in variants:
                label = " ".join(f"{k}={v}" for k, v in knobs.items())
                if -(-width // knobs["block_r"]) > 132:
                    continue
                try:
                    got = softmax_exchange_smem(x, **knobs)
                    err = (got.double() - expected).abs().max().item()
                except Exception as exc:  # noqa: BLE001 - a diagnostic reports and goes on
                    print(f"   {label}: {type(exc).__name__}: {str(exc)[:300]}", flush=True)
                    continue
                calls[f"smem {label} max|err| {err:.1e}"] = \
                    lambda knobs=knobs: softmax_exchange_smem(x, **knobs)
            medians = graph_medians_us(calls.values(), plan)
            print(f"\n{height} x {width} {str(dtype)[6:]} transposed (graph timing)", flush=True)
            for label, us in zip(calls, medians, strict=True):
                print(f"   {us:8.1f} us  {medians[0] / us:5.2f} of copy  {label}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
