"""Property-based tests of the grader's own intake and reports: the systematic version of the
cases in ``test_safe_intake.py``.

Hypothesis draws folder names (as bytes), file contents, notebooks, exception messages and
roster cells; the tests hold the promises a class relies on: the batch finishes, every student
has exactly one row, a classmate's grade is the grade the file gets alone, no report carries a
control character, no cell a spreadsheet may split off (on ``,`` ``;`` or a tab) is a formula,
nothing prints a traceback. Most properties run on the pure functions, with many examples; the
one through a whole batch uses few. The profile is fixed (derandomized, no example database) so
that a run in CI is the run on a laptop.
"""

from __future__ import annotations

import csv
import errno
import hashlib
import io
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import unicodedata
import xml.etree.ElementTree as ET
from pathlib import Path
from unittest import mock

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from grader.commands.batch import discover
from grader.core import intake as intake_module
from grader.core.inert import csv_cell, file_stem, student_name, student_strings, student_text
from grader.core.intake import MACHINE_ERRNOS, IntakeError, Refusal, open_submission
from grader.core.results import ExerciseResult, Report, Standing, Status, TestResult, Visibility
from grader.formats.gradebook import Gradebook, Row
from grader.formats.html import to_html
from grader.formats.json_report import from_dict, to_dict
from grader.formats.junit import class_junit
from grader.formats.lms import Export, Layout, read_roster, table
from grader.formats.text import to_text

from .support import ROOT, TOY_COURSE, python

#: Many examples where a property costs microseconds; always the same ones, nothing stored.
PURE = settings(max_examples=300, derandomize=True, database=None, deadline=None)
#: Few examples where one costs a batch of a class.
WHOLE = settings(
    max_examples=5,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

#: A character no report may carry raw: C0 and C1 controls but tab and newline, DEL, the
#: characters that reorder or hide text, and lone surrogates.
UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f"
    "\ufeff\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f]"
)
#: What makes a spreadsheet evaluate a cell.
FORMULA = ("=", "+", "-", "@")
NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")

#: Characters that broke something once, or could: each drawn often.
NASTY = [
    "\ud800",
    "\udcff",
    "\x00",
    "\x1b",
    "\x07",
    "\r",
    "\n",
    "\t",
    "\x85",
    "\x9b",
    "\u202e",
    "\u2066",
    "\u200b",
    "\u2028",
    "\ufeff",
    "\\",
    '"',
    "'",
    ",",
    ";",
    "=",
    "+",
    "-",
    "@",
    " ",
    "\u212a",
    "\uff4b",
    "e\u0301",
    "\u00e9",
    "\U000e0041",
]
hostile_text = st.lists(
    st.one_of(st.sampled_from(NASTY), st.characters(exclude_categories=()), st.sampled_from("kimKIM=1+")),
    max_size=30,
).map("".join)

#: A folder name as a file system holds it: 1 to 255 bytes, no slash, no NUL, not hidden.
_name_bytes = st.one_of(
    st.binary(min_size=1, max_size=24),
    st.binary(min_size=240, max_size=255),
    hostile_text.map(lambda t: t.encode("utf-8", "surrogatepass") if t else b"x"),
    st.sampled_from([b"\xff", b"\x1b[2J", b"a;=1+1", b"t\t@SUM(1)", "\u212aim".encode(), b"\\udcff"]),
)
folder_names = (
    _name_bytes.map(lambda b: b.replace(b"/", b"_").replace(b"\0", b"_")[:255])
    .map(lambda b: b"_" + b[1:] if b.startswith(b".") else b)
    .filter(lambda b: b not in (b"", b"_", b".."))
)


def assert_safe(text: str, where: str = "") -> None:
    """``text`` holds no character a terminal, a database or a UTF-8 file would act or fail on."""
    found = UNSAFE.search(text)
    assert found is None, f"{where}: raw {found.group()!r} in {text[:200]!r}"
    text.encode("utf-8")


def assert_no_formula(cells: list[str], where: str = "") -> None:
    """No cell a spreadsheet may split off (on , ; or a tab) is a formula."""
    for cell in cells:
        assert "\t" not in cell and "\n" not in cell and "\r" not in cell, (where, cell)
        for part in re.split("[,;]", cell):
            bare = part.strip(' "')
            assert not (bare.startswith(FORMULA) and not NUMBER.fullmatch(bare)), (where, cell)


def assert_line_has_no_formula(line: str, where: str = "") -> None:
    """A line of a CSV file, split as a careless spreadsheet would: on , ; and tabs, quotes or not."""
    for part in re.split("[,;\t]", line):
        bare = part.strip(' "')
        assert not (bare.startswith(FORMULA) and not NUMBER.fullmatch(bare)), (where, line)


# -- the functions text enters through


@PURE
@given(hostile_text)
def test_student_text_is_safe_everywhere_and_changes_nothing_twice(text):
    safe = student_text(text)
    assert_safe(safe.replace("\n", "").replace("\t", ""))
    assert student_text(safe) == safe
    with sqlite3.connect(":memory:") as db:  # SQLite takes it (a lone surrogate made it fail)
        assert db.execute("SELECT ?", (safe,)).fetchone()[0] == safe
    assert json.loads(json.dumps(safe, ensure_ascii=False)) == safe


@PURE
@given(st.lists(st.one_of(hostile_text, folder_names.map(os.fsdecode)), min_size=2, max_size=2, unique=True))
def test_two_names_never_become_one(names):
    a, b = (student_name(n) for n in names)
    assert a != b, names
    for name in (a, b):
        assert_safe(name)
        assert "\n" not in name and "\t" not in name
    if not re.search("[\ud800-\udc7f\udd00-\udfff]", names[0]):  # a name a file system can hold
        assert student_name(os.fsencode(names[0])) == a  # given as its bytes: the same id


@PURE
@given(
    st.lists(
        st.one_of(hostile_text, folder_names.map(os.fsdecode)).map(student_name),
        min_size=2,
        max_size=2,
        unique=True,
    )
)
def test_report_file_names_are_short_plain_unique_and_stable(names):
    stems = [file_stem(n) for n in names]
    assert stems[0] != stems[1]
    for name, stem in zip(names, stems, strict=True):
        assert re.fullmatch(r"[A-Za-z0-9._@+-]+", stem) and stem not in (".", "..")
        assert len(stem.encode()) + len(".html") <= 80  # far below NAME_MAX, 255 bytes
        assert file_stem(name) == stem


@PURE
@given(st.one_of(hostile_text, st.floats(allow_nan=False), st.integers()))
def test_a_csv_cell_is_never_a_formula(value):
    cell = csv_cell(value)
    if not isinstance(value, str):
        assert cell == value
        return
    assert_safe(cell)
    assert_no_formula([cell])
    buffer = io.StringIO()
    csv.writer(buffer).writerow([cell, "x"])
    assert_line_has_no_formula(buffer.getvalue().rstrip("\r\n"))


@PURE
@given(
    st.dictionaries(hostile_text, st.one_of(hostile_text, st.tuples(hostile_text, st.integers())), max_size=4)
)
def test_a_workers_message_comes_in_safe(message):
    def texts(value):
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            for k, v in value.items():
                yield from texts(k)
                yield from texts(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                yield from texts(v)

    safe = student_strings(message)
    for text in texts(safe):
        assert_safe(text.replace("\n", "").replace("\t", ""))


# -- the intake: a file, a folder, a notebook


def _notebook(cells: list[tuple[str, str]]) -> bytes:
    return json.dumps(
        {
            "nbformat": 4,
            "nbformat_minor": 5,
            "metadata": {},
            "cells": [
                {"cell_type": kind, "metadata": {}, "source": source, "outputs": [], "execution_count": None}
                for kind, source in cells
            ],
        }
    ).encode()


notebooks = st.one_of(
    st.lists(
        st.tuples(st.sampled_from(["code", "markdown", "raw"]), hostile_text), min_size=1, max_size=4
    ).map(_notebook),
    st.binary(max_size=200),
    st.recursive(
        st.none() | st.booleans() | st.integers() | hostile_text,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(hostile_text, inner, max_size=3),
        max_leaves=10,
    ).map(lambda doc: json.dumps({"nbformat": 4, "cells": doc}).encode()),
)


@settings(PURE, max_examples=150)
@given(
    folder_names,
    st.one_of(
        st.tuples(st.just("toy.py"), st.binary(max_size=300)),
        st.tuples(folder_names.map(lambda b: b + b".ipynb" if len(b) < 249 else b"n.ipynb"), notebooks),
    ),
)
def test_the_intake_takes_in_or_refuses_in_words(name, file):
    filename, content = file
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(os.fsencode(tmp), name)
        os.mkdir(folder)
        with open(os.path.join(folder, os.fsencode(filename)), "wb") as f:
            f.write(content)
        try:
            intake = open_submission(Path(os.fsdecode(folder)), "toy.py")
        except IntakeError as err:
            assert_safe(err.message.replace("\n", ""), "its message")
        else:
            assert_safe(intake.shown, "its name")
            if filename == "toy.py":
                assert intake.source == content  # the very bytes handed in are graded
            else:
                intake.source.decode("utf-8")  # a notebook's code: text a file can hold


@settings(PURE, max_examples=60)
@given(st.lists(folder_names, min_size=1, max_size=6, unique=True))
def test_every_folder_of_a_class_is_one_student(names):
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            os.mkdir(os.path.join(os.fsencode(tmp), name))
        entries, remarks = discover(Path(tmp), "toy.py")
    students = [e.student for e in entries]
    assert len(students) == len(names) == len(set(students))
    for text in [*students, *(e.problem for e in entries), *remarks]:
        assert_safe(text)


# -- the reports


def _report(texts: list[str]) -> Report:
    """A report whose every text came from a student, made safe where it entered."""
    t = [student_text(x) for x in texts]
    failed = TestResult("a_check", "center_tokens", 3, 0, Status.FAILED, Visibility.VISIBLE, t[0], t[1], t[2])
    passed = TestResult("b_check", "layer_norm", 2, 2, Status.PASSED, Visibility.VISIBLE, t[3])
    return Report(submission=student_name(texts[4]), tests=(failed, passed), problem=t[5])


@PURE
@given(st.lists(hostile_text, min_size=6, max_size=6), hostile_text)
def test_no_report_carries_a_control_character(texts, student):
    report = _report(texts)
    student = student_name(student)
    assert from_dict(json.loads(json.dumps(to_dict(report)))) == report
    for text, where in [
        (to_text(report), "text"),
        (to_html(report), "html"),
        (json.dumps(to_dict(report), ensure_ascii=False), "json"),
        (
            class_junit(
                [(student, report, "graded", ""), (student + "x", None, "failed", texts[0])], lesson="L"
            ),
            "xml",
        ),
    ]:
        assert_safe(text.replace("\n", "").replace("\t", ""), where)
    ET.fromstring(class_junit([(student, report, "graded", "")], lesson="L").encode())  # well-formed XML


# -- the gradebook and its CSV, with and without a roster


@settings(PURE, max_examples=100)
@given(
    st.lists(hostile_text.map(student_name), min_size=1, max_size=5, unique=True),
    st.lists(st.lists(hostile_text, min_size=2, max_size=2), max_size=5),
    st.sampled_from(list(Layout)),
)
def test_the_csv_holds_one_inert_row_per_student(students, roster_lines, layout):
    with tempfile.TemporaryDirectory() as tmp:
        book = Gradebook(Path(tmp) / "g.sqlite")
        for i, student in enumerate(students):
            standing = Standing.GRADED if i % 2 == 0 else Standing.FAILED
            exercises = (ExerciseResult("x", i, 100),)
            book.record(
                Row(
                    student,
                    standing,
                    "f",
                    "s",
                    i,
                    100,
                    exercises,
                    "",
                    student_text(roster_lines[0][0] if roster_lines else ""),
                )
            )
        assert [r.student for r in book.rows()] == sorted(students)
        export = Export(layout)
        if roster_lines:
            roster = Path(tmp) / "r.csv"
            with roster.open("w", newline="", encoding="utf-8") as f:  # UTF-8 holds no lone surrogate
                cells = [[re.sub("[\ud800-\udfff]", "", c) for c in line] for line in roster_lines]
                csv.writer(f).writerows([["Username", "Name"], *cells])
            try:
                export = Export(layout, roster=read_roster(roster, "Username"))
            except Exception as err:  # noqa: BLE001 - only a refusal in words is allowed
                assert type(err).__name__ == "UsageError", err
                return
        out = Path(tmp) / "g.csv"
        written = book.export_csv(out, ("x",), export, lesson="L")
        book.close()
        text = out.read_text(encoding="utf-8")
    assert_safe(text.replace("\n", "").replace("\r", ""))
    for line in text.splitlines():
        assert_line_has_no_formula(line)
    for note in written.notes:
        assert_safe(note)
    if export.roster is None:
        assert len(written.rows) == len(students)  # every student, once


ids = st.lists(
    st.sampled_from(["k", "K", "\u212a", "\uff4b", "i", "I", "m", "e\u0301", "\u00e9", " "]),
    min_size=1,
    max_size=4,
).map("".join)


def _same_id(a: str, b: str) -> bool:
    """The rule, written again here: the same text, or the same after NFC and A-Z lowercased, when
    neither holds a character NFC replaces by another single one (a sign that looks like a letter)."""

    def lower(text: str) -> str:
        return "".join(c.lower() if "A" <= c <= "Z" else c for c in unicodedata.normalize("NFC", text))

    def singleton(c: str) -> bool:
        return len(unicodedata.normalize("NFD", c)) == 1 and unicodedata.normalize("NFD", c) != c

    return a == b or (not any(singleton(c) for c in a + b) and lower(a) == lower(b))


@settings(PURE, max_examples=400)
@given(st.lists(ids, min_size=1, max_size=5, unique=True), st.lists(ids, min_size=1, max_size=5))
def test_a_grade_lands_only_in_its_own_students_row(students, roster_ids):
    """Each student's score is unique: the cell a roster line gets tells whose grade it is."""
    rows = [Row(s, Standing.GRADED, "f", "s", i + 1, 100, ()) for i, s in enumerate(students)]
    with tempfile.TemporaryDirectory() as tmp:
        roster = Path(tmp) / "r.csv"
        with roster.open("w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows([["Username"], *([r] for r in roster_ids)])
        # Blackboard: a row per roster line, graded or not (Moodle has no row for no grade)
        export = Export(Layout.BLACKBOARD, roster=read_roster(roster, "Username"))
    written = table(rows, (), export, lesson="L")
    owner = {str(i + 1): s for i, s in enumerate(students)}
    given_to = [owner.get(line[-1]) for line in written.rows]
    placed = [s for s in given_to if s is not None]
    assert len(placed) == len(set(placed)), "a student's grade in two rows"
    for roster_id, student in zip(export.roster.ids, given_to, strict=True):
        if student is None:
            continue
        assert _same_id(roster_id, student), (roster_id, student)
    for i, roster_id in enumerate(export.roster.ids):  # the same text, once on each side: matched
        if roster_id in students and list(export.roster.ids).count(roster_id) == 1:
            assert given_to[i] == roster_id
    for student in set(students) - set(placed):
        assert any(student in note for note in written.notes), student


# -- a whole class, end to end

TOY = TOY_COURSE / "solutions" / "toy.py"
STUB = TOY_COURSE / "exercises" / "toy.py"
OFF = TOY_COURSE / "examples" / "gallery" / "toy" / "off-by-mean" / "toy.py"


def _single_line(text: str) -> str:
    """``text`` with everything a tokenizer or Jupyter may take for a line break taken out."""
    return re.sub("[\x00\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]", "", text)


#: A short text made mostly of the characters that broke something once.
nasty_text = st.one_of(st.lists(st.sampled_from(NASTY), min_size=1, max_size=6).map("".join), hostile_text)


def _raising(message: str) -> tuple:
    return ("py", f"raise ValueError({message!r})\n")


def _in_a_notebook(comment: str) -> tuple:
    return ("ipynb", TOY.read_text() + "\n# " + _single_line(comment) + "\n")


submissions = st.one_of(
    st.sampled_from(
        [("py", TOY.read_text()), ("py", STUB.read_text()), ("py", OFF.read_text()), ("none", "")]
    ),
    nasty_text.map(_raising),
    nasty_text.map(lambda m: ("py", f"print({m!r})\n" + TOY.read_text())),
    nasty_text.map(_in_a_notebook),
    st.binary(max_size=60).map(lambda b: ("raw", b)),
)
_SOLO: dict[str, tuple] = {}


def _write(folder: Path, submission: tuple) -> None:
    kind, content = submission
    if kind == "py":
        (folder / "toy.py").write_text(content, encoding="utf-8")
    elif kind == "ipynb":
        (folder / "work.ipynb").write_bytes(_notebook([("code", content)]))
    elif kind == "raw":
        (folder / "toy.py").write_bytes(content)


def _solo(submission: tuple) -> tuple:
    """(status, score, score per exercise) the submission gets graded alone, by ``grade``: once per
    content. The status is the intake's refusal when it refuses the file, else graded."""
    kind, content = submission
    key = hashlib.sha256(repr(submission).encode("utf-8", "surrogatepass")).hexdigest()
    if key not in _SOLO:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "alone"
            folder.mkdir()
            _write(folder, submission)
            try:
                open_submission(folder, "toy.py")
                status = "graded"
            except IntakeError as err:
                status = err.kind.value
            done = python(
                "grade", "--course", str(TOY_COURSE), "--lesson", "toy", str(folder), "--format", "json"
            )
            assert "Traceback" not in done.stderr
            if status == "missing":
                _SOLO[key] = (status, 0.0, {})
            else:
                assert done.returncode == 0, done.stderr[-2000:]
                report = json.loads(done.stdout)
                per = {}
                for test in report["tests"]:
                    per[test["exercise"]] = per.get(test["exercise"], 0) + test["score"]
                _SOLO[key] = (status, float(report["score"]), per)
    return _SOLO[key]


@WHOLE
@given(st.lists(st.tuples(folder_names, submissions), min_size=2, max_size=4, unique_by=lambda x: x[0]))
@example(  # the cases found by hand, always among the examples
    [
        (b"\xff", _raising("\ud800")),
        (b"s" * 252, ("py", TOY.read_text())),
        (b"\x1b]0;pwned\x07\x1b[2J", ("none", "")),
        (b"ada;=1+1", _in_a_notebook("\ud800")),
        (b"bob\t@SUM(1)", ("py", OFF.read_text())),
    ]
)
def test_a_class_of_hostile_submissions_is_graded_as_each_alone(klass):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "class"
        root.mkdir()
        for name, submission in klass:
            folder = Path(os.fsdecode(os.path.join(os.fsencode(root), name)))
            folder.mkdir()
            _write(folder, submission)
        out = Path(tmp) / "out" / "g.csv"
        command = ["batch", "--course", str(TOY_COURSE), "--lesson", "toy", str(root), "--out", str(out)]
        done = subprocess.run(
            [sys.executable, "-m", "grader", *command, "--jobs", "2"],
            cwd=ROOT,
            capture_output=True,
            timeout=600,
        )
        stdout, stderr = (done.stdout.decode("utf-8"), done.stderr.decode("utf-8"))  # both UTF-8
        assert done.returncode == 0, stderr[-3000:]
        assert "Traceback" not in stdout + stderr
        assert_safe(stdout.replace("\n", "") + stderr.replace("\n", ""), "the terminal")
        with out.open(newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        assert len(rows) == len(klass)  # every student has exactly one row
        text = out.read_text(encoding="utf-8")
        for line in text.splitlines():
            assert_line_has_no_formula(line, "the CSV")
        reports = out.with_name("g_reports")
        for report in reports.iterdir():
            assert len(os.fsencode(report.name)) < 100
            assert_safe(report.read_text(encoding="utf-8").replace("\n", "").replace("\t", ""), report.name)
        book = sqlite3.connect(out.with_suffix(".sqlite"))
        stored = dict(book.execute("SELECT student, score FROM grades"))
        status = dict(book.execute("SELECT student, status FROM grades"))
        exercises = {s: json.loads(e) for s, e in book.execute("SELECT student, exercises FROM grades")}
        book.close()
        assert sorted(stored) == sorted(student_name(name) for name, _ in klass)
        for name, submission in klass:
            student = student_name(name)
            assert (reports / f"{file_stem(student)}.txt").exists()
            solo, score, per = _solo(submission)
            assert (status[student], stored[student]) == (solo, score), (student, submission)  # as alone
            if status[student] == "graded":
                assert {e: v["score"] for e, v in exercises[student].items()} == per


class _FailingOs:
    """The ``os`` module as the intake sees it, but for its ``call``-th call of ``name``, which
    fails with ``number`` (an error of the system, as the kernel would give it)."""

    def __init__(self, name: str, call: int, number: int):
        self.name, self.call, self.number, self.made = name, call, number, 0
        self.failed = False

    def __getattr__(self, attribute):
        real = getattr(os, attribute)
        if attribute != self.name:
            return real

        def failing(*args, **kwargs):
            self.made += 1
            if self.made == self.call:
                self.failed = True
                raise OSError(self.number, os.strerror(self.number))
            return real(*args, **kwargs)

        return failing


@settings(PURE, max_examples=200)
@given(
    st.sampled_from(["stat", "scandir", "open", "fstat", "read"]),
    st.integers(1, 2),
    st.sampled_from(sorted(errno.errorcode)),
    st.booleans(),
)
def test_a_file_the_machine_could_not_read_just_now_is_never_graded(name, call, number, in_a_folder):
    """The intake said "could not be read (Too many open files)" and refused the file as
    unreadable: a batch gave the student 0 for a moment of the machine's, and the grading service
    answered 400 to an upload it could not open while flooded. An error of the system is the
    machine's (unfinished: no grade, graded again) exactly when it is one of MACHINE_ERRNOS;
    whatever the error and wherever it strikes, the intake takes the file in or refuses it in words."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "toy.py").write_bytes(b"x = 1\n")
        failing = _FailingOs(name, call, number)
        with mock.patch.object(intake_module, "os", failing):
            try:
                taken = open_submission(Path(tmp) if in_a_folder else Path(tmp) / "toy.py", "toy.py")
            except IntakeError as err:
                assert failing.failed
                assert_safe(err.message.replace("\n", ""), "its message")
                assert (err.kind is Refusal.UNFINISHED) == (number in MACHINE_ERRNOS), (err.kind, err.message)
            else:
                assert not failing.failed or name == "scandir", (name, number)  # _other_case's look
                assert taken.source == b"x = 1\n"


def test_a_submission_the_machine_could_not_read_is_unfinished_wherever_it_is_graded(tmp_path):
    """Its report has no verdict (grade exits 75), its gradebook row no number, and a batch's
    listing keeps it out of the final grades."""
    from grader.commands.batch import gradebook_row
    from grader.core.intake import unreadable
    from grader.core.settings import Isolation, Settings
    from grader.engine.run import run_checks

    from .support import TOY

    err = unreadable("toy.py", OSError(errno.EMFILE, os.strerror(errno.EMFILE)))
    report = run_checks(
        err, lesson=TOY, settings=Settings(isolation=Isolation.NONE, store=None), shown="toy.py"
    )
    assert report.unfinished and report.busy and not report.problem, report
    (tmp_path / "ada").mkdir()
    (tmp_path / "ada" / "toy.py").write_text("x = 1\n")
    with mock.patch.object(intake_module, "os", _FailingOs("read", 1, errno.EIO)):
        (entry,), _ = discover(tmp_path, "toy.py")
    assert entry.refusal is Refusal.UNFINISHED and "not the student's" in entry.problem, entry
    row = gradebook_row(entry, "suite", None, entry.problem, {"center_tokens": 6})
    assert row.standing is Standing.UNFINISHED and row.standing.pending
