"""A check a wall-clock guard stopped is ``unfinished``: no format and no command writes a number
for it, for its exercise or for the total; each says ``unfinished`` and what to do instead.

The reports are built here, never graded: the machine's load is not needed to know what a
format writes for an unfinished check. In each, exercise ``layer_norm`` kept 7 of its 10
points on the checks that finished and one check worth 3 was stopped; ``center_tokens`` passed
whole (5/5). The numbers no format may write are therefore ``7/10`` (the exercise), ``12/15``
(the total) and a ``0`` of the stopped check.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest

from grader.commands import cell, check, gallery, grade
from grader.core.lesson import COURSE_VARIABLE
from grader.core.results import UNFINISHED_EXIT, Report, Status, TestResult, Visibility
from grader.core.settings import resolve
from grader.formats.github import annotations, step_summary, to_github
from grader.formats.gradescope import to_gradescope
from grader.formats.html import to_html
from grader.formats.json_report import from_dict, to_dict
from grader.formats.junit import class_junit, to_junit
from grader.formats.table import to_table
from grader.formats.text import to_text

from .support import TOY, TOY_COURSE

#: Scores that would be no grade: the unfinished exercise's and the total.
NO_GRADE = re.compile(r"(?<![\d.])(7/10|12/15)(?![\d.])")


def _report(stopped: Visibility = Visibility.VISIBLE) -> Report:
    return Report(
        "toy.py",
        (
            TestResult("shape", "center_tokens", 5, 5, Status.PASSED, Visibility.VISIBLE),
            TestResult("values", "layer_norm", 7, 7, Status.PASSED, Visibility.VISIBLE),
            TestResult(
                "slow_one",
                "layer_norm",
                3,
                0,
                Status.UNFINISHED,
                stopped,
                message="`layer_norm` could not finish: the machine was too busy to give it its 3 s.",
            ),
        ),
    )


def test_the_report_knows_which_exercise_is_unfinished():
    report = _report()
    unfinished = {e.name: e.unfinished for e in report.exercises}
    assert unfinished == {"center_tokens": False, "layer_norm": True}
    assert [t.unfinished for t in report.tests] == [False, False, True]


@pytest.mark.parametrize("stopped", list(Visibility))
def test_github_classroom_gets_no_points_for_an_unfinished_run(stopped):
    result = to_github(_report(stopped))
    assert result["status"] == "error"
    # the grading reporter adds up test scores of results with a max_score: none of either
    assert "max_score" not in result
    assert all("score" not in test for test in result["tests"])
    slow = next(t for t in result["tests"] if t["test_code"] == "layer_norm::slow_one")
    assert slow["message"].startswith("unfinished") and "again later" in slow["message"]
    assert not NO_GRADE.search(json.dumps(result))


def test_github_annotations_and_summary_say_unfinished():
    report = _report()
    said = annotations(report, file="toy.py")
    assert len(said) == 1 and said[0].startswith("::warning ")
    assert "layer_norm%3A unfinished" in said[0] and "again later" in said[0]
    summary = step_summary(report, title="toy", text="the report")
    assert "## toy: unfinished" in summary
    assert "| `layer_norm` | unfinished |" in summary and "| `center_tokens` | 5/5 |" in summary
    assert "again later" in summary
    assert not NO_GRADE.search("\n".join(said) + summary)


def _suites(xml: str) -> dict[str, dict[str, str]]:
    root = ET.fromstring(xml)
    return {
        s.get("name"): {p.get("name"): p.get("value") for p in s.find("properties")}
        for s in root.iter("testsuite")
    }


def test_junit_writes_unfinished_where_the_points_would_be():
    xml = to_junit(_report(), lesson="toy")
    suites = _suites(xml)
    merge = suites["toy.layer_norm"]
    assert merge["score"] == "unfinished" and merge["max_score"] == "10"
    assert merge["slow_one.score"] == "unfinished" and merge["slow_one.max_score"] == "3"
    assert merge["values.score"] == "7"  # a check that finished keeps its verdict
    assert "again later" in merge["unfinished"]
    assert suites["toy.center_tokens"]["score"] == "5" and "unfinished" not in suites["toy.center_tokens"]
    out = {case.get("name"): case.find("system-out").text for case in ET.fromstring(xml).iter("testcase")}
    assert out["slow_one"].startswith("unfinished, out of 3 points") and "0/3" not in out["slow_one"]
    assert not NO_GRADE.search(xml)
    # the class document writes each student's suites the same way
    klass = class_junit([("kim", _report(), "unfinished", "")], lesson="toy")
    assert _suites(klass)["kim.layer_norm"]["slow_one.score"] == "unfinished"


def test_a_hidden_unfinished_check_says_so_in_junit():
    xml = to_junit(_report(Visibility.HIDDEN), lesson="toy")
    error = next(c for c in ET.fromstring(xml).iter("testcase") if c.get("name") == "slow_one").find("error")
    assert error is not None and "too busy" in error.get("message")


def test_the_gallery_table_shows_unfinished_and_what_to_do():
    finished = Report(
        "b.py", (TestResult("shape", "center_tokens", 5, 5, Status.PASSED, Visibility.VISIBLE),)
    )
    table = to_table([("ada", _report()), ("bob", finished)], ("center_tokens", "layer_norm"))
    ada = next(line for line in table.splitlines() if line.startswith("ada"))
    assert ada.split() == ["ada", "5/5", "unfinished", "unfinished"]
    bob = next(line for line in table.splitlines() if line.startswith("bob"))
    assert bob.split() == ["bob", "5/5", "-", "5/5"]
    assert "too busy" in table and "again later" in table
    assert not NO_GRADE.search(table)


def test_the_gallery_command_prints_no_score_for_an_unfinished_submission(monkeypatch, capsys, tmp_path):
    (tmp_path / "ada").mkdir()
    (tmp_path / "ada" / "toy.py").write_bytes(TOY.solution.read_bytes())
    monkeypatch.setattr(gallery, "run_checks", lambda *args, **kwargs: _report())
    settings = resolve("gallery", lesson_exercises=TOY.exercises)
    code = gallery.main(lesson=TOY, settings=settings, folder=tmp_path)
    out = capsys.readouterr().out
    assert code == UNFINISHED_EXIT
    assert "unfinished" in out and not NO_GRADE.search(out)
    code = gallery.main(lesson=TOY, settings=settings, folder=tmp_path, fmt="json")
    data = json.loads(capsys.readouterr().out)["ada"]
    assert data["score"] is None and data["exercises"]["layer_norm"]["score"] is None


def test_the_text_and_html_reports_write_no_number_for_it():
    report = _report()
    text = to_text(report)
    assert not NO_GRADE.search(text)
    total = next(line for line in text.splitlines() if line.startswith("Total"))
    assert total.split()[1] == "unfinished" and "not final" in total
    merge = next(line for line in text.splitlines() if line.startswith("layer_norm"))
    assert merge.split()[1] == "unfinished"
    # a check the machine did not finish is nothing to fix
    assert "Next: fix" not in to_text(report, recheck="python -m grader check toy.py")
    page = to_html(report)
    assert "Total: unfinished" in page and not NO_GRADE.search(page)


def test_the_json_report_has_no_score_where_it_is_unfinished():
    report = _report()
    data = to_dict(report)
    assert data["unfinished"] is True and data["score"] is None
    assert data["exercises"]["layer_norm"]["score"] is None
    assert data["exercises"]["center_tokens"]["score"] == 5
    assert [t["score"] for t in data["tests"]] == [5, 7, None]
    assert from_dict(json.loads(json.dumps(data))) == report  # still lossless


def test_gradescope_s_summary_writes_no_number_for_it():
    result = to_gradescope(_report(), execution_time=1.0)
    assert "score" not in result and all("score" not in t for t in result["tests"])
    assert "layer_norm: unfinished" in result["output"]
    assert not re.search(r"layer_norm: [\d.]+/", result["output"])


def test_grade_says_unfinished_instead_of_a_score(monkeypatch, capsys):
    monkeypatch.setattr(check, "run_checks", lambda *args, **kwargs: _report())  # grade runs check's
    settings = resolve("grade", lesson_exercises=TOY.exercises)
    for fmt in grade.FORMATS:
        code = grade.main(lesson=TOY, settings=settings, path=TOY.solution, fmt=fmt)
        said = capsys.readouterr()
        assert code == UNFINISHED_EXIT
        assert not NO_GRADE.search(said.out + said.err), fmt
        assert "score: unfinished" in said.err and "again later" in said.err


def test_a_notebook_cell_gives_no_points_for_unfinished_checks(monkeypatch, capsys):
    """After its second try a test cell prints no score and raises, the one outcome nbgrader never
    takes for points earned; the error shows the message alone, no traceback."""
    monkeypatch.setenv(COURSE_VARIABLE, str(TOY_COURSE))
    tries = []

    def busy(*args, **kwargs):
        tries.append(1)
        return _report()

    monkeypatch.setattr(cell, "run_checks", busy)
    with pytest.raises(cell.NoPointsYet) as raised:
        cell.grade_here("layer_norm", {}, lesson="toy")
    assert len(tries) == 2  # once more before saying so
    printed = capsys.readouterr().out
    assert printed.startswith("layer_norm: unfinished, no points yet (out of 10)")
    assert not NO_GRADE.search(printed) and "7/" not in printed
    assert raised.value._render_traceback_() == [f"NoPointsYet: {raised.value}"]
    assert "again later" in str(raised.value)


def test_a_notebook_cell_retried_into_a_grade_gives_its_points(monkeypatch, capsys):
    monkeypatch.setenv(COURSE_VARIABLE, str(TOY_COURSE))
    finished = Report(
        "toy.py", (TestResult("values", "layer_norm", 10, 10, Status.PASSED, Visibility.VISIBLE),)
    )
    answers = iter([_report(), finished])
    monkeypatch.setattr(cell, "run_checks", lambda *args, **kwargs: next(answers))
    assert cell.grade_here("layer_norm", {}, lesson="toy") == 10
    assert capsys.readouterr().out.startswith("layer_norm: 10/10 points")
