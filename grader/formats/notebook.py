"""The nbgrader source notebook of a lesson, generated from its single source ``solutions/NAME.py``.

Its solution markers are kept: nbgrader's ``generate_assignment`` replaces each
marked region with the stub. The text comes from the docstrings of the module
and of the functions; the points of each test cell are the checks' own (the
command that builds the notebook reads them from the marks and passes them in).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

from ..core.ipynb import nbgrader_metadata
from ..core.lesson import Lesson
from ..core.pylines import physical_lines

SCHEMA_VERSION = 3
#: grade_id of the locked cell holding the code given to students (imports, helpers).
GIVEN_ID = "given_code"


# ----------------------------------------------------------------------------- the source notebook

#: What every notebook says after the lesson's own introduction (its module docstring).
_HOW = """\
In this notebook you write {count}. Each one has a code cell to complete: replace \
`raise NotImplementedError()` with your code and keep the `def` line as it is. Below each \
function, a test cell runs the autograder's property checks on it (many random shapes and \
values) and shows the points you earned; when a check fails it prints the smallest input that \
breaks your code.

Write all your code inside the solution cells: code in cells you add yourself is not graded. \
Run the cells from top to bottom, then *Kernel > Restart & Run All* before you submit.
"""


def introduction(source: str, exercises: tuple[str, ...]) -> str:
    """The notebook's first cell: the lesson's module docstring (its first line as the title),
    then how to work in the notebook."""
    doc = ast.get_docstring(ast.parse(source)) or ""
    title, _, rest = doc.partition("\n")
    count = f"{len(exercises)} functions" if len(exercises) != 1 else "one function"
    parts = [f"# {title.strip().rstrip('.')}", rest.strip(), _HOW.format(count=count)]
    return "\n\n".join(p for p in parts if p)


def _summary(function_source: str) -> str:
    """The first paragraph of a function's docstring, on one line."""
    doc = ast.get_docstring(ast.parse(function_source).body[0]) or ""
    return " ".join(doc.split("\n\n")[0].split())


def reference_parts(source: str, exercises: tuple[str, ...]) -> tuple[str, dict[str, str]]:
    """(given code, {exercise: full function source}) of the reference module's text.

    The given code is every top-level statement but the docstring and the
    graded functions, ``exercises`` (the imports and given helpers); each
    function keeps its solution markers.
    """
    tree = ast.parse(source)
    lines = physical_lines(source)
    given, functions = [], {}
    for index, node in enumerate(tree.body):
        start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        end = node.end_lineno
        # indented comments after the last statement (### END SOLUTION) belong to the function
        while end < len(lines) and (not lines[end].strip() or lines[end][:1].isspace()):
            end += 1
        text = "\n".join(lines[start - 1 : end]).rstrip()
        if index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the module docstring: the introduction says it in its own words
        if isinstance(node, ast.FunctionDef) and node.name in exercises:
            functions[node.name] = text
        else:
            given.append(text)
    missing = [name for name in exercises if name not in functions]
    if missing:
        raise ValueError(f"the reference defines no {', '.join(missing)}")
    return "\n\n\n".join(given).strip() + "\n", functions


def given_code(lesson: Lesson) -> str:
    """The code every student of ``lesson`` gets as it is: the imports and given helpers.

    Read from the reference, or where there is none (the student release) from
    the stubs, which hold the same code outside the solution regions.
    """
    return reference_parts(lesson.source.read_text(encoding="utf-8"), lesson.exercises)[0]


def autograder_cell_source(lesson: str, exercise: str, points: float, *, hidden: bool) -> str:
    """The autograder test cell of ``exercise``; its last expression is the points earned."""
    call = f"grade_here({exercise!r}, globals(), lesson={lesson!r}"
    lines = [
        f"# Autograder test for `{exercise}` ({points:g} points): the property checks of the",
        "# grader, on the same inputs as `python -m grader check`. The last line shows your points.",
        "from grader.notebook import grade_here",
        "",
        f"points = {call})",
    ]
    if hidden:
        lines += [
            "### BEGIN HIDDEN TESTS",
            f"points += {call}, hidden=True)",
            "### END HIDDEN TESTS",
        ]
    lines.append("points")
    return "\n".join(lines)


def _cell(kind: str, source: str, cell_id: str, nbgrader: dict | None) -> dict:
    cell = {"cell_type": kind, "id": cell_id, "metadata": {}, "source": source}
    if nbgrader is not None:
        cell["metadata"]["nbgrader"] = {**nbgrader, "grade_id": cell_id, "schema_version": SCHEMA_VERSION}
    if kind == "code":
        cell["execution_count"] = None
        cell["outputs"] = []
    return cell


_READ_ONLY = {"grade": False, "solution": False, "locked": True}


def build_notebook(lesson: Lesson, points: dict[str, float], hidden_points: dict[str, float]) -> dict:
    """The nbgrader source notebook (nbformat 4) of ``lesson``, from its solution; ``points``
    and ``hidden_points`` are each exercise's points in all its checks and in its hidden ones.

    Its text comes from the solution's docstrings: the module's introduces the
    notebook, each function's first paragraph introduces its cell. Solution
    cells hold each graded function whole, solution markers included; each is
    followed by a test cell worth that exercise's points (read from the
    checks), whose hidden part, if the exercise has hidden checks, sits
    between nbgrader's hidden-test markers.
    """
    source = lesson.solution.read_text(encoding="utf-8")
    given, functions = reference_parts(source, lesson.exercises)
    cells = [
        _cell("markdown", introduction(source, lesson.exercises), "introduction", _READ_ONLY),
        _cell("code", given.rstrip("\n"), GIVEN_ID, _READ_ONLY),
    ]
    for number, name in enumerate(lesson.exercises, start=1):
        signature = functions[name].split("\n", 1)[0].removeprefix("def ").rstrip(":")
        heading = f"## {number}. `{signature}` ({points[name]:g} points)\n\n"
        cells.append(_cell("markdown", heading + _summary(functions[name]), f"about_{name}", _READ_ONLY))
        cells.append(
            _cell("code", functions[name], name, {"grade": False, "solution": True, "locked": False})
        )
        cells.append(
            _cell(
                "code",
                autograder_cell_source(
                    lesson.name, name, points[name], hidden=hidden_points.get(name, 0) > 0
                ),
                f"test_{name}",
                {"grade": True, "solution": False, "locked": True, "points": points[name]},
            )
        )
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def fill_solutions(notebook: dict, code: dict[str, str]) -> dict:
    """A copy of ``notebook`` whose solution cells hold ``code[grade_id]`` where given.

    For instructors and tests: a release notebook filled with the reference's
    functions is a submission that must score full marks.
    """
    filled = json.loads(json.dumps(notebook))
    for cell in filled["cells"]:
        meta = nbgrader_metadata(cell)
        if meta and meta.get("solution") and meta.get("grade_id") in code:
            cell["source"] = code[meta["grade_id"]]
    return filled


def write_notebook(notebook: dict, path: Path) -> Path:
    """Write ``notebook`` as Jupyter does (indented JSON, UTF-8, final newline)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
