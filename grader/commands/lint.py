"""``lint``: check a lesson on its own, before any student meets it.

Everything a lesson declares is read and tried against the lesson's own reference, and each
problem is reported as ``FILE:LINE: message`` where FILE is the lesson's file to mend (a check,
``strategies.py``, ``diagnoses.py``, ``pictures.py``, ``work.py``, a catalog entry, the
reference), never one of the grader's:

* every check carries one valid ``@graded`` mark naming an exercise of the lesson, hidden checks
  only in ``hidden/`` (and visible ones outside it); check names are unique; every exercise has
  checks; the points of each exercise and of the lesson are said;
* every check passes on the reference, run in this process on a few examples: a strategy that
  draws inputs the reference refuses, a typo in a check or a misnamed fixture shows here;
* ``diagnoses.py``: the probes name exercises and call them with their parameters, each mistake's
  ``returns=`` takes the exercise's parameters and runs on the probes, its ``shows=`` and hint run
  on the reference's own calls (and find no mistake there);
* ``pictures.py``: each picture calls its exercise with its parameters and reads a table of
  weights ``(heads, T, T)``, one row and one column per token of ``TOKENS``, from the reference;
* ``work.py``: ``WEAK_CHECKS`` names checks of their own exercise;
* the examples the lesson ships (``examples.json.gz``, if any): each can be read and was made
  from the lesson's files and releases as they are now (else ``python -m grader examples``);
* the catalog (``tests/catalog/NAME/``): every file parses and defines a function of the lesson;
  a bug declares the ``EXERCISE`` it breaks (one of the lesson's, defined in the file) and the
  ``DIAGNOSIS`` code that names it (one ``diagnoses.py`` gives that exercise).

The lesson's code runs in this process: it is the author's, not a student's.
"""

from __future__ import annotations

import ast
import contextlib
import io
from pathlib import Path

import numpy as np
import pytest

from ..core.authored import error_place, said, shown
from ..core.lesson import Lesson
from ..core.results import Visibility
from ..core.settings import resolve
from ..engine import direct, shipped
from ..engine.marks import MARK, MarkError, grading_of
from ..engine.pytested import plugin_autoload_off, pytest_arguments
from ..engine.submission import load_reference
from ..engine.upkeep import no_local_constants, nothing_stored
from .lint_declared import UNREAD, lint_catalog, lint_diagnoses, lint_pictures, lint_weak
from .lint_findings import LINT_EXAMPLES, Check, Findings

# ----------------------------------------------------------------------------- the checks


def _definitions(path: Path) -> dict[str, tuple[int, int]]:
    """function name -> (its ``@graded`` line, else its first line; its ``def`` line)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return {}
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            mark = next(
                (d.lineno for d in node.decorator_list if MARK in ast.unparse(d).split("(")[0]),
                node.decorator_list[0].lineno if node.decorator_list else node.lineno,
            )
            found.setdefault(node.name, (mark, node.lineno))
    return found


class _Linter:
    """A pytest plugin that collects the lesson's checks, sets aside each one whose mark, name
    or place is wrong (saying why), runs the others on the reference and keeps every failure."""

    def __init__(self, lesson: Lesson, found: Findings):
        self.lesson = lesson
        self.found = found
        self.names: dict[str, Check] = {}
        self.definitions: dict[Path, dict] = {}
        self.unloaded: set[tuple[Path, int]] = set()  # where check files failed to import
        self.failed: dict[tuple[Path, int, str], list[str]] = {}  # (where, why) -> checks failing so

    def where(self, item, *, mark: bool) -> tuple[Path, int]:
        path = Path(str(item.path))
        if path not in self.definitions:
            self.definitions[path] = _definitions(path)
        lines = self.definitions[path].get(getattr(item, "originalname", item.name))
        return path, (lines[0] if mark else lines[1]) if lines else 1

    def pytest_exception_interact(self, node, call, report):
        """A check file that cannot be imported: where it breaks, in the lesson's files."""
        if isinstance(node, pytest.Item):
            return  # a check's own failure: pytest_runtest_makereport has it
        path = Path(str(getattr(node, "path", self.lesson.checks)))
        err = call.excinfo.value
        cause = getattr(err, "__cause__", None) or err
        place = error_place(self.lesson, cause, (path, 1))
        self.found.unloaded = True
        if place not in self.unloaded:  # a file importing a broken one breaks at the same place
            self.unloaded.add(place)
            self.found.add(*place, f"the checks cannot be imported: {said(cause)}")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_collection_modifyitems(self, config, items):
        """Before the grader's plugin sees them: keep the checks it would accept."""
        kept = []
        for item in items:
            path, line = self.where(item, mark=True)
            hidden = self.lesson.hidden.resolve() in path.resolve().parents
            try:
                grading = grading_of(item, self.lesson.exercises)
            except MarkError as err:
                self.found.add(path, line, f"{item.name}: {err} (the lesson's exercises)")
                continue
            if grading is None:
                self.found.add(path, line, f"{item.name} has no @graded(exercise, points=...) mark")
                continue
            if hidden != (grading.visibility is Visibility.HIDDEN):
                where = "inside" if hidden else "outside"
                self.found.add(
                    path,
                    line,
                    f"{item.name} is marked visibility={grading.visibility.value!r} but its file is "
                    f"{where} {shown(self.lesson.hidden)}: hidden checks go there, visible ones outside",
                )
                continue
            name = item.name.removeprefix("test_")
            if name in self.names:
                first = self.names[name]
                self.found.add(
                    path,
                    line,
                    f"another check is named {item.name} ({shown(first.path)}:{first.line}); "
                    "a check's name says which failed in every report, so names must be unique",
                )
                continue
            self.names[name] = Check(name, path, line, grading.exercise, grading.points, grading.visibility)
            module = getattr(item, "module", None)
            if module is not None and Path(module.__file__).parent == self.lesson.checks:
                self.found.package = module.__package__ or ""
            kept.append(item)
        items[:] = kept
        self.found.checks = list(self.names.values())
        yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if report.passed or report.skipped or call.excinfo is None:
            return
        if report.when not in ("setup", "call"):
            return
        err = call.excinfo.value
        path, line = self.where(item, mark=False)
        if isinstance(err, pytest.FixtureLookupError) or type(err).__name__ == "FixtureLookupError":
            wanted = getattr(err, "argname", None)
            self.found.add(
                path,
                line,
                f"{item.name} asks for {wanted!r}, which no fixture provides: a check takes "
                "`student` (the submission's functions) and its drawn arguments",
            )
            return
        place = error_place(self.lesson, err, (path, line))
        self.failed.setdefault((*place, _message(err)), []).append(item.name)

    def pytest_sessionfinish(self, session):
        """The checks that failed on the reference, those failing alike at one place together
        (a strategy that cannot draw fails every check that draws from it)."""
        for (path, line, message), names in self.failed.items():
            who = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
            self.found.add(
                path,
                line,
                f"{who} {'fails' if len(names) == 1 else 'fail'} on the reference solution: {message}",
            )


def _message(err: BaseException) -> str:
    """What a check's failure on the reference says, in a line."""
    from_student = getattr(err, "message", None)  # StudentError: the reference itself raised
    if isinstance(from_student, str):
        return f"the reference says: {from_student.splitlines()[0] if from_student else ''}"
    text = str(err).strip()
    first = text.splitlines()[0] if text else ""
    inputs = getattr(err, "grader_inputs", None)
    shown = ""
    if inputs:
        shown = " (on " + ", ".join(f"{k}={_brief(v)}" for k, v in inputs.items()) + ")"
    return f"{type(err).__name__}: {first}{shown}"


def _brief(value) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _run_checks(lesson: Lesson, found: Findings, examples: int) -> None:
    """Collect the lesson's checks and run the valid ones on its reference, in this process."""
    linter = _Linter(lesson, found)
    args = [
        *pytest_arguments(lesson, None),
        "--submission",
        str(lesson.solution),
        "--isolation",
        "none",
        "--max-examples",
        str(examples),
        "--continue-on-collection-errors",
        "--assert=plain",
        "--tb=native",
    ]
    captured = io.StringIO()
    with (
        plugin_autoload_off(),
        nothing_stored(),
        no_local_constants(),
        contextlib.redirect_stdout(captured),
        contextlib.redirect_stderr(captured),
    ):
        code = pytest.main(args, plugins=[linter])
    if code in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR) and not found.problems:
        tail = " ".join(captured.getvalue().strip().splitlines()[-3:])
        found.add(lesson.checks, 1, f"the checks could not be collected: {tail}")


# ----------------------------------------------------------------------------- the whole lesson


def lint(lesson: Lesson, *, examples: int = LINT_EXAMPLES) -> Findings:
    """Every problem of ``lesson`` found without a student, with the checks it holds."""
    found = Findings()
    if lesson.reference is None:
        found.add(lesson.solution, 1, "the lesson has no reference solution to check against")
        return found
    try:
        reference = load_reference(lesson.solution, lesson.exercises)
    except BaseException as err:  # noqa: BLE001 - the lesson's reference; said with its line
        if isinstance(err, KeyboardInterrupt):
            raise
        found.add(
            *error_place(lesson, err, (lesson.solution, 1)), f"the reference cannot be loaded: {said(err)}"
        )
        return found
    if not lesson.exercises:
        found.add(lesson.solution, 1, "no exercise: no function holds a ### BEGIN SOLUTION block")
    _run_checks(lesson, found, examples)
    counts = {exercise: 0 for exercise in lesson.exercises}
    for check in found.checks:
        counts[check.exercise] += 1
    lines = _definitions(lesson.solution)
    for exercise, count in counts.items() if not found.unloaded else ():
        if not count:
            found.add(
                lesson.solution,
                lines.get(exercise, (1, 1))[1],
                f"{exercise} has no check: add one to {shown(lesson.checks)}",
            )
    codes = None
    if lesson.diagnoses.is_file():
        codes = _guarded(lesson, found, lesson.diagnoses, lint_diagnoses, reference)
        codes = UNREAD if codes is None else codes
    _guarded(lesson, found, lesson.pictures, lint_pictures, reference)
    _guarded(lesson, found, lesson.work, lint_weak)
    _guarded(lesson, found, lesson.catalog, lint_catalog, codes)
    _lint_shipped(lesson, found)
    return found


#: What each part of a shipped file's header is, said to its author.
_MADE_UNDER = {
    "format": "format",
    "hidden": "checks (public or hidden)",
    "python": "Python",
    "implementation": "Python implementation",
    "hypothesis": "Hypothesis release",
    "numpy": "numpy release",
    "examples": "examples per check",
    "profile": "profile",
    "grader": "grader files",
    "checks": "check files",
}


def _lint_shipped(lesson: Lesson, found: Findings) -> None:
    """Each file of examples the lesson ships can be read, and is current (:mod:`grader.engine.shipped`):
    a stale one is never believed, so every run draws its examples again."""
    settings = resolve("grade", lesson_exercises=lesson.exercises, lesson_name=lesson.name)
    for hidden in (False, True):
        path = shipped.path_of(lesson, hidden=hidden)
        found_there = shipped.examine(lesson, settings, hidden=hidden)
        if found_there.verdict is shipped.Verdict.REFUSED:
            found.add(
                path,
                1,
                f"cannot be used ({found_there.reason}): run `python -m grader examples` to write it again",
            )
        elif found_there.verdict is shipped.Verdict.STALE:
            changed = [_MADE_UNDER.get(name, name) for name in found_there.changed]
            found.add(
                path,
                1,
                f"is stale: it was made with other {' and '.join(changed)} than these, so no run "
                "replays it: run `python -m grader examples` to write it again",
            )


def _guarded(lesson: Lesson, found: Findings, path: Path, step, *args):
    """``step(lesson, found, *args)``; a declaration too far from what it should be to be read
    (PROBES[exercise] not a list, ...) is said at its place, never as a traceback."""
    try:
        return step(lesson, found, *args)
    except Exception as err:  # noqa: BLE001 - the lesson's declarations; said with their place
        place = error_place(lesson, err, (path, 1))
        found.add(*place, f"{shown(path)} could not be read as the grader reads it: {said(err)}")
        return None


def summary(lesson: Lesson, found: Findings) -> str:
    """The lesson's points, per exercise and in all, as its marks give them."""
    lines = [f"lesson {lesson.name}:"]
    total = 0.0
    for exercise in lesson.exercises:
        mine = [c for c in found.checks if c.exercise == exercise]
        points = sum(c.points for c in mine)
        hidden = sum(1 for c in mine if c.visibility is Visibility.HIDDEN)
        total += points
        lines.append(
            f"  {exercise}: {points:g} points from {len(mine)} checks"
            + (f" ({hidden} hidden)" if hidden else "")
        )
    lines.append(f"  in all: {total:g} points from {len(found.checks)} checks")
    return "\n".join(lines)


def runner(lesson: Lesson) -> str:
    """How a grading runs ``lesson``'s checks, said to its author: without pytest, or through it
    and why (:func:`grader.engine.direct.why_not`; the reports are the same, pytest's way costs
    about a fifth of a second more per grading). Asked after :func:`lint` ran the checks: the
    files it imported are imported again only where they failed, and what they print is dropped."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        why = direct.why_not(lesson)
    return "graded without pytest" if not why else f"graded through pytest: {' '.join(why.split())}"


def main(*, lessons, examples: int = LINT_EXAMPLES) -> int:
    """Lint each of ``lessons``: print each problem as FILE:LINE: message, each lesson's points
    and how its checks are run (:func:`runner`); 1 if any problem, else 0."""
    problems = 0
    for lesson in lessons:
        found = lint(lesson, examples=examples)
        said = sorted(set(found.problems), key=lambda p: (str(p.path), p.line, p.message))
        for problem in said:
            print(problem.text())
        print(summary(lesson, found))
        print(f"  {runner(lesson)}")
        word = "problem" if len(said) == 1 else "problems"
        print(f"  {len(said)} {word}" if said else "  no problem found")
        problems += len(said)
    return 1 if problems else 0
