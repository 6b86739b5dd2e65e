"""The text report's layout: scores in one column however long an exercise's name, and no
isolation line in `check`'s report (run in the checker's own process, there is nothing to say)."""

from __future__ import annotations

import re

from grader.core.results import Report, Status, TestResult, Visibility
from grader.core.settings import Isolation
from grader.formats.text import to_text


def _report(isolation: Isolation | None) -> Report:
    tests = tuple(
        TestResult(f"t{i}", name, 10, 10, Status.PASSED, Visibility.VISIBLE)
        for i, name in enumerate(("mask", "a_function_named_at_length_of_31"))
    )
    return Report(submission="x.py", tests=tests, isolation=isolation)


def test_scores_line_up_past_twenty_columns_of_name():
    lines = to_text(_report(None)).splitlines()
    ends = {m.end() for line in lines if "checks pass" in line and (m := re.search(r"\d+/\d+", line))}
    assert len(ends) == 1, lines


def test_the_isolation_line_is_said_only_for_a_sandbox():
    assert "Isolation" not in to_text(_report(Isolation.NONE))
    assert "Isolation: namespaces" in to_text(_report(Isolation.NAMESPACES))
