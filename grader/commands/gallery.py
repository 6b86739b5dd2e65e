"""``gallery``: grade a folder of submissions and print a score table.

Without a folder it grades the lesson's gallery: the reference solution, the
untouched stubs and the sample student files in ``examples/gallery/NAME/``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..core.inert import one_line, student_name
from ..core.intake import Intake, IntakeError, Refusal, open_submission
from ..core.lesson import Lesson
from ..core.results import LESSON_ERROR_EXIT, UNFINISHED_EXIT
from ..core.settings import Settings
from ..engine.run import run_checks
from ..formats import TABLE_FORMATS
from ..formats.json_report import to_dict
from ..formats.table import to_table
from ..formats.text import lesson_errors
from ..sandbox.wardens import settle


def entries(lesson: Lesson, folder: Path | None) -> list[tuple[str, Intake | Path]]:
    """(label, submission) for every submission to show: each subfolder in which
    :func:`grader.core.intake.open_submission` finds something to grade (the taken-in file,
    or the path of one it refused: that one is shown with the reason)."""
    found: list[tuple[str, Intake | Path]] = []
    if folder is None:
        folder = lesson.gallery
        found += [("reference solution", lesson.solution), ("untouched stubs", lesson.stubs)]
        if not folder.is_dir():
            return found
    for sub in sorted(p for p in Path(folder).iterdir() if p.is_dir()):
        try:
            found.append((student_name(sub.name), open_submission(sub, lesson.filename)))
        except IntakeError as err:
            if err.kind is not Refusal.MISSING:
                found.append((student_name(sub.name), sub))
    return found


FORMATS = TABLE_FORMATS


def main(*, lesson: Lesson, settings: Settings, folder: Path | None = None, fmt: str = "table") -> int:
    """Grade every entry and print the table, or a JSON object of reports (progress on stderr)."""
    if folder is not None and not Path(folder).is_dir():
        raise FileNotFoundError(f"{folder} is not a folder of submissions")
    settings = settle(settings, lesson.private)  # the level, decided once for every row
    rows = []
    for label, submission in entries(lesson, folder):
        shown = submission.shown if isinstance(submission, Intake) else str(submission)
        print(f"grading {one_line(label)} ({one_line(shown)}) ...", file=sys.stderr)
        rows.append((label, run_checks(submission, lesson=lesson, settings=settings)))
    if fmt == "json":
        sys.stdout.write(json.dumps({label: to_dict(report) for label, report in rows}, indent=1) + "\n")
    else:
        sys.stdout.write(to_table(rows, lesson.exercises))
    faults = list(dict.fromkeys(f for _, report in rows for f in report.lesson_errors))
    if faults:  # once for all the rows, at the lesson's files and lines
        print(f"grader: {lesson_errors(faults)}", file=sys.stderr)
    if any(report.lesson_failed for _, report in rows):
        return LESSON_ERROR_EXIT
    return UNFINISHED_EXIT if any(report.unfinished for _, report in rows) else 0
