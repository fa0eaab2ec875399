"""One source of truth: the starters in kernels/ are derived from references/."""

import pytest

from tests.helpers import ROOT
from tools import make_starters


def test_committed_starters_equal_what_the_references_derive():
    assert make_starters.main(["--check"]) == 0


@pytest.mark.parametrize("ref", sorted((ROOT / "references").glob("[!_]*.py")), ids=lambda p: p.stem)
def test_every_reference_has_exercises_and_a_starter(ref):
    assert make_starters.exercise_count(ref.read_text()) >= 1
    assert (ROOT / "kernels" / ref.name).is_file()


def test_solving_only_adds_lines():
    # Every line of a starter outside its TODO blocks is a line of the reference, in order.
    for ref, starter in make_starters.pairs():
        ref_lines = ref.read_text().splitlines()
        it = iter(ref_lines)
        for line in starter.read_text().splitlines():
            if line.strip().startswith("# TODO(") or line.strip() == "pass":
                continue
            if line.lstrip().startswith("#") and not any(line == r for r in ref_lines):
                continue
            assert any(line == r for r in it), f"{starter.name}: {line!r} is not in the reference"


def test_derive_marks_and_errors():
    src = "a = 1\n    # EXERCISE f: do it\n    # more words\n    x = 2\n    # END EXERCISE\nb = 3\n"
    assert make_starters.derive(src) == "a = 1\n    # TODO(f): do it\n    # more words\n    pass\nb = 3\n"
    # solved=: the regions of those tags keep their code, without the markers
    two = src + "    # EXERCISE g, h: other\n    z = 3\n    # END EXERCISE\n"
    assert make_starters.derive(two, solved=("h",)) == \
        "a = 1\n    # TODO(f): do it\n    # more words\n    pass\nb = 3\n    z = 3\n"
    with pytest.raises(make_starters.MarkerError):
        make_starters.derive("# EXERCISE f: x\ny = 1\n")
    with pytest.raises(make_starters.MarkerError):
        make_starters.derive("# END EXERCISE\n")


def test_learner_edits_are_kept_unless_forced(tmp_path, monkeypatch):
    (tmp_path / "references").mkdir()
    (tmp_path / "kernels").mkdir()
    (tmp_path / "references" / "w.py").write_text("# EXERCISE f: x\ny = 1\n# END EXERCISE\n")
    (tmp_path / "kernels" / "w.py").write_text("y = 42  # my solution\n")
    monkeypatch.setattr(make_starters, "ROOT", tmp_path)
    assert make_starters.main([]) == 0
    assert "my solution" in (tmp_path / "kernels" / "w.py").read_text()
    assert make_starters.main(["--force"]) == 0
    assert "TODO(f)" in (tmp_path / "kernels" / "w.py").read_text()


def test_half_done_starters_keep_the_solved_regions_only(tmp_path):
    folder = tmp_path / "half"
    assert make_starters.main(["--half-done", str(folder), "--solved", "load,plan"]) == 0
    text = (folder / "strided_softmax.py").read_text()
    assert "TODO(softmax, load)" not in text and "TODO(softmax, plan)" not in text
    assert "TODO(softmax, rows)" in text and text.count("TODO(softmax, strips)") == 2
    assert (folder / "_validate.py").exists()  # the helpers a workshop imports come along
    # the learner's own starters are untouched
    assert "TODO(softmax, load)" in (make_starters.ROOT / "kernels/strided_softmax.py").read_text()
