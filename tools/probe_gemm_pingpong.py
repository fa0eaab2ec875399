"""A warp-specialized "ping-pong" fused GEMM in Gluon, next to the reference and cuBLAS. A diagnostic.

    python3 tools/probe_gemm_pingpong.py sass    # no GPU: compile for sm_90, registers, spills
    python3 tools/probe_gemm_pingpong.py check   # outputs on ragged shapes (run under timeout)
    python3 tools/probe_gemm_pingpong.py time    # 4096^3 and 8192^3, bf16 and fp16

At 4096^3 the reference's persistent kernel reaches 0.96-0.97x torch.mm. The waves probe
(diagnostics/probe-gemm-waves-*) points at the epilogue: while one tile's bias, ReLU and store
run, the tensor cores wait. cuBLAS's Hopper kernels hide it by "ping-pong": two consumer
warpgroups take turns, one multiplying while the other finishes its previous tile.

Here: a persistent kernel (one program per SM) with three partitions (`gl.warp_specialize`):
a one-warp loader that streams the A and B tiles of the program's output tiles, in order,
through a ring of shared-memory stages; and two consumer warpgroups, each with its own
128 x 128 fp32 accumulator, taking the program's output tiles in turn (even, odd). Because
the loader fills the ring in tile order, one consumer's products run while the other does its
epilogue (bias in fp32, ReLU, one rounding, a TMA store). The contract is the reference's
(fp32 accumulation, fp32 epilogue); contiguous row-major A (M, K) and B (K, N) only.

Measured on the H200 (diagnostics/probe-gemm-pingpong-*, graph timing, interleaved rounds): no
faster than the reference's Triton kernel. 4096^3: 0.960x torch.mm in bf16 and 0.969x in fp16
(the reference 0.969x and 0.969x in the same rounds); 8192^3: 1.007x and 1.014x (the reference
1.020x and 1.026x). It compiles for sm_90 without spills (diagnostics/compile-gemm-pingpong-*).
So the epilogue is not what the reference loses at 4096^3, or not all of it. Its `check` then
stopped at its first shape (K = 65: TMA needs 16-byte strides); the shapes are aligned now.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools._gluon_hopper import (  # noqa: E402
    fence_async_shared,
    gl,
    gluon_jit,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

BLOCK_M, BLOCK_N, BLOCK_K, STAGES = 128, 128, 64, 4
MAXNREG = 168  # 12 warps (two consumer warpgroups and the loader's) x 32 x 168 fit 64K


@gluon_jit
def _tile_coords(tile, tiles_m, tiles_n, GROUP: gl.constexpr):
    """Output tile `tile` in grouped order: GROUP row blocks (8 here) share each column sweep
    (L2 reuse, lesson 3)."""
    per_group = GROUP * tiles_n
    first_m = (tile // per_group) * GROUP
    rows = gl.minimum(tiles_m - first_m, GROUP)
    pid_m = first_m + (tile % per_group) % rows
    pid_n = (tile % per_group) // rows
    return pid_m, pid_n


@gluon_jit
def _loader(a_desc, b_desc, a_smem, b_smem, ready, empty, tiles_m, tiles_n, k_steps):
    """One warp: every k-step of every output tile of this program, in order, into the ring."""
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    BN: gl.constexpr = b_desc.block_type.shape[1]
    NSTAGES: gl.constexpr = a_smem.type.shape[0]
    i = 0
    for tile in range(gl.program_id(0), tiles_m * tiles_n, gl.num_programs(0)):
        pid_m, pid_n = _tile_coords(tile, tiles_m, tiles_n, 8)
        for k in range(k_steps):
            stage = i % NSTAGES
            # "empty" barriers start with their previous phase complete: the first round passes
            mbarrier.wait(empty.index(stage), ((i // NSTAGES) & 1) ^ 1)
            mbarrier.expect(ready.index(stage),
                            a_desc.block_type.nbytes + b_desc.block_type.nbytes)
            tma.async_copy_global_to_shared(a_desc, [pid_m * BM, k * BK], ready.index(stage),
                                            a_smem.index(stage))
            tma.async_copy_global_to_shared(b_desc, [k * BK, pid_n * BN], ready.index(stage),
                                            b_smem.index(stage))
            i += 1


@gluon_jit
def _consume(c: gl.constexpr, a_desc, b_desc, c_desc, bias_ptr, a_smem, b_smem, c_smem, ready,
             empty, turn, tiles_m, tiles_n, k_steps, n_cols, HAS_BIAS: gl.constexpr,
             APPLY_RELU: gl.constexpr):
    """One warpgroup: the program's output tiles number c, c + 2, c + 4, ... (in its order).

    The two warpgroups take the ring's stages in turns, a whole tile each: a warpgroup starts
    a tile's k-steps only once the other has taken every stage of the tile before (`turn`).
    Without that order the warpgroup that waits for a later tile could be many phases ahead
    of a stage's "ready" barrier, and a barrier only tells phases apart by parity: it would
    take an earlier tile's data (the first draft had that race; found in review, before any run)."""
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BN: gl.constexpr = b_desc.block_type.shape[1]
    NSTAGES: gl.constexpr = a_smem.type.shape[0]
    ACC: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                  instr_shape=[16, BN, 16])
    cols0 = gl.arange(0, BN, layout=gl.SliceLayout(0, ACC))
    local = 0  # this program's tile count so far: tile `local` is this consumer's if local % 2 == c
    mine = 0  # this consumer's tiles so far
    for tile in range(gl.program_id(0), tiles_m * tiles_n, gl.num_programs(0)):
        if local % 2 == c:
            pid_m, pid_n = _tile_coords(tile, tiles_m, tiles_n, 8)
            first = local * k_steps  # ring position of this tile's first k-step
            if local > 0:  # the other warpgroup has taken the previous tile's stages
                mbarrier.wait(turn.index(c), (mine - 1 + c) & 1)
            acc = gl.zeros([BM, BN], gl.float32, ACC)
            for k in range(k_steps):
                i = first + k
                stage = i % NSTAGES
                mbarrier.wait(ready.index(stage), (i // NSTAGES) & 1)
                acc = warpgroup_mma(a_smem.index(stage), b_smem.index(stage), acc, is_async=True)
                # One product left in flight: the one before it is done with its stage.
                acc = warpgroup_mma_wait(1, deps=[acc])
                mbarrier.arrive(empty.index((i - 1 + NSTAGES) % NSTAGES), count=1, pred=k > 0)
            mbarrier.arrive(turn.index(1 - c), count=1)  # the other's turn: its next tile
            acc = warpgroup_mma_wait(0, deps=[acc])
            mbarrier.arrive(empty.index((first + k_steps - 1) % NSTAGES), count=1)
            # Epilogue in fp32: bias, ReLU, then one rounding at the store.
            if HAS_BIAS:
                cols = pid_n * BN + cols0
                acc = acc + gl.load(bias_ptr + cols, mask=cols < n_cols, other=0.0)[None, :]
            if APPLY_RELU:
                acc = gl.maximum(acc, 0.0)
            tma.store_wait(0)  # this warpgroup's previous tile has left c_smem
            c_smem.index(c).store(acc.to(c_desc.dtype))
            fence_async_shared()
            tma.async_copy_shared_to_global(c_desc, [pid_m * BM, pid_n * BN], c_smem.index(c))
            mine += 1
        local += 1
    tma.store_wait(0)


@gluon_jit
def _consumer_1(a_desc, b_desc, c_desc, bias_ptr, a_smem, b_smem, c_smem, ready, empty, turn,
                tiles_m, tiles_n, k_steps, n_cols, HAS_BIAS: gl.constexpr,
                APPLY_RELU: gl.constexpr):
    _consume(1, a_desc, b_desc, c_desc, bias_ptr, a_smem, b_smem, c_smem, ready, empty, turn,
             tiles_m, tiles_n, k_steps, n_cols, HAS_BIAS, APPLY_RELU)


@gluon_jit
def gemm_pingpong_kernel(a_desc, b_desc, c_desc, bias_ptr, M, N, K,
                         HAS_BIAS: gl.constexpr, APPLY_RELU: gl.constexpr,
                         NUM_STAGES: gl.constexpr, num_warps: gl.constexpr):
    gl.static_assert(num_warps == 4, "the default partition is one consumer warpgroup")
    dtype: gl.constexpr = a_desc.dtype
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    BN: gl.constexpr = b_desc.block_type.shape[1]
    a_smem = gl.allocate_shared_memory(dtype, [NUM_STAGES, BM, BK], a_desc.layout)
    b_smem = gl.allocate_shared_memory(dtype, [NUM_STAGES, BK, BN], b_desc.layout)
    c_smem = gl.allocate_shared_memory(dtype, [2, BM, BN], c_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(NUM_STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)  # each stage serves one consumer
    for c in gl.static_range(2):
        mbarrier.init(turn.index(c), count=1)
    tiles_m = gl.cdiv(M, BM)
    tiles_n = gl.cdiv(N, BN)
    k_steps = gl.cdiv(K, BK)
    args = (a_desc, b_desc, c_desc, bias_ptr, a_smem, b_smem, c_smem, ready, empty, turn,
            tiles_m, tiles_n, k_steps, N, HAS_BIAS, APPLY_RELU)
    gl.warp_specialize([
        (_consume, (0,) + args),
        (_consumer_1, args),
        (_loader, (a_desc, b_desc, a_smem, b_smem, ready, empty, tiles_m, tiles_n, k_steps)),
    ], [4, 1], [232, 24])


def gemm_pingpong(a, b, bias=None, relu=True):
    """relu(a @ b + bias) through the ping-pong kernel (contiguous 16-bit a (M, K), b (K, N))."""
    import torch
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    m, k = a.shape
    n = b.shape[1]
    gdt = gl.bfloat16 if a.dtype == torch.bfloat16 else gl.float16
    out = torch.empty((m, n), dtype=a.dtype, device=a.device)

    def desc(t, block):
        return TensorDescriptor.from_tensor(t, block,
                                            gl.NVMMASharedLayout.get_default_for(block, gdt))

    sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    tiles = -(-m // BLOCK_M) * -(-n // BLOCK_N)
    gemm_pingpong_kernel[(min(sms, tiles),)](
        desc(a, [BLOCK_M, BLOCK_K]), desc(b, [BLOCK_K, BLOCK_N]), desc(out, [BLOCK_M, BLOCK_N]),
        bias if bias is not None else out, m, n, k, HAS_BIAS=bias is not None, APPLY_RELU=relu,
        NUM_STAGES=STAGES, num_warps=4, maxnreg=MAXNREG)
    return out


def compile_for_sm90(dtype: str = "bf16"):
    from triton.experimental.gluon import language as gl

    from tools.compile_sm90 import compile_sm90

    gdt = gl.bfloat16 if dtype == "bf16" else gl.float16

    def desc(block):
        layout = gl.NVMMASharedLayout.get_default_for(block, gdt)
        return f"tensordesc<{dtype}[{block[0]}, {block[1]}],{layout!r}>"

    types = dict(a_desc=desc([BLOCK_M, BLOCK_K]), b_desc=desc([BLOCK_K, BLOCK_N]),
                 c_desc=desc([BLOCK_M, BLOCK_N]), bias_ptr="*fp32")
    constants = dict(HAS_BIAS=True, APPLY_RELU=True, NUM_STAGES=STAGES, num_warps=4)
    return compile_sm90(gemm_pingpong_kernel, constants, types, {"M", "N", "K"}, 4, gluon=True,
                        maxnreg=MAXNREG)


def main(argv: list[str]) -> int:
    mode = argv[0] if argv else "time"
    if mode == "sass":
        import triton

        from tools.compile_sm90 import resources, sass
        from tools.probe_attention_wgmma import _ptxas_warnings

        print(f"sm_90, Triton {triton.__version__}; per thread (at launch) / per program")
        for dtype in ("bf16", "fp16"):
            compiled = compile_for_sm90(dtype)
            r = resources(compiled)
            code = sass(compiled)
            print(f"{dtype} {BLOCK_M}x{BLOCK_N}x{BLOCK_K}, {STAGES} stages: {r['registers']} "
                  f"registers, {r['stack']} bytes spilled, {r['shared'] // 1024} KiB shared; "
                  f"{code.count('HGMMA')} HGMMA, {code.count('USETMAXREG')} USETMAXREG",
                  flush=True)
            for note in _ptxas_warnings(compiled):
                print(f"      ptxas: {note}")
        return 0

    import torch

    from benchmarks import harness
    from references import fused_gemm as fg
    from tools._timing import graph_medians_us
    from tools.probe_gemm_tiles import _operands, _print_rows, _rel_err

    if not torch.cuda.is_available():
        print("probe_gemm_pingpong times kernels on a GPU; none is visible here")
        return 2
    if mode == "check":
        worst = 0.0
        # Ragged in every tile dimension, with rows of 16-byte multiples (TMA's rule)
        for m, n, k in ((129, 264, 72), (1000, 776, 336), (4096, 4096, 4096), (300, 5000, 64)):
            for dtype in (torch.bfloat16, torch.float16):
                a, b, bias, expected, _ = _operands(m, n, k, dtype, seed=m + n + k)
                err = _rel_err(gemm_pingpong(a, b, bias), expected)
                worst = max(worst, err)
                print(f"check {m}x{n}x{k} {str(dtype)[6:]}: rel.err {err:.1e}", flush=True)
        return 0 if worst < 2e-2 else 1
    plan = harness.PLANS["sweep"]
    for size in (4096, 8192):
        for dtype in (torch.bfloat16, torch.float16):
            a, b, bias, expected, calls = _operands(size, size, size, dtype, seed=size)
            calls["reference (persistent, Triton)"] = lambda a=a, b=b, bias=bias: \
                fg.gemm_bias_relu(a, b, bias)
            calls[f"ping-pong (Gluon) rel.err {_rel_err(gemm_pingpong(a, b, bias), expected):.1e}"] \
                = lambda a=a, b=b, bias=bias: gemm_pingpong(a, b, bias)
            medians = graph_medians_us(calls.values(), plan)
            _print_rows(f"{size}^3 {str(dtype)[6:]}", calls, medians, 2 * size ** 3)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
