"""The graded mark is validated where it is written, and its exercise against its lesson."""

import shutil
import subprocess
import sys

import pytest

from grader.core.lesson import Course
from grader.core.results import Visibility
from grader.core.settings import Isolation, Settings
from grader.engine.run import run_checks
from grader.marks import MarkError, graded, grading_of, validate

from .support import ATTENTION, TOY_COURSE


@pytest.mark.parametrize(
    "exercise, points, visibility, fragment",
    [
        ("split heads", 2, "visible", "the name of a function"),
        (None, 2, "visible", "the name of a function"),
        ("split_heads", 0, "visible", "positive number"),
        ("split_heads", -1, "visible", "positive number"),
        ("split_heads", True, "visible", "positive number"),
        ("split_heads", "2", "visible", "positive number"),
        ("split_heads", 2, "hiden", "'hiden' is not one of visible, hidden"),
    ],
)
def test_bad_marks_fail_loudly(exercise, points, visibility, fragment):
    with pytest.raises(MarkError, match=fragment):
        graded(exercise, points=points, visibility=visibility)


def test_an_exercise_is_checked_against_the_lessons():
    with pytest.raises(MarkError, match="'split_head' is not one of apply_causal_mask, split_heads"):
        validate("split_head", 2, "visible", ATTENTION.exercises)
    assert validate("split_heads", 2, "visible", ATTENTION.exercises).exercise == "split_heads"


def test_a_good_mark_round_trips():
    assert validate("mha_forward", 3, "hidden").visibility is Visibility.HIDDEN

    class Item:
        nodeid = "x"

        def __init__(self, obj, marks=()):
            self.obj, self.marks = obj, list(marks)

        def iter_markers(self, name):
            return iter(self.marks)

    def check():
        pass

    def other():
        pass

    def twice():
        pass

    marked = graded("merge_heads", points=2.5)(check)
    assert marked is check  # the check itself, marked: nothing wraps it
    assert grading_of(Item(check)).points == 2.5
    assert grading_of(Item(other)) is None
    graded("merge_heads", points=1)(graded("merge_heads", points=2)(twice))
    with pytest.raises(MarkError, match="more than one"):
        grading_of(Item(twice))
    with pytest.raises(MarkError, match="not one of center_tokens, layer_norm"):
        grading_of(Item(check), ("center_tokens", "layer_norm"))
    # a check marked the pytest way is read as well, and not twice
    mark = pytest.mark.graded(exercise="merge_heads", points=3).mark
    assert grading_of(Item(other, [mark])).points == 3
    with pytest.raises(MarkError, match="more than one"):
        grading_of(Item(check, [mark]))


def test_importing_a_lesson_s_checks_imports_no_pytest():
    """The mark is the check's own attribute: a lesson's checks (and what they import from the
    grader) load without pytest, which a run that replays every example need not load."""
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(ATTENTION.root)!r})\n"
        "import importlib, pkgutil\n"
        "import tests.checks.attention as checks\n"
        "for found in pkgutil.walk_packages(checks.__path__, checks.__name__ + '.'):\n"
        "    importlib.import_module(found.name)\n"
        "loaded = sorted(name for name in sys.modules if name.split('.')[0] in ('pytest', '_pytest'))\n"
        "print(len([m for m in sys.modules if m.startswith('tests.checks.attention.')]), loaded)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    count, loaded = done.stdout.split(" ", 1)
    assert int(count) >= 8, done.stdout  # every file of the checks, hidden ones included
    assert loaded.strip() == "[]", loaded


def test_every_check_is_graded_and_points_add_up():
    """The suite as shipped: 100 points, every exercise present, hidden only under hidden/."""
    report = run_checks(ATTENTION.solution, lesson=ATTENTION, settings=Settings(isolation=Isolation.NONE))
    assert report.max_score == report.score == 100
    assert [e.name for e in report.exercises] == list(ATTENTION.exercises)
    assert {t.visibility.value for t in report.tests} == {"visible", "hidden"}
    assert len({t.name for t in report.tests}) == len(report.tests), "check names must be unique"


@pytest.mark.parametrize(
    "exercise, fragment",
    [
        # a function of another lesson is no exercise of this one
        (
            "split_heads",
            "exercise 'split_heads' is not one of center_tokens, layer_norm (the exercises of lesson toy)",
        ),
        # the given helper holds no solution block: not an exercise either
        ("token_mean", "exercise 'token_mean' is not one of center_tokens, layer_norm"),
    ],
)
def test_a_check_naming_no_exercise_of_its_lesson_is_refused(tmp_path, exercise, fragment):
    course = tmp_path / "toy"
    shutil.copytree(TOY_COURSE, course)
    (course / "tests" / "checks" / "toy" / "test_stray.py").write_text(
        "from grader.marks import graded\n\n\n"
        f"@graded({exercise!r}, points=1)\n"
        "def test_stray(student):\n"
        "    pass\n",
        encoding="utf-8",
    )
    lesson = Course.at(course).lesson("toy")
    done = subprocess.run(
        [sys.executable, "-m", "grader", "grade", str(lesson.solution), "--isolation", "none"],
        cwd=course,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 78, done.stderr  # the lesson is broken, not the submission
    assert "tests/checks/toy/test_stray.py:4: test_stray:" in done.stderr and fragment in done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "source, kind",
    [
        ("def apply_causal_mask(:\n", "load"),  # the file does not load
        ("x = 1\n", "missing"),  # no function at all
        ("def apply_causal_mask(a, b):\n    return a\ndef split_heads(x):\n    return x\n", "signature"),
    ],
)
def test_a_failure_no_input_causes_is_tried_once_per_check(tmp_path, monkeypatch, source, kind):
    """A file that does not load, or a function missing or with the wrong signature, fails every
    example alike: each check stops at its first example instead of searching for a smaller one."""
    from grader.engine import submission as submission_module

    tried = []
    invoke = submission_module.StudentView._invoke

    def counted(self, name, args, kwargs, *, audit):
        tried.append(name)
        return invoke(self, name, args, kwargs, audit=audit)

    monkeypatch.setattr(submission_module.StudentView, "_invoke", counted)
    (tmp_path / "attention.py").write_text(source)
    only = "apply_causal_mask" if kind == "signature" else None
    report = run_checks(
        tmp_path / "attention.py",
        lesson=ATTENTION,
        settings=Settings(isolation=Isolation.NONE, exercises=(only,) if only else None),
    )
    failed = [t for t in report.tests if t.score == 0]
    assert failed and len(failed) == len(report.tests)
    assert all("Smallest input" not in t.feedback for t in failed)
    # once per check, once more per exercise for the diagnosis (which stops there) and once per
    # picture the lesson draws of an exercise checked
    from tests.checks.attention.pictures import PICTURES

    exercises = {t.exercise for t in report.tests}
    pictures = sum(1 for name in PICTURES if name in exercises)
    assert len(tried) <= len(report.tests) + len(exercises) + pictures, (
        f"{len(tried)} tries for {len(report.tests)} checks"
    )
