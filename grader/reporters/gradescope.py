"""Gradescope's results.json: what its autograder harness reads after run_autograder."""

from __future__ import annotations

from ..results import Report, Status, Visibility

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
    lines = [f"{e.name}: {e.score:g}/{e.max_score:g}" for e in report.exercises]
    if report.problem:
        lines.insert(0, report.problem)
    if report.isolation:
        lines.append(f"(isolation: {report.isolation})")
    return {
        "score": report.score,
        "execution_time": round(execution_time, 2),
        "output": "\n".join(lines),
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }


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
