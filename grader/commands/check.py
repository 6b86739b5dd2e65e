"""``check``: run the checks on a student's own file and explain what fails."""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

from ..core.intake import IntakeError, take_in
from ..core.lesson import Lesson
from ..core.results import LESSON_ERROR_EXIT, UNFINISHED_EXIT
from ..core.settings import Profile, Settings, use_colour
from ..engine.run import run_checks
from ..formats.html import to_html
from ..formats.terminal import Style
from ..formats.text import WIDTH, to_text
from . import remote


def terminal_layout(stream, colour: str | None) -> tuple[Style, int]:
    """(style, width) of a text report written to ``stream``: coloured as ``colour``
    (``--color``) and NO_COLOR say, as wide as the terminal (within reason), plain and
    :data:`WIDTH` wide for a file or a pipe."""
    terminal = stream.isatty()
    width = max(60, min(120, shutil.get_terminal_size((WIDTH, 24)).columns)) if terminal else WIDTH
    return Style(use_colour(colour, terminal=terminal)), width


def main(
    *,
    lesson: Lesson,
    settings: Settings,
    path: Path | None = None,
    details: bool = False,
    colour: str | None = None,
    html: Path | None = None,
    recheck: str | None = None,
    service: remote.Remote | None = None,
) -> int:
    """Check ``path`` (default: the lesson's stubs, the student's file) and print the report
    (every failure in full with ``details``; also as an HTML page written to ``html``); 0 when every
    check passes, :data:`LESSON_ERROR_EXIT` when a mistake in the lesson kept a check from running
    (the report says where), :data:`UNFINISHED_EXIT` when the machine was too busy to finish one (the report
    says so, and to run it again), 1 otherwise. ``recheck`` is the command that runs it again
    (default: ``check`` and the path).

    With ``service``, the file is graded by the grading service (:mod:`grader.commands.serve`),
    which holds the reference: its report, printed here as a local one would be, is the official
    visible grade. A service that cannot be used is said in one sentence: exit 2 (75 when it
    still had the file queued when the client stopped waiting)."""
    intake, file = take_in(lesson.stubs if path is None else path, lesson.filename)
    if service is not None and not isinstance(intake, IntakeError):  # a refused file: said locally
        try:
            report = remote.report_of(service, remote.submit(service, lesson.filename, intake.source))
        except remote.ServiceError as err:
            print(f"grader: {err}", file=sys.stderr)
            return UNFINISHED_EXIT if isinstance(err, remote.StillGrading) else 2
        how = "the grading service's checks (the official visible grade)"
    else:
        report = run_checks(intake, lesson=lesson, settings=settings, shown=str(file))
        how = (
            "fresh random inputs" if settings.profile is Profile.EXPLORE else "the same inputs as the grader"
        )
    style, width = terminal_layout(sys.stdout, colour)
    again = recheck or "python -m grader check" + ("" if path is None else f" {shlex.quote(str(path))}")
    text = to_text(
        report,
        heading=f"Checking {file} with {how}",
        details=details,
        style=style,
        width=width,
        recheck=again,
    )
    sys.stdout.write(text)
    if html is not None:
        Path(html).write_text(to_html(report, heading=f"Checking {file}", details=details), encoding="utf-8")
        print(f"wrote {html}", file=sys.stderr)
    if report.lesson_failed:  # said in the report, at the lesson's file and line
        return LESSON_ERROR_EXIT
    if report.unfinished:
        return UNFINISHED_EXIT
    if report.score == report.max_score:
        print("Every check passes. Well done!")
        return 0
    return 1
