"""Run the checks on one submission and collect a Report: without pytest where the lesson's
checks allow it (:mod:`.direct`), else through pytest (:mod:`.pytested`)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from ..core.inert import one_line
from ..core.intake import Intake, IntakeError
from ..core.lesson import Lesson
from ..core.results import Report
from ..core.settings import Settings
from ..sandbox.wardens import settle
from . import direct
from .checking import load_profile
from .collector import Collector
from .submission import Submission
from .upkeep import as_a_grading


def run_checks(
    submission: Intake | IntakeError | Path,
    *,
    lesson: Lesson,
    settings: Settings,
    checks: Path | None = None,
    shown: str | None = None,
) -> Report:
    """Grade ``submission`` (what :func:`grader.core.intake.open_submission` took in, its
    refusal, or a path for it to take in) against ``lesson``'s checks (or those under ``checks``) as ``settings``
    say, and return the Report (its submission called ``shown``: by default as it was named;
    a refusal must be given it)."""
    # Open the submission first: a sandboxed worker boots while the checks are imported.
    if shown is None:
        shown = submission.shown if isinstance(submission, Intake) else one_line(str(submission))
    settings = settle(settings, lesson.private)  # the level, decided here unless it was before
    opened = Submission(submission, lesson=lesson, settings=settings)
    collector = Collector(lesson, settings, opened)
    captured = io.StringIO()
    alone = not opened.runs_here  # the student's code draws from no generator of this process
    with (
        as_a_grading(alone=alone, derandomized=settings.derandomized),
        contextlib.redirect_stdout(captured),
    ):
        try:
            load_profile(settings)  # before any check is imported: its settings are made from it
            if checks is not None or settings.through_pytest or not direct.ran(collector):
                from .pytested import through_pytest  # pytest's import: only for the runs that need it

                through_pytest(collector, checks, captured)
        finally:
            if collector.store is not None:
                collector.store.end()  # a file opened after this run is no run's
    if collector.store is not None and not opened.runs_here:
        collector.store.save()  # what this run's engine drew, for the next run
    return Report(
        submission=shown,
        tests=tuple(collector.results),
        problem=collector.problem,
        isolation=collector.isolation,
        diagnoses=collector.diagnoses,
        pictures=collector.pictures,
        lesson_errors=tuple(collector.faults.values()),
    )
