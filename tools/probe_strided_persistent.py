"""Strided softmax's shared-memory exchange with persistent programs. A diagnostic.

    python3 tools/probe_strided_persistent.py

Runs only at commit f601c20, where the reference has the loop and the two switches (the next
commit took them out again: `git checkout f601c20 -- references/strided_softmax.py`). Output:
diagnostics/probe-strided-persistent-loop-*.

The fourteenth session's timeline (diagnostics/probe-strided-timeline-*) found 356-363 of the
396 program slots busy on average: a program slot idles between one program's end and the next
one's start. At the commit this probe was written for (see the diagnostics README), the
reference's `softmax_across_exchange_smem_kernel` loops: each program takes tickets until
they run out, so a launch of a few programs per SM keeps its slots without relaunching. The
loop raised the kernel's registers from 73 to 128 per thread at 8 warps (two programs per SM
instead of three), so the launcher can cap them (`_SMEM_MAXNREG`; 80 compiles without spills).
This times, on 128 MiB transposed views of float16 and bfloat16 rows of 4096-32768 (graph
timing, every variant checked against float64 first):
  - `one_slice_kernel`, the kernel as it was before (one program per slice), launched as the
    launcher launched it;
  - the looping kernel with one program per slice, without the register cap (the line
    "reference") and with it;
  - the looping kernel with 2, 3 and 4 programs per SM (persistent), registers capped.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from references.strided_softmax import LOG2E, async_copy, gl, gluon  # noqa: E402,F401
from tools._timing import time_transposed_softmax  # noqa: E402

SHAPES = ((4096, 16384), (8192, 8192), (16384, 4096), (32768, 2048))  # (width, rows): 2^26


# The shared-memory exchange as it was before the loop (references/strided_softmax.py at the
# parent of the commit that added the loop), copied so both run in one process.
@gluon.jit
def one_slice_kernel(
    x_ptr, out_ptr,  # input, output (as in softmax_across_exchange_kernel)
    stats_ptr,  # float32 workspace (2, n_slices, n_i): each slice's maxima, then its sums
    counters_ptr,  # int32 workspace (1 + strips,), zeroed: the next ticket, then arrivals
    n_i, n_r,  # sizes; x has unit stride along I (checked by plan(): cp.async copies 16-byte
    # runs, and Triton 3.6 does not specialize a stride of 1)
    runs_xr,  # x's stride along R in 16-byte runs (stride_xr = runs_xr * VEC): so the compiler
    # knows every row starts on a 16-byte boundary, which it cannot see in a stride of 40
    stride_oi, stride_or,
    n_slices,  # slices per strip (at most the number of SMs: see plan())
    BLOCK_I: gl.constexpr,  # neighbouring rows per strip
    BLOCK_R: gl.constexpr,  # positions per slice: a slice is held in shared memory
    CHUNK_R: gl.constexpr,  # positions per chunk: the slice goes through registers chunk by chunk
    SLICES: gl.constexpr,  # n_slices rounded up to a power of two (a tile side)
    VEC: gl.constexpr,  # elements in 16 bytes: one cp.async per lane and chunk row
    EVEN_R: gl.constexpr,  # n_r is a multiple of BLOCK_R: no slice needs a mask along R
    OUT_ALONG_R: gl.constexpr,  # stride_or == 1 (dim=-1: a transposing store); else the output
    # runs along I like x (stride_oi == 1). A constexpr, since Triton 3.6 does not specialize 1
    num_warps: gl.constexpr,
):
    """Path B, exchange with the slice in shared memory (Gluon, a GPU only: lesson 1, section 5).

    The same tickets, statistics and wait as softmax_across_exchange_kernel, but the slice is
    copied from global memory straight into shared memory (cp.async: no registers hold it while
    the program waits), the statistics are computed from there, and after the merge each chunk
    is read back, normalised, re-laid for the transposed store and stored. A program then needs
    few registers, so several slices per SM wait at once (227 KiB of shared memory against
    about 64 KiB of slices in registers): fewer rounds of waiting for the same bytes.
    """
    # Layouts, written out (Gluon's difference from Triton): LOAD puts the lanes along I, x's
    # contiguous dimension, VEC elements (16 bytes) each; STORE puts them along R, the output's
    # contiguous dimension, 8 elements each; STATS reads the (SLICES, BLOCK_I) statistics.
    TPW_I: gl.constexpr = BLOCK_I // VEC
    LOAD: gl.constexpr = gl.BlockedLayout([1, VEC], [32 // TPW_I, TPW_I], [num_warps, 1], [1, 0])
    STORE: gl.constexpr = gl.BlockedLayout([8, 1], [CHUNK_R // 8, 256 // CHUNK_R],
                                           [1, num_warps], [0, 1])
    STATS: gl.constexpr = gl.BlockedLayout([1, 1], [32 // TPW_I, TPW_I], [num_warps, 1], [1, 0])
    SMEM: gl.constexpr = gl.SwizzledSharedLayout(VEC, 1, 1, [1, 0])  # rows of x, unswizzled
    NCHUNK: gl.constexpr = BLOCK_R // CHUNK_R
    # The two exponential passes take PAIR chunks a trip: ptxas then overlaps one chunk's
    # shared-memory loads with the other's arithmetic (0.7-4.3% faster on the H200 than one
    # chunk a trip, by width and dtype: benchmarks/results/diagnostics/probe-strided-mufu-*).
    PAIR: gl.constexpr = 2 if NCHUNK > 1 else 1

    ticket = gl.atomic_add(counters_ptr, 1)  # the order in which programs started
    strip = (ticket // n_slices).to(gl.int64)
    slice_id = (ticket % n_slices).to(gl.int64)
    r0 = slice_id * BLOCK_R
    tile = gl.allocate_shared_memory(x_ptr.dtype.element_ty, [NCHUNK, CHUNK_R, BLOCK_I], SMEM)

    # 1. The slice into shared memory, every chunk's copy in flight at once. Masked lanes are
    #    filled with 0, so the statistics below mask positions past n_r themselves.
    i = strip * BLOCK_I + gl.arange(0, BLOCK_I, layout=gl.SliceLayout(0, LOAD)).to(gl.int64)
    rc = gl.arange(0, CHUNK_R, layout=gl.SliceLayout(1, LOAD)).to(gl.int64)
    # Whole 16-byte runs or nothing: a run that starts before n_i is copied whole (cp.async
    # moves at least 4 bytes, so a mask may not cut a run of 16-bit values). plan() checks
    # that x's storage holds those few elements past n_i; they only ever reach rows >= n_i,
    # which are never stored.
    i_copy = gl.max_constancy((i - i % VEC) < n_i, [VEC])  # (tells the compiler it is so)
    for cc in gl.static_range(NCHUNK):  # one group of copies per chunk
        r = r0 + cc * CHUNK_R + rc
        async_copy.async_copy_global_to_shared(tile.index(cc),
                                               x_ptr + i[None, :] + r[:, None] * (runs_xr * VEC),
                                               mask=(r < n_r)[:, None] & i_copy[None, :])
        async_copy.commit_group()

    # 2. This slice's max and sum per row, from shared memory: elementwise over the chunks,
    #    then one reduction across lanes and warps. The maxima in x's own dtype (exact). The
    #    max starts on each chunk as soon as that chunk has landed, while the later ones are
    #    still on their way (the count a wait_group leaves in flight is a compile-time number,
    #    so this loop is unrolled).
    m2 = gl.full([CHUNK_R, BLOCK_I], -float("inf"), x_ptr.dtype.element_ty, layout=LOAD)
    for cw in gl.static_range(NCHUNK):
        async_copy.wait_group(NCHUNK - 1 - cw)
        gl.thread_barrier()  # every lane's copies of chunk cw have landed
        xm = tile.index(cw).load(LOAD)
        if not EVEN_R:
            xm = gl.where((r0 + cw * CHUNK_R + rc < n_r)[:, None], xm, -float("inf"))
        m2 = gl.maximum(m2, xm).to(m2.dtype)  # (bfloat16 maxima come back as float32)
    m = gl.max(m2, axis=0).to(gl.float32)  # (BLOCK_I,)
    shift = gl.where(m == -float("inf"), 0.0, m)  # a slice of only -inf: no -inf - (-inf)
    s2 = gl.zeros([CHUNK_R, BLOCK_I], gl.float32, layout=LOAD)
    for c2 in range(NCHUNK // PAIR):
        for h in gl.static_range(PAIR):
            c = PAIR * c2 + h
            p = gl.exp2((tile.index(c).load(LOAD).to(gl.float32) - shift[None, :]) * LOG2E)
            if not EVEN_R:
                p = gl.where((r0 + c * CHUNK_R + rc < n_r)[:, None], p, 0.0)
            s2 += p
    slot = slice_id * n_i + i
    gl.store(stats_ptr + slot, m, mask=i < n_i)
    gl.store(stats_ptr + n_slices * n_i + slot, gl.sum(s2, axis=0), mask=i < n_i)

    # 3. Count in, wait for the strip's other slices (see softmax_across_exchange_kernel for
    #    why the wait cannot deadlock), merge every slice's (max, sum).
    gl.thread_barrier()
    arrived = gl.atomic_add(counters_ptr + 1 + strip, 1, sem="acq_rel") + 1
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

    # 4. y = exp(x - M) / S, chunk by chunk from shared memory. For an output that runs along
    #    R, convert_layout re-lays each chunk (through shared memory, bank-conflict free) so
    #    that the stores run along R too.
    i_o = strip * BLOCK_I + gl.arange(0, BLOCK_I, layout=gl.SliceLayout(0, STORE)).to(gl.int64)
    rc_o = gl.arange(0, CHUNK_R, layout=gl.SliceLayout(1, STORE)).to(gl.int64)
    for c2 in range(NCHUNK // PAIR):
        for h in gl.static_range(PAIR):
            c = PAIR * c2 + h
            x = tile.index(c).load(LOAD).to(gl.float32)
            y = (gl.exp2((x - m_all[None, :]) * LOG2E) * inv_s[None, :])
            y = y.to(out_ptr.dtype.element_ty)
            if OUT_ALONG_R:
                r_o = r0 + c * CHUNK_R + rc_o
                keep = (i_o < n_i)[None, :] & ((r_o < n_r)[:, None] if not EVEN_R else True)
                gl.store(out_ptr + i_o[None, :] * stride_oi + r_o[:, None],
                         gl.convert_layout(y, STORE), mask=keep)
            else:
                r_x = r0 + c * CHUNK_R + rc
                keep = (i < n_i)[None, :] & ((r_x < n_r)[:, None] if not EVEN_R else True)
                gl.store(out_ptr + i[None, :] + r_x[:, None] * stride_or, y, mask=keep)


def _original(x):
    """softmax(x) through one_slice_kernel, launched as the launcher launched it."""
    import torch

    from references import strided_softmax as ss

    p = ss.plan(x)
    assert p.smem, "the probe's shapes take the shared-memory exchange"
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    stats = torch.empty((2, p.splits, p.n_i), dtype=torch.float32, device=x.device)
    counters = torch.zeros(1 + p.grid, dtype=torch.int32, device=x.device)
    one_slice_kernel[(p.grid * p.splits,)](
        x, out, stats, counters, p.n_i, p.n_r, p.stride_xr // (16 // x.element_size()),
        p.stride_oi, p.stride_or, p.splits, BLOCK_I=p.block_i, BLOCK_R=p.block_r,
        CHUNK_R=ss._SMEM_CHUNK, SLICES=ss._pow2(p.splits), VEC=16 // x.element_size(),
        EVEN_R=p.n_r % p.block_r == 0, OUT_ALONG_R=p.stride_or == 1, num_warps=p.num_warps)
    return out


def _with(per_sm, maxnreg):
    """softmax(x) by the reference with the experiment's two switches set for the call."""
    def call(x):
        from references import strided_softmax as ss

        saved = ss._SMEM_PROGRAMS_PER_SM, ss._SMEM_MAXNREG
        ss._SMEM_PROGRAMS_PER_SM, ss._SMEM_MAXNREG = per_sm, maxnreg
        try:
            return ss.softmax(x)
        finally:
            ss._SMEM_PROGRAMS_PER_SM, ss._SMEM_MAXNREG = saved
    return call


def variants(width):
    return [("one program per slice (before the loop)", _original),
            ("loop, one program per slice, 80 regs", _with(None, 80)),
            ("loop, 2 programs per SM, 80 regs", _with(2, 80)),
            ("loop, 3 programs per SM, 80 regs", _with(3, 80)),
            ("loop, 4 programs per SM, 80 regs", _with(4, 80))]


def main() -> int:
    import torch

    if not torch.cuda.is_available():
        print("probe_strided_persistent times kernels on a GPU; none is visible here")
        return 2
    time_transposed_softmax(SHAPES, variants)
    return 0


if __name__ == "__main__":
    sys.exit(main())
