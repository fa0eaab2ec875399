"""Static facts of the GPU kernels for the lent H200 (sm_90), on a machine without a GPU.

    python3 tools/compile_sm90.py

Triton compiles for a named target with the ptxas it ships, so registers, spilled bytes and
shared memory per program can be read anywhere: this prints them for attention's candidate
tiles (tools/probe_attention_tiles.py's TILES, with TMA loads and on the pointer path), the
persistent GEMM's large tile with and without Stream-K (hand-off bands of 64 and 32 rows), and
strided softmax's shared-memory exchange at its default slices. The helpers below are also what
tests/test_gpu_compile.py compiles with.
benchmarks/results/diagnostics/ keeps the output; nothing is launched.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def compile_sm90(fn, constants: dict, types: dict, divisible=(), num_warps: int = 4,
                 num_stages: int | None = None, gluon: bool = False, maxnreg: int | None = None):
    """triton.compile of `fn` for sm_90. Arguments named in `types` get that type, the other
    non-constant ones int32; pointers and the arguments in `divisible` are marked as multiples
    of 16, as Triton's launcher marks 16-byte aligned pointers and integers divisible by 16
    (it does not specialize an integer equal to 1: pass such strides in `constants`)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    if gluon:  # a Gluon kernel: its source carries explicit layouts
        from triton.experimental.gluon._runtime import GluonASTSource
        ASTSource = GluonASTSource  # noqa: N806
    signature = {name: "constexpr" if name in constants else types.get(name, "i32")
                 for name in fn.arg_names}
    attrs = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(fn.arg_names)
             if name in divisible or types.get(name, "").startswith("*")}
    source = ASTSource(fn, signature=signature, attrs=attrs,
                       constexprs={(fn.arg_names.index(k),): v for k, v in constants.items()})
    options = dict(num_warps=num_warps)
    if num_stages is not None:
        options["num_stages"] = num_stages
    if maxnreg is not None:  # registers per thread at launch (warp-specialized kernels)
        options["maxnreg"] = maxnreg
    return triton.compile(source, target=GPUTarget("cuda", 90, 32), options=options)


def _cuobjdump(compiled, flag: str) -> str:
    import triton

    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    with tempfile.NamedTemporaryFile(suffix=".cubin") as cubin:
        cubin.write(compiled.asm["cubin"])
        cubin.flush()
        return subprocess.run([str(tool), flag, cubin.name], capture_output=True, text=True,
                              check=True).stdout


def sass(compiled) -> str:
    """The compiled kernel's machine code (cuobjdump -sass)."""
    return _cuobjdump(compiled, "-sass")


def resources(compiled) -> dict:
    """Registers per thread, spilled bytes per thread (cuobjdump's STACK) and shared memory
    per program (bytes)."""
    usage = _cuobjdump(compiled, "-res-usage")
    return dict(registers=int(re.search(r"REG:(\d+)", usage).group(1)),
                stack=int(re.search(r"STACK:(\d+)", usage).group(1)),
                shared=compiled.metadata.shared)


# ---------------------------------------------------------------------------------------------
# The kernels' signatures, as their launchers call them
# ---------------------------------------------------------------------------------------------
def attention(head_dim: int, block_m: int, block_n: int, num_warps: int, num_stages: int,
              causal: bool, use_tma: bool, dtype: str = "bf16", kv_splits: int = 1):
    from references import streaming_attention as sa

    constants = dict(HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n, IS_CAUSAL=causal,
                     USE_TMA=use_tma, HOST_DESCRIPTORS=False, UPCAST_DOT=False,
                     DOT_PRECISION="tf32", KV_SPLITS=kv_splits)
    types = {name: f"*{dtype}" for name in ("q_ptr", "k_ptr", "v_ptr", "out_ptr")}
    types.update({name: "*fp32" for name in ("acc_part_ptr", "m_part_ptr", "l_part_ptr")})
    types["qk_scale"] = "fp32"
    strides = {f"stride_{t}{a}" for t in "qkvo" for a in ("h", "m", "n")}
    return compile_sm90(sa.attention_kernel, constants, types, {"n_ctx"} | strides, num_warps,
                        num_stages)


def attention_warp_specialized(head_dim: int, causal: bool, dtype: str = "bf16"):
    """The Hopper path's Gluon kernel (references/_attention_hopper.py), as launch() calls it."""
    from triton.experimental.gluon import language as gl

    from references import _attention_hopper as hopper

    def descriptor(rows):
        block = [1, rows, head_dim]
        layout = gl.NVMMASharedLayout.get_default_for(block, getattr(gl, dict(
            bf16="bfloat16", fp16="float16")[dtype]))
        return f"tensordesc<{dtype}[1, {rows}, {head_dim}],{layout!r}>"

    types = dict(q_desc=descriptor(hopper.ROWS), k_desc=descriptor(hopper.BLOCK_N),
                 v_desc=descriptor(hopper.BLOCK_N), o_desc=descriptor(hopper.ROWS),
                 qk_scale="fp32")
    constants = dict(IS_CAUSAL=causal, STAGES=hopper.STAGES, num_warps=4)
    return compile_sm90(hopper.attention_ws_kernel, constants, types, {"n_ctx"}, 4, gluon=True,
                        maxnreg=hopper.MAXNREG)


def persistent_gemm(config: dict, stream_k: bool, fixup_rows: int, dtype: str = "bf16"):
    from references import fused_gemm as fg

    constants = dict(HAS_BIAS=True, APPLY_RELU=True, DOT_IN_FP32=False, A_MAJOR_M=False,
                     B_MAJOR_K=False, TMA_STORE=True, BLOCK_M=config["block_m"],
                     BLOCK_N=config["block_n"], BLOCK_K=config["block_k"],
                     GROUP_M=config["group_m"], NUM_PROGRAMS=132, STREAM_K=stream_k,
                     FIXUP_ROWS=fixup_rows)
    types = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": f"*{dtype}",
             "bias_ptr": "*fp32", "partials_ptr": "*fp32", "arrivals_ptr": "*i32"}
    return compile_sm90(fg.gemm_bias_relu_persistent_kernel, constants, types,
                        {"M", "N", "K", "stride_am", "stride_bk", "stride_cm"},
                        config["num_warps"], config["num_stages"])


def strided_exchange_smem(dtype: str, block_r: int, block_i: int, num_warps: int):
    from references import strided_softmax as ss

    constants = dict(BLOCK_I=block_i, BLOCK_R=block_r, CHUNK_R=ss._SMEM_CHUNK, SLICES=8,
                     VEC=16 // (4 if dtype == "fp32" else 2), EVEN_R=False, OUT_ALONG_R=True,
                     num_warps=num_warps)
    types = {"x_ptr": f"*{dtype}", "out_ptr": f"*{dtype}", "stats_ptr": "*fp32",
             "counters_ptr": "*i32"}
    return compile_sm90(ss.softmax_across_exchange_smem_kernel, constants, types, {"stride_oi"},
                        num_warps, gluon=True)


def _line(label: str, compiled) -> str:
    r = resources(compiled)
    return (f"   {label:44s} {r['registers']:4d} registers, {r['stack']:4d} bytes spilled, "
            f"{r['shared'] // 1024:4d} KiB shared")


def main() -> int:
    import triton

    from references import fused_gemm as fg
    from references import strided_softmax as ss
    from tools.probe_attention_tiles import TILES

    print(f"sm_90, Triton {triton.__version__}, per thread / per program")
    for head_dim, tiles in TILES.items():
        for causal in (False, True):
            print(f"\nattention, bf16, d = {head_dim}, causal = {causal}", flush=True)
            for t in tiles:
                if causal and t["block_n"] > t["block_m"]:
                    continue
                for use_tma in (True, False):
                    label = (f"{t['block_m']}x{t['block_n']}/{t['num_warps']}w/"
                             f"{t['num_stages']}s " + ("TMA" if use_tma else "pointers"))
                    print(_line(label, attention(head_dim, **t, causal=causal, use_tma=use_tma)),
                          flush=True)
    config = fg.default_config(8192, 8192, 8192)
    print(f"\npersistent GEMM, bf16, {config}", flush=True)
    for stream_k, rows in ((False, 64), (True, 64), (True, 32)):
        label = f"stream_k={stream_k}" + (f", hand-off {rows} rows" if stream_k else "")
        print(_line(label, persistent_gemm(config, stream_k, rows)), flush=True)
    print("\nstrided softmax, shared-memory exchange", flush=True)
    for dtype, tile in (("fp16", ss._SMEM_SHORT), ("bf16", ss._SMEM_LONG),
                        ("fp32", ss._SMEM_FLOAT32)):
        label = f"{dtype} {tile[0]}x{tile[1]}/{tile[2]}w"
        print(_line(label, strided_exchange_smem(dtype, *tile)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
