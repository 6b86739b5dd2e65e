"""Reports are inert: what a student wrote reaches no terminal as escape sequences and no
spreadsheet as a formula; JSON carries it exactly."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import pytest

from grader.core.inert import csv_cell, one_line, visible
from grader.core.results import ExerciseResult, Report, Standing, Status, TestResult, Visibility
from grader.formats.gradebook import Gradebook, Row
from grader.formats.table import to_table
from grader.formats.text import to_text

from .support import ON_TOY, ROOT, TOY

#: What a terminal acts on: escape, bell, carriage return, the one-byte CSI, backspace.
RAW = ("\x1b", "\x07", "\r", "\x9b", "\x08")

#: Clears the screen and sets the window's title; then a carriage return to print over the line,
#: a right-to-left override, and a lone surrogate (which no UTF-8 stream can carry).
HOSTILE = "\x1b[2J\x1b]0;pwned\x07 and\rover \u202egnp.exe \ud800"


def assert_inert(text: str) -> None:
    found = sorted({repr(c) for c in text if c in RAW or "\ud800" <= c <= "\udfff" or c == "\u202e"})
    assert not found, f"raw control characters in the report: {found}"


# -- the functions


@pytest.mark.parametrize(
    "raw, shown",
    [
        ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
        ("\x1b]0;title\x07", "\\x1b]0;title\\x07"),
        ("ok\rFAKE", "ok\\x0dFAKE"),
        ("\x9b2J", "\\x9b2J"),
        ("\x00\x7f\x08", "\\x00\\x7f\\x08"),
        ("abc\u202edef\u2066", "abc\\u202edef\\u2066"),
        ("zero\u200bwidth\ufeff", "zero\\u200bwidth\\ufeff"),
        ("lone \ud800", "lone \\ud800"),
        ("tag \U000e0041", "tag \\U000e0041"),
    ],
)
def test_visible_writes_control_characters_out(raw, shown):
    assert visible(raw) == shown
    assert visible(shown) == shown  # nothing left to escape: applying it twice changes nothing


def test_visible_keeps_text_newlines_and_tabs():
    text = "expected -2.5, got 0\n\tx = np.array([1.0])\nnaïve 注意 ✓"
    assert visible(text) == text


def test_one_line_shows_newlines_and_tabs_too():
    assert one_line("ada\n\tlovelace\x1b") == "ada\\n\\tlovelace\\x1b"


@pytest.mark.parametrize(
    "student",
    ["=1+1", "@SUM(9*9)", "+cmd|' /C calc'!A0", "-2+3", " =1+1", '=HYPERLINK("x")'],
)
def test_csv_cell_keeps_a_formula_as_text(student):
    cell = csv_cell(student)
    assert cell.startswith("'") and cell[1:] == visible(student)


@pytest.mark.parametrize(
    "student, cell",
    [
        ("\t=1+1", "\\t=1+1"),  # a tab or a line end is written out: no cell starts after it
        ("\n=1+1", "\\n=1+1"),
        ("ada;=1+1", "ada;'=1+1"),  # a spreadsheet that splits on ; would run what follows it
        ("ada; @SUM(1)", "ada;' @SUM(1)"),
        ('ada,"=1+1"', 'ada,\'"=1+1"'),
        ("=a;=b", "'=a;'=b"),
        ("1;-2,+3", "1;-2,+3"),  # numbers stay numbers
    ],
)
def test_csv_cell_keeps_a_formula_after_any_delimiter_as_text(student, cell):
    assert csv_cell(student) == cell


def test_csv_cell_shows_a_carriage_return_so_no_formula_follows_it():
    assert csv_cell("\r=1+1") == "\\x0d=1+1"


@pytest.mark.parametrize("value", [-2, 3.5, 0, "-2", "-0.5", "+3", "1e-3", "ada", "o'brien", "a=b"])
def test_csv_cell_leaves_numbers_and_plain_text_alone(value):
    assert csv_cell(value) == value


# -- the text and table reporters


def _report(*, submission: str = TOY.filename, problem: str = "", feedback: str = "") -> Report:
    failed = TestResult(
        name="centered_shape",
        exercise="center_tokens",
        max_score=3,
        score=0,
        status=Status.ERROR,
        visibility=Visibility.VISIBLE,
        title="The result has the shape of x.",
        message=feedback,
        counterexample="x = np.zeros((1, 6))" if feedback else "",
    )
    passed = TestResult("centered_dtype", "center_tokens", 2, 2, Status.PASSED, Visibility.VISIBLE)
    return Report(submission=submission, tests=(failed, passed), problem=problem)


def test_text_report_shows_student_text_inert_and_keeps_its_lines():
    feedback = (
        f"`center_tokens` raised ValueError ({HOSTILE}).\nSmallest input found:\n    x = np.zeros((1, 6))"
    )
    text = to_text(_report(submission=f"sub/{HOSTILE}/{TOY.filename}", feedback=feedback))
    assert_inert(text)
    assert "\\x1b[2J\\x1b]0;pwned\\x07 and\\x0dover \\u202egnp.exe \\ud800" in text
    assert "      Smallest input found:\n          x = np.zeros((1, 6))" in text  # still on its own lines
    assert text.splitlines()[0] == one_line(f"Report for sub/{HOSTILE}/{TOY.filename}")


def test_text_report_shows_a_problem_and_a_heading_inert():
    text = to_text(
        _report(problem=f"Python cannot read your file: {HOSTILE}"), heading=f"Checking {HOSTILE}\nx"
    )
    assert_inert(text)
    assert text.splitlines()[0].startswith("Checking \\x1b[2J")
    assert "\\x1b]0;pwned\\x07" in text


def test_table_shows_labels_and_problems_inert_one_line_each():
    rows = [(f"=evil\x1b[2J\nname{HOSTILE}", _report(problem=f"crashed\n{HOSTILE}")), ("ada", _report())]
    table = to_table(rows, TOY.exercises)
    assert_inert(table)
    lines = table.splitlines()
    assert len(lines) == 2 + 2 + 3  # header, rule, two rows; a blank, a title and one problem
    assert lines[2].startswith("=evil\\x1b[2J\\nname\\x1b[2J")


# -- end to end: a submission whose functions raise with escape sequences


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """The reference with center_tokens and layer_norm raising hostile messages, outside the course."""
    folder = tmp_path_factory.mktemp("inert")
    source = TOY.solution.read_text(encoding="utf-8")
    source += (
        "\n\ndef center_tokens(x):\n"
        f"    raise ValueError({HOSTILE!r})\n"
        "\n\ndef layer_norm(x, gamma, beta, eps=1e-5):\n"
        "    raise RuntimeError('line1\\nline2\\x1b[31mred\\x9b')\n"
    )
    (folder / TOY.filename).write_text(source, encoding="utf-8")
    return folder


def _grader(folder, *args: str) -> subprocess.CompletedProcess:
    """``python -m grader ARGS`` run from ``folder``, with this checkout's grader, output as bytes."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "grader", *args, *ON_TOY, "--max-examples", "2"],
        cwd=folder,
        env=env,
        capture_output=True,
        timeout=600,
    )


@pytest.mark.parametrize("command, status", [("grade", 0), ("check", 1)])
def test_text_report_of_a_hostile_submission_is_inert(hostile, command, status):
    done = _grader(hostile, command, TOY.filename)
    assert done.returncode == status, done.stderr.decode(errors="replace")[-3000:]
    for byte in (b"\x1b", b"\x07", b"\r", b"\xc2\x9b"):
        assert byte not in done.stdout, byte
    text = done.stdout.decode("utf-8")
    assert "\\x1b[2J\\x1b]0;pwned\\x07" in text and "\\ud800" in text
    assert "line2\\x1b[31mred\\x9b" in text


def test_json_report_of_a_hostile_submission_carries_it_made_safe(hostile):
    """The message is made safe where it enters the grader, so the JSON (and whatever reads it:
    a database, a spreadsheet, a page) holds it written out: every character still told, none
    that acts, no lone surrogate that a UTF-8 reader would fail on."""
    done = _grader(hostile, "grade", TOY.filename, "--format", "json")
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    assert all(byte not in done.stdout for byte in (b"\x1b", b"\x07", b"\r"))
    report = json.loads(done.stdout)
    feedback = {t["exercise"]: t["feedback"] for t in report["tests"] if t["status"] == "error"}
    assert f"({visible(HOSTILE)})" in feedback["center_tokens"]
    assert "line1\nline2\\x1b[31mred\\x9b" in feedback["layer_norm"]  # its lines kept
    json.dumps(report, ensure_ascii=False).encode("utf-8")  # no lone surrogate left in it


# -- the gradebook's CSV

ATTACKS = ["=1+1", "@SUM(9*9)", "+cmd|' /C calc'!A0", "-2+3"]
#: The same as folder names (a name holds no slash).
FOLDERS = ["=1+1", "@SUM(9*9)", "+cmd|' -C calc'!A0", "-2+3"]


def _read_csv(path) -> dict[str, list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0][:3] == ["student", "score", "max_score"]
    return {row[0]: row[1:] for row in rows[1:]}


def test_gradebook_csv_keeps_formula_ids_as_text(tmp_path):
    book = Gradebook(tmp_path / "grades.sqlite")
    for student in [*ATTACKS, "ada"]:
        book.record(
            Row(student, Standing.GRADED, "f", "s", 42, 100, (ExerciseResult("center_tokens", 11, 20),))
        )
    book.record(
        Row("penalised", Standing.GRADED, "f", "s", -2, 100, (ExerciseResult("center_tokens", -2.5, 20),))
    )
    assert len(book.export_csv(tmp_path / "grades.csv", TOY.exercises).rows) == len(ATTACKS) + 2
    book.close()
    rows = _read_csv(tmp_path / "grades.csv")
    assert sorted(rows) == sorted(["'" + s for s in ATTACKS] + ["ada", "penalised"])
    assert rows["ada"][:2] == ["42", "100"]
    assert rows["penalised"][:2] == ["-2", "100"] and "-2.5" in rows["penalised"]  # numbers stay numbers


def test_batch_exports_formula_folder_names_as_text(tmp_path):
    """Folder names are chosen by students: graded for real (the toy lesson's stubs), exported
    as text."""
    folder = tmp_path / "class"
    for student in FOLDERS:
        (folder / student).mkdir(parents=True)
        (folder / student / TOY.filename).write_bytes(TOY.stubs.read_bytes())
    out = tmp_path / "grades" / "gradebook.csv"
    done = _grader(tmp_path, "batch", *ON_TOY, str(folder), "--out", str(out), "--jobs", "1")
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    rows = _read_csv(out)
    assert sorted(rows) == sorted("'" + s for s in FOLDERS)
    assert all(row[:2] == ["0", "14"] for row in rows.values())
