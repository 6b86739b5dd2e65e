"""`grader export` and `grader report`: an instructor's files from a gradebook a batch wrote,
grading nothing.

Each LMS layout is checked against what that LMS's import documents:

* Canvas, "Import CSV File for Carmen Grades" (Ohio State's guide to Canvas's Gradebook import,
  https://teaching.resources.osu.edu/toolsets/carmencanvas/guides/calculating-final-grades/import-csv-file-carmen-grades):
  the columns Student, ID, SIS User ID, SIS Login ID, Section, then the assignments; a column
  Canvas does not know makes a new assignment. Canvas's own export names an assignment's column
  ``Name (id)`` (https://ts.vcu.edu/askit/teaching-and-learning/canvas/faculty/grading-faculty/gradebook-action-menu-faculty/).
* Moodle, "Grade import" (https://docs.moodle.org/311/en/Grade_import): at import a column is
  mapped ("Map from") to a user field ("Map to": username, ID number, email address) and each
  grade column to a grade item; its export (the file to start from) names students by email
  address and ID number. An empty cell is read as no grade
  (https://github.com/moodle/moodle/blob/master/grade/import/csv/classes/load_data.php), which
  clears the grade a student had: a student without a grade gets no row.
* Blackboard, "Uploading or Downloading Grade Center Items for Working Offline"
  (http://library.blackboard.com/ref/3ea64795-6ecc-4abd-b595-0a9a8dfdec94/Content/_instructor_grade_center/grade_center_upload_download.htm):
  students matched by user name, columns by the column id the download ends a header with
  (``|123456``); a column without one becomes a new column; every value of a comma-delimited
  file in quotes.
"""

from __future__ import annotations

import csv
import hashlib
import html.parser
import json
import re
import shutil
import sqlite3
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader import cli
from grader.core.inert import student_name
from grader.core.results import ExerciseResult, Standing
from grader.formats import lms
from grader.formats.class_report import summarise, to_class_html
from grader.formats.gradebook import Gradebook, Row
from grader.formats.lms import Export, Layout, Roster, Unsubmitted, table

from .support import ATTENTION, compose, python
from .test_html import _browser, _render

BUGGY = ATTENTION.gallery / "typical-mistakes" / "attention.py"
WRONG_SCALE = ATTENTION.catalog / "bugs" / "mha_scale_sqrt_D.py"
#: A student folder named to attack every reader: a formula, HTML, a bidirectional override.
HOSTILE = "=2+3<img src=x onerror=alert(1)>\u202e@SUM(A1)"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A small class graded ONCE by a real batch: (its gradebook CSV, the class folder)."""
    root = tmp_path_factory.mktemp("export")
    klass = root / "class"
    for student, source in [("ada", ATTENTION.solution), ("bob", BUGGY), (HOSTILE, BUGGY)]:
        (klass / student).mkdir(parents=True)
        shutil.copy(source, klass / student / "attention.py")
    compose(WRONG_SCALE, klass / "carl")
    (klass / "eve").mkdir()  # handed in nothing
    out = root / "grades" / "gradebook.csv"
    done = python("batch", "--lesson", "attention", str(klass), "--out", str(out), "--jobs", "2")
    assert done.returncode == 0, done.stderr[-3000:]
    return out, klass


def _copy(graded, tmp_path) -> Path:
    """The gradebook (CSV and database) alone, in a folder of its own."""
    out, _ = graded
    (tmp_path / "g").mkdir()
    for f in (out, out.with_suffix(".sqlite")):
        shutil.copy(f, tmp_path / "g" / f.name)
    return tmp_path / "g" / out.name


def _read(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def _export(source: Path, out: Path, *args: str) -> subprocess.CompletedProcess:
    return python("export", "--from", str(source), "--out", str(out), *args)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- each layout, from a gradebook a real batch wrote


def test_plain_export_is_the_csv_the_batch_wrote(graded, tmp_path):
    out, _ = graded
    again = tmp_path / "plain.csv"
    done = _export(out, again)
    assert done.returncode == 0, done.stderr
    assert again.read_bytes() == out.read_bytes()


def test_canvas_header_carries_the_assignment_id(graded, tmp_path):
    out, _ = graded
    canvas = tmp_path / "canvas.csv"
    done = _export(out, canvas, "--csv-format", "canvas", "--assignment", "Attention (1234)")
    assert done.returncode == 0, done.stderr
    rows = _read(canvas)
    # Canvas: the five identifying columns, then the assignment as Canvas names it, "Name (id)"
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Attention (1234)"]
    by = {r[3]: r[5] for r in rows[1:]}
    assert by["ada"] == "100" and 0 < float(by["bob"]) < 100 and by["eve"] == ""
    assert "has no Canvas assignment id" not in done.stdout
    bare = _export(out, canvas, "--csv-format", "canvas")
    assert _read(canvas)[0][5] == "attention"  # the lesson's name, recorded by the batch
    assert "the column 'attention' has no Canvas assignment id" in bare.stdout


def test_moodle_has_no_row_for_a_student_without_a_grade(graded, tmp_path):
    out, _ = graded
    moodle = tmp_path / "moodle.csv"
    done = _export(out, moodle, "--csv-format", "moodle")
    assert done.returncode == 0, done.stderr
    rows = _read(moodle)
    assert rows[0] == ["Username", "attention"]
    students = [r[0] for r in rows[1:]]
    assert "eve" not in students and {"ada", "bob", "carl"} <= set(students)
    assert all(r[1] != "" for r in rows[1:])  # no blank cell: Moodle would clear the grade
    assert "'eve': no grade (missing" in done.stdout and "no row in the Moodle file" in done.stdout
    # a value the instructor chose is written
    done = _export(out, moodle, "--csv-format", "moodle", "--unsubmitted", "zero")
    assert ["eve", "0"] in _read(moodle)


def test_moodle_roster_is_matched_by_a_column_moodle_exports(graded, tmp_path):
    """Moodle's export has First name, Last name, ID number, Institution, Department, Email
    address: no Username. The default key is the email address."""
    out, _ = graded
    roster = tmp_path / "moodle_export.csv"
    header = ["First name", "Last name", "ID number", "Institution", "Department", "Email address"]
    with roster.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(
            [
                header,
                ["Ada", "L", "1", "", "", "ada"],
                ["Eve", "E", "5", "", "", "eve"],
                ["Bob", "B", "2", "", "", "bob"],
            ]
        )
    moodle = tmp_path / "moodle.csv"
    done = _export(
        out, moodle, "--csv-format", "moodle", "--roster", str(roster), "--assignment", "Attention"
    )
    assert done.returncode == 0, done.stderr
    rows = _read(moodle)
    assert rows[0] == [*header, "Attention"]
    assert [r[5] for r in rows[1:]] == ["ada", "bob"]  # eve: no row
    assert rows[1][-1] == "100"
    refused = _export(
        out, moodle, "--csv-format", "moodle", "--roster", str(roster), "--roster-key", "Username"
    )
    assert refused.returncode == 2 and "has no column 'Username'" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_blackboard_header_carries_the_column_id_and_every_value_is_quoted(graded, tmp_path):
    out, _ = graded
    bb = tmp_path / "bb.csv"
    column = "Attention [Total Pts: 100 Score] |123456"
    done = _export(out, bb, "--csv-format", "blackboard", "--assignment", column)
    assert done.returncode == 0, done.stderr
    lines = bb.read_text(encoding="utf-8").splitlines()
    assert lines[0] == f'"Username","{column}"'
    assert '"ada","100"' in lines and '"eve",""' in lines
    assert "no Grade Center column id" not in done.stdout
    assert "no Grade Center column id" in _export(out, bb, "--csv-format", "blackboard").stdout


def test_a_hostile_folder_name_is_inert_in_every_layout(graded, tmp_path):
    out, _ = graded
    for layout in lms.Layout:
        written = tmp_path / f"{layout}.csv"
        assert _export(out, written, "--csv-format", layout.value).returncode == 0
        text = written.read_text(encoding="utf-8")
        assert "\u202e" not in text and "\\u202e" in text, layout  # the override written out
        cells = [c for row in _read(written) for c in row if "onerror" in c]
        assert cells and all(c.startswith("'=2+3") for c in cells), (layout, cells)


def test_the_class_report_names_who_has_no_grade_and_why():
    per = (ExerciseResult("f", 0, 2),)
    rows = [
        Row("una", Standing.UNFINISHED, "h", "s", 0, 2, per, "", "unfinished, the machine was too busy"),
        Row("eve", Standing.MISSING, "h", "s", 0, 2, per, "", "nothing handed in"),
        Row("ada", Standing.GRADED, "h", "s", 2, 2, (ExerciseResult("f", 2, 2),), "", ""),
    ]
    summary = summarise(rows, lesson="L", exercises=("f",))
    assert summary.scores == (2,) and summary.unread == 1  # ada's report is not in this gradebook
    assert [(n.student, n.standing) for n in summary.no_grade] == [
        ("una", Standing.UNFINISHED),
        ("eve", Standing.MISSING),
    ]
    page = to_class_html(summary)
    assert "<td>una</td><td>unfinished</td><td>unfinished, the machine was too busy</td>" in page
    assert "<td>eve</td><td>missing</td><td>nothing handed in</td>" in page


# -- grading nothing


def test_export_and_report_grade_nothing(graded, tmp_path, monkeypatch, capsys):
    """With the submissions gone and no course anywhere, in this process: no process is started,
    no check is run, and the gradebook is left byte for byte as it was."""
    source = _copy(graded, tmp_path)
    db = source.with_suffix(".sqlite")
    before = _sha(db)
    monkeypatch.chdir(tmp_path)  # no course here
    started: list = []

    def refuse(*args, **kwargs):
        started.append(args)
        raise AssertionError("export started a process")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr("grader.engine.run.run_checks", refuse)
    for layout in lms.Layout:
        assert (
            cli.main(
                [
                    "export",
                    "--from",
                    str(source),
                    "--out",
                    str(tmp_path / f"{layout}.csv"),
                    "--csv-format",
                    layout.value,
                ]
            )
            == 0
        )
    assert cli.main(["report", "--from", str(source)]) == 0
    assert started == [] and _sha(db) == before
    assert sorted(p.name for p in db.parent.iterdir()) == [
        "gradebook.csv",
        "gradebook.sqlite",
        "gradebook_class_report.html",
    ]
    assert "ada" in (tmp_path / "canvas.csv").read_text()


def test_two_gradebooks_in_one_folder_keep_a_class_report_each(tmp_path, capsys):
    """As each has its own database and reports folder: the second lesson's page must not
    replace the first's."""
    for lesson in ("first_lesson", "second_lesson"):
        book = Gradebook(tmp_path / f"{lesson}.sqlite")
        book.describe(lesson, ("f",))
        book.record(Row("ada", Standing.GRADED, "h", "s", 2, 2, (ExerciseResult("f", 2, 2),), "", ""))
        book.close()
        assert cli.main(["report", "--from", str(tmp_path / f"{lesson}.csv")]) == 0
    for lesson in ("first_lesson", "second_lesson"):
        page = (tmp_path / f"{lesson}_class_report.html").read_text(encoding="utf-8")
        assert f"Class report: {lesson}" in page


def test_an_old_gradebook_without_reports_still_exports(graded, tmp_path):
    """A gradebook written before the batch recorded its lesson, with rows holding no report."""
    source = _copy(graded, tmp_path)
    with sqlite3.connect(source.with_suffix(".sqlite")) as db:
        db.execute("DROP TABLE about")
        db.execute("UPDATE grades SET report = ''")
    plain = tmp_path / "plain.csv"
    done = _export(source, plain)
    assert done.returncode == 0, done.stderr
    assert _read(plain)[0] == ["student", "score", "max_score", *ATTENTION.exercises, "status"]
    page = tmp_path / "r.html"
    done = python("report", "--from", str(source), "--out", str(page))
    assert done.returncode == 0, done.stderr
    assert "have no readable report" in page.read_text()


# -- bad input: one paragraph, exit 2


@pytest.mark.parametrize(
    "change",
    [
        'UPDATE grades SET exercises = \'{"f": {"score": "x", "max_score": 2}}\'',
        "UPDATE grades SET score = 'two'",
    ],
)
def test_a_gradebook_with_a_score_that_is_no_number_is_refused_in_words(tmp_path, capsys, change):
    book = Gradebook(tmp_path / "g.sqlite")
    book.record(Row("ada", Standing.GRADED, "h", "s", 2, 2, (ExerciseResult("f", 2, 2),), "", ""))
    book.close()
    with sqlite3.connect(tmp_path / "g.sqlite") as db:
        db.execute(change)
    for argv in (["report"], ["export", "--out", str(tmp_path / "out.csv")]):
        assert cli.main([*argv, "--from", str(tmp_path / "g.csv")]) == 2
        err = capsys.readouterr().err
        assert "is not a gradebook this grader can read" in err and "not a number" in err, err


def test_bad_input_is_refused_in_words(graded, tmp_path):
    source = _copy(graded, tmp_path)
    junk = tmp_path / "junk.csv"
    junk.write_text("student,score\nada,1\n")
    corrupt = tmp_path / "corrupt.csv"
    corrupt.with_suffix(".sqlite").write_bytes(b"not a database at all" * 100)
    empty = tmp_path / "empty.csv"
    sqlite3.connect(empty.with_suffix(".sqlite")).execute("CREATE TABLE t (x)").connection.close()
    roster = tmp_path / "r.csv"
    roster.write_text("Name,Email\nAda,ada\n")
    cases = [
        (
            ["export", "--from", str(tmp_path / "nope.csv"), "--out", str(tmp_path / "o.csv")],
            "no gradebook database",
        ),
        (["export", "--from", str(junk), "--out", str(tmp_path / "o.csv")], "names no gradebook"),
        (
            ["export", "--from", str(corrupt), "--out", str(tmp_path / "o.csv")],
            "not a gradebook this grader can read",
        ),
        (["report", "--from", str(empty)], "not a gradebook this grader can read"),
        (
            ["export", "--from", str(source), "--out", str(tmp_path / "o.csv"), "--csv-format", "sakai"],
            "invalid choice: 'sakai'",
        ),
        (
            [
                "export",
                "--from",
                str(source),
                "--out",
                str(tmp_path / "o.csv"),
                "--csv-format",
                "canvas",
                "--roster",
                str(roster),
            ],
            "has no column 'SIS Login ID'",
        ),
        (
            ["export", "--from", str(source), "--out", str(source.with_suffix(".sqlite"))],
            "the gradebook's own database",
        ),
    ]
    before = _sha(source.with_suffix(".sqlite"))
    for args, fragment in cases:
        done = python(*args)
        assert done.returncode == 2, (args, done.stderr)
        assert fragment in done.stderr, (fragment, done.stderr)
        assert "Traceback" not in done.stderr
        lines = done.stderr.strip().splitlines()
        # one line saying what is wrong (after the usage, when argparse refuses an option)
        assert fragment in lines[-1] and (len(lines) == 1 or lines[0].startswith("usage:")), done.stderr
    assert _sha(source.with_suffix(".sqlite")) == before
    assert not (tmp_path / "nope.sqlite").exists()  # nothing created where nothing was


# -- the class report


def test_the_batch_writes_the_class_report_and_it_renders_with_its_plots(graded, tmp_path):
    out, _ = graded
    page = out.with_name(out.stem + "_class_report.html")
    text = page.read_text(encoding="utf-8")
    assert "default-src 'none'" in text and "<script" not in text.lower()
    dom = _render(page, tmp_path)
    assert len(re.findall(r'<svg class="plot histogram"', dom)) == 1
    assert len(re.findall(r'<svg class="plot check"', dom)) == 1
    assert len(re.findall(r'<rect class="bar"', dom)) == 10
    # the checks the class failed most are named: carl's wrong scale fails mha_forward's checks
    most = re.search(r'<ol class="most-failed">(.*?)</ol>', dom, re.S).group(1)
    assert "mha_forward" in most
    assert "wrong-scale" in dom and "carl" in dom  # the likely mistake, and who made it
    assert "eve" in re.search(r'<table class="no-grade">(.*?)</table>', dom, re.S).group(1)
    # the hostile student's name is text, never a tag
    assert "<img" not in dom.lower() and "&lt;img src=x onerror=alert(1)&gt;" in dom
    # and the plots are drawn: their colours are on the screen
    pixels = _screenshot(page, tmp_path)
    assert pixels.get((0x2B, 0x6C, 0xB0), 0) > 500  # the histogram's bars
    assert pixels.get((0xC0, 0x39, 0x2B), 0) > 500  # the failure rates' bars


def _screenshot(page: Path, tmp_path: Path) -> dict[tuple[int, int, int], int]:
    """How many pixels of each colour headless Chromium paints for ``page``."""
    shot = tmp_path / "shot.png"
    done = subprocess.run(
        [
            _browser(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'profile-shot'}",
            "--window-size=1100,2400",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    return _colours(shot.read_bytes())


def _colours(png: bytes) -> dict[tuple[int, int, int], int]:
    """The colour counts of an 8-bit RGB or RGBA PNG (what Chromium writes)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, data, width, height, kind = 8, b"", 0, 0, 0
    while pos < len(png):
        (size,) = struct.unpack(">I", png[pos : pos + 4])
        tag, body = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + size]
        pos += 12 + size
        if tag == b"IHDR":
            width, height, depth, kind = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and kind in (2, 6) and body[12] == 0
        elif tag == b"IDAT":
            data += body
    raw, step = zlib.decompress(data), 3 if kind == 2 else 4
    stride, counts, previous = width * step, {}, bytearray(width * step)
    for y in range(height):
        kind_, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - step] if i >= step else 0
            b, c = previous[i], previous[i - step] if i >= step else 0
            if kind_ == 1:
                line[i] = (line[i] + a) & 255
            elif kind_ == 2:
                line[i] = (line[i] + b) & 255
            elif kind_ == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind_ == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        for x in range(0, stride, step):
            key = (line[x], line[x + 1], line[x + 2])
            counts[key] = counts.get(key, 0) + 1
        previous = line
    return counts


# -- hostile names and cells stay inert, in every layout and in the class report

#: Text as hostile as it comes: formulas, HTML, control and bidirectional characters.
_hostile = st.text(
    alphabet=st.sampled_from(list("=+-@\t\r\n\"',;<>/&|() aZ09\x1b\x07\x9b\u202e\u2066\u200b\ufeff"))
    | st.characters(),
    max_size=24,
)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]")
_TAGS = {
    "html",
    "head",
    "meta",
    "title",
    "style",
    "body",
    "h1",
    "h2",
    "p",
    "svg",
    "rect",
    "text",
    "ol",
    "li",
    "code",
    "span",
    "table",
    "tr",
    "th",
    "td",
}


def _reported(student: str, text: str, standing: Standing) -> Row:
    per = (ExerciseResult("f", 1 if standing is Standing.GRADED else 0, 2),)
    report = {
        "tests": [{"name": text, "exercise": "f", "status": "failed", "visibility": "visible"}],
        "exercises": {"f": {"diagnoses": [{"code": text, "hint": text}]}},
    }
    graded = standing is Standing.GRADED
    return Row(
        student, standing, "h", "s", 1 if graded else 0, 2, per, json.dumps(report) if graded else "", text
    )


class _Tags(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attributes = set(), set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attributes |= {name for name, _ in attrs}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    names=st.lists(_hostile, min_size=1, max_size=4, unique_by=student_name),
    cells=st.lists(_hostile, min_size=1, max_size=3),
    standing=st.sampled_from(list(Standing)),
)
def test_hostile_names_and_cells_stay_inert_everywhere(names, cells, standing):
    students = [student_name(n) for n in names]  # as batch names a folder
    rows = [_reported(s, cells[0], standing if i == 0 else Standing.GRADED) for i, s in enumerate(students)]
    header = ("Username", "SIS Login ID", "student", "Email address", *(f"c{i}" for i in range(len(cells))))
    lines = tuple((s, s, s, s, *cells) for s in students)
    for layout in Layout:
        for roster in (None, Roster(header, lines, lms.ROSTER_KEY[layout], tuple(students))):
            export = Export(layout, assignment=cells[-1], unsubmitted=Unsubmitted.ZERO, roster=roster)
            written = table(rows, ("f",), export, lesson="l")
            for cell in (*written.header, *(c for line in written.rows for c in line)):
                if not isinstance(cell, str):
                    continue
                assert not _CONTROL.search(cell) and "\n" not in cell and "\t" not in cell, (layout, cell)
                for part in re.split("[,;]", cell):  # what a spreadsheet may take for one cell
                    bare = part.lstrip(' "')
                    number = re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", bare.strip(' "'))
                    assert not bare.startswith(("=", "+", "-", "@")) or number, (layout, cell)
    page = to_class_html(summarise(rows, lesson=cells[0], exercises=("f",)))
    parser = _Tags()
    parser.feed(page)
    assert parser.tags <= _TAGS, parser.tags
    assert not any(a.startswith("on") for a in parser.attributes) and "src" not in parser.attributes
    assert not _CONTROL.search(page)
