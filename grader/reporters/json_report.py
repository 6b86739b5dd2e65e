"""The machine-readable report: a plain dict ready for ``json.dumps``."""

from __future__ import annotations

from ..results import Report, Status, TestResult, Visibility

SCHEMA_VERSION = 1


def to_dict(report: Report) -> dict:
    """The report as ``{"score", "max_score", "exercises", "tests", ...}``."""
    return {
        "score": report.score,
        "max_score": report.max_score,
        "exercises": {e.name: {"score": e.score, "max_score": e.max_score} for e in report.exercises},
        "tests": [
            {
                "name": t.name,
                "exercise": t.exercise,
                "score": t.score,
                "max_score": t.max_score,
                "status": t.status.value,
                "visibility": t.visibility.value,
                "description": t.title,
                "feedback": t.feedback,
            }
            for t in report.tests
        ],
        "problem": report.problem,
        "isolation": report.isolation,
        "submission": report.submission,
        "schema_version": SCHEMA_VERSION,
    }


def from_dict(data: dict) -> Report:
    """Rebuild a Report from :func:`to_dict`'s output (for reports made by another process)."""
    tests = tuple(
        TestResult(
            name=t["name"],
            exercise=t["exercise"],
            max_score=t["max_score"],
            score=t["score"],
            status=Status(t["status"]),
            visibility=Visibility(t["visibility"]),
            title=t.get("description", ""),
            feedback=t.get("feedback", ""),
        )
        for t in data["tests"]
    )
    return Report(
        submission=data.get("submission", ""),
        tests=tests,
        problem=data.get("problem", ""),
        isolation=data.get("isolation", ""),
    )
