"""What ``lint`` finds in a lesson, and where in the lesson's files each problem is (placed by
:mod:`grader.core.authored`, as grading places a lesson's failures)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..core.authored import shown
from ..core.results import Visibility

#: Examples per check when ``lint`` runs the checks on the reference: enough to meet a
#: strategy's corners, few enough that a lesson is linted in seconds.
LINT_EXAMPLES = 10


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
