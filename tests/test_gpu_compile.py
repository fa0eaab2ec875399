"""GPU-only kernels still compile for the lent GPU's architecture, on a machine without one.

Triton compiles for a named target (here sm_90, the H200) with the ptxas it ships, so CI can
catch an API change in a kernel that the interpreter never runs (Gluon), and can check the
machine code for what the kernel's comments promise. Nothing is launched.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import triton

from references import strided_softmax as ss


def _compile_exchange_smem(dtype: str, block_r: int, block_i: int, num_warps: int):
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    fn = ss.softmax_across_exchange_smem_kernel
    constants = dict(BLOCK_I=block_i, BLOCK_R=block_r, CHUNK_R=ss._SMEM_CHUNK, SLICES=8,
                     VEC=16 // (4 if dtype == "fp32" else 2), EVEN_R=False, OUT_ALONG_R=True,
                     num_warps=num_warps)
    pointers = {"x_ptr": f"*{dtype}", "out_ptr": f"*{dtype}", "stats_ptr": "*fp32",
                "counters_ptr": "*i32"}
    signature = {name: "constexpr" if name in constants else pointers.get(name, "i32")
                 for name in fn.arg_names}
    # What Triton's launcher tells the compiler about 16-byte aligned pointers and about
    # integer arguments divisible by 16 (here only the output's row stride).
    aligned = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(fn.arg_names)
               if name in pointers or name == "stride_oi"}
    source = GluonASTSource(fn, signature=signature, attrs=aligned,
                            constexprs={(fn.arg_names.index(k),): v for k, v in constants.items()})
    return triton.compile(source, target=GPUTarget("cuda", 90, 32),
                          options=dict(num_warps=num_warps))


def _sass(compiled, tmp_path: Path) -> str:
    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    cubin = tmp_path / "kernel.cubin"
    cubin.write_bytes(compiled.asm["cubin"])
    return subprocess.run([str(tool), "-sass", str(cubin)], capture_output=True, text=True,
                          check=True).stdout


@pytest.mark.skipif(ss.gluon is None, reason="this Triton has no Gluon")
@pytest.mark.parametrize("dtype,tile", [("fp16", ss._SMEM_SHORT), ("bf16", ss._SMEM_LONG),
                                        ("fp32", ss._SMEM_FLOAT32)])
def test_smem_exchange_compiles_for_sm90_with_16_byte_copies(dtype, tile, tmp_path):
    block_r, block_i, num_warps = tile
    compiled = _compile_exchange_smem(dtype, block_r, block_i, num_warps)
    sass = _sass(compiled, tmp_path)
    # Every copy into shared memory moves 16 bytes (cp.async: LDGSTS ... .128), whatever n_i
    # is: the kernel copies whole runs, and the row stride is passed in runs.
    copies = re.findall(r"LDGSTS\.\S+", sass)
    assert copies and all(op.endswith(".128") for op in copies), sorted(set(copies))
    # The slice plus the layout conversion's buffer fit three programs in an SM's 227 KiB.
    assert compiled.metadata.shared <= 227 * 1024 // 3
