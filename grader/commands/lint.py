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
* the catalog (``tests/catalog/NAME/``): every file parses and defines a function of the lesson;
  a bug declares the ``EXERCISE`` it breaks (one of the lesson's, defined in the file) and the
  ``DIAGNOSIS`` code that names it (one ``diagnoses.py`` gives that exercise).

The lesson's code runs in this process: it is the author's, not a student's.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import inspect
import io
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from ..core.diagnosis import Call, Mistake, look
from ..core.lesson import Lesson
from ..core.pictures import Picture
from ..core.results import Visibility
from ..engine.marks import MARK, MarkError, grading_of
from ..engine.run import _arguments, _nothing_stored, _plugin_autoload_off
from ..engine.submission import load_reference
from ..engine.upkeep import no_local_constants

#: Examples per check when the checks run on the reference: enough to meet a strategy's
#: corners, few enough that a lesson is linted in seconds.
LINT_EXAMPLES = 10
#: The codes of a ``diagnoses.py`` that could not be read (its problem is said already).
UNREAD = object()
#: The kinds of catalog entries (``tests/catalog/NAME/KIND/*.py``).
CATALOG_KINDS = ("bugs", "correct", "trivial")
#: Exceptions that, raised by a lesson's mistake or picture, mean a slip in its code (a misspelt
#: name, a wrong argument) rather than "this mistake does not apply to these arguments".
SLIPS = (NameError, AttributeError, ImportError, TypeError, SyntaxError)


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a lesson, where it is written."""

    path: Path
    line: int
    message: str

    def text(self) -> str:
        return f"{_shown(self.path)}:{self.line}: {self.message}"


@dataclass(frozen=True)
class Check:
    """One collected check, where it is written and what its mark says."""

    name: str
    path: Path
    line: int
    exercise: str
    points: float
    visibility: Visibility


@dataclass
class Findings:
    """What linting one lesson found."""

    problems: list[Problem] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    package: str = ""
    """The Python package of the lesson's checks (to import ``diagnoses.py`` and the others)."""
    unloaded: bool = False
    """Some check file could not be imported: the checks known are not all the lesson's."""

    def add(self, path: Path, line: int, message: str) -> None:
        self.problems.append(Problem(Path(path), max(1, int(line or 1)), " ".join(message.split())))


def _shown(path: Path) -> str:
    """A path as the author types it: relative to the working folder when inside it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _mine(lesson: Lesson, path: str | Path) -> bool:
    """Whether ``path`` is one of the lesson's files (its checks, its reference, its catalog)."""
    try:
        path = Path(path).resolve()
    except (OSError, ValueError):
        return False
    roots = (lesson.checks.resolve(), lesson.catalog.resolve())
    return path == lesson.solution.resolve() or any(root in path.parents for root in roots)


def _place(lesson: Lesson, tb, fallback: tuple[Path, int] | None) -> tuple[Path, int] | None:
    """The innermost frame of ``tb`` in one of the lesson's files, else ``fallback``."""
    found = fallback
    for frame, line in traceback.walk_tb(tb):
        if _mine(lesson, frame.f_code.co_filename):
            found = (Path(frame.f_code.co_filename), line)
    return found


def _error_place(lesson: Lesson, err: BaseException, fallback: tuple[Path, int]) -> tuple[Path, int]:
    """Where ``err`` happened in the lesson's files: a syntax error's own line, else its
    innermost frame there (its causes' frames too, innermost first)."""
    if isinstance(err, SyntaxError) and err.filename and _mine(lesson, err.filename):
        return Path(err.filename), err.lineno or 1
    seen = err
    while seen is not None:
        place = _place(lesson, seen.__traceback__, None)
        if place is not None:
            return place
        seen = seen.__cause__ or seen.__context__
    return fallback


def _said(err: BaseException) -> str:
    """An exception in a line: its class and the first line of its message."""
    if isinstance(err, SyntaxError):
        return f"{type(err).__name__}: {err.msg}"
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0]}" if text else type(err).__name__


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
        place = _error_place(self.lesson, cause, (path, 1))
        self.found.unloaded = True
        if place not in self.unloaded:  # a file importing a broken one breaks at the same place
            self.unloaded.add(place)
            self.found.add(*place, f"the checks cannot be imported: {_said(cause)}")

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
                    f"{where} {_shown(self.lesson.hidden)}: hidden checks go there, visible ones outside",
                )
                continue
            name = item.name.removeprefix("test_")
            if name in self.names:
                first = self.names[name]
                self.found.add(
                    path,
                    line,
                    f"another check is named {item.name} ({_shown(first.path)}:{first.line}); "
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
        place = _error_place(self.lesson, err, (path, line))
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
        *_arguments(lesson, None),
        "--submission",
        str(lesson.solution),
        "--isolation",
        "none",
        "--max-examples",
        str(examples),
        "--continue-on-collection-errors",
        "--assert=plain",
        "--tb=native",
        "-p",
        "no:doctest",
    ]
    captured = io.StringIO()
    with (
        _plugin_autoload_off(),
        _nothing_stored(),
        no_local_constants(),
        contextlib.redirect_stdout(captured),
        contextlib.redirect_stderr(captured),
    ):
        code = pytest.main(args, plugins=[linter])
    if code in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR) and not found.problems:
        tail = " ".join(captured.getvalue().strip().splitlines()[-3:])
        found.add(lesson.checks, 1, f"the checks could not be collected: {tail}")


# ----------------------------------------------------------------------------- declared modules


def _assigned(path: Path, name: str) -> ast.Assign | ast.AnnAssign | None:
    """The module-level assignment of ``name`` in the file at ``path``."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return node
    return None


def _keys(node) -> dict[str, ast.AST]:
    """The string keys of a dict literal assigned at ``node``, each with its value's node."""
    value = getattr(node, "value", None)
    if not isinstance(value, ast.Dict):
        return {}
    return {
        k.value: v
        for k, v in zip(value.keys, value.values, strict=True)
        if isinstance(k, ast.Constant) and isinstance(k.value, str)
    }


def _element_line(node, index: int, default: int) -> int:
    if isinstance(node, (ast.List, ast.Tuple)) and index < len(node.elts):
        return node.elts[index].lineno
    return getattr(node, "lineno", default)


def _mistake_call(node, code: str) -> ast.Call | None:
    """The ``Mistake("code", ...)`` call inside ``node``."""
    for sub in ast.walk(node) if node is not None else ():
        if isinstance(sub, ast.Call):
            given = [*sub.args[:1], *(k.value for k in sub.keywords if k.arg == "code")]
            if any(isinstance(g, ast.Constant) and g.value == code for g in given):
                return sub
    return None


def _keyword_line(call: ast.Call | None, keyword: str | None, default: int) -> int:
    """The line of argument ``keyword`` of ``call`` (of the call itself without one)."""
    if call is None:
        return default
    for k in call.keywords:
        if k.arg == keyword:
            return k.value.lineno
    place = {"code": 0, "hint": 1}.get(keyword)  # Mistake(code, hint, ...) may give these in order
    if place is not None and place < len(call.args):
        return call.args[place].lineno
    return call.lineno


def _string_line(node, text: str, default: int) -> int:
    for sub in ast.walk(node) if node is not None else ():
        if isinstance(sub, ast.Constant) and sub.value == text:
            return sub.lineno
    return default


def _import(lesson: Lesson, found: Findings, path: Path):
    """The lesson's module at ``path`` (beside its checks), imported as part of their package;
    None when absent or broken (then said)."""
    if not path.is_file():
        return None
    if not found.package:
        found.add(path, 1, "cannot be read: the lesson's checks did not load (see above)")
        return None
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return importlib.import_module(f"{found.package}.{path.stem}")
    except BaseException as err:  # noqa: BLE001 - the lesson's file; said with its line
        if isinstance(err, KeyboardInterrupt):
            raise
        place = _error_place(lesson, err, (path, 1))
        found.add(*place, f"{_shown(path)} cannot be imported: {_said(err)}")
        return None


def _copies(arguments: dict) -> dict:
    return {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in arguments.items()}


def _binds(function, arguments: dict) -> str:
    """Why ``function`` cannot be called with ``arguments`` by keyword, or ''."""
    try:
        inspect.signature(function).bind(**arguments)
    except TypeError as err:
        return str(err)
    except ValueError:
        return ""  # no signature to read (a builtin): it is tried when called
    return ""


def _parameters(function) -> str:
    try:
        return ", ".join(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return "?"


def _called(function, arguments: dict):
    """(value, None) or (None, the exception) of ``function`` on copies of ``arguments``."""
    try:
        with np.errstate(all="ignore"), contextlib.redirect_stdout(io.StringIO()):
            return function(**_copies(arguments)), None
    except Exception as err:  # noqa: BLE001 - said by the caller
        return None, err


def _reference_call(reference, arguments: dict) -> Call:
    value, err = _called(reference, arguments)
    if err is None:
        return Call(arguments, value)
    raised = tuple(k.__name__ for k in type(err).__mro__)
    return Call(arguments, None, False, "raised", raised)


def _lint_diagnoses(lesson: Lesson, found: Findings, reference: dict) -> set[tuple[str, str]]:
    """The probes and mistakes of ``diagnoses.py``; returns the (exercise, code) pairs it defines."""
    path = lesson.diagnoses
    module = _import(lesson, found, path)
    if module is None:
        return set()
    codes: set[tuple[str, str]] = set()
    probes_node, mistakes_node = _assigned(path, "PROBES"), _assigned(path, "MISTAKES")
    probes = getattr(module, "PROBES", None)
    mistakes = getattr(module, "MISTAKES", None)
    for name, value, node in (("PROBES", probes, probes_node), ("MISTAKES", mistakes, mistakes_node)):
        if not isinstance(value, dict):
            found.add(
                path,
                getattr(node, "lineno", 1),
                f"{name} must be a dict keyed by exercise, got {value!r:.60}",
            )
    if not isinstance(probes, dict) or not isinstance(mistakes, dict):
        return codes
    probe_lines, mistake_lines = _keys(probes_node), _keys(mistakes_node)
    default = getattr(probes_node, "lineno", 1)
    for exercise, listed in probes.items():
        key_line = getattr(probe_lines.get(exercise), "lineno", default)
        if not isinstance(listed, (list, tuple)):
            found.add(path, key_line, f"PROBES[{exercise!r}] must be a list of dicts of arguments by name")
            continue
        if exercise not in lesson.exercises:
            found.add(
                path,
                key_line,
                f"PROBES names {exercise!r}, which is not an exercise of {lesson.name} "
                f"(its exercises: {', '.join(lesson.exercises)})",
            )
            continue
        for index, arguments in enumerate(listed):
            line = _element_line(probe_lines.get(exercise), index, key_line)
            if not isinstance(arguments, dict):
                found.add(path, line, f"probe {index} of {exercise} must be a dict of arguments by name")
                continue
            why = _binds(reference[exercise], arguments)
            if why:
                found.add(
                    path,
                    line,
                    f"probe {index} of {exercise} cannot call it: {why} "
                    f"({exercise} takes {_parameters(reference[exercise])})",
                )
    default = getattr(mistakes_node, "lineno", 1)
    for exercise, listed in mistakes.items():
        key_node = mistake_lines.get(exercise)
        key_line = getattr(key_node, "lineno", default)
        if not isinstance(listed, (list, tuple)):
            found.add(path, key_line, f"MISTAKES[{exercise!r}] must be a list of grader.diagnosis.Mistake")
            continue
        if exercise not in lesson.exercises:
            found.add(
                path,
                key_line,
                f"MISTAKES names {exercise!r}, which is not an exercise of {lesson.name} "
                f"(its exercises: {', '.join(lesson.exercises)})",
            )
            continue
        listed_probes = probes.get(exercise, ())
        given = (
            [p for p in listed_probes if isinstance(p, dict)]
            if isinstance(listed_probes, (list, tuple))
            else []
        )
        given = [p for p in given if not _binds(reference[exercise], p)]
        if listed and not given:
            found.add(
                path,
                key_line,
                f"MISTAKES of {exercise} has no probe to be tried on: give PROBES[{exercise!r}]",
            )
        calls = [_reference_call(reference[exercise], p) for p in given]
        seen = look(calls, reference[exercise]) if calls else []
        for index, mistake in enumerate(listed):
            line = _element_line(key_node, index, key_line)
            if not isinstance(mistake, Mistake):
                found.add(path, line, f"MISTAKES[{exercise!r}][{index}] is not a grader.diagnosis.Mistake")
                continue
            written = _mistake_call(key_node, mistake.code)
            codes.add((exercise, mistake.code))
            for part, problem in _mistake_problems(mistake, exercise, reference[exercise], given, seen):
                where = _keyword_line(written, part, line)
                found.add(path, where, f"mistake {mistake.code!r} of {exercise}: {problem}")
    return codes


def _mistake_problems(
    mistake: Mistake, exercise: str, reference, probes: list, seen
) -> Iterator[tuple[str, str]]:
    """What is wrong with one mistake, tried on the probes and on the reference's own calls:
    (the argument of ``Mistake`` at fault, what is wrong)."""
    if mistake.returns is not None:
        try:
            theirs = inspect.signature(mistake.returns).parameters.values()
            ours = inspect.signature(reference).parameters
        except (TypeError, ValueError):
            theirs, ours = (), {}
        named = [p.name for p in theirs if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        unknown = [n for n in named if n not in ours]
        if unknown:
            yield (
                "returns",
                (
                    f"returns= takes {', '.join(unknown)}, which {exercise} does not "
                    f"(its parameters: {', '.join(ours)}); it is called with the probe's arguments by name"
                ),
            )
            return
        for index, arguments in enumerate(probes):
            why = _binds(mistake.returns, arguments)
            if why:
                yield "returns", f"returns= cannot take probe {index}'s arguments: {why}"
                return
            _, err = _called(mistake.returns, arguments)
            if isinstance(err, SLIPS):
                yield (
                    "returns",
                    f"returns= stops on probe {index} with {_said(err)} (a slip in the lesson's code?)",
                )
                return
    if mistake.shows is not None and seen:
        try:
            with np.errstate(all="ignore"):
                shown = mistake.shows(seen)
        except SLIPS as err:
            yield (
                "shows",
                f"shows= stops on the reference's calls with {_said(err)} (a slip in the lesson's code?)",
            )
            return
        except Exception:  # noqa: BLE001 - a test that does not apply to these calls: allowed
            shown = False
        if shown:
            yield "shows", "shows= finds this mistake in the reference's own calls on the probes"
    if callable(mistake.hint) and probes:
        try:
            text = mistake.hint(probes[0])
        except Exception as err:  # noqa: BLE001 - said
            yield "hint", f"the hint stops with {_said(err)}"
            return
        if not isinstance(text, str):
            yield "hint", f"the hint must give a line of text, it gave {type(text).__name__}"


def _lint_pictures(lesson: Lesson, found: Findings, reference: dict) -> None:
    """Each picture calls its exercise by its parameters and reads (heads, T, T) weights from
    the reference's answer, T the number of TOKENS."""
    path = lesson.pictures
    module = _import(lesson, found, path)
    if module is None:
        return
    tokens, pictures = getattr(module, "TOKENS", None), getattr(module, "PICTURES", None)
    node = _assigned(path, "PICTURES")
    if not isinstance(tokens, (tuple, list)) or not all(isinstance(t, str) for t in tokens) or not tokens:
        line = getattr(_assigned(path, "TOKENS"), "lineno", 1)
        found.add(path, line, "TOKENS must be the words of the lesson's sentence, a tuple of strings")
        return
    if not isinstance(pictures, dict):
        found.add(
            path, getattr(node, "lineno", 1), "PICTURES must be a dict of grader.pictures.Picture by exercise"
        )
        return
    lines = _keys(node)
    for exercise, picture in pictures.items():
        line = getattr(lines.get(exercise), "lineno", getattr(node, "lineno", 1))
        if exercise not in lesson.exercises:
            found.add(
                path,
                line,
                f"PICTURES names {exercise!r}, which is not an exercise of {lesson.name} "
                f"(its exercises: {', '.join(lesson.exercises)})",
            )
            continue
        if not isinstance(picture, Picture):
            found.add(path, line, f"PICTURES[{exercise!r}] is not a grader.pictures.Picture")
            continue
        why = _binds(reference[exercise], picture.arguments)
        if why:
            found.add(
                path,
                line,
                f"the picture of {exercise} cannot call it: {why} "
                f"({exercise} takes {_parameters(reference[exercise])})",
            )
            continue
        value, err = _called(reference[exercise], picture.arguments)
        if err is not None:
            found.add(path, line, f"the reference refuses the picture's arguments: {_said(err)}")
            continue
        try:
            table = np.asarray(picture.weights(value), dtype=float)
        except Exception as err:  # noqa: BLE001 - said, with its place
            found.add(
                *_error_place(lesson, err, (path, line)),
                f"the picture of {exercise} cannot read weights from the reference's answer: {_said(err)}",
            )
            continue
        T = len(tokens)
        if table.ndim != 3 or table.shape[1:] != (T, T):
            found.add(
                path,
                line,
                f"the picture of {exercise} reads weights of shape {table.shape} from the "
                f"reference's answer; the report draws (heads, T, T) with T = {T}, one per token of TOKENS",
            )


def _lint_weak(lesson: Lesson, found: Findings) -> None:
    """``WEAK_CHECKS`` in ``work.py`` names checks of their own exercise."""
    path = lesson.work
    module = _import(lesson, found, path)
    weak = getattr(module, "WEAK_CHECKS", None) if module is not None else None
    if weak is None or found.unloaded:  # names of checks that did not load cannot be told
        return
    node = _assigned(path, "WEAK_CHECKS")
    line = getattr(node, "lineno", 1)
    if not isinstance(weak, dict):
        found.add(path, line, "WEAK_CHECKS must be a dict: exercise -> names of its checks")
        return
    by_exercise: dict[str, set[str]] = {}
    for check in found.checks:
        by_exercise.setdefault(check.exercise, set()).add(check.name)
    for exercise, names in weak.items():
        if exercise not in lesson.exercises:
            found.add(
                path,
                _string_line(node, exercise, line),
                f"WEAK_CHECKS names {exercise!r}, which is not "
                f"an exercise of {lesson.name} (its exercises: {', '.join(lesson.exercises)})",
            )
            continue
        if isinstance(names, str):
            found.add(
                path,
                _string_line(node, names, line),
                f"WEAK_CHECKS[{exercise!r}] must be a tuple of names, "
                "not one string (a tuple of one name ends with a comma)",
            )
            continue
        for name in names:
            if name not in by_exercise.get(exercise, set()):
                mine = ", ".join(sorted(by_exercise.get(exercise, ()))) or "none"
                found.add(
                    path,
                    _string_line(node, name, line),
                    f"WEAK_CHECKS names {name!r}, which is no check "
                    f"of {exercise} (its checks, without test_: {mine})",
                )


# ----------------------------------------------------------------------------- the catalog


def _declared(tree: ast.Module, name: str) -> tuple[object, int] | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            try:
                return ast.literal_eval(node.value), node.lineno
            except ValueError:
                return None, node.lineno
    return None


def _lint_catalog(lesson: Lesson, found: Findings, codes: set[tuple[str, str]] | None) -> None:
    """Each catalog file parses and defines a function of the lesson; a bug declares its
    EXERCISE and (where the lesson has diagnoses) the DIAGNOSIS code that names it."""
    if not lesson.catalog.is_dir():
        return
    for kind in CATALOG_KINDS:
        for path in sorted((lesson.catalog / kind).glob("*.py")):
            try:
                tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            except SyntaxError as err:
                found.add(path, err.lineno or 1, f"this catalog entry does not parse: {err.msg}")
                continue
            except (OSError, ValueError) as err:
                found.add(path, 1, f"this catalog entry cannot be read: {err}")
                continue
            defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
            if not defined & set(lesson.exercises):
                found.add(path, 1, f"defines none of the lesson's functions ({', '.join(lesson.exercises)})")
            exercise = _declared(tree, "EXERCISE")
            if exercise is not None and exercise[0] not in lesson.exercises:
                found.add(
                    path,
                    exercise[1],
                    f"EXERCISE = {exercise[0]!r} is not an exercise of {lesson.name} "
                    f"(its exercises: {', '.join(lesson.exercises)})",
                )
                continue
            if exercise is not None and exercise[0] not in defined:
                found.add(
                    path, exercise[1], f"EXERCISE = {exercise[0]!r}, but the file defines no such function"
                )
            if kind != "bugs":
                continue
            if exercise is None:
                found.add(path, 1, 'a bug must say which exercise it breaks: EXERCISE = "name"')
                continue
            diagnosis = _declared(tree, "DIAGNOSIS")
            if codes is UNREAD:
                continue  # diagnoses.py could not be read: its own problem is said
            if codes is None:
                if diagnosis is not None:
                    found.add(
                        path,
                        diagnosis[1],
                        f"DIAGNOSIS = {diagnosis[0]!r}, but the lesson has no "
                        f"{_shown(lesson.diagnoses)} to define it",
                    )
                continue
            if diagnosis is None:
                found.add(
                    path,
                    1,
                    'a bug must say which known mistake names it: DIAGNOSIS = "code" '
                    f"(a code of MISTAKES[{exercise[0]!r}] in {_shown(lesson.diagnoses)})",
                )
            elif (exercise[0], diagnosis[0]) not in codes:
                known = sorted(code for ex, code in codes if ex == exercise[0])
                found.add(
                    path,
                    diagnosis[1],
                    f"DIAGNOSIS = {diagnosis[0]!r} is no mistake of {exercise[0]} in "
                    f"{_shown(lesson.diagnoses)} (its codes: {', '.join(known) or 'none'})",
                )


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
            *_error_place(lesson, err, (lesson.solution, 1)), f"the reference cannot be loaded: {_said(err)}"
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
                f"{exercise} has no check: add one to {_shown(lesson.checks)}",
            )
    codes = None
    if lesson.diagnoses.is_file():
        codes = _guarded(lesson, found, lesson.diagnoses, _lint_diagnoses, reference)
        codes = UNREAD if codes is None else codes
    _guarded(lesson, found, lesson.pictures, _lint_pictures, reference)
    _guarded(lesson, found, lesson.work, _lint_weak)
    _guarded(lesson, found, lesson.catalog, _lint_catalog, codes)
    return found


def _guarded(lesson: Lesson, found: Findings, path: Path, step, *args):
    """``step(lesson, found, *args)``; a declaration too far from what it should be to be read
    (PROBES[exercise] not a list, ...) is said at its place, never as a traceback."""
    try:
        return step(lesson, found, *args)
    except Exception as err:  # noqa: BLE001 - the lesson's declarations; said with their place
        place = _error_place(lesson, err, (path, 1))
        found.add(*place, f"{_shown(path)} could not be read as the grader reads it: {_said(err)}")
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


def main(*, lessons, examples: int = LINT_EXAMPLES) -> int:
    """Lint each of ``lessons``: print each problem as FILE:LINE: message and each lesson's
    points; 1 if any problem, else 0."""
    problems = 0
    for lesson in lessons:
        found = lint(lesson, examples=examples)
        said = sorted(set(found.problems), key=lambda p: (str(p.path), p.line, p.message))
        for problem in said:
            print(problem.text())
        print(summary(lesson, found))
        word = "problem" if len(said) == 1 else "problems"
        print(f"  {len(said)} {word}" if said else "  no problem found")
        problems += len(said)
    return 1 if problems else 0
