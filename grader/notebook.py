"""Notebooks: the exercise as an nbgrader notebook, and the code inside a student's notebook.

Three things live here:

* :func:`notebook_source`: the Python code of a ``.ipynb`` file's content
  (standard library only), so ``grade`` and ``batch`` can grade notebooks as
  they grade the lesson's ``.py`` files (:mod:`grader.intake` reads the file);
* :func:`build_notebook`: the nbgrader source notebook of a lesson, generated
  from its single source ``solutions/NAME.py`` (its solution markers are kept:
  nbgrader's ``generate_assignment`` replaces each marked region with the stub);
  the text comes from the docstrings of the module and of the functions;
* :func:`grade_here`: what an autograder test cell of that notebook calls. It
  rebuilds the lesson's file from the cells that defined the student's
  functions and grades it with :func:`grader.run.run_checks`: the same checks,
  the same deterministic inputs, so the points equal those of ``grade``.
  Inside nbgrader the checks run in the student's kernel (nbgrader's design):
  for grades that student code cannot tamper with, run ``grade`` or ``batch``
  on the collected notebooks.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import linecache
import os
import re
import tempfile
import textwrap
import warnings
from pathlib import Path

from .lesson import Lesson, find_course

#: The nbgrader metadata schema this module writes.
SCHEMA_VERSION = 3
#: grade_id of the locked cell holding the code given to students (imports, helpers).
GIVEN_ID = "given_code"


class NotebookError(ValueError):
    """A notebook file that cannot be read; the message says why, for a student."""


# ----------------------------------------------------------------------------- reading notebooks


def _text(source, where: str) -> str:
    """A cell's source as one string (nbformat allows a string or a list of strings)."""
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(part, str) for part in source):
        return "".join(source)
    kind = "a list holding something other than text" if isinstance(source, list) else _kind(source)
    raise NotebookError(
        f"{where} is damaged: its source is {kind}, not text. Open the notebook in Jupyter, "
        "retype that cell and save, or start again from a fresh copy of the assignment."
    )


def _kind(value) -> str:
    if value is None:
        return "missing"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


def _nbgrader(cell: dict) -> dict | None:
    """The cell's nbgrader metadata, or None when it has none."""
    metadata = cell.get("metadata")
    found = metadata.get("nbgrader") if isinstance(metadata, dict) else None
    return found if isinstance(found, dict) else None


def is_autograder_cell(cell: dict) -> bool:
    """An autograder test cell: graded by nbgrader from its output, not written by the student."""
    meta = _nbgrader(cell)
    return bool(meta and meta.get("grade") and not meta.get("solution"))


def comment_magics(code: str) -> str:
    """Comment out IPython magics and shell escapes (lines starting with ``%`` or ``!``)."""
    lines = []
    for line in code.splitlines():
        stripped = line.lstrip()
        if stripped.startswith(("%", "!")):
            line = f"{line[: len(line) - len(stripped)]}# {stripped}"
        lines.append(line)
    return "\n".join(lines)


#: Largest notebook file accepted, in bytes: room for plots in the outputs, far below a risk.
MAX_NOTEBOOK = 16 << 20
#: Deepest nesting of JSON arrays and objects accepted; a notebook saved by Jupyter needs
#: about ten levels, and a parser that recurses must never meet thousands.
MAX_NESTING = 64

#: What matters to nesting in JSON text: brackets, quotes and backslashes.
_STRUCTURE = re.compile(r'[\[\]{}"\\]')


def too_large(name: str, size: int) -> NotebookError:
    """The error for a notebook of ``size`` bytes, over :data:`MAX_NOTEBOOK`."""
    return NotebookError(
        f"{name} holds {size / 2**20:.1f} MiB; a notebook may hold at most {MAX_NOTEBOOK >> 20} MiB. "
        "Its outputs (plots, printed arrays) probably fill it: clear them (Edit > Clear Outputs of "
        "All Cells), save, and hand it in again."
    )


def _nested_too_deep(text: str) -> bool:
    """True when the JSON ``text`` nests arrays and objects more than MAX_NESTING deep.

    One pass over the characters that matter, brackets inside strings left out:
    it cannot be driven into a RecursionError, and its time grows with the text's
    length, never faster (an unclosed string full of escaped quotes included).
    """
    if text.count("[") + text.count("{") <= MAX_NESTING:
        return False
    depth, in_string, skip = 0, False, -1
    for found in _STRUCTURE.finditer(text):
        where, char = found.start(), found.group()
        if where == skip:  # the character a backslash escapes
            continue
        if in_string:
            if char == "\\":
                skip = where + 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_NESTING:
                return True
        elif char in "]}":
            depth -= 1
    return False


def _read(path: Path) -> bytes:
    """The bytes of the notebook file at ``path``, never more than MAX_NOTEBOOK of them."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > MAX_NOTEBOOK:
                raise too_large(path.name, size)
            return f.read(MAX_NOTEBOOK + 1)  # one byte over: read_cells refuses a file that grew
    except OSError as err:
        raise NotebookError(f"{path.name} could not be read ({err.strerror or err}).") from None


def read_cells(notebook: Path | bytes, *, name: str | None = None) -> list[dict]:
    """The cells of an nbformat-4 notebook, each with its source as one string.

    ``notebook`` is the file's content (``name`` is then how messages call it)
    or, for trusted callers, a path to read. Raises NotebookError with a
    message a student understands when it is not a usable notebook.
    """
    if isinstance(notebook, bytes):
        raw, name = notebook, name or "the notebook"
    else:
        raw, name = _read(Path(notebook)), name or Path(notebook).name
    if len(raw) > MAX_NOTEBOOK:
        raise too_large(name, len(raw))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise NotebookError(
            f"{name} is not a notebook: it is not text (not UTF-8). Download it again from "
            "Jupyter (File > Download) without opening it in another program."
        ) from None
    if _nested_too_deep(text):
        raise NotebookError(
            f"{name} is not a readable notebook: its JSON is nested more than {MAX_NESTING} levels "
            "deep, which no notebook saved by Jupyter is. Download it again from Jupyter "
            "(File > Download), or start again from a fresh copy of the assignment."
        )
    try:
        document = json.loads(text)
    except json.JSONDecodeError as err:
        hint = (
            "it ends too early, as if it was cut off while saving"
            if not raw.rstrip().endswith(b"}") or err.pos >= len(text.rstrip()) - 1
            else f"line {err.lineno}, column {err.colno}: {err.msg}"
        )
        raise NotebookError(
            f"{name} is not a readable notebook: its JSON is broken ({hint}). It was probably "
            "truncated or edited outside Jupyter; restore a checkpoint (File > Revert Notebook "
            "to Checkpoint) or download it again."
        ) from None
    except (ValueError, RecursionError):  # a number of thousands of digits, say
        raise NotebookError(
            f"{name} is not a readable notebook: its JSON holds a value no notebook holds. It was "
            "probably edited outside Jupyter; restore a checkpoint or download it again."
        ) from None
    if not isinstance(document, dict):
        raise NotebookError(f"{name} is not a notebook: it holds {_kind(document)}, not a notebook object.")
    version = document.get("nbformat")
    if version != 4:
        shown = "no format number" if version is None else f"format {version!r}"
        raise NotebookError(
            f"{name} is not a Jupyter notebook in format 4 (it has {shown}). Open it in a current "
            "Jupyter and save it again, or start from a fresh copy of the assignment."
        )
    cells = document.get("cells")
    if not isinstance(cells, list):
        raise NotebookError(f"{name} is damaged: it has no list of cells.")
    if not cells:
        raise NotebookError(f"{name} has no cells at all: there is nothing to grade.")
    readable = []
    for number, cell in enumerate(cells, start=1):
        where = f"cell {number} of {name}"
        if not isinstance(cell, dict):
            raise NotebookError(f"{where} is damaged: it is {_kind(cell)}, not a cell.")
        kind = cell.get("cell_type")
        if kind not in ("code", "markdown", "raw"):
            raise NotebookError(f"{where} is damaged: its type is {kind!r}, not code, markdown or raw.")
        readable.append({**cell, "source": _text(cell.get("source"), where)})
    return readable


def notebook_source(notebook: Path | bytes, *, name: str | None = None) -> bytes:
    """The Python code of a notebook (its content, or a path: see :func:`read_cells`), as the
    bytes of a ``.py`` file.

    When the notebook carries nbgrader metadata (it came from the nbgrader
    assignment), the code is that of its solution cells, preceded by the
    locked cells that give code (the imports and given helpers, without which no
    solution runs); test cells and cells the student added are left out.
    Otherwise it is the code of every code cell. Cells are joined with blank
    lines; IPython magics and shell lines are commented out (not removed, so
    every cell keeps its number of lines). Raises NotebookError for a file
    that is not a usable notebook.
    """
    cells = read_cells(notebook, name=name)
    code = [c for c in cells if c["cell_type"] == "code"]
    if any(_nbgrader(c) is not None for c in cells):
        code = [c for c in code if _nbgrader(c) is not None and not is_autograder_cell(c)]
    parts = [comment_magics(c["source"]).rstrip("\n") for c in code]
    return ("\n\n".join(p for p in parts if p.strip()) + "\n").encode("utf-8")


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
    lines = source.splitlines()
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


def build_notebook(lesson: Lesson) -> dict:
    """The nbgrader source notebook (nbformat 4) of ``lesson``, from its solution.

    Its text comes from the solution's docstrings: the module's introduces the
    notebook, each function's first paragraph introduces its cell. Solution
    cells hold each graded function whole, solution markers included; each is
    followed by a test cell worth that exercise's points (read from the
    checks' marks), whose hidden part, if the exercise has hidden checks, sits
    between nbgrader's hidden-test markers.
    """
    from .run import suite_points

    source = lesson.solution.read_text(encoding="utf-8")
    given, functions = reference_parts(source, lesson.exercises)
    points = suite_points(lesson)
    hidden_points = suite_points(lesson, lesson.hidden) if lesson.hidden.is_dir() else {}
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
        meta = _nbgrader(cell)
        if meta and meta.get("solution") and meta.get("grade_id") in code:
            cell["source"] = code[meta["grade_id"]]
    return filled


def write_notebook(notebook: dict, path: Path) -> Path:
    """Write ``notebook`` as Jupyter does (indented JSON, UTF-8, final newline)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- grading in the kernel


def _cell_text(filename: str) -> tuple[int, str] | None:
    """(execution order, raw source) of the cell or file compiled under ``filename``."""
    shell = None
    with contextlib.suppress(ImportError):
        from IPython import get_ipython

        shell = get_ipython()
    if shell is not None:
        number = getattr(getattr(shell, "compile", None), "_filename_map", {}).get(filename)
        raw = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
        if number is not None and raw is not None and 0 <= number < len(raw):
            return number, raw[number]
    lines = linecache.getlines(filename)
    if not lines:
        return None
    # transformed IPython code: magics became get_ipython() calls
    text = "".join(
        f"# {line.lstrip()}" if line.lstrip().startswith("get_ipython().") else line for line in lines
    )
    return 1 << 30, text


def source_from_namespace(namespace: dict, lesson: Lesson) -> str:
    """The lesson's file rebuilt from a live namespace (a notebook's ``globals()``).

    The given code first (imports and helpers, as in the locked cell), then
    every cell that defined one of the graded functions, in the order the
    cells ran, each once.
    """
    cells: dict[str, tuple[int, str]] = {}
    for name in lesson.exercises:
        code = getattr(namespace.get(name), "__code__", None)
        filename = getattr(code, "co_filename", None)
        if not filename or filename in cells:
            continue
        found = _cell_text(filename)
        if found is not None:
            cells[filename] = found
    ordered = sorted(cells.values(), key=lambda item: item[0])
    parts = [given_code(lesson)] + [comment_magics(text).rstrip("\n") for _, text in ordered]
    return "\n\n".join(part.rstrip("\n") for part in parts) + "\n"


def _feedback(report, exercise: str, *, hidden: bool) -> str:
    """A short account of one exercise's checks: score, then what failed."""
    tests = [t for t in report.tests if t.exercise == exercise]
    score = sum(t.score for t in tests)
    total = sum(t.max_score for t in tests)
    passed = sum(t.status.value == "passed" for t in tests)
    label = "hidden checks" if hidden else "checks"
    lines = [f"{exercise}: {score:g}/{total:g} points, {passed} of {len(tests)} {label} pass"]
    if report.problem:
        lines.append(textwrap.fill(report.problem, 76, initial_indent="  ", subsequent_indent="  "))
        return "\n".join(lines)
    failed = [t for t in tests if t.status.value != "passed"]
    reasons = {t.feedback for t in failed}
    if len(failed) > 1 and len(reasons) == 1 and not any(t.counterexample for t in failed):
        # every check failed for one reason (not written yet, missing, wrong signature)
        lines.append(textwrap.fill(reasons.pop(), 76, initial_indent="  ", subsequent_indent="  "))
        return "\n".join(lines)
    for t in failed:
        lines.append(f"  [{t.status.value.upper()}] {t.name} ({t.max_score:g} pts)")
        if t.title:
            lines.append(textwrap.indent(textwrap.fill(t.title, 70), "      "))
        if t.feedback and not hidden:
            lines.append(textwrap.indent(t.feedback, "      "))
    return "\n".join(lines)


def grade_here(
    exercise: str, namespace: dict, *, lesson: str | None = None, hidden: bool = False, show: bool = True
) -> float:
    """Points earned in ``exercise`` of ``lesson`` (default: the course's only one) by the
    functions defined in ``namespace``.

    Called by the notebook's test cells with ``globals()``; the course is found
    as every command finds it (:func:`grader.lesson.find_course`: the nbgrader
    course's configuration names it). Runs :func:`grader.run.run_checks` in
    this process (isolation ``none``) on the lesson's file rebuilt by
    :func:`source_from_namespace`: the visible checks of ``exercise``, or with
    ``hidden`` its hidden checks only. Prints a short report on stdout when
    ``show``; never writes to stderr and never raises for anything the
    student's code does: the worst is 0 points.
    """
    from .run import run_checks

    chosen = find_course().choose(lesson)
    if exercise not in chosen.exercises:
        raise ValueError(f"unknown exercise {exercise!r}; choose from {', '.join(chosen.exercises)}")
    noise = io.StringIO()
    message, score = "", 0
    try:
        with (
            contextlib.redirect_stdout(noise),
            contextlib.redirect_stderr(noise),
            warnings.catch_warnings(),
            tempfile.TemporaryDirectory(prefix="grade_here_") as tmp,
        ):
            warnings.simplefilter("ignore")
            file = Path(tmp) / chosen.filename
            file.write_text(source_from_namespace(namespace, chosen), encoding="utf-8")
            report = run_checks(
                file,
                lesson=chosen,
                exercises=(exercise,),
                include_hidden=hidden,
                isolation="none",
                checks=chosen.hidden if hidden else chosen.checks,
            )
        score = sum(t.score for t in report.tests if t.exercise == exercise)
        message = _feedback(report, exercise, hidden=hidden)
    except Exception as err:  # noqa: BLE001 - a test cell must show a number, not a traceback
        message = f"{exercise}: the checks could not run ({type(err).__name__}: {err}); 0 points"
        score = 0
    if show:
        print(message)
    score = round(score, 6)
    return int(score) if score == int(score) else score
