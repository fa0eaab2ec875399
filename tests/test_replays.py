"""Diagnoses meant for a GPU run, checked here on the CPU.

`forward.kv_splits` names a split whose unmasked share is not clamped to the stage's end
("tail not masked") by replaying that mistake in float64 (checks/streaming_attention.py:
_split_merged64, share_unclamped=True). Under the interpreter the mutant stops at its first
read past N, so the bug zoo never compares the replay with a real output: this test compares
it with a literal block-by-block emulation of the mutated kernel (online softmax per split,
loads past N reading zero rows as TMA does, the splits merged by their weights). On a GPU
the replay matches where those loads are TMA loads; pointer loads past N read whatever lies
there.

`forward.values`' fenced case makes an unmasked v load visible without a bounds check: the
last test runs that case alone against the planted `v_tail_unmasked`.
"""

from __future__ import annotations

import math

import pytest
import torch

from checks.streaming_attention import _split_merged64


def _mutated_kernel(q, k, v, *, causal, scale, block_m, block_n, splits, unclamped):
    n, d = q.shape
    q, k, v = q.double(), k.double(), v.double()
    room = n + 2 * splits * block_n * (n // block_n + 2)  # zero rows past N
    k_pad = torch.zeros((room, d), dtype=torch.float64)
    v_pad = torch.zeros((room, d), dtype=torch.float64)
    k_pad[:n], v_pad[:n] = k, v
    out = torch.zeros((n, d), dtype=torch.float64)
    for start_m in range(0, n, block_m):
        rows = torch.arange(start_m, start_m + block_m)
        valid = rows < n
        q_block = torch.zeros((block_m, d), dtype=torch.float64)
        q_block[valid] = q[rows[valid]]
        hi1 = start_m if causal else (n // block_n) * block_n
        lo2, hi2 = hi1, (min(start_m + block_m, n) if causal else n)
        steps = hi1 // block_n
        per = -(-steps // splits)
        states = []
        for split in range(splits):
            lo1 = min(split * per, steps) * block_n
            end1 = (split + 1) * per * block_n if unclamped else min((split + 1) * per, steps) * block_n
            end2 = hi2 if split == splits - 1 else lo2
            m = torch.full((block_m,), -math.inf, dtype=torch.float64)
            denom = torch.zeros(block_m, dtype=torch.float64)
            acc = torch.zeros((block_m, d), dtype=torch.float64)
            for lo, hi, masked in ((lo1, end1, False), (lo2, end2, True)):
                for start_n in range(lo, hi, block_n):
                    keys = torch.arange(start_n, start_n + block_n)
                    s = q_block @ k_pad[keys].T * scale
                    if masked:
                        keep = keys[None, :] < n
                        if causal:
                            keep = keep & (keys[None, :] <= rows[:, None])
                        s = s.masked_fill(~keep, -math.inf)
                    m_new = torch.maximum(m, s.max(dim=1).values)
                    p, alpha = torch.exp(s - m_new[:, None]), torch.exp(m - m_new)
                    denom = denom * alpha + p.sum(dim=1)
                    acc = acc * alpha[:, None] + p @ v_pad[keys]
                    m = m_new
            states.append((m, denom, acc))
        top = torch.stack([m for m, _, _ in states]).max(dim=0).values
        num = sum(torch.exp(m - top)[:, None] * acc for m, _, acc in states)
        den = sum(torch.exp(m - top) * row_sum for m, row_sum, _ in states)
        out[rows[valid]] = (num / den[:, None])[valid]
    return out


@pytest.mark.parametrize("n,d,causal,splits,block_m,block_n", [
    (257, 64, False, 3, 64, 64), (257, 64, True, 3, 128, 64), (1000, 32, False, 8, 128, 64),
    (100, 16, True, 8, 32, 16), (300, 16, True, 3, 128, 64)])
def test_unclamped_split_replay_matches_the_mutated_kernel(n, d, causal, splits, block_m, block_n):
    gen = torch.Generator().manual_seed(n + splits)
    q, k, v = (torch.randn((n, d), generator=gen) for _ in range(3))
    scale = d ** -0.5
    plan = dict(causal=causal, scale=scale, block_m=block_m, block_n=block_n, splits=splits)
    right = _split_merged64(q, k, v, **plan)
    wrong = _split_merged64(q, k, v, **plan, share_unclamped=True)
    assert torch.allclose(right, _mutated_kernel(q, k, v, **plan, unclamped=False), atol=1e-12)
    assert torch.allclose(wrong, _mutated_kernel(q, k, v, **plan, unclamped=True), atol=1e-12)
    assert float((wrong - right).abs().max()) > 1e-3  # the mistake shows in these shapes


def test_fenced_case_names_a_v_load_past_n(tmp_path):
    """forward.values' fenced case (q, k and v views of longer buffers, NaN past row N) turns
    an unmasked v load into NaN, named "tail not masked" by its own diagnosis: under the
    interpreter the longer buffer keeps the bounds check quiet, as a GPU would be. In a fresh
    process: the runner picks the interpreter before any kernel module is imported."""
    import json

    from tests.helpers import run_python

    script = f"""
import json, pathlib
import checks.streaming_attention as attention_checks
from checks import core, runner
from tests.bugs import plant
from tests.bugs import streaming_attention as bugs

fenced = [c for c in attention_checks._VALUES_EDGE_CASES if c.get("fenced")]
check = next(c for c in core.checks_for("streaming_attention") if c.id == "forward.values")
check.cases_for = lambda device: fenced
bug = next(b for b in bugs.BUGS if b.name == "v_tail_unmasked")
mutant = plant("streaming_attention", bug, pathlib.Path({str(tmp_path)!r}) / "impl")
rows = {{}}
for impl in ("references", str(mutant)):
    the_run = runner.run(["streaming_attention"], impl=impl, device="interpreter", seed=11,
                         only="forward.values")
    rows[impl == "references" and "reference" or "mutant"] = [
        (r.outcome, r.hint, r.message) for r in the_run.results]
print(json.dumps(rows))
"""
    done = run_python(script)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    assert rows["reference"] and all(outcome == "PASS" for outcome, _, _ in rows["reference"])
    assert rows["mutant"] and all(outcome == "FAIL" for outcome, _, _ in rows["mutant"])
    outcome, hint, message = rows["mutant"][0]
    assert hint.startswith("tail not masked") and "NaN" in hint
    assert "OutOfBounds" not in message  # the NaN showed it, not the interpreter's bounds check
