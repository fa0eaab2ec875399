"""Where does the 16-bit shared-memory exchange's time go, and can a change of shape move it?

    python3 tools/probe_strided_phases.py sass             # no GPU: registers and spills
    python3 tools/probe_strided_phases.py time regs        # a GPU, each mode below
    python3 tools/probe_strided_phases.py time persistent
    python3 tools/probe_strided_phases.py time waves
    python3 tools/probe_strided_phases.py time timeline    # (also timeline-padded, -online)
    python3 tools/probe_strided_phases.py time sync
    python3 tools/probe_strided_phases.py time online
    python3 tools/probe_strided_phases.py time lastmerge   # (also timeline-lastmerge)

`exchange_regs_kernel` is the reference's `softmax_across_exchange_smem_kernel` (lesson 1,
section 5) with switches; with all of them off it is the reference kernel. The modes:
- regs: each slice is longer by REG_CHUNKS chunks that are loaded into registers and wait
  there (the register file holds little of the reference's data), so more bytes wait per SM
  and a strip has fewer slices. After the merge the register chunks are stored first.
- persistent (`exchange_persistent_kernel`): a persistent loop over tickets; as each chunk of
  the current slice leaves shared memory for the output, the same chunk of the next slice is
  copied in behind it, so the next reads overlap this slice's writes.
- waves: the reference on 2 to 40 strips of one width: does time grow in steps of a wave?
- timeline: every program stamps the global timer at six points (start, ticket taken, slice
  landed, counted in, strip complete, stores issued): the mean and spread of each phase, and
  what the programs alive are doing at each moment.
- sync: the wait's mechanics: each strip's arrival count in a 128-byte line of its own (PAD),
  polling with plain loads and one fence (SPIN_LOAD), a relaxed ticket (Triton's default
  acq_rel puts a fence before the atomic; a ticket publishes nothing).
- online: the slice's (max, sum) kept online, ONLINE chunks at a time as the copies land, so
  no sum pass remains after the last chunk.
- lastmerge: only the strip's last slice to count in merges the strip's (max, sum) pairs and
  publishes (M, 1 / S) behind a flag, so the merge's reads from L2 fall n_slices-fold (32 KiB
  per program at 32768 positions). Measured: 8-78% slower (0.29 of copy at 32768), since
  every slice then waits for one program's merge (LAST_MERGES).
Each variant is compared with a float64 softmax before it is timed; the outputs are kept in
benchmarks/results/diagnostics/probe-strided-{regs,persistent,waves,timeline,sync,online,
lastmerge}-*.
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
def _stamp(times_ptr, slot, dummy):
    """Write the global timer (ns) and this program's SM to times_ptr[slot], [slot + 1]."""
    now = gl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l,r", [dummy],
                                    dtype=gl.int64, is_pure=False, pack=1)
    gl.store(times_ptr + slot, now)


@gluon.jit
def _normalize_store(x, out_ptr, r_first, i, n_i, n_r, m_all, inv_s, stride_oi, stride_or,
                     LOAD: gl.constexpr, ROWS: gl.constexpr, num_warps: gl.constexpr,
                     EVEN_R: gl.constexpr, OUT_ALONG_R: gl.constexpr):
    """One chunk x (ROWS positions from r_first, in LOAD layout): y = exp(x - M) / S, stored
    along the output's contiguous dimension (as the reference's step 4)."""
    STORE: gl.constexpr = gl.BlockedLayout([8, 1], [ROWS // 8, 256 // ROWS], [1, num_warps],
                                           [0, 1])
    y = gl.exp2((x.to(gl.float32) - m_all[None, :]) * LOG2E) * inv_s[None, :]
    y = y.to(out_ptr.dtype.element_ty)
    if OUT_ALONG_R:
        i_o = gl.convert_layout(i, gl.SliceLayout(0, STORE))
        r_o = r_first + gl.arange(0, ROWS, layout=gl.SliceLayout(1, STORE)).to(gl.int64)
        keep = (i_o < n_i)[None, :] & ((r_o < n_r)[:, None] if not EVEN_R else True)
        gl.store(out_ptr + i_o[None, :] * stride_oi + r_o[:, None], gl.convert_layout(y, STORE),
                 mask=keep)
    else:
        r_x = r_first + gl.arange(0, ROWS, layout=gl.SliceLayout(1, LOAD)).to(gl.int64)
        keep = (i < n_i)[None, :] & ((r_x < n_r)[:, None] if not EVEN_R else True)
        gl.store(out_ptr + i[None, :] + r_x[:, None] * stride_or, y, mask=keep)


@gluon.jit
def _load_regs(x_ptr, i, i_copy, r_first, n_r, runs_xr, LOAD: gl.constexpr,
               ROWS: gl.constexpr, VEC: gl.constexpr):
    """ROWS positions from r_first into registers; positions past n_r read as -inf."""
    r = r_first + gl.arange(0, ROWS, layout=gl.SliceLayout(1, LOAD)).to(gl.int64)
    return gl.load(x_ptr + i[None, :] + r[:, None] * (runs_xr * VEC),
                   mask=(r < n_r)[:, None] & i_copy[None, :], other=-float("inf"))


@gluon.jit
def _merge(stats_ptr, strip, n_i, n_slices, STATS: gl.constexpr, BLOCK_I: gl.constexpr,
           SLICES: gl.constexpr):
    """The reference's merge of a strip's n_slices (max, sum) pairs: (M, 1 / S) per row."""
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
    return m_all, 1.0 / s_all


@gluon.jit
def exchange_regs_kernel(
    x_ptr, out_ptr, stats_ptr, counters_ptr, n_i, n_r, runs_xr, stride_oi, stride_or, n_slices,
    times_ptr,  # TIMED: int64 (tickets, 8): timer stamps of each program's phases, and its SM
    BLOCK_I: gl.constexpr, BLOCK_R: gl.constexpr, REG_CHUNKS: gl.constexpr,
    CHUNK_R: gl.constexpr, SLICES: gl.constexpr, VEC: gl.constexpr, EVEN_R: gl.constexpr,
    OUT_ALONG_R: gl.constexpr, TIMED: gl.constexpr, PAD: gl.constexpr = 1,
    SPIN_LOAD: gl.constexpr = False, TICKET_SEM: gl.constexpr = "acq_rel",
    ONLINE: gl.constexpr = 0, LAST_MERGES: gl.constexpr = False, num_warps: gl.constexpr = 4,
):
    """The reference's softmax_across_exchange_smem_kernel, with a slice of BLOCK_R positions
    in shared memory followed by REG_CHUNKS (0 to 4) chunks of REG_ROWS positions in
    registers (8 KiB of 16-bit values each: the scratch their transposing store needs)."""
    TPW_I: gl.constexpr = BLOCK_I // VEC
    LOAD: gl.constexpr = gl.BlockedLayout([1, VEC], [32 // TPW_I, TPW_I], [num_warps, 1], [1, 0])
    STATS: gl.constexpr = gl.BlockedLayout([1, 1], [32 // TPW_I, TPW_I], [num_warps, 1], [1, 0])
    SMEM: gl.constexpr = gl.SwizzledSharedLayout(VEC, 1, 1, [1, 0])
    NCHUNK: gl.constexpr = BLOCK_R // CHUNK_R
    PAIR: gl.constexpr = 2 if NCHUNK > 1 else 1
    REG_ROWS: gl.constexpr = 4096 // BLOCK_I
    SLICE_R: gl.constexpr = BLOCK_R + REG_CHUNKS * REG_ROWS

    if TIMED:
        start = gl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l,r", [n_i],
                                          dtype=gl.int64, is_pure=False, pack=1)
    ticket = gl.atomic_add(counters_ptr, 1, sem=TICKET_SEM)  # (acq_rel: a fence before it)
    if TIMED:
        row = ticket.to(gl.int64) * 8
        gl.store(times_ptr + row, start)
        _stamp(times_ptr, row + 1, ticket)
        smid = gl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r,r", [ticket],
                                         dtype=gl.int32, is_pure=False, pack=1)
        gl.store(times_ptr + row + 7, smid.to(gl.int64))
    strip = (ticket // n_slices).to(gl.int64)
    slice_id = (ticket % n_slices).to(gl.int64)
    r0 = slice_id * SLICE_R
    rg = r0 + BLOCK_R  # the register part's first position
    tile = gl.allocate_shared_memory(x_ptr.dtype.element_ty, [NCHUNK, CHUNK_R, BLOCK_I], SMEM)

    # 1. The shared-memory part by cp.async, one group per chunk; then the register part by
    #    plain loads (in flight together with the copies).
    i = strip * BLOCK_I + gl.arange(0, BLOCK_I, layout=gl.SliceLayout(0, LOAD)).to(gl.int64)
    rc = gl.arange(0, CHUNK_R, layout=gl.SliceLayout(1, LOAD)).to(gl.int64)
    i_copy = gl.max_constancy((i - i % VEC) < n_i, [VEC])
    for cc in gl.static_range(NCHUNK):
        r = r0 + cc * CHUNK_R + rc
        async_copy.async_copy_global_to_shared(tile.index(cc),
                                               x_ptr + i[None, :] + r[:, None] * (runs_xr * VEC),
                                               mask=(r < n_r)[:, None] & i_copy[None, :])
        async_copy.commit_group()
    if REG_CHUNKS > 0:
        xr0 = _load_regs(x_ptr, i, i_copy, rg, n_r, runs_xr, LOAD, REG_ROWS, VEC)
    if REG_CHUNKS > 1:
        xr1 = _load_regs(x_ptr, i, i_copy, rg + REG_ROWS, n_r, runs_xr, LOAD, REG_ROWS, VEC)
    if REG_CHUNKS > 2:
        xr2 = _load_regs(x_ptr, i, i_copy, rg + 2 * REG_ROWS, n_r, runs_xr, LOAD, REG_ROWS, VEC)
    if REG_CHUNKS > 3:
        xr3 = _load_regs(x_ptr, i, i_copy, rg + 3 * REG_ROWS, n_r, runs_xr, LOAD, REG_ROWS, VEC)

    # 2. Max and sum over both parts. ONLINE = g > 0 (no register part): online statistics,
    #    g chunks at a time as they land. Each element of the chunk-shaped (m, s) tile carries a
    #    running max and a sum scaled to it, rescaled once per g chunks (1 + 1/g exponentials
    #    per element), so there is no separate sum pass after the copies have landed.
    if ONLINE > 0:
        m_run = gl.full([CHUNK_R, BLOCK_I], -float("inf"), gl.float32, layout=LOAD)
        s_run = gl.zeros([CHUNK_R, BLOCK_I], gl.float32, layout=LOAD)
        for g in gl.static_range(NCHUNK // ONLINE):
            async_copy.wait_group(NCHUNK - ONLINE * (g + 1))
            gl.thread_barrier()
            m_new = m_run
            for h in gl.static_range(ONLINE):
                xm = tile.index(ONLINE * g + h).load(LOAD).to(gl.float32)
                if not EVEN_R:
                    xm = gl.where((r0 + (ONLINE * g + h) * CHUNK_R + rc < n_r)[:, None], xm,
                                  -float("inf"))
                m_new = gl.maximum(m_new, xm)
            shift_new = gl.where(m_new == -float("inf"), 0.0, m_new)
            s_run = s_run * gl.exp2((m_run - shift_new) * LOG2E)
            for h in gl.static_range(ONLINE):
                xs = tile.index(ONLINE * g + h).load(LOAD).to(gl.float32)
                p = gl.exp2((xs - shift_new) * LOG2E)
                if not EVEN_R:
                    p = gl.where((r0 + (ONLINE * g + h) * CHUNK_R + rc < n_r)[:, None], p, 0.0)
                s_run += p
            m_run = m_new
        if TIMED:
            _stamp(times_ptr, row + 2, ticket)  # every chunk has landed and been summed
        m = gl.max(m_run, axis=0)
        shift = gl.where(m == -float("inf"), 0.0, m)
        s = gl.sum(s_run * gl.exp2((m_run - shift[None, :]) * LOG2E), axis=0)
    else:
        m2 = gl.full([CHUNK_R, BLOCK_I], -float("inf"), x_ptr.dtype.element_ty, layout=LOAD)
        for cw in gl.static_range(NCHUNK):
            async_copy.wait_group(NCHUNK - 1 - cw)
            gl.thread_barrier()
            xm = tile.index(cw).load(LOAD)
            if not EVEN_R:
                xm = gl.where((r0 + cw * CHUNK_R + rc < n_r)[:, None], xm, -float("inf"))
            m2 = gl.maximum(m2, xm).to(m2.dtype)
        if TIMED:
            _stamp(times_ptr, row + 2, ticket)  # every chunk has landed
        m = gl.max(m2, axis=0).to(gl.float32)
        if REG_CHUNKS > 0:
            mr = xr0
            if REG_CHUNKS > 1:
                mr = gl.maximum(mr, xr1).to(mr.dtype)
            if REG_CHUNKS > 2:
                mr = gl.maximum(mr, xr2).to(mr.dtype)
            if REG_CHUNKS > 3:
                mr = gl.maximum(mr, xr3).to(mr.dtype)
            m = gl.maximum(m, gl.max(mr, axis=0).to(gl.float32))
        shift = gl.where(m == -float("inf"), 0.0, m)
        s2 = gl.zeros([CHUNK_R, BLOCK_I], gl.float32, layout=LOAD)
        for c2 in range(NCHUNK // PAIR):
            for h in gl.static_range(PAIR):
                c = PAIR * c2 + h
                p = gl.exp2((tile.index(c).load(LOAD).to(gl.float32) - shift[None, :]) * LOG2E)
                if not EVEN_R:
                    p = gl.where((r0 + c * CHUNK_R + rc < n_r)[:, None], p, 0.0)
                s2 += p
        s = gl.sum(s2, axis=0)
        if REG_CHUNKS > 0:  # positions past n_r hold -inf: exp2(-inf) = 0
            sr = gl.exp2((xr0.to(gl.float32) - shift[None, :]) * LOG2E)
            if REG_CHUNKS > 1:
                sr += gl.exp2((xr1.to(gl.float32) - shift[None, :]) * LOG2E)
            if REG_CHUNKS > 2:
                sr += gl.exp2((xr2.to(gl.float32) - shift[None, :]) * LOG2E)
            if REG_CHUNKS > 3:
                sr += gl.exp2((xr3.to(gl.float32) - shift[None, :]) * LOG2E)
            s += gl.sum(sr, axis=0)
    slot = slice_id * n_i + i
    gl.store(stats_ptr + slot, m, mask=i < n_i)
    gl.store(stats_ptr + n_slices * n_i + slot, s, mask=i < n_i)

    # 3. Count in, wait, merge (as the reference).
    gl.thread_barrier()
    arrival = counters_ptr + PAD * (1 + strip)  # PAD: each strip's count in a line of its own
    arrived = gl.atomic_add(arrival, 1, sem="acq_rel") + 1
    if TIMED:
        _stamp(times_ptr, row + 3, arrived)  # this slice has counted in
    if SPIN_LOAD:  # poll with plain loads, then one fence for the acquire
        while arrived < n_slices:
            arrived = gl.load(arrival, volatile=True)
        arrived = gl.inline_asm_elementwise("fence.acq_rel.gpu;\n mov.u32 $0, $1;", "=r,r",
                                            [arrived], dtype=gl.int32, is_pure=False, pack=1)
    else:
        while arrived < n_slices:
            arrived = gl.atomic_add(arrival, 0, sem="acquire")
    if TIMED:
        _stamp(times_ptr, row + 4, arrived)  # every slice of the strip has counted in
    if LAST_MERGES:
        # Only the strip's last slice to count in merges the n_slices (max, sum) pairs, once,
        # and publishes (M, 1 / S) behind a flag; the others wait for the flag and read 2
        # numbers per row instead of 2 * n_slices (the merge's reads from L2 fall n_slices-fold).
        merged = stats_ptr + 2 * n_slices * n_i  # (2, n_i): M, then 1 / S
        flag = counters_ptr + PAD * (1 + gl.cdiv(n_i, BLOCK_I) + strip)
        if arrived == n_slices:
            m_last, inv_last = _merge(stats_ptr, strip, n_i, n_slices, STATS, BLOCK_I, SLICES)
            i_m = strip * BLOCK_I + gl.arange(0, BLOCK_I,
                                              layout=gl.SliceLayout(0, STATS)).to(gl.int64)
            gl.store(merged + i_m, m_last, mask=i_m < n_i)
            gl.store(merged + n_i + i_m, inv_last, mask=i_m < n_i)
            gl.thread_barrier()
            gl.atomic_add(flag, 1, sem="release")
        else:
            done = gl.atomic_add(flag, 0, sem="acquire")
            while done == 0:
                done = gl.atomic_add(flag, 0, sem="acquire")
        m_all = gl.load(merged + i, mask=i < n_i, other=0.0, cache_modifier=".cg")
        inv_s = gl.load(merged + n_i + i, mask=i < n_i, other=0.0, cache_modifier=".cg")
    else:
        m_all, inv_s = _merge(stats_ptr, strip, n_i, n_slices, STATS, BLOCK_I, SLICES)
        m_all = gl.convert_layout(m_all, gl.SliceLayout(0, LOAD))
        inv_s = gl.convert_layout(inv_s, gl.SliceLayout(0, LOAD))

    # 4. The register part first (its registers are free once it is out), then the
    #    shared-memory part chunk by chunk.
    if REG_CHUNKS > 0:
        _normalize_store(xr0, out_ptr, rg, i, n_i, n_r, m_all, inv_s, stride_oi, stride_or,
                         LOAD, REG_ROWS, num_warps, EVEN_R, OUT_ALONG_R)
    if REG_CHUNKS > 1:
        _normalize_store(xr1, out_ptr, rg + REG_ROWS, i, n_i, n_r, m_all, inv_s, stride_oi,
                         stride_or, LOAD, REG_ROWS, num_warps, EVEN_R, OUT_ALONG_R)
    if REG_CHUNKS > 2:
        _normalize_store(xr2, out_ptr, rg + 2 * REG_ROWS, i, n_i, n_r, m_all, inv_s, stride_oi,
                         stride_or, LOAD, REG_ROWS, num_warps, EVEN_R, OUT_ALONG_R)
    if REG_CHUNKS > 3:
        _normalize_store(xr3, out_ptr, rg + 3 * REG_ROWS, i, n_i, n_r, m_all, inv_s, stride_oi,
                         stride_or, LOAD, REG_ROWS, num_warps, EVEN_R, OUT_ALONG_R)
    for c2 in range(NCHUNK // PAIR):
        for h in gl.static_range(PAIR):
            c = PAIR * c2 + h
            _normalize_store(tile.index(c).load(LOAD), out_ptr, r0 + c * CHUNK_R, i, n_i, n_r,
                             m_all, inv_s, stride_oi, stride_or, LOAD, CHUNK_R, num_warps,
                             EVEN_R, OUT_ALONG_R)
    if TIMED:
        gl.thread_barrier()
        _stamp(times_ptr, row + 5, ticket)  # every lane has issued its stores


@gluon.jit
def _copy_slice_chunk(tile, c, x_ptr, t, n_tickets, n_slices, n_i, n_r, runs_xr,
                      LOAD: gl.constexpr, BLOCK_I: gl.constexpr, BLOCK_R: gl.constexpr,
                      CHUNK_R: gl.constexpr, VEC: gl.constexpr):
    """cp.async of chunk c of ticket t's slice into tile.index(c), as one commit group (an
    empty group when t is past the last ticket, so that every trip commits the same count)."""
    strip = (t // n_slices).to(gl.int64)
    r = (t % n_slices).to(gl.int64) * BLOCK_R + c * CHUNK_R + \
        gl.arange(0, CHUNK_R, layout=gl.SliceLayout(1, LOAD)).to(gl.int64)
    i = strip * BLOCK_I + gl.arange(0, BLOCK_I, layout=gl.SliceLayout(0, LOAD)).to(gl.int64)
    i_copy = gl.max_constancy((i - i % VEC) < n_i, [VEC])
    async_copy.async_copy_global_to_shared(
        tile.index(c), x_ptr + i[None, :] + r[:, None] * (runs_xr * VEC),
        mask=((r < n_r) & (t < n_tickets))[:, None] & i_copy[None, :])
    async_copy.commit_group()


@gluon.jit
def exchange_persistent_kernel(
    x_ptr, out_ptr, stats_ptr, counters_ptr, n_i, n_r, runs_xr, stride_oi, stride_or, n_slices,
    n_tickets, BLOCK_I: gl.constexpr, BLOCK_R: gl.constexpr, CHUNK_R: gl.constexpr,
    SLICES: gl.constexpr, VEC: gl.constexpr, EVEN_R: gl.constexpr, OUT_ALONG_R: gl.constexpr,
    num_warps: gl.constexpr,
):
    """The reference's exchange as a persistent loop over tickets: after the merge a program
    takes its next ticket, and as each chunk of the current slice leaves shared memory for the
    output pass, the same chunk of the next slice is copied in behind it. The next slice's
    reads then overlap this slice's writes, with no more shared memory than the reference."""
    TPW_I: gl.constexpr = BLOCK_I // VEC
    LOAD: gl.constexpr = gl.BlockedLayout([1, VEC], [32 // TPW_I, TPW_I], [num_warps, 1], [1, 0])
    STATS: gl.constexpr = gl.BlockedLayout([1, 1], [32 // TPW_I, TPW_I], [num_warps, 1], [1, 0])
    SMEM: gl.constexpr = gl.SwizzledSharedLayout(VEC, 1, 1, [1, 0])
    NCHUNK: gl.constexpr = BLOCK_R // CHUNK_R
    PAIR: gl.constexpr = 2 if NCHUNK > 1 else 1

    tile = gl.allocate_shared_memory(x_ptr.dtype.element_ty, [NCHUNK, CHUNK_R, BLOCK_I], SMEM)
    rc = gl.arange(0, CHUNK_R, layout=gl.SliceLayout(1, LOAD)).to(gl.int64)
    t = gl.atomic_add(counters_ptr, 1)
    for cc in gl.static_range(NCHUNK):
        _copy_slice_chunk(tile, cc, x_ptr, t, n_tickets, n_slices, n_i, n_r, runs_xr, LOAD,
                          BLOCK_I, BLOCK_R, CHUNK_R, VEC)
    while t < n_tickets:
        strip = (t // n_slices).to(gl.int64)
        slice_id = (t % n_slices).to(gl.int64)
        r0 = slice_id * BLOCK_R
        i = strip * BLOCK_I + gl.arange(0, BLOCK_I, layout=gl.SliceLayout(0, LOAD)).to(gl.int64)

        # Max and sum of this slice (its copies were issued a trip earlier, chunk by chunk).
        m2 = gl.full([CHUNK_R, BLOCK_I], -float("inf"), x_ptr.dtype.element_ty, layout=LOAD)
        for cw in gl.static_range(NCHUNK):
            async_copy.wait_group(NCHUNK - 1 - cw)
            gl.thread_barrier()
            xm = tile.index(cw).load(LOAD)
            if not EVEN_R:
                xm = gl.where((r0 + cw * CHUNK_R + rc < n_r)[:, None], xm, -float("inf"))
            m2 = gl.maximum(m2, xm).to(m2.dtype)
        m = gl.max(m2, axis=0).to(gl.float32)
        shift = gl.where(m == -float("inf"), 0.0, m)
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

        # Count in, wait, merge (as the reference).
        gl.thread_barrier()
        arrived = gl.atomic_add(counters_ptr + 1 + strip, 1, sem="acq_rel") + 1
        while arrived < n_slices:
            arrived = gl.atomic_add(counters_ptr + 1 + strip, 0, sem="acquire")
        m_all, inv_s = _merge(stats_ptr, strip, n_i, n_slices, STATS, BLOCK_I, SLICES)
        m_all = gl.convert_layout(m_all, gl.SliceLayout(0, LOAD))
        inv_s = gl.convert_layout(inv_s, gl.SliceLayout(0, LOAD))

        # The next ticket; each chunk leaves for the output and the next slice's chunk takes
        # its place.
        t_next = gl.atomic_add(counters_ptr, 1)
        for c in range(NCHUNK):
            x = tile.index(c).load(LOAD)
            gl.thread_barrier()  # every lane holds its part of chunk c: it may be overwritten
            _copy_slice_chunk(tile, c, x_ptr, t_next, n_tickets, n_slices, n_i, n_r, runs_xr,
                              LOAD, BLOCK_I, BLOCK_R, CHUNK_R, VEC)
            _normalize_store(x, out_ptr, r0 + c * CHUNK_R, i, n_i, n_r, m_all, inv_s,
                             stride_oi, stride_or, LOAD, CHUNK_R, num_warps, EVEN_R,
                             OUT_ALONG_R)
        t = t_next
    async_copy.wait_group(0)


# (BLOCK_R in shared memory, REG_CHUNKS in registers, BLOCK_I rows per strip, warps).
# REG_CHUNKS = 0 is the reference's kernel, a check that this copy times as the reference.
VARIANTS = {
    "long": ((512, 0, 64, 8), (512, 1, 64, 8), (512, 2, 64, 8), (512, 4, 64, 8),
             (512, 2, 64, 4), (512, 4, 64, 4)),
    "short": ((1024, 0, 32, 4), (1024, 1, 32, 4), (1024, 2, 32, 4), (1024, 4, 32, 4),
              (512, 2, 64, 8), (512, 4, 64, 8)),
}


def slice_positions(variant) -> int:
    block_r, reg_chunks, block_i, _ = variant
    return block_r + reg_chunks * (4096 // block_i)
SHAPES = ((4096, 16384), (8192, 8192), (16384, 4096), (32768, 2048))  # (width, rows): 2^26


def max_registers(warps: int, programs: int = 3) -> int:
    """The most registers a thread may take so that `programs` programs fit an SM (ptxas takes
    more than it needs when nothing caps it: 122 at 8 warps, which leaves room for two)."""
    return min(255, 65536 // (programs * 32 * warps) // 8 * 8)


def launch(x, variant, times=None, pad: int = 1, spin_load: bool = False,
           ticket_sem: str = "acq_rel", online: int = 0, last_merges: bool = False):
    import torch

    from references import strided_softmax as ss

    block_r, reg_chunks, block_i, warps = variant
    p = ss.plan(x, smem=True)  # the reference's roles and strides; the tile is ours
    n_slices = ss.cdiv(p.n_r, slice_positions(variant))
    strips = ss.cdiv(p.n_i, block_i)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    # (2, n_slices, n_i) per-slice statistics, then (2, n_i) merged ones (LAST_MERGES)
    stats = torch.empty(2 * (n_slices + 1) * p.n_i, dtype=torch.float32, device=x.device)
    # the next ticket, an arrival count per strip, then a merged-flag per strip (LAST_MERGES)
    counters = torch.zeros(pad * (1 + 2 * strips), dtype=torch.int32, device=x.device)
    exchange_regs_kernel[(strips * n_slices,)](
        x, out, stats, counters, p.n_i, p.n_r, p.stride_xr // (16 // x.element_size()),
        p.stride_oi, p.stride_or, n_slices, counters if times is None else times,
        BLOCK_I=block_i, BLOCK_R=block_r, TIMED=times is not None, PAD=pad,
        SPIN_LOAD=spin_load, TICKET_SEM=ticket_sem, ONLINE=online, REG_CHUNKS=reg_chunks,
        LAST_MERGES=last_merges,
        CHUNK_R=ss._SMEM_CHUNK, SLICES=ss._pow2(n_slices), VEC=16 // x.element_size(),
        EVEN_R=p.n_r % slice_positions(variant) == 0, OUT_ALONG_R=p.stride_or == 1, num_warps=warps,
        **({} if reg_chunks == 0 else {"maxnreg": max_registers(warps)}))
    return out


# (BLOCK_R, BLOCK_I, warps, programs per SM) of the persistent kernel: the reference's two
# slices, and 32 KiB slices five to an SM.
PERSISTENT = {"long": ((512, 64, 8, 3), (512, 64, 4, 3), (256, 64, 4, 5), (512, 32, 4, 5)),
              "short": ((1024, 32, 4, 3), (512, 32, 4, 5), (256, 64, 4, 5))}


def launch_persistent(x, variant):
    import torch

    from references import strided_softmax as ss

    block_r, block_i, warps, per_sm = variant
    p = ss.plan(x, smem=True)
    n_slices = ss.cdiv(p.n_r, block_r)
    strips = ss.cdiv(p.n_i, block_i)
    tickets = strips * n_slices
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    stats = torch.empty((2, n_slices, p.n_i), dtype=torch.float32, device=x.device)
    counters = torch.zeros(1 + strips, dtype=torch.int32, device=x.device)
    grid = min(tickets, per_sm * ss.sm_count(x.device.index or 0))
    exchange_persistent_kernel[(grid,)](
        x, out, stats, counters, p.n_i, p.n_r, p.stride_xr // (16 // x.element_size()),
        p.stride_oi, p.stride_or, n_slices, tickets, BLOCK_I=block_i, BLOCK_R=block_r,
        CHUNK_R=ss._SMEM_CHUNK, SLICES=ss._pow2(n_slices), VEC=16 // x.element_size(),
        EVEN_R=p.n_r % block_r == 0, OUT_ALONG_R=p.stride_or == 1, num_warps=warps,
        maxnreg=max_registers(warps, per_sm))
    return out


def time_all(mode: str) -> int:
    from tools._timing import time_transposed_softmax

    def variants_for(width: int):
        default = (1024, 0, 32, 4) if width <= 4096 else (512, 0, 64, 8)
        if mode == "sync":
            return [(f"pad {pad:2d}, spin on {'loads' if spin else 'atomics'}, ticket {sem}",
                     lambda x, pad=pad, spin=spin, sem=sem: launch(
                         x, default, pad=pad, spin_load=spin, ticket_sem=sem))
                    for pad, spin, sem in ((1, False, "acq_rel"), (32, False, "acq_rel"),
                                           (1, True, "acq_rel"), (1, False, "relaxed"),
                                           (32, True, "relaxed"))]
        if mode == "lastmerge":
            return [(f"{'last slice merges once' if last else 'every slice merges'}",
                     lambda x, last=last: launch(x, default, last_merges=last))
                    for last in (False, True)]
        if mode == "online":
            return [(f"online statistics, {g} chunks a step" if g else "two passes",
                     lambda x, g=g: launch(x, default, online=g)) for g in (0, 1, 2, 4)]
        if mode == "regs":
            return [(f"smem {v[0]} + regs {slice_positions(v) - v[0]}, block_i {v[2]}, "
                     f"{v[3]} warps", lambda x, v=v: launch(x, v))
                    for v in VARIANTS["short" if width <= 4096 else "long"]]
        return [(f"persistent {v[0]} x {v[1]}, {v[2]} warps, {v[3]} per SM",
                 lambda x, v=v: launch_persistent(x, v))
                for v in PERSISTENT["short" if width <= 4096 else "long"]]

    time_transposed_softmax(SHAPES, variants_for)
    return 0


def time_waves() -> int:
    """The reference on transposed views of a fixed width and a growing number of strips (64
    rows each): if the waves of programs run in lockstep, time grows in steps of one wave."""
    import torch

    from benchmarks import harness
    from references import strided_softmax as ss
    from tools._timing import graph_medians_us

    plan = harness.PLANS["sweep"]
    for width in (8192, 32768):
        strips = list(range(2, 41, 2))
        xs = [torch.randn(width, 64 * n, device="cuda", dtype=torch.float16).t() for n in strips]
        medians = graph_medians_us([lambda x=x: ss.softmax(x) for x in xs], plan)
        p = ss.plan(xs[0])
        per_wave = 3 * ss.sm_count(0) // p.splits
        print(f"\nwidth {width} float16 transposed, slices of {p.block_r} x {p.block_i}: "
              f"{p.splits} per strip, {per_wave} whole strips per wave of 3 programs per SM")
        for n, us in zip(strips, medians, strict=True):
            print(f"   {n:3d} strips ({n / per_wave:5.2f} waves) {us:8.1f} us  {us / n:6.2f} us "
                  f"per strip", flush=True)
    return 0


PHASES = ("ticket", "load", "stats", "wait", "output")  # between stamps 0..5


def time_timeline(**flags) -> int:
    """Each program of the reference kernel stamps the global timer at six points (start,
    ticket taken, slice landed, counted in, strip complete, stores issued): where does a
    program's time go, and what are the programs on the GPU doing at each moment?"""
    import torch

    from references import strided_softmax as ss

    for width, rows in ((4096, 16384), (8192, 8192), (32768, 2048)):
        x = torch.randn(width, rows, device="cuda", dtype=torch.float16).t()
        variant = (1024, 0, 32, 4) if width <= 4096 else (512, 0, 64, 8)
        tickets = ss.cdiv(rows, variant[2]) * ss.cdiv(width, variant[0])
        times = torch.zeros((tickets, 8), dtype=torch.int64, device="cuda")
        for _ in range(3):  # the last of three calls is read
            times.zero_()
            got = launch(x, variant, times, **flags)
        torch.cuda.synchronize()
        err = (got.double() - torch.softmax(x.double(), dim=-1)).abs().max().item()
        t = times.cpu()
        stamps = (t[:, :6] - t[:, 0].min()).double() / 1e3  # us from the first start
        span = stamps[:, 5].max().item()
        print(f"\n{rows} x {width} float16 transposed, slices {variant[0]} x {variant[2]}, {flags}, "
              f"{variant[3]} warps: {tickets} programs on {t[:, 7].unique().numel()} SMs, "
              f"span {span:.1f} us (max|err| {err:.1e})")
        d = stamps[:, 1:] - stamps[:, :-1]
        for k, name in enumerate(PHASES):
            q = torch.quantile(d[:, k], torch.tensor([0.1, 0.5, 0.9], dtype=torch.float64))
            print(f"   {name:7s} mean {d[:, k].mean():6.2f} us  p10 {q[0]:6.2f}  p50 {q[1]:6.2f}"
                  f"  p90 {q[2]:6.2f}")
        life = stamps[:, 5] - stamps[:, 0]
        print(f"   whole   mean {life.mean():6.2f} us; programs x mean life / span = "
              f"{tickets * life.mean() / span:5.1f} programs alive on average")
        per_strip = ss.cdiv(width, variant[0])
        starts = stamps[:, 1].reshape(-1, per_strip)
        print(f"   a strip's tickets taken over {(starts.max(1).values - starts.min(1).values).mean():.2f}"
              f" us on average ({per_strip} slices)")
        # What the programs alive are doing, in buckets of span / 24.
        edges = torch.linspace(0, span, 25, dtype=torch.float64)
        print("   from-to us:   alive " + " ".join(f"{n:>7s}" for n in PHASES))
        for a, b in zip(edges[:-1], edges[1:], strict=True):
            mid = (a + b) / 2
            phase = [((stamps[:, k] <= mid) & (mid < stamps[:, k + 1])).sum().item()
                     for k in range(5)]
            print(f"   {a:5.1f}-{b:5.1f}: {sum(phase):6d} " + " ".join(f"{n:7d}" for n in phase))
    return 0


def sass_all() -> int:
    from references import strided_softmax as ss
    from tools.compile_sm90 import compile_sm90, resources

    for variant in sorted({v for vs in VARIANTS.values() for v in vs}):
        block_r, reg_chunks, block_i, warps = variant
        reg_r = slice_positions(variant) - block_r
        constants = dict(BLOCK_I=block_i, BLOCK_R=block_r, REG_CHUNKS=reg_chunks,
                         CHUNK_R=ss._SMEM_CHUNK, TIMED=False, PAD=1, SPIN_LOAD=False,
                         TICKET_SEM="acq_rel", ONLINE=0, SLICES=64, VEC=8, EVEN_R=False,
                         OUT_ALONG_R=True, num_warps=warps)
        types = {"x_ptr": "*fp16", "out_ptr": "*fp16", "stats_ptr": "*fp32",
                 "counters_ptr": "*i32"}
        k = compile_sm90(exchange_regs_kernel, constants, types,
                         {"stride_oi", "n_r", "n_i", "runs_xr"}, warps, gluon=True,
                         maxnreg=max_registers(warps))
        r = resources(k)
        per_sm = min(65536 // (r["registers"] * 32 * warps), 232448 // (r["shared"] + 1024))
        print(f"smem {block_r:4d} + regs {reg_r:4d}, block_i {block_i}, {warps} warps: "
              f"{r['registers']:3d} regs, {r['stack']:3d} B spilled, {r['shared']:6d} B shared;"
              f" {per_sm} programs per SM, {per_sm * (block_r + reg_r) * block_i * 2 // 1024}"
              f" KiB of slices per SM", flush=True)
    for variant in sorted({v for vs in PERSISTENT.values() for v in vs}):
        block_r, block_i, warps, per_sm = variant
        constants = dict(BLOCK_I=block_i, BLOCK_R=block_r, CHUNK_R=ss._SMEM_CHUNK, SLICES=64,
                         VEC=8, EVEN_R=True, OUT_ALONG_R=True, num_warps=warps)
        types = {"x_ptr": "*fp16", "out_ptr": "*fp16", "stats_ptr": "*fp32",
                 "counters_ptr": "*i32"}
        k = compile_sm90(exchange_persistent_kernel, constants, types,
                         {"stride_oi", "n_r", "n_i", "runs_xr"}, warps, gluon=True,
                         maxnreg=max_registers(warps, per_sm))
        r = resources(k)
        fits = min(65536 // (r["registers"] * 32 * warps), 232448 // (r["shared"] + 1024))
        print(f"persistent {block_r} x {block_i}, {warps} warps: {r['registers']:3d} regs, "
              f"{r['stack']:3d} B spilled, {r['shared']:6d} B shared; {fits} programs fit an "
              f"SM, {per_sm} launched per SM", flush=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["time", "waves"]:
        sys.exit(time_waves())
    if sys.argv[1:] == ["time", "timeline"]:
        sys.exit(time_timeline())
    if sys.argv[1:] == ["time", "timeline-online"]:
        sys.exit(time_timeline(online=2))
    if sys.argv[1:] == ["time", "timeline-lastmerge"]:
        sys.exit(time_timeline(last_merges=True))
    if sys.argv[1:] == ["time", "timeline-padded"]:
        sys.exit(time_timeline(pad=32, spin_load=True, ticket_sem="relaxed"))
    if sys.argv[1:2] == ["time"]:
        sys.exit(time_all(sys.argv[2] if len(sys.argv) > 2 else "persistent"))
    sys.exit(sass_all())
