"""Is the 16-bit shared-memory exchange bound by its exponentials? A diagnostic.

    python3 tools/probe_strided_mufu.py sass     # no GPU: compile the variants for sm_90
    python3 tools/probe_strided_mufu.py time     # a GPU: check and time them

Strided softmax's shared-memory exchange (`softmax_across_exchange_smem_kernel`) computes two
exponentials per element: exp(x - m) for its slice's sum, exp(x - M) for the output. On an
H100/H200 the special-function unit does 16 exponentials per clock per SM, so for 2^26
elements the two passes alone take about 36 us of that unit, against 65 us for a copy of the
same bytes; the kernel takes 108 us at 4096 positions, as if the two did not overlap. This
probe times the kernel with each pass's exponentials
  - on the special-function unit (MUFU.EX2, as the reference),
  - as a degree-5 polynomial on the FMA pipes (the exponent split off by a rounding add, the
    same relative error as MUFU.EX2, about 1.6e-7),
  - split, even chunks on one unit and odd chunks on the other,
  - or left out (a wrong result, timed only to bound what the exponentials cost),
and one variant that waits for the slice's copies chunk by chunk, so the max pass overlaps
the copies still in flight. Each correct variant is compared with a float64 softmax first.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402
from triton.experimental.gluon.language.nvidia.ampere import async_copy  # noqa: E402

LOG2E = gl.constexpr(1.4426950408889634)
MUFU, POLY, SPLIT, NONE = 0, 1, 2, 3  # where a pass's exponentials run

# 2^t for t <= 0 on the FMA pipes. t = j + f with j = floor(t) (a round-down add of 1.5 * 2^23
# leaves j in the low bits of y) and f in [0, 1); 2^f by a degree-5 polynomial (relative error
# 1.6e-7, fitted on [0, 1)); 2^j by adding j to the exponent field. t below -126 gives 0.
_EXP2_POLY_ASM = gl.constexpr("""{
.reg .f32 t, y, j, f, p;
.reg .b32 yb, pb;
.reg .pred lo;
max.f32 t, $1, 0fC2FC0000;
add.rm.f32 y, t, 0f4B400000;
sub.f32 j, y, 0f4B400000;
sub.f32 f, t, j;
fma.rn.f32 p, f, 0f3AF618E3, 0f3C13480B;
fma.rn.f32 p, p, f, 0f3D64AA23;
fma.rn.f32 p, p, f, 0f3E75EAD4;
fma.rn.f32 p, p, f, 0f3F31727B;
fma.rn.f32 p, p, f, 0f3F7FFFFF;
mov.b32 yb, y;
mov.b32 pb, p;
shl.b32 yb, yb, 23;
add.s32 pb, pb, yb;
setp.lt.f32 lo, $1, 0fC2FC0000;
selp.b32 pb, 0, pb, lo;
mov.b32 $0, pb;
}""")


@gluon.jit
def _exp2(t, MODE: gl.constexpr, odd: gl.constexpr):
    if MODE == 0:
        return gl.exp2(t)
    elif MODE == 1:
        return gl.inline_asm_elementwise(_EXP2_POLY_ASM, "=f,f", [t], dtype=gl.float32,
                                         is_pure=True, pack=1)
    elif MODE == 2:
        if odd == 0:
            return gl.exp2(t)
        else:
            return gl.inline_asm_elementwise(_EXP2_POLY_ASM, "=f,f", [t], dtype=gl.float32,
                                             is_pure=True, pack=1)
    else:
        return t


@gluon.jit
def exchange_smem_variant_kernel(
    x_ptr, out_ptr, stats_ptr, counters_ptr, n_i, n_r, runs_xr, stride_oi, stride_or, n_slices,
    BLOCK_I: gl.constexpr, BLOCK_R: gl.constexpr, CHUNK_R: gl.constexpr, SLICES: gl.constexpr,
    VEC: gl.constexpr, EVEN_R: gl.constexpr, OUT_ALONG_R: gl.constexpr,
    SUM_EXP: gl.constexpr, OUT_EXP: gl.constexpr, CHUNKED_WAIT: gl.constexpr,
    num_warps: gl.constexpr,
):
    """references/strided_softmax.py's softmax_across_exchange_smem_kernel with the switches
    above; its exponential passes take two chunks a trip, so that SPLIT knows which is odd."""
    TPW_I: gl.constexpr = BLOCK_I // VEC
    LOAD: gl.constexpr = gl.BlockedLayout([1, VEC], [32 // TPW_I, TPW_I], [num_warps, 1], [1, 0])
    STORE: gl.constexpr = gl.BlockedLayout([8, 1], [CHUNK_R // 8, 256 // CHUNK_R],
                                           [1, num_warps], [0, 1])
    STATS: gl.constexpr = gl.BlockedLayout([1, 1], [32 // TPW_I, TPW_I], [num_warps, 1], [1, 0])
    SMEM: gl.constexpr = gl.SwizzledSharedLayout(VEC, 1, 1, [1, 0])
    NCHUNK: gl.constexpr = BLOCK_R // CHUNK_R

    ticket = gl.atomic_add(counters_ptr, 1)
    strip = (ticket // n_slices).to(gl.int64)
    slice_id = (ticket % n_slices).to(gl.int64)
    r0 = slice_id * BLOCK_R
    tile = gl.allocate_shared_memory(x_ptr.dtype.element_ty, [NCHUNK, CHUNK_R, BLOCK_I], SMEM)
    i = strip * BLOCK_I + gl.arange(0, BLOCK_I, layout=gl.SliceLayout(0, LOAD)).to(gl.int64)
    rc = gl.arange(0, CHUNK_R, layout=gl.SliceLayout(1, LOAD)).to(gl.int64)
    i_copy = gl.max_constancy((i - i % VEC) < n_i, [VEC])
    for cc in gl.static_range(NCHUNK):
        r = r0 + cc * CHUNK_R + rc
        async_copy.async_copy_global_to_shared(tile.index(cc),
                                               x_ptr + i[None, :] + r[:, None] * (runs_xr * VEC),
                                               mask=(r < n_r)[:, None] & i_copy[None, :])
        if CHUNKED_WAIT:
            async_copy.commit_group()
    if not CHUNKED_WAIT:
        async_copy.commit_group()
        async_copy.wait_group(0)
        gl.thread_barrier()

    m2 = gl.full([CHUNK_R, BLOCK_I], -float("inf"), x_ptr.dtype.element_ty, layout=LOAD)
    if CHUNKED_WAIT:  # a wait's count must be known when compiling: this loop is unrolled
        for cw in gl.static_range(NCHUNK):
            async_copy.wait_group(NCHUNK - 1 - cw)
            gl.thread_barrier()
            xm = tile.index(cw).load(LOAD)
            if not EVEN_R:
                xm = gl.where((r0 + cw * CHUNK_R + rc < n_r)[:, None], xm, -float("inf"))
            m2 = gl.maximum(m2, xm).to(m2.dtype)
    else:
        for c in range(NCHUNK):
            xm = tile.index(c).load(LOAD)
            if not EVEN_R:
                xm = gl.where((r0 + c * CHUNK_R + rc < n_r)[:, None], xm, -float("inf"))
            m2 = gl.maximum(m2, xm).to(m2.dtype)
    m = gl.max(m2, axis=0).to(gl.float32)
    shift = gl.where(m == -float("inf"), 0.0, m)
    s2 = gl.zeros([CHUNK_R, BLOCK_I], gl.float32, layout=LOAD)
    for c2 in range(NCHUNK // 2):  # two chunks a trip: even ones, then odd ones (SPLIT)
        for h in gl.static_range(2):
            c = 2 * c2 + h
            p = _exp2((tile.index(c).load(LOAD).to(gl.float32) - shift[None, :]) * LOG2E,
                      SUM_EXP, h)
            if not EVEN_R:
                p = gl.where((r0 + c * CHUNK_R + rc < n_r)[:, None], p, 0.0)
            s2 += p
    slot = slice_id * n_i + i
    gl.store(stats_ptr + slot, m, mask=i < n_i)
    gl.store(stats_ptr + n_slices * n_i + slot, gl.sum(s2, axis=0), mask=i < n_i)

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

    i_o = strip * BLOCK_I + gl.arange(0, BLOCK_I, layout=gl.SliceLayout(0, STORE)).to(gl.int64)
    rc_o = gl.arange(0, CHUNK_R, layout=gl.SliceLayout(1, STORE)).to(gl.int64)
    for c2 in range(NCHUNK // 2):
        for h in gl.static_range(2):
            c = 2 * c2 + h
            x = tile.index(c).load(LOAD).to(gl.float32)
            y = (_exp2((x - m_all[None, :]) * LOG2E, OUT_EXP, h) * inv_s[None, :])
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


VARIANTS = {  # label: (SUM_EXP, OUT_EXP, CHUNKED_WAIT); "wrong" ones only bound a cost
    "MUFU both passes (as the reference)": (MUFU, MUFU, False),
    "poly both passes": (POLY, POLY, False),
    "MUFU sum, poly output": (MUFU, POLY, False),
    "split both passes": (SPLIT, SPLIT, False),
    "chunked wait, MUFU": (MUFU, MUFU, True),
    "chunked wait, split": (SPLIT, SPLIT, True),
    "wrong: no exp in the output pass": (MUFU, NONE, False),
    "wrong: no exp at all": (NONE, NONE, False),
}
SHAPES = ((4096, 16384), (8192, 8192), (16384, 4096), (32768, 2048))  # (width, rows): 2^26


def launch(x, flags):
    import torch

    from references import strided_softmax as ss

    p = ss.plan(x, smem=True)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    stats = torch.empty((2, p.splits, p.n_i), dtype=torch.float32, device=x.device)
    counters = torch.zeros(1 + p.grid, dtype=torch.int32, device=x.device)
    sum_exp, out_exp, chunked = flags
    exchange_smem_variant_kernel[(p.grid * p.splits,)](
        x, out, stats, counters, p.n_i, p.n_r, p.stride_xr // (16 // x.element_size()),
        p.stride_oi, p.stride_or, p.splits, BLOCK_I=p.block_i, BLOCK_R=p.block_r,
        CHUNK_R=ss._SMEM_CHUNK, SLICES=ss._pow2(p.splits), VEC=16 // x.element_size(),
        EVEN_R=p.n_r % p.block_r == 0, OUT_ALONG_R=p.stride_or == 1, SUM_EXP=sum_exp,
        OUT_EXP=out_exp, CHUNKED_WAIT=chunked, num_warps=p.num_warps)
    return out


def time_all() -> int:
    import torch

    from benchmarks import harness
    from references import strided_softmax as ss
    from tools._timing import graph_medians_us

    plan = harness.PLANS["sweep"]
    for dtype in (torch.float16, torch.bfloat16):
        for width, rows in SHAPES:
            x = torch.randn(width, rows, device="cuda", dtype=dtype).t()  # a transposed view
            x[:, :: 7] *= 30  # some rows with a wide range, so 2^t reaches far below 0
            expected = torch.softmax(x.double(), dim=-1)
            dst = torch.empty_like(x.t())
            calls = {"copy": lambda: dst.copy_(x.t()), "reference": lambda: ss.softmax(x)}
            for label, flags in VARIANTS.items():
                got = launch(x, flags).double()
                err = (got - expected).abs()
                allowed = 2 * torch.finfo(dtype).eps * expected.abs() + (
                    6e-8 if dtype == torch.float16 else 1e-30)
                fits = "ok" if bool((err <= allowed).all()) else "OUT OF TOLERANCE"
                verdict = "" if label.startswith("wrong") else \
                    f" max|err| {err.max().item():.1e} {fits}"
                calls[label + verdict] = lambda flags=flags: launch(x, flags)
            medians = graph_medians_us(calls.values(), plan)
            print(f"\n{rows} x {width} {str(dtype)[6:]} transposed (graph timing)", flush=True)
            for label, us in zip(calls, medians, strict=True):
                print(f"   {us:8.1f} us  {medians[0] / us:5.2f} of copy  {label}", flush=True)
    return 0


def sass_all() -> int:
    import collections
    import re

    from references import strided_softmax as ss
    from tools.compile_sm90 import compile_sm90, resources, sass

    for label, (sum_exp, out_exp, chunked) in VARIANTS.items():
        constants = dict(BLOCK_I=32, BLOCK_R=1024, CHUNK_R=ss._SMEM_CHUNK, SLICES=4, VEC=8,
                         EVEN_R=True, OUT_ALONG_R=True, SUM_EXP=sum_exp, OUT_EXP=out_exp,
                         CHUNKED_WAIT=chunked, num_warps=4)
        types = {"x_ptr": "*fp16", "out_ptr": "*fp16", "stats_ptr": "*fp32",
                 "counters_ptr": "*i32"}
        k = compile_sm90(exchange_smem_variant_kernel, constants, types,
                         {"stride_oi", "n_r", "n_i", "runs_xr"}, 4, gluon=True)
        ops = collections.Counter(m.group(1).split(".")[0] for m in re.finditer(
            r"/\*[0-9a-f]{4,6}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)", sass(k)))
        r = resources(k)
        print(f"{label:36s} {r['registers']:4d} regs {r['stack']:3d} B spilled; MUFU "
              f"{ops['MUFU']}, FFMA {ops['FFMA']}, BAR {ops['BAR']}, instructions "
              f"{sum(ops.values())}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(time_all() if sys.argv[1:] == ["time"] else sass_all())
