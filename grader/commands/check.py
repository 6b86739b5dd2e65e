"""``check``: run the checks on a student's own file and explain what fails."""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

from ..core.inert import one_line
from ..core.intake import IntakeError, take_in
from ..core.lesson import Lesson, released
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
    still had the file queued when the client stopped waiting), unless only the release named
    it: the checks then run here. Run here in a release, the report ends by saying that its
    score is a practice score, and which exercises' scores hang on others."""
    intake, file = take_in(lesson.stubs if path is None else path, lesson.filename)
    try:
        report, official = graded(intake, lesson=lesson, settings=settings, shown=str(file), service=service)
    except remote.ServiceError as err:
        print(f"grader: {err}", file=sys.stderr)
        return UNFINISHED_EXIT if isinstance(err, remote.StillGrading) else 2
    if official:
        how = "the grading service's checks (the official visible grade)"
    else:
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
    if not official and lesson.reference is None:
        sys.stdout.write(practice_note(lesson, settings, service))
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


def graded(intake, *, lesson: Lesson, settings: Settings, shown: str, service: remote.Remote | None):
    """(the report of ``intake``, whether the grading service gave it). With ``service`` the
    service grades it (a refused file is said here); a service that cannot be used raises
    ServiceError, unless the release named it alone (``service.practice``): that is said, and
    the checks run here."""
    if service is not None and not isinstance(intake, IntakeError):
        try:
            return remote.report_of(service, remote.submit(service, lesson.filename, intake.source)), True
        except remote.ServiceError as err:
            if not service.practice or isinstance(err, remote.StillGrading):
                raise
            print(f"grader: {err}", file=sys.stderr)
            print("grader: checking here instead, for a practice score", file=sys.stderr)
    return run_checks(intake, lesson=lesson, settings=settings, shown=shown), False


def practice_note(lesson: Lesson, settings: Settings, service: remote.Remote | None = None) -> str:
    """What a score found in a student release means: a practice score, not the grade, and
    which exercises' scores hang on the student's other functions (with no reference in the
    release, their checks call the student's own)."""
    told = released(lesson)
    checked = settings.exercises or lesson.exercises
    lines = [
        "",
        "This is a practice score: your copy of the course has no reference solution, and your",
        "grade also counts checks that are not in it, so the two may differ.",
    ]
    if service is not None:  # the token was given, the service could not be used
        lines.append(
            f"Your official score comes from the course's grading service, {one_line(service.server)}:"
        )
        lines.append("run check again once it can be reached.")
    elif told.server:
        lines.append(f"Your official score comes from the course's grading service, {one_line(told.server)}:")
        lines.append(
            f"set ${remote.TOKEN_VARIABLE} to the token your instructor handed out, and run check again."
        )
    else:
        lines.append("Your official score comes from your instructor's grading.")
    hanging = [(name, told.needs(name)) for name in checked if told.needs(name)]
    if hanging:
        lines.append("Some exercises are checked with your own versions of others, so a mistake in one")
        lines.append("also costs points in the other here (your grade counts it once):")
        for name, others in hanging:
            lines.append(f"  - {name} uses your {_and(others)}")
    return "\n".join(lines) + "\n"


def _and(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
