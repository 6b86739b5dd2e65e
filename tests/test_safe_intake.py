"""Nothing a student hands in stops a class: each case found by hand, kept as it was found.

Each test here failed before text from a student was made safe where it enters the grader
(:func:`grader.core.inert.student_text`, :func:`grader.core.inert.student_name`); the
systematic version of these cases is ``test_intake_properties.py``.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.commands import batch, nbgrader_course
from grader.core.inert import file_stem
from grader.core.intake import open_submission
from grader.core.results import Standing
from grader.formats.gradebook import Gradebook, Row
from grader.formats.json_report import from_dict
from grader.formats.lms import Export, Layout, read_roster

from .support import ROOT, TOY_COURSE, graded_count, live_processes, python
from .support import TOY as TOY_LESSON

TOY = TOY_COURSE / "solutions" / "toy.py"
#: A file whose import raises an exception whose message is a lone surrogate.
SURROGATE_RAISED = 'raise ValueError("\\ud800")\n'
#: What a terminal would act on.
RAW = ("\x1b", "\x07", "\r", "\x9b")


def toy_batch(klass: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return python(
        "batch", "--course", str(TOY_COURSE), "--lesson", "toy", str(klass), "--out", str(out), *extra
    )


def read_rows(out: Path) -> dict[str, dict]:
    with out.open(newline="", encoding="utf-8") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


def notebook(source: str) -> str:
    cell = {"cell_type": "code", "metadata": {}, "source": source, "outputs": [], "execution_count": None}
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell]})


def folder(root: Path, name: str | bytes, content: str | None = None, file: str = "toy.py") -> Path:
    """root/name (a name given as bytes is made as those very bytes) holding ``file``."""
    path = Path(os.fsdecode(os.path.join(os.fsencode(root), os.fsencode(name))))
    path.mkdir(parents=True)
    if content is not None:
        (path / file).write_text(content, encoding="utf-8")
    return path


def assert_no_traceback(done: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout, done.stderr[-3000:]


def test_an_exception_holding_a_lone_surrogate_is_one_students_row(tmp_path):
    klass = tmp_path / "class"
    folder(klass, "ada", TOY.read_text())
    folder(klass, "mallory", SURROGATE_RAISED)
    out = tmp_path / "grades" / "g.csv"
    for _ in range(2):  # and the next run too
        done = toy_batch(klass, out)
        assert done.returncode == 0, done.stderr[-3000:]
        assert_no_traceback(done)
        rows = read_rows(out)
        assert rows["ada"]["score"] == "14" and rows["mallory"]["score"] == "0"
    report = json.loads((out.with_name("g_reports") / "mallory.json").read_text(encoding="utf-8"))
    assert "\\ud800" in report["problem"]  # written out, told to the student


def test_a_lone_surrogate_raised_in_process_too(tmp_path):
    """Isolation none: the message enters in this very process, not over the wire."""
    klass = tmp_path / "class"
    folder(klass, "mallory", SURROGATE_RAISED)
    out = tmp_path / "g.csv"
    done = toy_batch(klass, out, "--isolation", "none")
    assert done.returncode == 0, done.stderr[-3000:]
    assert read_rows(out)["mallory"]["status"] == "graded"


def test_a_notebook_cell_holding_a_lone_surrogate_is_refused_in_words(tmp_path):
    klass = tmp_path / "class"
    sub = folder(klass, "nina", notebook('x = "\ud800"\n'), file="homework.ipynb")
    graded = python("grade", "--course", str(TOY_COURSE), "--lesson", "toy", str(sub))
    assert_no_traceback(graded)
    said = " ".join(graded.stdout.split())  # the report wraps its lines
    assert "code cell 1 of homework.ipynb holds a character that is not text (U+D800" in said
    done = toy_batch(klass, tmp_path / "g.csv")
    assert done.returncode == 0, done.stderr[-3000:]
    assert_no_traceback(done)
    assert read_rows(tmp_path / "g.csv")["nina"]["status"] == "unreadable"


def test_a_folder_named_with_a_byte_that_is_not_utf8_isgraded_count(tmp_path):
    klass = tmp_path / "class"
    folder(klass, b"\xff", TOY.read_text())
    folder(klass, "\\udcff", TOY.read_text())  # the text its name is written as, as a folder: another student
    out = tmp_path / "g.csv"
    done = toy_batch(klass, out)
    assert done.returncode == 0, done.stderr[-3000:]
    assert_no_traceback(done)
    rows = read_rows(out)
    assert len(rows) == 2 and all(row["score"] == "14" for row in rows.values())
    assert "\\udcff" in rows


def test_a_folder_name_as_long_as_the_file_system_allows_is_graded_and_reran(tmp_path):
    klass = tmp_path / "class"
    long = "s" * 252
    folder(klass, long, TOY.read_text())
    folder(klass, "é" * 127, TOY.read_text())  # 254 bytes
    out = tmp_path / "g.csv"
    for run in ("first", "again"):
        done = toy_batch(klass, out)
        assert done.returncode == 0, done.stderr[-3000:]
        assert_no_traceback(done)
        if run == "again":
            assert "0 to grade, 2 unchanged" in done.stderr
        rows = read_rows(out)
        assert rows[long]["score"] == "14" and rows["é" * 127]["score"] == "14"
    names = [p.name for p in out.with_name("g_reports").iterdir()]
    assert len(names) == 6 and all(len(os.fsencode(n)) < 100 for n in names)
    assert f"{file_stem(long)}.json" in names


def test_report_file_names_are_unique_stable_and_short():
    names = [
        "bob",
        "carl smith",
        "carl_smith",
        "s" * 252,
        "s" * 253,
        "\\udcff",
        "\\\\udcff",
        ".",
        "",
        "a-1234abcd",
    ]
    stems = [file_stem(n) for n in names]
    assert len(set(stems)) == len(stems)
    assert stems[0] == "bob" and file_stem("carl smith") == stems[1]
    assert all(len(s.encode()) <= 80 and "/" not in s and s not in ("", ".", "..") for s in stems)


def test_escapes_in_the_names_of_a_submission_without_grade_stay_out_of_its_report(tmp_path):
    klass = tmp_path / "class"
    folder(klass, "\x1b]0;pwned\x07\x1b[2J")  # handed in nothing
    sub = folder(klass, "nina")
    (sub / "\x1b[31mhomework\r.ipynb").write_text("not json", encoding="utf-8")
    out = tmp_path / "g.csv"
    done = toy_batch(klass, out)
    assert done.returncode == 0, done.stderr[-3000:]
    for report in out.with_name("g_reports").iterdir():
        text = report.read_text(encoding="utf-8")
        assert not any(c in text for c in RAW), (report.name, text)
    assert not any(c in done.stdout + done.stderr for c in RAW)
    assert (
        "\\x1b[31mhomework\\x0d.ipynb"
        in (out.with_name("g_reports") / f"{file_stem('nina')}.txt").read_text()
    )


def test_escapes_in_a_collected_students_name_stay_out_of_the_terminal(tmp_path, capsys):
    (tmp_path / "course" / "submitted" / "\x1b]0;pwned\x07\x1b[2J" / TOY_LESSON.name).mkdir(parents=True)
    nbgrader_course.collect(lesson=TOY_LESSON, course_dir=tmp_path / "course", out_dir=tmp_path / "out")
    said = capsys.readouterr().err
    assert f"\\x1b]0;pwned\\x07\\x1b[2J: no {TOY_LESSON.name}/{TOY_LESSON.name}.ipynb" in said
    assert not any(c in said for c in RAW)


def test_the_gallery_names_odd_folders_in_text_any_reader_takes(tmp_path):
    folder(tmp_path, b"\xff", TOY.read_text())
    (folder(tmp_path, "\x1b[2Jx") / "toy.py").mkdir()  # refused when taken in: graded as its refusal
    done = python(
        "gallery", "--course", str(TOY_COURSE), "--lesson", "toy", str(tmp_path), "--format", "json"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    reports = json.loads(done.stdout)
    assert sorted(reports) == ["\\udcff", "\\x1b[2Jx"]
    json.dumps(reports, ensure_ascii=False).encode("utf-8")  # no lone surrogate in it, keys included
    for report in reports.values():  # the texts themselves, read back from JSON
        assert not any(c in report["submission"] + report["problem"] for c in RAW), report["submission"]


def _cells_a_spreadsheet_sees(path: Path) -> list[str]:
    """Every cell of ``path`` as a spreadsheet may split it: on commas, semicolons or tabs."""
    text = path.read_text(encoding="utf-8")
    cells = []
    for line in text.splitlines():
        for delimiter in (",", ";", "\t"):
            cells += line.split(delimiter)
    return [c.strip(' "') for c in cells]


def test_a_formula_after_a_semicolon_or_a_tab_stays_text(tmp_path):
    klass = tmp_path / "class"
    folder(klass, "ada;=1+1", TOY.read_text())
    folder(klass, "bob\t@SUM(1)", TOY.read_text())
    out = tmp_path / "g.csv"
    roster = tmp_path / "roster.csv"
    roster.write_text(
        'Username,Name\n"ada;=1+1","x;=HYPERLINK(""y"")"\n"bob\t@SUM(1)","a\t+2+3"\n', encoding="utf-8"
    )
    done = toy_batch(klass, out)
    assert done.returncode == 0, done.stderr[-3000:]
    done = toy_batch(
        klass,
        tmp_path / "m.csv",
        "--csv-format",
        "moodle",
        "--roster",
        str(roster),
        "--roster-key",
        "Username",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for written in (out, tmp_path / "m.csv"):
        assert "\t" not in written.read_text(encoding="utf-8")
        for cell in _cells_a_spreadsheet_sees(written):
            assert not cell.startswith(("=", "@", "+")), (written.name, cell)
    with (tmp_path / "m.csv").open(newline="", encoding="utf-8") as f:
        lines = list(csv.reader(f))
    assert [line[-1] for line in lines[1:]] == ["14", "14"]  # each matched to its own roster line


# -- the roster: a grade lands only in its own student's row


def _kim_book(tmp_path, *students: tuple[str, float]) -> Gradebook:
    book = Gradebook(tmp_path / "g.sqlite")
    for student, score in students:
        book.record(Row(student, Standing.GRADED, "f", "s", score, 100, ()))
    return book


@pytest.mark.parametrize("roster_id", ["Kim", "KIM"])
def test_a_kelvin_sign_is_not_the_letter_k(tmp_path, roster_id):
    kelvin = "\u212aim"
    book = _kim_book(tmp_path, ("kim", 100), (kelvin, 5))
    roster = tmp_path / "r.csv"
    roster.write_text(f"Username\n{roster_id}\n", encoding="utf-8")
    out = tmp_path / "out.csv"
    written = book.export_csv(
        out, (), Export(Layout.MOODLE, roster=read_roster(roster, "Username")), lesson="L"
    )
    assert [tuple(r) for r in written.rows] == [(roster_id, "100")]  # the real kim's 100, in kim's row
    assert any(kelvin in note and "not in the roster" in note for note in written.notes)


def test_a_name_that_matches_only_through_a_look_alike_is_left_unmatched(tmp_path):
    kelvin = "\u212aim"
    book = _kim_book(tmp_path, (kelvin, 5), ("\uff42ob", 7))  # KELVIN SIGN, FULLWIDTH b
    roster = tmp_path / "r.csv"
    roster.write_text("Username\nkim\nbob\n", encoding="utf-8")
    written = book.export_csv(  # Blackboard: a cell per roster line (Moodle has no row for no grade)
        tmp_path / "o.csv", (), Export(Layout.BLACKBOARD, roster=read_roster(roster, "Username")), lesson="L"
    )
    assert [tuple(r) for r in written.rows] == [("kim", ""), ("bob", "")]
    notes = "\n".join(written.notes)
    assert "'kim': only looks like the folder" in notes and "U+212A KELVIN SIGN" in notes
    assert "'bob': only looks like the folder" in notes and "FULLWIDTH" in notes


def test_a_name_that_matches_two_ids_is_left_unmatched(tmp_path):
    book = _kim_book(tmp_path, ("kim", 1), ("Kim", 2), ("ada", 3))
    roster = tmp_path / "r.csv"
    roster.write_text("Username\nKIM\nADA\nJose\u0301\n", encoding="utf-8")
    book.record(Row("Jos\u00e9", Standing.GRADED, "f", "s", 4, 100, ()))  # NFC and NFD: the same id
    written = book.export_csv(  # Blackboard: a cell per roster line (Moodle has no row for no grade)
        tmp_path / "o.csv", (), Export(Layout.BLACKBOARD, roster=read_roster(roster, "Username")), lesson="L"
    )
    assert [tuple(r) for r in written.rows] == [("KIM", ""), ("ADA", "3"), ("Jose\u0301", "4")]
    [note] = [n for n in written.notes if n.startswith("'KIM': matches the folders")]
    assert "'kim'" in note and "'Kim'" in note and "left unmatched" in note


# -- a failure of ours while grading one student is that student's row


def test_a_failure_of_the_grader_while_taking_a_folder_in_is_that_students_row(tmp_path, monkeypatch):
    klass = tmp_path / "class"
    folder(klass, "ada", TOY.read_text())
    folder(klass, "bob", TOY.read_text())

    def broken(path, filename):
        if path.name == "bob":
            raise RuntimeError("something of ours broke")
        return open_submission(path, filename)

    monkeypatch.setattr(batch, "open_submission", broken)
    entries, _ = batch.discover(klass, "toy.py")
    assert [e.student for e in entries] == ["ada", "bob"]
    assert entries[1].problem.startswith("the grader failed while taking the submission in (RuntimeError")
    assert entries[1].refusal is None  # recorded as failed, graded again next time


def test_a_failure_while_recording_one_student_is_that_students_row(tmp_path):
    class Flaky(Gradebook):
        def record(self, row):
            if row.standing is Standing.GRADED and row.student == "bob":
                raise sqlite3.OperationalError("disk I/O error")
            super().record(row)

    book = Flaky(tmp_path / "g.sqlite")
    reports = tmp_path / "reports"
    reports.mkdir()
    entry = batch.Entry("bob", tmp_path / "toy.py", "h")
    report = from_dict({"submission": "bob/toy.py", "tests": [], "problem": "", "isolation": "none"})
    failures: list[str] = []
    error = batch._record(book, reports, entry, "suite", report, "", {"x": 1}, failures)
    assert error.startswith("the grader failed while recording the grade (OperationalError")
    [row] = book.rows()
    assert row.student == "bob" and row.standing is Standing.FAILED
    assert failures and (reports / "bob.txt").exists()


# -- SIGTERM is Ctrl-C


@pytest.mark.parametrize("how", ["kill PID", "timeout: the whole group, again and again"])
def test_sigterm_ends_a_batch_as_ctrl_c_does(tmp_path, how):
    """`kill PID` signals the batch alone; `timeout` and CI runners signal its whole process
    group (its grading processes too), and a second signal may come while the batch is writing
    its CSV and removing its temporary folder: it must not cut that short."""
    klass = tmp_path / "class"
    size = 12  # enough that the batch is still busy when the signal comes after two grades
    for i in range(size):
        folder(klass, f"s{i:02d}", TOY.read_text())
    out = tmp_path / "g.csv"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "grader", "batch", "--course", str(TOY_COURSE), "--lesson", "toy"]
        + [str(klass), "--out", str(out), "--jobs", "1"],
        cwd=ROOT,
        start_new_session=True,
        env={**os.environ, "TMPDIR": str(scratch)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 300  # a bound on a hang only: nothing here is timed
    while (
        graded_count(out.with_suffix(".sqlite")) < 2 and time.monotonic() < deadline and proc.poll() is None
    ):
        time.sleep(0.05)
    if how == "kill PID":
        proc.send_signal(signal.SIGTERM)  # to the batch alone, as `kill PID` sends it
    else:  # as `timeout` does, then again while the batch cleans up, until its CSV is written
        while proc.poll() is None and not out.exists():
            os.killpg(proc.pid, signal.SIGTERM)
            time.sleep(0.02)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 128 + signal.SIGTERM, stderr[-3000:]
    assert "Traceback" not in stderr and "interrupted: the grades finished so far are saved" in stdout
    kept = graded_count(out.with_suffix(".sqlite"))
    assert 2 <= kept < size
    assert sum(row["status"] == "graded" for row in read_rows(out).values()) == kept  # the CSV was written
    assert list(scratch.iterdir()) == []  # its temporary folders removed
    time.sleep(0.5)
    assert live_processes(pgid=proc.pid) == []
    done = toy_batch(klass, out)
    assert done.returncode == 0 and f"{size - kept} to grade, {kept} unchanged" in done.stderr
