"""``grader catalog`` says which entry of a catalog does not hold, and why, and its judge holds
each kind to what it asks. The project's own catalogs are run by tests/test_catalog.py; here a
copy of the toy course is given a catalog that breaks each rule once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from grader.core.catalog import Entry, Kind, Outcome, judge
from grader.core.diagnosis import Diagnosis
from grader.core.results import Report, Status, TestResult, Visibility

from .support import TOY_COURSE, grader_outside

CENTER = "import numpy as np\n\n\ndef center_tokens(x):\n    return {body}\n"
#: What a do-nothing entry does in the lesson's other exercise.
NOTHING_MORE = '\n\ndef layer_norm(x, gamma, beta, eps=1e-5):\n    raise ValueError("not today")\n'
#: kind/name -> (EXERCISE, the body of center_tokens): one entry that holds and one that does
#: not, of each kind.
ENTRIES = {
    "bugs/forgets_the_mean": ("center_tokens", "x.copy()"),
    "bugs/not_a_bug_at_all": ("center_tokens", "x - x.mean(axis=-1, keepdims=True)"),
    "correct/mean_by_hand": (None, "x - x.sum(axis=-1, keepdims=True) / x.shape[-1]"),
    "correct/doubles": (None, "2 * (x - x.mean(axis=-1, keepdims=True))"),
    "trivial/refuses": (None, "np.asarray(1 / 0)"),
}


def toy_with_catalog(tmp_path: Path) -> Path:
    course = tmp_path / "course"
    shutil.copytree(TOY_COURSE, course)
    for name, (exercise, body) in ENTRIES.items():
        path = course / "tests" / "catalog" / "toy" / f"{name}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        declared = f'EXERCISE = "{exercise}"\n\n' if exercise else ""
        more = NOTHING_MORE if name.startswith("trivial/") else ""
        path.write_text(f'"""A catalog entry."""\n\n{declared}{CENTER.format(body=body)}{more}')
    return course


def test_the_command_names_each_entry_that_does_not_hold(tmp_path):
    course = toy_with_catalog(tmp_path)
    done = grader_outside("catalog", "--course", str(course), "--format", "json", cwd=tmp_path, timeout=900)
    assert done.returncode == 1, done.stderr[-2000:]
    rows = json.loads(done.stdout)["toy"]
    outcomes = {label: (row["outcome"], row["why"]) for label, row in rows.items()}
    assert outcomes["bugs-forgets_the_mean"] == ("holds", "")
    assert outcomes["correct-mean_by_hand"] == ("holds", "")
    assert outcomes["trivial-refuses"] == ("holds", "")
    assert outcomes["bugs-not_a_bug_at_all"] == ("fails", "the bug escapes every check of center_tokens")
    assert outcomes["correct-doubles"][0] == "fails"
    assert "a correct file lost points (center_tokens" in outcomes["correct-doubles"][1]
    assert rows["bugs-forgets_the_mean"]["report"]["score"] < 100
    text = grader_outside("catalog", "--course", str(course), cwd=tmp_path, timeout=900)
    assert text.returncode == 1 and "Traceback" not in text.stderr
    assert "toy: 3 of 5 catalog entries hold" in text.stdout
    assert "bugs-not_a_bug_at_all" in text.stdout and "FAILS: the bug escapes" in text.stdout


def test_a_lesson_without_a_catalog_is_said_so(tmp_path):
    done = grader_outside("catalog", "--course", str(TOY_COURSE), "--lesson", "toy", cwd=tmp_path)
    assert done.returncode == 2 and "has no catalog" in done.stderr and "Traceback" not in done.stderr


# ----------------------------------------------------------------------------- the judge


def _test(exercise: str, score: float, *, feedback: str = "wrong") -> TestResult:
    status = Status.PASSED if score else Status.FAILED
    return TestResult(
        name=f"test_{exercise}_{score}",
        exercise=exercise,
        max_score=10,
        score=score,
        status=status,
        visibility=Visibility.VISIBLE,
        message="" if score else feedback,
    )


def _report(*tests: TestResult, diagnoses=None) -> Report:
    return Report(submission="x.py", tests=tests, diagnoses=diagnoses or {})


BUG = Entry(Kind.BUGS, Path("bugs/b.py"), "a", "code-a")
EXERCISES = ("a", "b")


def test_a_bug_must_lose_in_its_own_exercise_only_and_be_named_first():
    named = {"a": (Diagnosis("code-a", "hint"),)}
    assert (
        judge(BUG, _report(_test("a", 0), _test("b", 10), diagnoses=named), EXERCISES).outcome
        is Outcome.HOLDS
    )
    escapes = judge(BUG, _report(_test("a", 10), _test("b", 10), diagnoses=named), EXERCISES)
    assert escapes.outcome is Outcome.FAILS and "escapes" in escapes.why
    spills = judge(BUG, _report(_test("a", 0), _test("b", 0), diagnoses=named), EXERCISES)
    assert spills.outcome is Outcome.FAILS and "also costs points in b" in spills.why
    other = {"a": (Diagnosis("code-z", "hint"), Diagnosis("code-a", "hint"))}
    misnamed = judge(BUG, _report(_test("a", 0), _test("b", 10), diagnoses=other), EXERCISES)
    assert misnamed.why == "named code-z, code-a first, not code-a"
    silent = judge(BUG, _report(_test("a", 0, feedback=""), _test("b", 10), diagnoses=named), EXERCISES)
    assert silent.outcome is Outcome.FAILS and "says nothing" in silent.why


def test_correct_must_be_full_and_unnamed_trivial_must_earn_nothing():
    correct = Entry(Kind.CORRECT, Path("correct/c.py"))
    assert judge(correct, _report(_test("a", 10), _test("b", 10)), EXERCISES).outcome is Outcome.HOLDS
    assert judge(correct, _report(_test("a", 10), _test("b", 0)), EXERCISES).outcome is Outcome.FAILS
    named = {"a": (Diagnosis("code-a", "hint"),)}
    told = judge(correct, _report(_test("a", 10), _test("b", 10), diagnoses=named), EXERCISES)
    assert told.outcome is Outcome.FAILS and "likely mistake" in told.why
    trivial = Entry(Kind.TRIVIAL, Path("trivial/t.py"))
    assert judge(trivial, _report(_test("a", 0), _test("b", 0)), EXERCISES).outcome is Outcome.HOLDS
    earns = judge(trivial, _report(_test("a", 0), _test("b", 10)), EXERCISES)
    assert earns.outcome is Outcome.FAILS and "earned points (b 10)" in earns.why


def test_no_report_or_an_unfinished_one_is_no_verdict():
    assert judge(BUG, None, EXERCISES, problem="it hung").outcome is Outcome.UNGRADED
    unfinished = TestResult("t", "a", 10, 0, Status.UNFINISHED, Visibility.VISIBLE, message="busy")
    assert judge(BUG, _report(unfinished), EXERCISES).outcome is Outcome.UNFINISHED
