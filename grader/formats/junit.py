"""The report as JUnit XML, the test report GitLab, Jenkins, Azure Pipelines and most CI
dashboards read.

One ``<testsuite>`` per exercise, one ``<testcase>`` per check. The schema those tools accept
(the JUnit schema of Jenkins's xUnit plugin, ``junit-10.xsd``, which ``tests/junit/`` holds) has
properties on suites only, so each exercise's suite carries its name, points and maximum, and the
points and maximum of each of its checks (``CHECK.score``, ``CHECK.max_score``); each test case
also says its points in ``<system-out>``, which GitLab shows. A failed check carries the first
line of its feedback as the failure's ``message`` and the whole feedback as its text (a hidden
check's details stay hidden, as in the GitHub format).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from ..core.inert import visible
from ..core.results import Report, Status, Visibility

#: Characters XML 1.0 cannot hold at all, even escaped (after :func:`visible`, only a few remain).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(value: str) -> str:
    return _NOT_XML.sub("\ufffd", visible(value))


def _points(x) -> str:
    return f"{x:g}"


def _add_properties(parent: ET.Element, pairs: list[tuple[str, str]]) -> None:
    properties = ET.SubElement(parent, "properties")
    for name, value in pairs:
        ET.SubElement(properties, "property", name=name, value=_text(value))


def to_junit(report: Report, *, lesson: str) -> str:
    """The JUnit XML document of ``report`` (a ``<testsuites>`` of one suite per exercise)."""
    failed = sum(t.status in (Status.FAILED, Status.TIMEOUT) for t in report.tests)
    errors = sum(t.status is Status.ERROR for t in report.tests)
    root = ET.Element(
        "testsuites",
        name=lesson,
        tests=str(len(report.tests)),
        failures=str(failed),
        errors=str(errors),
    )
    for e in report.exercises:
        checks = [t for t in report.tests if t.exercise == e.name]
        suite = ET.SubElement(
            root,
            "testsuite",
            name=f"{lesson}.{e.name}",
            tests=str(len(checks)),
            failures=str(sum(t.status in (Status.FAILED, Status.TIMEOUT) for t in checks)),
            errors=str(sum(t.status is Status.ERROR for t in checks)),
            skipped="0",
        )
        pairs = [("exercise", e.name), ("score", _points(e.score)), ("max_score", _points(e.max_score))]
        if report.problem:
            pairs.append(("problem", report.problem))
        for t in checks:
            pairs += [(f"{t.name}.score", _points(t.score)), (f"{t.name}.max_score", _points(t.max_score))]
        _add_properties(suite, pairs)
        for t in checks:
            case = ET.SubElement(suite, "testcase", name=t.name, classname=f"{lesson}.{e.name}")
            if t.status is not Status.PASSED:
                hidden = t.visibility is Visibility.HIDDEN
                feedback = "failed (details are hidden)" if hidden else (t.feedback or t.status.value)
                first = next((s.strip() for s in feedback.splitlines() if s.strip()), t.status.value)
                tag = "error" if t.status is Status.ERROR else "failure"
                problem = ET.SubElement(case, tag, message=_text(first), type=t.status.value)
                problem.text = _text(feedback)
            out = ET.SubElement(case, "system-out")
            out.text = (
                f"{_points(t.score)}/{_points(t.max_score)} points ({e.name}, {t.visibility.value} check)"
            )
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
