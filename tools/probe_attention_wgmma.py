"""Attention written in Gluon with explicit asynchronous warpgroup MMAs. A diagnostic.

    python3 tools/probe_attention_wgmma.py sass a c e h    # no GPU: compile for sm_90
    python3 tools/probe_attention_wgmma.py check h         # one variant's outputs, small problems
    python3 tools/probe_attention_wgmma.py time h          # those variants and the reference
    python3 tools/probe_attention_wgmma.py time h --four-warps  # at one-warpgroup tiles
    python3 tools/probe_attention_wgmma.py paths 64        # the reference's two paths, many grids
    python3 tools/probe_attention_wgmma.py paths-few 64 128  # the same on grids short of SMs
    python3 tools/probe_attention_wgmma.py paths-check     # the path rule against its predecessor
    python3 tools/probe_attention_wgmma.py paths-check --rest  # ... on the other 17 grids whose path changed

(Run `check` under `timeout`: a kernel whose barriers never complete hangs its process.)

The gap to SDPA-cuDNN at d = 128 (0.80x) is per-SM efficiency: cuDNN's Hopper kernels run the
softmax of one key block while the tensor cores work on another, and Triton 3.6 waits for
each Q K^T right after issuing it (diagnostics/compile-attention-pipelined-*). Gluon
(`triton.experimental.gluon`) lets a kernel issue warpgroup MMAs itself and choose where to
wait for them. tools/_wgmma_variants/ holds one Hopper kernel (TMA loads into a ring of K and V
stages with mbarriers, 16 query rows per warp, P passed to the second product in registers)
with the waits placed in eight ways, (a) to (h), warp-specialized versions ((w), (w3), (p),
(r)) and two pipelined ones, (u) and (v); each module's docstring says how. Kept in the tree:
(a), (c), (e), (h), (v) and (vn), the ones the findings below rest on. (w) was adopted: it is the
reference's Hopper path, references/_attention_hopper.py. (b), (d), (f) and (g) are in git history (`git show
4e44817:tools/_wgmma_variants/b.py`, and so on), as is their output; (w) and (w3) at 9c0a88e,
(p) at 5f1eca4, (r) at 3cc6e61, (u) at bc27e9e.

`sass` compiles each variant for sm_90 and prints registers, spills, ptxas's own warning
when it serializes the MMAs, and, inside the key loop, the machine code between the wait that
releases S_j and the wait that releases P V: the softmax overlaps the tensor cores only if
its exponentials (MUFU.EX2) sit between the two. `check` compares outputs with cuDNN's on
small ragged problems; `time` times the variants at their tiles (TILES, or the module's own)
next to the reference's two paths, its Triton kernel (`warp_specialize=False`) and its Hopper
kernel (`warp_specialize=True`), and cuDNN (bf16, graph timing).

Measured on the H200 (bf16, graph timing; benchmarks/results/diagnostics/probe-attention-wgmma-*,
compile-attention-wgmma-*), ratios to SDPA-cuDNN in the same rounds:
- (a) to (f): every output right; none faster than the Triton kernel (16 heads of 4096,
  d = 128: best 288 us against 257 us). In (a), (b), (d), (e), (f) ptxas places the wait for
  P V right after the wait for S, before the exponentials; in (c) it serializes every MMA.
- (g), (h): one side-effecting instruction (`nanosleep.u32 0`, through inline assembly that
  also passes l_i on) just before the last wait. ptxas does not move the wait above it, so
  the exponentials now run between the two waits, while P V is on the tensor cores. (h) at
  64 x 128 over 4 warps: d = 64 causal 0.98x-0.99x (16 x 4096) and 1.18x (4 x 16384), against
  the Triton kernel's 0.88x and 1.00x; no better elsewhere.
- (w): warp specialized, (h)'s loop in two consumer warpgroups, 128 x 128 tiles, 2 stages
  (two runs). d = 128: non-causal 0.97x / 1.00x / 0.99x-1.00x (16 x 4096, 4 x 16384,
  64 x 8192) against 0.80x / 0.81x / 0.80x-0.81x for the Triton kernel; causal 1.04x-1.05x /
  1.35x-1.37x / 1.05x against 0.92x / 1.08x-1.10x / 0.86x-0.87x. d = 64: non-causal
  0.91x-0.92x (Triton kernel 0.95x-0.96x), causal 0.94x / 1.20x / 0.91x (Triton kernel 0.88x /
  1.00x / 0.95x). 3 stages at d = 128 (224 KiB of shared memory) changed nothing. On one
  head of 16384 (128 programs): 1.01x without a mask (Triton kernel with key splits 0.84x),
  1.03x with one (1.47x).
- (w3): (w) with three consumer warpgroups (192-row programs), for d = 64: slower everywhere
  (192 x 128 spills at 128 registers per thread: 0.24x-0.36x; 192 x 64: 0.64x-0.94x).
- (p): the reference's Hopper path with FlashAttention-3's ping-pong order (the two consumer
  warpgroups issue each iteration's products in turns, through a pair of barriers): right,
  and 1-5% slower everywhere than without it.
- (r): the reference's Hopper path with K and V handed back together (one barrier arrive per
  key block instead of two): with 3 stages the same speed, with 2 a third slower.
- (u), compiled only: (c) with S_{j+1} issued before the softmax of S_j and the loop unrolled
  by two; ptxas still serializes every product, as in (c).
- (v): the reference's Hopper path with S_{j+1} and P_{j-1} V_{j-1} issued before the softmax
  of S_j and both waited for at the end of the step (so nothing is in flight at the loop's
  back edge: ptxas compiles it without serializing, and without spills; P goes through shared
  memory at d = 128). Right, and 0.57x-0.76x cuDNN against the reference's 0.91x-1.31x.
- (vn): (v) without its mask (which in (v) runs as selects on every step): right without a
  causal mask, 13-18% less time than (v) at d = 64, still far slower than the reference
  (0.67x against 0.91x on 16 x 4096, d = 64).
(w) became the reference's Hopper path (streaming_attention's `_warp_specialize_pays` says
where it is picked: d = 128, and causal d = 64 on grids of 1.5 to 4 programs per SM, from
`paths 64`, which times the reference's two paths over 13 grids).
Not timed, from the sm_90 code alone: at d = 64 the exponentials (16 per clock per SM on the
SFU) take about as long as the products, so computing them two at a time in half precision
(`ex2.approx.f16x2`) looked like a way to halve that. ptxas lowers each such instruction to
two MUFU.EX2.F16, one per half: the same number of SFU operations, so it was dropped.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools._timing import (  # noqa: E402
    attention_problems,
    graph_medians_us,
    matching,
    sdpa_cudnn,
    time_attention_against_cudnn,
)

TILES = {128: [(128, 128, 8, 2), (128, 64, 8, 3), (64, 64, 4, 2), (64, 128, 4, 2)],
         64: [(128, 128, 8, 3), (128, 64, 8, 4), (64, 64, 4, 3), (64, 128, 4, 2)]}
# `time --four-warps`: one warpgroup per program, several programs per SM
FOUR_WARP_TILES = {128: [(128, 32, 4, 2), (128, 32, 4, 3), (64, 32, 4, 3), (64, 64, 4, 2)],
                   64: [(128, 64, 4, 2), (128, 32, 4, 3), (64, 128, 4, 2), (64, 64, 4, 3)]}


def launcher(module, q, k, v, causal, block_m, block_n, num_warps, stages):
    import torch
    import triton
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    heads, n, d = q.shape
    if hasattr(module, "launch"):  # a module shaped like references/_attention_hopper.py
        def run_module():
            out = torch.empty_like(q)
            module.launch(q, k, v, out, causal, d ** -0.5 * 1.4426950408889634)
            return out
        return run_module
    gdt = gl.bfloat16 if q.dtype == torch.bfloat16 else gl.float16

    def desc(t, rows):
        layout = gl.NVMMASharedLayout.get_default_for([1, rows, d], gdt)
        return TensorDescriptor(t, list(t.shape), list(t.stride()), [1, rows, d], layout)

    scale = d ** -0.5 * 1.4426950408889634

    q_rows = 64 if getattr(module, "SPLIT_Q", False) else block_m  # one warpgroup's rows
    extra = {"maxnreg": module.MAXNREG} if hasattr(module, "MAXNREG") else {}

    def run():
        out = torch.empty_like(q)
        module.attention_wgmma_kernel[(triton.cdiv(n, block_m), heads)](
            desc(q, q_rows), desc(k, block_n), desc(v, block_n), desc(out, q_rows), n, scale,
            HEAD_DIM=d, BLOCK_M=block_m, BLOCK_N=block_n, IS_CAUSAL=causal, STAGES=stages,
            num_warps=num_warps, **extra, **getattr(module, "CONSTEXPRS", {}))
        return out

    return run


def compile_variant(module, head_dim, block_m, block_n, num_warps, stages, causal):
    """The variant's kernel compiled for sm_90 (bf16), as the launcher above would call it."""
    from triton.experimental.gluon import language as gl

    from tools.compile_sm90 import compile_sm90

    def desc(rows):
        layout = gl.NVMMASharedLayout.get_default_for([1, rows, head_dim], gl.bfloat16)
        return f"tensordesc<bf16[1, {rows}, {head_dim}],{layout!r}>"

    q_rows = 64 if getattr(module, "SPLIT_Q", False) else block_m  # one warpgroup's rows
    types = dict(q_desc=desc(q_rows), k_desc=desc(block_n), v_desc=desc(block_n),
                 o_desc=desc(q_rows), qk_scale="fp32")
    constants = dict(HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n, IS_CAUSAL=causal,
                     STAGES=stages, num_warps=num_warps, **getattr(module, "CONSTEXPRS", {}))
    return compile_sm90(module.attention_wgmma_kernel, constants, types, {"n_ctx"}, num_warps,
                        gluon=True, maxnreg=getattr(module, "MAXNREG", None))


def _ptxas_warnings(compiled) -> list[str]:
    """ptxas's performance notes (C75xx) for the compiled kernel's PTX."""
    import subprocess
    import tempfile

    import triton

    ptxas = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"
    with tempfile.TemporaryDirectory() as tmp:
        ptx = Path(tmp) / "k.ptx"
        ptx.write_text(compiled.asm["ptx"])
        run = subprocess.run([str(ptxas), "-arch=sm_90a", "-v", str(ptx), "-o",
                              str(Path(tmp) / "k.cubin")], capture_output=True, text=True)
    return [line.split("Potential Performance Loss: ")[-1].split(" in the function")[0]
            for line in (run.stdout + run.stderr).splitlines() if "(C75" in line]


def _between_waits(machine_code: str) -> list[str]:
    """For each wait that leaves one MMA group in flight (WARPGROUP.DEPBAR.LE gsb0, 0x1): what
    runs until the next wait, summarised (MUFU.EX2 counted, branches and barriers named)."""
    lines = [line.split("*/", 1)[1].split(";")[0].strip()
             for line in machine_code.splitlines() if line.strip().startswith("/*")]
    lines = [line for line in lines if line]
    found = []
    for i, line in enumerate(lines):
        if "DEPBAR.LE gsb0, 0x1" not in line:
            continue
        parts, exps = [], 0
        for later in lines[i + 1:]:
            if "MUFU.EX2" in later:
                exps += 1
                continue
            if "DEPBAR" in later or "BRA" in later or "BAR.SYNC" in later:
                if exps:
                    parts.append(f"{exps} MUFU.EX2")
                    exps = 0
                if "DEPBAR" in later:
                    parts.append(later)
                else:
                    parts.append("branch" if "BRA" in later else "bar.sync")
                if "DEPBAR.LE gsb0, 0x0" in later:
                    break
        found.append(" -> ".join(parts))
    return found


def sass_report(modules) -> int:
    import triton

    from tools.compile_sm90 import resources, sass

    print(f"sm_90, Triton {triton.__version__}, bf16, non-causal; per thread / per program")
    for name, module in modules.items():
        for head_dim, tiles in getattr(module, "TILES", TILES).items():
            for tile in tiles:
                compiled = compile_variant(module, head_dim, *tile, causal=False)
                r = resources(compiled)
                print(f"({name}) d={head_dim} {tile[0]}x{tile[1]}/{tile[2]}w/{tile[3]}s: "
                      f"{r['registers']} registers, {r['stack']} bytes spilled, "
                      f"{r['shared'] // 1024} KiB shared", flush=True)
                for note in _ptxas_warnings(compiled):
                    print(f"      ptxas: {note}")
                for k, text in enumerate(_between_waits(sass(compiled))):
                    print(f"      wait #{k + 1} for S, then: {text}")
    return 0


def main(argv: list[str]) -> int:
    import torch

    from benchmarks import harness
    from references import streaming_attention as sa

    mode, names = argv[0], argv[1:]
    four_warps = "--four-warps" in names
    names = [name for name in names if name != "--four-warps"]
    if mode == "paths":  # the reference's two paths over many grids: where each one wins
        return time_paths(names or ["64"])
    if mode == "paths-few":  # the same on grids of 0.5 to 3 Hopper programs per SM
        return time_paths(names or ["64"], FEW_SHAPES)
    if mode == "paths-check":  # the launcher's choice of path against the rule before it
        return check_paths(shapes=CHECK_SHAPES_REST if "--rest" in names else CHECK_SHAPES)
    modules = {name: importlib.import_module(f"tools._wgmma_variants.{name}") for name in names}
    if mode == "sass":
        return sass_report(modules)
    if not torch.cuda.is_available():
        print("probe_attention_wgmma times kernels on a GPU; none is visible here")
        return 2
    if mode == "check":  # small and ragged problems: masks and tails
        right = total = 0
        for heads, n, d, causal, q, k, v, _flops in attention_problems([(2, 1000), (3, 257),
                                                                       (1, 64), (1, 17)]):
            ref = sdpa_cudnn(q, k, v, causal)
            calls = {f"{name} {t}": launcher(mod, q, k, v, causal, *t)
                     for name, mod in modules.items()
                     for t in getattr(mod, "TILES", TILES).get(d, [])}
            kept = matching(ref, calls, tolerance=0.02)
            right, total = right + len(kept), total + len(calls)
            print(f"check H={heads} N={n} d={d} causal={causal}: {len(kept)}/{len(calls)} right",
                  flush=True)
        return 0 if right == total else 1
    tiles = FOUR_WARP_TILES if four_warps else TILES
    plan = harness.PLANS["sweep"]
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, graph timing, "
          f"{plan.samples} samples, bf16")
    for heads, n, d, causal, q, k, v, flops in attention_problems([(16, 4096), (4, 16384),
                                                                   (64, 8192), (1, 16384)]):
        cudnn = sdpa_cudnn(q, k, v, causal)
        calls = {"sdpa-cudnn": cudnn,
                 "reference, Triton": lambda q=q, k=k, v=v, c=causal: sa.attention_heads(
                     q, k, v, causal=c, warp_specialize=False),
                 "reference, Hopper": lambda q=q, k=k, v=v, c=causal: sa.attention_heads(
                     q, k, v, causal=c, warp_specialize=True)}
        calls |= matching(cudnn, {f"{name} {t[0]}x{t[1]}/{t[2]}w/{t[3]}s":
                                  launcher(mod, q, k, v, causal, *t)
                                  for name, mod in modules.items()
                                  for t in getattr(mod, "TILES", tiles).get(d, [])})
        times = graph_medians_us(list(calls.values()), plan)
        print(f"H={heads} N={n} d={d} causal={causal}:", flush=True)
        for label, us in zip(calls, times, strict=True):
            print(f"   {label:26s} {us:8.1f} us  {flops / us / 1e6:5.0f} TFLOP/s  "
                  f"{times[0] / us:.2f}x cudnn", flush=True)
    return 0


PATH_SHAPES = [(8, 4096), (16, 4096), (32, 4096), (64, 4096), (4, 8192), (8, 8192),
               (16, 8192), (32, 8192), (64, 8192), (2, 16384), (4, 16384), (8, 16384),
               (16, 16384)]


# Grids of 0.5 to 3 Hopper programs (128 rows) per SM on 132 SMs, most of them split by the
# Triton kernel's launcher (kv_splits_for).
FEW_SHAPES = [(1, 8192), (3, 4096), (1, 16384), (2, 8192), (4, 4096), (5, 4096), (6, 4096),
              (3, 8192), (2, 16384), (3, 16384)]


def time_paths(dims: list[str], shapes=None) -> int:
    """`paths 64`: the reference with warp_specialize=False (the Triton kernel) and True (the
    Hopper path) on PATH_SHAPES (or `shapes`) at the given head dims, both masks, against
    SDPA-cuDNN."""
    import torch

    from benchmarks import harness
    from references import _attention_hopper as hopper
    from references import streaming_attention as sa

    plan = harness.PLANS["sweep"]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, graph timing, "
          f"{plan.samples} samples, bf16; ratios to SDPA-cuDNN")
    for heads, n, d, causal, q, k, v, _flops in attention_problems(shapes or PATH_SHAPES,
                                                                    [int(x) for x in dims]):
        cudnn = sdpa_cudnn(q, k, v, causal)
        calls = matching(cudnn, {
            "Triton": lambda q=q, k=k, v=v, c=causal: sa.attention_heads(
                q, k, v, causal=c, warp_specialize=False),
            "Hopper": lambda q=q, k=k, v=v, c=causal: sa.attention_heads(
                q, k, v, causal=c, warp_specialize=True),
            "auto": lambda q=q, k=k, v=v, c=causal: sa.attention_heads(q, k, v, causal=c)})
        times = graph_medians_us([cudnn, *calls.values()], plan)
        ratios = "  ".join(f"{label} {times[0] / us:.3f}x" for label, us
                           in zip(calls, times[1:], strict=True))
        per_sm = hopper.programs(heads, n) / sms
        print(f"H={heads:3d} N={n:6d} d={d} causal={causal!s:5s} ({per_sm:5.1f} Hopper "
              f"programs per SM): cudnn {times[0]:8.1f} us  {ratios}", flush=True)
    return 0


# The grids whose path changed with the band rule of 2026-12-01 (_WARP_SPECIALIZED_PER_SM),
# and the rule before it: d = 128 from 0.9 programs per SM without a mask and 3.6 with one,
# d = 64 with a mask only, 1.5 to 4 per SM.
CHECK_SHAPES = [(3, 4096), (7, 2048), (1, 12288), (4, 4096), (5, 4096), (6, 4096), (8, 4096),
                (12, 4096), (8, 2048), (10, 2048), (2, 8192), (3, 8192), (4, 8192), (1, 16384),
                (2, 16384), (3, 16384)]
# The other grids of 1-12 heads of 2048-16384 (N = 12288 included) whose path changed, which
# the first paths-check run (diagnostics/probe-attention-paths-check-*) did not time.
CHECK_SHAPES_REST = [(2, 12288), (3, 12288), (4, 12288), (5, 8192), (6, 2048), (6, 8192),
                     (7, 4096), (7, 8192), (9, 2048), (9, 4096), (10, 4096), (11, 2048),
                     (11, 4096), (12, 2048)]


def _path_before(heads: int, n: int, d: int, causal: bool, sms: int) -> bool:
    from references import _attention_hopper as hopper

    per_sm = hopper.programs(heads, n) / sms
    if d == 128:
        return per_sm >= 0.9 * (4 if causal else 1)
    return d == 64 and causal and 1.5 <= per_sm <= 4.0


def check_paths(sets: int = 2, shapes=CHECK_SHAPES) -> int:
    """`paths-check`: on every grid of `shapes` (d = 64 and 128, both masks, bf16 and fp16)
    where the launcher's path differs from the rule before it, the launcher's choice against
    the other path, in `sets` separate sets of graph rounds, next to SDPA-cuDNN."""
    import torch

    from benchmarks import harness
    from references import streaming_attention as sa

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    plan = harness.PLANS["sweep"]
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, graph timing, "
          f"{plan.samples} samples, {sets} sets; ratios to SDPA-cuDNN")
    for dtype in (torch.bfloat16, torch.float16):
        for heads, n, d, causal, q, k, v, flops in attention_problems(shapes, (64, 128), dtype):
            now = sa._warp_specialize_pays(heads, n, d, causal, q)
            before = _path_before(heads, n, d, causal, sms)
            if now == before:
                continue
            path = {True: "Hopper", False: "Triton"}
            for set_ in range(sets):
                time_attention_against_cudnn(
                    f"H={heads} N={n} d={d} causal={causal} {str(dtype)[6:]}: now "
                    f"{path[now]}, before {path[before]}; set {set_ + 1}", q, k, v, causal, flops,
                    {f"now ({path[now]})": dict(warp_specialize=now),
                     f"before ({path[before]})": dict(warp_specialize=before)}, plan, digits=3)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
