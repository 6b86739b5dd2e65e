"""The result format GitHub Classroom's grading reporter reads from a runner step."""

from __future__ import annotations

import base64
import json

from ..core.results import Report, Status, Visibility

_STATUS = {Status.PASSED: "pass", Status.FAILED: "fail", Status.ERROR: "error", Status.TIMEOUT: "error"}


def to_github(report: Report) -> dict:
    """``{"version": 3, "status", "max_score", "tests": [...]}``; test scores add up to the grade."""
    statuses = {t.status for t in report.tests}
    if report.problem:
        overall = "error"
    elif statuses <= {Status.PASSED}:
        overall = "pass"
    else:
        overall = "fail"
    likely = {
        e.name: "".join(f"\nlikely mistake: {d.hint} [{d.code}]" for d in e.diagnoses)
        for e in report.exercises
    }
    tests = []
    for t in report.tests:
        hidden = t.visibility is Visibility.HIDDEN
        message = (
            ""
            if t.status is Status.PASSED
            else ("failed (details are hidden)" if hidden else t.feedback + likely.get(t.exercise, ""))
        )
        tests.append(
            {
                "name": f"{t.exercise}: {t.name.replace('_', ' ')}",
                "status": _STATUS[t.status],
                "score": t.score,
                "max_score": t.max_score,
                "message": message,
                "test_code": f"{t.exercise}::{t.name}",
                "filename": "",
                "line_no": 0,
                "execution_time": "",
            }
        )
    return {"version": 3, "status": overall, "max_score": report.max_score, "tests": tests}


def step_output(result: dict) -> str:
    """The ``result=<base64 JSON>`` line for $GITHUB_OUTPUT."""
    encoded = base64.b64encode(json.dumps(result).encode()).decode()
    return f"result={encoded}\n"
