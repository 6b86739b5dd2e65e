"""Gradescope's results.json: what its autograder harness reads after run_autograder.

Students see a submission's top-level ``output`` and its visible tests at once;
hidden checks are marked ``after_published``, and Gradescope shows no total score
while any test is hidden (its autograder specification says so). The top-level
``output`` therefore counts the visible checks alone: a total that included
hidden points would tell a student that a hidden check failed before grades
are published. The top-level ``score`` stays the real one. Under each
exercise's line it says what the short text report says of its visible checks
(:func:`grader.formats.text.exercise_lines`): the likely mistake, the first
failure in full and one line for each further one.
"""

from __future__ import annotations

import dataclasses

from ..core.results import Report, Status, Visibility
from .text import exercise_lines, not_final

#: Hidden checks show on Gradescope only once the instructor publishes grades.
HIDDEN = "after_published"


def to_gradescope(report: Report, *, execution_time: float) -> dict:
    """The report in Gradescope's format (scores, one entry per check, student output hidden)."""
    tests = [
        {
            "name": f"{t.exercise}: {t.name.replace('_', ' ')}",
            "score": t.score,
            "max_score": t.max_score,
            "status": "passed" if t.status is Status.PASSED else "failed",
            "output": (t.title + ("\n\n" + t.feedback if t.feedback else "")).strip(),
            "visibility": HIDDEN if t.visibility is Visibility.HIDDEN else "visible",
        }
        for t in report.tests
    ]
    # the summary: per exercise, its score on the visible checks and what failed there, in the
    # words of the short text report
    seen = dataclasses.replace(
        report,
        tests=tuple(t for t in report.tests if t.visibility is Visibility.VISIBLE),
        diagnoses={e.name: _shown_diagnoses(report, e) for e in report.exercises},
    )
    lines = []
    for exercise in report.exercises:
        lines.append(_visible_summary(report, exercise.name))
        lines += exercise_lines(seen, exercise.name)
    if report.problem:
        lines.insert(0, report.problem)
    if report.isolation:
        lines.append(f"(isolation: {report.isolation.value})")
    result = {
        "score": report.score,
        "execution_time": round(execution_time, 2),
        "output": "\n".join(lines),
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }
    if report.unfinished:  # no number for a score that is no grade: Gradescope shows the run failed
        lines.insert(0, not_final(report))
        result["output"] = "\n".join(lines)
        del result["score"]
        for test in tests:
            del test["score"]
    return result


def _shown_diagnoses(report: Report, exercise) -> tuple:
    """An exercise's diagnoses, where a check the student can see failed (else they would tell
    of a hidden check's failure before grades are published)."""
    seen_failing = any(
        t.exercise == exercise.name and t.visibility is Visibility.VISIBLE and t.status is not Status.PASSED
        for t in report.tests
    )
    return exercise.diagnoses if seen_failing else ()


def _visible_summary(report: Report, exercise: str) -> str:
    """``f: 11/14 on the checks you can see``: the exercise's visible checks only."""
    seen = [t for t in report.tests if t.exercise == exercise and t.visibility is Visibility.VISIBLE]
    if not seen:
        return f"{exercise}: hidden checks only (shown once grades are published)"
    score = sum(t.score for t in seen)
    max_score = sum(t.max_score for t in seen)
    if any(t.unfinished for t in seen):  # no number: it would be no grade
        return f"{exercise}: unfinished (out of {max_score:g} on the checks you can see)"
    return f"{exercise}: {score:g}/{max_score:g} on the checks you can see"


def failure(message: str, *, execution_time: float = 0.0) -> dict:
    """A results.json that says grading could not happen (Gradescope must always get one)."""
    return {
        "score": 0,
        "execution_time": round(execution_time, 2),
        "output": message,
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [],
    }
