"""``grader lint``: a lesson checked without a student, each problem at its file and line.

The toy course is copied, given every optional file a lesson may declare (diagnoses, pictures,
signs of work, a catalog), found clean, then broken one way at a time: each break must be
reported as ``FILE:LINE: message`` naming the lesson's file and the line to mend, with exit 1
and no traceback. The course's own lessons must lint clean.
"""

from __future__ import annotations

import re
import shutil
import textwrap
from pathlib import Path

import pytest

from grader.core.lesson import Course

from .support import ROOT, TOY_COURSE, grader_outside, python

DIAGNOSES = '''\
"""The toy lesson's known mistakes."""

import numpy as np

from grader.diagnosis import Mistake

PROBES = {
    "center_tokens": [
        {"x": np.array([[1.0, 2.0, 6.0], [0.0, -1.0, 4.0]])},
        {"x": np.array([[[3.0, 5.0], [2.0, 2.5]]])},
    ],
}

MISTAKES = {
    "center_tokens": [
        Mistake(
            "divides-by-mean",
            "each token is divided by its mean instead of moved by it",
            returns=lambda x: x / np.mean(x, axis=-1, keepdims=True),
        ),
        Mistake(
            "changes-x",
            "x was changed in place: return a new array",
            shows=lambda seen: any("x" in one.call.mutated for one in seen),
        ),
    ],
}
'''

PICTURES = '''\
"""What the toy lesson pictures: centred tokens of a three-word sentence, as one table."""

import numpy as np

from grader.pictures import Picture

TOKENS = ("one", "two", "three")

PICTURES = {
    "center_tokens": Picture(
        title="each token's numbers, centred",
        arguments={"x": np.arange(9.0).reshape(3, 3)},
        weights=lambda got: np.abs(np.asarray(got))[None],  # (1, T, T)
    ),
}
'''

WORK = '''\
"""Checks a function doing no work can pass."""

WEAK_CHECKS = {
    "center_tokens": ("centering_keeps_the_shape",),
}
'''

BUG = '''\
"""center_tokens divides by the mean."""

EXERCISE = "center_tokens"
DIAGNOSIS = "divides-by-mean"

import numpy as np


def center_tokens(x):
    return x / np.mean(x, axis=-1, keepdims=True)
'''

CORRECT = '''\
"""center_tokens written with np.subtract."""

EXERCISE = "center_tokens"

import numpy as np


def center_tokens(x):
    return np.subtract(x, x.mean(axis=-1, keepdims=True))
'''

TRIVIAL = '''\
"""Zeros everywhere."""

import numpy as np


def center_tokens(x):
    return np.zeros_like(x)


def layer_norm(x, gamma, beta, eps=1e-5):
    return np.zeros_like(x)
'''


def full_toy(tmp_path: Path) -> Path:
    """A copy of the toy course whose lesson declares every optional file, all of them right."""
    course = tmp_path / "toy"
    shutil.copytree(TOY_COURSE, course)
    checks = course / "tests" / "checks" / "toy"
    (checks / "diagnoses.py").write_text(DIAGNOSES)
    (checks / "pictures.py").write_text(PICTURES)
    (checks / "work.py").write_text(WORK)
    catalog = course / "tests" / "catalog" / "toy"
    for kind, text in (("bugs", BUG), ("correct", CORRECT), ("trivial", TRIVIAL)):
        (catalog / kind).mkdir(parents=True)
        (catalog / kind / "entry.py").write_text(text)
    return course


def lint(course: Path, *args: str):
    return grader_outside("lint", "--course", str(course), *args, cwd=course)


def line_of(path: Path, text: str) -> int:
    """The line (from 1) where ``text`` first appears in the file at ``path``."""
    lines = path.read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


# ----------------------------------------------------------------------------- the breaks
# Each break changes the copy and returns (the file, the text on the line to be named, or that
# text and how many lines before or after it, words of the message).

CHECKS = Path("tests/checks/toy")
CENTER, NORM, STRATEGIES = (
    CHECKS / "test_center_tokens.py",
    CHECKS / "test_layer_norm.py",
    CHECKS / "strategies.py",
)


def mark_names_no_exercise(c):
    edit(c / NORM, '@graded("layer_norm", points=4)', '@graded("layer_nrom", points=4)')
    return NORM, '@graded("layer_nrom"', "'layer_nrom' is not one of center_tokens, layer_norm"


def mark_with_no_points(c):
    edit(c / NORM, '@graded("layer_norm", points=4)', '@graded("layer_norm", points=0)')
    return NORM, "points=0", "points must be a positive number"


def check_without_a_mark(c):
    edit(c / CENTER, '@graded("center_tokens", points=1)\n', "")
    return CENTER, ("def test_centering_leaves_x_unchanged", -1), "has no @graded"  # its @given


def two_checks_of_one_name(c):
    with (c / NORM).open("a") as f:
        f.write(
            textwrap.dedent('''

            @graded("layer_norm", points=1)
            @given(case=layers())
            def test_centering_keeps_the_shape(student, case):
                """A second check of the same name."""
                x, gamma, beta = case
                expect.shape(student.layer_norm(x, gamma, beta), x.shape, name="layer_norm(x)")
            ''')
        )
    return NORM, '@graded("layer_norm", points=1)', "another check is named test_centering_keeps_the_shape"


def hidden_check_outside_hidden(c):
    edit(
        c / CENTER,
        '@graded("center_tokens", points=3)',
        '@graded("center_tokens", points=3, visibility="hidden")',
    )
    return CENTER, 'visibility="hidden"', "its file is outside"


def exercise_without_checks(c):
    with (c / "solutions" / "toy.py").open("a") as f:
        f.write(
            textwrap.dedent('''

            def double_tokens(x):
                """Twice x."""
                ### BEGIN SOLUTION
                return 2 * x
                ### END SOLUTION
            ''')
        )
    return Path("solutions/toy.py"), "def double_tokens", "double_tokens has no check"


def typo_in_a_check(c):
    edit(c / CENTER, "expect.shape(student.center_tokens(x)", "expect.shap(student.center_tokens(x)")
    return CENTER, "expect.shap(", "AttributeError"


def misnamed_fixture(c):
    edit(
        c / CENTER,
        "def test_centering_keeps_the_shape(student, x):",
        "def test_centering_keeps_the_shape(studnet, x):",
    )
    return CENTER, "(studnet, x)", "'studnet', which no fixture provides"


def check_file_that_does_not_parse(c):
    edit(c / CENTER, "    got = student.center_tokens(x)\n", "    got = student.center_tokens(x\n")
    return CENTER, "got = student.center_tokens(x", "cannot be imported: SyntaxError"


def strategy_that_cannot_draw(c):
    edit(c / STRATEGIES, "st.integers(1, 4)", "st.integers(4, 1)")
    return STRATEGIES, "st.integers(4, 1)", "on the reference solution: InvalidArgument"


def strategy_drawing_what_the_reference_refuses(c):
    edit(c / STRATEGIES, "(D,), elements=st.floats(0.5, 2", "(D + 1,), elements=st.floats(0.5, 2")
    return (
        NORM,
        "got = student.layer_norm(x, gamma, beta)",
        "fails on the reference solution: the reference says",
    )


def probe_of_no_exercise(c):
    edit(c / CHECKS / "diagnoses.py", 'PROBES = {\n    "center_tokens"', 'PROBES = {\n    "centre_tokens"')
    return CHECKS / "diagnoses.py", '"centre_tokens": [', "PROBES names 'centre_tokens'"


def probe_with_a_wrong_parameter(c):
    edit(c / CHECKS / "diagnoses.py", '{"x": np.array([[[3.0', '{"y": np.array([[[3.0')
    return CHECKS / "diagnoses.py", '{"y": np.array', "probe 1 of center_tokens cannot call it"


def returns_with_wrong_parameters(c):
    edit(c / CHECKS / "diagnoses.py", "returns=lambda x: x / np.mean(x,", "returns=lambda X: X / np.mean(X,")
    return CHECKS / "diagnoses.py", "returns=lambda X", "returns= takes X, which center_tokens does not"


def typo_in_a_mistake(c):
    edit(c / CHECKS / "diagnoses.py", "returns=lambda x: x / np.mean(", "returns=lambda x: x / np.maen(")
    return CHECKS / "diagnoses.py", "np.maen(", "returns= stops on probe 0 with AttributeError"


def typo_in_a_test_of_calls(c):
    edit(c / CHECKS / "diagnoses.py", "one.call.mutated", "one.call.mutate")
    return (
        CHECKS / "diagnoses.py",
        "one.call.mutate for",
        "shows= stops on the reference's calls with AttributeError",
    )


def picture_of_the_wrong_shape(c):
    edit(c / CHECKS / "pictures.py", "np.abs(np.asarray(got))[None]", "np.abs(np.asarray(got))")
    return CHECKS / "pictures.py", '"center_tokens": Picture(', "reads weights of shape (3, 3)"


def picture_calling_with_wrong_names(c):
    edit(c / CHECKS / "pictures.py", 'arguments={"x":', 'arguments={"tokens":')
    return CHECKS / "pictures.py", '"center_tokens": Picture(', "the picture of center_tokens cannot call it"


def weak_check_that_is_no_check(c):
    edit(c / CHECKS / "work.py", '("centering_keeps_the_shape",)', '("centering_keeps_shape",)')
    return (
        CHECKS / "work.py",
        '"centering_keeps_shape"',
        "'centering_keeps_shape', which is no check of center_tokens",
    )


def catalog_exercise_not_of_the_lesson(c):
    edit(c / "tests/catalog/toy/bugs/entry.py", 'EXERCISE = "center_tokens"', 'EXERCISE = "centre_tokens"')
    return Path("tests/catalog/toy/bugs/entry.py"), "EXERCISE =", "'centre_tokens' is not an exercise of toy"


def catalog_diagnosis_not_defined(c):
    edit(c / "tests/catalog/toy/bugs/entry.py", '"divides-by-mean"', '"divided-by-mean"')
    return (
        Path("tests/catalog/toy/bugs/entry.py"),
        "DIAGNOSIS =",
        "'divided-by-mean' is no mistake of center_tokens",
    )


def catalog_bug_without_its_exercise(c):
    edit(c / "tests/catalog/toy/bugs/entry.py", 'EXERCISE = "center_tokens"\n', "")
    return (
        Path("tests/catalog/toy/bugs/entry.py"),
        '"""center_tokens divides',
        "a bug must say which exercise",
    )


def catalog_entry_defining_none_of_the_functions(c):
    edit(c / "tests/catalog/toy/correct/entry.py", "def center_tokens(x):", "def centre_tokens(x):")
    return (
        Path("tests/catalog/toy/correct/entry.py"),
        '"""center_tokens written',
        "defines none of the lesson's",
    )


def shows_that_fits_the_reference(c):
    edit(
        c / CHECKS / "diagnoses.py",
        'shows=lambda seen: any("x" in one.call.mutated for one in seen)',
        "shows=lambda seen: True",
    )
    return (
        CHECKS / "diagnoses.py",
        "shows=lambda seen: True",
        "finds this mistake in the reference's own calls",
    )


def hint_that_stops(c):
    edit(
        c / CHECKS / "diagnoses.py",
        '"each token is divided by its mean instead of moved by it"',
        "lambda arguments: f\"divided by the mean, for y = {arguments['y']}\"",
    )
    return CHECKS / "diagnoses.py", "lambda arguments:", "the hint stops with KeyError"


def weak_checks_as_one_string(c):
    edit(c / CHECKS / "work.py", '("centering_keeps_the_shape",)', '("centering_keeps_the_shape")')
    return CHECKS / "work.py", '("centering_keeps_the_shape")', "must be a tuple of names"


BREAKS = [
    mark_names_no_exercise,
    mark_with_no_points,
    check_without_a_mark,
    two_checks_of_one_name,
    hidden_check_outside_hidden,
    exercise_without_checks,
    typo_in_a_check,
    misnamed_fixture,
    check_file_that_does_not_parse,
    strategy_that_cannot_draw,
    strategy_drawing_what_the_reference_refuses,
    probe_of_no_exercise,
    probe_with_a_wrong_parameter,
    returns_with_wrong_parameters,
    typo_in_a_mistake,
    typo_in_a_test_of_calls,
    picture_of_the_wrong_shape,
    picture_calling_with_wrong_names,
    weak_check_that_is_no_check,
    catalog_exercise_not_of_the_lesson,
    catalog_diagnosis_not_defined,
    catalog_bug_without_its_exercise,
    catalog_entry_defining_none_of_the_functions,
    shows_that_fits_the_reference,
    hint_that_stops,
    weak_checks_as_one_string,
]

PROBLEM = re.compile(r"^(?P<file>[^:\s]+):(?P<line>\d+): (?P<message>.+)$")


def problems(stdout: str) -> list[tuple[str, int, str]]:
    return [(m["file"], int(m["line"]), m["message"]) for m in map(PROBLEM.match, stdout.splitlines()) if m]


def test_the_toy_lesson_with_every_optional_file_is_clean(tmp_path):
    course = full_toy(tmp_path)
    done = lint(course)
    assert done.returncode == 0, done.stdout + done.stderr
    assert problems(done.stdout) == []
    assert "center_tokens: 6 points from 3 checks" in done.stdout
    assert "layer_norm: 8 points from 3 checks (1 hidden)" in done.stdout
    assert "in all: 14 points from 6 checks" in done.stdout
    assert "no problem found" in done.stdout
    assert "  graded without pytest\n" in done.stdout


def test_lint_says_why_a_lesson_is_graded_through_pytest(tmp_path):
    """An author who adds a conftest.py (or anything else the run without pytest cannot mirror)
    hears that gradings of the lesson now go through pytest, and why."""
    course = full_toy(tmp_path)
    (course / "tests" / "checks" / "toy" / "conftest.py").write_text("# the author's own\n")
    done = lint(course)
    assert done.returncode == 0, done.stdout + done.stderr
    said = [line for line in done.stdout.splitlines() if "graded" in line and "pytest" in line]
    assert len(said) == 1 and "graded through pytest" in said[0] and "conftest.py" in said[0], said


@pytest.mark.parametrize("brk", BREAKS, ids=lambda f: f.__name__)
def test_each_break_is_reported_at_its_file_and_line(tmp_path, brk):
    course = full_toy(tmp_path)
    file, text, words = brk(course)
    done = lint(course)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    found = problems(done.stdout)
    text, offset = text if isinstance(text, tuple) else (text, 0)
    line = line_of(course / file, text) + offset
    wanted = [(f, n, m) for f, n, m in found if f == str(file) and words in m]
    assert wanted, (str(file), line, words, done.stdout)
    assert any(n == line for _, n, _ in wanted), (line, wanted)
    assert all(not f.startswith(("grader/", str(ROOT))) for f, _, _ in found), found


def test_the_course_lessons_lint_clean():
    done = python("lint")
    assert done.returncode == 0, done.stdout + done.stderr
    for lesson in Course.at(ROOT).lessons:
        assert f"lesson {lesson.name}:" in done.stdout
    assert done.stdout.count("no problem found") == len(Course.at(ROOT).lessons)
    # the course's own lessons are graded without pytest (a change that sent one through it
    # would cost every grading of it a fifth of a second)
    assert done.stdout.count("  graded without pytest\n") == len(Course.at(ROOT).lessons), done.stdout


def test_a_lesson_that_is_not_there_is_a_bad_argument():
    done = python("lint", "--course", str(TOY_COURSE), "--lesson", "nope")
    assert done.returncode == 2
    assert "no lesson 'nope'" in done.stderr and "toy" in done.stderr
    assert "Traceback" not in done.stderr
