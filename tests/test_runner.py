"""The runner survives learner code: every misbehaviour is a FAIL that says what happened.

Fake implementations of the foundations API (plain torch, no Triton needed) each misbehave in
one way; the runner must name it, keep going, and never crash.
"""

from __future__ import annotations

import textwrap

import pytest

from tests.helpers import ROOT, load_json, run_checks, run_python

GOOD_ADD = """
def add(x, y, *, block=1024):
    if not isinstance(y, torch.Tensor): raise TypeError("y must be a tensor")
    if y.layout != torch.strided: raise TypeError("y must be a dense tensor")
    if y.shape != x.shape: raise ValueError("y shape")
    if y.dtype != x.dtype: raise TypeError("y dtype")
    if not (x.is_contiguous() and y.is_contiguous()): raise ValueError("x and y must be contiguous")
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32): raise TypeError("x dtype")
    if block & (block - 1): raise ValueError("block must be a power of two")
    return (x.float() + y.float()).to(x.dtype)
"""

SOFTMAX_BODIES = {
    "raises": "raise RuntimeError('boom in learner code')",
    "wrong_shape": "return torch.softmax(x.float(), -1).to(x.dtype)[:, :1]",
    "returns_input": "return x",
    "nan": "return torch.full_like(x, float('nan'))",
    "writes_input": "x.mul_(0.5); return torch.softmax(x.float(), -1).to(x.dtype)",
    "wrong_dtype": "return torch.softmax(x.float(), -1)",
    "hangs": "while True: pass",
    "not_a_tensor": "return torch.softmax(x.float(), -1).tolist()",
}

EXPECTED_MESSAGE = {
    "raises": "RuntimeError: boom in learner code",
    "wrong_shape": "returned shape",
    "returns_input": "returned one of its inputs",
    "nan": "NaN",
    "writes_input": "wrote into its input",
    "wrong_dtype": "returned dtype",
    "hangs": "did not finish within",
    "not_a_tensor": "returned list",
}


def _fake(tmp_path, body: str):
    source = "import torch\n" + GOOD_ADD + textwrap.dedent(f"""
        def row_softmax(x, *, num_warps=None):
            if not isinstance(x, torch.Tensor) or x.dim() != 2:
                raise ValueError(f"x must be 2-D, got {{getattr(x, 'shape', x)}}")
            if x.dtype not in (torch.float16, torch.bfloat16, torch.float32):
                raise TypeError(f"x must be float16, bfloat16 or float32, got dtype {{x.dtype}}")
            if x.layout != torch.strided:
                raise TypeError("x must be a dense tensor")
            if x.is_neg():
                raise ValueError("x is a negated view: pass x.resolve_neg()")
            if not x.is_contiguous():
                raise ValueError("x must be contiguous")
            if num_warps is not None and (num_warps < 1 or num_warps > 32 or num_warps & (num_warps - 1)):
                raise ValueError(f"num_warps must be a power of two in [1, 32], got {{num_warps}}")
            {body}
        """)
    path = tmp_path / "my_foundations.py"
    path.write_text(source)
    return path


@pytest.mark.parametrize("behaviour", sorted(SOFTMAX_BODIES))
def test_misbehaving_learner_code_is_a_named_fail(tmp_path, behaviour):
    path = _fake(tmp_path, SOFTMAX_BODIES[behaviour])
    out = tmp_path / "out.json"
    # The extreme-values check has 4 cases: enough to see every behaviour, few enough that a
    # hang costs 4 time limits.
    done = run_checks("run", "foundations", "--impl", str(path), "--only", "row_softmax.extreme",
                      "--json", str(out), env={"CHECKS_TIMEOUT": "2"})
    assert done.returncode == 1, done.stdout + done.stderr  # FAIL -> non-zero exit
    assert "Traceback" not in done.stderr
    failed = [r for r in load_json(out)["results"] if r["outcome"] == "FAIL"]
    assert failed, "no FAIL"
    assert EXPECTED_MESSAGE[behaviour] in failed[0]["message"], failed[0]["message"]


def test_correct_fake_passes_and_other_checks_keep_running(tmp_path):
    path = _fake(tmp_path, "return torch.softmax(x.float(), -1).to(x.dtype)")
    out = tmp_path / "out.json"
    done = run_checks("run", "foundations", "--impl", str(path), "--json", str(out))
    results = load_json(out)["results"]
    outcomes = {r["check"]: r["outcome"] for r in results}
    assert outcomes["row_softmax.values"] == "PASS"
    assert outcomes["add.values"] == "PASS"
    assert done.returncode == 0, done.stdout


def test_module_that_does_not_import_is_a_fail_not_a_crash(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("def add(x, y:\n    pass\n")
    done = run_checks("run", "foundations", "--impl", str(path), "--only", "add.values")
    assert done.returncode == 1
    assert "could not import" in done.stdout and "SyntaxError" in done.stdout


def test_own_file_without_its_helpers_names_the_file_to_copy(tmp_path):
    # A reference copied alone: its `from ._validate import ...` finds no sibling.
    (tmp_path / "foundations.py").write_text((ROOT / "references" / "foundations.py").read_text())
    done = run_checks("run", "foundations", "--impl", str(tmp_path / "foundations.py"),
                      "--only", "add.values")
    assert done.returncode == 1
    assert "copy kernels/_validate.py next to it" in done.stdout, done.stdout
    assert "_impl_" not in done.stdout  # not the made-up package name Python would print


def test_missing_name_in_a_helper_names_the_folder_not_the_made_up_package(tmp_path):
    for name in ("_validate.py", "_gpu.py"):
        (tmp_path / name).write_text((ROOT / "references" / name).read_text())
    source = (ROOT / "references" / "foundations.py").read_text()
    source = source.replace("from ._validate import ", "from ._validate import no_such_helper, ", 1)
    (tmp_path / "foundations.py").write_text(source)
    done = run_checks("run", "foundations", "--impl", str(tmp_path), "--only", "add.values")
    assert done.returncode == 1
    assert "cannot import name 'no_such_helper'" in done.stdout, done.stdout
    assert "_impl_" not in done.stdout


def test_notebook_load_of_a_broken_file_says_why_without_a_traceback(tmp_path):
    # The lesson's pattern: `mod = lab.load(...)`, then cells that use `mod` or ask `lab.ready`.
    # A file that does not import must neither raise a traceback through our loader nor leave
    # the later cells to fail with NameError.
    path = tmp_path / "foundations.py"
    path.write_text("def add(x, y:\n    pass\n")
    done = run_python(textwrap.dedent(f"""
        from checks import notebook as lab
        mod = lab.load("foundations", {str(path)!r})
        try:
            mod.add
        except lab.NotLoaded as exc:
            print("RENDERED", exc._render_traceback_())
        print("READY", lab.ready("foundations", {str(path)!r}, "add"))
    """))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert f"NotLoaded: {path} does not import: SyntaxError" in done.stdout, done.stdout
    assert ":1)" in done.stdout  # the line of the learner's file
    assert "Not ready yet, this part is skipped" in done.stdout and "READY False" in done.stdout


def test_json_record_has_the_contract_fields(tmp_path):
    out = tmp_path / "refs.json"
    done = run_checks("run", "foundations", "--impl", "references", "--only", "row_softmax.extreme",
                      "--json", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    payload = load_json(out)
    header = payload["header"]
    for key in ("date", "device", "impl", "sources", "torch", "triton", "numpy", "git_commit", "seed"):
        assert key in header
    assert any(k.endswith("references/foundations.py") for k in header["sources"])
    assert any(k.endswith("checks/foundations.py") for k in header["sources"])
    # and the machinery every check runs on (a change there stales GPU evidence too)
    for shared in ("checks/context.py", "checks/compare.py", "checks/tail_guard.py"):
        assert any(k.endswith(shared) for k in header["sources"]), shared
    for record in payload["results"]:
        for key in ("workshop", "check", "case", "tier", "device", "outcome", "message", "hint",
                    "max_error", "tolerance", "seconds"):
            assert key in record
        assert record["device"] == "interpreter"
    assert payload["counts"]


def test_table_shows_counts_per_tier_and_outcome():
    done = run_checks("run", "foundations", "--impl", "references", "--only", "bad_calls")
    assert done.returncode == 0
    assert "tier" in done.stdout and "PASS" in done.stdout and "kernel" in done.stdout


def test_cuda_device_on_a_cpu_machine_is_a_clear_error():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    done = run_checks("run", "foundations", "--device", "cuda")
    assert done.returncode == 2
    assert "no CUDA GPU" in done.stderr and "Traceback" not in done.stderr


def test_cuda_tier_is_unavailable_with_a_reason_on_the_interpreter():
    done = run_checks("run", "foundations", "--impl", "references", "--only", "cuda.stream",
                      "--device", "interpreter")
    assert done.returncode == 0
    assert "UNAVAILABLE" in done.stdout and "needs a CUDA GPU" in done.stdout


def test_device_cannot_switch_after_kernels_are_imported():
    code = ("import os; os.environ['TRITON_INTERPRET'] = '0'\n"
            "import references.foundations\n"
            "from checks import device\n"
            "try:\n    device.select('interpreter')\n"
            "except device.DeviceError as e:\n    print('REFUSED', e)\n")
    done = run_python(code, timeout=120)
    assert "REFUSED" in done.stdout and "Restart" in done.stdout, done.stdout + done.stderr


def test_error_inside_a_kernel_points_at_the_kernel_line(tmp_path):
    """A typo inside a @triton.jit kernel: the FAIL names the error and the kernel's own line
    (Triton's interpreter re-raises it from the launch; the runner follows the cause)."""
    from tests.bugs import Bug, plant

    typo = Bug("typo", find="mask = offsets < n_elements", replace="mask = offsets < n_elementz",
               check="add.values", hint="")
    mutant = plant("foundations", typo, tmp_path / "impl")
    line = next(i for i, text in enumerate(mutant.read_text().splitlines(), 1) if "n_elementz" in text)
    out = tmp_path / "out.json"
    done = run_checks("run", "foundations", "--impl", str(mutant), "--only", "add.values",
                      "--device", "interpreter", "--json", str(out))
    assert done.returncode == 1
    message = load_json(out)["results"][0]["message"]
    assert "NameError" in message and f"foundations.py:{line})" in message, message


def test_kernel_modules_run_under_the_interpreter_without_the_checks():
    """Triton 3.6's interpreter fails on range() over a runtime integer with numpy >= 2.3
    (references/_interpreter.py). A script that imports a kernel module under
    TRITON_INTERPRET=1 and calls it, without the notebooks or the checks, must still work: the
    package applies the workaround on import. Split softmax's stage kernels loop over chunks
    with a runtime bound, so they meet the bug."""
    code = ("import torch\n"
            "from references import split_softmax as ss\n"
            "x = torch.randn(3, 5000)\n"
            "y = ss.split_softmax(x, chunk=1024)\n"
            "err = (y.double() - torch.softmax(x.double(), -1)).abs().max().item()\n"
            "print('OK' if err < 1e-5 else f'WRONG {err}')\n")
    done = run_python(code, env={"TRITON_INTERPRET": "1"})
    assert done.stdout.strip() == "OK", done.stdout + done.stderr


def test_interpreted_kernels_do_not_warn_but_numpy_outside_them_still_does():
    """Under the interpreter a kernel's operations are NumPy's: log2(0) = -inf (a row of -inf
    logits) would print a RuntimeWarning into the learner's check cell, where a GPU computes it
    silently. Only the kernel launch is quieted: plain NumPy code, such as online
    normalization's under the checks' strict mode, must still raise on overflow."""
    code = ("import warnings\n"
            "from checks import device\n"
            "device.select('interpreter')\n"
            "import numpy as np, torch, triton, triton.language as tl\n"
            "from checks.online_normalization import strict\n"
            "@triton.jit\n"
            "def log2_kernel(x_ptr, y_ptr, N: tl.constexpr):\n"
            "    offs = tl.arange(0, N)\n"
            "    tl.store(y_ptr + offs, tl.log2(tl.load(x_ptr + offs)))\n"
            "x = torch.zeros(16); y = torch.empty(16)\n"
            "warnings.simplefilter('error')\n"
            "log2_kernel[(1,)](x, y, N=16)\n"
            "assert torch.isneginf(y).all()\n"
            "try:\n"
            "    with strict():\n"
            "        np.exp(np.float64(1000.0))\n"
            "    print('NUMPY QUIET')\n"
            "except FloatingPointError:\n"
            "    print('OK')\n")
    done = run_python(code, env={"TRITON_INTERPRET": ""})
    assert done.stdout.strip() == "OK", done.stdout + done.stderr


def test_attention_tail_hint_needs_a_tail_beyond_the_first_row_block():
    """The "tail not masked" hint must not blame masking when N fits in one row block, and
    names the mask only for NaN or Inf confined to the last row block under a causal mask
    (wrong finite values there have other causes: it gets the symptom, not a cause)."""
    import torch

    from checks.streaming_attention import _tail_rows_hint

    def hint(block_m, n, wrong_rows, *, causal=True, value=float("nan")):
        got = torch.zeros(n, 4)
        got[wrong_rows] = value
        bad = torch.zeros(n, 4, dtype=torch.bool)
        bad[wrong_rows] = True
        return _tail_rows_hint(block_m, n, causal)(got, got, bad)

    assert hint(128, 17, [3]) is None  # one partial block: no tail to blame
    assert hint(128, 100, [99]) is None
    assert hint(128, 200, [130, 199]).startswith("tail not masked")
    assert hint(128, 200, [5, 130]) is None  # a full block is wrong too
    assert hint(64, 256, [255]) is None  # N a multiple of block_m: no partial block
    finite = hint(128, 200, [130, 199], value=0.5)  # wrong but finite: the symptom only
    assert finite.startswith("only the rows of the last (partial) row block are wrong")
    assert not hint(128, 200, [130], causal=False).startswith("tail not masked")


def _result(check, outcome, n, message="", hint="", **case):
    from checks.core import Result

    return Result("w", check, {"n": n, **case, "seed": 1000 + n}, "kernel", "interpreter",
                  outcome, message, hint)


def _text_table(rows, verbose=False):
    from checks.report import text_table
    from checks.runner import Run

    run = Run(header={"impl": "kernels", "device": "interpreter", "seed": 1}, results=rows)
    return text_table(run, verbose=verbose)


def test_check_table_folds_todo_and_import_failures_per_check():
    """An untouched starter shows one TODO row per check, not one per case, and so does a module
    that does not import; -v shows every case."""
    from checks.report import html_table

    todo = "fill in kernels/x.py:10 TODO(f)"
    rows = [_result("a", "TODO", n, todo) for n in range(5)] + [_result("b", "TODO", 1, todo),
            _result("b", "TODO", 2, "fill in kernels/x.py:20 TODO(g)")]
    rows += [_result("c", "FAIL", n, "wrong") for n in range(3)]
    # A module that does not import fails every case alike: one row per check.
    rows += [_result("d", "FAIL", n, "could not import x.py for w: SyntaxError") for n in range(4)]
    table = html_table(rows)
    # header, a once, b twice (two messages), c once (+ a line naming the 2 others), d once
    assert table.count("<tr>") == 1 + 1 + 2 + 1 + 1
    assert "5 cases" in table and "4 cases" in table and "<b>7 FAIL, 7 TODO</b>" in table
    assert "... and 2 more FAIL cases of c with the same message: n=1; n=2" in table

    # The command line's table folds the same rows (and shows every case with --verbose).
    text = _text_table(rows)
    assert text.count("could not import") == 1 and "4 cases" in text and "5 cases" in text
    assert text.count("wrong") == 1  # the first FAIL's message; the line under it names the others
    verbose = _text_table(rows, verbose=True)
    assert verbose.count("could not import") == 4 and verbose.count("wrong") == 3
    assert "cases" not in verbose.split("\n\ntier")[0]


def test_check_table_folds_pass_rows_and_keeps_every_fail():
    rows = [_result("w.values", "PASS", n, dtype="float16") for n in range(21)]
    rows[3].notes = ["bf16 widened"]
    rows += [_result("w.other", "PASS", 7)]
    text = _text_table(rows)
    body = text.split("\n\ntier")[0].splitlines()[1:]
    assert len(body) == 3, text  # 21 rows -> one, its note once, the single PASS with its case
    assert body[0].split() == ["PASS", "kernel", "w/w.values", "21", "cases"]
    assert "note: bf16 widened (1 of 21 cases)" in body[1]
    assert body[2].endswith("n=7 seed=1007")
    verbose = _text_table(rows, verbose=True)
    assert verbose.count("PASS        kernel w/w.values") == 21
    assert text.split("\n\ntier")[1].splitlines()[-1].split()[-1] == "22"  # totals: every case

    # FAILs are never folded into a count: the first of a hint in full, the others by case.
    hint = "tail not masked: load with mask=offs < n"
    fails = [_result("w.values", "FAIL", n, f"max error {n}", hint, shape=(4, n), dtype="float16")
             for n in range(30, 113)]
    mixed = [_result("w.values", "PASS", 1), *fails[:2], _result("w.values", "PASS", 2),
             *fails[2:], _result("w.values", "FAIL", 9, "raised IndexError")]
    text = _text_table(mixed)
    assert text.count("hint: " + hint) == 1 and "max error 30" in text and "max error 31" not in text
    assert "... and 82 more FAIL cases of w.values with the same hint: n=31 shape=4x31; " in text
    assert "-v shows every case" in text  # 82 labels are cut short; -v lists them
    assert "raised IndexError" in text  # another FAIL: its own row
    assert text.count("PASS        kernel w/w.values") == 2  # before and after the first FAIL
    assert max(len(line) for line in text.splitlines()) <= 110  # the case list wraps
    verbose = _text_table(mixed, verbose=True)
    assert verbose.count("hint: " + hint) == 83 and "more FAIL" not in verbose

    # A hint that quotes the case's sizes is the same hint, up to its numbers; other words are not.
    quoting = [_result("w.values", "FAIL", n, "wrong", f"tail not masked: {n} lanes past {n + 1}")
               for n in (3, 5)] + [_result("w.values", "FAIL", 7, "wrong", "program id not used")]
    text = _text_table(quoting)
    assert "... and 1 more FAIL case of w.values with the same hint (up to its numbers): n=5" in text
    assert "hint: program id not used" in text and "tail not masked: 5 lanes" not in text

    # The notebook's table folds alike, and unfolds with verbose.
    from checks.report import html_table

    assert html_table(mixed).count("<tr>") == 1 + 4 and "82 more FAIL cases" in html_table(mixed)
    assert html_table(mixed, verbose=True).count("<tr>") == 1 + len(mixed)


def test_interleaved_pass_and_todo_cases_fold_into_one_row_each():
    """Cases gated one by one (a case runs once the regions it needs are written) interleave
    PASS and TODO within a check: each outcome is one row, up to the check's next FAIL."""
    path_b = "this case runs path B's two-pass walk: exercise not filled yet: k.py:9 TODO(s)"
    rows = [_result("w.paths", "PASS" if n % 2 else "TODO", n, "" if n % 2 else path_b)
            for n in range(10)]
    text = _text_table(rows)
    body = text.split("\n\ntier")[0].splitlines()[1:]
    assert [line.split()[0] for line in body if line.split()[0] in ("PASS", "TODO")] == \
        ["TODO", "PASS"], text
    assert text.count("5 cases") == 2 and text.count("path B's two-pass walk") == 1
    # A FAIL between them still splits the PASS rows: which passed before it, which after.
    rows.insert(5, _result("w.paths", "FAIL", 99, "wrong", "tail not masked"))
    folded = _text_table(rows).split("\n\ntier")[0]
    assert folded.count("PASS        kernel w/w.paths") == 2
    assert folded.count("TODO        kernel w/w.paths") == 2


def test_cuda_row_off_the_gpu_says_how_many_cases_it_stands_for():
    message = ("needs a CUDA GPU; this run uses the Triton CPU interpreter (6 cases on a GPU; "
               "this row stands for all)")
    row = _result("cuda.big", "UNAVAILABLE", 1, message)
    text = _text_table([row])
    assert "w/cuda.big  6 cases" in text and "seed=" not in text.split("\n\ntier")[0]


def test_progress_is_one_line_on_a_terminal_and_a_line_per_case_elsewhere():
    import io

    from checks.__main__ import _Progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    rows = [_result("a", "PASS", n) for n in range(3)]
    piped = io.StringIO()
    progress = _Progress(piped)
    for r in rows:
        progress(r)
    progress.clear()
    assert piped.getvalue().count("\n") == 3 and "\r" not in piped.getvalue()
    terminal = Terminal()
    progress = _Progress(terminal)
    for r in rows:
        progress(r)
    progress.clear()
    shown = terminal.getvalue()
    assert "\n" not in shown and shown.count("\r") == 4 and shown.endswith("\r\x1b[K")
    assert "[3] PASS" in shown


def test_notebook_try_cells_skip_unfinished_exercises_and_explain_finished_ones(capsys):
    """lab.ready lists the open TODO lines in file order; lab.explain names the learner's line."""
    import re

    from checks import notebook as lab

    assert lab.ready("softmax_backward", "kernels", "softmax_backward") is False
    printed = capsys.readouterr().out
    assert printed.startswith("Not ready yet")
    lines = [int(n) for n in re.findall(r"softmax_backward\.py:(\d+) TODO", printed)]
    assert len(lines) > 1 and lines == sorted(lines)  # numeric order: 95 before 109
    assert lab.ready("softmax_backward", "references", "softmax_backward") is True
    assert capsys.readouterr().out == ""
    try:
        int("not a number")
    except ValueError as exc:
        lab.explain(exc)
    printed = capsys.readouterr().out
    assert printed.startswith("Your code raised ValueError") and "test_runner.py" in printed


def test_error_inside_a_jit_helper_names_the_original_exception(tmp_path):
    """Triton's interpreter wraps an error once per @triton.jit level; the FAIL names the
    original (NameError), not InterpreterError("InterpreterError(...)")."""
    from tests.bugs import Bug, plant

    typo = Bug("typo", find="x = tl.where(i_ok, x, 0.0)", replace="x = tl.where(i_okk, x, 0.0)",
               check="forward.ragged", hint="")
    mutant = plant("strided_softmax", typo, tmp_path / "impl")
    out = tmp_path / "out.json"
    done = run_checks("run", "strided_softmax", "--impl", str(mutant), "--only", "forward.ragged",
                      "--device", "interpreter", "--json", str(out))
    assert done.returncode == 1
    message = load_json(out)["results"][0]["message"]
    assert "raised NameError" in message and "InterpreterError" not in message, message


def test_block_shapes_that_do_not_broadcast_get_a_hint_that_says_so(tmp_path):
    """A reduction over the wrong axis makes a vector of the other block dimension, which
    Triton refuses to combine with the running state: the hint names that, not just "the
    kernel failed"."""
    from tests.bugs import Bug, plant

    axis = Bug("axis", find="m_new = tl.maximum(m, tl.max(x, axis=0))",
               replace="m_new = tl.maximum(m, tl.max(x, axis=1))", check="forward.paths",
               hint="")
    mutant = plant("strided_softmax", axis, tmp_path / "impl")
    out = tmp_path / "out.json"
    done = run_checks("run", "strided_softmax", "--impl", str(mutant), "--only", "forward.paths",
                      "--device", "interpreter", "--json", str(out), "--stop-at-hint",
                      "block shapes do not broadcast")
    assert done.returncode == 1
    hints = [r["hint"] for r in load_json(out)["results"] if r["outcome"] == "FAIL"]
    assert any(h.startswith("block shapes do not broadcast") for h in hints), hints


def test_a_gpu_compilation_error_is_named_from_its_chain_of_causes():
    """On a GPU a mistake in a @triton.jit helper surfaces as a CompilationError whose message
    shows only the line of the call; the hint reads the reason further down the chain. (No
    GPU here: the exceptions are made the way Triton chains them.)"""
    from checks.context import _exception_hint

    class CompilationError(Exception):  # matched by name, as Triton's is
        pass

    def chained(reason: Exception) -> Exception:
        inner = CompilationError("at 12:8:\n    acc = tl.dot(p, v, acc)")
        inner.__cause__ = reason
        outer = CompilationError("at 29:15:\n    acc, l_i = _attend(...)")
        outer.__cause__ = inner
        return outer

    dtype = chained(AssertionError("Both operands must be same dtype. Got fp32 and fp16"))
    assert _exception_hint(dtype).startswith("tl.dot operands of two dtypes")
    shapes = chained(ValueError("Cannot make_shape_compatible: incompatible dimensions at "
                                "index 0: 4 and 16"))
    assert _exception_hint(shapes).startswith("block shapes do not broadcast")
    store = chained(ValueError("Expected pointer argument to have shape ['constexpr[64]'] but "
                               "got ['constexpr[1]']"))
    assert _exception_hint(store).startswith("block shapes do not match at a load or store")
    other = chained(NameError("name 'keep' is not defined"))
    assert _exception_hint(other).startswith("Triton could not compile the kernel")


def test_recorded_sources_follow_imports_transitively():
    """Evidence headers hash every file a workshop runs: softmax_backward imports the strided
    softmax, which imports _gpu; attention imports its Hopper path."""
    from checks import loader

    impl = loader.resolve("references")
    names = {w: {p.name for p in loader.source_files(w, impl)}
             for w in ("softmax_backward", "streaming_attention")}
    assert {"softmax_backward.py", "strided_softmax.py", "_gpu.py", "_validate.py"} <= names[
        "softmax_backward"]
    assert {"streaming_attention.py", "_attention_hopper.py"} <= names["streaming_attention"]


def test_shards_of_a_run_merge_into_the_whole_run(tmp_path):
    """`run --shard i/n --seed S` on n processes, then `merge`: the same rows, in the same order,
    with the same inputs (a case's seed depends on the run's seed and its name only)."""
    common = ("run", "foundations", "--impl", "references", "--device", "interpreter",
              "--seed", "5")
    whole = tmp_path / "whole.json"
    assert run_checks(*common, "--json", str(whole)).returncode == 0
    parts = []
    for i in range(3):
        parts.append(tmp_path / f"part{i}.json")
        assert run_checks(*common, "--shard", f"{i}/3", "--json", str(parts[i])).returncode == 0
    merged = tmp_path / "merged.json"
    done = run_checks("merge", str(merged), *map(str, parts))
    assert done.returncode == 0, done.stderr

    def rows(path):
        return [(r["check"], r["case"], r["outcome"], r["max_error"])
                for r in load_json(path)["results"]]

    assert rows(merged) == rows(whole)
    assert load_json(merged)["counts"] == load_json(whole)["counts"]
    assert load_json(merged)["header"]["shards"] == 3
    # Two of three shards are not a run: refused, nothing written.
    done = run_checks("merge", str(tmp_path / "bad.json"), str(parts[0]), str(parts[2]))
    assert done.returncode == 2 and "shards" in done.stderr
    assert not (tmp_path / "bad.json").exists()
    assert run_checks(*common[:-2], "--shard", "0/2").returncode == 2  # no --seed: refused


def test_stop_at_hint_ends_the_run_at_the_first_fail_that_carries_it(tmp_path):
    """The bug zoo's shortcut: the rows before the stop are the full run's rows, the last one is
    the first FAIL with the hint, and a hint nobody gives runs everything."""
    from tests.bugs import foundations, plant

    bug = next(b for b in foundations.BUGS if b.name == "softmax_tail_other_zero")
    mutant = plant("foundations", bug, tmp_path / "impl")
    common = ("run", "foundations", "--impl", str(mutant), "--device", "interpreter",
              "--seed", "7", "--only", bug.check)

    def rows(*extra):
        out = tmp_path / f"run{len(extra)}{extra[-1] if extra else ''}.json".replace(" ", "_")
        done = run_checks(*common, *extra, "--json", str(out))
        assert "Traceback" not in done.stderr, done.stderr[-2000:]
        data = load_json(out)
        return done.returncode, data["header"], [(r["case"], r["outcome"], r["hint"])
                                                 for r in data["results"]]

    code, _, whole = rows()
    hinted = [i for i, r in enumerate(whole) if r[1] == "FAIL" and bug.hint in r[2]]
    assert code == 1 and hinted and hinted[0] < len(whole) - 1, whole  # the stop saves cases
    code, header, stopped = rows("--stop-at-hint", bug.hint)
    assert code == 1 and header["stopped_at_hint"] == bug.hint
    assert stopped == whole[:hinted[0] + 1]
    code, header, unmatched = rows("--stop-at-hint", "a hint no check gives")
    assert code == 1 and "stopped_at_hint" not in header and unmatched == whole
