"""Do-nothing earns nothing: a check that a function doing no work can pass (a lesson names it in
``WEAK_CHECKS`` of its ``work.py``) pays only if its exercise passes one of its other checks.

The catalog's do-nothing entries (tests/catalog/*/trivial/) hold the lessons to it; here the rule
itself, on the toy course (a copy given a ``work.py``) and on results made by hand.
"""

from __future__ import annotations

import json
import shutil

from grader.core.results import Status, TestResult, Visibility
from grader.engine.collector import _gated

from .support import TOY_COURSE, grader_outside

#: center_tokens hands x back: it keeps the shape and leaves x alone, and centres nothing.
HANDED_BACK = "import numpy as np\n\n\ndef center_tokens(x):\n    return x.copy()\n"


def result(name: str, status: Status, exercise: str = "f") -> TestResult:
    return TestResult(
        name=name,
        exercise=exercise,
        max_score=2,
        score=2 if status is Status.PASSED else 0,
        status=status,
        visibility=Visibility.VISIBLE,
        title=name,
        message="" if status is Status.PASSED else "wrong",
    )


def test_a_weak_check_pays_only_beside_another_that_passed():
    weak = {"f": frozenset({"shape"})}
    alone = _gated([result("shape", Status.PASSED), result("values", Status.FAILED)], weak)
    assert [(t.status, t.score) for t in alone] == [(Status.FAILED, 0), (Status.FAILED, 0)]
    assert "no real work" in alone[0].feedback
    beside = [result("shape", Status.PASSED), result("values", Status.PASSED), result("more", Status.FAILED)]
    assert _gated(beside, weak) == beside
    only_weak_ran = [result("shape", Status.PASSED)]  # no other check was chosen: nothing to ask
    assert _gated(only_weak_ran, weak) == only_weak_ran
    elsewhere = [result("shape", Status.PASSED, "g"), result("values", Status.FAILED, "g")]
    assert _gated(elsewhere, weak) == elsewhere


def grade_toy(tmp_path, work: str | None) -> tuple[int, str]:
    course = tmp_path / "course"
    shutil.copytree(TOY_COURSE, course)
    if work is not None:
        (course / "tests" / "checks" / "toy" / "work.py").write_text(work)
    submission = tmp_path / "submission"
    submission.mkdir()
    source = (course / "exercises" / "toy.py").read_text() + "\n\n" + HANDED_BACK
    (submission / "toy.py").write_text(source)
    done = grader_outside(
        "grade",
        str(submission),
        "--course",
        str(course),
        "--format",
        "json",
        "--isolation",
        "none",
        cwd=tmp_path,
    )
    if done.returncode != 0:
        return done.returncode, done.stderr
    return done.returncode, json.dumps(json.loads(done.stdout)["exercises"]["center_tokens"]["score"])


def test_the_lessons_weak_checks_are_gated(tmp_path):
    assert grade_toy(tmp_path / "plain", None) == (0, "3")  # the shape (2) and x left alone (1)
    weak = 'WEAK_CHECKS = {"center_tokens": ("centering_keeps_the_shape", "centering_leaves_x_unchanged")}\n'
    assert grade_toy(tmp_path / "gated", weak) == (0, "0")


def test_a_misspelt_weak_check_stops_the_run(tmp_path):
    code, said = grade_toy(tmp_path, 'WEAK_CHECKS = {"center_tokens": ("centering_keeps_shape",)}\n')
    assert code != 0 and "centering_keeps_shape" in said and "Traceback" not in said
