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
