"""GPU paths still compile for the lent GPU's architecture, on a machine without one.

Triton compiles for a named target (here sm_90, the H200) with the ptxas it ships, so CI can
catch an API change in code the interpreter never compiles (Gluon, TMA descriptors, Hopper
tensor cores) and can check the machine code for what the kernels' comments promise: 16-byte
copies, shared memory that fits, no register spills in the default configurations. Nothing is
launched. The compiling is tools/compile_sm90.py's, which prints the same facts for more tiles.
"""

from __future__ import annotations

import re

import pytest
import torch

from references import fused_gemm as fg
from references import streaming_attention as sa
from references import strided_softmax as ss
from tools import compile_sm90 as sm90

SM90_SHARED_BYTES = 227 * 1024  # per program on an H100/H200


@pytest.mark.skipif(ss.gluon is None, reason="this Triton has no Gluon")
@pytest.mark.parametrize("dtype,tile", [("fp16", ss._SMEM_SHORT), ("bf16", ss._SMEM_LONG),
                                        ("fp32", ss._SMEM_FLOAT32)])
def test_smem_exchange_compiles_for_sm90_with_16_byte_copies(dtype, tile):
    compiled = sm90.strided_exchange_smem(dtype, *tile)
    # Every copy into shared memory moves 16 bytes (cp.async: LDGSTS ... .128), whatever n_i
    # is: the kernel copies whole runs, and the row stride is passed in runs.
    copies = re.findall(r"LDGSTS\.\S+", sm90.sass(compiled))
    assert copies and all(op.endswith(".128") for op in copies), sorted(set(copies))
    # The slice plus the layout conversion's buffer fit three programs in an SM's 227 KiB.
    assert compiled.metadata.shared <= SM90_SHARED_BYTES // 3


# The persistent GEMM's Stream-K hand-off adds shared tiles FIXUP_ROWS = 64 rows at a time,
# which spills a little (80 bytes per thread; 32 rows would not spill, see
# diagnostics/compile-sm90-*), but 64 measured fastest on the H200
# (diagnostics/probe-gemm-stream-k-rows-*). Pinned here so that growth shows up: the main loop
# (STREAM_K=False) must not spill at all.
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("stream_k,max_stack", [(False, 0), (True, 96)])
def test_persistent_gemm_default_tile_compiles_for_sm90_within_its_registers(dtype, stream_k,
                                                                            max_stack):
    config = fg.default_config(8192, 8192, 8192)  # the large-problem tile: 128 x 256 x 64
    compiled = sm90.persistent_gemm(config, stream_k, min(config["block_m"], fg._MAX_FIXUP_ROWS),
                                    dtype)
    facts = sm90.resources(compiled)
    assert facts["stack"] <= max_stack
    assert facts["shared"] <= SM90_SHARED_BYTES


# Attention's default tiles (bf16, TMA loads built in the kernel, and the pointer path used
# when TMA cannot describe the inputs). Large non-causal problems at d = 128 take 128 x 64
# tiles over 4 warps, measured faster than 64-row tiles (diagnostics/ab-attention-*) although
# they spill a little with TMA (72 bytes), and faster than the same tiles over 8 warps, which
# compile without spilling (259 against 409 us, diagnostics/probe-attention-tiles-*). On the
# pointer path that tile spills 920 bytes, so there the default is its `pointer_tile`,
# 128 x 128 over 8 warps, which spills 376 bytes and measured fastest of six on that path
# (diagnostics/probe-attention-tiles-pointers-*).
_ATTENTION_CASES = [
    # head_dim, causal, n_ctx, use_tma, most spilled bytes per thread
    (64, False, 16384, True, 0), (128, False, 16384, True, 96), (64, True, 4096, True, 0),
    (128, True, 4096, True, 0), (64, False, 16384, False, 0), (64, True, 4096, False, 0),
    (128, True, 4096, False, 0), (128, False, 16384, False, 384),
]


@pytest.mark.parametrize("head_dim,causal,n_ctx,use_tma,max_stack", _ATTENTION_CASES)
def test_attention_default_tiles_compile_for_sm90_within_their_registers(head_dim, causal,
                                                                         n_ctx, use_tma,
                                                                         max_stack):
    config = sa.default_config(head_dim, torch.bfloat16, causal=causal, n_ctx=n_ctx)
    if not use_tma:  # what _launch swaps in where TMA does not run
        config.update(sa.pointer_tile(head_dim, torch.bfloat16, causal=causal, n_ctx=n_ctx) or {})
    compiled = sm90.attention(head_dim, config["block_m"], config["block_n"],
                              config["num_warps"], config["num_stages"], causal, use_tma)
    facts = sm90.resources(compiled)
    assert facts["stack"] <= max_stack
    assert facts["shared"] <= SM90_SHARED_BYTES


# The Gluon attention probe (tools/probe_attention_wgmma.py): the lesson and the report say
# that ptxas moves the wait for P V above the softmax unless a side-effecting instruction
# (nanosleep) sits just before it; (e) has none, (h) has one. No spills in either.
@pytest.mark.skipif(ss.gluon is None, reason="this Triton has no Gluon")
@pytest.mark.parametrize("variant,overlaps", [("e", False), ("h", True)])
def test_gluon_attention_softmax_sits_between_the_waits_only_with_the_nanosleep(variant,
                                                                               overlaps):
    import importlib

    from tools.probe_attention_wgmma import _between_waits, compile_variant

    module = importlib.import_module(f"tools._wgmma_variants.{variant}")
    compiled = compile_variant(module, 128, 128, 64, 8, 3, causal=False)
    assert sm90.resources(compiled)["stack"] == 0
    loops = _between_waits(sm90.sass(compiled))
    assert loops
    assert all(("MUFU.EX2" in text) == overlaps for text in loops), loops


# The reference's Hopper path (references/_attention_hopper.py, the probe's variant (w)): its
# softmax runs between the two waits, in both consumer warpgroups' loops, at every head dim it
# runs and with either mask; it spills at most the 16 bytes per thread it did when it was
# timed (d = 128; none at d = 64), and fits the shared memory of one SM.
@pytest.mark.skipif(ss.gluon is None, reason="this Triton has no Gluon")
@pytest.mark.parametrize("head_dim,causal,max_stack", [(128, False, 16), (128, True, 16),
                                                       (64, False, 0), (64, True, 0)])
def test_warp_specialized_attention_overlaps_its_softmax(head_dim, causal, max_stack):
    from tools.probe_attention_wgmma import _between_waits

    compiled = sm90.attention_warp_specialized(head_dim, causal)
    facts = sm90.resources(compiled)
    assert facts["stack"] <= max_stack
    assert facts["shared"] <= SM90_SHARED_BYTES
    loops = _between_waits(sm90.sass(compiled))
    assert len(loops) >= 2  # one key loop per consumer warpgroup
    assert all("MUFU.EX2" in text for text in loops), loops


# The ping-pong GEMM probe (tools/probe_gemm_pingpong.py; measured no faster than the
# reference): it must keep compiling for sm_90, with its products pipelined and no spills.
@pytest.mark.skipif(ss.gluon is None, reason="this Triton has no Gluon")
def test_gluon_pingpong_gemm_compiles_for_sm90_without_spills():
    from tools.probe_attention_wgmma import _ptxas_warnings
    from tools.probe_gemm_pingpong import compile_for_sm90

    compiled = compile_for_sm90("bf16")
    facts = sm90.resources(compiled)
    assert facts["stack"] == 0
    assert facts["shared"] <= SM90_SHARED_BYTES
    assert not _ptxas_warnings(compiled)
    assert "WARPGROUP.DEPBAR.LE gsb0, 0x1" in sm90.sass(compiled)  # one product left in flight
