"""The student stubs are generated from the reference and must not drift from it (every lesson's)."""

import ast
import shutil
import subprocess
import sys

import pytest

from grader.commands import exercises
from grader.core import solution
from grader.core.lesson import Course

from .support import ROOT, TOY_COURSE

#: Every lesson of the course, as the course finds them, and the toy course's.
LESSONS = [*Course.at(ROOT).lessons, Course.at(TOY_COURSE).lesson("toy")]
each_lesson = pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.name)


@each_lesson
def test_committed_stubs_match_the_reference(lesson):
    wanted = solution.strip_solutions(lesson.solution.read_text(encoding="utf-8"))
    assert lesson.stubs.read_text(encoding="utf-8") == wanted, (
        f"{lesson.stubs} has drifted from {lesson.solution}: run `python -m grader exercises`"
    )


@each_lesson
def test_stubs_hold_no_solution_line(lesson):
    stub = lesson.stubs.read_text(encoding="utf-8")
    stub_lines = {line.strip() for line in stub.splitlines()}
    leaked = [line for line in solution.solution_lines(lesson.solution.read_text()) if line in stub_lines]
    assert not leaked


def _functions(source: str) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)}


@each_lesson
def test_every_exercise_is_a_stub_with_the_reference_signature_and_docstring(lesson):
    solution = _functions(lesson.solution.read_text())
    stub = _functions(lesson.stubs.read_text())
    assert lesson.exercises
    for name in lesson.exercises:
        assert ast.dump(stub[name].args) == ast.dump(solution[name].args)
        assert ast.get_docstring(stub[name], clean=False) == ast.get_docstring(solution[name], clean=False)
        assert isinstance(stub[name].body[-1], ast.Raise), f"{name} is not a stub"


def test_unbalanced_markers_are_refused():
    with pytest.raises(solution.MarkerError):
        solution.strip_solutions("def f():\n    ### BEGIN SOLUTION\n    return 1\n")
    with pytest.raises(solution.MarkerError):
        solution.strip_solutions("def f():\n    ### END SOLUTION\n")


def test_the_command_reports_drift(tmp_path):
    shutil.copytree(TOY_COURSE, tmp_path / "toy")
    lesson = Course.at(tmp_path / "toy").lesson("toy")
    lesson.stubs.write_text("# old\n")
    assert exercises.main(lessons=(lesson,), check=True) == 1
    assert exercises.main(lessons=(lesson,)) == 0
    assert exercises.main(lessons=(lesson,), check=True) == 0
    assert lesson.stubs.read_text() == solution.strip_solutions(lesson.solution.read_text())


@each_lesson
def test_stubs_are_clean_under_the_linter(lesson):
    """A student's starter file lints clean: an import only the reference's code used is marked."""
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "F", str(lesson.stubs)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout


def test_an_import_the_stubs_leave_unused_is_marked_and_no_other():
    source = (
        "from __future__ import annotations\n"
        "import math\n"
        "import numpy as np\n"
        "import os.path\n"
        "from typing import Any  # kept: has a comment\n"
        "from json import (\n    dumps,\n)\n"
        "import re\n"
        "__all__ = ['re']\n\n"
        "def f(x: Any):\n"
        "    '''Doc.'''\n"
        "    ### BEGIN SOLUTION\n"
        "    return np.sqrt(math.pi) + os.path.sep + dumps(x)\n"
        "    ### END SOLUTION\n\n"
        "def g():\n"
        "    return math.e\n"
    )
    lines = solution.strip_solutions(source).splitlines()
    marked = [line for line in lines if line.endswith(solution.FOR_YOUR_CODE)]
    assert marked == [
        f"import numpy as np{solution.FOR_YOUR_CODE}",
        f"import os.path{solution.FOR_YOUR_CODE}",
    ]
    assert "from __future__ import annotations" in lines and "import math" in lines and "import re" in lines
