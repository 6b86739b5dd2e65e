"""Each bad or odd submission in tests/scenarios gets the outcome its expected.json names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .support import ATTENTION, compose, grade_folders

SCENARIOS = Path(__file__).parent / "scenarios"
NAMES = sorted(p.name for p in SCENARIOS.iterdir() if (p / "expected.json").is_file())
#: Short, so that the infinite-loop scenario costs seconds, not minutes.
CALL_TIMEOUT = 1.0


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, dict]:
    built = tmp_path_factory.mktemp("scenarios")
    folders = {}
    for name in NAMES:
        override = SCENARIOS / name / "override.py"
        folders[name] = compose(override, built / name).parent if override.exists() else SCENARIOS / name
    return grade_folders(folders, tmp_path_factory.mktemp("graded"), call_timeout=CALL_TIMEOUT)


@pytest.mark.parametrize("name", NAMES)
def test_scenario(reports, name):
    expected = json.loads((SCENARIOS / name / "expected.json").read_text())
    report = reports[name]
    exercises = report["exercises"]
    assert set(exercises) == set(ATTENTION.exercises)
    if "score" in expected:
        assert report["score"] == expected["score"], _summary(report)
    for exercise, score in expected.get("exercises", {}).items():
        assert exercises[exercise]["score"] == score, (exercise, _summary(report))
    for exercise in expected.get("lost", []):
        assert exercises[exercise]["score"] < exercises[exercise]["max_score"], exercise
    for fragment in expected.get("problem_contains", []):
        assert fragment in report["problem"], report["problem"]
    for exercise, fragment in expected.get("feedback_contains", {}).items():
        feedback = [t["feedback"] for t in report["tests"] if t["exercise"] == exercise and t["feedback"]]
        assert any(fragment in f for f in feedback), (fragment, feedback[:2])
    for exercise, status in expected.get("status", {}).items():
        failed = [
            t["status"] for t in report["tests"] if t["exercise"] == exercise and t["status"] != "passed"
        ]
        assert failed and set(failed) == {status}, failed
    # a file-level problem is explained once, and every check says it too
    if report["problem"]:
        assert all(t["feedback"] == report["problem"] for t in report["tests"])
    # no feedback ever shows the grader's own traceback
    for t in report["tests"]:
        assert "Traceback" not in t["feedback"] and "grader/" not in t["feedback"], t["feedback"]


def _summary(report: dict) -> str:
    return json.dumps({n: e["score"] for n, e in report["exercises"].items()}) + " " + report["problem"]
