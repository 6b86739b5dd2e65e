"""The machine-readable report: a plain dict ready for ``json.dumps``, and back.

The form is lossless: :func:`from_dict` rebuilds the very Report :func:`to_dict`
was given, so a report made in another process (``batch``'s grading
processes) reads, prints and scores as the one made here.
"""

from __future__ import annotations

from ..core.diagnosis import Diagnosis
from ..core.pictures import Heatmap
from ..core.results import LessonFault, Report, Status, TestResult, Visibility, paragraph
from ..core.settings import Isolation

SCHEMA_VERSION = 2


def _score(item) -> float | None:
    """A report's, exercise's or check's points; ``None`` (JSON's ``null``) where a wall-clock
    guard stopped it or one of its checks: such a number would be no grade."""
    return None if item.unfinished else item.score


def to_dict(report: Report) -> dict:
    """The report as ``{"score", "max_score", "unfinished", "exercises", "tests", ...}``; a score
    is ``null`` where ``unfinished`` is true."""
    return {
        "score": _score(report),
        "max_score": report.max_score,
        "unfinished": report.unfinished,
        "exercises": {
            e.name: {
                "score": _score(e),
                "unfinished": e.unfinished,
                "max_score": e.max_score,
                "diagnoses": [d.to_dict() for d in e.diagnoses],
            }
            for e in report.exercises
        },
        "tests": [
            {
                "name": t.name,
                "exercise": t.exercise,
                "score": _score(t),
                "max_score": t.max_score,
                "status": t.status.value,
                "visibility": t.visibility.value,
                "description": t.title,
                "feedback": t.feedback,
                "message": t.message,
                "counterexample": t.counterexample,
            }
            for t in report.tests
        ],
        "problem": report.problem,
        "pictures": [p.to_dict() for p in report.pictures],
        # mistakes of the lesson met while grading, for its author ("graded": checks did not run)
        "lesson_errors": [
            {"place": f.place, "message": f.message, "graded": f.graded} for f in report.lesson_errors
        ],
        "isolation": report.isolation.value if report.isolation is not None else "",
        "submission": report.submission,
        "schema_version": SCHEMA_VERSION,
    }


def _message(test: dict) -> str:
    """A check's message, from a report of this schema; from one of the first (``feedback``
    only), the paragraph without the smallest input it ends with."""
    if "message" in test:
        return test["message"]
    feedback, example = test.get("feedback", ""), test.get("counterexample", "")
    ending = paragraph("", example) if example else ""
    return feedback[: -len(ending)] if ending and feedback.endswith(ending) else feedback


def from_dict(data: dict) -> Report:
    """Rebuild a Report from :func:`to_dict`'s output (for reports made by another process)."""
    tests = tuple(
        TestResult(
            name=t["name"],
            exercise=t["exercise"],
            max_score=t["max_score"],
            score=0 if t["score"] is None else t["score"],  # unfinished: no points were given
            status=Status(t["status"]),
            visibility=Visibility(t["visibility"]),
            title=t.get("description", ""),
            message=_message(t),
            counterexample=t.get("counterexample", ""),
        )
        for t in data["tests"]
    )
    diagnoses = {
        name: tuple(
            Diagnosis(d["code"], d["hint"], tuple(d.get("checks", ()))) for d in exercise.get("diagnoses", ())
        )
        for name, exercise in data.get("exercises", {}).items()
        if exercise.get("diagnoses")
    }
    return Report(
        submission=data.get("submission", ""),
        tests=tests,
        problem=data.get("problem", ""),
        isolation=Isolation(data["isolation"]) if data.get("isolation") else None,
        diagnoses=diagnoses,
        pictures=tuple(Heatmap.from_dict(p) for p in data.get("pictures", ())),
        lesson_errors=tuple(
            LessonFault(str(f["place"]), str(f["message"]), bool(f.get("graded", True)))
            for f in data.get("lesson_errors", ())
        ),
    )
