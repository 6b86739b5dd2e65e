"""Hidden checks cannot speak through visible ones, at every isolation level, nor through the
likely mistake a visible report names.

The adversarial case ``hidden_inputs_told_by_a_visible_failure`` tries it in the namespaces
sandbox; here the same file is graded at the ``process`` level (which shares the machine's
/tmp) and in the checker's own process (``none``, as ``check`` runs, hidden checks included in
a course's own checkout). Its mha_forward keeps what only hidden checks send it and then raises
an error that spells it out: only the hidden check's own failure may hold it.

Every test here grades the attention lesson: the cases are adversarial files of it, and what they
must not speak through (its pictures and likely mistakes) the toy lesson does not have.
"""

from __future__ import annotations

import json
import os

import pytest

from grader.core.settings import Isolation, Settings
from grader.engine.run import run_checks
from grader.formats.json_report import to_dict

from .support import ATTENTION, ROOT, compose, python

CASE = ROOT / "tests" / "adversarial" / "hidden_inputs_told_by_a_visible_failure"
TOLD = "hidden inputs seen"


def assert_told_in_hidden_checks_only(report: dict) -> None:
    hidden = [t for t in report["tests"] if t["visibility"] == "hidden"]
    assert any(TOLD in t["feedback"] for t in hidden), (
        "the file never saw a hidden input: the test proves nothing"
    )
    shown = json.dumps({**report, "tests": [t for t in report["tests"] if t["visibility"] != "hidden"]})
    assert TOLD not in shown, [t["name"] for t in report["tests"] if TOLD in t["feedback"]] + [
        p["problem"] for p in report["pictures"]
    ]


def test_in_the_checkers_own_process(tmp_path, monkeypatch):
    # attention: the case is its adversarial file, and its pictures are a way out to close
    folder = compose(CASE / "override.py", tmp_path / "submission").parent
    monkeypatch.chdir(tmp_path)  # where the file keeps its notes
    report = run_checks(
        folder / ATTENTION.filename,
        lesson=ATTENTION,
        settings=Settings(isolation=Isolation.NONE, exercises=("mha_forward",)),
    )
    assert_told_in_hidden_checks_only(to_dict(report))


@pytest.mark.skipif(os.name != "posix", reason="the process level needs POSIX")
def test_at_the_process_level(tmp_path):
    # attention: the case is its adversarial file, and its pictures are a way out to close
    folder = compose(CASE / "override.py", tmp_path / "submission").parent
    private = [ATTENTION.solution.parent, ATTENTION.checks / "hidden"]  # as the README asks of root
    modes = {p: p.stat().st_mode & 0o7777 for p in private}
    for p in private:
        p.chmod(0o700)
    try:
        done = python(
            "grade", str(folder), "--format", "json", "--isolation", "process", "--only", "mha_forward"
        )
    finally:
        for p, mode in modes.items():
            p.chmod(mode)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["isolation"] == "process"
    assert_told_in_hidden_checks_only(report)


DIAGNOSIS_CASE = ROOT / "tests" / "adversarial" / "hidden_inputs_told_by_a_diagnosis"


def test_the_likely_mistake_is_picked_from_what_a_student_can_see(tmp_path, monkeypatch):
    """mha_forward leaves out W_o on every visible input and the probes, and does something else
    on the float32 tokens only hidden checks send: the calls of the failed hidden checks would
    contradict the mistake and change what the report names (to nothing). Named from the visible
    checks and the probes alone, it is the missing output projection whatever hidden checks send."""
    # attention: the likely mistake is one of its diagnoses (the toy lesson has none)
    folder = compose(DIAGNOSIS_CASE / "override.py", tmp_path / "submission").parent
    monkeypatch.chdir(tmp_path)
    report = run_checks(
        folder / ATTENTION.filename,
        lesson=ATTENTION,
        settings=Settings(isolation=Isolation.NONE, exercises=("mha_forward",)),
    )
    hidden = [t for t in report.tests if t.visibility.value == "hidden"]
    assert hidden and all(t.status.value == "failed" for t in hidden), (
        "no hidden check failed: proves nothing"
    )
    expected = json.loads((DIAGNOSIS_CASE / "case.json").read_text())["expect"]["diagnosis"]["mha_forward"]
    named = [d.code for d in report.diagnoses.get("mha_forward", ())]
    assert named[:1] == [expected], named
