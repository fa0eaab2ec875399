"""Showing results: a terminal table, counts per tier and outcome, HTML for notebooks, JSON."""

from __future__ import annotations

import html
import json
from pathlib import Path

from checks.core import OUTCOMES, TIERS, Result
from checks.runner import Run

_SYMBOL = {"PASS": "PASS", "FAIL": "FAIL", "TODO": "TODO", "UNAVAILABLE": "UNAVAILABLE"}
_COLOUR = {"PASS": "#1a7f37", "FAIL": "#cf222e", "TODO": "#9a6700", "UNAVAILABLE": "#57606a"}


def text_table(run: Run, *, verbose: bool = False) -> str:
    lines = [f"implementation: {run.header['impl']}   device: {run.header['device']}   "
             f"seed: {run.header['seed']}"]
    width = max([len(f"{r.workshop}/{r.check}") for r in run.results] + [10])
    # One row per case, except what _collapse_repeated folds (unless verbose): an untouched
    # starter's TODO, or a file that does not import, is said once per check, not per case.
    rows = [(r, 1) for r in run.results] if verbose else _collapse_repeated(run.results)
    for r, cases in rows:
        label = r.case_label if cases == 1 else f"{cases} cases"
        line = f"{r.outcome:<11} {r.tier:<6} {r.workshop + '/' + r.check:<{width}}  {label}"
        lines.append(line.rstrip())
        if r.outcome != "PASS" or verbose:
            for text in r.message.splitlines() if r.message else []:
                lines.append(f"{'':18}{text}")
            if r.hint:
                lines.append(f"{'':18}hint: {r.hint}")
        for note in r.notes:
            lines.append(f"{'':18}note: {note}")
    lines.append("")
    lines.append(counts_table(run))
    return "\n".join(lines)


def counts_table(run: Run) -> str:
    counts = run.counts()
    header = f"{'tier':<8}" + "".join(f"{o:>13}" for o in OUTCOMES) + f"{'total':>8}"
    rows = [header]
    for tier in TIERS:
        n = [counts.get((tier, o), 0) for o in OUTCOMES]
        if sum(n):
            rows.append(f"{tier:<8}" + "".join(f"{x:>13}" for x in n) + f"{sum(n):>8}")
    totals = [sum(counts.get((t, o), 0) for t in TIERS) for o in OUTCOMES]
    rows.append(f"{'all':<8}" + "".join(f"{x:>13}" for x in totals) + f"{sum(totals):>8}")
    return "\n".join(rows)


def html_table(results: list[Result], header: dict | None = None) -> str:
    """The table a notebook check cell shows (inline styles only: it must render offline)."""
    cell = "padding:2px 8px;border-bottom:1px solid #d0d7de;text-align:left;vertical-align:top"
    out = ['<table style="border-collapse:collapse;font-size:90%">',
           f'<tr><th style="{cell}">outcome</th><th style="{cell}">check</th>'
           f'<th style="{cell}">case</th><th style="{cell}">details</th></tr>']
    for r, cases in _collapse_repeated(results):
        details = html.escape(r.message).replace("\n", "<br>")
        if r.hint:
            details += f"<br><b>hint:</b> {html.escape(r.hint)}"
        for note in r.notes:
            details += f"<br><i>note:</i> {html.escape(note)}"
        colour = _COLOUR[r.outcome]
        out.append(f'<tr><td style="{cell};color:{colour};font-weight:bold">{r.outcome}</td>'
                   f'<td style="{cell}"><code>{html.escape(r.check)}</code> ({r.tier})</td>'
                   f'<td style="{cell}">{html.escape(r.case_label) if cases == 1 else f"{cases} cases"}</td>'
                   f'<td style="{cell}">{details}</td></tr>')
    out.append("</table>")
    counts: dict[str, int] = {}
    for r in results:
        counts[r.outcome] = counts.get(r.outcome, 0) + 1
    summary = ", ".join(f"{counts[o]} {o}" for o in OUTCOMES if counts.get(o))
    where = f" on {header['device']}" if header else ""
    out.append(f"<p><b>{summary}</b>{html.escape(where)}</p>")
    return "\n".join(out)


def merge_shards(paths: list[str | Path], out: str | Path) -> dict:
    """Join the JSON files of one run's shards (`checks run --shard i/n`, one seed) into the
    file the whole run would have written: results in the run's order, counts recomputed.
    Refuses parts that are not the n shards of one run."""
    parts = [json.loads(Path(p).read_text()) for p in paths]
    if not parts:
        raise ValueError("no shard files given")
    first = parts[0]["header"]
    n = int(first.get("shard", "0/1").split("/")[1])
    shards = sorted(p["header"].get("shard", "") for p in parts)
    if shards != [f"{i}/{n}" for i in range(n)]:
        raise ValueError(f"expected the shards 0/{n} .. {n - 1}/{n} of one run, got {shards}")
    for p in parts[1:]:
        for key in ("seed", "device", "impl", "git_commit", "sources"):
            if p["header"].get(key) != first.get(key):
                raise ValueError(f"shards differ in {key}: {p['header'].get(key)!r} against "
                                 f"{first.get(key)!r}")
    rows = sorted((place, result) for p in parts for place, result in
                  zip(p["order"], p["results"], strict=True))
    header = {k: v for k, v in first.items() if k != "shard"}
    header["date"] = min(p["header"]["date"] for p in parts)
    header["shards"] = n
    if any(p["header"].get("incomplete") for p in parts):
        header["incomplete"] = True
    counts: dict[tuple[str, str], int] = {}
    for _, r in rows:
        counts[(r["tier"], r["outcome"])] = counts.get((r["tier"], r["outcome"]), 0) + 1
    payload = {"header": header, "results": [r for _, r in rows], "counts": _counts_json(counts)}
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(payload, indent=1, default=str) + "\n")
    return payload


def _collapse_repeated(results: list[Result]) -> list[tuple[Result, int]]:
    """(result, number of cases) rows: the rows of one check that say the same thing for a
    reason that has nothing to do with the case become one row: TODO (the same open TODO
    lines), so an untouched starter does not print one row per case, and a module that does
    not import (the same error on every case). Every other outcome keeps a row per case."""
    rows: list[tuple[Result, int]] = []
    for r in results:
        if rows and (r.outcome == "TODO" or _import_failure(r)):
            last, n = rows[-1]
            if ((last.outcome, last.workshop, last.check, last.message, last.hint)
                    == (r.outcome, r.workshop, r.check, r.message, r.hint)):
                rows[-1] = (last, n + 1)
                continue
        rows.append((r, 1))
    return rows


def _import_failure(r: Result) -> bool:
    return r.outcome == "FAIL" and r.message.startswith("could not import ")


def _counts_json(counts: dict[tuple[str, str], int]) -> list[dict]:
    return [{"tier": t, "outcome": o, "count": n} for (t, o), n in sorted(counts.items())]


def write_json(run: Run, path: str | Path) -> None:
    """One header plus one record per result (the evidence format: see benchmarks/README.md).
    A shard of a run (`--shard`) also keeps each result's place in the whole run, `order`."""
    payload = {"header": run.header, "results": [r.to_json() for r in run.results],
               "counts": _counts_json(run.counts())}
    if "shard" in run.header:
        payload["order"] = run.order
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(payload, indent=1, default=str) + "\n")
