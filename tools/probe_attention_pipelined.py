"""Streaming attention with the next key block's scores issued before this block's softmax. A
diagnostic, prepared for a GPU run (not yet measured on one).

    python3 tools/probe_attention_pipelined.py [--quick]
    python3 tools/probe_attention_pipelined.py --compile    # any machine: no GPU needed

The reference's key loop runs, per key block: S = Q K^T on the tensor cores, then the softmax
update on the CUDA cores and the special-function units, then acc += P V on the tensor cores.
One warpgroup does all three in turn, so the tensor cores idle during the softmax. FlashAttention-3
overlaps them; one of its two tricks needs nothing but a different loop order, which Triton can
express: issue S_next = Q K_next^T (an asynchronous wgmma) *before* the softmax of the current S,
and let it finish while the softmax runs. Whether it overlaps is up to Triton's wgmma pipelining,
and compiled for sm_90 with Triton 3.6 (bf16, d = 64, 64 x 64 tiles, 4 warps, 3 stages, TMA) the
answer is visible before any GPU run: the TTGIR puts `warp_group_dot_wait {pendings = 0}` on
S_next right after issuing it, so the softmax still waits for it, and the loop needs 150
registers per thread instead of 106. Expect no gain; what remains to measure is the cost. The
overlap itself needs explicit control of the waits (Gluon's warpgroup_mma / warpgroup_mma_wait)
or warp specialisation.

This copies references/ into a temporary folder, replaces `_attend_key_blocks` of
streaming_attention.py by the reordered loop (TMA and pointer loads alike), checks both
against SDPA-cuDNN's output, and times the reference, the reordered copy and SDPA-cuDNN in the
same rounds (graph timing) on the shapes of the attention goal. Without a GPU
it only checks the reordered loop against a float64 reference under the interpreter (a test of
this script). `--compile` compiles the reference's and the reordered kernel for sm_90 (Triton's
own ptxas, no GPU) and prints each one's registers per thread and the waits Triton put on the
scores' dots. benchmarks/results/diagnostics/ keeps its output.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ROOT = Path(__file__).resolve().parent.parent

# The reordered key loop: the reference's `_attend_key_blocks` with S for block j + 1 computed
# at the top of iteration j.
_PIPELINED = '''def _attend_key_blocks(acc, l_i, m_i, q, k_src, v_src, head, lo, hi, offs_m, n_ctx, qk_scale,
                       stride_kn, stride_kd, stride_vn, stride_vd,
                       BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, MASKED: tl.constexpr,
                       IS_CAUSAL: tl.constexpr, USE_TMA: tl.constexpr,
                       UPCAST_DOT: tl.constexpr, DOT_PRECISION: tl.constexpr):
    """Probe variant: S of the next key block is issued before the softmax of this one."""
    offs_n0 = tl.arange(0, BLOCK_N)
    cols = tl.arange(0, HEAD_DIM)
    k_offs = offs_n0[:, None] * stride_kn + cols[None, :] * stride_kd
    v_offs = offs_n0[:, None] * stride_vn + cols[None, :] * stride_vd
    # S of the first block. A key block at or past N loads as zeros: the copy engine zero-fills
    # it (TMA), the mask does (pointers), so the one prefetch past the last block is harmless.
    if USE_TMA:
        k = k_src.load([head, lo, 0]).reshape([BLOCK_N, HEAD_DIM])
    else:
        first = (lo + offs_n0).to(tl.int64)  # lo may be a plain 0
        k = tl.load(k_src + first[:, None] * stride_kn + cols[None, :] * stride_kd,
                    mask=first[:, None] < n_ctx, other=0.0)
    if UPCAST_DOT:
        k = k.to(tl.float32)
    s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION)
    for start_n in tl.range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        offs_n = start_n + offs_n0
        # The next block's scores first: the tensor cores work on them during the softmax.
        next_n = start_n + BLOCK_N
        if USE_TMA:
            k_next = k_src.load([head, next_n, 0]).reshape([BLOCK_N, HEAD_DIM])
        else:
            k_next = tl.load(k_src + next_n.to(tl.int64) * stride_kn + k_offs,
                             mask=(next_n + offs_n0)[:, None] < n_ctx, other=0.0)
        if UPCAST_DOT:
            k_next = k_next.to(tl.float32)
        s_next = tl.dot(q, tl.trans(k_next), input_precision=DOT_PRECISION)
        if MASKED:
            keep = offs_n[None, :] < n_ctx
            if IS_CAUSAL:
                keep = keep & (offs_m[:, None] >= offs_n[None, :])
            s = tl.where(keep, s, -float("inf"))
        if USE_TMA:
            v = v_src.load([head, start_n, 0]).reshape([BLOCK_N, HEAD_DIM])
        elif MASKED:
            v = tl.load(v_src + start_n.to(tl.int64) * stride_vn + v_offs,
                        mask=offs_n[:, None] < n_ctx, other=0.0)
        else:
            v = tl.load(v_src + start_n.to(tl.int64) * stride_vn + v_offs)
        if UPCAST_DOT:
            v = v.to(tl.float32)
        m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
        p = tl.math.exp2(s * qk_scale - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc, input_precision=DOT_PRECISION)
        l_i = l_i * alpha + tl.sum(p, 1)
        m_i = m_new
        s = s_next
    return acc, l_i, m_i


'''


def pipelined_copy() -> Path:
    """A copy of references/ whose streaming_attention.py has the reordered key loop."""
    folder = Path(tempfile.mkdtemp(prefix="attn_pipelined_")) / "references"
    shutil.copytree(ROOT / "references", folder, ignore=shutil.ignore_patterns("__pycache__"))
    path = folder / "streaming_attention.py"
    text = path.read_text()
    start = text.index("def _attend_key_blocks(")
    end = text.index("@triton.jit\ndef attention_kernel(")
    path.write_text(text[:start] + _PIPELINED + text[end:])
    return folder


def _interpreter_check() -> int:
    import torch

    from checks import loader

    variant = loader.load("streaming_attention", loader.resolve(pipelined_copy()))
    worst = 0.0
    for n, d, causal in ((1, 16, False), (17, 16, True), (100, 32, False), (257, 16, True)):
        g = torch.Generator().manual_seed(n * d)
        q, k, v = (torch.randn(n, d, generator=g, dtype=torch.float16) for _ in range(3))
        scores = (q.double() @ k.double().T) / d ** 0.5
        if causal:
            scores = scores.masked_fill(torch.ones(n, n).triu(1).bool(), float("-inf"))
        expected = torch.softmax(scores, -1) @ v.double()
        out = variant.attention(q, k, v, causal=causal)  # the pointer path, reordered too
        err = (out.double() - expected).abs().max().item()
        worst = max(worst, err)
        print(f"N={n} d={d} causal={causal}: max |err| {err:.2e}", flush=True)
    return 0 if worst < 1e-2 else 1


def _compile_report() -> int:
    """Static facts of the two kernels for sm_90: registers, and where the scores are waited for."""
    import os
    import re
    import subprocess

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from checks import loader

    kernels = {"reference": loader.load("streaming_attention", "references"),
               "reordered": loader.load("streaming_attention", loader.resolve(pipelined_copy()))}
    # bf16, d = 64, 64 x 64 tiles, 4 warps, 3 stages, TMA descriptors built on the device:
    # the default configuration of one head of 16384 (the goal's worst case).
    const = dict(stride_qd=1, stride_kd=1, stride_vd=1, stride_od=1, HEAD_DIM=64, BLOCK_M=64,
                 BLOCK_N=64, IS_CAUSAL=False, USE_TMA=True, HOST_DESCRIPTORS=False,
                 UPCAST_DOT=False, DOT_PRECISION="tf32", KV_SPLITS=1)
    cuobjdump = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin",
                             "cuobjdump")
    print("sm_90, Triton", triton.__version__, "- bf16, d = 64, 64 x 64, 4 warps, 3 stages, TMA")
    for name, module in kernels.items():
        fn = module.attention_kernel
        sig = {n: "constexpr" if n in const else "*bf16" if n.endswith("_ptr")
               else "fp32" if n == "qk_scale" else "i32" for n in fn.arg_names}
        src = ASTSource(fn, signature=sig, attrs={},
                        constexprs={(fn.arg_names.index(k),): v for k, v in const.items()})
        compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                                  options=dict(num_warps=4, num_stages=3))
        with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
            f.write(compiled.asm["cubin"])
            f.flush()
            usage = subprocess.run([cuobjdump, "-res-usage", f.name], capture_output=True,
                                   text=True).stdout
        resources = " ".join(re.findall(r"(?:REG|STACK):\d+", usage))
        print(f"\n{name}: {resources}, shared memory {compiled.metadata.shared} bytes")
        lines = compiled.asm["ttgir"].splitlines()
        for i, line in enumerate(lines):  # each dot of Q with a key tile, and the wait after it
            if "ttng.warp_group_dot %q" in line and "isAsync" in line:
                dot = line.split("=")[0].strip()
                wait = next((w for w in lines[i + 1:i + 4] if "warp_group_dot_wait" in w), "")
                found = re.search(r"warp_group_dot_wait (%[\w#]+).*pendings = (\d+)", wait)
                print(f"   async Q K^T dot {dot}: " + (
                    f"waited for on the next line (warp_group_dot_wait {found[1]}, "
                    f"pendings = {found[2]})" if found else "no wait within 3 lines"))
    return 0


def main(argv: list[str]) -> int:
    if "--compile" in argv:
        return _compile_report()
    from checks import device as devices

    if devices.select() != "cuda":
        return _interpreter_check()
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from benchmarks import harness
    from checks import loader
    from references import streaming_attention as reference
    from tools._timing import graph_medians_us

    variant = loader.load("streaming_attention", loader.resolve(pipelined_copy()))
    plan = harness.PLANS["sweep"]
    shapes = [(1, 16384, 64), (1, 4096, 64), (16, 4096, 128), (16, 4096, 64), (1, 8192, 128)]
    if "--quick" in argv:
        shapes = shapes[:2]
    for heads, n, d in shapes:
        for causal in (False, True):
            q, k, v = (torch.randn(1, heads, n, d, device="cuda", dtype=torch.bfloat16)
                       for _ in range(3))

            def cudnn():
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

            flat = [t.reshape(heads, n, d) for t in (q, k, v)]
            calls = {"sdpa-cudnn": cudnn,
                     "reference": lambda: reference.attention_heads(*flat, causal=causal),
                     "reordered": lambda: variant.attention_heads(*flat, causal=causal)}
            expected = cudnn().reshape(heads, n, d).float()
            for name in ("reference", "reordered"):
                err = (calls[name]().float() - expected).abs().max().item()
                print(f"  {name}: max |err| against cuDNN {err:.2e}", flush=True)
            medians = graph_medians_us(calls.values(), plan)
            print(f"{heads} x {n}, d = {d}, causal = {causal} (bf16, graph timing)", flush=True)
            for label, us in zip(calls, medians, strict=True):
                print(f"   {us:8.1f} us  {medians[0] / us:5.3f}x cuDNN  {label}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
