"""Evidence the validation report counts that the check JSON does not hold by itself.

    python3 -m benchmarks bugzoo [ids] --device cuda --out benchmarks/results/bugzoo-cuda.json
    python3 -m benchmarks badcalls [ids] --device cuda --out benchmarks/results/badcalls-cuda.json

bugzoo: every planted bug of tests/bugs/<id>.py (on a GPU; under the interpreter all but the
`gpu_only` ones) is written into a copy of the references and the check that must catch it runs
against the mutant: on a GPU in a fresh process per bug (a
bug that corrupts GPU memory cannot poison the next one), under the interpreter in this process.
Caught = that check FAILs with a hint containing the bug's hint (the rule of
tests/test_bug_zoo.py). The run stops at the first such FAIL (`--stop-at-hint`): later cases
cannot change the verdict, and on a GPU each of them compiles the mutant's kernels afresh.

badcalls: the checks that call `ctx.expect_error` run against the references with a counter
around `expect_error`, so the report can say how many bad calls each check tries and how many
were refused as the contract asks (TypeError/ValueError naming the argument, before any launch).

Formats: see benchmarks/README.md. Both files carry the provenance header of checks/provenance.py.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks.harness import fix_git_commit
from checks import catalog, loader, provenance

REPO_ROOT = Path(__file__).resolve().parent.parent
SEED = 1234  # fixed, so a rerun tries the same inputs


def zoo_seed() -> int:
    """The zoo's seed: SEED, or BUGZOO_SEED (the CI zoo gives a fresh one each run)."""
    return int(os.environ.get("BUGZOO_SEED") or SEED)
BUG_TIMEOUT_S = 300  # one planted bug's check run on a GPU (a hung mutant must not stop the zoo)
_TIMED_OUT = "the check run did not finish within"


def main(command: str, workshops: list[str], device: str, out: str) -> int:
    from checks import device as devices
    from checks.device import DeviceError

    try:
        chosen = devices.select(device)
    except DeviceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    workshops = workshops or list(catalog.WORKSHOP_IDS)
    payload = (bugzoo(workshops, chosen, out) if command == "bugzoo"
               else badcalls(workshops, chosen))
    _write(out, payload)
    print(f"wrote {out}")
    return 0


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Planted bugs
# ---------------------------------------------------------------------------------------------
def bugzoo(workshops: list[str], device: str, out: str | None = None) -> dict:
    """Plant and try every bug (BUGZOO_BUGS="name,name" or BUGZOO_SHARD=i/n limits a run to
    some of them; `python3 -m benchmarks merge-zoo` joins such parts). With `out`,
    the file is rewritten after every bug with `complete: false`, so a run stopped by a time
    limit keeps the bugs it finished (the report counts the rows a file holds)."""
    from tests.bugs import plant

    wanted = {n for n in os.environ.get("BUGZOO_BUGS", "").split(",") if n}
    shard = _shard(os.environ.get("BUGZOO_SHARD", ""))
    rows, sources = [], []
    sources += provenance.SHARED_CHECK_SOURCES
    for workshop in workshops:
        if not planted(workshop):
            continue
        # The reference and every sibling it imports (bugs are planted in those too), the checks
        # that must catch them and the bugs themselves.
        sources += [REPO_ROOT / "tests" / "bugs" / f"{workshop}.py",
                    *loader.source_files(workshop, loader.resolve("references")),
                    REPO_ROOT / "checks" / f"{workshop}.py"]
        # On a GPU each bug runs in its own process: up to BUGZOO_JOBS of them side by side
        # (correctness runs: sharing the GPU changes nothing but the wall time).
        jobs = int(os.environ.get("BUGZOO_JOBS", "1")) if device == "cuda" else 1
        # A gpu_only bug sits in code only a GPU runs: the interpreter's zoo leaves it out;
        # an interpreter_only one sits in code only the interpreter runs in its check (a read
        # past the end only its bounds check sees, say).
        bugs = [b for b in planted(workshop)
                if runs_on(b, device) and (not wanted or b.name in wanted)]
        if shard:  # every n-th bug from the i-th: n commands of one workshop, merged after
            bugs = bugs[shard[0]::shard[1]]
        with ThreadPoolExecutor(max_workers=max(jobs, 1)) as pool:
            tried = pool.map(lambda bug: _try_bug(workshop, bug, device, plant), bugs)
            for bug, row in zip(bugs, tried, strict=True):
                rows.append(row)
                verdict = "caught" if row["caught"] else "MISSED"
                if row["message"].startswith(_TIMED_OUT):  # not a verdict on the checks
                    verdict = "TIMEOUT"
                _log(f"{verdict}  {workshop}/{bug.name} ({bug.check})")
                if out:
                    _write(out, _zoo_payload(device, sources, rows, complete=False))
    return _zoo_payload(device, sources, rows, complete=True)


def _shard(text: str) -> tuple[int, int] | None:
    """BUGZOO_SHARD="i/n" -> (i, n); empty -> None."""
    if not text:
        return None
    try:
        i, n = (int(v) for v in text.split("/"))
    except ValueError:
        raise SystemExit(f"BUGZOO_SHARD wants i/n, like 0/2; got {text!r}") from None
    if not 0 <= i < n:
        raise SystemExit(f"BUGZOO_SHARD wants 0 <= i < n; got {text!r}")
    return i, n


def merge_zoo(parts: list[dict]) -> dict:
    """One bug-zoo file from several of one device, commit and seed holding disjoint bugs (a
    workshop's bugs over several commands, or several workshops' files), as one run of all of
    them would have written it: workshops in book order, each one's bugs in tests/bugs/ order.
    Raises ValueError when they do not belong together."""
    if not parts:
        raise ValueError("nothing to merge")
    first = parts[0]["header"]
    sources = {}
    for part in parts:
        h = part["header"]
        for key in ("kind", "device", "git_commit", "seed"):
            if h.get(key) != first.get(key):
                raise ValueError(f"the parts differ in {key!r}: {first.get(key)!r} and "
                                 f"{h.get(key)!r}; only runs of one commit, seed and device "
                                 "merge")
        for path, digest in (h.get("sources") or {}).items():
            if sources.setdefault(path, digest) != digest:
                raise ValueError(f"the parts recorded {path} with different contents")
    rows = {}
    for part in parts:
        for row in part["bugs"]:
            mine = rows.setdefault(row["workshop"], {})
            if row["bug"] in mine:
                raise ValueError(f"{row['workshop']}/{row['bug']} is in more than one part")
            mine[row["bug"]] = row
    merged = []
    for workshop in sorted(rows, key=lambda w: (catalog.WORKSHOP_IDS + (w,)).index(w)):
        place = {b.name: i for i, b in enumerate(planted(workshop))}
        merged += sorted(rows[workshop].values(), key=lambda r: place.get(r["bug"], len(place)))
    device = first.get("device") or "cuda"
    header = dict(first, sources=sources)
    header["date"] = max(p["header"].get("date", "") for p in parts)
    # Complete when every part finished, or when the parts together hold every bug their
    # workshops plant for this device (a part stopped early, then the rest run on its own).
    covered = all({b.name for b in planted(w) if runs_on(b, device)} <= set(rows[w])
                  for w in rows)
    header["complete"] = covered or all(p["header"].get("complete", True) for p in parts)
    header["merged_from"] = [{"date": p["header"].get("date"), "bugs": len(p["bugs"]),
                              "complete": p["header"].get("complete", True)} for p in parts]
    return {"header": header, "bugs": merged}


def merge_zoo_cli(out: str, names: list[str]) -> int:
    try:
        merged = merge_zoo([json.loads(Path(n).read_text()) for n in names])
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    _write(out, merged)
    bugs = merged["bugs"]
    print(f"merged {len(names)} parts: {sum(b['caught'] for b in bugs)} of {len(bugs)} caught "
          f"-> {out}")
    return 0


def planted(workshop: str) -> list:
    """The workshop's planted bugs (tests/bugs/<workshop>.py), none if it has no such file."""
    try:
        return list(importlib.import_module(f"tests.bugs.{workshop}").BUGS)
    except ModuleNotFoundError:
        return []


def runs_on(bug, device: str) -> bool:
    """Whether the zoo on `device` (cuda or interpreter) tries this bug."""
    return not (bug.interpreter_only if device == "cuda" else bug.gpu_only)


def _zoo_payload(device, sources, rows, complete):
    header = provenance.header(device, "references + planted bugs",
                               list(dict.fromkeys(p for p in sources if p.is_file())))
    header = fix_git_commit(header)
    header.update(kind="bugzoo", seed=zoo_seed(), complete=complete)
    return {"header": header, "bugs": rows}


def _write(out: str, payload: dict) -> None:
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(payload, indent=1, default=str) + "\n")


def _try_bug(workshop, bug, device, plant) -> dict:
    row = {"workshop": workshop, "bug": bug.name, "check": bug.check, "hint": bug.hint,
           "caught": False, "outcome": None, "got_hint": "", "message": ""}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            mutant = plant(workshop, bug, Path(tmp) / "impl")
        except AssertionError as exc:  # the bug's `find` no longer matches the reference
            row["message"] = f"could not plant: {exc}"
            return row
        if device == "cuda":
            results, error = _run_fresh_process(workshop, mutant, bug, device, Path(tmp))
        else:
            results, error = _run_here(workshop, mutant, bug, device)
    if error:
        row["message"] = error
        return row
    results = [r for r in results if r["check"] == bug.check]
    failing = [r for r in results if r["outcome"] == "FAIL"]
    hinted = [r for r in failing if bug.hint in (r.get("hint") or "")]
    chosen = (hinted or failing or results or [{}])[0]
    row.update(caught=bool(hinted), outcome=chosen.get("outcome"), got_hint=chosen.get("hint", ""),
               message=((chosen.get("message") or "").splitlines() or [""])[0][:300])
    if not results:
        row["message"] = f"check {bug.check!r} did not run (renamed?)"
    return row


def _run_here(workshop, mutant, bug, device):
    """Under the interpreter: in this process (out-of-bounds accesses raise cleanly there)."""
    from checks import runner

    the_run = runner.run([workshop], impl=str(mutant), device=device, seed=zoo_seed(), only=bug.check,
                         stop_at_hint=bug.hint)
    return [r.to_json() for r in the_run.results], ""


def _run_fresh_process(workshop, mutant, bug, device, tmp):
    """On a GPU: a fresh process per mutant, so a bug that faults cannot poison the next run."""
    out = tmp / "run.json"
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "checks", "run", workshop, "--impl", str(mutant),
             "--device", device, "--only", bug.check, "--stop-at-hint", bug.hint,
             "--seed", str(zoo_seed()), "--json", str(out)],
            cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=BUG_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return [], f"{_TIMED_OUT} {BUG_TIMEOUT_S} s"
    if not out.is_file():
        return [], f"no results (exit {done.returncode}): {done.stderr[-500:]}"
    return json.loads(out.read_text())["results"], ""


# ---------------------------------------------------------------------------------------------
# Bad calls
# ---------------------------------------------------------------------------------------------
def badcalls(workshops: list[str], device: str) -> dict:
    """Run every check that calls ctx.expect_error, counting the calls and the refusals."""
    from checks import core, loader, runner
    from checks.context import CheckContext
    from checks.core import CheckFailed

    counts: dict[str, dict] = {}
    current: list[str] = [""]  # the check running now (set by the wrappers below)
    original = CheckContext.expect_error

    def counted(self, fn, *args, **kwargs):
        entry = counts.setdefault(current[0], {"calls": 0, "refused": 0, "what": []})
        entry["calls"] += 1
        entry["what"].append(kwargs.get("what") or getattr(fn, "__name__", "call"))
        try:
            original(self, fn, *args, **kwargs)
        except CheckFailed:
            raise
        entry["refused"] += 1

    def tag(fn, key):
        def tagged(ctx, impl, case):
            current[0] = key
            return fn(ctx, impl, case)
        return tagged

    rows = []
    implementation = loader.resolve("references")
    CheckContext.expect_error = counted
    try:
        for workshop in workshops:
            everything = core.checks_for(workshop)
            chosen = [c for c in everything if "expect_error" in _source(c.fn)]
            if not chosen:
                continue
            saved = [(c, c.fn) for c in chosen]
            # Run only the chosen checks: the registry holds just them for this one run.
            core._REGISTRY[workshop] = chosen
            for c in chosen:
                c.fn = tag(c.fn, f"{workshop}/{c.id}")
            try:
                the_run = runner.run([workshop], impl="references", device=device, seed=SEED)
            finally:
                core._REGISTRY[workshop] = everything
                for c, fn in saved:
                    c.fn = fn
            for c in chosen:
                key = f"{workshop}/{c.id}"
                outcomes = [r.outcome for r in the_run.results if r.check == c.id]
                entry = counts.get(key, {"calls": 0, "refused": 0, "what": []})
                rows.append({"workshop": workshop, "check": c.id, "tier": c.tier,
                             "cases": len(outcomes),
                             "outcomes": {o: outcomes.count(o) for o in sorted(set(outcomes))},
                             **entry})
                _log(f"{key}: {entry['calls']} bad calls tried, {entry['refused']} refused, "
                     f"outcomes {rows[-1]['outcomes']}")
    finally:
        CheckContext.expect_error = original
    files = [p for w in workshops for p in loader.source_files(w, implementation) if p.is_file()]
    files += [REPO_ROOT / "checks" / f"{w}.py" for w in workshops
              if (REPO_ROOT / "checks" / f"{w}.py").is_file()]
    files += provenance.SHARED_CHECK_SOURCES
    header = provenance.header(device, "references", list(dict.fromkeys(files)))
    header = fix_git_commit(header)
    header.update(kind="badcalls", seed=SEED)
    return {"header": header, "checks": rows}


def _source(fn) -> str:
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return ""
