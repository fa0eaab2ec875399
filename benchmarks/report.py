"""From saved evidence to tables, goals, figures and the generated parts of validation_report.md.

Every number comes from a file under benchmarks/results/:
- benchmark runs (`python3 -m benchmarks run ... --out X.json.gz`, header kind "benchmark"),
- check runs (`python -m checks run --json checks-<device>-<date>.json`),
- planted bugs (`python3 -m benchmarks bugzoo --out bugzoo-<device>.json`),
- bad calls (`python3 -m benchmarks badcalls --out badcalls-<device>.json`).
Files are recognised by their content, not their names. `generate()` returns the generated
sections as text and depends on nothing but those files and the goals declared in the benchmark
modules, so tests/test_benchmarks.py can regenerate them in memory and compare. matplotlib is
imported only to draw figures.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import re
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from benchmarks import harness
from checks import catalog, provenance

REPO_ROOT = Path(__file__).resolve().parent.parent
REPORT_PATH = REPO_ROOT / "validation_report.md"
FIGURES_DIR = REPO_ROOT / "book" / "figures"
SECTIONS = ("goals", "evidence", "checks", "bad-calls", "bug-zoo", "benchmarks", "sweeps")
MODES = ("events", "graph")
NO_GPU = "No GPU evidence yet"


# ---------------------------------------------------------------------------------------------
# Loading and choosing evidence
# ---------------------------------------------------------------------------------------------
@dataclass
class EvidenceFile:
    name: str  # file name inside the results folder
    kind: str  # benchmark, checks, bugzoo, badcalls
    data: dict

    @property
    def header(self) -> dict:
        return self.data.get("header", {})

    @property
    def when(self) -> tuple:
        return (_parse_date(self.header.get("date")), self.name)


@dataclass
class Evidence:
    files: list[EvidenceFile] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)

    def of_kind(self, kind: str) -> list[EvidenceFile]:
        return sorted((f for f in self.files if f.kind == kind), key=lambda f: f.when)


def _parse_date(text) -> datetime:
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S%z").replace(tzinfo=None)
    except (TypeError, ValueError):
        return datetime.min


def classify(data: dict) -> str | None:
    header = data.get("header") if isinstance(data, dict) else None
    if not isinstance(header, dict):
        return None
    kind = header.get("kind")
    if kind == "benchmark":
        # a dry run is a CPU gate, not evidence of speed
        return "benchmark" if header.get("mode") in MODES else None
    if kind in ("bugzoo", "badcalls"):
        return kind
    if "results" in data and "counts" in data:
        return "checks"
    return None


def load_evidence(results_dir: Path | str | None = None) -> Evidence:
    folder = Path(results_dir) if results_dir else harness.RESULTS_DIR
    evidence = Evidence()
    if not folder.is_dir():
        return evidence
    for path in sorted(folder.iterdir()):
        if not (path.name.endswith(".json") or path.name.endswith(".json.gz")):
            continue
        try:
            data = harness.load(path)
        except (OSError, ValueError, EOFError) as exc:
            evidence.unreadable.append(f"{path.name}: {exc}")
            continue
        kind = classify(data)
        if kind:
            evidence.files.append(EvidenceFile(path.name, kind, data))
    return evidence


def latest_checks(evidence: Evidence) -> dict[str, dict[str, EvidenceFile]]:
    """Per device, per workshop (in book order): the latest check run of the references that
    covers it.

    Check runs are often split by workshop (several processes on one GPU), so one device's
    evidence can span several files; a later file replaces an earlier one workshop by workshop.
    """
    out: dict[str, dict[str, EvidenceFile]] = {}
    for f in sorted(evidence.of_kind("checks"), key=lambda f: f.when):
        if f.header.get("impl") != "references":
            continue
        device = f.header.get("device", "?")
        for workshop in dict.fromkeys(r["workshop"] for r in f.data.get("results", [])):
            out.setdefault(device, {})[workshop] = f
    return {device: dict(_in_book_order(by_workshop)) for device, by_workshop in _by_device(out)}


_DEVICE_ORDER = {"cuda": 0, "interpreter": 1, "cpu": 2}


def _by_device(out: dict) -> list[tuple[str, dict]]:
    """(device, per-workshop evidence) pairs, the GPU first, then the interpreter."""
    return sorted(out.items(), key=lambda item: _DEVICE_ORDER.get(item[0], 9))


def _in_book_order(by_workshop: dict) -> list[tuple[str, object]]:
    """(workshop, evidence) pairs in the book's order (unknown workshops last)."""
    order = {w: i for i, w in enumerate(catalog.WORKSHOP_IDS)}
    return sorted(by_workshop.items(), key=lambda item: order.get(item[0], 99))


_ROWS_OF = {"bugzoo": "bugs", "badcalls": "checks"}  # where each kind keeps its per-workshop rows


def latest_rows(evidence: Evidence, kind: str) -> dict[str, list[tuple[EvidenceFile, list]]]:
    """Per device: [(file, its rows of one workshop)], workshop by workshop, in book order.

    Like check runs, bug-zoo and bad-call runs may cover only some workshops (a maintainer
    re-runs the one that changed): for each workshop the latest file that has it wins.
    """
    out: dict[str, dict[str, tuple[EvidenceFile, list]]] = {}
    for f in evidence.of_kind(kind):  # oldest first: later files replace earlier ones
        rows = f.data.get(_ROWS_OF[kind], [])
        for workshop in dict.fromkeys(r["workshop"] for r in rows):
            mine = [r for r in rows if r["workshop"] == workshop]
            out.setdefault(f.header.get("device", "?"), {})[workshop] = (f, mine)
    return {device: [rows for _, rows in _in_book_order(by_workshop)]
            for device, by_workshop in _by_device(out)}


def _files_line(parts: list[tuple[EvidenceFile, list]]) -> str:
    """`name`, date, commit of each file the rows come from (one or several)."""
    files = {f.name: f for f, _ in parts}  # each file once, in the order of first use
    return "; ".join(f"`{f.name}`, {f.header.get('date')}, commit {commit_text(f.header)}"
                     for f in files.values())


def bench_runs(evidence: Evidence, mode: str, workshop: str, sweep: bool = False):
    """(file, records of this workshop) from the latest run that has it: a full run is
    preferred to a quick one; sweeps are chosen separately."""
    best = None
    for f in evidence.of_kind("benchmark"):
        header = f.header
        if header.get("mode") != mode or workshop not in header.get("workshops", []):
            continue
        if not any(r.get("workshop") == workshop for r in f.data.get("records", [])):
            continue  # an incomplete run that stopped before this workshop
        scale = header.get("scale")
        if sweep != (scale == "sweep") or scale not in ("full", "quick", "sweep"):
            continue
        rank = (scale != "quick", f.when)
        if best is None or rank >= best[0]:
            best = (rank, f)
    if best is None:
        return None, []
    f = best[1]
    return f, [r for r in f.data.get("records", []) if r.get("workshop") == workshop]


def workshop_module(workshop: str):
    try:
        return importlib.import_module(f"benchmarks.{workshop}")
    except ModuleNotFoundError:
        return None


def bench_workshops() -> list[str]:
    return [w for w in catalog.WORKSHOP_IDS if workshop_module(w) is not None]


# ---------------------------------------------------------------------------------------------
# Numbers from records
# ---------------------------------------------------------------------------------------------
def median_ms(record: dict) -> float | None:
    samples = record.get("samples_ms")
    if record.get("status") != "ok" or not samples:
        return None
    return harness.summarize(samples)["median"]


def throughput(record: dict, ms: float, own_bytes: bool = False) -> float:
    """TB/s (bandwidth problems) or TFLOP/s (flops problems) at `ms` per call.

    own_bytes: use the provider's real traffic (bytes_moved) where it declares one."""
    if record["metric"] == "flops":
        return harness.tflop_per_s(record["flops"], ms)
    nbytes = record.get("bytes_moved") if own_bytes and record.get("bytes_moved") else record["bytes"]
    return harness.tb_per_s(nbytes, ms)


def unit(metric: str) -> str:
    return "TFLOP/s" if metric == "flops" else "TB/s"


def fmt_thr(value: float, metric: str) -> str:
    if metric == "flops":
        return f"{value:.0f}" if value >= 100 else f"{value:.1f}"
    return f"{value:.2f}"


def fmt_us(ms: float) -> str:
    us = ms * 1e3
    return f"{us:.1f}" if us < 100 else f"{us:.0f}"


def fmt_ratio(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}x"


def group_problems(records: list[dict]) -> dict[tuple[str, str], list[dict]]:
    """{(experiment, problem label): records}, in the order of the run."""
    out: dict[tuple[str, str], list[dict]] = {}
    for r in records:
        out.setdefault((r["experiment"], r["problem"]), []).append(r)
    return out


def ours_of(group: list[dict]) -> dict | None:
    return next((r for r in group if r["role"] == harness.OURS), None)


def ratio_to(ours: dict, other: dict) -> float | None:
    """ours' throughput / other's throughput (> 1: ours is faster). A ceiling provider that
    moves other bytes than the problem (a copy of fewer tensors) counts its own bytes."""
    mo, mx = median_ms(ours), median_ms(other)
    if mo is None or mx is None:
        return None
    own = other["role"] == harness.CEILING
    return throughput(ours, mo) / throughput(other, mx, own_bytes=own)


def ceiling_of(header: dict) -> tuple[float | None, str]:
    """(TB/s, name) of the best copy measured in a file's run: its bandwidth ceiling.

    Files saved before the harness took the best copy recorded the 4 GiB copy as the ceiling
    even where the 256 MiB copy ran faster (graph mode); the best measured copy is used for all.
    """
    copies = {k: v["tb_s_median"] for k, v in (header.get("ceiling") or {}).items()
              if k.startswith("copy_") and isinstance(v, dict) and v.get("tb_s_median")}
    if not copies:
        return None, ""
    best = max(copies, key=copies.get)
    return copies[best], best


def of_ceiling(ours: dict, ceiling_tb_s: float | None) -> float | None:
    mo = median_ms(ours)
    if mo is None or not ceiling_tb_s or ours["metric"] != "bandwidth":
        return None
    return throughput(ours, mo) / ceiling_tb_s


# ---------------------------------------------------------------------------------------------
# Goals
# ---------------------------------------------------------------------------------------------
# A provider whose p90 is more than this many times its p10 was timed with stalls inside the
# timed region (on the lent machine: host-side pauses in events timing, which hit torch's
# providers in the same windows as ours). Such problems still count for the goal; the table
# says which and gives the worst case among the others beside it.
DISTURBED_SPREAD = 1.5


def spread(record: dict) -> float | None:
    """p90 / p10 of a record's samples (None without samples)."""
    samples = record.get("samples_ms")
    if record.get("status") != "ok" or not samples:
        return None
    stats = harness.summarize(samples)
    return stats["p90"] / stats["p10"] if stats["p10"] > 0 else None


def disturbed(group: list[dict]) -> float | None:
    """The largest p90 / p10 of a problem's providers when above DISTURBED_SPREAD, else None."""
    worst = max((x for x in map(spread, group) if x is not None), default=None)
    return worst if worst is not None and worst > DISTURBED_SPREAD else None


def evaluate_goal(goal, records: list[dict], ceiling_tb_s: float | None) -> dict:
    """Check one goal on every matching problem of one run: the worst case decides."""
    values, failed, shaky, steady_worst = [], [], {}, None
    for (experiment, label), group in group_problems(records).items():
        if experiment != goal.experiment or not goal.where(group[0]["params"]):
            continue
        ours = ours_of(group)
        if ours is None:
            continue
        if ours.get("status") != "ok":
            failed.append(f"{label}: ours {ours.get('status')}")
            continue
        if goal.measure == "of_ceiling":
            value = of_ceiling(ours, ceiling_tb_s)
        else:
            other = next((r for r in group if r["provider"] == goal.against), None)
            value = ratio_to(ours, other) if other else None
        if value is not None:
            values.append((value, label))
            spread_of_problem = disturbed(group)
            if spread_of_problem:
                shaky[label] = spread_of_problem
    if failed:
        return {"status": "not met", "worst": None, "where": "; ".join(failed[:3]),
                "n": len(values) + len(failed), "detail": "ours failed the gate or raised",
                "steady_worst": None}
    if not values:
        return {"status": "not measured", "worst": None, "where": "", "n": 0, "detail": "",
                "steady_worst": None}
    worst, where = min(values)
    met = worst >= goal.threshold
    detail = ""
    if where in shaky:
        steady = [(v, label) for v, label in values if label not in shaky]
        detail = (f"worst case timed with stalls: p90 {shaky[where]:.1f}x p10; "
                  f"{len(shaky)} of {len(values)} problems so")
        if steady:
            steady_worst = min(steady)[0]
            detail += f"; worst of the others {steady_worst:.2f} ({min(steady)[1]})"
    return {"status": "met" if met else "not met", "worst": worst, "where": where,
            "n": len(values), "detail": detail, "steady_worst": steady_worst}


def fmt_goal_value(value: float, threshold: float) -> str:
    """Two decimals, or as many more as it takes for the shown value to fall on the same side
    of the threshold as the value itself (0.9695 against 0.97 shows as 0.9695, not 0.97)."""
    for digits in (2, 3, 4):
        shown = round(value, digits)
        if (shown >= threshold) == (value >= threshold):
            return f"{value:.{digits}f}"
    return f"{value:.5f}"


def goals_table(workshop: str, runs: dict) -> list[str]:
    """runs: {mode: (file, records)}"""
    module = workshop_module(workshop)
    goals = getattr(module, "GOALS", [])
    if not goals:
        return ["No speed goal is set for this workshop."]
    lines = ["| goal | mode | problems | worst case | value | needed | result |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for goal in goals:
        for mode, (f, records) in runs.items():
            if f is None:
                lines.append(f"| {goal.text} | {mode} | 0 | | | {goal.threshold:g} | not measured |")
                continue
            ceiling = ceiling_of(f.header)[0]
            res = evaluate_goal(goal, records, ceiling)
            value = "" if res["worst"] is None else fmt_goal_value(res["worst"], goal.threshold)
            result = {"met": "met", "not met": "**not met**"}.get(res["status"], res["status"])
            if res["detail"]:
                result += f" ({res['detail']})"
            lines.append(f"| {goal.text} | {mode} | {res['n']} | {res['where']} | {value} | "
                         f"{goal.threshold:g} | {result} |")
    return lines


# ---------------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------------
def _param_columns(groups: list[list[dict]]) -> tuple[list[str], dict]:
    """Params that vary across the table's problems (columns) and those that do not."""
    keys = list(dict.fromkeys(k for g in groups for k in g[0]["params"]))
    varying, constant = [], {}
    for k in keys:
        values = {repr(g[0]["params"].get(k)) for g in groups}
        if len(values) > 1:
            varying.append(k)
        else:
            constant[k] = groups[0][0]["params"].get(k)
    if "shape" in varying:  # GEMM: the shape string says M, N and K at once
        varying = [k for k in varying if k not in ("M", "N", "K")]
    return varying, constant


def _cell(record: dict, own_bytes: bool = False) -> str:
    status = record.get("status")
    if status != "ok":
        return {"failed": "FAILED gate", "error": "error", "skipped": "skipped"}.get(status, status)
    ms = median_ms(record)
    if ms is None:
        return "gate ok, not timed"
    stats = harness.summarize(record["samples_ms"])
    value = fmt_thr(throughput(record, ms, own_bytes), record["metric"])
    return f"{value} ({fmt_us(ms)} us, {fmt_us(stats['p10'])}-{fmt_us(stats['p90'])})"


def experiment_table(records: list[dict], ceiling_tb_s: float | None) -> list[str]:
    """One row per problem: every provider's throughput (median time, p10-p90), then ours'
    ratio to each other provider and to the session copy ceiling."""
    groups = list(group_problems(records).values())
    if not groups:
        return []
    metric = groups[0][0]["metric"]
    providers = list(dict.fromkeys(r["label"] for g in groups for r in g))
    others = [p for p in providers if not any(r["label"] == p and r["role"] == harness.OURS
                                              for g in groups for r in g)]
    varying, constant = _param_columns(groups)
    ours_labels = [p for p in providers if p not in others]
    head = varying + [f"{p} {unit(metric)}" for p in providers]
    if len(ours_labels) == 1:
        head += [f"ours / {p}" for p in others]
        if metric == "bandwidth":
            head.append("ours / copy ceiling")
    lines = []
    if constant:
        lines.append("Common to every row: " + ", ".join(f"{k} = {harness._fmt(v)}"
                                                         for k, v in constant.items()) + ".")
        lines.append("")
    lines += ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    notes = []
    for group in groups:
        by_label = {r["label"]: r for r in group}
        row = [harness._fmt(group[0]["params"].get(k)) for k in varying]
        for p in providers:
            r = by_label.get(p)
            row.append(_cell(r, own_bytes=r["role"] == harness.CEILING) if r else "")
            if r and r.get("status") in ("failed", "error"):
                notes.append(f"{group[0]['problem']}, {p}: {_md(r.get('message', '')[:200])}")
        if len(ours_labels) == 1:
            ours = by_label.get(ours_labels[0])
            for p in others:
                other = by_label.get(p)
                row.append(fmt_ratio(ratio_to(ours, other)) if ours and other else "")
            if metric == "bandwidth":
                row.append(fmt_ratio(of_ceiling(ours, ceiling_tb_s)) if ours else "")
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    lines.append(_formula_line(groups))
    for note in notes:
        lines.append(f"- {note}")
    return lines


def _formula_line(groups: list[list[dict]]) -> str:
    first = groups[0][0]
    parts = ["Bytes: " + "; ".join(f"`{x}`" for x in dict.fromkeys(g[0]["bytes_formula"]
                                                                   for g in groups)) + "."]
    if first.get("flops"):
        parts.append("FLOPs: " + "; ".join(f"`{x}`" for x in dict.fromkeys(g[0]["flops_formula"]
                                                                         for g in groups)) + ".")
    moved = {r["label"]: r["bytes_moved_formula"] for g in groups for r in g
             if r.get("bytes_moved_formula")}
    for label, formula in moved.items():
        parts.append(f"{label} moves `{formula}`" + (" (its own column uses these bytes)"
                                                   if any(r["label"] == label and
                                                          r["role"] == harness.CEILING
                                                          for g in groups for r in g) else
                                                   " (throughput above counts the problem's "
                                                   "bytes)") + ".")
    notes = {r["label"]: r["note"] for g in groups for r in g if r.get("note")}
    states = {r["label"]: r["state"] for g in groups for r in g if r.get("state")}
    for label, note in notes.items():
        state = f" [{', '.join(f'{k}={v}' for k, v in states[label].items())}]" \
            if label in states else ""
        parts.append(f"{label}: {_md(note)}{state}.")
    return " ".join(parts) + " Cells: median throughput (median us, p10-p90 us)."


def commit_text(h: dict) -> str:
    """The short commit of a header; "unknown" when it is not a commit id, full or abbreviated
    to 7 or more hex digits (a copy of the tree without history reports "HEAD"), with
    "(dirty)" when the tree was known to be dirty."""
    commit = str(h.get("git_commit") or "")
    if not 7 <= len(commit) <= 40 or any(c not in "0123456789abcdef" for c in commit.lower()):
        return "unknown"
    return commit[:10] + (" (dirty)" if h.get("git_dirty") else "")


def _file_line(f: EvidenceFile) -> str:
    h = f.header
    plan = h.get("plan") or {}
    ceiling_tb_s, ceiling_from = ceiling_of(h)
    extra = f", copy ceiling {ceiling_tb_s:.2f} TB/s ({ceiling_from})" if ceiling_tb_s else ""
    partial = "" if h.get("complete", True) else " INCOMPLETE run (stopped early),"
    return (f"`{f.name}`:{partial} {h.get('mode')} timing, {h.get('scale')} scale, {plan.get('samples')} "
            f"samples per variant, {h.get('gpu', h.get('device'))}, {h.get('date')}, commit "
            f"{commit_text(h)}, torch "
            f"{h.get('torch')}, Triton {h.get('triton')}{extra}.")


def workshop_section(workshop: str, evidence: Evidence) -> list[str]:
    title = catalog.get(workshop).title
    lines = [f"### {workshop}: {title}", ""]
    runs = {mode: bench_runs(evidence, mode, workshop) for mode in MODES}
    if all(f is None for f, _ in runs.values()):
        return lines + [f"{NO_GPU} for this workshop.", ""]
    lines += ["Goals (from the workshop's issue; the worst matching problem decides):", ""]
    lines += goals_table(workshop, runs) + [""]
    for mode, (f, records) in runs.items():
        if f is None:
            lines += [f"#### {workshop}, {mode} timing", "", f"{NO_GPU} in this mode.", ""]
            continue
        ceiling = ceiling_of(f.header)[0]
        experiments = list(dict.fromkeys(r["experiment"] for r in records))
        for experiment in experiments:
            subset = [r for r in records if r["experiment"] == experiment]
            lines += [f"#### {workshop} {experiment}, {mode} timing", "", _file_line(f), ""]
            lines += experiment_table(subset, ceiling) + [""]
    return lines


def sweep_section(workshop: str, evidence: Evidence) -> list[str]:
    lines = []
    for mode in MODES:
        f, records = bench_runs(evidence, mode, workshop, sweep=True)
        if f is None:
            continue
        lines += [f"### {workshop} sweep, {mode} timing", "", _file_line(f), ""]
        for (_, label), group in group_problems(records).items():
            metric = group[0]["metric"]
            lines += [f"{label}:", "",
                      f"| configuration | {unit(metric)} | median us | p10-p90 us | vs launcher "
                      f"defaults | vs {group[0]['baseline'] or 'baseline'} |",
                      "| --- | --- | --- | --- | --- | --- |"]
            default = next((r for r in group if r["role"] == harness.OURS and not r["knobs"]),
                           None)
            base = next((r for r in group if r["provider"] == group[0]["baseline"]), None)
            timed = sorted((r for r in group if median_ms(r) is not None), key=median_ms)
            untimed = [r for r in group if median_ms(r) is None]
            for r in timed + untimed:
                ms = median_ms(r)
                if ms is None:
                    lines.append(f"| {r['label']} | {_cell(r)} | | | | "
                                 f"{_md((r.get('message') or '')[:120])} |")
                    continue
                stats = harness.summarize(r["samples_ms"])
                vs_default = fmt_ratio(ratio_to(r, default)) if default else ""
                vs_base = fmt_ratio(ratio_to(r, base)) if base and r is not base else ""
                lines.append(f"| {r['label']} | {fmt_thr(throughput(r, ms), metric)} | "
                             f"{fmt_us(ms)} | {fmt_us(stats['p10'])}-{fmt_us(stats['p90'])} | "
                             f"{vs_default} | {vs_base} |")
            lines.append("")
    return lines


# ---------------------------------------------------------------------------------------------
# Generated sections
# ---------------------------------------------------------------------------------------------
def section_evidence(evidence: Evidence) -> str:
    if not evidence.files:
        return (f"{NO_GPU}: `benchmarks/results/` holds no benchmark, check, bug-zoo or bad-call "
                "file yet. Every table below is generated from those files by `python3 -m "
                "benchmarks report`; none is typed by hand.")
    lines = ["| file | kind | device | GPU | date | commit | torch | Triton |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for f in sorted(evidence.files, key=lambda f: f.when):
        h = f.header
        kind = f.kind if f.kind != "benchmark" else f"benchmark ({h.get('mode')}, {h.get('scale')})"
        commit = commit_text(h)
        lines.append(f"| `{f.name}` | {kind} | {h.get('device')} | {h.get('gpu') or ''} | "
                     f"{h.get('date')} | {commit} | {h.get('torch')} | {h.get('triton')} |")
    for bad in evidence.unreadable:
        lines.append(f"\nUnreadable: {bad}")
    return "\n".join(lines)


def _gpus_text(headers) -> str:
    """ " (GPU)" for a heading: every GPU the files ran on, in the order first met (a machine
    kind may lend more than one model; the evidence table names each file's)."""
    gpus = list(dict.fromkeys(h["gpu"] for h in headers if h.get("gpu")))
    if not gpus:
        return ""
    return f" ({gpus[0]})" if len(gpus) == 1 else f" ({' and '.join(gpus)}: each file's in the table above)"


def section_checks(evidence: Evidence) -> str:
    runs = latest_checks(evidence)
    if not runs:
        return (f"{NO_GPU}, and no saved check run: save `python -m checks run --impl references "
                "--json benchmarks/results/checks-<device>-<date>.json` on the GPU and on the CPU "
                "interpreter.")
    lines = []
    if "cuda" not in runs:
        lines += [f"{NO_GPU}: no check run on a GPU is saved.", ""]
    outcomes = ("PASS", "FAIL", "TODO", "UNAVAILABLE")
    for device, by_workshop in runs.items():
        files = list({f.name: f for f in by_workshop.values()}.values())
        results = [r for w, f in by_workshop.items() for r in f.data.get("results", [])
                   if r["workshop"] == w]
        lines += [f"### Checks on {device}" + _gpus_text(f.header for f in files), ""]
        for f in files:
            h = f.header
            covered = ", ".join(w for w, g in by_workshop.items() if g is f)
            lines.append(f"- `{f.name}` ({covered}): implementation {h.get('impl')}, seed "
                         f"{h.get('seed')}, {h.get('date')}, commit {commit_text(h)}, torch "
                         f"{h.get('torch')}, Triton {h.get('triton')}.")
        lines += ["", "| tier | " + " | ".join(outcomes) + " | total |",
                  "| --- |" + " --- |" * (len(outcomes) + 1)]
        for tier in ("cpu", "kernel", "cuda"):
            n = [sum(1 for r in results if r["tier"] == tier and r["outcome"] == o)
                 for o in outcomes]
            if sum(n):
                lines.append(f"| {tier} | " + " | ".join(map(str, n)) + f" | {sum(n)} |")
        lines += ["", "| workshop | " + " | ".join(outcomes) + " | total |",
                  "| --- |" + " --- |" * (len(outcomes) + 1)]
        for workshop in dict.fromkeys(r["workshop"] for r in results):
            n = [sum(1 for r in results if r["workshop"] == workshop and r["outcome"] == o)
                 for o in outcomes]
            lines.append(f"| {workshop} | " + " | ".join(map(str, n)) + f" | {sum(n)} |")
        failing = [r for r in results if r["outcome"] == "FAIL"]
        lines.append("")
        if failing:
            lines.append(f"{len(failing)} FAIL row(s):")
            for r in failing[:20]:
                first = (r.get("message") or "").splitlines()[:1]
                lines.append(f"- {r['workshop']}/{r['check']} [{_case_label(r['case'])}]: "
                             f"{_md(first[0][:200]) if first else ''}")
            lines.append("")
        cuda_only = list(dict.fromkeys(f"{r['workshop']}/{r['check']} ({r['outcome']})"
                                       for r in results if r["tier"] == "cuda"))
        if cuda_only:
            lines += ["Checks that need a real GPU (cuda tier): " + ", ".join(cuda_only) + ".", ""]
    return "\n".join(lines).rstrip()


def _md(text: str) -> str:
    """Text safe inside a markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|").replace("`", "'")


def _case_label(case: dict) -> str:
    return " ".join(f"{k}={harness._fmt(v)}" for k, v in case.items() if k != "seed")


def section_bad_calls(evidence: Evidence) -> str:
    runs = latest_rows(evidence, "badcalls")
    if not runs:
        return ("No bad-call evidence yet: `python3 -m benchmarks badcalls --device <device> "
                "--out benchmarks/results/badcalls-<device>.json` counts the bad calls each check "
                "tries.")
    lines = []
    for device, parts in runs.items():
        several = len({f.name for f, _ in parts}) > 1
        lines += [f"### Bad calls on {device}" + _gpus_text(f.header for f, _ in parts), "",
                  _files_line(parts) + ".", "",
                  "| workshop | check | tier | bad calls tried | refused before any launch | "
                  "outcome |" + (" file |" if several else ""),
                  "| --- | --- | --- | --- | --- | --- |" + (" --- |" if several else "")]
        total = refused = 0
        for f, rows in parts:
            for row in rows:
                outcome = ", ".join(f"{n} {o}" for o, n in row.get("outcomes", {}).items())
                lines.append(f"| {row['workshop']} | {row['check']} | {row.get('tier', '')} | "
                             f"{row['calls']} | {row['refused']} | {outcome} |"
                             + (f" `{f.name}` |" if several else ""))
                total += row["calls"]
                refused += row["refused"]
        lines += [f"| all | | | {total} | {refused} | |" + (" |" if several else ""), ""]
    return "\n".join(lines).rstrip()


def section_bug_zoo(evidence: Evidence) -> str:
    runs = latest_rows(evidence, "bugzoo")
    if not runs:
        return ("No bug-zoo evidence yet: `python3 -m benchmarks bugzoo --device <device> --out "
                "benchmarks/results/bugzoo-<device>.json` plants every bug of tests/bugs/ and "
                "runs the check that must catch it.")
    lines = []
    for device, parts in runs.items():
        bugs = [b for _, rows in parts for b in rows]
        several = len({f.name for f, _ in parts}) > 1
        lines += [f"### Bug zoo on {device}" + _gpus_text(f.header for f, _ in parts), "",
                  f"{_files_line(parts)}: {sum(b['caught'] for b in bugs)} of {len(bugs)} "
                  "planted bugs caught by the named check with the named hint.", "",
                  "| workshop | planted | caught | missed |" + (" file |" if several else ""),
                  "| --- | --- | --- | --- |" + (" --- |" if several else "")]
        for f, mine in parts:
            # outcome None: the check gave no result (timed out, or the mutant would not plant)
            missed = ", ".join(f"{b['bug']} ({b['check']}: "
                               f"{b['outcome'] or 'no result, ' + (b.get('message') or '?')[:80]})"
                               for b in mine if not b["caught"])
            planted = _planted_text(mine[0]["workshop"], device, len(mine), f.header)
            lines.append(f"| {mine[0]['workshop']} | {planted} | "
                         f"{sum(b['caught'] for b in mine)} | {missed} |"
                         + (f" `{f.name}` |" if several else ""))
        lines.append("")
    return "\n".join(lines).rstrip()


def _planted_text(workshop: str, device: str, tried: int, header: dict) -> str:
    """How many bugs the file tried, and how many tests/bugs/ plants now where that differs
    (an older run, or one stopped early: a run stopped by a time limit keeps the bugs it
    finished and says `complete: false`)."""
    from benchmarks.evidence import planted, runs_on

    bugs = planted(workshop)
    now = sum(1 for b in bugs if runs_on(b, device)) if bugs else tried
    notes = []
    if now != tried:
        notes.append(f"of {now} planted now")
    if not header.get("complete", True):
        notes.append("INCOMPLETE run (stopped early)")
    return f"{tried}" + (f" ({'; '.join(notes)})" if notes else "")


def section_benchmarks(evidence: Evidence) -> str:
    workshops = bench_workshops()
    lines = ["How to read these tables: every variant's output was compared with a float64 "
             "reference on that exact shape before it was timed (a variant that failed shows "
             "FAILED gate and has no time). `events` timing: CUDA events around each call, the "
             "L2 cache flushed (256 MiB written) before every sample. `graph` timing: a CUDA "
             "graph of back-to-back calls replayed, no flush between calls (inputs smaller than "
             "the L2 may hit it). Ratios are throughput ratios measured in the same run: "
             "`ours / X` above 1.00x means ours is faster. `ours / copy ceiling` divides by the "
             "device-to-device copy bandwidth measured at the start of the same run.", ""]
    if not any(bench_runs(evidence, m, w)[0] for m in MODES for w in workshops):
        lines.append(f"{NO_GPU}: no benchmark run is saved under `benchmarks/results/`.")
        return "\n".join(lines)
    for workshop in workshops:
        lines += workshop_section(workshop, evidence)
    return "\n".join(lines).rstrip()


def _glance_cell(res: dict, threshold: float) -> str:
    """One goal in one timing mode, for the summary: value and verdict, stalls flagged."""
    if res["status"] == "not measured":
        return "not measured"
    value = "" if res["worst"] is None else fmt_goal_value(res["worst"], threshold) + " "
    verdict = "met" if res["status"] == "met" else "**not met**"
    if res["detail"].startswith("worst case timed with stalls"):
        verdict += " (worst case timed with stalls"
        if res["steady_worst"] is not None:
            verdict += f"; {fmt_goal_value(res['steady_worst'], threshold)} without them"
        verdict += ")"
    elif res["detail"]:
        verdict += f" ({res['detail']})"
    return value + verdict


def section_goals(evidence: Evidence) -> str:
    """Every speed goal of every workshop in one table: the worst value in each timing mode."""
    lines = ["Every speed goal set by the workshops' issues, with the worst matching problem's "
             "value in each timing mode (the benchmark tables below name that problem and give "
             "every other one). The self-review at the end explains every goal not met.", "",
             "| workshop | goal | needed | graph | events |", "| --- | --- | --- | --- | --- |"]
    rows = 0
    for workshop in bench_workshops():
        goals = getattr(workshop_module(workshop), "GOALS", [])
        runs = {mode: bench_runs(evidence, mode, workshop) for mode in MODES}
        for goal in goals:
            cells = {}
            for mode, (f, records) in runs.items():
                cells[mode] = ("not measured" if f is None else
                               _glance_cell(evaluate_goal(goal, records, ceiling_of(f.header)[0]),
                                            goal.threshold))
            lines.append(f"| {workshop} | {goal.text} | {goal.threshold:g} | {cells['graph']} | "
                         f"{cells['events']} |")
            rows += 1
    if not rows:
        return "No workshop sets a speed goal."
    return "\n".join(lines)


def section_sweeps(evidence: Evidence) -> str:
    lines = []
    for workshop in bench_workshops():
        lines += sweep_section(workshop, evidence)
    if not lines:
        return (f"{NO_GPU}: no configuration sweep is saved (`python3 -m benchmarks run --sweep`). "
                "Launch defaults are the references' own starting points until one is.")
    return "\n".join(lines).rstrip()


GENERATORS = {"goals": section_goals, "evidence": section_evidence, "checks": section_checks,
              "bad-calls": section_bad_calls, "bug-zoo": section_bug_zoo,
              "benchmarks": section_benchmarks, "sweeps": section_sweeps}


def generate(results_dir: Path | str | None = None) -> dict[str, str]:
    """The text of every generated section, from the files in `results_dir` only."""
    evidence = load_evidence(results_dir)
    return {name: GENERATORS[name](evidence) for name in SECTIONS}


# ---------------------------------------------------------------------------------------------
# validation_report.md: generated sections between markers, the rest written by hand
# ---------------------------------------------------------------------------------------------
def begin_marker(name: str) -> str:
    return f"<!-- BEGIN GENERATED: {name} (python3 -m benchmarks report; do not edit) -->"


def end_marker(name: str) -> str:
    return f"<!-- END GENERATED: {name} -->"


_BLOCK = re.compile(r"<!-- BEGIN GENERATED: (?P<name>[\w-]+) [^>]*-->\n(?P<body>.*?)\n"
                    r"<!-- END GENERATED: (?P=name) -->", re.S)


def read_sections(text: str) -> dict[str, str]:
    return {m["name"]: m["body"] for m in _BLOCK.finditer(text)}


def replace_sections(text: str, sections: dict[str, str]) -> str:
    missing = [name for name in sections if name not in read_sections(text)]
    if missing:
        raise ValueError(f"validation_report.md lacks the markers of section(s) {missing}; "
                         f"restore them (see benchmarks/README.md)")

    def swap(m):
        return f"{begin_marker(m['name'])}\n{sections.get(m['name'], m['body'])}\n" \
               f"{end_marker(m['name'])}"

    return _BLOCK.sub(swap, text)


def skeleton(sections: dict[str, str]) -> str:
    """A fresh validation_report.md: generated sections, and the self-review to write."""
    def block(name):
        return f"{begin_marker(name)}\n{sections[name]}\n{end_marker(name)}"

    return f"""# Validation report

What was measured, on which machine, from which files; and what we make of it. Everything
between `BEGIN GENERATED` and `END GENERATED` markers is produced by `python3 -m benchmarks
report` from the files in `benchmarks/results/` (a CI test fails when it differs from what the
files give, and warns when a source file changed after its evidence was recorded). The
self-review at the end is written by hand.

## Goals at a glance

{block("goals")}

## Evidence files

{block("evidence")}

## Checks

Counts per tier and outcome from the latest saved check run on each device.

{block("checks")}

## Bad calls

How many bad calls each check tries (wrong rank, dtype, shape, knobs, device), and how many were
refused with a TypeError/ValueError before any kernel launched.

{block("bad-calls")}

## Planted bugs (the bug zoo)

{block("bug-zoo")}

## Benchmarks

{block("benchmarks")}

## Configuration sweeps

{block("sweeps")}

## Self-review (written by hand)

<!-- The lead writes this part after reading the generated sections above. -->

### Where we lose, and why

_To be written from the measured tables above: every goal marked **not met**, with the
measured value, and what limits it._

### What was not measured

_Hardware counters are not inferred: only what was timed and counted. List what was not timed
(e.g. shapes, dtypes, backward passes) and what ran only under the interpreter._

### Checks that run only on a GPU

_See the cuda-tier list in the Checks section; say what each proves and what the CPU
interpreter cannot._

### Limitations of the evidence

_Timing method (events with an L2 flush, graph replays without), sample counts, one GPU, one
day; staleness notices printed by `python3 -m benchmarks report`._
"""


def write_report(sections: dict[str, str], path: Path = REPORT_PATH) -> None:
    if path.is_file():
        text = replace_sections(path.read_text(), sections)
    else:
        text = skeleton(sections)
    path.write_text(text)


# ---------------------------------------------------------------------------------------------
# Staleness: has a source changed since its latest GPU evidence was recorded?
# ---------------------------------------------------------------------------------------------
def stale_notices(evidence: Evidence, root: Path = REPO_ROOT) -> list[str]:
    """One line per source file whose sha256 differs from the one recorded with the latest GPU
    evidence of each kind that names it (benchmark runs, check runs, bad calls and planted bugs
    on cuda, each kind on its own: fresh benchmarks do not vouch for checks that ran on an
    older reference).

    A file whose code is unchanged, only its comments, docstrings or layout (the measured text
    is taken from git at the evidence's commit and must hash to the recorded sha256), gets a
    NOTE instead of a STALE line: the evidence still describes what runs."""
    latest: dict[tuple, tuple] = {}  # (kind, source path) -> (when, sha, file name, commit)
    for f in evidence.files:
        if f.header.get("device") != "cuda":
            continue
        for path, sha in (f.header.get("sources") or {}).items():
            key = (f.kind, path)
            if key not in latest or f.when > latest[key][0]:
                latest[key] = (f.when, sha, f.name, f.header.get("git_commit"))
    notices = []
    for (kind, path), (_, sha, name, commit) in sorted(latest.items(), key=lambda kv: kv[0][::-1]):
        current = root / path
        if not current.is_file():
            notices.append(f"STALE: {path} (named by {name}) no longer exists")
        elif provenance.sha256(current) == sha:
            continue
        elif _same_code(_measured_text(root, path, sha, commit), current.read_text()):
            notices.append(f"NOTE: {path} differs from its latest GPU {kind} evidence ({name}) "
                           f"only in comments, docstrings or layout; the evidence stands")
        else:
            notices.append(f"STALE: {path} changed since its latest GPU {kind} evidence "
                           f"({name}); rerun the GPU validation to refresh it")
    return notices


def _measured_text(root: Path, path: str, sha: str, commit: str | None) -> str | None:
    """`path` as the evidence measured it: its text at `commit`, if that text has the recorded
    sha256 (a run on a tree with uncommitted edits has none to offer: None)."""
    if not commit:
        return None
    try:
        blob = subprocess.run(["git", "-C", str(root), "show", f"{commit}:{path}"],
                              capture_output=True, check=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return blob.decode() if hashlib.sha256(blob).hexdigest() == sha else None


def _same_code(old: str | None, new: str) -> bool:
    """Do two Python sources define the same program? Their syntax trees are compared without
    docstrings; comments and layout never reach the tree."""
    def code(source: str) -> str | None:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            return None
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                first = node.body[0] if node.body else None
                if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                        and isinstance(first.value.value, str)):
                    node.body = node.body[1:] or [ast.Pass()]
        return ast.dump(tree)

    if old is None:
        return False
    old_code = code(old)
    return old_code is not None and old_code == code(new)


# ---------------------------------------------------------------------------------------------
# Figures (matplotlib, only here)
# ---------------------------------------------------------------------------------------------
def figure_names() -> list[str]:
    """Every figure `report` may write: book/figures/<workshop>_<plot name>_<mode>.png."""
    return [f"{w}_{plot.name}_{mode}.png" for w in bench_workshops()
            for plot in getattr(workshop_module(w), "PLOTS", []) for mode in MODES]


def write_figures(evidence: Evidence, folder: Path = FIGURES_DIR) -> list[Path]:
    """Draw every declared plot from the latest run of each timing mode that has its data.

    A figure without data is not drawn, and an old copy of it is removed, so the book's results
    page never shows a figure the saved evidence no longer supports (with no figure at all, the
    page says "no GPU evidence yet")."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    for workshop in bench_workshops():
        for mode in MODES:
            f, records = bench_runs(evidence, mode, workshop)
            for plot in getattr(workshop_module(workshop), "PLOTS", []):
                path = folder / f"{workshop}_{plot.name}_{mode}.png"
                subset = [r for r in records if r["experiment"] == plot.experiment
                          and plot.where(r["params"]) and median_ms(r) is not None]
                caption = path.with_suffix(".txt")  # read by tools/build_book.py
                if f is None or not subset:
                    path.unlink(missing_ok=True)
                    caption.unlink(missing_ok=True)
                    continue
                folder.mkdir(parents=True, exist_ok=True)
                fig = _draw(plt, plot, subset, f)
                fig.savefig(path, dpi=110, metadata={"Software": None})
                plt.close(fig)
                caption.write_text(_caption(plot, f) + "\n")
                written.append(path)
    return written


def _caption(plot, f: EvidenceFile) -> str:
    h = f.header
    how = ("CUDA events, L2 flushed before each sample" if h.get("mode") == "events" else
           "CUDA-graph replay of back-to-back calls")
    return (f"{plot.title or plot.name}. Medians of {(h.get('plan') or {}).get('samples')} "
            f"samples per point ({how}) on {h.get('gpu') or h.get('device')}, {h.get('date')}, "
            f"from benchmarks/results/{f.name}; every point passed the float64 correctness "
            "gate first.")


_STYLE = {harness.OURS: dict(linestyle="-", marker="o", linewidth=2.2),
          harness.BASELINE: dict(linestyle="--", marker="s", linewidth=1.4),
          harness.CEILING: dict(linestyle=":", marker="^", linewidth=1.4)}


_HATCH = {harness.BASELINE: "//", harness.CEILING: ".."}


def _draw(plt, plot, records: list[dict], f: EvidenceFile):
    panels = list(dict.fromkeys(tuple(r["params"].get(k) for k in plot.panels) for r in records))
    cols = min(len(panels), 3)
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.8 * rows), squeeze=False)
    metric = records[0]["metric"]
    ceiling = ceiling_of(f.header)[0]
    xs_all = list(dict.fromkeys(r["params"][plot.x] for r in records))
    numeric = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in xs_all)
    for ax, panel in zip(axes.flat, panels, strict=False):  # spare axes stay empty
        mine = [r for r in records if tuple(r["params"].get(k) for k in plot.panels) == panel]
        series = list(dict.fromkeys((r["label"], r["role"], tuple(r["params"].get(k)
                                                                  for k in plot.series))
                                    for r in mine))
        width = 0.8 / max(len(series), 1)  # bars, when x is categorical (GEMM shapes)
        for i, (label, role, extra) in enumerate(series):
            points = []
            for r in mine:
                if r["label"] != label or tuple(r["params"].get(k) for k in plot.series) != extra:
                    continue
                ms = median_ms(r)
                if ms is not None:
                    x = r["params"][plot.x] if numeric else xs_all.index(r["params"][plot.x])
                    points.append((x, throughput(r, ms, own_bytes=role == harness.CEILING)))
            if not points:
                continue
            points.sort()
            name = label + "".join(f", {k}={v}" for k, v in zip(plot.series, extra, strict=True))
            if numeric:
                ax.plot([p[0] for p in points], [p[1] for p in points], label=name,
                        **_STYLE.get(role, {}))
            else:
                ax.bar([p[0] - 0.4 + width * (i + 0.5) for p in points], [p[1] for p in points],
                       width=width, label=name, hatch=_HATCH.get(role, ""), edgecolor="white")
        if metric == "bandwidth" and ceiling:
            ax.axhline(ceiling, color="#cf222e", linewidth=1, label=f"copy ceiling {ceiling:.2f}")
        if numeric:
            ax.set_xscale("log", base=2)
            ax.set_xticks(sorted(xs_all))
            ax.set_xticklabels([str(x) for x in sorted(xs_all)], rotation=45)
        else:
            ax.set_xticks(range(len(xs_all)))
            ax.set_xticklabels([str(x) for x in xs_all], rotation=30, ha="right")
        ax.set_xlabel(plot.x)
        ax.set_ylabel(unit(metric))
        ax.set_ylim(bottom=0)
        ax.set_title(", ".join(f"{k}={v}" for k, v in zip(plot.panels, panel, strict=True)),
                     fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    gpu = f.header.get("gpu") or ""
    fig.suptitle(f"{plot.title or plot.name} ({gpu}, {f.header.get('mode')} timing, medians)",
                 fontsize=11)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------
def main(results_dir: str | None = None, figures: bool = True,
         report_path: Path = REPORT_PATH) -> int:
    evidence = load_evidence(results_dir)
    sections = {name: GENERATORS[name](evidence) for name in SECTIONS}
    try:
        write_report(sections, report_path)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {report_path.name} ({len(evidence.files)} evidence file(s))")
    if figures:
        try:
            written = write_figures(evidence)
        except ImportError:
            print("matplotlib is not installed: figures skipped (pip install matplotlib)",
                  file=sys.stderr)
        else:
            print(f"wrote {len(written)} figure(s) in {FIGURES_DIR.relative_to(REPO_ROOT)}/"
                  + ("" if written else " (no GPU evidence yet: none drawn)"))
    for notice in stale_notices(evidence):
        print(notice, file=sys.stderr)
    return 0
