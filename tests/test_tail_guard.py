"""The GPU tail guard (checks/tail_guard.py), exercised on CPU tensors.

The guard is switched on for CUDA runs only, but its mechanism (canary bands around every
factory-made tensor of the output's size) is device-agnostic, so CI can test it here. A store
outside the tensor is simulated through its storage, which the guard made longer.
"""

from __future__ import annotations

import ast

import pytest
import torch

from checks.context import CheckContext
from checks.core import CheckFailed
from checks.tail_guard import CANARY, GUARD_BYTES, guard_tails
from tests.helpers import ROOT


def _write_outside(out: torch.Tensor, elements: int) -> None:
    """What an unmasked tail store does: write `elements` values right behind the tensor (or,
    negative, right before it: an offset off by some rows)."""
    raw = torch.empty(0, dtype=out.dtype).set_(out.untyped_storage())
    start = out.storage_offset()
    if elements > 0:
        raw[start + out.numel():start + out.numel() + elements] = 1.0
    else:
        raw[start + elements:start] = 1.0


def _add(x, y, *, overrun=0):
    out = torch.empty_like(x)
    torch.add(x, y, out=out)
    if overrun:
        _write_outside(out, overrun)
    return out


def test_an_intact_guard_band_reports_nothing_and_the_values_are_the_callers():
    x = torch.randn(1000)
    with guard_tails(1000, torch.float32, "cpu") as guard:
        out = _add(x, x)
        zeros = torch.zeros(1000)
    assert guard.overrun(out) is None
    assert len(guard.allocations) == 2  # the output and the zeros: same size and dtype
    torch.testing.assert_close(out, 2 * x)
    assert bool((zeros == 0).all()), "a guarded factory keeps its values"
    assert out.untyped_storage().nbytes() == GUARD_BYTES + 4000 + GUARD_BYTES
    assert out.data_ptr() % 16 == 0, "the tensor keeps a TMA-friendly alignment"


@pytest.mark.parametrize("overrun", [1, 24])
def test_a_store_past_the_end_is_named_with_its_bytes(overrun):
    x = torch.randn(1000)
    with guard_tails(1000, torch.float32, "cpu") as guard:
        out = _add(x, x, overrun=overrun)
    message = guard.overrun(out)
    assert message is not None
    assert "past the end of its output" in message
    assert f"bytes 1 to {4 * overrun} behind its last element" in message


def test_a_store_before_the_start_is_named_with_its_bytes():
    x = torch.randn(1000)
    with guard_tails(1000, torch.float32, "cpu") as guard:
        out = _add(x, x, overrun=-2)
    assert "wrote before the start of its output: bytes 1 to 8 before its first element" in (
        guard.overrun(out))


def test_strided_outputs_are_guarded_behind_their_furthest_element():
    x = torch.randn(8, 5).t()  # (5, 8), strides (1, 5)
    with guard_tails(40, torch.float32, "cpu") as guard:
        out = torch.empty_like(x)  # empty_like keeps the transposed strides
        out.copy_(x)
    assert out.stride() == x.stride() and guard.overrun(out) is None
    _write_outside(out, 1)
    assert "bytes 1 to 4 behind" in guard.overrun(out)


def test_other_sizes_dtypes_and_computed_tensors_are_not_guarded():
    x = torch.randn(1000)
    with guard_tails(1000, torch.float32, "cpu") as guard:
        torch.empty(999)
        torch.empty(1000, dtype=torch.float16)
        x * 2  # not a factory
    assert guard.allocations == []


def test_the_band_starts_as_canary():
    with guard_tails(3, torch.float16, "cpu") as guard:
        torch.empty(3, dtype=torch.float16)
    (_, used, allocation), = guard.allocations
    assert used == 6 and len(allocation) == 2 * GUARD_BYTES + 6
    assert bool((allocation[:GUARD_BYTES] == CANARY).all())
    assert bool((allocation[GUARD_BYTES + used:] == CANARY).all())


@pytest.fixture
def cuda_context(monkeypatch):
    """A CheckContext that takes the CUDA branch of ctx.call, its tensors on the CPU."""
    ctx = CheckContext("cpu", seed=0, key="tail-guard")
    ctx.device = "cuda"
    for name in ("synchronize", "reset_peak_memory_stats"):
        monkeypatch.setattr(torch.cuda, name, lambda *a, **k: None)
    for name in ("memory_allocated", "max_memory_allocated"):
        monkeypatch.setattr(torch.cuda, name, lambda *a, **k: 0)
    return ctx


def test_ctx_call_fails_a_tail_stored_past_the_end_on_a_gpu(cuda_context):
    x = torch.randn(1000)
    out = cuda_context.call(_add, x, x, expect_shape=(1000,), expect_dtype="float32")
    torch.testing.assert_close(out, 2 * x)
    with pytest.raises(CheckFailed) as failed:
        cuda_context.call(_add, x, x, overrun=3, expect_shape=(1000,), expect_dtype="float32")
    assert "_add wrote past the end of its output" in str(failed.value)
    assert failed.value.hint.startswith("tail not masked")
    assert "_add" not in failed.value.hint


def test_ctx_call_does_not_guard_inside_track_allocations(cuda_context):
    x = torch.randn(1000)
    with cuda_context.track_allocations() as log:
        cuda_context.call(_add, x, x, expect_shape=(1000,), expect_dtype="float32")
    assert log and all(shape == (1000,) for shape, _ in log), "no guard band in the log"


def test_every_ctx_call_in_the_checks_names_the_outputs_shape_and_dtype():
    """The guard needs both (CheckContext._tail_guard): a call site without them would run
    unguarded on a GPU, and a store past its output's end would pass there."""
    unguarded = []
    for path in sorted((ROOT / "checks").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "call" and getattr(node.func.value, "id", None) == "ctx"):
                named = {keyword.arg for keyword in node.keywords}
                if not {"expect_shape", "expect_dtype"} <= named:
                    unguarded.append(f"{path.name}:{node.lineno}")
    assert not unguarded, f"ctx.call without expect_shape and expect_dtype: {unguarded}"
