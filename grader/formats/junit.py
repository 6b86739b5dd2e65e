"""The report as JUnit XML, the test report GitLab, Jenkins, Azure Pipelines and most CI
dashboards read.

One ``<testsuite>`` per exercise, one ``<testcase>`` per check. The schema those tools accept
(the JUnit schema of Jenkins's xUnit plugin, ``junit-10.xsd``, which ``tests/junit/`` holds) has
properties on suites only, so each exercise's suite carries its name, points and maximum, and the
points and maximum of each of its checks (``CHECK.score``, ``CHECK.max_score``); each test case
also says its points in ``<system-out>``, which GitLab shows. A failed check carries the first
line of its feedback as the failure's ``message`` and the whole feedback as its text (a hidden
check's details stay hidden, as in the GitHub format). Where a wall-clock guard stopped a check
its points, and its exercise's, are written ``unfinished``: such a number would be no grade.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from ..core.inert import visible
from ..core.results import Report, Status, Visibility
from .text import UNFINISHED, not_final

#: Characters XML 1.0 cannot hold at all, even escaped (after :func:`visible`, only a few remain).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(value: str) -> str:
    return _NOT_XML.sub("\ufffd", visible(value))


def _points(x) -> str:
    return f"{x:g}"


def _score(item) -> str:
    """An exercise's or a check's points, or ``unfinished`` where a wall-clock guard stopped it:
    no number that is no grade."""
    return UNFINISHED if item.unfinished else _points(item.score)


def _add_properties(parent: ET.Element, pairs: list[tuple[str, str]]) -> None:
    properties = ET.SubElement(parent, "properties")
    for name, value in pairs:
        ET.SubElement(properties, "property", name=name, value=_text(value))


def _exercise_suites(report: Report, *, prefix: str) -> list[ET.Element]:
    """One ``<testsuite>`` per exercise of ``report``, named ``PREFIX.EXERCISE``."""
    suites = []
    for e in report.exercises:
        checks = [t for t in report.tests if t.exercise == e.name]
        suite = ET.Element(
            "testsuite",
            name=_text(f"{prefix}.{e.name}"),
            tests=str(len(checks)),
            failures=str(sum(t.status in (Status.FAILED, Status.TIMEOUT) for t in checks)),
            errors=str(
                sum(t.status in (Status.ERROR, Status.UNFINISHED, Status.LESSON_ERROR) for t in checks)
            ),
            skipped="0",
        )
        pairs = [("exercise", e.name), ("score", _score(e)), ("max_score", _points(e.max_score))]
        if report.problem:
            pairs.append(("problem", report.problem))
        if e.unfinished:
            pairs.append(("unfinished", not_final(report)))
        for t in checks:
            pairs += [(f"{t.name}.score", _score(t)), (f"{t.name}.max_score", _points(t.max_score))]
        _add_properties(suite, pairs)
        for t in checks:
            case = ET.SubElement(suite, "testcase", name=t.name, classname=_text(f"{prefix}.{e.name}"))
            if t.status is not Status.PASSED:
                hidden = t.visibility is Visibility.HIDDEN and not t.unfinished  # the machine's, said
                feedback = "failed (details are hidden)" if hidden else (t.feedback or t.status.value)
                first = next((s.strip() for s in feedback.splitlines() if s.strip()), t.status.value)
                tag = (
                    "error"
                    if t.status in (Status.ERROR, Status.UNFINISHED, Status.LESSON_ERROR)
                    else "failure"
                )
                problem = ET.SubElement(case, tag, message=_text(first), type=t.status.value)
                problem.text = _text(feedback)
            out = ET.SubElement(case, "system-out")
            points = (
                f"not run, out of {_points(t.max_score)} points: a mistake in the lesson, not the student's"
                if t.status is Status.LESSON_ERROR
                else f"unfinished, out of {_points(t.max_score)} points: the machine was too busy, run it again later"
                if t.unfinished
                else f"{_points(t.score)}/{_points(t.max_score)} points"
            )
            out.text = f"{points} ({e.name}, {t.visibility.value} check)"
        suites.append(suite)
    return suites


def _document(name: str, suites: list[ET.Element]) -> str:
    """``<testsuites>`` holding ``suites``, with their totals, as an XML document."""
    root = ET.Element(
        "testsuites",
        name=_text(name),
        tests=str(sum(int(s.get("tests")) for s in suites)),
        failures=str(sum(int(s.get("failures")) for s in suites)),
        errors=str(sum(int(s.get("errors")) for s in suites)),
    )
    root.extend(suites)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def to_junit(report: Report, *, lesson: str) -> str:
    """The JUnit XML document of ``report``: a ``<testsuites>`` of one suite per exercise, each
    named ``LESSON.EXERCISE``."""
    return _document(lesson, _exercise_suites(report, prefix=lesson))


def class_junit(students: list[tuple[str, Report | None, str, str]], *, lesson: str) -> str:
    """The JUnit XML document of a class, from (student, report or None, standing, why there is
    none):
    suites named ``STUDENT.EXERCISE``; a student without a report gets one suite,
    ``STUDENT.submission``, whose one test case is in error with the reason."""
    suites = []
    for student, report, standing, message in students:
        if report is not None:
            suites += _exercise_suites(report, prefix=student)
            continue
        suite = ET.Element(
            "testsuite", name=_text(f"{student}.submission"), tests="1", failures="0", errors="1"
        )
        _add_properties(suite, [("student", student), ("status", standing)])
        case = ET.SubElement(suite, "testcase", name="submission", classname=_text(student))
        reason = message or "no grade"
        error = ET.SubElement(case, "error", message=_text(reason.splitlines()[0]), type=standing)
        error.text = _text(reason)
        suites.append(suite)
    return _document(lesson, suites)
