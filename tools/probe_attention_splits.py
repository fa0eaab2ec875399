"""Split-KV for streaming attention on a GPU: how many key splits pay, per shape and tile.

    python3 tools/probe_attention_splits.py [--quick]

For one head of 4096-16384 rows (and a 16-head control whose grid already fills the GPU),
bf16, d = 64 and 128, causal and not, times `attention_heads` with kv_splits = 1, 2, 4, 8 at
two tile configurations, and the launcher's own choice, next to SDPA-cuDNN, in interleaved
graph-timing rounds (tools/_timing.py), after checking every output against SDPA-cuDNN's.
Prints one line per variant; benchmarks/results/diagnostics/ keeps its output. A diagnostic,
not evidence: the benchmark is the evidence.

    python3 tools/probe_attention_splits.py --waves

d = 64 without a mask, 1 to 8 heads of 8192 and 16384: the launcher's key splits (enough for
about 2 programs per SM) against a rule that also splits a grid whose last wave of programs
(2 per SM) would run mostly empty: the fewest splits whose waves are at least 90% full.

    python3 tools/probe_attention_splits.py --stages

d = 64 without a mask only, on split grids (one or two heads of 8192-16384) and a full-grid
control: the 128 x 64 / 8-warp tile with 3 and 4 pipeline stages, at the launcher's number of
key splits and twice it (the tiles probe saw 4 stages win on one head of 16384).

    python3 tools/probe_attention_splits.py --full-waves

d = 64 without a mask, grids that fill the GPU: head counts whose 128-row programs make a
whole number of waves of 264 (2 per SM; 33 heads of 4096, 33 of 8192) against their
neighbours (16, 32 heads), to see whether a partly filled last wave is what the full grids
lose to cuDNN (0.95x-0.96x).

    python3 tools/probe_attention_splits.py --deep

The launcher's rule that came of it (4 stages for split programs of 8192 keys or more:
_DEEP_PIPELINE_KEYS) against 3 to 6 stages at the launcher's splits, on 1-5 heads of 16384,
both 16-bit dtypes, and two controls the rule leaves alone (one head of 8192, 16 of 4096).

    python3 tools/probe_attention_splits.py --five

d = 64, both masks, grids short of programs (1-3 heads of 8192-16384): the launcher's choice
against the very-large-grid tile (64 x 64 over 4 warps, 2 stages, registers capped so that
five programs share an SM) at 1, 2, 3 and 4 key splits. The splits probe above predates the
register cap: there 64-row programs could share an SM only two to four at a time.

    python3 tools/probe_attention_splits.py --five-causal

d = 64 with a causal mask only, on grids of about 2 to 8 programs of 128 rows per SM (where
the launcher picks the warp-specialized path from 1.5 to 4): the launcher's choice against
the same register-capped tile at 1 to 8 key splits (the --five run saw it win on 3 heads of
16384 with 3 and 4 splits).

    python3 tools/probe_attention_splits.py --pointers

The twentieth session's sweep (sweep-graph-fused_gemm-streaming_attention-20261201zzv) ran two
split one-head grids 1.12x-1.13x faster with pointer loads than with the default's TMA loads, whose
descriptors each program builds on the device there (one head of 4096 at d = 128 without a
mask; one head of 8192 at d = 64, causal). For grids the Triton kernel runs (1-16 heads of
4096-16384, d = 64 and 128, both masks, bf16), this times the launcher's plan (tile, stages,
key splits) with: TMA, descriptors built on the device; TMA, descriptors built on the host
(graph timing hides the host's share of that: see _HOST_DESCRIPTOR_WORK); pointer loads; and
pointer loads with one more stage. Grids the warp-specialized path takes are skipped.

    python3 tools/probe_attention_splits.py --pointers-check

The rule that came of it (_pointers_pay: pointer loads where the launcher would build
descriptors on the device, 4 stages at d = 64 with a causal mask) against the launcher's plan
before it (the same tile and key splits with TMA, descriptors built on the device), on every
problem the rule changes among one head of 1024-16384, 2 heads of 8192 and 4 of 4096, d = 64
and 128, both masks, float16 and bfloat16.

    python3 tools/probe_attention_splits.py --few-heads

d = 64 without a mask, 2 to 8 heads of 4096 and 2 to 3 of 8192 (grids the benchmark does not
have; --pointers timed 4 heads of 4096 at 0.75x cuDNN): the launcher's choice against 64 x 64
tiles over 4 warps and 128 x 64 over 8 warps, each at 1, 2 and 4 key splits. The split rule
counts 2 programs per SM whatever the tile, and 64-row programs may fit 4.

    python3 tools/probe_attention_splits.py --few-heads-check

The rule that came of it (64-row programs without a mask split until there are about 4 per
SM, by the count alone) against the wave rule before it, on every problem it changes among
2-7 heads of 4096 and 2-8 of 2048, d = 64 and 128, bf16 and fp16 (grids the
warp-specialized path takes are skipped).

    python3 tools/probe_attention_splits.py --few-heads-tiles

After that rule, 4 heads of 4096 at d = 64 without a mask were the benchmark's worst case
(0.86x cuDNN). For them and two neighbours (2 heads of 8192, 8 of 2048), the launcher's
choice against other tiles and stage counts on pointer loads, TMA with descriptors built on
the host (graph timing does not see the host's share), the very-large-grid tile (five per SM,
TMA only), and 3 key splits.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools._timing import attention_problems, time_attention_against_cudnn  # noqa: E402

TILES = {  # d -> the two tile configurations tried: the small-grid default, the large-grid one
    64: [dict(block_m=64, block_n=64, num_warps=4, num_stages=3),
         dict(block_m=128, block_n=64, num_warps=8, num_stages=3)],
    128: [dict(block_m=64, block_n=64, num_warps=4, num_stages=3),
          dict(block_m=128, block_n=64, num_warps=4, num_stages=2)],
}


def _label(knobs: dict) -> str:
    if not knobs:
        return "launcher default"
    tile = f"{knobs['block_m']}x{knobs['block_n']}/{knobs['num_warps']}w/{knobs['num_stages']}s"
    return f"{tile} kv_splits={knobs['kv_splits']}"


def main(argv: list[str]) -> int:
    import torch

    from benchmarks import harness
    from references import streaming_attention as sa

    if not torch.cuda.is_available():
        print("probe_attention_splits times kernels on a GPU; none is visible here (the "
              "split path's correctness is the check forward.kv_splits, which runs anywhere)")
        return 2
    plan = harness.PLANS["sweep"]
    modes = {"--stages": stages_probe, "--few-heads-tiles": few_heads_tiles,
             "--few-heads-check": few_heads_check, "--few-heads": few_heads_probe,
             "--pointers-check": pointers_check, "--pointers": pointers_probe,
             "--full-waves": full_waves_probe, "--deep": deep_probe, "--waves": waves_probe,
             "--five-causal": lambda plan: five_probe(plan, causal_only=True),
             "--five": five_probe}
    for flag, probe in modes.items():
        if flag in argv:
            return probe(plan)
    quick = "--quick" in argv
    shapes = [(1, 4096), (1, 8192), (1, 16384), (16, 4096)]
    if quick:
        shapes = [(1, 4096), (1, 16384)]
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, graph timing, "
          f"{plan.samples} samples, bf16")
    for heads, n, d, causal, q, k, v, flops in attention_problems(shapes):
        variants = [{}] + [dict(tile, kv_splits=s) for tile in TILES[d] for s in (1, 2, 4, 8)]
        default_splits = sa.kv_splits_for(
            heads, n, sa._config({}, d, q.dtype, causal, n, heads)["block_m"], causal, q)
        time_attention_against_cudnn(f"H={heads} N={n} d={d} causal={causal} (default kv_splits "
                            f"{default_splits}):", q, k, v, causal, flops,
                            {_label(t): t for t in variants}, plan)
    return 0


def wave_splits(programs: int, n_ctx: int, slots: int) -> int:
    """The candidate rule: the fewest splits (a power of two, each walking at least 1024 keys,
    at most 16) whose grid fills its waves of `slots` programs at least 90%."""
    splits = 1
    while True:
        p = programs * splits
        if p / (-(-p // slots) * slots) >= 0.9 or n_ctx // (2 * splits) < 1024 or splits >= 16:
            return splits
        splits *= 2


def waves_probe(plan) -> int:
    import torch

    from references import streaming_attention as sa
    from references._gpu import sm_count

    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, graph timing, "
          f"{plan.samples} samples, bf16, d = 64, no mask")
    slots = 2 * sm_count(0)
    shapes = [(h, n) for n in (8192, 16384) for h in (1, 2, 3, 4, 5, 6, 8)]
    for heads, n, d, causal, q, k, v, flops in attention_problems(shapes, dims=(64,)):
        if causal:
            continue
        block_m = sa._config({}, d, q.dtype, causal, n, heads)["block_m"]
        programs = heads * -(-n // block_m)
        default = sa.kv_splits_for(heads, n, block_m, causal, q)
        rule = wave_splits(programs, n, slots)
        variants = {f"launcher default (kv_splits {default})": {}}
        if rule != default:
            variants[f"wave rule (kv_splits {rule})"] = dict(kv_splits=rule)
        time_attention_against_cudnn(f"H={heads} N={n} d={d} ({programs} programs of {block_m} rows):",
                            q, k, v, causal, flops, variants, plan)
    return 0


def stages_probe(plan) -> int:
    import torch

    from references import streaming_attention as sa

    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, graph timing, "
          f"{plan.samples} samples, bf16, d = 64, no mask")
    shapes = [(1, 8192), (1, 16384), (2, 8192), (2, 16384), (3, 16384), (16, 4096)]
    for heads, n, d, causal, q, k, v, flops in attention_problems(shapes, dims=(64,)):
        if causal:
            continue
        splits = sa.kv_splits_for(heads, n, 128, causal, q)
        variants = [{}] + [dict(block_m=128, block_n=64, num_warps=8, num_stages=st, kv_splits=s)
                           for s in sorted({splits, min(2 * splits, 16)}) for st in (3, 4)]
        time_attention_against_cudnn(f"H={heads} N={n} d={d} (default kv_splits {splits}):", q, k, v,
                            causal, flops, {_label(t): t for t in variants}, plan)
    return 0


def full_waves_probe(plan) -> int:
    import torch

    from references import streaming_attention as sa

    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, graph timing, "
          f"{plan.samples} samples, bf16, d = 64, no mask; 2 programs of 128 rows per SM: "
          f"{2 * torch.cuda.get_device_properties(0).multi_processor_count} per wave")
    slots = 2 * torch.cuda.get_device_properties(0).multi_processor_count
    shapes = [(16, 4096), (32, 4096), (33, 4096), (66, 4096), (32, 8192), (33, 8192)]
    for heads, n, _d, causal, q, k, v, flops in attention_problems(shapes, dims=(64,)):
        if causal:
            continue
        programs = heads * n // 128
        time_attention_against_cudnn(f"H={heads} N={n}: {programs} programs = {programs / slots:.2f} "
                            f"waves (kv_splits {sa.kv_splits_for(heads, n, 128, causal, q)})",
                            q, k, v, causal, flops, {"launcher default": {}}, plan, digits=3)
    return 0


def deep_probe(plan) -> int:
    import torch

    from references import streaming_attention as sa

    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, graph timing, "
          f"{plan.samples} samples, d = 64, no mask")
    shapes = [(1, 8192), (1, 16384), (2, 16384), (3, 16384), (5, 16384), (16, 4096)]
    for dtype in (torch.bfloat16, torch.float16):
        for heads, n, d, causal, q, k, v, flops in attention_problems(shapes, dims=(64,),
                                                                       dtype=dtype):
            if causal:
                continue
            splits = sa.kv_splits_for(heads, n, 128, causal, q)
            variants = [{}] + [dict(block_m=128, block_n=64, num_warps=8, num_stages=st,
                                    kv_splits=splits) for st in (3, 4, 5, 6)]
            time_attention_against_cudnn(f"{str(dtype)[6:]} H={heads} N={n} d={d} (kv_splits {splits}, "
                                f"{n // splits} keys each):", q, k, v, causal, flops,
                                {_label(t): t for t in variants}, plan)
    return 0


def five_probe(plan, causal_only: bool = False) -> int:
    import torch

    from references import streaming_attention as sa

    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, graph timing, "
          f"{plan.samples} samples, bf16, d = 64")
    five = dict(block_m=64, block_n=64, num_warps=4, num_stages=2,
                maxnreg=sa._FIVE_PER_SM_REGISTERS)
    shapes = [(1, 8192), (1, 16384), (2, 16384), (3, 16384)]
    splits = (1, 2, 3, 4)
    if causal_only:
        shapes = [(8, 4096), (16, 4096), (32, 4096), (4, 8192), (8, 8192), (16, 8192),
                  (3, 16384), (4, 16384)]
        splits = (1, 2, 3, 4, 6, 8)
    for heads, n, d, causal, q, k, v, flops in attention_problems(shapes, dims=(64,)):
        if causal_only and not causal:
            continue
        block_m = sa._config({}, d, q.dtype, causal, n, heads)["block_m"]
        default = sa.kv_splits_for(heads, n, block_m, causal, q)
        path = ("warp-specialized" if sa._warp_specialize_pays(heads, n, d, causal, q)
                else f"{block_m} rows, kv_splits {default}")
        variants = {f"launcher default ({path})": {}}
        for s in splits:
            variants[f"64x64/4w/2s maxnreg kv_splits={s}"] = dict(five, kv_splits=s)
        time_attention_against_cudnn(f"H={heads} N={n} d={d} causal={causal} "
                                     f"({heads * n // 64} programs of 64 rows unsplit):",
                                     q, k, v, causal, flops, variants, plan, digits=3)
    return 0


def _with_descriptors_on_host(on_host: bool, call):
    """`call` run with the launcher's DESCRIPTORS_ON_HOST forced (restored afterwards)."""
    from references import streaming_attention as sa

    def run():
        saved, sa.DESCRIPTORS_ON_HOST = sa.DESCRIPTORS_ON_HOST, on_host
        try:
            return call()
        finally:
            sa.DESCRIPTORS_ON_HOST = saved

    return run


def pointers_probe(plan) -> int:
    import torch

    from references import streaming_attention as sa
    from references._gpu import cdiv

    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, graph timing, "
          f"{plan.samples} samples, bf16")
    shapes = [(1, 4096), (1, 8192), (1, 16384), (2, 8192), (4, 4096), (16, 4096)]
    for heads, n, d, causal, q, k, v, flops in attention_problems(shapes):
        if sa._warp_specialize_pays(heads, n, d, causal, q):
            print(f"H={heads} N={n} d={d} causal={causal}: the warp-specialized path; skipped")
            continue
        config = sa._config({}, d, q.dtype, causal, n, heads)
        splits = min(sa.kv_splits_for(heads, n, config["block_m"], causal, q),
                     cdiv(n, config["block_n"]))
        stages = config["num_stages"]
        if (splits > 1 and n // splits >= sa._DEEP_PIPELINE_KEYS and config["block_m"] == 128
                and d <= 64 and not causal):
            stages = sa._DEEP_PIPELINE_STAGES
        knobs = dict(block_m=config["block_m"], block_n=config["block_n"],
                     num_warps=config["num_warps"], num_stages=stages, kv_splits=splits)
        if config.get("maxnreg"):
            knobs["maxnreg"] = config["maxnreg"]
        tma_call = (lambda q=q, k=k, v=v, causal=causal, knobs=knobs:
                    sa.attention_heads(q, k, v, causal=causal, tma=True, **knobs))
        variants = {
            "launcher default": {},
            "TMA, descriptors on device": _with_descriptors_on_host(False, tma_call),
            "TMA, descriptors on host": _with_descriptors_on_host(True, tma_call),
            "pointers": dict(knobs, tma=False),
            f"pointers, {stages + 1} stages": dict(knobs, tma=False, num_stages=stages + 1),
        }
        if config.get("pointer_tile"):
            variants["pointers, the launcher's pointer tile"] = dict(tma=False, kv_splits=splits)
        work = heads * n * n * d // (2 if causal else 1)
        where = "host" if work >= sa._HOST_DESCRIPTOR_WORK else "device"
        time_attention_against_cudnn(
            f"H={heads} N={n} d={d} causal={causal}: {knobs['block_m']}x{knobs['block_n']}/"
            f"{knobs['num_warps']}w/{stages}s kv_splits={splits}, the launcher builds "
            f"descriptors on the {where}", q, k, v, causal, flops, variants, plan, digits=3)
    return 0


def few_heads_probe(plan) -> int:
    import torch

    from references import streaming_attention as sa

    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, graph timing, "
          f"{plan.samples} samples, bf16, d = 64, no mask")
    shapes = [(2, 4096), (3, 4096), (4, 4096), (6, 4096), (8, 4096), (2, 8192), (3, 8192)]
    for heads, n, d, causal, q, k, v, flops in attention_problems(shapes, dims=(64,)):
        if causal:
            continue
        block_m = sa._config({}, d, q.dtype, causal, n, heads)["block_m"]
        splits = sa.kv_splits_for(heads, n, block_m, causal, q)
        # pointer loads, as the launcher loads every one of these small problems (_pointers_pay)
        variants = [{}] + [dict(tile, kv_splits=s, tma=False) for tile in TILES[64]
                           for s in (1, 2, 4)]
        time_attention_against_cudnn(
            f"H={heads} N={n} d={d}: launcher {block_m}-row tiles, kv_splits {splits}",
            q, k, v, causal, flops, {_label(t): t for t in variants}, plan, digits=3)
    return 0


def few_heads_check(plan) -> int:
    import torch

    from references import streaming_attention as sa
    from references._gpu import sm_count

    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, graph timing, "
          f"{plan.samples} samples, no mask")
    shapes = [(h, 4096) for h in (2, 3, 4, 5, 6, 7)] + [(h, 2048) for h in (2, 4, 8)]
    for dtype in (torch.bfloat16, torch.float16):
        for heads, n, d, causal, q, k, v, flops in attention_problems(shapes, dtype=dtype):
            if causal or sa._warp_specialize_pays(heads, n, d, causal, q):
                continue
            block_m = sa._config({}, d, q.dtype, causal, n, heads)["block_m"]
            programs = heads * -(-n // block_m)
            new = sa.kv_splits_for(heads, n, block_m, causal, q)
            old = wave_splits(programs, n, 2 * sm_count(0))  # the rule before
            if new == old:
                continue
            # The launcher's own path but for the splits (pointer loads where it takes them).
            tma = None if not sa._pointers_pay(d, q.dtype, block_m, n) else False
            time_attention_against_cudnn(
                f"{str(dtype)[6:]} H={heads} N={n} d={d}: {programs} programs of {block_m} "
                f"rows", q, k, v, causal, flops,
                {f"launcher default (kv_splits {new})": {},
                 f"before (kv_splits {old})": dict(kv_splits=old, tma=tma)}, plan, digits=3)
    return 0


def few_heads_tiles(plan) -> int:
    import torch

    from references import streaming_attention as sa

    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, graph timing, "
          f"{plan.samples} samples, bf16, d = 64, no mask")
    five = dict(block_m=64, block_n=64, num_warps=4, num_stages=2,
                maxnreg=sa._FIVE_PER_SM_REGISTERS, tma=True)
    for heads, n, d, causal, q, k, v, flops in attention_problems(
            [(4, 4096), (2, 8192), (8, 2048)], dims=(64,)):
        if causal:
            continue
        block_m = sa._config({}, d, q.dtype, causal, n, heads)["block_m"]
        splits = sa.kv_splits_for(heads, n, block_m, causal, q)
        tile = dict(block_m=64, block_n=64, num_warps=4, num_stages=3, kv_splits=splits)

        def on_host(knobs):
            return _with_descriptors_on_host(True, lambda knobs=knobs: sa.attention_heads(
                q, k, v, causal=causal, **knobs))

        variants = {
            f"launcher default ({block_m} rows, kv_splits {splits})": {},
            "64x64/4w/4s pointers": dict(tile, num_stages=4, tma=False),
            "64x32/4w/3s pointers": dict(tile, block_n=32, tma=False),
            "128x64/8w/4s pointers": dict(tile, block_m=128, num_warps=8, num_stages=4,
                                          tma=False),
            "64x64/4w/3s pointers kv_splits=3": dict(tile, kv_splits=3, tma=False),
            "64x64/4w/3s TMA on host": on_host(dict(tile, tma=True)),
            "five per SM, TMA on host": on_host(dict(five, kv_splits=splits)),
            "five per SM, TMA on host, 2x splits": on_host(dict(five, kv_splits=2 * splits)),
        }
        time_attention_against_cudnn(f"H={heads} N={n} d={d}", q, k, v, causal, flops,
                                     variants, plan, digits=3)
    return 0


def pointers_check(plan) -> int:
    import torch

    from references import streaming_attention as sa
    from references._gpu import cdiv

    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, graph timing, "
          f"{plan.samples} samples")
    shapes = [(1, 1024), (1, 2048), (1, 4096), (1, 8192), (1, 16384), (2, 8192), (4, 4096)]
    for dtype in (torch.bfloat16, torch.float16):
        for heads, n, d, causal, q, k, v, flops in attention_problems(shapes, dtype=dtype):
            config = sa._config({}, d, q.dtype, causal, n, heads)
            work = heads * n * n * d // (2 if causal else 1)
            if (sa._warp_specialize_pays(heads, n, d, causal, q)
                    or work >= sa._HOST_DESCRIPTOR_WORK
                    or not sa._pointers_pay(d, q.dtype, config["block_m"], n)):
                continue  # a problem the rule leaves alone
            splits = min(sa.kv_splits_for(heads, n, config["block_m"], causal, q),
                         cdiv(n, config["block_n"]))
            before = dict(block_m=config["block_m"], block_n=config["block_n"],
                          num_warps=config["num_warps"], num_stages=config["num_stages"],
                          kv_splits=splits, tma=True)
            time_attention_against_cudnn(
                f"{str(dtype)[6:]} H={heads} N={n} d={d} causal={causal}: "
                f"{before['block_m']}x{before['block_n']}/{before['num_warps']}w "
                f"kv_splits={splits}", q, k, v, causal, flops,
                {"launcher default (pointers)": {},
                 f"before: TMA on the device, {before['num_stages']} stages": before},
                plan, digits=3)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
