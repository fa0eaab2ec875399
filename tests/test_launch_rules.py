"""Launch rules the references derive from H200 measurements keep choosing what the comments
beside them (and the lessons) say they choose. Plain Python: no kernel runs here."""

from __future__ import annotations

import types

import pytest
import torch

from references import streaming_attention as sa


@pytest.fixture
def h200(monkeypatch):
    """kv_splits_for as it decides on a GPU of 132 SMs (the lent H200), without one."""
    monkeypatch.setattr(sa, "sm_count", lambda index: 132)
    monkeypatch.setattr(sa, "interpreting", lambda: False)

    def q(dtype=torch.bfloat16, d=64):
        return types.SimpleNamespace(device=torch.device("cuda", 0), dtype=dtype, shape=(1, 1, d))

    return q


@pytest.fixture
def attention_launches(monkeypatch):
    """The keyword arguments (and grid) of every attention_kernel launch, in order: a recorder
    stands in for the kernel, and CPU tensors pass the device check (TRITON_INTERPRET=1)."""
    launches = []

    class Recorder:
        def __getitem__(self, grid):
            return lambda *args, **kwargs: launches.append(dict(kwargs, grid=grid))

    monkeypatch.setattr(sa, "attention_kernel", Recorder())
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    return launches


@pytest.mark.parametrize("heads,n,causal,block_m,splits", [
    # one head without a mask: about 256 programs (2 per SM)
    (1, 4096, False, 64, 4), (1, 8192, False, 128, 4), (1, 16384, False, 128, 2),
    # one head with a mask: about 512 programs (4 per SM), every split >= 1024 keys
    (1, 4096, True, 64, 4), (1, 8192, True, 64, 4), (1, 16384, True, 64, 2),
    # a few heads in 64-row programs: counted like causal ones, about 4 per SM
    (2, 4096, False, 64, 4), (4, 4096, False, 64, 2), (6, 4096, False, 64, 2),
    # grids that already have the programs are not split
    (16, 4096, False, 128, 1), (16, 4096, True, 64, 1), (32, 8192, False, 128, 1),
    # very large grids: five 64-row programs per SM (default_config), not split either
    (64, 8192, False, 64, 1), (64, 8192, True, 64, 1),
    # short sequences: no split leaves fewer than 1024 keys
    (1, 1024, False, 64, 1), (1, 2048, True, 64, 2),
    # without a mask, a grid whose last wave of 264 would run mostly empty is split until its
    # waves are at least 90% full (384 programs -> 768; 320 -> 1280; 640 -> 1280)
    (3, 16384, False, 128, 2), (5, 8192, False, 128, 4), (5, 16384, False, 128, 2),
])
def test_attention_splits_follow_the_measured_rule(h200, heads, n, causal, block_m, splits):
    config = sa.default_config(64, torch.bfloat16, causal=causal, heads=heads, n_ctx=n)
    assert config["block_m"] == block_m
    assert sa.kv_splits_for(heads, n, config["block_m"], causal, h200()) == splits


def test_attention_d128_few_heads_keep_the_wave_rule(h200):
    """The count of 4 per SM is for 64-row programs at d <= 64: at d = 128, 2 heads of 4096
    took 1.15x the time with 4 splits instead of 2 (diagnostics/probe-attention-few-heads-*)."""
    assert sa.kv_splits_for(2, 4096, 64, False, h200(d=128)) == 2
    assert sa.kv_splits_for(2, 4096, 64, False, h200(d=64)) == 4


def test_attention_very_large_grids_take_five_programs_per_sm():
    """8192 or more 64-row programs at d <= 64 (measured: 0.95x -> 0.98x cuDNN at 64 heads of
    8192, a tie at 4096 programs, a loss below): 64 x 64 tiles, 4 warps, 2 stages, registers
    capped at 96. A caller's own tile knob drops the cap (it was measured for that tile only);
    an explicit maxnreg stays."""
    big = sa.default_config(64, torch.bfloat16, causal=False, heads=64, n_ctx=8192)
    assert big == dict(block_m=64, block_n=64, num_warps=4, num_stages=2, tma=None, maxnreg=96)
    assert sa.default_config(64, torch.bfloat16, causal=True, heads=64, n_ctx=8192) == big
    assert "maxnreg" not in sa.default_config(64, torch.bfloat16, heads=32, n_ctx=8192)
    assert "maxnreg" not in sa.default_config(128, torch.bfloat16, heads=64, n_ctx=8192)
    assert "maxnreg" not in sa.default_config(64, torch.float32, heads=64, n_ctx=8192)
    assert sa._config({}, 64, torch.bfloat16, False, 8192, 64)["maxnreg"] == 96
    assert sa._config({"block_m": 128}, 64, torch.bfloat16, False, 8192, 64)["maxnreg"] is None
    assert sa._config({"maxnreg": 128}, 64, torch.bfloat16, False, 8192, 64)["maxnreg"] == 128


def test_attention_register_cap_never_reaches_the_pointer_kernel(attention_launches):
    """The default's 96-register cap fits the TMA kernel; under it the pointer kernel spills
    (712 bytes per thread at d = 64), so _launch keeps the cap only where TMA runs or the
    caller asked for it."""
    launches = attention_launches
    q = torch.empty(64, 8192, 64, dtype=torch.bfloat16)  # 8192 programs of 64 rows: capped
    for knobs, cap in (({}, None), ({"tma": False}, None), ({"maxnreg": 96}, 96)):
        launches.clear()
        sa.attention_heads(q, q, q, **knobs)  # CPU tensors: no TMA
        assert launches[0].get("maxnreg") == cap, knobs


def test_attention_pointer_path_takes_its_own_tile_at_d128(attention_launches):
    """Large non-causal problems at d = 128 run 128 x 64 tiles over 4 warps with TMA; where TMA
    does not run, that tile spills 920 bytes per thread, and 128 x 128 over 8 warps, 3 stages
    measured 1.12x-1.18x faster (diagnostics/probe-attention-tiles-pointers-*). The swap is the
    default's: a caller's own tile shape is kept as given."""
    launches = attention_launches
    q = torch.empty(16, 4096, 128, dtype=torch.bfloat16)  # 1024 programs of 64 rows
    for knobs, tile in (({}, (128, 128, 8, 3)), ({"tma": False}, (128, 128, 8, 3)),
                        ({"num_warps": 4}, (128, 64, 4, 2)),
                        ({"block_n": 32}, (128, 32, 4, 2))):
        launches.clear()
        sa.attention_heads(q, q, q, **knobs)
        got = launches[0]
        assert (got["BLOCK_M"], got["BLOCK_N"], got["num_warps"], got["num_stages"]) == tile, knobs
    assert sa.pointer_tile(128, torch.bfloat16, heads=16, n_ctx=4096) == dict(
        block_m=128, block_n=128, num_warps=8, num_stages=3)
    assert sa.pointer_tile(128, torch.bfloat16, causal=True, heads=16) is None
    assert sa.pointer_tile(64, torch.bfloat16, heads=16) is None
    assert sa.pointer_tile(128, torch.bfloat16, heads=1, n_ctx=4096) is None  # 64-row default
    short = sa._config({}, 128, torch.bfloat16, False, 32, 1024)  # 1024 heads of 32 rows
    assert short["pointer_tile"] is None  # shorter than the tile: not where it was measured
    assert sa._config({"maxnreg": 128}, 128, torch.bfloat16, False, 4096, 16)["pointer_tile"] \
        is None  # a cap chosen for the visible tile stays on it
    first = sa._config({}, 128, torch.bfloat16, False, 4096, 16)
    first["pointer_tile"]["num_warps"] = 2  # a caller's edit never reaches the cache
    assert sa._config({}, 128, torch.bfloat16, False, 4096, 16)["pointer_tile"]["num_warps"] == 8



@pytest.mark.parametrize("heads,n,d,dtype,causal,knobs,tma,host,stages", [
    # small problems (descriptors would be built on the device): pointer loads
    (1, 4096, 64, torch.bfloat16, False, {}, False, False, 3),
    (1, 4096, 64, torch.float16, True, {}, False, False, 4),  # d = 64 causal: one more stage
    (1, 4096, 128, torch.bfloat16, True, {}, False, False, 3),
    # ... but not the 128 x 64 tile at d = 128 (21% slower on pointers), nor N < 2048 at d = 128,
    # nor what was not measured
    (1, 8192, 128, torch.bfloat16, False, {}, True, False, 2),
    (1, 1024, 128, torch.bfloat16, False, {}, True, False, 3),  # 16 programs: 1.12x the time
    (1, 1024, 64, torch.bfloat16, False, {}, False, False, 3),
    (1, 2048, 128, torch.bfloat16, True, {}, False, False, 3),
    (1, 4096, 32, torch.bfloat16, False, {}, True, False, 3),
    (1, 4096, 64, torch.float32, False, {}, True, False, 2),
    # large problems build their descriptors on the host, as before
    (16, 4096, 64, torch.bfloat16, False, {}, True, True, 3),
    # a caller's knob keeps the caller's path
    (1, 4096, 64, torch.bfloat16, False, {"tma": True}, True, False, 3),
    (1, 4096, 64, torch.bfloat16, True, {"num_warps": 4}, True, False, 3),
])
def test_attention_small_problems_load_by_pointers(monkeypatch, attention_launches, heads, n, d,
                                                    dtype, causal, knobs, tma, host, stages):
    """Where the launcher would build TMA descriptors on the device (a small problem), its own
    plan loads by pointers instead, with 4 stages at d = 64 under a causal mask (measured:
    diagnostics/probe-attention-pointers-*); see _pointers_pay."""
    launches = attention_launches
    # The launcher decides as on a Hopper GPU where TMA can run.
    monkeypatch.setattr(sa, "interpreting", lambda: False)
    monkeypatch.setattr(sa, "_tma_problem", lambda q, k, v, interp: None)
    monkeypatch.setattr(sa, "_warp_specialize_problem", lambda q, tma, interp: "not measured here")
    monkeypatch.setattr(sa.triton, "set_allocator", lambda allocator: None)
    q = torch.empty(heads, n, d, dtype=dtype)
    sa.attention_heads(q, q, q, causal=causal, **knobs)
    got = launches[0]
    assert (got["USE_TMA"], got["HOST_DESCRIPTORS"], got["num_stages"]) == (tma, host, stages)
    monkeypatch.setattr(sa, "DESCRIPTORS_ON_HOST", False)  # an A/B run's switch wins:
    launches.clear()  # TMA with descriptors built on the device, at every size
    sa.attention_heads(q, q, q, causal=causal, **knobs)
    assert (launches[0]["USE_TMA"], launches[0]["HOST_DESCRIPTORS"]) == (True, False)


@pytest.mark.usefixtures("attention_launches")  # a recorder in place of the kernel
def test_attention_default_config_is_launch_knobs_only():
    """default_config's keys are the launch knobs: a caller may pass them back as they are."""
    for d, heads, n in ((128, 16, 4096), (64, 64, 8192), (64, 1, 1024)):
        config = sa.default_config(d, torch.bfloat16, heads=heads, n_ctx=n)
        assert set(config) <= set(sa._KNOBS), config
        q = torch.empty(heads, n, d, dtype=torch.bfloat16)
        sa.attention_heads(q, q, q, **config)  # no TypeError for an unknown knob


def test_attention_splits_only_where_measured(h200):
    assert sa.kv_splits_for(1, 16384, 64, False, h200(torch.float32)) == 1  # not measured
    cpu = types.SimpleNamespace(device=torch.device("cpu"), dtype=torch.bfloat16)
    assert sa.kv_splits_for(1, 16384, 64, False, cpu) == 1


def test_attention_split_workspace_stays_far_below_a_score_matrix(h200):
    """By default every split walks >= 1024 keys: the fp32 states of all splits of one head,
    splits * N * (d + 2) floats, stay below N^2 / 7 elements at d = 128."""
    for n in (2048, 4096, 8192, 16384, 65536):
        for causal in (False, True):
            block_m = sa.default_config(128, torch.bfloat16, causal=causal, n_ctx=n)["block_m"]
            splits = sa.kv_splits_for(1, n, block_m, causal, h200())
            assert splits * n * (128 + 2) < n * n / 7


@pytest.mark.parametrize("heads,n,d,causal,hopper", [
    # d = 128 without a mask: from 0.7 programs (of 128 rows) per SM
    (16, 4096, 128, False, True), (1, 16384, 128, False, True), (3, 4096, 128, False, True),
    (1, 8192, 128, False, False),
    # d = 128 with a mask: from 0.9 per SM on two heads or more, from 1.3 on one
    (4, 4096, 128, True, True), (2, 8192, 128, True, True), (16, 4096, 128, True, True),
    (64, 8192, 128, True, True), (3, 4096, 128, True, False), (1, 16384, 128, True, False),
    (1, 20480, 128, True, False), (1, 21504, 128, True, False), (1, 22528, 128, True, True),
    (1, 24576, 128, True, True), (1, 65536, 128, True, True),
    # d = 64 without a mask: 0.9 to 1.0 per SM, one wave
    (4, 4096, 64, False, True), (2, 8192, 64, False, True), (1, 16384, 64, False, True),
    (3, 4096, 64, False, False), (8, 4096, 64, False, False), (16, 4096, 64, False, False),
    (4, 16384, 64, False, False),
    # d = 64 with a mask: 1.1 to 4 per SM
    (5, 4096, 64, True, True), (8, 4096, 64, True, True), (16, 4096, 64, True, True),
    (4, 16384, 64, True, True), (4, 4096, 64, True, False), (32, 4096, 64, True, False),
    (64, 8192, 64, True, False), (1, 16384, 64, True, False),
    # other head dims never
    (64, 8192, 32, True, False), (64, 8192, 16, False, False),
])
def test_hopper_path_where_measured(h200, heads, n, d, causal, hopper):
    assert sa._warp_specialize_pays(heads, n, d, causal, h200()) is hopper


def test_tma_layout_rule_is_one_rule_for_both_attention_paths():
    """TMA wants a unit innermost stride, 16-byte multiples elsewhere (0 included: k and v
    expand()ed over the heads ran right through TMA on the H200) and a 16-byte aligned start."""
    from references import _attention_hopper as hopper

    rule = hopper.tma_stride_problem
    x = torch.zeros(4, 64, 64, dtype=torch.bfloat16)
    assert rule(x) is None
    assert rule(torch.zeros(1, 64, 64, dtype=torch.bfloat16).expand(4, 64, 64)) is None
    assert rule(x[:, :, :56]) is None  # a column slice: the row stride is still 128 bytes
    assert rule(x.transpose(1, 2)) is not None  # no unit innermost stride
    assert rule(torch.zeros(4, 64, 60, dtype=torch.bfloat16)) is not None  # rows of 120 bytes
    shifted = torch.zeros(4 * 64 * 64 + 8, dtype=torch.bfloat16)[1:1 + 4 * 64 * 64]
    assert rule(shifted.view(4, 64, 64)) is not None  # starts 2 bytes past 16-byte alignment
    sa_rule = sa._tma_problem.__code__.co_names
    assert "tma_stride_problem" in sa_rule  # the Triton kernel's TMA asks the same function


# ---------------------------------------------------------------------------------------------
# Strided softmax: which transposed rows take path B's exchange
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def strided_h200(monkeypatch):
    """strided_softmax.plan as it decides on a GPU of 132 SMs, for tensors on the meta device."""
    from references import strided_softmax as ss

    monkeypatch.setattr(ss, "_gpu_sms", lambda x: 132)
    monkeypatch.setattr(ss, "interpreting", lambda: False)
    monkeypatch.setattr(ss, "check_device", lambda name, t: None)

    def transposed(rows, width, dtype=torch.float32):
        return torch.empty((width, rows), dtype=dtype, device="meta").t()

    return ss, transposed


@pytest.mark.parametrize("width,block_r,block_i", [
    (4096, 256, 32), (8192, 256, 32), (16384, 256, 32), (32768, 512, 16), (2049, 256, 32)])
def test_float32_long_transposed_rows_take_the_exchange(strided_h200, width, block_r, block_i):
    ss, transposed = strided_h200
    p = ss.plan(transposed((1 << 26) // width, width))
    assert p.exchange and (p.block_r, p.block_i, p.num_warps) == (block_r, block_i, 4)
    assert 2 <= p.splits <= 64


@pytest.mark.parametrize("width,dtype", [
    (2048, torch.float32),  # one tile per strip already reads x once
    (65536, torch.float32),  # longer than the measured range
    # 16-bit without the shared-memory exchange (here: a meta tensor, so no GPU to run it):
    # the register exchange is no faster than the split
    (4096, torch.float16), (32768, torch.bfloat16),
])
def test_other_transposed_rows_keep_their_paths(strided_h200, width, dtype):
    ss, transposed = strided_h200
    assert not ss.plan(transposed(4096, width, dtype)).exchange


@pytest.fixture
def smem_h200(strided_h200, monkeypatch):
    """strided_h200 on a GPU that can run the shared-memory exchange (compute capability 9.0)."""
    ss, transposed = strided_h200
    monkeypatch.setattr(ss, "_smem_reason", lambda *args: None)
    monkeypatch.setattr(ss, "capability", lambda index: (9, 0))
    monkeypatch.setattr(ss, "device_index", lambda x: 0)
    return ss, transposed


@pytest.mark.parametrize("width,block_r,block_i,warps", [
    (4096, 1024, 32, 4), (2049, 1024, 32, 4), (8192, 512, 64, 4), (32768, 512, 64, 4)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_16bit_long_transposed_rows_take_the_smem_exchange(smem_h200, width, block_r, block_i,
                                                           warps, dtype):
    ss, transposed = smem_h200
    p = ss.plan(transposed((1 << 26) // width, width, dtype))
    assert p.exchange and p.smem
    assert (p.block_r, p.block_i, p.num_warps) == (block_r, block_i, warps)
    assert p.block_r * p.block_i * 2 <= ss._SMEM_MAX_BYTES  # three programs per SM


@pytest.mark.parametrize("width,dtype", [
    (4096, torch.float32),  # float32: the register exchange is faster
    (2048, torch.float16),  # one tile per strip
    (65536, torch.float16),  # longer than the measured range
])
def test_smem_exchange_only_where_measured(smem_h200, width, dtype):
    ss, transposed = smem_h200
    assert not ss.plan(transposed(4096, width, dtype)).smem


def test_smem_exchange_needs_hopper_by_default_and_says_why_it_cannot_run(smem_h200,
                                                                          monkeypatch):
    ss, transposed = smem_h200
    monkeypatch.setattr(ss, "capability", lambda index: (8, 0))  # not measured there
    assert not ss.plan(transposed(4096, 4096, torch.float16)).smem
    assert ss.plan(transposed(4096, 4096, torch.float16), smem=True).smem  # asked for: runs
    monkeypatch.setattr(ss, "_smem_reason", lambda *args: "a reason")
    with pytest.raises(ValueError, match="a reason"):
        ss.plan(transposed(4096, 4096, torch.float16), smem=True)
    with pytest.raises(ValueError, match="exchange=False"):
        ss.plan(transposed(4096, 4096, torch.float16), smem=True, exchange=False)
    with pytest.raises(TypeError, match="smem"):
        ss.plan(transposed(4096, 4096, torch.float16), smem="yes")


def test_smem_exchange_tiles_are_checked(smem_h200):
    ss, transposed = smem_h200
    x = transposed(4096, 4096, torch.float16)
    with pytest.raises(ValueError, match="at least 64"):
        ss.plan(x, smem=True, block_r=32)
    with pytest.raises(ValueError, match="16 to 512"):
        ss.plan(x, smem=True, block_i=4)
    with pytest.raises(ValueError, match="65536"):
        ss.plan(x, smem=True, block_r=2048, block_i=32)


def test_smem_reason_names_what_is_missing():
    from references import strided_softmax as ss

    x = torch.randn(64, 64).t()
    reason = ss._smem_reason(x, 64, 64, 1, 64)
    assert reason and ("GPU" in reason or "Gluon" in reason)


def test_exchange_needs_every_slice_of_a_strip_running(strided_h200, monkeypatch):
    ss, transposed = strided_h200
    monkeypatch.setattr(ss, "_gpu_sms", lambda x: 32)  # a small GPU: 64 slices cannot all run
    assert not ss.plan(transposed(2048, 32768)).exchange
    with pytest.raises(ValueError, match="slices"):
        ss.plan(transposed(2048, 32768), exchange=True)
    assert ss.plan(transposed(2048, 32768), exchange=True, block_r=2048).splits == 16


def test_packed_narrow_rows_hold_4_kib_per_program():
    from references import strided_softmax as ss

    for dtype, width, block_i in ((torch.float32, 256, 4), (torch.float32, 512, 2),
                                  (torch.float16, 256, 8), (torch.bfloat16, 1024, 2)):
        x = torch.empty((4096, width), dtype=dtype, device="meta")
        assert ss.plan(x).block_i == block_i


# ---------------------------------------------------------------------------------------------
# Softmax backward: the loop path's step
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n_cols,tiles", [
    (16384, (1, 16384, 16)),  # the widest one-pass row
    (32768, (1, 8192, 16)), (65536, (1, 8192, 16)), (131072, (1, 8192, 16)),  # looped
])
def test_backward_wide_rows_loop_in_8192_column_steps_over_16_warps(n_cols, tiles):
    """Rows wider than the one-pass limit loop in 8192-column steps over 16 warps (measured
    1.04x-1.11x faster than 4096 over 8: diagnostics/probe-backward-warps-*); a caller's knobs
    still win."""
    from references import softmax_backward as sb

    assert sb._pick_tiles(64, n_cols, (n_cols, 1), None, None, None) == tiles
    assert sb._pick_tiles(64, 32768, (32768, 1), None, 4096, None) == (1, 4096, 8)
    assert sb._pick_tiles(64, 32768, (32768, 1), None, None, 8) == (1, 8192, 8)
