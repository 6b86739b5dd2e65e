"""Where a mistake in a lesson's own files is: the file and line an author mends.

A lesson is code its author wrote (checks, strategies, ``diagnoses.py``, ``pictures.py``,
``work.py``, the reference, the catalog). When that code fails, the failure is the lesson's:
it is said as ``FILE:LINE: what happened`` at the lesson's file, never as a traceback through
the grader. ``lint`` and grading both place such failures with these functions.
"""

from __future__ import annotations

import ast
import traceback
from pathlib import Path

from .lesson import Lesson


def shown(path: Path) -> str:
    """A path as the author types it: relative to the working folder when inside it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except (OSError, ValueError):
        return str(path)


def mine(lesson: Lesson, path: str | Path) -> bool:
    """Whether ``path`` is one of the lesson's files (its checks, its reference, its catalog)."""
    try:
        path = Path(path).resolve()
    except (OSError, ValueError):
        return False
    roots = (lesson.checks.resolve(), lesson.catalog.resolve())
    return path == lesson.solution.resolve() or any(root in path.parents for root in roots)


def _innermost(lesson: Lesson, tb, fallback: tuple[Path, int] | None) -> tuple[Path, int] | None:
    """The innermost frame of ``tb`` in one of the lesson's files, else ``fallback``."""
    found = fallback
    for frame, line in traceback.walk_tb(tb):
        if mine(lesson, frame.f_code.co_filename):
            found = (Path(frame.f_code.co_filename), line)
    return found


def error_place(
    lesson: Lesson, err: BaseException, fallback: tuple[Path, int] | None
) -> tuple[Path, int] | None:
    """Where ``err`` happened in the lesson's files: a syntax error's own line, else its
    innermost frame there (its causes' frames too, innermost first); ``fallback`` when it
    passed through none of them."""
    seen: BaseException | None = err
    while seen is not None:
        if isinstance(seen, SyntaxError) and seen.filename and mine(lesson, seen.filename):
            return Path(seen.filename), seen.lineno or 1
        place = _innermost(lesson, seen.__traceback__, None)
        if place is not None:
            return place
        seen = seen.__cause__ or seen.__context__
    return fallback


#: The grader's own package: a failure raised in it is the grader's, whoever called it.
GRADER = Path(__file__).resolve().parent.parent


def raised_by_lesson(lesson: Lesson, err: BaseException) -> bool | None:
    """Whether ``err`` was raised by the lesson's code: True when, from where it was raised
    outwards, a frame of the lesson's files comes before any of the grader's (numpy, Hypothesis
    or the standard library called by the lesson count as the lesson's); False when the grader's
    comes first; None when neither is on its way."""
    frames = [frame.f_code.co_filename for frame, _ in traceback.walk_tb(err.__traceback__)]
    for name in reversed(frames):
        if mine(lesson, name):
            return True
        try:
            if GRADER in Path(name).resolve().parents:
                return False
        except (OSError, ValueError):
            continue
    if isinstance(err, SyntaxError) and err.filename and mine(lesson, err.filename):
        return True
    return None


def said(err: BaseException) -> str:
    """An exception in a line: its class and the first line of its message."""
    if isinstance(err, SyntaxError):
        return f"{type(err).__name__}: {err.msg}"
    text = message_of(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0]}" if text else type(err).__name__


def message_of(err: BaseException) -> str:
    """``str(err)``, or '' where the exception's own code cannot make its message (a lesson's
    exception class whose ``__str__`` fails: the class's name must still be said)."""
    try:
        return str(err)
    except Exception:  # noqa: BLE001 - whatever it raised, the message is not to be had
        return ""


def code_line(function, default: int) -> int:
    """The line a function (a lambda in a lesson's table, say) is written on, else ``default``."""
    code = getattr(function, "__code__", None)
    return getattr(code, "co_firstlineno", default) or default


def def_line(path: Path, name: str, default: int) -> int:
    """The line of ``def name`` in the file at ``path`` (where its parameters are written), else
    ``default``."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return default
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node.lineno
    return default


def key_line(path: Path, variable: str, key: str, index: int | None = None) -> int:
    """The line of ``key`` in the dict literal assigned to ``variable`` at the top of the file at
    ``path`` (with ``index``: of that element of the list written there), else the assignment's
    line when the key is not written there, else 1."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return 1
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and any(
            isinstance(t, ast.Name) and t.id == variable for t in targets
        ):
            if isinstance(node.value, ast.Dict):
                for k, v in zip(node.value.keys, node.value.values, strict=True):
                    if isinstance(k, ast.Constant) and k.value == key:
                        listed = isinstance(v, (ast.List, ast.Tuple)) and index is not None
                        return v.elts[index].lineno if listed and index < len(v.elts) else k.lineno
            return node.lineno
    return 1
