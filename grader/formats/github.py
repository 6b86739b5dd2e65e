"""The result format GitHub Classroom's grading reporter reads from a runner step."""

from __future__ import annotations

import base64
import json

from ..core.inert import one_line, visible
from ..core.results import Report, Status, Visibility
from .text import not_final, score_of

_STATUS = {
    Status.PASSED: "pass",
    Status.FAILED: "fail",
    Status.ERROR: "error",
    Status.TIMEOUT: "error",
    Status.UNFINISHED: "error",
}


def to_github(report: Report) -> dict:
    """``{"version": 3, "status", "max_score", "tests": [...]}``; test scores add up to the grade.

    An unfinished report (a wall-clock guard stopped a check) has no grade: its result carries
    no ``score`` and no top-level ``max_score``. GitHub Classroom's grading reporter adds up the
    tests' scores of each result that has a ``max_score`` and leaves the others out, so it
    sends no points for this run rather than a sum that is no grade; ``status`` is ``error``."""
    statuses = {t.status for t in report.tests}
    if report.problem or report.unfinished:  # an unfinished score is no grade
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
        if t.status is Status.PASSED:
            message = ""
        elif t.unfinished:  # the machine's doing, not the student's: said the same, hidden or not
            message = f"unfinished: {not_final(report)}"
        else:
            message = "failed (details are hidden)" if hidden else t.feedback + likely.get(t.exercise, "")
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
    if report.unfinished:
        for test in tests:
            del test["score"]
        return {"version": 3, "status": overall, "tests": tests}
    return {"version": 3, "status": overall, "max_score": report.max_score, "tests": tests}


def step_output(result: dict) -> str:
    """The ``result=<base64 JSON>`` line for $GITHUB_OUTPUT."""
    encoded = base64.b64encode(json.dumps(result).encode()).decode()
    return f"result={encoded}\n"


# -- GitHub Actions: annotations and the job summary, read on every push
#
# Workflow commands are lines of the step's stdout, ``::error file=F,title=T::message``. Their
# escaping is the one of GitHub's toolkit (actions/toolkit, packages/core/src/command.ts):
# in the message ``%``, CR and LF become ``%25``, ``%0D`` and ``%0A``; in a property value
# ``:`` and ``,`` too (``%3A``, ``%2C``). Text between ``::stop-commands::TOKEN`` and ``::TOKEN::``
# is never read as a command ("Stopping and starting workflow commands", GitHub Docs).

#: Characters of a reason shown in an annotation (the full feedback is in the job summary).
REASON_CHARS = 300


def escape_data(text: str) -> str:
    """A workflow command's message, escaped as GitHub's toolkit does."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value (``file=``, ``title=``), escaped as GitHub's toolkit does."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def first_reason(report: Report, exercise: str) -> str:
    """Why ``exercise`` lost points, in one line: its first failed check and that check's first
    line of feedback (a hidden check's details stay hidden)."""
    for t in report.tests:
        if t.exercise == exercise and t.status is not Status.PASSED:
            if t.status is Status.LESSON_ERROR:
                return f"{t.name.replace('_', ' ')}: not run, a mistake in the lesson (your instructor has been told)"
            if t.unfinished:
                return (
                    f"{t.name.replace('_', ' ')}: unfinished, the machine was too busy (run it again later)"
                )
            if t.visibility is Visibility.HIDDEN:
                return f"{t.name.replace('_', ' ')}: failed (details are hidden)"
            line = next((s for s in t.feedback.splitlines() if s.strip()), t.status.value)
            line = one_line(line.strip())
            if len(line) > REASON_CHARS:
                line = line[: REASON_CHARS - 3] + "..."
            return f"{t.name.replace('_', ' ')}: {line}"
    return ""


def annotations(report: Report, *, file: str) -> list[str]:
    """One workflow command per exercise that lost points: ``::error`` when it scored nothing,
    ``::warning`` when it kept some points; one ``::error`` alone when the file could not be used."""
    where = f"file={escape_property(file)}"
    if report.problem:
        title = escape_property(f"{file} could not be graded")
        return [f"::error {where},title={title}::{escape_data(one_line(report.problem))}"]
    found = []
    for e in report.exercises:
        if e.score >= e.max_score:
            continue
        level = "error" if e.score <= 0 and not e.unfinished else "warning"
        title = escape_property(f"{e.name}: {score_of(e)}")
        found.append(f"::{level} {where},title={title}::{escape_data(first_reason(report, e.name))}")
    return found


def step_summary(report: Report, *, title: str, text: str) -> str:
    """The job summary (GitHub-flavoured markdown): the total once, a line per exercise, and
    ``text`` (the readable report) as a block of code, whatever it holds."""
    lines = [f"## {title}: {score_of(report)}", ""]
    if report.unfinished:
        lines += [not_final(report), ""]
    if report.problem:
        lines += ["The file could not be graded; the report below says why.", ""]
    lines += ["| exercise | points | |", "|---|---:|---|"]
    for e in report.exercises:
        checks = [t for t in report.tests if t.exercise == e.name]
        passed = sum(t.status is Status.PASSED for t in checks)
        verdict = "all checks pass" if passed == len(checks) else f"{passed} of {len(checks)} checks pass"
        lines.append(f"| `{e.name}` | {score_of(e)} | {verdict} |")
    fence = "`" * max(3, _longest_backticks(text) + 1)  # no line of the report can close it
    lines += ["", "<details><summary>The full report</summary>", "", fence + "text", visible(text).rstrip()]
    lines += [fence, "", "</details>", ""]
    return "\n".join(lines)


def _longest_backticks(text: str) -> int:
    """The longest run of backticks in ``text``."""
    longest, current = 0, 0
    for ch in text:
        current = current + 1 if ch == "`" else 0
        longest = max(longest, current)
    return longest
