"""``--format junit``: JUnit XML that the schema GitLab and Jenkins accept holds valid, one test
case per check, the same points as every other format."""

from __future__ import annotations

import csv
import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from grader.core.results import Report, Status, TestResult, Visibility
from grader.formats.junit import to_junit

from .support import ON_TOY, TOY, TOY_BUGGY, python

#: Jenkins's JUnit schema (see tests/junit/README.md for where this copy comes from).
SCHEMA = xmlschema.XMLSchema(Path(__file__).parent / "junit" / "junit-10.xsd")
#: The toy gallery's layer_norm that ignores the eps it is given (a hidden check fails), here also
#: forgetting beta (a visible one fails): both kinds of failure, as JUnit writes them.
FORGETS_EPS = TOY.gallery / "forgets-eps" / TOY.filename


def _properties(suite: ET.Element) -> dict[str, str]:
    return {p.get("name"): p.get("value") for p in suite.find("properties")}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The buggy toy file graded as JUnit and as JSON."""
    folder = tmp_path_factory.mktemp("junit")
    buggy, out = folder / TOY.filename, folder / "report.xml"
    text = FORGETS_EPS.read_text(encoding="utf-8")
    assert text.count("* gamma + beta") == 1
    buggy.write_text(text.replace("* gamma + beta", "* gamma"), encoding="utf-8")
    done = python("grade", str(buggy), *ON_TOY, "--format", "junit", "-o", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    as_json = python("grade", str(buggy), *ON_TOY, "--format", "json")
    return out.read_text(encoding="utf-8"), json.loads(as_json.stdout)


def test_the_report_is_valid_junit(graded):
    xml, _ = graded
    SCHEMA.validate(xml)  # raises, naming the element, when it is not


def test_one_test_case_per_check_with_the_same_points(graded):
    xml, report = graded
    root = ET.fromstring(xml)
    cases = root.findall("testsuite/testcase")
    assert [c.get("name") for c in cases] == [t["name"] for t in report["tests"]]
    assert int(root.get("tests")) == len(report["tests"])
    total = 0.0
    for suite in root.findall("testsuite"):
        props = _properties(suite)
        exercise = props["exercise"]
        assert suite.get("name") == f"toy.{exercise}"
        assert float(props["score"]) == report["exercises"][exercise]["score"]
        assert float(props["max_score"]) == report["exercises"][exercise]["max_score"]
        total += float(props["score"])
        for case in suite.findall("testcase"):
            (t,) = [t for t in report["tests"] if t["name"] == case.get("name")]
            assert float(props[f"{t['name']}.score"]) == t["score"]
            assert float(props[f"{t['name']}.max_score"]) == t["max_score"]
            assert case.get("classname") == f"toy.{exercise}"
            failure = case.find("failure") if t["status"] != "error" else case.find("error")
            if t["status"] == "passed":
                assert case.find("failure") is None and case.find("error") is None
            elif t["visibility"] == "hidden":  # as in the GitHub format: no details
                assert failure.get("message") == failure.text == "failed (details are hidden)"
            else:
                assert failure.get("message") == t["feedback"].splitlines()[0].strip()
                assert failure.text == t["feedback"]
                assert failure.get("type") == t["status"]
    assert total == report["score"]
    failed = sum(t["status"] in ("failed", "timeout") for t in report["tests"])
    assert int(root.get("failures")) == failed > 0
    seen = {t["visibility"] for t in report["tests"] if t["status"] == "failed"}
    assert seen == {"visible", "hidden"}  # both ways a failure is written


def test_whatever_a_student_prints_stays_valid_xml():
    """Exception messages carry any character: NUL, escapes, lone surrogates, markup."""
    nasty = "boom\x00\x1b[31m\ud800 </failure><x a='&'> ]]> \ufffe\x7f end\nsecond line"
    tests = (
        TestResult("a_check", "split_heads", 5, 0, Status.ERROR, Visibility.VISIBLE, message=nasty),
        TestResult("b_check", "split_heads", 5, 0, Status.FAILED, Visibility.HIDDEN, message="secret"),
        TestResult("c_check", "merge_heads", 5, 5, Status.PASSED, Visibility.VISIBLE),
    )
    xml = to_junit(Report("x.py", tests, problem="bad\x01file"), lesson="toy")
    SCHEMA.validate(xml)
    root = ET.fromstring(xml)
    error = root.find("testsuite/testcase/error")
    assert "</failure><x a='&'> ]]>" in error.text and "\\x1b[31m" in error.text and "\\ud800" in error.text
    assert error.get("message").startswith("boom\\x00")
    hidden = root.findall("testsuite/testcase")[1].find("failure")
    assert "secret" not in xml and hidden.get("message") == "failed (details are hidden)"


def test_batch_writes_the_class_as_junit(tmp_path):
    klass = tmp_path / "class"
    for student, source in [("ada", TOY.solution), ("bob", TOY_BUGGY)]:
        (klass / student).mkdir(parents=True)
        shutil.copy(source, klass / student / "toy.py")
    (klass / "eve").mkdir()  # nothing handed in
    out, junit = tmp_path / "grades" / "gradebook.csv", tmp_path / "grades" / "class.xml"
    # the batch's workings: any lesson does
    done = python("batch", *ON_TOY, str(klass), "--out", str(out), "--jobs", "1", "--junit", str(junit))
    assert done.returncode == 0, done.stderr[-3000:]
    xml = junit.read_text(encoding="utf-8")
    SCHEMA.validate(xml)
    root = ET.fromstring(xml)
    with out.open(newline="") as f:
        scores = {row["student"]: float(row["score"]) for row in csv.DictReader(f)}
    for student in ("ada", "bob"):
        suites = [s for s in root.findall("testsuite") if s.get("name").startswith(f"{student}.")]
        assert [s.get("name") for s in suites] == [f"{student}.{e}" for e in TOY.exercises]
        assert sum(float(_properties(s)["score"]) for s in suites) == scores[student]
    (eve,) = [s for s in root.findall("testsuite") if s.get("name").startswith("eve.")]
    assert eve.get("name") == "eve.submission"
    error = eve.find("testcase/error")
    assert error.get("type") == "missing" and "without toy.py" in error.get("message")
