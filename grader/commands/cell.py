"""``grade_here``: what an autograder test cell of a lesson's nbgrader notebook runs.

It rebuilds the lesson's file from the cells that defined the student's
functions and grades it with :func:`grader.engine.run.run_checks`: the same
checks, the same deterministic inputs, so the points equal those of ``grade``.
Inside nbgrader the checks run in the student's kernel (nbgrader's design): for
grades that student code cannot tamper with, run ``grade`` or ``batch`` on the
collected notebooks. Notebooks import it as ``from grader.notebook import grade_here``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import linecache
import tempfile
import textwrap
import warnings
from pathlib import Path

from ..core.ipynb import comment_magics
from ..core.lesson import Lesson, find_course
from ..core.results import Status
from ..core.settings import resolve
from ..engine.run import run_checks
from ..formats.notebook import given_code
from ..formats.text import exercise_lines, lesson_errors, not_final


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


class NoPointsYet(Exception):
    """What a test cell raises when the machine was too busy to finish its checks, even on a
    second try: any number it showed would be no grade.

    nbgrader reads a test cell's points from its last value and has no "no grade" for it; an
    error is the one outcome it never takes for points earned (it records the cell as failed,
    with 0, until the notebook is autograded again). The cell shows this message alone, no
    traceback (IPython shows what ``_render_traceback_`` returns in its place)."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


#: Width of the feedback a test cell prints (nbgrader's pages show about this much).
FEEDBACK_WIDTH = 76


def _feedback(report, exercise: str, *, hidden: bool) -> str:
    """A short account of one exercise's checks: its score, then what the short text report
    says of them (:func:`grader.formats.text.exercise_lines`; a hidden cell: no likely mistake,
    and its checks one line each)."""
    tests = [t for t in report.tests if t.exercise == exercise]
    score = sum(t.score for t in tests)
    total = sum(t.max_score for t in tests)
    passed = sum(t.status is Status.PASSED for t in tests)
    label = "hidden checks" if hidden else "checks"
    points = (
        f"unfinished, no points yet (out of {total:g})"
        if any(t.unfinished for t in tests)
        else f"{score:g}/{total:g} points"
    )
    lines = [f"{exercise}: {points}, {passed} of {len(tests)} {label} pass"]
    if report.problem:
        lines.append(
            textwrap.fill(report.problem, FEEDBACK_WIDTH, initial_indent="  ", subsequent_indent="  ")
        )
        return "\n".join(lines)
    shown = dataclasses.replace(report, tests=tuple(tests), diagnoses={} if hidden else report.diagnoses)
    lines += exercise_lines(shown, exercise, width=FEEDBACK_WIDTH, used=len(lines))
    if report.lesson_errors:
        lines += lesson_errors(report.lesson_errors).splitlines()
    if shown.unfinished:
        lines.append(
            textwrap.fill(not_final(shown), FEEDBACK_WIDTH, initial_indent="  ", subsequent_indent="  ")
        )
    return "\n".join(lines)


def grade_here(
    exercise: str, namespace: dict, *, lesson: str | None = None, hidden: bool = False, show: bool = True
) -> float:
    """Points earned in ``exercise`` of ``lesson`` (default: the course's only one) by the
    functions defined in ``namespace``.

    Called by the notebook's test cells with ``globals()``; the course is found
    as every command finds it (:func:`grader.core.lesson.find_course`: the nbgrader
    course's configuration names it). Runs :func:`grader.engine.run.run_checks` in
    this process (isolation ``none``) on the lesson's file rebuilt by
    :func:`source_from_namespace`: the visible checks of ``exercise``, or with
    ``hidden`` its hidden checks only. Prints a short report on stdout when
    ``show``; never writes to stderr and never raises for anything the
    student's code does: the worst is 0 points. When the machine was too busy to finish the
    checks (twice), it prints no score and raises :class:`NoPointsYet`.
    """
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
            settings = resolve("notebook", only=(exercise,), public=not hidden)
            checks = chosen.hidden if hidden else chosen.checks
            report = run_checks(file, lesson=chosen, settings=settings, checks=checks)
            if report.busy:  # the machine was too busy: once more before saying so
                report = run_checks(file, lesson=chosen, settings=settings, checks=checks)
        score = sum(t.score for t in report.tests if t.exercise == exercise)
        message = _feedback(report, exercise, hidden=hidden)
        unfinished = report.unfinished
        broken = report.lesson_failed
    except Exception as err:  # noqa: BLE001 - a test cell must show a number, not a traceback
        message = f"{exercise}: the checks could not run ({type(err).__name__}: {err}); 0 points"
        score, unfinished, broken = 0, False, False
    if show:
        print(message)
    if broken:  # the lesson's mistake, said in the message above at its file and line
        raise NoPointsYet(
            f"No points for {exercise} yet: a mistake in the lesson (not in your code) kept some of its "
            "checks from running. Your instructor must mend it (instructors: python -m grader lint)."
        )
    if unfinished:
        raise NoPointsYet(
            f"No points for {exercise} yet: the computer was too busy to finish its checks, twice. "
            "Run this cell again later, when the computer is less busy (instructors: nbgrader autograde --force)."
        )
    score = round(score, 6)
    return int(score) if score == int(score) else score
