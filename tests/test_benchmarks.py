"""The benchmark harness and the validation report, on the CPU (no timing thresholds anywhere).

- The committed validation_report.md's generated sections equal what `python3 -m benchmarks
  report` produces from the committed benchmarks/results/ (regenerated here in memory); a source
  file changed since its latest GPU evidence prints a STALE notice without failing.
- The harness pieces: statistics, byte and FLOP formulas, the correctness gate (a deliberately
  wrong variant is recorded as failed and never timed), the results file round trip, the report
  from synthetic evidence, `run` without CUDA, and `run --dry-run` under the interpreter.
"""

from __future__ import annotations

import gzip
import importlib
import json
import os
import subprocess
import sys
import types
import warnings

import pytest

from benchmarks import harness, report
from tests.helpers import ROOT

WORKSHOPS = ("foundations", "strided_softmax", "softmax_backward", "fused_gemm", "split_softmax",
             "streaming_attention")


# ---------------------------------------------------------------------------------------------
# The committed report matches the committed evidence
# ---------------------------------------------------------------------------------------------
def test_validation_report_generated_sections_are_current():
    text = (ROOT / "validation_report.md").read_text()
    committed = report.read_sections(text)
    fresh = report.generate(harness.RESULTS_DIR)
    missing = [name for name in report.SECTIONS if name not in committed]
    assert not missing, f"validation_report.md lacks the generated section(s) {missing}"
    stale = [name for name in report.SECTIONS if committed[name] != fresh[name]]
    assert not stale, (f"validation_report.md is out of date in section(s) {stale}: run "
                       "`python3 -m benchmarks report` and commit the result")
    notices = report.stale_notices(report.load_evidence(harness.RESULTS_DIR))
    if any(line.startswith("STALE") for line in notices):
        # A notice, not a failure: the evidence is older than the code. A warning, so that
        # pytest's summary shows it also when xdist workers run the tests (their printed output
        # is not shown). It must start with "STALE": pyproject.toml's filterwarnings lets only
        # that through. NOTE lines alone (comments changed, the evidence stands) warn nothing.
        warnings.warn(UserWarning("STALE evidence: rerun the GPU validation\n"
                                  + "\n".join(notices)), stacklevel=1)


def test_readme_names_every_figure():
    readme = (ROOT / "benchmarks" / "README.md").read_text()
    names = report.figure_names()
    assert names
    for name in names:
        assert f"book/figures/{name}" in readme, f"benchmarks/README.md does not list {name}"


# ---------------------------------------------------------------------------------------------
# Statistics and formulas
# ---------------------------------------------------------------------------------------------
def test_percentile_interpolates_like_numpy():
    values = [4.0, 1.0, 3.0, 2.0]
    assert harness.percentile(values, 50) == 2.5
    assert harness.percentile(values, 0) == 1.0
    assert harness.percentile(values, 100) == 4.0
    assert harness.percentile(values, 10) == pytest.approx(1.3)
    assert harness.percentile([7.0], 90) == 7.0
    with pytest.raises(ValueError):
        harness.percentile([], 50)
    s = harness.summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert (s["n"], s["median"], s["min"], s["mean"]) == (5, 3.0, 1.0, 22.0)
    assert s["p10"] == pytest.approx(1.4) and s["p90"] == pytest.approx(61.6)
    assert harness.summarize([]) == {"n": 0}


def test_throughput_units():
    assert harness.tb_per_s(2 * 10**12, 1000.0) == pytest.approx(2.0)
    assert harness.tflop_per_s(10**12, 2.0) == pytest.approx(500.0)


def _stub_impl():
    """Enough of an implementation's API to declare problems (nothing is called)."""
    def gemm_bias_relu(a, b, bias=None, *, relu=True, group_m=None, persistent=None):
        raise AssertionError("not called")

    def never(*args, **kwargs):
        raise AssertionError("not called")

    return types.SimpleNamespace(
        row_softmax=never, softmax=never, softmax_backward=never, split_softmax=never,
        attention=never, attention_heads=never, gemm_bias_relu=gemm_bias_relu,
        default_chunk=lambda rows, cols, sms=132: 2048,
        CONFIGS=[dict(chunk=1024, num_warps=4), dict(chunk=None, num_warps=None)])


def _problems(workshop, scale="full"):
    return importlib.import_module(f"benchmarks.{workshop}").problems(_stub_impl(), scale)


def test_declared_bytes_and_flops_follow_their_formulas():
    for p in _problems("strided_softmax"):
        item = {"float16": 2, "bfloat16": 2, "float32": 4}[p.params["dtype"]]
        assert p.bytes == 2 * p.params["rows"] * p.params["width"] * item
        assert "2 * rows * width" in p.bytes_formula
    for p in _problems("softmax_backward"):
        item = {"float16": 2, "bfloat16": 2, "float32": 4}[p.params["dtype"]]
        assert p.bytes == 3 * p.params["rows"] * p.params["width"] * item
    for p in _problems("fused_gemm"):
        assert p.flops == 2 * p.params["M"] * p.params["N"] * p.params["K"]
        assert p.flops_formula == "2 * M * N * K"
    for p in _problems("streaming_attention"):
        b, h = (int(v) for v in p.params["heads"].split("x"))
        full = 4 * b * h * p.params["N"] ** 2 * p.params["d"]
        assert p.flops == (full // 2 if p.params["causal"] else full)
        assert ("/ 2 (causal)" in p.flops_formula) == p.params["causal"]
    for p in _problems("split_softmax"):
        ours = p.providers[0]
        assert ours.role == harness.OURS and ours.bytes_moved > p.bytes  # x is read twice
    shapes = {(p.params["rows"], p.params["width"]) for p in _problems("split_softmax")}
    assert {(8, 131072), (64, 131072), (1024, 262144)} <= shapes


def test_sweep_reads_configs_without_defaults_twice():
    problems = importlib.import_module("benchmarks.split_softmax").sweep_problems(_stub_impl(),
                                                                                  "sweep")
    ours = [p for p in problems[0].providers if p.role == harness.OURS]
    assert [o.knobs for o in ours] == [{}, {"chunk": 1024, "num_warps": 4}]


# ---------------------------------------------------------------------------------------------
# The correctness gate
# ---------------------------------------------------------------------------------------------
def _softmax_problem(ours):
    from benchmarks._common import row_softmax_problem

    return row_softmax_problem("strided_softmax", "forward", 6, 37, "float32", "transposed", ours)


def test_gate_records_a_wrong_variant_as_failed_and_never_times_it():
    import torch

    def wrong(x):  # forgets the normalisation of the last column
        y = torch.softmax(x, dim=-1)
        y[:, -1] *= 1.5
        return y

    records = harness.run_problem(_softmax_problem(wrong), device="cpu", mode=None, plan=None,
                                  flush=None)
    by_name = {r["provider"]: r for r in records}
    assert by_name["ours"]["status"] == "failed"
    assert "worst at" in by_name["ours"]["message"] and by_name["ours"]["gate"]["max_ratio"] > 1
    assert "samples_ms" not in by_name["ours"]
    assert by_name["torch.softmax"]["status"] == "ok"
    assert by_name["copy"]["status"] == "ok" and by_name["copy"]["gate"]["max_error"] == 0.0
    assert by_name["ours"]["inputs"]["x"]["stride"] == [1, 6]  # a transposed view


def test_gate_records_exceptions_and_bad_outputs():
    import torch

    def raises(x):
        raise ValueError("x must be contiguous")

    records = harness.run_problem(_softmax_problem(raises), device="cpu", mode=None, plan=None,
                                  flush=None)
    assert records[0]["status"] == "error" and "x must be contiguous" in records[0]["message"]
    expected = torch.ones(3, 4, dtype=torch.float64)
    assert harness.gate(torch.ones(3, 4), expected, 1e-5, 0)["ok"]
    assert not harness.gate(torch.ones(3, 5), expected, 1e-5, 0)["ok"]
    assert not harness.gate("not a tensor", expected, 1e-5, 0)["ok"]
    nan = torch.ones(3, 4)
    nan[1, 2] = float("nan")
    assert not harness.gate(nan, expected, 1e-5, 0)["ok"]
    heads = [torch.ones(2, 2), torch.ones(2, 2)]  # a list of per-head outputs is stacked
    assert harness.gate(heads, torch.ones(1, 2, 2, 2, dtype=torch.float64), 0, 0)["ok"]


# ---------------------------------------------------------------------------------------------
# The timers' control flow, with a stand-in for torch.cuda (no GPU here; no timing asserted)
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def fake_cuda(monkeypatch):
    import contextlib
    import time

    import torch

    class Event:
        def __init__(self, enable_timing=False):
            self.t = None

        def record(self, stream=None):
            self.t = time.perf_counter()

        def elapsed_time(self, other):
            return (other.t - self.t) * 1e3

    class Graph:
        def replay(self):
            pass

        def reset(self):
            pass

    @contextlib.contextmanager
    def graph(g):  # "captures" by running the calls once
        yield

    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(torch.cuda, "Stream", lambda *a: types.SimpleNamespace(
        wait_stream=lambda other: None))
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a: types.SimpleNamespace(
        wait_stream=lambda other: None))
    monkeypatch.setattr(torch.cuda, "stream", lambda s: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "CUDAGraph", Graph)
    monkeypatch.setattr(torch.cuda, "graph", graph)
    return torch


def test_event_timer_takes_every_sample_with_a_flush_before_each(fake_cuda):
    torch = fake_cuda
    flush = torch.ones(16, dtype=torch.uint8)
    calls = []
    plan = harness.Plan(samples=7, warmup_ms=0.0, graph_ms=1.0)
    timed = harness.time_events(lambda: calls.append(int(flush.sum())), plan, flush)
    assert len(timed["samples_ms"]) == 7 and timed["calls_per_sample"] == 1
    assert calls[-7:] == [0] * 7  # the flush buffer was written before every timed call
    assert timed["l2_flush_bytes"] == 16 and timed["warmup_calls"] >= 1


def test_graph_timer_divides_each_replay_by_its_calls(fake_cuda):
    plan = harness.Plan(samples=5, warmup_ms=0.0, graph_ms=1000.0)
    timed = harness.time_graph(lambda: None, plan)
    assert len(timed["samples_ms"]) == 5
    assert 1 <= timed["calls_per_sample"] <= 200 and timed["l2_flush_bytes"] == 0


def test_interleaved_timing_takes_rounds_with_a_rotating_order(fake_cuda):
    order = []

    class Timer:
        def __init__(self, name):
            self.name = name

        def sample(self):
            order.append(self.name)

    harness.time_interleaved([Timer("a"), Timer("b"), Timer("c")], samples=4)
    assert order == list("abc" "bca" "cab" "abc")  # every round one sample of each


# ---------------------------------------------------------------------------------------------
# Results files
# ---------------------------------------------------------------------------------------------
def test_results_round_trip(tmp_path):
    header = {"kind": "benchmark", "mode": "events", "date": "2026-11-30T10:00:00+0000"}
    records = [{"samples_ms": [0.1234567, 0.2], "params": {"shape": [1, 2]}}]
    path = harness.save(tmp_path / "r.json.gz", header, records)
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    assert harness.load(path) == {"header": header, "records": records}
    first = path.read_bytes()
    harness.save(path, header, records)
    assert path.read_bytes() == first  # no timestamp inside the gzip stream
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"header": header, "records": []}))
    assert harness.load(plain)["header"] == header


def test_git_commit_falls_back_to_the_environment(monkeypatch):
    monkeypatch.setenv("WORKSHOP_GIT_COMMIT", "a" * 40)
    fixed = harness.fix_git_commit({"git_commit": "HEAD", "git_dirty": True})
    assert fixed == {"git_commit": "a" * 40, "git_dirty": None}
    sha = "0123456789abcdef0123456789abcdef01234567"
    assert harness.fix_git_commit({"git_commit": sha, "git_dirty": False})["git_commit"] == sha


# ---------------------------------------------------------------------------------------------
# The report, from no evidence and from synthetic evidence
# ---------------------------------------------------------------------------------------------
def test_report_without_evidence_says_so(tmp_path):
    sections = report.generate(tmp_path)
    assert set(sections) == set(report.SECTIONS)
    assert report.NO_GPU in sections["evidence"]
    assert report.NO_GPU in sections["benchmarks"]
    assert report.NO_GPU in sections["checks"]
    path = tmp_path / "validation_report.md"
    report.write_report(sections, path)
    assert report.read_sections(path.read_text()) == sections
    text = path.read_text().replace("## Self-review (written by hand)", "## Self-review\nmine")
    path.write_text(text)
    report.write_report(sections, path)  # rewrites the generated parts, keeps the hand-written
    assert "mine" in path.read_text()


def _fake_header(mode, scale="full", device="cuda"):
    return {"kind": "benchmark", "mode": mode, "scale": scale, "device": device,
            "gpu": "Synthetic GPU (test data)", "date": "2026-11-30T10:00:00+0000",
            "git_commit": "0" * 40, "git_dirty": False, "torch": "test", "triton": "test",
            "workshops": list(WORKSHOPS), "plan": {"samples": 3},
            "sources": {"benchmarks/harness.py": "0" * 64},
            "ceiling": {"ceiling_tb_s": 4.0, "ceiling_from": "copy_4GiB_float32"}}


def _fake_records(scale="quick"):
    """Records as a run writes them, with made-up timings (ours 10 % faster than every other
    provider, except one gate failure) and no GPU: for the report's plumbing only."""
    records = []
    for workshop in WORKSHOPS:
        module = importlib.import_module(f"benchmarks.{workshop}")
        problems = module.problems(_stub_impl(), scale) if scale != "sweep" else \
            module.sweep_problems(_stub_impl(), "sweep")
        for problem in problems:
            for provider in problem.providers:
                record = dict(harness.problem_fields(problem), **harness.provider_fields(provider))
                base_ms = problem.bytes / 3.0e9 if problem.metric == "bandwidth" else \
                    problem.flops / 5.0e11
                ms = base_ms * (0.9 if provider.role == harness.OURS else 1.0)
                record.update(status="ok", mode="events", calls_per_sample=1,
                              samples_ms=[ms * 0.98, ms, ms * 1.05])
                records.append(record)
    records[1].update(status="failed", message="1 of 4 elements outside tolerance")
    del records[1]["samples_ms"]
    return records


def _write_fake_evidence(folder):
    harness.save(folder / "bench-events.json.gz", _fake_header("events"), _fake_records())
    harness.save(folder / "bench-graph.json.gz", _fake_header("graph"), _fake_records())
    sweep = _fake_records("sweep")
    harness.save(folder / "bench-sweep.json.gz", _fake_header("events", "sweep"), sweep)
    harness.save(folder / "bench-dry.json.gz", dict(_fake_header("dry-run"), mode="dry-run"), [])
    checks = {"header": {"device": "cuda", "impl": "references", "seed": 1, "gpu": "Synthetic",
                         "date": "2026-11-30T09:00:00+0000", "sources": {}},
              "results": [{"workshop": "foundations", "check": "add.values", "case": {"n": 1},
                           "tier": "kernel", "device": "cuda", "outcome": "PASS", "message": ""},
                          {"workshop": "foundations", "check": "cuda.stream", "case": {},
                           "tier": "cuda", "device": "cuda", "outcome": "FAIL",
                           "message": "raced"}],
              "counts": []}
    (folder / "checks-cuda-2026-11-30.json").write_text(json.dumps(checks))
    bugs = {"header": {"kind": "bugzoo", "device": "interpreter", "date": "x"},
            "bugs": [{"workshop": "foundations", "bug": "a", "check": "c", "hint": "h",
                      "caught": True, "outcome": "FAIL"},
                     {"workshop": "foundations", "bug": "b", "check": "c", "hint": "h",
                      "caught": False, "outcome": "PASS"}]}
    (folder / "bugzoo-interpreter.json").write_text(json.dumps(bugs))
    calls = {"header": {"kind": "badcalls", "device": "interpreter", "date": "x"},
             "checks": [{"workshop": "foundations", "check": "bad_calls", "tier": "kernel",
                         "cases": 1, "outcomes": {"PASS": 1}, "calls": 9, "refused": 9}]}
    (folder / "badcalls-interpreter.json").write_text(json.dumps(calls))


def test_report_from_synthetic_evidence(tmp_path):
    _write_fake_evidence(tmp_path)
    evidence = report.load_evidence(tmp_path)
    assert sorted(f.kind for f in evidence.files) == ["badcalls", "benchmark", "benchmark",
                                                      "benchmark", "bugzoo", "checks"]
    sections = report.generate(tmp_path)
    assert sections == report.generate(tmp_path)  # deterministic
    bench = sections["benchmarks"]
    for workshop in WORKSHOPS:
        assert f"### {workshop}" in bench
    assert "FAILED gate" in bench and "1 of 4 elements outside tolerance" in bench
    assert "ours / torch.softmax" in bench and "ours / copy ceiling" in bench
    assert "1.11x" in bench  # ours 10 % faster in time = 1/0.9 in throughput
    assert "**not met**" in bench and "| met |" in bench
    assert "Bytes: `2 * rows * width" in bench and "FLOPs: `2 * M * N * K`" in bench
    assert "4 * B * H * N^2 * d / 2 (causal)" in bench
    assert "| kernel | 1 | 0 | 0 | 0 | 1 |" in sections["checks"]
    assert "foundations/cuda.stream (FAIL)" in sections["checks"]
    assert "1 of 2 planted bugs caught" in sections["bug-zoo"]
    assert "| all | | | 9 | 9 | |" in sections["bad-calls"]
    assert "split_softmax sweep" in sections["sweeps"]
    assert "chunk=1024" in sections["sweeps"]
    assert "dry" not in sections["evidence"]  # a CPU dry run is not evidence


def test_goal_worst_case_decides():
    from benchmarks._common import Goal

    def rec(provider, role, ms, width):
        return {"experiment": "forward", "problem": f"w={width}", "params": {"width": width},
                "provider": provider, "label": provider, "role": role, "metric": "bandwidth",
                "bytes": 4 * 10**9, "status": "ok", "samples_ms": [ms]}

    records = [rec("ours", harness.OURS, 1.0, 1), rec("torch", harness.BASELINE, 2.0, 1),
               rec("ours", harness.OURS, 1.0, 2), rec("torch", harness.BASELINE, 1.1, 2)]
    speed = Goal("2x torch", "speedup", 2.0, lambda p: True, against="torch")
    result = report.evaluate_goal(speed, records, 5.0)
    assert result["status"] == "not met" and result["worst"] == pytest.approx(1.1)
    assert result["where"] == "w=2"
    copy = Goal("0.8 of copy", "of_ceiling", 0.8, lambda p: True)
    assert report.evaluate_goal(copy, records, 5.0)["status"] == "met"  # 4 TB/s of 5
    nothing = Goal("none", "speedup", 1.0, lambda p: False, against="torch")
    assert report.evaluate_goal(nothing, records, 5.0)["status"] == "not measured"


def test_goal_names_a_worst_case_timed_with_stalls():
    from benchmarks._common import Goal

    def rec(provider, role, samples, width):
        return {"experiment": "forward", "problem": f"w={width}", "params": {"width": width},
                "provider": provider, "label": provider, "role": role, "metric": "bandwidth",
                "bytes": 4 * 10**9, "status": "ok", "samples_ms": samples}

    steady, stalled = [1.0] * 10, [1.0] * 5 + [5.0] * 5  # median 3.0, p90 / p10 = 5
    records = [rec("ours", harness.OURS, stalled, 1), rec("torch", harness.BASELINE, steady, 1),
               rec("ours", harness.OURS, steady, 2), rec("torch", harness.BASELINE, [1.1] * 10, 2)]
    result = report.evaluate_goal(Goal("1x torch", "speedup", 1.0, lambda p: True,
                                       against="torch"), records, 5.0)
    # The verdict still comes from every problem; the note says why the worst one is suspect.
    assert result["status"] == "not met" and result["where"] == "w=1"
    assert "timed with stalls: p90 5.0x p10; 1 of 2 problems so" in result["detail"]
    assert "worst of the others 1.10 (w=2)" in result["detail"]
    # The summary at the top of the report gives the value without the stalled problem too.
    assert report._glance_cell(result, 1.0) == (
        "0.33 **not met** (worst case timed with stalls; 1.10 without them)")


def test_goal_value_never_rounds_onto_the_other_side_of_the_threshold():
    assert report.fmt_goal_value(0.9695, 0.97) == "0.9695"  # not "0.97", which reads as met
    assert report.fmt_goal_value(0.966, 0.97) == "0.966"
    assert report.fmt_goal_value(0.93, 1.0) == "0.93"
    assert report.fmt_goal_value(1.004, 1.0) == "1.00"
    assert report.fmt_goal_value(0.9996, 1.0) == "0.9996"


def test_goals_at_a_glance_lists_every_workshop_goal(tmp_path):
    text = report.generate(tmp_path)["goals"]  # no evidence: every goal, not measured
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    goals = [g for w in report.bench_workshops()
             for g in getattr(report.workshop_module(w), "GOALS", [])]
    assert len(rows) == 1 + len(goals) and len(goals) > 0
    assert all(row.count("not measured") == 2 for row in rows[1:])


def test_stale_notice_names_changed_sources(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    from checks import provenance

    good = provenance.sha256(tmp_path / "a.py")
    evidence = report.Evidence([report.EvidenceFile("r.json", "checks", {"header": {
        "device": "cuda", "date": "2026-11-30T10:00:00+0000",
        "sources": {"a.py": good, "gone.py": "0" * 64}}})])
    notices = report.stale_notices(evidence, root=tmp_path)
    assert notices == ["STALE: gone.py (named by r.json) no longer exists"]
    (tmp_path / "a.py").write_text("x = 2\n")
    assert any(n.startswith("STALE: a.py changed") for n in report.stale_notices(evidence,
                                                                                 root=tmp_path))


def test_stale_notice_is_kept_per_kind_of_evidence(tmp_path):
    """Benchmarks recorded after a change do not vouch for checks recorded before it."""
    from checks import provenance

    (tmp_path / "a.py").write_text("x = 1\n")
    old = provenance.sha256(tmp_path / "a.py")
    (tmp_path / "a.py").write_text("x = 2\n")
    new = provenance.sha256(tmp_path / "a.py")

    def header(date, sha):
        return {"header": {"device": "cuda", "date": date, "sources": {"a.py": sha}}}

    evidence = report.Evidence([
        report.EvidenceFile("checks.json", "checks", header("2026-11-30T10:00:00+0000", old)),
        report.EvidenceFile("bench.json", "benchmark", header("2026-11-30T11:00:00+0000", new))])
    notices = report.stale_notices(evidence, root=tmp_path)
    assert len(notices) == 1 and "GPU checks evidence (checks.json)" in notices[0]


def test_comment_only_change_is_a_note_and_code_change_is_stale(tmp_path):
    """The measured text comes from git at the evidence's commit; a source that differs from it
    only in comments, docstrings or layout still runs the measured code."""
    import subprocess

    from checks import provenance

    def git(*args):
        return subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t",
                               "-c", "user.email=t@t", *args],
                              check=True, capture_output=True, text=True).stdout.strip()

    source = tmp_path / "k.py"
    source.write_text('def f(x):\n    """Twice x."""\n    return 2 * x  # doubled\n')
    git("init", "-q")
    git("add", "k.py")
    git("commit", "-qm", "k")
    header = {"device": "cuda", "date": "2026-11-30T10:00:00+0000", "git_commit": git("rev-parse", "HEAD"),
              "sources": {"k.py": provenance.sha256(source)}}
    evidence = report.Evidence([report.EvidenceFile("checks.json", "checks", {"header": header})])
    assert report.stale_notices(evidence, root=tmp_path) == []
    source.write_text('def f(x):\n    """Return x times two."""\n    # why: a doubling\n'
                      '    return 2 * x\n')
    (notice,) = report.stale_notices(evidence, root=tmp_path)
    assert notice.startswith("NOTE: k.py differs") and "only in comments" in notice
    source.write_text('def f(x):\n    """Twice x."""\n    return 3 * x  # doubled\n')
    (notice,) = report.stale_notices(evidence, root=tmp_path)
    assert notice.startswith("STALE: k.py changed")
    # Evidence measured on a tree whose file was not the committed one: nothing to compare with.
    header["sources"]["k.py"] = "0" * 64
    source.write_text('def f(x):\n    """Twice x."""\n    return 2 * x\n')
    (notice,) = report.stale_notices(evidence, root=tmp_path)
    assert notice.startswith("STALE: k.py changed")


def test_figures_from_synthetic_evidence(tmp_path):
    pytest.importorskip("matplotlib")
    _write_fake_evidence(tmp_path)
    folder = tmp_path / "figures"
    written = report.write_figures(report.load_evidence(tmp_path), folder)
    assert sorted(p.name for p in written) == sorted(report.figure_names())
    assert all(p.stat().st_size > 1000 for p in written)
    assert all("correctness gate" in p.with_suffix(".txt").read_text() for p in written)
    # without evidence nothing is drawn, and figures the evidence no longer supports go away
    assert report.write_figures(report.Evidence(), folder) == []
    assert not list(folder.glob("*.png")) and not list(folder.glob("*.txt"))


# ---------------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------------
def _benchmarks(*args, env=None, timeout=600):
    full_env = dict(os.environ, **(env or {}))
    full_env.pop("TRITON_INTERPRET", None)
    return subprocess.run([sys.executable, "-m", "benchmarks", *args], cwd=ROOT, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


def test_run_without_cuda_exits_with_a_message():
    done = _benchmarks("run", "foundations", env={"CUDA_VISIBLE_DEVICES": ""})
    assert done.returncode == 2, done.stderr
    assert "no CUDA GPU" in done.stderr and "--dry-run" in done.stderr
    assert "Traceback" not in done.stderr


def test_dry_run_gates_every_variant_under_the_interpreter(tmp_path):
    out = tmp_path / "dry.json.gz"
    done = _benchmarks("run", "--dry-run", "--out", str(out))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    data = harness.load(out)
    assert data["header"]["device"] == "interpreter" and data["header"]["mode"] == "dry-run"
    statuses = {(r["workshop"], r["provider"], r["status"]) for r in data["records"]}
    assert all(s in ("ok", "skipped") for _, _, s in statuses), statuses
    assert {w for w, _, _ in statuses} == set(data["header"]["workshops"])
    ours = [r for r in data["records"] if r["role"] == harness.OURS]
    assert ours and all(r["status"] == "ok" and r["launches"] for r in ours)
    assert gzip.decompress(out.read_bytes())  # gzipped JSON


def test_a_malformed_commit_id_stops_a_run_before_it_starts(monkeypatch, capsys):
    """WORKSHOP_GIT_COMMIT becomes the evidence's provenance: a placeholder or a short id is
    refused by both command lines before any work, a full id or none is accepted."""
    from checks import __main__ as checks_cli
    from checks import provenance

    for given in ("FULLSHA", "122216a", "g" * 40):
        monkeypatch.setenv("WORKSHOP_GIT_COMMIT", given)
        assert given in provenance.commit_env_error()
        for cli, argv in ((checks_cli.main, ["run", "foundations"]),
                          (main_of_benchmarks(), ["bugzoo", "--out", "x.json"])):
            with pytest.raises(SystemExit) as stopped:
                cli(argv)
            assert stopped.value.code == 2
            assert "WORKSHOP_GIT_COMMIT" in capsys.readouterr().err
    monkeypatch.setenv("WORKSHOP_GIT_COMMIT", "0123456789abcdef0123456789abcdef01234567")
    assert provenance.commit_env_error() is None
    monkeypatch.delenv("WORKSHOP_GIT_COMMIT")
    assert provenance.commit_env_error() is None


def main_of_benchmarks():
    from benchmarks import __main__ as benchmarks_cli
    return benchmarks_cli.main


def test_bug_zoo_and_bad_calls_merge_partial_runs_workshop_by_workshop(tmp_path):
    """A later run of one workshop's planted bugs (or bad calls) replaces that workshop's rows
    only; the others keep their earlier file, and the table names each row's file."""
    def zoo(name, date, bugs):
        rows = [{"workshop": w, "bug": b, "check": "c", "hint": "h", "caught": caught,
                 "outcome": "FAIL" if caught else "PASS"} for w, b, caught in bugs]
        (tmp_path / name).write_text(json.dumps(
            {"header": {"kind": "bugzoo", "device": "cuda", "date": date}, "bugs": rows}))

    zoo("bugzoo-cuda-a.json", "2026-11-30T09:00:00+0000",
        [("foundations", "old", False), ("softmax_backward", "kept", True)])
    zoo("bugzoo-cuda-b.json", "2026-11-30T10:00:00+0000",
        [("foundations", "new", True), ("foundations", "new2", True)])
    for name, date, calls in (("badcalls-cuda-a.json", "2026-11-30T09:00:00+0000",
                               [("foundations", 5), ("fused_gemm", 7)]),
                              ("badcalls-cuda-b.json", "2026-11-30T10:00:00+0000",
                               [("fused_gemm", 8)])):
        rows = [{"workshop": w, "check": "bad_calls", "tier": "kernel", "cases": 1,
                 "outcomes": {"PASS": 1}, "calls": n, "refused": n} for w, n in calls]
        (tmp_path / name).write_text(json.dumps(
            {"header": {"kind": "badcalls", "device": "cuda", "date": date}, "checks": rows}))
    sections = report.generate(tmp_path)
    zoo_text = sections["bug-zoo"]
    assert "3 of 3 planted bugs caught" in zoo_text  # foundations from b, softmax_backward from a
    # A file that tried fewer bugs than tests/bugs/ plants now says so.
    from tests.bugs import foundations, softmax_backward, split_softmax
    # (the bugs a GPU runs: interpreter_only ones are not counted on cuda)
    now = {m: sum(not bug.interpreter_only for bug in m.BUGS)
           for m in (foundations, softmax_backward, split_softmax)}
    assert (f"| foundations | 2 (of {now[foundations]} planted now) | 2 |  | "
            "`bugzoo-cuda-b.json` |") in zoo_text
    assert (f"| softmax_backward | 1 (of {now[softmax_backward]} planted now) | 1 |  | "
            "`bugzoo-cuda-a.json` |") in zoo_text
    assert "old" not in zoo_text and "INCOMPLETE" not in zoo_text
    zoo("bugzoo-cuda-c.json", "2026-11-30T11:00:00+0000", [("split_softmax", "cut", True)])
    data = json.loads((tmp_path / "bugzoo-cuda-c.json").read_text())
    data["header"]["complete"] = False  # a run stopped by a time limit
    (tmp_path / "bugzoo-cuda-c.json").write_text(json.dumps(data))
    assert (f"| split_softmax | 1 (of {now[split_softmax]} planted now; INCOMPLETE run "
            "(stopped early)) |") in report.generate(tmp_path)["bug-zoo"]
    calls_text = sections["bad-calls"]
    assert "| all | | | 13 | 13 | | |" in calls_text  # foundations 5 (a) + fused_gemm 8 (b)
    assert calls_text.index("| foundations |") < calls_text.index("| fused_gemm |")  # book order


def test_grouped_order_experiment_times_the_launchers_own_group_size():
    """The grouped-order experiment compares the launcher's GROUP_M for the shape with 1: the
    reference's default_config (16 for 128 x 256 tiles at 4096^3), else the keyword's default,
    else 8 (a learner's module without default_config)."""
    from benchmarks import fused_gemm as bench
    from references import fused_gemm as reference

    def grouped_knobs(impl):
        return [p.providers[0].knobs for p in bench.problems(impl, "full")
                if p.experiment == "grouped_order"]

    expected = reference.default_config(4096, 4096, 4096)["group_m"]
    assert expected == 16
    assert {"group_m": expected} in grouped_knobs(reference)
    assert all(k == {"group_m": 8} for k in grouped_knobs(_stub_impl()))
    assert all(p.providers[1].knobs == {"group_m": 1}
               for p in bench.problems(reference, "full") if p.experiment == "grouped_order")


def test_merge_zoo_joins_parts_of_one_run_and_refuses_others(tmp_path):
    """`benchmarks merge-zoo`: a workshop's bugs run over several commands (BUGZOO_SHARD or
    BUGZOO_BUGS) become one file in tests/bugs/ order; complete once every bug the device
    runs is in; parts of another commit or seed, or holding the same bug twice, are refused."""
    from benchmarks import evidence
    from tests.bugs import foundations

    names = [b.name for b in foundations.BUGS if evidence.runs_on(b, "cuda")]

    def part(bugs, complete=True, commit="a" * 40, seed=1234, workshop="foundations",
             sources=None):
        header = {"kind": "bugzoo", "device": "cuda", "git_commit": commit, "seed": seed,
                  "sources": sources or {"x.py": "0"},
                  "date": f"2026-12-02T00:0{len(bugs) % 10}:00+0000", "complete": complete}
        rows = [{"workshop": workshop, "bug": n, "check": "c", "hint": "h",
                 "caught": True, "outcome": "FAIL"} for n in bugs]
        return {"header": header, "bugs": rows}

    second_half, first_half = names[len(names) // 2:], names[:len(names) // 2]
    merged = evidence.merge_zoo([part(second_half), part(first_half, complete=False)])
    assert [r["bug"] for r in merged["bugs"]] == names  # tests/bugs order, whatever the parts'
    assert merged["header"]["complete"]  # the stopped part's rest is the other part
    assert len(merged["header"]["merged_from"]) == 2
    assert not evidence.merge_zoo([part(first_half, complete=False)])["header"]["complete"]
    # Several workshops' files (tools/gpu_validation.sh): book order, their sources joined.
    both = evidence.merge_zoo([part(["x"], workshop="split_softmax", sources={"s.py": "1"}),
                               part(names)])
    assert [r["workshop"] for r in both["bugs"]][-2:] == ["foundations", "split_softmax"]
    assert both["header"]["sources"] == {"x.py": "0", "s.py": "1"}
    for bad in ([part(first_half), part(second_half, commit="b" * 40)],
                [part(first_half), part(second_half, seed=1)],
                [part(first_half), part(second_half, sources={"x.py": "changed"})],
                [part(first_half), part(first_half[:1])]):
        with pytest.raises(ValueError):
            evidence.merge_zoo(bad)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(part(first_half)))
    b.write_text(json.dumps(part(first_half[:1])))
    done = subprocess.run([sys.executable, "-m", "benchmarks", "merge-zoo",
                           str(tmp_path / "out.json"), str(a), str(b)],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 2 and "more than one part" in done.stderr
    assert not (tmp_path / "out.json").exists()


def test_bugzoo_shard_picks_every_nth_bug(monkeypatch):
    from benchmarks import evidence

    assert evidence._shard("") is None and evidence._shard("1/3") == (1, 3)
    for text in ("3/3", "a/b", "1"):
        with pytest.raises(SystemExit):
            evidence._shard(text)
