"""The comparison and the call guard every check relies on: they must be able to fail.

A check is only as strong as `compare.assert_close` and `ctx.call`. These tests pin the two
holes the twenty-fifth session's mutation audit found in them: a finite value where the
reference is -inf or NaN passed (its tolerance was inf or NaN), and an output buffer cached
across calls passed (each call's output was only compared with that call's inputs).
"""

from __future__ import annotations

import pytest
import torch

from checks import compare
from checks.context import CheckContext
from checks.core import CheckFailed


def _close(got, expected, **kwargs):
    return compare.assert_close(torch.tensor(got, dtype=torch.float32),
                                torch.tensor(expected, dtype=torch.float64), **kwargs)


@pytest.mark.parametrize("expected", [float("-inf"), float("inf"), float("nan")])
@pytest.mark.parametrize("tolerance", [{}, {"rtol": 0.0, "atol": 0.0}])
def test_a_finite_value_never_matches_a_non_finite_reference(expected, tolerance):
    with pytest.raises(CheckFailed, match="finite values where the reference is Inf or NaN"):
        _close([0.25, -1e30], [0.25, expected], **tolerance)


def test_equal_infinities_and_nans_agree_and_report_no_error():
    max_error, _ = _close([float("-inf"), float("nan"), 1.0], [float("-inf"), float("nan"), 1.0])
    assert max_error == 0.0


def test_opposite_infinities_disagree():
    with pytest.raises(CheckFailed):
        _close([float("inf")], [float("-inf")])


def _context():
    return CheckContext("cpu", seed=1, key="tests/compare")


def test_an_output_cached_across_calls_fails_with_its_hint():
    cache = {}

    def cached_double(x):
        out = cache.setdefault(tuple(x.shape), torch.empty_like(x))
        return torch.mul(x, 2, out=out)

    ctx = _context()
    first = ctx.call(cached_double, ctx.randn((4, 8)), expect_shape=(4, 8),
                     expect_dtype="float32")
    with pytest.raises(CheckFailed) as failed:
        ctx.call(cached_double, ctx.randn((4, 8)), expect_shape=(4, 8), expect_dtype="float32")
    assert "earlier call" in failed.value.message
    assert "no cached buffer" in failed.value.hint
    del first


def test_fresh_outputs_of_repeated_calls_pass():
    ctx = _context()
    outs = [ctx.call(lambda x: x * 2, ctx.randn((4, 8)), expect_shape=(4, 8),
                     expect_dtype="float32") for _ in range(3)]
    assert len({t.data_ptr() for t in outs}) == 3


def test_expect_fresh_sees_views_of_an_earlier_output():
    ctx = _context()
    whole = torch.empty(16)
    ctx.expect_fresh(whole[:8], "first")
    with pytest.raises(CheckFailed):
        ctx.expect_fresh(whole[8:], "second")


def test_an_empty_input_returned_as_the_output_fails():
    """An empty tensor has no memory (data pointer 0), so only identity shows the input came
    back; a fresh empty output passes."""
    ctx = _context()
    x = torch.randn((0, 5))
    with pytest.raises(CheckFailed, match="returned one of its inputs"):
        ctx.call(lambda t: t, x)
    assert ctx.call(lambda t: torch.empty_like(t), x).shape == (0, 5)


def test_a_store_between_a_views_elements_fails_as_a_write_into_the_input():
    """A slice's elements are unchanged, but the cells it skips (same storage) were written."""
    ctx = _context()
    base = torch.randn((6, 8))
    x = base[:, 1:-1]

    def writes_the_gap(t):
        out = t * 2
        # the learner's kernel, storing one column left of the slice (an offset off by one):
        torch.as_strided(t, (t.shape[0],), (t.stride(0),), t.storage_offset() - 1).fill_(0.0)
        return out

    with pytest.raises(CheckFailed, match="outside the input's own elements") as failed:
        ctx.call(writes_the_gap, x, expect_shape=(6, 6), expect_dtype="float32")
    assert "inputs must never be written" in failed.value.hint
    # A fresh copy of the same slice, read only, passes: the snapshot sees nothing else.
    assert ctx.call(lambda t: t * 2, base.clone()[:, 1:-1], expect_shape=(6, 6),
                    expect_dtype="float32").shape == (6, 6)


def test_inputs_sharing_one_buffer_are_snapshotted_once():
    from checks.context import _distinct_storages

    qkv = torch.randn((3, 4, 8))
    q, k, v = qkv.unbind(0)
    assert [i for i, _ in _distinct_storages([q, k, v, torch.randn(2)])] == [0, 3]


# -- elements never written ------------------------------------------------------------------
# ctx.call fills fresh float memory with a NaN of its own bit pattern, so an element no kernel
# wrote fails on every run (never right by the luck of the allocator) and is named as such.

def _half_written(x):
    out = torch.empty_like(x)
    out[: x.shape[0] // 2] = x[: x.shape[0] // 2] * 2
    return out


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_elements_never_written_fail_and_are_named(dtype):
    ctx = _context()
    x = ctx.randn((6, 5), dtype)
    out = ctx.call(_half_written, x, expect_shape=(6, 5), expect_dtype=dtype)
    assert ctx.never_written(out)[3:].all() and not ctx.never_written(out)[:3].any()
    with pytest.raises(CheckFailed) as failed:
        ctx.assert_close(out, x.double() * 2)
    assert "15 never written" in failed.value.message
    assert failed.value.hint.startswith("output never written: 15 of 30 elements")
    assert "(first at (3, 0))" in failed.value.hint


def test_a_fully_written_output_has_no_mask_and_passes():
    ctx = _context()
    x = ctx.randn((6, 5))
    out = ctx.call(lambda t: t * 2, x, expect_shape=(6, 5), expect_dtype="float32")
    assert ctx.never_written(out) is None
    ctx.assert_close(out, x.double() * 2)


def test_an_element_never_written_fails_where_the_reference_is_nan():
    """The fill is a NaN, and NaN agrees with NaN: an unwritten element must fail anyway."""
    ctx = _context()
    x = ctx.randn((4, 3))
    out = ctx.call(_half_written, x, expect_shape=(4, 3), expect_dtype="float32")
    expected = x.double() * 2
    expected[2:] = float("nan")
    with pytest.raises(CheckFailed, match="never written"):
        ctx.assert_close(out, expected)


def test_only_diagnoses_not_from_values_speak_when_nothing_wrong_was_written():
    """A diagnosis that reads the wrong values would read the fill; one marked
    not_from_values (it reasons about which elements are wrong) still speaks first."""
    ctx = _context()
    x = ctx.randn((4, 3))
    out = ctx.call(_half_written, x, expect_shape=(4, 3), expect_dtype="float32")
    reads_values = lambda got, expected, bad: "NaN: max subtraction missing?"  # noqa: E731
    coverage = compare.always("grid too small")
    with pytest.raises(CheckFailed) as failed:
        ctx.assert_close(out, x.double() * 2, diagnose=[reads_values])
    assert failed.value.hint.startswith("output never written")
    with pytest.raises(CheckFailed) as failed:
        ctx.assert_close(out, x.double() * 2, diagnose=[reads_values, coverage])
    assert failed.value.hint == "grid too small"


def test_the_fill_is_not_logged_as_an_allocation(monkeypatch):
    """track_allocations logs the same with the fill as without it."""
    from checks import context

    def logged():
        ctx = _context()
        x = ctx.randn((4, 3))
        with ctx.track_allocations() as log:
            ctx.call(lambda t: torch.empty_like(t).copy_(t), x)
        return log

    with_fill = logged()
    monkeypatch.setattr(context, "FRESH_MEMORY_FILL", {})
    assert with_fill == logged()


def test_a_few_unwritten_elements_among_many_wrong_ones_do_not_take_the_hint():
    """A computed value can carry the fill's bits by chance: when most wrong elements were
    written, "never written" is a line of the message, not the hint."""
    ctx = _context()
    x = ctx.randn((4, 8))

    def mostly_wrong(t):
        out = torch.empty_like(t)
        out[:, 1:] = t[:, 1:] * 3  # wrong, but written
        out[0, 0] = t[0, 0] * 2  # right; out[1:, 0] stays unwritten
        return out

    out = ctx.call(mostly_wrong, x, expect_shape=(4, 8), expect_dtype="float32")
    with pytest.raises(CheckFailed) as failed:
        ctx.assert_close(out, x.double() * 2)
    assert "3 never written" in failed.value.message
    assert not failed.value.hint.startswith("output never written")



def test_fused_gemm_demands_an_overflowing_reference_exactly():
    """fused GEMM compares with its own element-wise tolerance, which is inf where the
    contract's result overflows float16: there only the same infinity may pass."""
    from checks import fused_gemm

    a = torch.full((2, 4), 200.0, dtype=torch.float16)  # 4 * 200 * 100 = 80000 > 65504
    b = torch.full((4, 3), 100.0, dtype=torch.float16)
    b[:, 2] = 0.5  # one finite column beside the overflowing ones
    ctx = _context()
    fused_gemm._compare(ctx, (a.double() @ b.double()).half(), a, b, None, False)
    assert ctx.max_error == 0.0
    for wrong in (1.0, float("-inf"), float("nan")):
        got = (a.double() @ b.double()).half()
        got[1, 0] = wrong
        with pytest.raises(CheckFailed, match="1 of 6 elements outside tolerance; worst at "
                                              r"index \(1, 0\).*not finite"):
            fused_gemm._compare(_context(), got, a, b, None, False)
