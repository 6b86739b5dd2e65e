"""``check``: run the checks on a student's own file and explain what fails."""

from __future__ import annotations

import sys
from pathlib import Path

from .intake import take_in
from .lesson import Lesson
from .reporters.text import to_text
from .run import run_checks
from .submission import DEFAULT_CALL_TIMEOUT


def main(
    *,
    lesson: Lesson,
    path: Path | None = None,
    explore: bool = False,
    public: bool = False,
    exercises: tuple[str, ...] | None = None,
    call_timeout: float = DEFAULT_CALL_TIMEOUT,
    max_examples: int | None = None,
    isolation: str = "none",
    total_timeout: float | None = None,
) -> int:
    """Check ``path`` (default: the lesson's stubs, the student's file) and print the report;
    0 when every check passes, 1 otherwise."""
    intake, file = take_in(lesson.stubs if path is None else path, lesson.filename)
    profile = "explore" if explore else "grading"
    report = run_checks(
        intake or file,
        lesson=lesson,
        profile=profile,
        exercises=exercises,
        call_timeout=call_timeout,
        include_hidden=not public,
        max_examples=max_examples,
        isolation=isolation,
        total_timeout=total_timeout,
    )
    how = "fresh random inputs" if explore else "the same inputs as the grader"
    sys.stdout.write(to_text(report, heading=f"Checking {file} with {how}"))
    if report.score == report.max_score:
        print("Every check passes. Well done!")
        return 0
    return 1
