"""What ``lint`` finds in a lesson, and where in the lesson's files each problem is."""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from pathlib import Path

from ..core.lesson import Lesson
from ..core.results import Visibility


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a lesson, where it is written."""

    path: Path
    line: int
    message: str

    def text(self) -> str:
        return f"{shown(self.path)}:{self.line}: {self.message}"


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


def shown(path: Path) -> str:
    """A path as the author types it: relative to the working folder when inside it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
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


def error_place(lesson: Lesson, err: BaseException, fallback: tuple[Path, int]) -> tuple[Path, int]:
    """Where ``err`` happened in the lesson's files: a syntax error's own line, else its
    innermost frame there (its causes' frames too, innermost first)."""
    if isinstance(err, SyntaxError) and err.filename and mine(lesson, err.filename):
        return Path(err.filename), err.lineno or 1
    seen = err
    while seen is not None:
        place = _innermost(lesson, seen.__traceback__, None)
        if place is not None:
            return place
        seen = seen.__cause__ or seen.__context__
    return fallback


def said(err: BaseException) -> str:
    """An exception in a line: its class and the first line of its message."""
    if isinstance(err, SyntaxError):
        return f"{type(err).__name__}: {err.msg}"
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0]}" if text else type(err).__name__
