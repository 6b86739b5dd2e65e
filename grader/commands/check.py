"""``check``: run the checks on a student's own file and explain what fails."""

from __future__ import annotations

import sys
from pathlib import Path

from ..core.intake import take_in
from ..core.lesson import Lesson
from ..core.settings import Profile, Settings
from ..engine.run import run_checks
from ..formats.text import to_text


def main(*, lesson: Lesson, settings: Settings, path: Path | None = None) -> int:
    """Check ``path`` (default: the lesson's stubs, the student's file) and print the report;
    0 when every check passes, 1 otherwise."""
    intake, file = take_in(lesson.stubs if path is None else path, lesson.filename)
    report = run_checks(intake, lesson=lesson, settings=settings, shown=str(file))
    how = "fresh random inputs" if settings.profile is Profile.EXPLORE else "the same inputs as the grader"
    sys.stdout.write(to_text(report, heading=f"Checking {file} with {how}"))
    if report.score == report.max_score:
        print("Every check passes. Well done!")
        return 0
    return 1
