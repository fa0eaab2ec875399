"""The diagnostic tools in tools/ that edit or compare references keep working as the
references change (on the CPU: the GPU parts only run on a lent GPU)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from tests.helpers import ROOT


def test_ab_reference_gates_both_copies_under_the_interpreter(tmp_path):
    # The "before" copy is a folder of references, as `git archive ... | tar -x` leaves it.
    before = tmp_path / "before"
    shutil.copytree(ROOT / "references", before, ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    env["CUDA_VISIBLE_DEVICES"] = ""  # the interpreter, even on a machine with a GPU
    result = subprocess.run([sys.executable, "tools/ab_reference.py", "split_softmax",
                             str(before)], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = [line for line in result.stdout.splitlines() if "ours/before" in line]
    assert lines, result.stdout
    # A provider that failed its gate prints an indented "name: status: message" line.
    assert not [line for line in result.stdout.splitlines() if line.startswith("  ")], \
        result.stdout


def test_stream_k_probe_edits_still_match_the_reference():
    from tools import probe_gemm_tiles

    text = (ROOT / "references" / "fused_gemm.py").read_text()
    for name, edits in probe_gemm_tiles._PARTS.items():
        for old, _ in edits:
            assert text.count(old) == 1, (name, old)


def test_gpu_validation_shards_a_workshops_checks_and_merges_them(tmp_path):
    """CHECK_SHARDS=2: two check processes with one seed, one merged evidence file (run here
    under the interpreter through CHECKS_DEVICE; the lent GPU runs the same script on cuda)."""
    from tests.helpers import load_json

    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    env = dict(os.environ, CHECKS_DEVICE="interpreter", CHECK_SHARDS="2",
               WORKSHOPS="foundations online_normalization", WORKSHOP_GIT_COMMIT=commit,
               LOGS_DIR=str(tmp_path / "logs"), PARTS_DIR=str(tmp_path / "parts"),
               PATH=f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}")
    env.pop("TRITON_INTERPRET", None)
    done = subprocess.run(["bash", "tools/gpu_validation.sh", str(tmp_path / "out"), "t", "checks"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    merged = load_json(tmp_path / "out" / "checks-interpreter-foundations-t.json")
    assert merged["header"]["shards"] == 2 and "shard" not in merged["header"]
    outcomes = {(c["tier"], c["outcome"]) for c in merged["counts"]}
    assert outcomes == {("kernel", "PASS"), ("cuda", "UNAVAILABLE")}
    assert sorted(os.listdir(tmp_path / "out")) == ["checks-interpreter-foundations-t.json"]
