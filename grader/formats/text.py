"""The readable report: per exercise a score, per failed check one short paragraph.

Everything a student chose (the file's path, why it could not be loaded, the
feedback quoting their exception messages and values) is shown through
:mod:`grader.core.inert`: an escape sequence in an exception message is printed as
``\\x1b[2J``, never run by the terminal that shows the report.
"""

from __future__ import annotations

import textwrap

from ..core.inert import one_line, visible
from ..core.results import Report, Status, TestResult, Visibility

RULE = "-" * 72
_MARK = {Status.PASSED: "ok", Status.FAILED: "FAILED", Status.ERROR: "ERROR", Status.TIMEOUT: "TIMEOUT"}


def _points(x) -> str:
    return f"{x:g}"


def _check_paragraph(t: TestResult) -> str:
    head = f"  [{_MARK[t.status]}] {t.name} ({_points(t.max_score)} pt{'s' if t.max_score != 1 else ''})"
    if t.visibility is Visibility.HIDDEN:
        head += " [hidden]"
    body = []
    if t.title:
        body.append(textwrap.fill(t.title, 68))
    if t.feedback:
        body.append(visible(t.feedback))
    return head + "\n" + textwrap.indent("\n".join(body), "      ")


def _shared_reason(failed: list[TestResult]) -> str:
    """The one message every failed check of an exercise gives, if they all give the same
    and none has an example (a missing or unwritten function, a wrong signature)."""
    reasons = {t.feedback for t in failed}
    if len(reasons) == 1 and not failed[0].counterexample:
        return visible(reasons.pop())
    return ""


def to_text(report: Report, *, heading: str = "") -> str:
    """The whole report as text for a terminal or a file."""
    lines = [one_line(heading or f"Report for {report.submission}"), RULE]
    if report.problem:
        lines += [textwrap.fill(visible(report.problem), 72), RULE]
    for exercise in report.exercises:
        tests = [t for t in report.tests if t.exercise == exercise.name]
        failed = [t for t in tests if t.status is not Status.PASSED]
        score = f"{_points(exercise.score)}/{_points(exercise.max_score)}"
        summary = (
            f"all {len(tests)} checks pass"
            if not failed
            else f"{len(tests) - len(failed)} of {len(tests)} checks pass"
        )
        lines.append(f"{exercise.name:<20} {score:>7}   {summary}")
        for number, diagnosis in enumerate(exercise.diagnoses):
            lead = "  likely mistake: " if number == 0 else "  or perhaps:     "
            said = f"{diagnosis.hint} [{diagnosis.code}]"
            lines.append(textwrap.fill(said, 72, initial_indent=lead, subsequent_indent=" " * len(lead)))
        shared = _shared_reason(failed)
        if shared and not report.problem:
            lines.append(textwrap.indent(textwrap.fill(shared, 66), "      "))
        elif not shared:
            lines.extend(_check_paragraph(t) for t in failed)
        lines.append("")
    lines += [RULE, f"{'Total':<20} {_points(report.score)}/{_points(report.max_score)}"]
    if report.isolation:
        lines.append(f"Isolation: {report.isolation.describe()}")
    return "\n".join(lines) + "\n"
