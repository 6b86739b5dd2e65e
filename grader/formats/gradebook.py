"""The gradebook: an SQLite database as the source of truth, and its CSV export.

One row per student. Every graded submission is written in a transaction of
its own, so an interrupted batch (Ctrl-C, or SIGKILL of the whole process
group) loses no grade that was finished. A row remembers the hash of the
file and of the suite that graded it, so a later batch regrades only what is
missing or has changed.
"""

from __future__ import annotations

import csv
import json
import math
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import quote

from ..core.errors import UsageError
from ..core.inert import one_line
from ..core.results import ExerciseResult, Standing
from ..core.whole import whole_file
from .lms import Export, Table, table

SCHEMA = """
CREATE TABLE IF NOT EXISTS grades (
    student     TEXT PRIMARY KEY,
    status      TEXT NOT NULL,   -- graded | missing | unreadable | failed | unfinished
    file_hash   TEXT NOT NULL,
    suite_hash  TEXT NOT NULL,
    score       REAL NOT NULL,
    max_score   REAL NOT NULL,
    exercises   TEXT NOT NULL,   -- JSON: {exercise: {"score", "max_score"}}
    report      TEXT NOT NULL,   -- JSON report, or '' when none could be made
    message     TEXT NOT NULL,   -- why there is no report, or the file-level problem
    graded_at   TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS about (
    key         TEXT PRIMARY KEY,  -- lesson | exercises
    value       TEXT NOT NULL
);
"""
#: What a gradebook must hold to be read: the table of grades with these columns. A gradebook
#: written before the ``about`` table existed is read all the same (:func:`open_gradebook`).
COLUMNS = ("student", "status", "score", "max_score", "exercises", "report", "message")


@dataclass(frozen=True)
class Row:
    """One student's line in the gradebook."""

    student: str
    standing: Standing
    file_hash: str
    suite_hash: str
    score: float
    max_score: float
    exercises: tuple[ExerciseResult, ...]
    report: str = ""
    """The JSON report (:func:`grader.formats.json_report.to_dict`), or '' when none was made."""
    message: str = ""
    """Why there is no report, or the file-level problem."""


class Gradebook:
    """An open gradebook database."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, isolation_level=None)  # explicit transactions
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    def describe(self, lesson: str, exercises: tuple[str, ...]) -> None:
        """Remember which lesson graded this gradebook and its exercises, so that an export or a
        class report made later, without the course, names them as the batch did."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            for key, value in (("lesson", lesson), ("exercises", json.dumps(list(exercises)))):
                self.db.execute("INSERT OR REPLACE INTO about VALUES (?, ?)", (key, value))
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def about(self) -> tuple[str, tuple[str, ...]]:
        """(the lesson's name, its exercises) as the batch recorded them; for a gradebook written
        before they were recorded, ('', the exercises its rows name, in their order)."""
        has = self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'about'")
        known = dict(self.db.execute("SELECT key, value FROM about")) if has.fetchone() else {}
        try:
            exercises = tuple(str(e) for e in json.loads(known.get("exercises", "[]")))
        except (TypeError, ValueError):
            exercises = ()
        if not exercises:
            exercises = tuple(dict.fromkeys(e.name for row in self.rows() for e in row.exercises))
        return str(known.get("lesson", "")), exercises

    def is_current(self, student: str, file_hash: str, suite_hash: str) -> bool:
        """True when this exact source was already graded by this exact suite.

        Only a real grade counts: a student whose row says missing, unreadable,
        failed or unfinished is looked at again on the next run.
        """
        row = self.db.execute(
            "SELECT status, file_hash, suite_hash FROM grades WHERE student = ?", (student,)
        ).fetchone()
        return row is not None and row[0] == Standing.GRADED.value and row[1:] == (file_hash, suite_hash)

    def record(self, row: Row) -> None:
        """Write one student's result in a transaction of its own."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute(
                "INSERT OR REPLACE INTO grades VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    row.student,
                    row.standing.value,
                    row.file_hash,
                    row.suite_hash,
                    row.score,
                    row.max_score,
                    json.dumps({e.name: {"score": e.score, "max_score": e.max_score} for e in row.exercises}),
                    row.report,
                    row.message,
                    datetime.now(timezone.utc).isoformat(timespec="seconds"),
                ),
            )
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def stored(self, student: str) -> tuple[str, str] | None:
        """(JSON report, message) recorded for ``student``, if any."""
        row = self.db.execute("SELECT report, message FROM grades WHERE student = ?", (student,)).fetchone()
        return None if row is None else (row[0], row[1])

    def rows(self) -> list[Row]:
        """Every student's row, ordered by student."""
        found = self.db.execute(
            "SELECT student, status, file_hash, suite_hash, score, max_score, exercises, report, message "
            "FROM grades ORDER BY student"
        ).fetchall()
        return [
            Row(
                student,
                Standing(standing),
                file_hash,
                suite_hash,
                score,
                max_score,
                tuple(
                    ExerciseResult(n, e["score"], e["max_score"]) for n, e in json.loads(exercises).items()
                ),
                report,
                message,
            )
            for student, standing, file_hash, suite_hash, score, max_score, exercises, report, message in found
        ]

    def export_csv(
        self, out: Path, exercises: tuple[str, ...], export: Export | None = None, *, lesson: str = ""
    ) -> Table:
        """Write the CSV in ``export``'s layout (:mod:`grader.formats.lms`; plain: student, score,
        max_score, one column per exercise of ``exercises``, status); returns what was written.

        Student ids are folder names, chosen by students: every cell goes through
        :func:`grader.core.inert.csv_cell`, so that ``=1+1`` reaches a spreadsheet as text.
        """
        written = table(self.rows(), exercises, export or Export(), lesson=lesson)
        out = Path(out)
        with whole_file(out, newline="") as f:
            writer = csv.writer(f, quoting=csv.QUOTE_ALL if written.quote_all else csv.QUOTE_MINIMAL)
            writer.writerow(written.header)
            writer.writerows(written.rows)
        return written


def database_of(path: Path) -> Path:
    """The gradebook database of the CSV a batch wrote (``grades.csv`` -> ``grades.sqlite``), or
    ``path`` itself when it names the database."""
    path = Path(path)
    return path if path.suffix == ".sqlite" else path.with_suffix(".sqlite")


def _numbers(row: Row) -> None:
    """ValueError unless every score of ``row`` is a finite number (SQLite keeps whatever text a
    damaged or hand-edited database holds, and a report would stop at it)."""
    scores = [row.score, row.max_score, *(x for e in row.exercises for x in (e.score, e.max_score))]
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in scores):
        raise ValueError(f"the row of {one_line(row.student)!r} holds a score that is not a number")


def open_gradebook(path: Path) -> Gradebook:
    """The gradebook a batch wrote beside the CSV ``path``, opened to be read only (nothing is
    created, changed or graded); raises :class:`UsageError` saying what is wrong when there is
    none there or it is not one."""
    path = Path(path)
    db = database_of(path)
    if not db.is_file():
        where = f"{path} names no gradebook: " if path != db else ""
        raise UsageError(
            f"{where}there is no gradebook database {db}; it is the file a batch writes beside its "
            "CSV (batch --out grades.csv writes grades.sqlite): give --from the CSV a batch wrote"
        )
    book = Gradebook.__new__(Gradebook)
    book.path = db
    try:
        # no journal beside it: no batch has it open, and nothing need be written to read it (a
        # read-only connection would leave -wal and -shm files); else read what the journal holds
        alone = not db.with_name(db.name + "-wal").exists()
        mode = "mode=ro&immutable=1" if alone else "mode=ro"
        book.db = sqlite3.connect(f"file:{quote(str(db.resolve()))}?{mode}", uri=True, isolation_level=None)
        names = {r[1] for r in book.db.execute("PRAGMA table_info(grades)")}
        if not set(COLUMNS) <= names:
            raise sqlite3.DatabaseError("it holds no table of grades")
        for row in book.rows():
            _numbers(row)
    except (sqlite3.Error, ValueError, KeyError, TypeError, AttributeError) as err:
        try:
            book.db.close()
        except (AttributeError, sqlite3.Error):
            pass
        raise UsageError(
            f"{db} is not a gradebook this grader can read ({one_line(str(err)) or type(err).__name__}); "
            "run the batch again to write it anew"
        ) from None
    return book
