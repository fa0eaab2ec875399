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
