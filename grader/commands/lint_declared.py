"""What ``lint`` checks in the modules a lesson declares beside its checks (``diagnoses.py``,
``pictures.py``, ``work.py``) and in its catalog: each read as the grader reads it and tried on
the lesson's reference."""

from __future__ import annotations

import ast
import contextlib
import importlib
import inspect
import io
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..core.authored import error_place, said, shown
from ..core.catalog import Kind, declared_at
from ..core.diagnosis import Call, Mistake, look
from ..core.lesson import Lesson
from ..core.pictures import Picture
from .lint_findings import Findings

#: The codes of a ``diagnoses.py`` that could not be read (its problem is said already).
UNREAD = object()
#: Exceptions that, raised by a lesson's mistake or picture, mean a slip in its code (a misspelt
#: name, a wrong argument) rather than "this mistake does not apply to these arguments".
SLIPS = (NameError, AttributeError, ImportError, TypeError, SyntaxError)


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
        place = error_place(lesson, err, (path, 1))
        found.add(*place, f"{shown(path)} cannot be imported: {said(err)}")
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


def lint_diagnoses(lesson: Lesson, found: Findings, reference: dict) -> set[tuple[str, str]]:
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
                    f"returns= stops on probe {index} with {said(err)} (a slip in the lesson's code?)",
                )
                return
    if mistake.shows is not None and seen:
        try:
            with np.errstate(all="ignore"):
                shown = mistake.shows(seen)
        except SLIPS as err:
            yield (
                "shows",
                f"shows= stops on the reference's calls with {said(err)} (a slip in the lesson's code?)",
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
            yield "hint", f"the hint stops with {said(err)}"
            return
        if not isinstance(text, str):
            yield "hint", f"the hint must give a line of text, it gave {type(text).__name__}"


def lint_pictures(lesson: Lesson, found: Findings, reference: dict) -> None:
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
            found.add(path, line, f"the reference refuses the picture's arguments: {said(err)}")
            continue
        try:
            table = np.asarray(picture.weights(value), dtype=float)
        except Exception as err:  # noqa: BLE001 - said, with its place
            found.add(
                *error_place(lesson, err, (path, line)),
                f"the picture of {exercise} cannot read weights from the reference's answer: {said(err)}",
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


def lint_weak(lesson: Lesson, found: Findings) -> None:
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


def lint_catalog(lesson: Lesson, found: Findings, codes: set[tuple[str, str]] | None) -> None:
    """Each catalog file parses and defines a function of the lesson; a bug declares its
    EXERCISE and (where the lesson has diagnoses) the DIAGNOSIS code that names it."""
    if not lesson.catalog.is_dir():
        return
    for kind in Kind:
        for path in sorted((lesson.catalog / kind.value).glob("*.py")):
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
            exercise = declared_at(tree, "EXERCISE")
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
            if kind is not Kind.BUGS:
                continue
            if exercise is None:
                found.add(path, 1, 'a bug must say which exercise it breaks: EXERCISE = "name"')
                continue
            diagnosis = declared_at(tree, "DIAGNOSIS")
            if codes is UNREAD:
                continue  # diagnoses.py could not be read: its own problem is said
            if codes is None:
                if diagnosis is not None:
                    found.add(
                        path,
                        diagnosis[1],
                        f"DIAGNOSIS = {diagnosis[0]!r}, but the lesson has no "
                        f"{shown(lesson.diagnoses)} to define it",
                    )
                continue
            if diagnosis is None:
                found.add(
                    path,
                    1,
                    'a bug must say which known mistake names it: DIAGNOSIS = "code" '
                    f"(a code of MISTAKES[{exercise[0]!r}] in {shown(lesson.diagnoses)})",
                )
            elif (exercise[0], diagnosis[0]) not in codes:
                known = sorted(code for ex, code in codes if ex == exercise[0])
                found.add(
                    path,
                    diagnosis[1],
                    f"DIAGNOSIS = {diagnosis[0]!r} is no mistake of {exercise[0]} in "
                    f"{shown(lesson.diagnoses)} (its codes: {', '.join(known) or 'none'})",
                )
