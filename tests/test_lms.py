"""The batch's CSV in each LMS's layout: the columns its documentation gives, the roster joined,
missing and failed submissions told apart from a real 0, every cell inert.

Layouts (see :mod:`grader.formats.lms` for the sources): Canvas imports ``Student, ID, SIS User
ID, SIS Login ID, Section`` then one column per assignment (any other column becomes a new
assignment); Moodle maps a user column and a grade column; Blackboard matches ``Username`` and
wants every value of a comma-delimited file in quotes.
"""

from __future__ import annotations

import csv
import os
import shutil
import threading

import pytest

from grader.core.errors import UsageError
from grader.core.results import ExerciseResult, Standing
from grader.formats.gradebook import Gradebook, Row
from grader.formats.lms import Export, Layout, Unsubmitted, read_roster

from .support import ON_TOY, TOY, python

#: Four exercises of 25 points each: the gradebook's export knows no lesson.
EXERCISES = ("first", "second", "third", "fourth")
CANVAS_HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


def _row(student, standing=Standing.GRADED, score=42, message=""):
    per = tuple(ExerciseResult(n, score / 4 if standing is Standing.GRADED else 0, 25) for n in EXERCISES)
    return Row(
        student, standing, "f", "s", score if standing is Standing.GRADED else 0, 100, per, "", message
    )


@pytest.fixture
def book(tmp_path):
    book = Gradebook(tmp_path / "grades.sqlite")
    book.record(_row("ada", score=100))
    book.record(_row("bob", score=0))  # a real 0
    book.record(_row("eve", Standing.MISSING, message="nothing handed in"))
    book.record(_row("mallory", Standing.FAILED, message="the grader stopped"))
    yield book
    book.close()


def _read(path, **kwargs) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f, **kwargs))


def _write(path, rows, delimiter=","):
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f, delimiter=delimiter).writerows(rows)
    return path


def test_plain_keeps_its_columns_and_adds_the_status(book, tmp_path):
    out = tmp_path / "g.csv"
    written = book.export_csv(out, EXERCISES)
    rows = _read(out)
    assert rows[0] == ["student", "score", "max_score", *EXERCISES, "status"]
    by = {r[0]: r for r in rows[1:]}
    assert by["bob"][1] == "0" and by["bob"][-1] == "graded"
    # zero by default in plain, and the status says why
    assert by["eve"][1:3] == ["0", "100"] and by["eve"][-1] == "missing"
    assert by["mallory"][-1] == "failed"
    assert any("'eve': no grade (missing" in n for n in written.notes)
    assert any("'mallory': no grade (failed: the grader stopped)" in n for n in written.notes)


def test_an_export_that_cannot_be_written_leaves_no_temporary_file(book, tmp_path):
    out = tmp_path / "taken"
    out.mkdir()  # a folder where the CSV should go
    with pytest.raises(OSError):
        book.export_csv(out, EXERCISES)
    assert not list(tmp_path.glob("taken*.tmp"))


def test_plain_can_leave_unsubmitted_blank(book, tmp_path):
    out = tmp_path / "g.csv"
    book.export_csv(out, EXERCISES, Export(unsubmitted=Unsubmitted.BLANK))
    by = {r[0]: r for r in _read(out)[1:]}
    assert by["eve"][1] == "" and all(cell == "" for cell in by["eve"][3:-1])
    assert by["bob"][1] == "0"  # a real 0 stays 0


def test_canvas_without_a_roster_has_canvas_s_columns_and_one_assignment(book, tmp_path):
    out = tmp_path / "g.csv"
    book.export_csv(out, EXERCISES, Export(Layout.CANVAS, assignment="Attention lab"), lesson="attention")
    rows = _read(out)
    # Canvas's import: the five identifying columns, then one column per assignment, nothing else
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Attention lab"]
    by = {r[3]: r for r in rows[1:]}
    assert by["ada"][5] == "100" and by["bob"][5] == "0"
    assert by["eve"][5] == "" and by["mallory"][5] == ""  # blank by default: not a real 0


def test_canvas_with_its_own_export_as_roster(book, tmp_path):
    header = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Quiz 1 (301)", "Attention (302)"]
    roster = _write(
        tmp_path / "canvas_export.csv",
        [
            header,
            ["    Points Possible", "", "", "", "", "10", "100"],
            ["Lovelace, Ada", "1001", "S1", "ADA", "A", "9", ""],
            ["Builder, Bob", "1002", "S2", "bob", "A", "7", ""],
            ["Nobody, Nick", "1003", "S3", "nick", "B", "", ""],
            ["Evans, Eve", "1004", "S4", "eve", "B", "", ""],
        ],
    )
    export = Export(Layout.CANVAS, assignment="Attention (302)", roster=read_roster(roster, "SIS Login ID"))
    out = tmp_path / "g.csv"
    written = book.export_csv(out, EXERCISES, export, lesson="attention")
    rows = _read(out)
    assert rows[0] == header  # the assignment's own column, found in the roster and filled in place
    assert rows[1] == ["    Points Possible", "", "", "", "", "10", "100"]
    assert rows[2] == ["Lovelace, Ada", "1001", "S1", "ADA", "A", "9", "100"]  # ids matched ignoring case
    assert rows[3][-1] == "0" and rows[3][-2] == "7"  # the other assignment carried through as it was
    assert rows[4][-1] == "" and rows[5][-1] == ""
    notes = "\n".join(written.notes)
    assert "'nick': in the roster, handed in nothing" in notes
    assert "'mallory': graded, but not in the roster; left out of the CSV" in notes
    assert "mallory" not in out.read_text()


def test_moodle_and_blackboard_match_by_username(book, tmp_path):
    out = tmp_path / "g.csv"
    book.export_csv(out, EXERCISES, Export(Layout.MOODLE, unsubmitted=Unsubmitted.ZERO), lesson="attention")
    rows = _read(out)
    assert rows[0] == ["Username", "attention"]
    assert dict(rows[1:]) == {"ada": "100", "bob": "0", "eve": "0", "mallory": "0"}
    book.export_csv(out, EXERCISES, Export(Layout.BLACKBOARD), lesson="attention")
    text = out.read_text(encoding="utf-8")
    # Blackboard: in a comma-delimited file every value is in quotes
    assert text.splitlines()[0] == '"Username","attention"'
    assert '"ada","100"' in text and '"eve",""' in text


def test_blackboard_roster_downloaded_tab_separated_in_utf16(book, tmp_path):
    """A Grade Center download is tab-separated UTF-16; its column id ends the grade's header."""
    column = "Attention [Total Pts: 100 Score] |4567"
    lines = [
        ["Last Name", "First Name", "Username", "Student ID", column],
        ["Lovelace", "Ada", "ada", "7", ""],
    ]
    roster = tmp_path / "bb.xls"
    roster.write_text("\n".join("\t".join(line) for line in lines) + "\n", encoding="utf-16")
    export = Export(Layout.BLACKBOARD, assignment=column, roster=read_roster(roster, "Username"))
    out = tmp_path / "g.csv"
    book.export_csv(out, EXERCISES, export, lesson="attention")
    assert _read(out) == [lines[0], ["Lovelace", "Ada", "ada", "7", "100"]]


def test_every_cell_stays_inert(tmp_path):
    book = Gradebook(tmp_path / "grades.sqlite")
    book.record(_row("=1+1", score=10))
    roster = _write(tmp_path / "r.csv", [["Username", "Name"], ["=1+1", "@SUM(A1)"]])
    out = tmp_path / "g.csv"
    for layout in Layout:
        export = Export(layout, assignment="=HYPERLINK()", roster=read_roster(roster, "Username"))
        book.export_csv(out, EXERCISES, export, lesson="attention")
        cells = [cell for row in _read(out) for cell in row]
        assert "'=1+1" in cells and "'@SUM(A1)" in cells, layout
        assert not any(cell.startswith(("=", "@", "+")) for cell in cells), layout
    book.close()


def test_a_bad_roster_is_refused_with_a_sentence(tmp_path):
    roster = _write(tmp_path / "r.csv", [["Name", "Email"], ["Ada", "ada@x"]])
    with pytest.raises(UsageError, match="no column 'Username'.*'Name', 'Email'.*--roster-key"):
        read_roster(roster, "Username")
    with pytest.raises(UsageError, match="could not be read: No such file"):
        read_roster(tmp_path / "nope.csv", "Username")


def test_a_roster_that_is_a_fifo_or_a_folder_is_refused_not_waited_on(tmp_path):
    """A FIFO given as --roster would block the read forever (no one writes to it)."""
    fifo = tmp_path / "roster.csv"
    os.mkfifo(fifo)
    outcome = []

    def read():
        try:
            read_roster(fifo, "Username")
        except UsageError as err:
            outcome.append(str(err))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(120)  # not a measure of speed: a roster read that never returns
    if reader.is_alive():
        with open(fifo, "wb"):  # let the stuck reader go
            pass
        pytest.fail("reading a FIFO as the roster never returned")
    assert outcome and "is not a file" in outcome[0]
    with pytest.raises(UsageError, match="could not be read|is not a file"):
        read_roster(tmp_path, "Username")


def test_batch_writes_the_canvas_layout_with_a_roster(tmp_path):
    klass = tmp_path / "class"
    for student, source in [("ada", TOY.solution), ("bob", TOY.stubs)]:
        (klass / student).mkdir(parents=True)
        shutil.copy(source, klass / student / TOY.filename)
    (klass / "eve").mkdir()
    roster = _write(
        tmp_path / "roster.csv",
        [
            ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"],
            ["Ada", "1", "S1", "ada", "A"],
            ["Bob", "2", "S2", "bob", "A"],
            ["Eve", "3", "S3", "eve", "A"],
        ],
    )
    out = tmp_path / "grades" / "canvas.csv"
    args = ["--csv-format", "canvas", "--roster", str(roster), "--assignment", "Layer norm (99)"]
    done = python("batch", *ON_TOY, str(klass), "--out", str(out), "--jobs", "1", *args)
    assert done.returncode == 0, done.stderr
    assert _read(out) == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Layer norm (99)"],
        ["Ada", "1", "S1", "ada", "A", "14"],  # the toy lesson's points, all of them
        ["Bob", "2", "S2", "bob", "A", "0"],
        ["Eve", "3", "S3", "eve", "A", ""],
    ]
    assert "'eve': no grade (missing" in done.stdout and "written as blank" in done.stdout
    bad = python(
        "batch", *ON_TOY, str(klass), "--out", str(out), "--csv-format", "moodle", "--roster", str(roster)
    )
    assert (
        bad.returncode == 2
        and "has no column 'Email address'" in bad.stderr
        and "Traceback" not in bad.stderr
    )


def test_moodle_never_writes_a_blank_cell(book, tmp_path):
    """Moodle's import reads an empty cell as "no grade" and clears the grade the student had
    (MoodleDocs, Grade import: https://docs.moodle.org/311/en/Grade_import; the importer,
    https://github.com/moodle/moodle/blob/master/grade/import/csv/classes/load_data.php): a
    student without a grade gets no row, a 0 only when the instructor asks for it, and an
    unfinished grade never a number."""
    book.record(_row("una", Standing.UNFINISHED, message="unfinished, the machine was too busy"))
    out = tmp_path / "g.csv"
    written = book.export_csv(out, EXERCISES, Export(Layout.MOODLE), lesson="attention")
    assert _read(out) == [["Username", "attention"], ["ada", "100"], ["bob", "0"]]
    assert any("'una': no grade (unfinished" in n and "no row" in n for n in written.notes)
    book.export_csv(out, EXERCISES, Export(Layout.MOODLE, unsubmitted=Unsubmitted.ZERO), lesson="attention")
    assert dict(_read(out)[1:]) == {"ada": "100", "bob": "0", "eve": "0", "mallory": "0"}


def test_the_assignment_s_own_column_is_found_in_the_lms_s_export(book, tmp_path):
    """Canvas imports into an existing assignment only through its ``Name (id)`` header, and
    Blackboard into an existing column only through its ``|id`` (any other header makes a new
    one): given the LMS's own export as roster, the lesson's column there is the one filled."""
    canvas = _write(
        tmp_path / "canvas.csv",
        [[*CANVAS_HEADER, "Quiz (301)", "Attention (302)"], ["Ada", "1", "S1", "ada", "A", "9", ""]],
    )
    out = tmp_path / "g.csv"
    export = Export(Layout.CANVAS, roster=read_roster(canvas, "SIS Login ID"))
    written = book.export_csv(out, EXERCISES, export, lesson="attention")
    assert _read(out) == [
        [*CANVAS_HEADER, "Quiz (301)", "Attention (302)"],
        ["Ada", "1", "S1", "ada", "A", "9", "100"],
    ]
    assert any("the roster's column 'Attention (302)'" in n for n in written.notes)
    column = "Attention [Total Pts: 100 Score] |4567"
    bb = _write(
        tmp_path / "bb.csv", [["Last Name", "First Name", "Username", column], ["L", "Ada", "ada", ""]]
    )
    book.export_csv(
        out, EXERCISES, Export(Layout.BLACKBOARD, roster=read_roster(bb, "Username")), lesson="attention"
    )
    assert _read(out) == [["Last Name", "First Name", "Username", column], ["L", "Ada", "ada", "100"]]
