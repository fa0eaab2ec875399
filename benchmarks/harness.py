"""The benchmark harness: declared problems, a correctness gate, two timers, raw samples saved.

A workshop's benchmark module (`benchmarks/<id>.py`) declares `Problem`s: the inputs of one
shape, dtype and layout, the float64 reference, the bytes and FLOPs with their formula written
out, and the `Provider`s to compare (ours, the torch baselines, a copy ceiling). For each
provider the harness

1. calls it once and compares the output with the float64 reference on that exact shape
   (`gate`); a provider that fails is recorded as "failed" and never timed;
2. times it, either with CUDA events around each call and an L2 flush before each sample
   (`time_events`, like `triton.testing.do_bench`), or by replaying a CUDA graph of several
   back-to-back calls (`time_graph`, like `triton.testing.do_bench_cudagraph`);
3. keeps every raw sample in the record, with the launches it made and their knobs.

The providers of one problem are timed together, in rounds (`time_interleaved`): one sample of
each per round, so a provider measured last does not meet a hotter, power-capped GPU than the
one measured first, and the ratios compare like with like.

Two timing modes are two experiments: one results file each. Nothing here imports matplotlib
or numpy; torch only inside functions, so `python -m benchmarks report` works without a GPU.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_ROOT / "benchmarks" / "results"

OURS, BASELINE, CEILING = "ours", "baseline", "ceiling"  # provider roles
L2_FLUSH_BYTES = 256 * 1024 * 1024  # written before every event sample; H200 L2 is 60 MiB


@dataclass(frozen=True)
class Plan:
    """How many samples to take; one per scale (see benchmarks/README.md for the budget)."""

    samples: int  # events: timed calls; graph: timed replays
    warmup_ms: float  # run the provider at least this long before timing
    graph_ms: float  # target GPU time of one graph replay (calls per replay follow from it)


PLANS = {
    "full": Plan(samples=40, warmup_ms=20.0, graph_ms=2.0),
    "quick": Plan(samples=15, warmup_ms=10.0, graph_ms=1.0),
    "sweep": Plan(samples=20, warmup_ms=10.0, graph_ms=1.0),
}


@dataclass
class Provider:
    """One way to compute a problem's output: ours (with its knobs), a torch baseline, a copy."""

    name: str  # "ours", "torch.softmax", "copy", "sdpa-cudnn", ...
    role: str  # OURS, BASELINE or CEILING
    fn: Callable[[dict], Any]  # inputs -> output (a tensor, or a list of tensors)
    knobs: dict = field(default_factory=dict)  # launch knobs passed explicitly
    note: str = ""  # what this provider is, e.g. which torch path it took
    reference: Callable[[dict], Any] | None = None  # another float64 reference (e.g. mm alone)
    tolerance: Any = None  # (rtol, atol), or inputs -> (rtol, atol), for that reference
    bytes_moved: int | None = None  # this provider's real traffic when it differs from bytes
    bytes_moved_formula: str = ""
    cuda_only: bool = False  # skipped by --dry-run on the CPU (e.g. SDPA backends pinned)
    state: dict = field(default_factory=dict)  # what fn found out when run (saved, e.g. a path)

    @property
    def label(self) -> str:
        if not self.knobs:
            return self.name
        return self.name + "[" + ",".join(f"{k}={v}" for k, v in self.knobs.items()) + "]"


@dataclass
class Problem:
    """One shape/dtype/layout of one experiment, with everything needed to gate and time it."""

    workshop: str
    experiment: str  # "forward", "grouped_order", "sweep", ...
    params: dict  # JSON-able: rows, width, dtype, layout, causal, ... (table columns, plot axes)
    make_inputs: Callable[[str, Any], dict]  # (torch device, generator) -> {name: tensor}
    reference: Callable[[dict], Any]  # inputs -> float64 expected output, on the same device
    tolerance: Callable[[dict], tuple[float, float]]  # inputs -> (rtol, atol) for the gate
    metric: str  # "bandwidth" (TB/s from bytes) or "flops" (TFLOP/s from flops)
    bytes: int
    bytes_formula: str
    providers: list[Provider]
    flops: int = 0
    flops_formula: str = ""
    baseline: str = ""  # provider name the ratio column divides by
    ceiling: str = ""  # provider name of the same-problem ceiling ("" = session copy ceiling)

    @property
    def label(self) -> str:
        return " ".join(f"{k}={_fmt(v)}" for k, v in self.params.items())


def _fmt(value) -> str:
    if isinstance(value, (list, tuple)):
        return "x".join(str(v) for v in value)
    return str(value)


# ---------------------------------------------------------------------------------------------
# Statistics (plain Python: the report runs without numpy)
# ---------------------------------------------------------------------------------------------
def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation, like numpy's default."""
    if not values:
        raise ValueError("percentile of no values")
    data = sorted(values)
    pos = (len(data) - 1) * q / 100.0
    low = math.floor(pos)
    high = min(low + 1, len(data) - 1)
    return data[low] + (data[high] - data[low]) * (pos - low)


def summarize(samples: list[float]) -> dict:
    """median, p10, p90, min, mean and n of a list of timings (milliseconds)."""
    if not samples:
        return {"n": 0}
    return {"n": len(samples), "median": percentile(samples, 50), "p10": percentile(samples, 10),
            "p90": percentile(samples, 90), "min": min(samples),
            "mean": sum(samples) / len(samples)}


def tb_per_s(nbytes: int, ms: float) -> float:
    return nbytes / (ms * 1e-3) / 1e12


def tflop_per_s(flops: int, ms: float) -> float:
    return flops / (ms * 1e-3) / 1e12


# ---------------------------------------------------------------------------------------------
# The correctness gate
# ---------------------------------------------------------------------------------------------
def gate(out, expected, rtol: float, atol: float) -> dict:
    """Compare an output with its float64 reference where both live (on the GPU in real runs).

    Passes when |got - expected| <= atol + rtol * |expected| everywhere (the rule of
    checks/compare.py), NaN only where the reference is NaN, infinities only where it has the
    same one. Returns {"ok", "max_ratio" (worst error / allowed), "max_error", "message"}.
    """
    import torch

    if isinstance(out, (list, tuple)):  # e.g. one output per head, from a loop over heads
        if not out or not all(isinstance(t, torch.Tensor) for t in out):
            return _gate_fail(f"returned a {type(out).__name__} that is not a list of tensors")
        out = torch.stack(list(out))
    if not isinstance(out, torch.Tensor):
        return _gate_fail(f"returned {type(out).__name__}, expected a tensor")
    if out.numel() != expected.numel():
        return _gate_fail(f"output has shape {tuple(out.shape)}, expected {tuple(expected.shape)}")
    got = out.detach().reshape(expected.shape).to(device=expected.device, dtype=torch.float64)
    if got.numel() == 0:
        return {"ok": True, "max_ratio": 0.0, "max_error": 0.0, "message": ""}
    err = (got - expected).abs()
    agree = (got.isnan() & expected.isnan()) | (got.isinf() & expected.isinf()
                                                  & (got.sign() == expected.sign()))
    err = torch.where(agree, torch.zeros_like(err), err)
    err = torch.where(err.isnan(), torch.full_like(err, math.inf), err)
    allowed = atol + rtol * expected.abs()
    ratio = err / allowed
    worst = int(torch.argmax(ratio).item())
    max_ratio = float(ratio.reshape(-1)[worst].item())
    max_error = float(err.reshape(-1)[worst].item())
    n_bad = int((err > allowed).sum().item())
    if n_bad == 0:
        return {"ok": True, "max_ratio": max_ratio, "max_error": max_error, "message": ""}
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(worst), tuple(got.shape)))
    message = (f"{n_bad} of {got.numel()} elements outside |err| <= {atol:g} + {rtol:g}*|ref|; "
               f"worst at {index}: got {got.reshape(-1)[worst].item():.6g}, expected "
               f"{expected.reshape(-1)[worst].item():.6g}")
    return {"ok": False, "max_ratio": max_ratio, "max_error": max_error, "message": message}


def _gate_fail(message: str) -> dict:
    return {"ok": False, "max_ratio": None, "max_error": None, "message": message}


# ---------------------------------------------------------------------------------------------
# Timers
# ---------------------------------------------------------------------------------------------
def _one_call_ms(fn) -> float:
    """Rough time of one call (events, no flush), used to size the warm-up and the graphs."""
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(3):
        fn()
    end.record()
    torch.cuda.synchronize()
    return max(start.elapsed_time(end) / 3, 1e-3)


class EventTimer:
    """CUDA events around each call, the L2 flushed (a write of `flush`) before each sample.

    The start and end events of every sample are recorded first and read after one final
    synchronize (in `result`), so no host sync sits between the flush and the call being timed.
    """

    def __init__(self, fn, plan: Plan, flush):
        self.fn, self.plan, self.flush = fn, plan, flush
        self.events: list = []
        self.warmup = 0

    def prepare(self) -> None:
        estimate = _one_call_ms(self.fn)
        self.warmup = max(1, min(1000, math.ceil(self.plan.warmup_ms / estimate)))
        for _ in range(self.warmup):
            self.fn()

    def sample(self) -> None:
        import torch

        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        self.flush.zero_()
        start.record()
        self.fn()
        end.record()
        self.events.append((start, end))

    def result(self) -> dict:
        """After a torch.cuda.synchronize()."""
        samples = [start.elapsed_time(end) for start, end in self.events]
        return {"samples_ms": [round(s, 6) for s in samples], "calls_per_sample": 1,
                "warmup_calls": self.warmup,
                "l2_flush_bytes": self.flush.numel() * self.flush.element_size()}

    def close(self) -> None:
        pass


class GraphTimer:
    """Capture `calls` back-to-back calls in one CUDA graph, replay it, time each replay.

    A sample is one replay's time divided by its number of calls: launch overhead is gone and
    the L2 is NOT flushed between calls (as in triton.testing.do_bench_cudagraph), so inputs
    smaller than the L2 (60 MiB) may be served partly from it. That is what this mode measures.
    """

    def __init__(self, fn, plan: Plan):
        self.fn, self.plan = fn, plan
        self.graph = None
        self.events: list = []
        self.calls = self.warmup = 0

    def prepare(self) -> None:
        import torch

        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm up (compile, autotune) outside the capture
            for _ in range(3):
                self.fn()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        estimate = _one_call_ms(self.fn)
        self.calls = max(1, min(200, round(self.plan.graph_ms / estimate)))
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            for _ in range(self.calls):
                self.fn()
        self.warmup = max(1, min(200, math.ceil(self.plan.warmup_ms / (estimate * self.calls))))
        for _ in range(self.warmup):
            self.graph.replay()

    def sample(self) -> None:
        import torch

        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        self.graph.replay()
        end.record()
        self.events.append((start, end))

    def result(self) -> dict:
        """After a torch.cuda.synchronize()."""
        samples = [start.elapsed_time(end) / self.calls for start, end in self.events]
        return {"samples_ms": [round(s, 6) for s in samples], "calls_per_sample": self.calls,
                "warmup_calls": self.warmup * self.calls, "l2_flush_bytes": 0}

    def close(self) -> None:
        if self.graph is not None:
            self.graph.reset()
            self.graph = None


def time_interleaved(timers: list, samples: int) -> None:
    """Take `samples` samples from each prepared timer, in rounds: one sample of every timer per
    round, the order rotated by one each round.

    Timing each provider in turn would give the first one a cool GPU and the last one a hot,
    power-capped one (on the H200 the same 4096^3 GEMM drifted from 186 to 204 us within a
    minute: diagnostics/probe-gemm-tiles-*); in rounds, every provider sees the same clocks.
    """
    import torch

    n = len(timers)
    torch.cuda.synchronize()  # the warm-up calls finish before the first sample
    for round_ in range(samples):
        for k in range(n):
            timers[(round_ + k) % n].sample()
    torch.cuda.synchronize()


def time_events(fn, plan: Plan, flush) -> dict:
    """One function alone with an EventTimer (diagnostic scripts)."""
    timer = EventTimer(fn, plan, flush)
    timer.prepare()
    time_interleaved([timer], plan.samples)
    return timer.result()


def time_graph(fn, plan: Plan) -> dict:
    """One function alone with a GraphTimer (diagnostic scripts)."""
    timer = GraphTimer(fn, plan)
    try:
        timer.prepare()
        time_interleaved([timer], plan.samples)
        return timer.result()
    finally:
        timer.close()


def measure_ceiling(mode: str, plan: Plan, flush) -> dict:
    """Device-to-device copy bandwidth in this process: the ceiling of the memory-bound rows.

    Two copies: 4 GiB of float32 and 256 MiB of float16. Bytes = one read + one write of the
    buffer. The ceiling is the faster of the two (`ceiling_tb_s`, named by `ceiling_from`): in
    graph mode on the H200 the 4 GiB copy runs at about 2.8 TB/s and the 256 MiB one at 4.2,
    and a ceiling below what a kernel reaches would flatter every ratio to it.
    """
    import torch

    out = {}
    for key, n, dtype in (("copy_4GiB_float32", 1 << 30, torch.float32),
                          ("copy_256MiB_float16", 1 << 27, torch.float16)):
        src = torch.ones(n, dtype=dtype, device="cuda")
        dst = torch.empty_like(src)
        copy = _copier(dst, src)
        timed = time_events(copy, plan, flush) if mode == "events" else time_graph(copy, plan)
        nbytes = 2 * n * src.element_size()
        med = summarize(timed["samples_ms"])["median"]
        out[key] = dict(timed, bytes=nbytes, bytes_formula="2 * numel * element_size (read + write)",
                        tb_s_median=round(tb_per_s(nbytes, med), 4))
        del src, dst, copy
        torch.cuda.empty_cache()
    out["ceiling_from"] = max(out, key=lambda key: out[key]["tb_s_median"])
    out["ceiling_tb_s"] = out[out["ceiling_from"]]["tb_s_median"]
    return out


def _copier(dst, src):
    return lambda: dst.copy_(src)


# ---------------------------------------------------------------------------------------------
# Launch log: which Triton kernels a call launched, with their scalar keyword arguments
# ---------------------------------------------------------------------------------------------
_launch_log: list | None = None
_launch_hook_installed = False


def _install_launch_hook() -> None:
    """Wrap Triton's `kernel[grid](...)` so a gate call records kernel names and knobs."""
    global _launch_hook_installed
    if _launch_hook_installed:
        return
    try:
        from triton.runtime.jit import KernelInterface
    except ImportError:
        return
    original = KernelInterface.__getitem__

    def logged_getitem(self, grid):
        launch = original(self, grid)

        def run(*args, **kwargs):
            result = launch(*args, **kwargs)
            if _launch_log is not None:
                name = getattr(self, "__name__", None) or getattr(getattr(self, "fn", None),
                                                                  "__name__", "?")
                entry = {"kernel": name,
                         "meta": {k: v for k, v in kwargs.items()
                                  if isinstance(v, (bool, int, float, str)) or v is None}}
                if isinstance(grid, tuple) and all(isinstance(g, int) for g in grid):
                    entry["grid"] = list(grid)
                best = getattr(self, "best_config", None)  # an autotuner's choice
                if best is not None:
                    entry["autotuned"] = str(best)
                _launch_log.append(entry)
            return result

        return run

    KernelInterface.__getitem__ = logged_getitem
    _launch_hook_installed = True


def call_logged(fn, inputs: dict):
    """Call a provider once, returning (output, launches)."""
    global _launch_log
    _install_launch_hook()
    _launch_log = []
    try:
        out = fn(inputs)
        return out, list(_launch_log)
    finally:
        _launch_log = None


# ---------------------------------------------------------------------------------------------
# Running problems
# ---------------------------------------------------------------------------------------------
def describe_inputs(inputs: dict) -> dict:
    """Shape, strides, storage offset and dtype of every tensor input."""
    out = {}
    for name, t in inputs.items():
        if hasattr(t, "stride"):
            out[name] = {"shape": list(t.shape), "stride": list(t.stride()),
                         "storage_offset": t.storage_offset(),
                         "dtype": str(t.dtype).replace("torch.", ""),
                         "contiguous": t.is_contiguous()}
    return out


def problem_seed(problem: Problem) -> int:
    digest = hashlib.sha256(f"{problem.workshop}:{problem.experiment}:{problem.label}".encode())
    return int.from_bytes(digest.digest()[:6], "little")


def run_problem(problem: Problem, *, device: str, mode: str | None, plan: Plan | None, flush,
                report: Callable[[dict], None] | None = None) -> list[dict]:
    """Gate, then (mode not None) time every provider of `problem`; one record per provider.

    device: "cuda" or "cpu" (--dry-run: gate only). Never raises for a provider's error: it is
    recorded with status "error".
    """
    import torch

    records = []
    generator = torch.Generator(device=device).manual_seed(problem_seed(problem))
    base = problem_fields(problem)
    try:
        inputs = problem.make_inputs(device, generator)
    except Exception as exc:  # noqa: BLE001 - e.g. out of memory: record it, go on
        for provider in problem.providers:
            record = dict(base, **provider_fields(provider), status="error",
                          message=f"inputs: {type(exc).__name__}: {exc}")
            records.append(record)
            if report:
                report(record)
        return records
    base["inputs"] = describe_inputs(inputs)
    expected_default = None
    timed = []  # (provider, record, prepared timer) of the providers that passed the gate
    for provider in problem.providers:
        record = dict(base, **provider_fields(provider))
        records.append(record)
        if provider.cuda_only and device != "cuda":
            record.update(status="skipped", message="needs CUDA (pinned GPU backend)")
            if report:
                report(record)
            continue
        try:
            if provider.reference is not None:
                expected = provider.reference(inputs)
                tol = provider.tolerance or problem.tolerance
                rtol, atol = tol(inputs) if callable(tol) else tol
            else:
                if expected_default is None:
                    expected_default = problem.reference(inputs)
                expected = expected_default
                rtol, atol = problem.tolerance(inputs)
            out, launches = call_logged(provider.fn, inputs)
            if device == "cuda":
                torch.cuda.synchronize()
            result = gate(out, expected, rtol, atol)
            del out
            record["launches"] = launches
            record["gate"] = {"rtol": rtol, "atol": atol, **result}
            if provider.reference is not None:
                del expected
            if not result["ok"]:
                record.update(status="failed", message=result["message"])
            elif mode is None:
                record.update(status="ok")
            else:
                fn = _bind(provider.fn, inputs)
                timer = EventTimer(fn, plan, flush) if mode == "events" else GraphTimer(fn, plan)
                try:
                    timer.prepare()
                except BaseException:
                    timer.close()
                    raise
                timed.append((provider, record, timer))
                continue  # reported once timed, with the others
        except Exception as exc:  # noqa: BLE001 - a provider may fail in any way; keep going
            record.update(status="error", message=f"{type(exc).__name__}: {_short(exc)}")
            _settle(device)
        _finish(record, provider, report)
    # Every provider that passed its gate is timed in the same rounds (time_interleaved).
    try:
        if timed:
            time_interleaved([timer for _, _, timer in timed], plan.samples)
        for _, record, timer in timed:
            record.update(status="ok", mode=mode, **timer.result())
    except Exception as exc:  # noqa: BLE001
        for _, record, _ in timed:
            record.update(status="error", message=f"timing: {type(exc).__name__}: {_short(exc)}")
        _settle(device)
    finally:
        for provider, record, timer in timed:
            timer.close()
            _finish(record, provider, report)
    del inputs, expected_default, timed
    _settle(device)
    return records


def _finish(record: dict, provider: Provider, report) -> None:
    if provider.state:
        record["state"] = dict(provider.state)
    if report:
        report(record)


def _settle(device: str) -> None:
    """Wait for the GPU and give cached memory back; after a sticky CUDA error (an illegal
    address) this raises too, and we only note it: later providers will then record errors."""
    if device != "cuda":
        return
    import torch

    try:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    except Exception as exc:  # noqa: BLE001
        log(f"CUDA is in an error state: {type(exc).__name__}: {_short(exc)}")


def _bind(fn, inputs):
    return lambda: fn(inputs)


def _short(exc: BaseException, limit: int = 400) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[:limit] + " ..."


def problem_fields(problem: Problem) -> dict:
    """What every record of a problem repeats: where it belongs, its sizes and formulas."""
    return {"workshop": problem.workshop, "experiment": problem.experiment,
            "problem": problem.label, "params": problem.params, "metric": problem.metric,
            "bytes": problem.bytes, "bytes_formula": problem.bytes_formula,
            "flops": problem.flops, "flops_formula": problem.flops_formula,
            "baseline": problem.baseline, "ceiling": problem.ceiling}


def provider_fields(provider: Provider) -> dict:
    return {"provider": provider.name, "label": provider.label, "role": provider.role,
            "knobs": provider.knobs, "note": provider.note,
            "bytes_moved": provider.bytes_moved, "bytes_moved_formula": provider.bytes_moved_formula}


# ---------------------------------------------------------------------------------------------
# Results files: gzipped JSON, one header + every record with every sample
# ---------------------------------------------------------------------------------------------
def save(path: Path, header: dict, records: list[dict]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"header": header, "records": records}
    text = json.dumps(payload, separators=(",", ":"), default=str)
    # mtime=0: the same results give the same bytes. Written next to the target and renamed,
    # so a run killed mid-write leaves the previous complete file, never a truncated one.
    partial = path.with_name(path.name + ".partial")
    with open(partial, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write(text.encode())
    os.replace(partial, path)
    return path


def load(path: Path) -> dict:
    """Read a results file (gzipped or plain JSON)."""
    data = Path(path).read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data.decode())


def fix_git_commit(header: dict) -> dict:
    """Keep `git_commit` only when it is a real commit id.

    In a copy of the tree without history `git rev-parse HEAD` prints "HEAD" (and fails); the
    commit then comes from WORKSHOP_GIT_COMMIT, and whether the tree was dirty is unknown.
    """
    commit = str(header.get("git_commit") or "")
    if not (len(commit) == 40 and all(c in "0123456789abcdef" for c in commit.lower())):
        header["git_commit"] = os.environ.get("WORKSHOP_GIT_COMMIT") or None
        header["git_dirty"] = None
    return header


def default_path(header: dict) -> Path:
    gpu = "".join(c if c.isalnum() else "-" for c in (header.get("gpu") or header["device"]))
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return RESULTS_DIR / f"bench-{header['mode']}-{header['scale']}-{gpu.strip('-')}-{stamp}.json.gz"


def progress_line(i: int, n: int, record: dict, started: float) -> str:
    """One line per provider: where we are, what ran, what it reached."""
    head = f"[{i:>4}/{n}] {time.perf_counter() - started:6.0f}s {record['workshop']}/" \
           f"{record['experiment']} {record['problem']}  {record['label']}"
    status = record.get("status")
    if status != "ok":
        return f"{head}: {status.upper()} {record.get('message', '')}"
    samples = record.get("samples_ms")
    if not samples:
        gate_info = record.get("gate", {})
        return f"{head}: gate ok (worst {gate_info.get('max_ratio', 0):.2g} of tolerance)"
    med = summarize(samples)["median"]
    return f"{head}: {med * 1e3:9.1f} us  {throughput_text(record, med)}"


def throughput_text(record: dict, ms: float) -> str:
    if record["metric"] == "flops":
        return f"{tflop_per_s(record['flops'], ms):7.1f} TFLOP/s"
    return f"{tb_per_s(record['bytes'], ms):6.3f} TB/s"


def summary_table(records: list[dict], ceiling_tb_s: float | None = None) -> str:
    """Plain-text table printed at the end of a run: one line per problem."""
    lines = []
    by_problem: dict[tuple, list[dict]] = {}
    for r in records:
        by_problem.setdefault((r["workshop"], r["experiment"], r["problem"]), []).append(r)
    current = None
    for (workshop, experiment, problem), group in by_problem.items():
        if (workshop, experiment) != current:
            current = (workshop, experiment)
            lines.append(f"\n{workshop} / {experiment}")
        cells = []
        medians = {}  # by label: a sweep has several "ours" with different knobs
        for r in group:
            if r.get("status") == "ok" and r.get("samples_ms"):
                med = summarize(r["samples_ms"])["median"]
                medians[r["label"]] = med
                cells.append(f"{r['label']} {throughput_text(r, med).strip()}")
            else:
                cells.append(f"{r['label']} {r.get('status', '?').upper()}")
        ours = [r["label"] for r in group if r["role"] == OURS and r["label"] in medians]
        base = group[0].get("baseline")
        ratio = ""
        if len(ours) == 1 and base in medians:
            ratio = f"  ours/{base} {medians[base] / medians[ours[0]]:.2f}x"
        if len(ours) == 1 and ceiling_tb_s and group[0]["metric"] == "bandwidth":
            bw = tb_per_s(group[0]["bytes"], medians[ours[0]])
            ratio += f"  of copy {bw / ceiling_tb_s:.2f}"
        if len(cells) <= 4:
            lines.append(f"  {problem}: " + " | ".join(cells) + ratio)
        else:  # a sweep: one line per configuration
            lines.append(f"  {problem}:")
            lines += [f"    {cell}" for cell in cells]
    return "\n".join(lines)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
