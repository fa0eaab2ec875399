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

    def q(dtype=torch.bfloat16):
        return types.SimpleNamespace(device=torch.device("cuda", 0), dtype=dtype)

    return q


@pytest.mark.parametrize("heads,n,causal,block_m,splits", [
    # one head without a mask: about 256 programs (2 per SM)
    (1, 4096, False, 64, 4), (1, 8192, False, 128, 4), (1, 16384, False, 128, 2),
    # one head with a mask: about 512 programs (4 per SM), every split >= 1024 keys
    (1, 4096, True, 64, 4), (1, 8192, True, 64, 4), (1, 16384, True, 64, 2),
    # grids that already have the programs are not split
    (16, 4096, False, 128, 1), (16, 4096, True, 64, 1), (64, 8192, False, 128, 1),
    # short sequences: no split leaves fewer than 1024 keys
    (1, 1024, False, 64, 1), (1, 2048, True, 64, 2),
])
def test_attention_splits_follow_the_measured_rule(h200, heads, n, causal, block_m, splits):
    config = sa.default_config(64, torch.bfloat16, causal=causal, heads=heads, n_ctx=n)
    assert config["block_m"] == block_m
    assert sa.kv_splits_for(heads, n, config["block_m"], causal, h200()) == splits


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
