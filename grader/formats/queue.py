"""The grading service's queue and its students' tokens, kept in the course's gradebook database.

Two tables beside the gradebook's own (:mod:`grader.formats.gradebook`), in the same SQLite file:
``students`` (a student id and the SHA-256 of their token: the token itself is never stored) and
``submissions`` (one row per upload, moving queued -> grading -> done, see
:class:`grader.core.service.State`). Every move is one transaction that checks the state it
leaves, so a submission is claimed by one grading process only and finished once only: a row
that is ``done`` is never graded again. A connection serves one thread: each thread opens its own.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ..core.service import State, after_restart

SCHEMA = """
CREATE TABLE IF NOT EXISTS students (
    student     TEXT PRIMARY KEY,
    token_hash  TEXT NOT NULL UNIQUE   -- sha256 of the token, hex
);
CREATE TABLE IF NOT EXISTS instructors (
    token_hash  TEXT PRIMARY KEY       -- sha256 of an instructor's token, hex
);
CREATE TABLE IF NOT EXISTS submissions (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    student     TEXT NOT NULL REFERENCES students(student),
    state       TEXT NOT NULL,     -- queued | grading | done
    file        TEXT NOT NULL,     -- the stored upload, an absolute path the service chose
    file_hash   TEXT NOT NULL,     -- sha256 of the source taken in
    received_at TEXT NOT NULL,
    claims      INTEGER NOT NULL DEFAULT 0,  -- times a grading process took it
    finishes    INTEGER NOT NULL DEFAULT 0,  -- times it became done: 1 once graded, never more
    graded_at   TEXT NOT NULL DEFAULT '',
    report      TEXT NOT NULL DEFAULT '',    -- the JSON report, '' when none could be made
    message     TEXT NOT NULL DEFAULT ''     -- why there is no report
);
CREATE INDEX IF NOT EXISTS submissions_by_state ON submissions(state, id);
CREATE INDEX IF NOT EXISTS submissions_by_student ON submissions(student, id);
"""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Submission:
    """One row of the queue."""

    id: int
    student: str
    state: State
    file: str
    file_hash: str
    received_at: str
    graded_at: str = ""
    report: str = ""
    """The JSON report (:func:`grader.formats.json_report.to_dict`), once done, or ''."""
    message: str = ""
    """Why a done submission has no report."""


_COLUMNS = "id, student, state, file, file_hash, received_at, graded_at, report, message"


def _row(found) -> Submission:
    id_, student, state, file, file_hash, received, graded, report, message = found
    return Submission(id_, student, State(state), file, file_hash, received, graded, report, message)


class Queue:
    """An open connection to the service's tables (one per thread)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.db = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    def _write(self, sql: str, values: tuple = ()) -> sqlite3.Cursor:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            cursor = self.db.execute(sql, values)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return cursor

    # the students and their tokens

    def students(self) -> list[tuple[str, str]]:
        """Every (student, token hash)."""
        return list(self.db.execute("SELECT student, token_hash FROM students ORDER BY student"))

    def add_students(self, hashes: list[tuple[str, str]]) -> None:
        """Add (student, token hash) pairs, all in one transaction; a student already known
        keeps the token they have."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.executemany("INSERT OR IGNORE INTO students VALUES (?, ?)", hashes)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def instructors(self) -> list[tuple[str, str]]:
        """Every instructor token's hash, as ("instructor", hash) pairs."""
        return [("instructor", h) for (h,) in self.db.execute("SELECT token_hash FROM instructors")]

    def add_instructor(self, token_hash: str) -> None:
        self._write("INSERT OR IGNORE INTO instructors VALUES (?)", (token_hash,))

    # the queue

    def recover(self) -> int:
        """Put back in the queue what a grading process had when the service stopped
        (:func:`grader.core.service.after_restart`); how many."""
        cursor = self._write(
            "UPDATE submissions SET state = ? WHERE state = ?", (after_restart(State.GRADING), State.GRADING)
        )
        return cursor.rowcount

    def add(self, student: str, file: str, file_hash: str) -> int:
        """Queue a submission; its id."""
        cursor = self._write(
            "INSERT INTO submissions (student, state, file, file_hash, received_at) VALUES (?, ?, ?, ?, ?)",
            (student, State.QUEUED, file, file_hash, _now()),
        )
        return int(cursor.lastrowid)

    def claim(self) -> Submission | None:
        """The oldest queued submission, now ``grading`` (no other process can claim it), or None."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            found = self.db.execute(
                f"SELECT {_COLUMNS} FROM submissions WHERE state = ? ORDER BY id LIMIT 1", (State.QUEUED,)
            ).fetchone()
            if found is not None:
                self.db.execute(
                    "UPDATE submissions SET state = ?, claims = claims + 1 WHERE id = ? AND state = ?",
                    (State.GRADING, found[0], State.QUEUED),
                )
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return None if found is None else _row(found)

    def finish(self, id_: int, *, report: str, message: str) -> bool:
        """Record the outcome of a submission being graded: it becomes ``done``. False (and
        nothing changes) when it was not being graded."""
        cursor = self._write(
            "UPDATE submissions SET state = ?, finishes = finishes + 1, graded_at = ?, report = ?, "
            "message = ? WHERE id = ? AND state = ?",
            (State.DONE, _now(), report, message, id_, State.GRADING),
        )
        return cursor.rowcount == 1

    def get(self, id_: int, student: str) -> Submission | None:
        """Submission ``id_`` if it is ``student``'s, else None (another's is as if it did not exist)."""
        found = self.db.execute(
            f"SELECT {_COLUMNS} FROM submissions WHERE id = ? AND student = ?", (id_, student)
        ).fetchone()
        return None if found is None else _row(found)

    def latest_done(self, student: str) -> int | None:
        """The id of ``student``'s latest graded submission (the one their grade is), or None."""
        found = self.db.execute(
            "SELECT MAX(id) FROM submissions WHERE student = ? AND state = ?", (student, State.DONE)
        ).fetchone()
        return found[0] if found else None

    def counts(self) -> dict[str, int]:
        """How many submissions each student has sent."""
        return dict(self.db.execute("SELECT student, COUNT(*) FROM submissions GROUP BY student"))

    def of(self, student: str, latest: int = -1) -> list[Submission]:
        """``student``'s submissions (their ``latest`` ones alone when it is not -1), oldest first."""
        found = self.db.execute(
            f"SELECT {_COLUMNS} FROM submissions WHERE student = ? ORDER BY id DESC LIMIT ?",
            (student, latest),
        ).fetchall()
        return [_row(f) for f in reversed(found)]
