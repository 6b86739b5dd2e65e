"""The machine-readable report: a plain dict ready for ``json.dumps``."""

from __future__ import annotations

from ..results import Report

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
        "schema_version": SCHEMA_VERSION,
    }
