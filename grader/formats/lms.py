"""The gradebook's CSV in the layout an LMS imports: plain, Canvas, Moodle or Blackboard.

A pure function (:func:`table`) from the gradebook's rows (and, when given, the
LMS's own roster) to a header and rows of cells; :func:`read_roster` reads the
roster an instructor exported from the LMS. Where each layout comes from:

* **Canvas** ("How do I import grades in the Gradebook?", Canvas Instructor Guide;
  Ohio State's "Import a CSV file to Carmen Grades"): the columns ``Student``, ``ID``,
  ``SIS User ID``, ``SIS Login ID``, ``Section``, then one column per assignment,
  named as the assignment is in Canvas. Any other column becomes a new assignment,
  so there is no ``score``/``max_score`` here. A Canvas export's second row,
  ``Points Possible``, may stay in the file.
* **Moodle** (Grades > Import > CSV file, ``grade/import/csv``; MoodleDocs "Grade
  import"): any columns; at import the teacher maps one column ("Map from") to a user
  field ("Map to": username, ID number, email) and each grade column to a grade item.
  Written as ``Username`` and the assignment's column. An empty cell is imported as
  "no grade" and clears the grade the student had, so a student without a grade gets
  no row at all (or a 0, when ``--unsubmitted zero`` asks for one). Moodle's own
  export names students by ``Email address`` and ``ID number`` (no username by
  default): ``Email address`` is the roster's key unless another is named.
* **Blackboard** Grade Center ("Uploading or Downloading Grade Center Items for
  Working Offline", Blackboard Help for Instructors): students are matched by
  ``Username``, columns by the column id Blackboard puts at the end of a downloaded
  header (``Name [Total Pts: 100 Score] |1234``); a column without one becomes a new
  column. In comma-delimited files every value is in quotes.

An assignment column named without its LMS id (Canvas's ``Name (id)``, Blackboard's
``|id``) is written as asked, with a note: the import will make a new column of it.

Missing and failed submissions get a blank cell (the LMS then keeps whatever it had,
and a real 0 stays told apart) or 0; the plain layout adds a ``status`` column.
Every cell goes through :func:`grader.core.inert.csv_cell`: ids come from students'
folder names, roster cells from whoever typed them in.
"""

from __future__ import annotations

import csv
import io
import os
import re
import stat
import string
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from ..core.enums import StrEnum
from ..core.errors import UsageError
from ..core.inert import csv_cell, one_line, student_name, student_text
from ..core.results import Standing


class Layout(StrEnum):
    """Which tool the CSV is for."""

    PLAIN = "plain"
    CANVAS = "canvas"
    MOODLE = "moodle"
    BLACKBOARD = "blackboard"


class Unsubmitted(StrEnum):
    """What a student without a grade (missing, unreadable, failed) gets in the CSV."""

    BLANK = "blank"
    ZERO = "zero"


#: Canvas's identifying columns, in the order its import expects them.
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
#: The roster column a student's folder name is matched with, when none is named.
ROSTER_KEY = {
    Layout.PLAIN: "student",
    Layout.CANVAS: "SIS Login ID",
    Layout.MOODLE: "Email address",
    Layout.BLACKBOARD: "Username",
}
#: An assignment's column as Canvas names it in its export: ``Name (id)``.
CANVAS_ID = re.compile(r"\(\d+\)\s*$")
#: A Grade Center column as Blackboard names it in its download: ``Name [...] |id``.
BLACKBOARD_ID = re.compile(r"\|\s*\d+\s*$")
#: Largest roster read (an LMS export of a large class is well under this).
MAX_ROSTER = 16 << 20


@dataclass(frozen=True)
class Roster:
    """The LMS's own list of students, as exported from it."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    """Its cells, made safe where they are read (:func:`grader.core.inert.student_text`)."""
    key: str
    """The column holding what the student folders are named by."""
    ids: tuple[str, ...] = ()
    """Each row's id (its cell in ``key``, stripped) made safe as a folder's name is
    (:func:`grader.core.inert.student_name`), so that the two compare as they were written."""


@dataclass(frozen=True)
class Export:
    """How the batch writes its CSV."""

    layout: Layout = Layout.PLAIN
    assignment: str = ""
    """The name of the grade's column in an LMS layout (the instructor's; the lesson's name
    when empty)."""
    unsubmitted: Unsubmitted | None = None
    """None: blank in an LMS layout, 0 in the plain one."""
    roster: Roster | None = None

    @property
    def blank(self) -> bool:
        """Whether a student without a grade gets an empty cell."""
        if self.unsubmitted is None:
            return self.layout is not Layout.PLAIN
        return self.unsubmitted is Unsubmitted.BLANK


@dataclass(frozen=True)
class Table:
    """The CSV to write, and what the batch's summary should say about it."""

    header: tuple[str, ...]
    rows: tuple[tuple, ...]
    quote_all: bool = False
    notes: tuple[str, ...] = field(default=())


def read_roster(path: Path, key: str) -> Roster:
    """The roster in ``path`` (CSV or tab-separated, UTF-8 or UTF-16 as LMS exports are), with
    ``key`` among its columns; raises :class:`UsageError` saying what is wrong."""
    path = Path(path)
    try:
        fd = os.open(
            path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
        )  # a FIFO opens at once
    except OSError as err:
        raise UsageError(f"the roster {path} could not be read: {err.strerror or err}") from None
    try:
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise UsageError(f"the roster {path} is not a file; export it from the LMS as CSV")
            data = f.read(MAX_ROSTER + 1)
    except OSError as err:
        raise UsageError(f"the roster {path} could not be read: {err.strerror or err}") from None
    if len(data) > MAX_ROSTER:
        raise UsageError(f"the roster {path} is over {MAX_ROSTER >> 20} MiB; is it the right file?")
    encoding = "utf-16" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else "utf-8-sig"
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError:
        raise UsageError(f"the roster {path} is not UTF-8 text; export it from the LMS as CSV") from None
    first = text.split("\n", 1)[0]
    delimiter = "\t" if first.count("\t") > first.count(",") else ","
    lines = [row for row in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter) if any(row)]
    if not lines:
        raise UsageError(f"the roster {path} is empty")
    header = tuple(cell.strip() for cell in lines[0])
    if key not in header:
        columns = ", ".join(f"'{one_line(c)}'" for c in header)
        raise UsageError(
            f"the roster {path} has no column '{one_line(key)}' to match student folders with; "
            f"its columns are {columns} (choose one with --roster-key)"
        )
    width = len(header)
    raw = [tuple(row[:width]) + ("",) * (width - len(row)) for row in lines[1:]]
    column = header.index(key)
    ids = tuple(student_name(row[column].strip()) for row in raw)
    rows = tuple(tuple(student_text(cell) for cell in row) for row in raw)
    return Roster(tuple(student_text(h) for h in header), rows, student_text(key), ids)


def table(rows: list, exercises: tuple[str, ...], export: Export, *, lesson: str) -> Table:
    """The CSV of ``rows`` (the gradebook's :class:`grader.formats.gradebook.Row`, by student) in
    ``export``'s layout; pure: no file is read or written."""
    notes: list[str] = []
    assignment = _column(export, export.assignment or lesson, notes)
    by_student = {row.student: row for row in rows}
    if export.layout is Layout.CANVAS and export.roster is None:
        notes.append(
            "without --roster, Canvas's ID, SIS User ID and Section are left empty and Canvas matches "
            "students by SIS Login ID alone: pass Canvas's own gradebook export as --roster"
        )
    if export.roster is None:
        matched = [(None, row) for row in rows]
    else:
        matched = _join(export.roster, by_student, notes)
    if export.layout is Layout.MOODLE:  # a blank cell clears a grade Moodle has: no row instead
        kept = [(line, row) for line, row in matched if _moodle_row(export, line, row)]
        for line, row in matched:
            if row is None and line is not None and not _moodle_row(export, line, row) and any(line):
                value = line[export.roster.header.index(export.roster.key)].strip()
                notes.append(f"'{one_line(value)}': no grade; no row in the Moodle file")
        gone = [row for _, row in matched if row is not None and not _moodle_row(export, None, row)]
        matched = kept
    else:
        gone = []
    _id_note(export.layout, assignment, notes)
    header, body = _layout(export, exercises, assignment, matched)
    for row in gone:
        why = f": {one_line(row.message)}" if row.message else ""
        notes.append(
            f"'{one_line(row.student)}': no grade ({row.standing.value}{why}); no row in the Moodle file"
        )
    for _, row in matched:
        if row is not None and row.standing is not Standing.GRADED:
            what = "blank" if export.blank or row.standing.pending else "0"
            why = f": {one_line(row.message)}" if row.message else ""
            notes.append(
                f"'{one_line(row.student)}': no grade ({row.standing.value}{why}); written as {what}"
            )
    cells = tuple(tuple(csv_cell(c) for c in line) for line in body)
    return Table(tuple(csv_cell(h) for h in header), cells, export.layout is Layout.BLACKBOARD, tuple(notes))


def _column(export: Export, name: str, notes: list[str]) -> str:
    """The assignment's column: ``name``, or, when ``name`` lacks the id by which Canvas or
    Blackboard finds its column and the roster (the LMS's own export) has exactly one column
    that is ``name`` with an id, that column (noted)."""
    pattern = {Layout.CANVAS: CANVAS_ID, Layout.BLACKBOARD: BLACKBOARD_ID}.get(export.layout)
    if pattern is None or export.roster is None or pattern.search(name) or name in export.roster.header:
        return name
    bare = name.strip().casefold()
    found = [h for h in export.roster.header if pattern.search(h) and _bare(pattern.sub("", h)) == bare]
    if len(found) != 1:
        return name
    notes.append(
        f"the grade goes into the roster's column '{one_line(found[0])}' (asked: '{one_line(name)}')"
    )
    return found[0]


def _bare(header: str) -> str:
    """A column's name without what an LMS adds after it (Blackboard's ``[Total Pts: ...]``)."""
    return re.sub(r"\s*\[[^\]]*\]\s*$", "", header).strip().casefold()


def _moodle_row(export: Export, line, row) -> bool:
    """Whether a Moodle file has a row for this student: a grade, or the 0 the instructor asked
    for (``--unsubmitted zero``); an unfinished grade is no number, 0 included."""
    if row is None:
        return export.unsubmitted is Unsubmitted.ZERO and line is not None and any(line)
    if row.standing is Standing.GRADED:
        return True
    return export.unsubmitted is Unsubmitted.ZERO and not row.standing.pending


def _id_note(layout: Layout, assignment: str, notes: list[str]) -> None:
    """A note when the assignment's column lacks the id by which the LMS finds its column."""
    if layout is Layout.CANVAS and not CANVAS_ID.search(assignment):
        notes.append(
            f"the column '{one_line(assignment)}' has no Canvas assignment id: Canvas will make a new "
            "assignment of it; pass --assignment 'Name (id)' as the column is named in Canvas's export"
        )
    elif layout is Layout.BLACKBOARD and not BLACKBOARD_ID.search(assignment):
        notes.append(
            f"the column '{one_line(assignment)}' has no Grade Center column id: Blackboard will make a "
            "new column of it; pass --assignment 'Name |id' as the column is named in its download"
        )


def match_key(name: str) -> str | None:
    """What a roster's id and a student's folder name must share to match: the name in Unicode
    NFC (so that an accent typed as two code points, as macOS names files, is the same accent),
    with the ASCII letters A-Z lowercased and nothing else changed. None for a name holding a
    character that NFC turns into another one (KELVIN SIGN into K, OHM SIGN into omega): such
    a name matches only itself, exactly."""
    if any(_replaced_by_nfc(c) for c in name):
        return None
    return unicodedata.normalize("NFC", name).translate(_ASCII_LOWER)


_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def _replaced_by_nfc(char: str) -> bool:
    """Whether NFC writes ``char`` as another single character (a canonical singleton)."""
    decomposition = unicodedata.decomposition(char)
    return bool(decomposition) and not decomposition.startswith("<") and " " not in decomposition


def _look_alike(name: str) -> str:
    """What two names that only look alike share (compatibility forms, any case): for notes."""
    return unicodedata.normalize("NFKC", name).casefold()


def _odd_letters(name: str) -> str:
    """The characters of ``name`` outside ASCII, named, for a note: `` (U+212A KELVIN SIGN)``."""
    odd = dict.fromkeys(c for c in name if not c.isascii())
    shown = ", ".join(f"U+{ord(c):04X} {unicodedata.name(c, 'unnamed')}" for c in odd)
    return f" ({shown})" if shown else ""


def _join(roster: Roster, by_student: dict, notes: list[str]) -> list[tuple]:
    """Each roster line with its student's row (None: no submission, or a line that names no
    student); students with a submission but no roster line are noted and left out.

    An id matches a folder name that is the same text, or failing that the same after
    :func:`match_key`. A line whose id matches several folders, a folder that several lines
    match, and a name that matches only through look-alike characters (compatibility forms,
    a sign for a letter) are noted and left unmatched: a grade never lands in another
    student's row by a guess."""
    values = list(roster.ids) or [line[roster.header.index(roster.key)].strip() for line in roster.rows]
    chosen: dict[int, str] = {}  # roster line -> student
    used: set[str] = set()
    for i, value in enumerate(values):  # the same text first
        if value in by_student and value not in used:
            chosen[i] = value
            used.add(value)
    folded: dict[str, list[str]] = {}
    for student in by_student:
        key = match_key(student)
        if key is not None and student not in used:
            folded.setdefault(key, []).append(student)
    waiting: dict[str, list[int]] = {}
    said: set[int] = set()  # roster lines already noted
    for i, value in enumerate(values):
        key = match_key(value)
        if i not in chosen and key is not None and value not in by_student:
            waiting.setdefault(key, []).append(i)
    for key, lines in waiting.items():  # then the same after NFC and A-Z in lower case
        students = folded.get(key, [])
        if len(students) == 1 and len(lines) == 1:
            chosen[lines[0]] = students[0]
            used.add(students[0])
        elif len(students) > 1:
            names = " and ".join(f"'{one_line(s)}'" for s in students)
            for i in lines:
                said.add(i)
                notes.append(
                    f"'{one_line(values[i])}': matches the folders {names}; left unmatched, written as "
                    "missing (rename the folders)"
                )
        elif students:
            said.update(lines)
            shown = " and ".join(f"'{one_line(values[i])}'" for i in lines)
            notes.append(
                f"'{one_line(students[0])}': matches the roster's {shown}; left unmatched, each written "
                "as missing (rename the folder)"
            )
    alike: dict[str, list[str]] = {}
    for student in by_student:
        if student not in used:
            alike.setdefault(_look_alike(student), []).append(student)
    taken = {match_key(s) for s in used} - {None}  # the keys of the students placed
    matched = []
    for i, (line, value) in enumerate(zip(roster.rows, values, strict=True)):
        if i in chosen:
            matched.append((line, by_student[chosen[i]]))
            continue
        matched.append((line, None))
        twice = value in by_student or match_key(value) in taken
        similar = alike.get(_look_alike(value), [])
        if i in said:
            continue
        if twice:
            notes.append(f"'{one_line(value)}': in the roster twice; the second line gets no grade")
        elif similar:
            names = " and ".join(f"'{one_line(s)}'{_odd_letters(s)}" for s in similar)
            notes.append(
                f"'{one_line(value)}': only looks like the folder {names}; left unmatched, written as "
                "missing (rename the folder if it is the same student)"
            )
        elif value and not _points_possible(roster, line):
            notes.append(f"'{one_line(value)}': in the roster, handed in nothing; written as missing")
    for student in by_student:
        if student not in used:
            notes.append(f"'{one_line(student)}': graded, but not in the roster; left out of the CSV")
    return matched


def _points_possible(roster: Roster, line: tuple) -> bool:
    """Whether ``line`` is the ``Points Possible`` line a Canvas export has under its header."""
    return bool(line) and line[0].strip() == "Points Possible"


def _layout(export: Export, exercises, assignment: str, matched) -> tuple[tuple, list[tuple]]:
    """(header, lines) of one layout."""
    roster = export.roster
    if export.layout is Layout.PLAIN:
        base = ("student", "score", "max_score", *exercises, "status")
        header = base if roster is None else (*roster.header, *(c for c in base if c not in roster.header))
    elif roster is not None:
        header = roster.header if assignment in roster.header else (*roster.header, assignment)
    elif export.layout is Layout.CANVAS:
        header = (*CANVAS_COLUMNS, assignment)
    else:  # Moodle and Blackboard: the username, then the grade
        header = ("Username", assignment)
    lines = []
    for line, row in matched:
        cells = dict(zip(roster.header, line, strict=True)) if roster is not None else {}
        if roster is not None and _points_possible(roster, line):
            if export.layout is Layout.CANVAS and row is None:
                cells[assignment] = _number(_max(matched))
            lines.append(tuple(cells.get(h, "") for h in header))
            continue
        student = row.student if row is not None else ""
        graded = row is not None and row.standing is Standing.GRADED
        # an unfinished grade is not known to be anything, 0 included
        empty = "" if export.blank or (row is not None and row.standing.pending) else "0"
        score = _number(row.score) if graded else empty
        if export.layout is Layout.PLAIN:
            per = {e.name: e.score for e in row.exercises} if graded else {}
            cells.setdefault("student", student)
            cells["score"] = score
            cells["max_score"] = _number(row.max_score if row is not None else _max(matched))
            for name in exercises:
                cells[name] = _number(per.get(name, 0)) if graded else empty
            cells["status"] = row.standing.value if row is not None else Standing.MISSING.value
        else:
            if roster is None:
                ids = {"Student": student, "SIS Login ID": student, "Username": student}
                cells.update(ids)
            cells[assignment] = score
        lines.append(tuple(cells.get(h, "") for h in header))
    return header, lines


def _max(matched) -> float:
    """The assignment's maximum, from any row that has one."""
    return next((row.max_score for _, row in matched if row is not None), 0)


def _number(x) -> str:
    """A score as a spreadsheet reads it: ``7``, not ``7.0``."""
    x = float(x)
    return str(int(x)) if x == int(x) else f"{x:g}"
