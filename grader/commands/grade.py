"""``grade``: grade one submission for an instructor or CI, in the format its tools read."""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
from pathlib import Path

from ..core.intake import take_in
from ..core.lesson import Lesson
from ..core.results import LESSON_ERROR_EXIT, UNFINISHED_EXIT
from ..core.settings import Settings
from ..formats import REPORT_FORMATS
from ..formats.github import annotations, step_output, step_summary, to_github
from ..formats.gradescope import to_gradescope
from ..formats.html import to_html
from ..formats.json_report import to_dict
from ..formats.terminal import Style
from ..formats.text import WIDTH, lesson_errors, not_final, to_text
from . import remote
from .check import graded, practice_note, terminal_layout

FORMATS = REPORT_FORMATS


def render(
    report,
    fmt: str,
    *,
    seconds: float = 0.0,
    lesson: str = "",
    details: bool = False,
    style=None,
    width=WIDTH,
) -> str:
    """The report in one of FORMATS (``lesson`` names JUnit's suites; text: short, or every
    failure in full with ``details``, coloured by ``style`` and ``width`` wide)."""
    if fmt == "json":
        return json.dumps(to_dict(report), indent=2) + "\n"
    if fmt == "gradescope":
        return json.dumps(to_gradescope(report, execution_time=seconds), indent=2) + "\n"
    if fmt == "github":
        return json.dumps(to_github(report), indent=2) + "\n"
    if fmt == "junit":
        from ..formats.junit import to_junit  # XML's modules, for this format alone

        return to_junit(report, lesson=lesson)
    if fmt == "html":
        return to_html(report, details=details)
    return to_text(report, details=details, style=style, width=width)


def main(
    *,
    lesson: Lesson,
    settings: Settings,
    path: Path,
    fmt: str = "text",
    output: Path | None = None,
    github_output: bool = False,
    github_summary: bool = False,
    fail_under: float | None = None,
    details: bool = False,
    colour: str | None = None,
    service: remote.Remote | None = None,
) -> int:
    """Grade ``path`` (a file, or a folder holding the lesson's file); 0 once a report is written
    (1 when the score is below ``fail_under``; :data:`LESSON_ERROR_EXIT` when a mistake in the
    lesson kept checks from running, said at its file and line; :data:`UNFINISHED_EXIT` when the machine was too
    busy to finish a check: the score is then no grade, whatever ``fail_under`` says).

    With ``github_output``, also append the GitHub Classroom result to the file
    named by $GITHUB_OUTPUT, as the step output ``result`` (base64 JSON). With
    ``github_summary``, print one annotation per exercise that lost points and
    append the report to the job summary ($GITHUB_STEP_SUMMARY).

    With ``service``, the grading service grades it (as ``check`` does: exit 2 when it cannot
    be used, unless only the release named it; the checks then run here). Graded here in a
    release, the score is said to be a practice score, on stderr and in the job summary.
    """
    intake, file = take_in(path, lesson.filename)
    for wanted, variable in ((github_output, "GITHUB_OUTPUT"), (github_summary, "GITHUB_STEP_SUMMARY")):
        if wanted and not os.environ.get(variable):
            flag = "--github-output" if variable == "GITHUB_OUTPUT" else "--github-summary"
            raise FileNotFoundError(f"{flag} needs ${variable} (set by GitHub Actions in every step)")
    print(f"grading {file} ...", file=sys.stderr)
    start = time.monotonic()
    try:
        report, official = graded(intake, lesson=lesson, settings=settings, shown=str(file), service=service)
    except remote.ServiceError as err:
        print(f"grader: {err}", file=sys.stderr)
        return UNFINISHED_EXIT if isinstance(err, remote.StillGrading) else 2
    note = practice_note(lesson, settings, service) if not official and lesson.reference is None else ""
    if official:
        print("graded by the course's grading service (the official visible grade)", file=sys.stderr)
    style, width = terminal_layout(sys.stdout, colour) if output is None else (Style(), WIDTH)
    text = render(
        report,
        fmt,
        seconds=time.monotonic() - start,
        lesson=lesson.name,
        details=details,
        style=style,
        width=width,
    )
    if github_summary:
        for line in annotations(report, file=file.as_posix()):
            print(line)
        with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as f:
            f.write(step_summary(report, title=lesson.name, text=render(report, "text")))
            if note:
                f.write(note)
    if output is None:
        if github_summary:  # the report quotes the student: none of its lines is a workflow command
            token = secrets.token_hex(16)
            sys.stdout.write(f"::stop-commands::{token}\n{text}::{token}::\n")
        else:
            sys.stdout.write(text)
    else:
        try:
            Path(output).write_text(text, encoding="utf-8")
        except OSError as err:  # a failed write names no file by itself
            raise OSError(err.errno, err.strerror, str(output)) from None
        print(f"wrote {output}", file=sys.stderr)
    if github_output:
        with open(os.environ["GITHUB_OUTPUT"], "a", encoding="utf-8") as f:
            f.write(step_output(to_github(report)))
    if note:
        sys.stderr.write(note)
    if report.lesson_errors:  # the lesson's author must act: said at the lesson's file and line
        print(f"grader: {lesson_errors(report.lesson_errors)}", file=sys.stderr)
    if report.unfinished:  # no number: it would be no grade
        print(f"score: unfinished (out of {report.max_score:g}): {not_final(report)}", file=sys.stderr)
    else:
        print(f"score: {report.score:g}/{report.max_score:g}", file=sys.stderr)
    if report.lesson_failed:
        return LESSON_ERROR_EXIT
    if report.unfinished:
        return UNFINISHED_EXIT
    if fail_under is not None and report.score < fail_under:
        print(f"the score is below {fail_under:g} (--fail-under): failing", file=sys.stderr)
        return 1
    return 0
