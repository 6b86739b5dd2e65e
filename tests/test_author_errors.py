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


def unprintable_error_in_a_check(c):
    """A check that raises an exception whose message cannot be made (its ``__str__`` fails)."""
    edit(
        c / CENTER,
        '@graded("center_tokens", points=3)\n',
        "class Unprintable(Exception):\n    def __str__(self):\n        return str(1 / 0)\n\n\n"
        '@graded("center_tokens", points=3)\n',
    )
    edit(c / CENTER, "    got = student.center_tokens(x)\n", "    raise Unprintable()\n")
    return CENTER, "raise Unprintable()", "Unprintable"


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
    (unprintable_error_in_a_check, {"centering_subtracts_each_token_mean"}, set(), "Unprintable"),
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
