"""A mistake in a lesson is the lesson's: said at its file and line, never as the grader's.

Each case copies the toy course (with every optional file a lesson may declare, as
``tests/test_lint.py`` builds it), breaks it one way, grades a submission and requires:

* one paragraph naming the lesson's file and the line to mend (``FILE:LINE:``), relative to the
  course, and no traceback, no "bug in the grader", no "internal error";
* exit code 78 (``LESSON_ERROR_EXIT``) when the mistake kept checks from running; the checks it
  kept from running have no number (status ``lesson_error``, score ``null``), the student reads
  "This check could not run" for them, and every other check keeps its points;
* for a picture or a diagnosis that cannot be made: the report without it, the grade standing,
  the exit code the grade would have had, and the lesson's mistake noted.

Then ``grade`` (text, with and without ``--details``, JSON, HTML), ``check`` (with and without
``--details``, ``--html``) and ``batch`` (its CSV written, each row's status saying
``lesson_error``) on the same breaks.
"""

from __future__ import annotations

import csv
import json
import re
import textwrap
from pathlib import Path

import pytest

from .support import grader_outside
from .test_lint import (
    BUG,
    CENTER,
    CHECKS,
    check_file_that_does_not_parse,
    edit,
    full_toy,
    line_of,
    mark_names_no_exercise,
    mark_with_no_points,
    misnamed_fixture,
    picture_of_the_wrong_shape,
    probe_with_a_wrong_parameter,
    returns_with_wrong_parameters,
    strategy_that_cannot_draw,
    two_checks_of_one_name,
    typo_in_a_check,
    typo_in_a_mistake,
)

#: The exit code of a lesson's mistake (the README's table of exit codes; EX_CONFIG).
LESSON_ERROR_EXIT = 78
#: What a student reads for a check the lesson kept from running.
NOT_RUN = "This check could not run: the mistake is in the lesson, not in your code."
#: Words that would blame the grader, or show its insides, for a lesson's mistake.
NOT_OURS = ("Traceback", "probably a bug in the grader", "internal error")
#: The toy lesson's checks and points, as the reference earns them.
POINTS = {
    "centering_keeps_the_shape": 2,
    "centering_subtracts_each_token_mean": 3,
    "centering_leaves_x_unchanged": 1,
    "layer_norm_keeps_the_shape": 2,
    "layer_norm_follows_the_formula": 4,
    "layer_norm_uses_the_eps_given": 2,
}


def name_in_a_check(c):
    """A NameError inside a check: a helper misspelt."""
    edit(c / CENTER, "    got = student.center_tokens(x)\n", "    got = studnet.center_tokens(x)\n")
    return CENTER, "got = studnet.center_tokens(x)", "NameError"


def probe_that_raises(c):
    """A probe whose own code stops (``diagnoses.py`` cannot be imported)."""
    edit(c / CHECKS / "diagnoses.py", '{"x": np.array([[1.0, 2.0, 6.0]', '{"x": np.arry([[1.0, 2.0, 6.0]')
    return CHECKS / "diagnoses.py", "np.arry(", "AttributeError"


def reference_that_does_not_parse(c):
    edit(c / "solutions/toy.py", "    return x - token_mean(x)", "    return x - token_mean(x")
    return Path("solutions/toy.py"), "return x - token_mean(x", "does not parse: SyntaxError"


def reference_that_stops_loading(c):
    edit(c / "solutions/toy.py", "import numpy as np\n", "import numpy as np\n\nSCALE = np.onse(3)\n")
    return Path("solutions/toy.py"), "SCALE = np.onse(3)", "cannot be loaded: AttributeError"


def grade(course: Path, *args: str, submission: str = "solutions/toy.py"):
    return grader_outside(
        "grade", submission, "--course", str(course), "--isolation", "none", *args, cwd=course
    )


def batch_of_one(course: Path, tmp_path: Path):
    """``batch`` on a class of one student, ada, who hands in the reference; grades.csv."""
    klass = tmp_path / "class"
    (klass / "ada").mkdir(parents=True)
    (klass / "ada" / "toy.py").write_text((course / "solutions/toy.py").read_text())
    out = str(tmp_path / "grades.csv")
    return grader_outside(
        "batch", str(klass), "--out", out, "--jobs", "1", "--course", str(course), cwd=course
    )


def place(course: Path, file: Path, text: str) -> str:
    """``FILE:LINE:`` of the line holding ``text``, as the grader names it."""
    return f"{file.as_posix()}:{line_of(course / file, text)}:"


def not_ours(*texts: str) -> None:
    for text in texts:
        for words in NOT_OURS:
            assert words not in text, text[-3000:]


def said_once(stderr: str, where: str, words: str) -> None:
    """The lesson's mistake is told at its place, with what went wrong."""
    lines = [line for line in stderr.splitlines() if where in line]
    assert lines, (where, stderr[-3000:])
    assert any(words in line for line in lines), (words, lines)


# ----------------------------------------------------------------------------- checks kept from running
# (break, the checks it keeps from running that the report names NOT RUN, the checks it sets
# aside: their mark is what is wrong, or their file could not be imported)
CENTERING = {
    "centering_keeps_the_shape",
    "centering_subtracts_each_token_mean",
    "centering_leaves_x_unchanged",
}
KEPT_FROM_RUNNING = [
    (typo_in_a_check, {"centering_keeps_the_shape"}, set(), "AttributeError: module 'grader.expect'"),
    (name_in_a_check, {"centering_subtracts_each_token_mean"}, set(), "NameError: name 'studnet'"),
    (misnamed_fixture, {"centering_keeps_the_shape"}, set(), "'studnet', which no fixture provides"),
    (strategy_that_cannot_draw, set(POINTS), set(), "InvalidArgument"),  # every check draws tokens()
    (two_checks_of_one_name, set(), set(), "another check has the name"),  # the second is set aside
    (mark_names_no_exercise, set(), {"layer_norm_follows_the_formula"}, "'layer_nrom' is not one of"),
    (
        mark_with_no_points,
        set(),
        {"layer_norm_keeps_the_shape", "layer_norm_follows_the_formula", "layer_norm_uses_the_eps_given"},
        "points must be a positive number",
    ),
    (
        check_file_that_does_not_parse,
        set(),
        CENTERING,
        "cannot be imported, so none of them ran: SyntaxError",
    ),
]


@pytest.mark.parametrize(
    "brk, broken, aside, words", KEPT_FROM_RUNNING, ids=[brk.__name__ for brk, *_ in KEPT_FROM_RUNNING]
)
def test_a_check_the_lesson_keeps_from_running_costs_and_gives_nothing(tmp_path, brk, broken, aside, words):
    course = full_toy(tmp_path)
    file, text, _ = brk(course)
    text, offset = text if isinstance(text, tuple) else (text, 0)
    where = f"{file.as_posix()}:{line_of(course / file, text) + offset}:"
    done = grade(course, "--format", "json", "-o", "report.json")
    not_ours(done.stdout, done.stderr)
    assert done.returncode == LESSON_ERROR_EXIT, done.stderr
    said_once(done.stderr, where, words)
    report = json.loads((course / "report.json").read_text())
    assert report["score"] is None and report["unfinished"] is True  # no number: no grade yet
    assert any(f["place"] + ":" == where and f["graded"] for f in report["lesson_errors"]), report[
        "lesson_errors"
    ]
    tests = {t["name"]: t for t in report["tests"]}
    assert len(report["tests"]) == len(tests)  # no name twice
    assert set(tests) == set(POINTS) - aside
    for name, t in tests.items():
        if name in broken:
            assert (t["status"], t["score"]) == ("lesson_error", None)
            assert t["feedback"].startswith(NOT_RUN) and "instructor has been told" in t["feedback"]
        else:  # every other check keeps its points
            assert (t["status"], t["score"], t["max_score"]) == ("passed", POINTS[name], POINTS[name]), t


def test_a_reference_that_does_not_parse_is_said_at_its_line(tmp_path):
    course = full_toy(tmp_path)
    file, text, words = reference_that_does_not_parse(course)
    for args in (("grade", "exercises/toy.py"), ("check",), ("lint",)):
        done = grader_outside(*args, "--course", str(course), cwd=course)
        not_ours(done.stdout, done.stderr)
        assert done.returncode == LESSON_ERROR_EXIT, (args, done.stderr)
        said_once(done.stderr, place(course, file, text), words)


def test_a_reference_that_stops_loading_grades_no_one_and_says_where(tmp_path):
    course = full_toy(tmp_path)
    file, text, words = reference_that_stops_loading(course)
    done = grade(course, submission="exercises/toy.py")
    not_ours(done.stdout, done.stderr)
    assert done.returncode == LESSON_ERROR_EXIT, done.stderr
    said_once(done.stderr, place(course, file, text), words)
    # a class: every row says so, the CSV is written, no number given
    klass = tmp_path / "class"
    for student in ("ada", "bob"):
        (klass / student).mkdir(parents=True)
        (klass / student / "toy.py").write_text((course / "exercises/toy.py").read_text())
    done = grader_outside(
        "batch",
        str(klass),
        "--out",
        str(tmp_path / "grades.csv"),
        "--jobs",
        "1",
        "--course",
        str(course),
        cwd=course,
    )
    not_ours(done.stdout, done.stderr)
    assert done.returncode == LESSON_ERROR_EXIT, done.stderr
    rows = list(csv.DictReader((tmp_path / "grades.csv").open()))
    assert [(r["student"], r["status"], r["score"]) for r in rows] == [
        ("ada", "lesson_error", ""),
        ("bob", "lesson_error", ""),
    ]
    said_once(done.stdout, place(course, file, text), words)


# ----------------------------------------------------------------------------- every command, one break


def test_every_command_says_a_check_could_not_run_and_where(tmp_path):
    course = full_toy(tmp_path)
    file, text, words = name_in_a_check(course)
    where = place(course, file, text)
    for details in ((), ("--details",)):
        done = grade(course, *details)
        not_ours(done.stdout, done.stderr)
        assert done.returncode == LESSON_ERROR_EXIT, done.stderr
        said_once(done.stderr, where, words)
        assert "[NOT RUN] centering_subtracts_each_token_mean (3 pts)" in done.stdout
        assert "This check could not run: the mistake is in the lesson" in done.stdout
        assert "layer_norm               8/8" in done.stdout  # the other exercise keeps its points
        done = grader_outside(
            "check", "solutions/toy.py", *details, "--html", "page.html", "--course", str(course), cwd=course
        )
        not_ours(done.stdout, done.stderr)
        assert done.returncode == LESSON_ERROR_EXIT, done.stderr
        assert "[NOT RUN] centering_subtracts_each_token_mean" in done.stdout
        assert where in done.stdout  # the student can tell the instructor where
        assert "NOT RUN" in (course / "page.html").read_text()
    done = grade(course, "--format", "html", "-o", "report.html")
    not_ours(done.stdout, done.stderr)
    assert done.returncode == LESSON_ERROR_EXIT
    page = (course / "report.html").read_text()
    assert "could not run" in page and where in page
    # a class: the CSV is written, each row's status says why it has no number
    done = batch_of_one(course, tmp_path)
    not_ours(done.stdout, done.stderr)
    assert done.returncode == LESSON_ERROR_EXIT, done.stderr
    said_once(done.stdout, where, words)
    (row,) = csv.DictReader((tmp_path / "grades.csv").open())
    assert (row["status"], row["score"], row["center_tokens"], row["layer_norm"]) == (
        "lesson_error",
        "",
        "",
        "",
    )
    kept = json.loads((tmp_path / "grades_reports" / "ada.json").read_text())
    assert kept["exercises"]["layer_norm"]["score"] == 8


# ----------------------------------------------------------------------------- pictures and diagnoses


def _student_with_a_bug(course: Path) -> str:
    """A submission whose center_tokens divides by the mean: it loses points there, so the
    diagnosis runs."""
    body = BUG.split("import numpy as np", 1)[1]
    path = course.parent / "ada" / "toy.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text((course / "solutions/toy.py").read_text() + "\n\n" + textwrap.dedent(body))
    return str(path)


@pytest.mark.parametrize(
    "brk",
    [
        probe_that_raises,
        probe_with_a_wrong_parameter,
        returns_with_wrong_parameters,
        typo_in_a_mistake,
        picture_of_the_wrong_shape,
    ],
    ids=lambda f: f.__name__,
)
def test_a_picture_or_a_diagnosis_that_fails_leaves_the_grade_standing(tmp_path, brk):
    course = full_toy(tmp_path)
    file, text, _ = brk(course)
    where = place(course, file, text)
    student = _student_with_a_bug(course)
    done = grade(course, "--format", "json", "-o", "report.json", submission=student)
    not_ours(done.stdout, done.stderr)
    assert done.returncode == 0, done.stderr  # the grade stands
    assert where in done.stderr and "The grade stands" in done.stderr
    report = json.loads((course / "report.json").read_text())
    assert (report["score"], report["max_score"], report["unfinished"]) == (11, 14, False)
    assert [(f["place"] + ":", f["graded"]) for f in report["lesson_errors"]] == [(where, False)]
    if "picture" in brk.__name__:
        assert report["pictures"] == []
        done = grade(course, "--format", "html", "-o", "report.html", submission=student)
        not_ours(done.stdout, done.stderr)
        assert done.returncode == 0
        assert where in (course / "report.html").read_text()
    elif brk is probe_with_a_wrong_parameter:  # the other probe and the failed check's calls tell
        assert [d["code"] for d in report["exercises"]["center_tokens"]["diagnoses"]] == ["divides-by-mean"]
    else:  # the mistake that slipped is named for no one (none is, without a diagnoses.py)
        assert report["exercises"]["center_tokens"]["diagnoses"] == []


def test_a_picture_that_fails_stops_no_batch(tmp_path):
    course = full_toy(tmp_path)
    file, text, _ = picture_of_the_wrong_shape(course)
    done = batch_of_one(course, tmp_path)
    not_ours(done.stdout, done.stderr)
    assert done.returncode == 0, done.stderr
    assert place(course, file, text) in done.stdout
    (row,) = csv.DictReader((tmp_path / "grades.csv").open())
    assert (row["status"], row["score"]) == ("graded", "14")
    assert (tmp_path / "grades_reports" / "ada.html").is_file()


# ----------------------------------------------------------------------------- the student's, not the lesson's


def test_a_check_stopped_by_what_the_student_returned_costs_its_points(tmp_path):
    """A check that stops on a student's odd answer (an index its result does not have), after
    calling the student's function, is the student's failure with a number, never "no grade":
    otherwise a submission could hold its own grade back. The reference still gets full marks."""
    course = full_toy(tmp_path)
    edit(
        course / CENTER,
        "    got = student.center_tokens(x)\n    name",
        "    got = student.center_tokens(x)\n    got[..., 0, 0]  # an index every right answer has\n    name",
    )
    odd = tmp_path / "odd"
    odd.mkdir()
    source = (course / "solutions" / "toy.py").read_text()
    (odd / "toy.py").write_text(source + "\n\ndef center_tokens(x):\n    return np.asarray(0.0)\n")
    done = grader_outside("grade", str(odd), "--course", str(course), "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not any(words in done.stdout + done.stderr for words in NOT_OURS)
    report = json.loads(done.stdout)
    stopped = next(t for t in report["tests"] if t["name"] == "centering_subtracts_each_token_mean")
    assert stopped["status"] == "failed" and stopped["score"] == 0, stopped
    assert "could not use what your function returned (IndexError" in stopped["feedback"]
    assert report["score"] is not None and not report.get("lesson_errors")
    reference = course / "solutions" / "toy.py"
    full = grader_outside("grade", str(reference), "--course", str(course), "--format", "json", cwd=tmp_path)
    assert full.returncode == 0 and json.loads(full.stdout)["score"] == sum(POINTS.values())


def test_a_hidden_checks_mistake_quotes_none_of_its_inputs(tmp_path):
    """A hidden check that stops by the lesson's mistake is said at its file and line with the
    kind of error only: its message may quote a hidden input, and students read the report."""
    course = full_toy(tmp_path)
    hidden = course / CHECKS / "hidden" / "test_layer_norm_hidden.py"
    edit(
        hidden,
        "    x, gamma, beta = case\n",
        "    x, gamma, beta = case\n    raise IndexError(f'eps {eps} secret')\n",
    )
    done = grader_outside(
        "check", str(course / "solutions" / "toy.py"), "--course", str(course), cwd=tmp_path
    )
    assert done.returncode == LESSON_ERROR_EXIT, done.stderr[-2000:]
    assert "test_layer_norm_hidden.py:" in done.stdout and "IndexError" in done.stdout
    assert "secret" not in done.stdout + done.stderr and "eps 0.5" not in done.stdout


#: A check whose next draw depends on what the student's function returned, as a lesson may
#: rightly write (the rope lesson's batch check draws an index once the scores look like work).
DRAWS_AFTER_THE_ANSWER = '''

@graded("center_tokens", points=2)
@given(x=tokens(), data=st.data())
def test_a_token_is_centred_as_if_alone(student, x, data):
    """One token centred alone is centred as it was among the others."""
    got = student.center_tokens(x)
    expect.that(bool(np.allclose(got.mean(axis=-1), 0)), "the means are not 0")
    t = data.draw(st.integers(0, x.shape[-2] - 1), label="token")
    alone = student.center_tokens(x[..., t : t + 1, :])
    expect.close(got[..., t : t + 1, :], alone, name="a token alone", rtol=1e-9, atol=1e-9)
'''
#: Right on two calls of every three: what it returns decides whether the check draws again.
STATEFUL = """
import numpy as np
_calls = [0]
def center_tokens(x):
    _calls[0] += 1
    return x - token_mean(x) + (_calls[0] % 3 == 0)
"""


def answered_check_fails_in_the_students_words(
    tmp_path: Path, *, imports: str, check: str, student: str, name: str, words: str
) -> None:
    """A copy of the toy course whose center_tokens gains ``check`` (its module importing
    ``imports`` too), and a submission whose center_tokens is ``student``: ``grade`` fails the
    check ``name`` saying ``words``, with a number and no lesson error, ``check`` gives the same
    total, and the reference still earns every point."""
    course = full_toy(tmp_path)
    edit(course / CENTER, "from hypothesis import given\n", imports)
    (course / CENTER).write_text((course / CENTER).read_text() + check)
    source = (course / "solutions" / "toy.py").read_text()
    (tmp_path / "student").mkdir()
    (tmp_path / "student" / "toy.py").write_text(source + student)
    file = str(tmp_path / "student" / "toy.py")
    done = grader_outside("grade", file, "--course", str(course), "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    not_ours(done.stdout, done.stderr)
    report = json.loads(done.stdout)
    assert not report.get("lesson_errors") and report["score"] is not None, report
    row = next(t for t in report["tests"] if t["name"] == name)
    assert row["status"] == "failed" and words in row["feedback"], row
    checked = grader_outside("check", file, "--course", str(course), "--details", cwd=tmp_path)
    assert checked.returncode == 1, checked.stderr[-2000:]  # checks failed
    not_ours(checked.stdout, checked.stderr)
    assert "NOT RUN" not in checked.stdout and words in checked.stdout.replace("\n      ", " ")
    total = rf"^Total +{report['score']}/{report['max_score']}$"
    assert re.search(total, checked.stdout, re.M), checked.stdout
    reference = str(course / "solutions" / "toy.py")
    full = grader_outside("grade", reference, "--course", str(course), "--format", "json", cwd=tmp_path)
    assert full.returncode == 0 and json.loads(full.stdout)["score"] == sum(POINTS.values()) + 2


def test_a_function_that_changes_the_checks_draws_fails_and_never_holds_its_grade_back(tmp_path):
    """Hypothesis says FlakyStrategyDefinition when one input's runs draw differently; where the
    student's answers decided the draws, that is the student's function answering differently,
    never "the lesson has a mistake" (which would keep the student's grade from being final)."""
    answered_check_fails_in_the_students_words(
        tmp_path,
        imports="import numpy as np\nfrom hypothesis import given\nfrom hypothesis import strategies as st\n",
        check=DRAWS_AFTER_THE_ANSWER,
        student=STATEFUL,
        name="a_token_is_centred_as_if_alone",
        words="different results for the same input",
    )


#: A check that sets aside the examples on which the student's answer gives it nothing to judge,
#: as a lesson may rightly write.
ASSUMES_ON_THE_ANSWER = '''

@graded("center_tokens", points=2)
@given(x=tokens())
def test_centred_numbers_that_vary_have_mean_zero(student, x):
    """Where the centred numbers are not all zero, each token's mean is zero."""
    got = student.center_tokens(x)
    assume(bool(np.any(got != 0)))
    expect.close(got.mean(axis=-1), np.zeros(got.shape[:-1]), name="the means", rtol=1e-9, atol=1e-9)
'''


def test_a_function_whose_answers_leave_a_check_nothing_to_judge_fails_it(tmp_path):
    """Every example set aside by an assume() on what the student's function returned ends in
    Hypothesis's Unsatisfiable: the student's, said in their words, never "the lesson has a
    mistake" (zeros for everything would hold the grade back). Before the function answers,
    such an error stays the lesson's (the breaks of tests/test_lint.py)."""
    answered_check_fails_in_the_students_words(
        tmp_path,
        imports="import numpy as np\nfrom hypothesis import assume, given\n",
        check=ASSUMES_ON_THE_ANSWER,
        student="\n\ndef center_tokens(x):\n    return np.zeros_like(x)\n",
        name="centred_numbers_that_vary_have_mean_zero",
        words="set aside every input it drew",
    )
