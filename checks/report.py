"""Showing results: a terminal table, counts per tier and outcome, HTML for notebooks, JSON."""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from checks.core import OUTCOMES, TIERS, Result
from checks.runner import Run

_SYMBOL = {"PASS": "PASS", "FAIL": "FAIL", "TODO": "TODO", "UNAVAILABLE": "UNAVAILABLE"}
_COLOUR = {"PASS": "#1a7f37", "FAIL": "#cf222e", "TODO": "#9a6700", "UNAVAILABLE": "#57606a"}


def text_table(run: Run, *, verbose: bool = False) -> str:
    lines = [f"implementation: {run.header['impl']}   device: {run.header['device']}   "
             f"seed: {run.header['seed']}"]
    width = max([len(f"{r.workshop}/{r.check}") for r in run.results] + [10])
    # Folded rows (see fold_rows) unless verbose, which keeps one row per case with every
    # detail; the JSON file (--json) always has every case.
    for row in fold_rows(run.results, verbose=verbose):
        r = row.result
        line = f"{r.outcome:<11} {r.tier:<6} {r.workshop + '/' + r.check:<{width}}  {row.label}"
        lines.append(line.rstrip())
        if r.outcome != "PASS" or verbose:
            for text in r.message.splitlines() if r.message else []:
                lines.append(f"{'':18}{text}")
            if r.hint:
                lines.append(f"{'':18}hint: {r.hint}")
        for note in row.notes:
            lines.append(f"{'':18}note: {note}")
        if row.more:
            lines += _wrap(row.more_line(), first=f"{'':18}", rest=f"{'':22}")
    lines.append("")
    lines.append(counts_table(run))
    return "\n".join(lines)


def _wrap(text: str, first: str, rest: str, width: int = 110) -> list[str]:
    """`text` in lines of at most `width` characters, broken after "; " or ": " (between case
    labels, which contain spaces themselves) where it can be."""
    pieces = re.split(r"(?<=; )|(?<=: )", text)
    lines, line = [], first
    for piece in pieces:
        if len(line) + len(piece.rstrip()) > width and line.strip():
            lines.append(line.rstrip())
            line = rest
        line += piece
    lines.append(line.rstrip())
    return lines


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


def html_table(results: list[Result], header: dict | None = None, *,
               verbose: bool = False) -> str:
    """The table a notebook check cell shows (inline styles only: it must render offline), its
    rows folded as in the terminal (fold_rows) unless `verbose`."""
    cell = "padding:2px 8px;border-bottom:1px solid #d0d7de;text-align:left;vertical-align:top"
    out = ['<table style="border-collapse:collapse;font-size:90%">',
           f'<tr><th style="{cell}">outcome</th><th style="{cell}">check</th>'
           f'<th style="{cell}">case</th><th style="{cell}">details</th></tr>']
    for row in fold_rows(results, verbose=verbose):
        r = row.result
        details = html.escape(r.message).replace("\n", "<br>") if r.outcome != "PASS" or verbose else ""
        if r.hint:
            details += f"<br><b>hint:</b> {html.escape(r.hint)}"
        for note in row.notes:
            details += f"<br><i>note:</i> {html.escape(note)}"
        if row.more:
            details += f"<br>{html.escape(row.more_line())}"
        colour = _COLOUR[r.outcome]
        out.append(f'<tr><td style="{cell};color:{colour};font-weight:bold">{r.outcome}</td>'
                   f'<td style="{cell}"><code>{html.escape(r.check)}</code> ({r.tier})</td>'
                   f'<td style="{cell}">{html.escape(row.label)}</td>'
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


@dataclass
class Row:
    """One row of a table: `result` shown in full, standing for `cases` cases of its check (all
    with its outcome), plus `more`: later FAIL cases of the same check with the same hint, named
    on one line under it instead of repeating the hint."""

    result: Result
    cases: int = 1
    label: str = ""
    notes: list[str] = field(default_factory=list)
    more: list[Result] = field(default_factory=list)

    def more_line(self) -> str:
        r = self.result
        if not r.hint:
            same = "the same message"
        elif all(m.hint == r.hint for m in self.more):
            same = "the same hint"
        else:  # a hint that quotes the case's sizes or errors
            same = "the same hint (up to its numbers)"
        return (f"... and {len(self.more)} more FAIL case{'s' if len(self.more) > 1 else ''} of "
                f"{r.check} with {same}: {_short_labels(r, self.more)}")


def fold_rows(results: list[Result], *, verbose: bool = False) -> list[Row]:
    """The rows of a table. `verbose`: one row per case. Otherwise, within one check, PASS rows
    become one row ("21 cases"), and so do TODO, UNAVAILABLE or could-not-import rows that say
    the same thing, up to the next FAIL row (so a table still shows which cases came before a
    FAIL and which after); a FAIL is never hidden, but the later FAILs of a check with the same
    hint (its numbers aside: a hint may quote the case's sizes) or, with no hint, the same
    message are listed by case on one line under the first, which is shown in full.

    TODO rows do not end a run of PASS rows: a check whose cases are gated one by one (a case
    runs only when the exercise regions it needs are filled) interleaves the two."""
    if verbose:
        return [Row(r, 1, r.case_label, list(r.notes)) for r in results]
    kept: list[Row] = []
    first_fail: dict[tuple, Row] = {}
    since_fail: list[Row] = []  # the check's rows since its last FAIL row: where others fold
    for r in results:
        if r.outcome == "FAIL" and not _import_failure(r):
            key = (r.workshop, r.check, "hint", _NUMBER.sub("#", r.hint)) if r.hint else \
                  (r.workshop, r.check, "message", r.message)
            if key in first_fail:
                first_fail[key].more.append(r)
                continue
            first_fail[key] = row = Row(r, 1, r.case_label)
            kept.append(row)
            since_fail = []
            continue
        if since_fail and (since_fail[0].result.workshop, since_fail[0].result.check) != \
                (r.workshop, r.check):
            since_fail = []
        same = next((row for row in since_fail if _same_fold(row.result, r)), None)
        if same is not None:
            same.cases += _stands_for(r)
            same.notes += r.notes
            continue
        row = Row(r, _stands_for(r), r.case_label, list(r.notes))
        kept.append(row)
        since_fail.append(row)
    for row in kept:
        if row.cases > 1 or _stands_for(row.result) > 1:
            row.label = f"{row.cases} cases"
        row.notes = _count_notes(row.notes, row.cases)
    return kept


def _same_fold(last: Result, r: Result) -> bool:
    """Whether `r` folds into the row of `last`: one check, one outcome; a PASS folds whatever
    its (hidden) message, the others only when they say the same thing."""
    if (last.workshop, last.check, last.outcome) != (r.workshop, r.check, r.outcome):
        return False
    if r.outcome == "PASS":
        return True
    if r.outcome in ("TODO", "UNAVAILABLE") or _import_failure(r):
        return (last.message, last.hint) == (r.message, r.hint)
    return False


_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?")  # "3", "-1e+31", "0.271"
_STANDS_FOR = re.compile(r"\((\d+) cases on a GPU; this row stands for all\)")


def _stands_for(r: Result) -> int:
    """How many cases a row stands for: off the GPU a cuda-tier check runs (and reports) one
    case for all of them, and its message says how many (checks/runner.py)."""
    found = _STANDS_FOR.search(r.message) if r.outcome in ("UNAVAILABLE", "TODO") else None
    return int(found.group(1)) if found else 1


def _count_notes(notes: list[str], cases: int) -> list[str]:
    """Each distinct note once; on a folded row, with how many of its cases it came from."""
    counts: dict[str, int] = {}
    for note in notes:
        counts[note] = counts.get(note, 0) + 1
    if cases == 1:
        return list(counts)
    return [f"{note} ({n} of {cases} cases)" for note, n in counts.items()]


def _short_labels(first: Result, more: list[Result], limit: int = 400) -> str:
    """The case labels of `more`, short: without the seed and without the parameters that all
    of them share with `first`; cut after about `limit` characters (-v lists every case)."""
    cases = [{k: v for k, v in r.case.items() if k != "seed"} for r in [first, *more]]
    shared = {k for k in cases[0] if all(k in c and c[k] == cases[0][k] for c in cases)}
    labels = []
    for case in cases[1:]:
        varying = {k: v for k, v in case.items() if k not in shared} or case
        labels.append(" ".join(f"{k}={_format(v)}" for k, v in varying.items()))
    text = ""
    for i, label in enumerate(labels):
        piece = label if not text else f"; {label}"
        if text and len(text) + len(piece) > limit:
            return f"{text}; ... (+{len(labels) - i} more; -v shows every case)"
        text += piece
    return text


def _format(value) -> str:
    if isinstance(value, (list, tuple)) and all(isinstance(v, int) for v in value):
        return "x".join(str(v) for v in value)
    return str(value)


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
