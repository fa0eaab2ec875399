"""Tile shapes for small and large fused GEMMs on a GPU. A diagnostic.

    python3 tools/probe_gemm_tiles.py

1024^3 and 2048^3 make 64 and 256 tiles of 128 x 128 (or 32 and 128 of 128 x 256): less than
one or two waves on 132 SMs, so smaller tiles may win there. For 1024^3, 2048^3 (fp16, bf16)
this times `gemm_bias_relu` at its defaults and at several explicit tile shapes, persistent and
not, next to torch.mm and the same-contract torch baseline (graph timing, the benchmark
harness's timer). For 4096^3 it times the default against 4 pipeline stages, alternating
A, B, A, B so that clock drift shows. Each output is compared with torch.mm's first.
Prints one line per variant; benchmarks/results/diagnostics/ keeps its output.

    python3 tools/probe_gemm_tiles.py --large

instead times launch knobs around the default at 4096^3 and 8192^3 (group_m, stages, block_k,
tile shape, the pointer kernel, pointer stores), torch.mm and the same-contract baseline, all
captured first and then timed in the same rounds (`harness.time_interleaved`), so clock drift
hits every variant alike.

    python3 tools/probe_gemm_tiles.py --group

GROUP_M = 8 (the default until this probe) against 16 (the default since) and 12 on the
benchmark's aligned shapes, both dtypes, the
rest of the configuration the default's, in three separate sets of interleaved rounds so that
the run-to-run spread shows next to the difference (the --large run had group_m = 16 ahead by
0.3-0.6% at 4096^3). For 128 x 256 tiles one wave of 132 programs in bands of G rows of tiles
reads about G panels of A (128 x K) and 132 / G panels of B (K x 256, twice the bytes): the
fewest bytes at G = sqrt(2 * 132), about 16.

    python3 tools/probe_gemm_tiles.py --stages

the default configuration against the same with 4 pipeline stages (the twentieth session's
sweep had the 128 x 256 tile with GROUP_M = 16 and 4 stages 1.6% ahead of 3 at 4096^3 bf16,
inside its spread), and on the odd tail 4095 x 4097 x 4093 also 256 x 128 tiles (16 x 33 = 528
of them: exactly 4 waves on 132 SMs, where the default 128 x 128 tile makes 8 and 128 x 256
makes 4.1; the sweep had 256 x 128 with 4 stages 1.17x the default), on the benchmark's large
shapes, both dtypes, in three separate sets of interleaved rounds so that the run-to-run
spread shows next to the difference.

    python3 tools/probe_gemm_tiles.py --waves

asks whether the last, partly filled wave of tiles costs a whole wave: for N = K = 4096 and
8192 it times the default configuration and torch.mm at M giving 3.76, 3.88 (4096^3) and 4.0
waves of 128 x 256 tiles on 132 SMs (and 15.0, 15.5, 16.0 at 8192), all in the same rounds.
If 4.0 waves take as long as 3.88, the idle SMs of the last wave are the loss.

    python3 tools/probe_gemm_tiles.py --stream-k [--all]

times the default configuration with Stream-K (the tiles of a partly filled last wave shared
among all programs; the hand-off adding 16, 32 or 64 rows at a time) against the same without
it (`stream_k=False`) and with the default choice, next to torch.mm and the same-contract
baseline, in the same rounds; each output is first compared with a float32 reference. float16
on large shapes; --all adds bfloat16 and the benchmark's other shapes.

    python3 tools/probe_gemm_tiles.py --stream-k-parts

takes Stream-K's hand-off apart at 4096^3, 6144^3 and 8192^3 (float16): the reference with
stream_k=True and False, and copies of it edited so that the finisher skips loading the others'
partials, or so that there is no hand-off at all (each sharer stores its partial as the tile:
wrong outputs, timing only), and the workspace allocation alone.

    python3 tools/probe_gemm_tiles.py --per-sm

asks whether two persistent programs per SM overlap one's epilogue with the other's products
(what warp-specialized "ping-pong" kernels do inside one program): the persistent kernel with
a grid of 1x and 2x the SMs (the launcher's SM count scaled for the call) at tiles small
enough for two to share an SM (128 x 128 over 4 or 8 warps, 2-4 stages; 64 x 256), next to
the default, torch.mm and the same-contract baseline at 4096^3 and 8192^3, same rounds.

    python3 tools/probe_gemm_tiles.py --cublas-kernels

names the kernels torch.mm runs (cuBLAS's choice, from torch.profiler's trace: the name, which
spells the tile and the cluster shape, the grid, the block, registers and shared memory) at
the benchmark's GEMM shapes, and our default kernel's launch next to them.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools._timing import graph_medians_us  # noqa: E402


def _operands(m: int, n: int, k: int, dtype, seed: int):
    """A (m, k), B (k, n), a float32 bias, the float32 reference of relu(A B + bias), and the two
    torch providers every GEMM probe times next to ours (torch.mm, the same-contract baseline)."""
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", dtype=dtype, generator=g)
    b = torch.randn(k, n, device="cuda", dtype=dtype, generator=g)
    bias = torch.randn(n, device="cuda", dtype=torch.float32, generator=g)
    expected = torch.relu(torch.mm(a.float(), b.float()) + bias)
    calls = {"torch.mm": lambda: torch.mm(a, b),
             "same-contract": lambda: torch.mm(a, b, out_dtype=torch.float32)
             .add_(bias).relu_().to(dtype)}
    return a, b, bias, expected, calls


def _rel_err(out, expected) -> float:
    return ((out.float() - expected).abs() / (expected.abs() + 1)).max().item()


def _print_rows(title: str, calls: dict, medians: list[float], flops: int) -> None:
    """One line per provider: time, TFLOP/s and the ratios to torch.mm and the same-contract
    baseline (the first two entries of `calls`, as _operands builds them)."""
    print(f"\n{title} (graph timing, interleaved rounds)", flush=True)
    for label, us in zip(calls, medians, strict=True):
        print(f"   {us:8.1f} us {flops / us / 1e6:5.0f} TFLOP/s  "
              f"{medians[0] / us:5.3f}x mm  {medians[1] / us:5.3f}x same  {label}", flush=True)


def _add_variants(calls: dict, a, b, bias, expected, variants: dict) -> None:
    """Add one call of gemm_bias_relu per {label: knobs}, each checked against `expected` once
    (its error goes into the label)."""
    from references import fused_gemm as fg

    for label, knobs in variants.items():
        def ours(knobs=knobs):
            return fg.gemm_bias_relu(a, b, bias, **knobs)

        calls[f"{label} rel.err {_rel_err(ours(), expected):.1e}"] = ours


def _time_in_sets(calls: dict, title: str, flops: int, plan, sets: int = 3) -> None:
    """Time every call in `sets` separate sets of interleaved rounds, so that the run-to-run
    spread shows next to the differences."""
    for set_ in range(sets):
        medians = graph_medians_us(calls.values(), plan)
        _print_rows(f"{title}, set {set_ + 1} of {sets}", calls, medians, flops)


def large_probe() -> int:
    import torch

    from benchmarks import harness
    from references import fused_gemm as fg

    plan = harness.PLANS["sweep"]
    base = dict(block_m=128, block_n=256, block_k=64, group_m=8, num_warps=8, num_stages=3)
    variants = [{}] + [dict(base, **change) for change in (
        dict(group_m=4), dict(group_m=16), dict(group_m=32), dict(num_stages=4),
        dict(block_k=128, num_stages=2), dict(block_m=256, block_n=128),
        dict(tma_store=False), dict(persistent=False))]
    for size in (4096, 8192):
        for dtype in (torch.float16, torch.bfloat16):
            a, b, bias, expected, calls = _operands(size, size, size, dtype, seed=size)
            for knobs in variants:
                def ours(knobs=knobs):
                    return fg.gemm_bias_relu(a, b, bias, **knobs)

                try:
                    err = _rel_err(ours(), expected)
                except Exception as exc:  # noqa: BLE001 - e.g. out of shared memory: report it
                    print(f"   {knobs}: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
                    continue
                calls[f"{knobs or 'default'} rel.err {err:.1e}"] = ours
            medians = graph_medians_us(calls.values(), plan)
            _print_rows(f"{size}^3 {str(dtype)[6:]}", calls, medians, 2 * size ** 3)
    return 0


def _time_against_default(shapes, variants_for, describe) -> None:
    """For each (m, n, k) of `shapes`, float16 and bfloat16: the launcher's default and the
    variants `variants_for((m, n, k), default)` gives (label -> knobs), checked and timed in
    three sets (_time_in_sets); each title names the default's tile by `describe(default)`."""
    import torch

    from benchmarks import harness
    from references import fused_gemm as fg

    plan = harness.PLANS["sweep"]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for m, n, k in shapes:
        for dtype in (torch.float16, torch.bfloat16):
            a, b, bias, expected, calls = _operands(m, n, k, dtype, seed=m + n + k)
            default = fg.default_config(m, n, k, num_sms=sms)
            _add_variants(calls, a, b, bias, expected, variants_for((m, n, k), default))
            _time_in_sets(calls, f"{m}x{n}x{k} {str(dtype)[6:]}, {describe(default)}",
                          2 * m * n * k, plan)


def group_probe() -> int:
    from benchmarks.fused_gemm import SKINNY, SQUARE

    def variants(shape, default):
        return {f"group_m={g}{' (default)' if g == default['group_m'] else ''}":
                dict(default, group_m=g) for g in (8, 16, 12)}

    _time_against_default([(n, n, n) for n in SQUARE if n >= 2048] + list(SKINNY), variants,
                          lambda d: f"{d['block_m']}x{d['block_n']} tiles")
    return 0


def stages_probe() -> int:
    from benchmarks.fused_gemm import SKINNY

    wide_256 = dict(block_m=256, block_n=128, block_k=64, group_m=8, num_warps=8)

    def variants(shape, default):
        found = {"default": {}, "num_stages=4": dict(default, num_stages=4)}
        if shape == (4095, 4097, 4093):
            found["256x128, 3 stages"] = dict(wide_256, num_stages=3)
            found["256x128, 4 stages"] = dict(wide_256, num_stages=4)
        return found

    _time_against_default(
        [(4096, 4096, 4096), (8192, 8192, 8192), *SKINNY, (4095, 4097, 4093)], variants,
        lambda d: f"default {d['block_m']}x{d['block_n']}, {d['num_stages']} stages")
    return 0


def waves_probe() -> int:
    import torch

    from benchmarks import harness
    from references import fused_gemm as fg

    plan = harness.PLANS["full"]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for size, rows in ((4096, (31, 32, 33)), (8192, (62, 64, 66))):
        for dtype in (torch.float16, torch.bfloat16):
            calls, labels = [], []
            for tile_rows in rows:
                m = tile_rows * 128
                g = torch.Generator(device="cuda").manual_seed(m)
                a = torch.randn(m, size, device="cuda", dtype=dtype, generator=g)
                b = torch.randn(size, size, device="cuda", dtype=dtype, generator=g)
                bias = torch.randn(size, device="cuda", dtype=torch.float32, generator=g)
                tiles = tile_rows * (size // 256)
                calls += [lambda a=a, b=b, bias=bias: fg.gemm_bias_relu(a, b, bias),
                          lambda a=a, b=b: torch.mm(a, b)]
                labels += [(m, tiles, "ours"), (m, tiles, "torch.mm")]
            medians = graph_medians_us(calls, plan)
            print(f"\nN = K = {size}, {str(dtype)[6:]} (graph timing, interleaved rounds)")
            for (m, tiles, who), us in zip(labels, medians, strict=True):
                print(f"   M={m:5d}  {tiles:5d} tiles = {tiles / sms:5.2f} waves  {who:8s} "
                      f"{us:8.1f} us  {2 * m * size * size / us / 1e6:5.0f} TFLOP/s  "
                      f"{us / tiles * sms:6.2f} us per wave-equivalent", flush=True)
    return 0


def stream_k_probe() -> int:
    import torch

    from benchmarks import harness
    from references import fused_gemm as fg

    plan = harness.PLANS["full"]
    shapes = [(4096, 4096, 4096), (8192, 8192, 8192), (16384, 1024, 4096), (8192, 8192, 1024),
              (6144, 6144, 6144), (3072, 3072, 3072)]
    if "--all" in sys.argv:
        shapes += [(2048, 2048, 2048), (4095, 4097, 4093)]
    dtypes = (torch.float16, torch.bfloat16) if "--all" in sys.argv else (torch.float16,)
    # (stream_k, rows added up at a time in the hand-off)
    variants = [(False, 64), (None, 64), (True, 16), (True, 32), (True, 64)]
    for m, n, k in shapes:
        for dtype in dtypes:
            a, b, bias, expected, calls = _operands(m, n, k, dtype, seed=m + n + k)
            for sk, rows in variants:
                def ours(sk=sk, rows=rows):
                    fg._MAX_FIXUP_ROWS = rows
                    return fg.gemm_bias_relu(a, b, bias, stream_k=sk)

                err = _rel_err(ours(), expected)
                calls[f"stream_k={sk} rows={rows} rel.err {err:.1e}"] = ours
            medians = graph_medians_us(calls.values(), plan)
            _print_rows(f"{m}x{n}x{k} {str(dtype)[6:]}", calls, medians, 2 * m * n * k)
    fg._MAX_FIXUP_ROWS = 64
    return 0


# Stream-K's hand-off, taken apart (the outputs of these variants are wrong on purpose: timing
# only). Each replaces text of references/fused_gemm.py in a copy of references/.
_FINISH_OWN = ("_finish_tile(acc, pid_m, pid_n, bias_ptr, c_ptr, c_desc, M, N, stride_cm, "
               "stride_cn, HAS_BIAS, APPLY_RELU, TMA_STORE, BLOCK_M, BLOCK_N)")
_PARTS = {
    # the finisher stores its own partial as the tile: no loads of the others' partials
    "no partial loads": [("_add_partials_and_finish(partials_ptr, t, first, last, k_tiles,\n"
                          "                                             total_steps, pid_m, "
                          "pid_n, bias_ptr, c_ptr, M, N,\n"
                          "                                             stride_cm, stride_cn, "
                          "HAS_BIAS, APPLY_RELU,\n"
                          "                                             NUM_PROGRAMS, BLOCK_M, "
                          "BLOCK_N, FIXUP_ROWS)", _FINISH_OWN)],
    # every sharer stores its partial as the tile: no workspace, no atomics, no barrier
    "no hand-off": [("                slot = 2 * pid + (step != step_begin).to(tl.int32)\n",
                     "                " + _FINISH_OWN + "\n"
                     "                slot = 2 * pid + (step != step_begin).to(tl.int32)\n"),
                    ("                tl.store(partials_ptr + slot * (BLOCK_M * BLOCK_N) + "
                     "in_slot, acc)\n", ""),
                    ("                if tl.atomic_add(counter, 1) == last - first:",
                     "                if False:")],
}


def stream_k_parts_probe() -> int:
    import shutil
    import tempfile

    import torch

    from benchmarks import harness
    from checks import loader
    from references import fused_gemm as fg

    root = Path(__file__).resolve().parent.parent / "references"
    modules = {"full": fg}
    tmp = Path(tempfile.mkdtemp(prefix="sk_parts_"))
    for name, edits in _PARTS.items():
        folder = tmp / name.replace(" ", "_").replace("-", "_")
        shutil.copytree(root, folder, ignore=shutil.ignore_patterns("__pycache__"))
        text = (folder / "fused_gemm.py").read_text()
        for old, new in edits:
            assert text.count(old) == 1, (name, old)
            text = text.replace(old, new)
        (folder / "fused_gemm.py").write_text(text)
        modules[name] = loader.load("fused_gemm", loader.resolve(folder))
    plan = harness.PLANS["full"]
    for m, n, k in ((4096, 4096, 4096), (8192, 8192, 8192), (6144, 6144, 6144)):
        a, b, bias, _, _ = _operands(m, n, k, torch.float16, seed=m + n + k)
        calls = {"torch.mm": lambda: torch.mm(a, b),
                 "stream_k=False": lambda: fg.gemm_bias_relu(a, b, bias, stream_k=False),
                 "workspace alone": lambda: (torch.empty((264, 128 * 256), device="cuda"),
                                             torch.zeros(132, device="cuda",
                                                         dtype=torch.int32))}
        for name, module in modules.items():
            calls[f"stream_k=True, {name}"] = \
                lambda module=module: module.gemm_bias_relu(a, b, bias, stream_k=True)
        medians = graph_medians_us(calls.values(), plan)
        print(f"\n{m}x{n}x{k} float16 (graph timing, interleaved rounds)", flush=True)
        for label, us in zip(calls, medians, strict=True):
            print(f"   {us:8.1f} us  {label}", flush=True)
    return 0


def per_sm_probe() -> int:
    import torch

    from benchmarks import harness
    from references import fused_gemm as fg

    plan = harness.PLANS["sweep"]
    real_sm_count = fg.sm_count
    tiles = [dict(block_m=128, block_n=128, num_warps=4, num_stages=s) for s in (2, 3, 4)]
    tiles += [dict(block_m=128, block_n=128, num_warps=8, num_stages=s) for s in (2, 3)]
    tiles += [dict(block_m=64, block_n=256, num_warps=4, num_stages=3)]
    for size, dtype in ((4096, torch.bfloat16), (4096, torch.float16), (8192, torch.bfloat16)):
        a, b, bias, expected, calls = _operands(size, size, size, dtype, seed=size)
        calls["default"] = lambda: fg.gemm_bias_relu(a, b, bias)
        for knobs in tiles:
            for per_sm in (1, 2):
                knobs = dict(knobs, block_k=64, group_m=8, persistent=True, stream_k=False)

                def ours(knobs=knobs, per_sm=per_sm):
                    fg.sm_count = lambda index: real_sm_count(index) * per_sm
                    try:
                        return fg.gemm_bias_relu(a, b, bias, **knobs)
                    finally:
                        fg.sm_count = real_sm_count

                try:
                    err = _rel_err(ours(), expected)
                except Exception as exc:  # noqa: BLE001 - e.g. out of shared memory: report it
                    print(f"   {knobs} x{per_sm}: {type(exc).__name__}: {str(exc)[:200]}",
                          flush=True)
                    continue
                label = (f"{knobs['block_m']}x{knobs['block_n']} {knobs['num_warps']}w "
                         f"{knobs['num_stages']}st, {per_sm} per SM, rel.err {err:.1e}")
                calls[label] = ours
        medians = graph_medians_us(calls.values(), plan)
        _print_rows(f"{size}^3 {str(dtype)[6:]}", calls, medians, 2 * size ** 3)
    return 0


def cublas_kernels_probe() -> int:
    import json
    import tempfile

    import torch
    from torch.profiler import ProfilerActivity, profile

    from references import fused_gemm as fg

    shapes = [(4096, 4096, 4096), (8192, 8192, 8192), (4095, 4097, 4093), (8192, 8192, 1024),
              (16384, 1024, 4096)]
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    for dtype in (torch.bfloat16, torch.float16):
        for m, n, k in shapes:
            a = torch.randn(m, k, device="cuda", dtype=dtype)
            b = torch.randn(k, n, device="cuda", dtype=dtype)
            bias = torch.randn(n, device="cuda", dtype=torch.float32)
            calls = {"torch.mm": lambda a=a, b=b: torch.mm(a, b),
                     "ours": lambda a=a, b=b, bias=bias: fg.gemm_bias_relu(a, b, bias)}
            for label, call in calls.items():
                call()
                torch.cuda.synchronize()
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    call()
                    torch.cuda.synchronize()
                with tempfile.NamedTemporaryFile(suffix=".json") as trace:
                    prof.export_chrome_trace(trace.name)
                    events = json.load(open(trace.name))["traceEvents"]
                for e in events:
                    if e.get("cat") != "kernel":
                        continue
                    args = e.get("args", {})
                    print(f"{m}x{n}x{k} {str(dtype)[6:]:8s} {label:8s} {e['dur']:8.1f} us  "
                          f"grid {args.get('grid')} block {args.get('block')} regs "
                          f"{args.get('registers per thread')} smem "
                          f"{args.get('shared memory')}  {e['name'][:150]}", flush=True)
    return 0


def main() -> int:
    if "--cublas-kernels" in sys.argv:
        return cublas_kernels_probe()
    if "--per-sm" in sys.argv:
        return per_sm_probe()
    if "--stream-k-parts" in sys.argv:
        return stream_k_parts_probe()
    if "--stream-k" in sys.argv:
        return stream_k_probe()
    if "--large" in sys.argv:
        return large_probe()
    if "--waves" in sys.argv:
        return waves_probe()
    if "--group" in sys.argv:
        return group_probe()
    if "--stages" in sys.argv:
        return stages_probe()
    import torch

    from benchmarks import harness
    from references import fused_gemm as fg

    plan = harness.PLANS["sweep"]

    def time(fn) -> float:
        return graph_medians_us([fn], plan)[0]

    tiles = [dict(block_m=bm, block_n=bn, block_k=64, group_m=8, num_warps=w, num_stages=s)
             for bm, bn, w, s in ((64, 128, 4, 4), (64, 128, 4, 3), (128, 64, 4, 4),
                                  (64, 64, 4, 4), (128, 128, 4, 4), (128, 128, 8, 3),
                                  (64, 256, 4, 3), (128, 256, 8, 3))]
    for size in (1024, 2048, 4096):
        for dtype in (torch.float16, torch.bfloat16):
            a, b, bias, expected, baselines = _operands(size, size, size, dtype, seed=size)
            flops = 2 * size ** 3
            mm_us = time(baselines["torch.mm"])
            same_us = time(baselines["same-contract"])
            print(f"\n{size}^3 {str(dtype)[6:]}: torch.mm {mm_us:.1f} us "
                  f"({flops / mm_us / 1e6:.0f} TFLOP/s), same-contract {same_us:.1f} us",
                  flush=True)
            if size == 4096:
                variants = [{}, dict(tiles[-1], num_stages=4)] * 3
            else:
                variants = [{}] + tiles + [dict(t, persistent=False) for t in tiles[:4]]
            for knobs in variants:
                def ours(knobs=knobs):
                    return fg.gemm_bias_relu(a, b, bias, **knobs)

                err = _rel_err(ours(), expected)
                us = time(ours)
                label = "default " + str(fg.default_config(size, size, size)) if not knobs \
                    else str(knobs)
                print(f"   {us:8.1f} us {flops / us / 1e6:5.0f} TFLOP/s  {mm_us / us:5.2f}x mm  "
                      f"{same_us / us:5.2f}x same  rel.err {err:.1e}  {label}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
