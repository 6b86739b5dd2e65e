"""The grading service's rules, apart from any web framework: tokens, the rate limit, the
states of a queued submission, what an upload or a request may be, and what a report that came
back over the wire must hold before it is printed.

The server (:mod:`grader.commands.serve`) and the client (:mod:`grader.commands.remote`) both
lean on these; nothing here imports a web package, opens a socket or a database, so the rules
are tested as plain functions.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterable

import numpy as np

from .enums import StrEnum
from .intake import MAX_SOURCE
from .results import Report

#: Bytes of randomness in a student's token (``secrets.token_urlsafe`` writes them as ~43 letters).
TOKEN_BYTES = 32
#: Largest upload accepted by default, in bytes: the largest Python source the intake takes.
MAX_UPLOAD = MAX_SOURCE
#: Room for the multipart envelope around the file (boundaries, headers of the part).
ENVELOPE = 64 << 10
#: Seconds an upload's body may take to arrive, by default: a file of the largest size comes in
#: well within it over a slow line, and a body that never ends does not hold the service's memory.
UPLOAD_SECONDS = 60
#: Submissions one student may send in a minute, by default.
PER_MINUTE = 6
#: Submissions a student's list shows, the latest: the list reads every report it shows, on the
#: service's one event loop, and a student sending all day long would have it read thousands.
LISTED = 100
#: The largest submission id a request may name (SQLite's integers are 64-bit).
MAX_ID = (1 << 63) - 1


#: What every token starts with: a letter, so that a spreadsheet opening tokens.csv never takes
#: a token starting with ``-`` for a formula, and a token found lying around says what it opens.
TOKEN_PREFIX = "grader_"


def new_token() -> str:
    """A fresh secret token for one student."""
    return TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)


def token_hash(token: str) -> str:
    """What the database keeps of a token: its SHA-256, in hex (a token is random and long, so
    no salt or slow hash is needed to keep it from being guessed back)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def bearer(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer TOKEN`` header, or None when there is none."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > 512:
        return None
    return token


def student_of(token: str | None, hashes: Iterable[tuple[str, str]]) -> str | None:
    """The student whose token this is, among ``(student, token hash)`` pairs, or None. Every
    stored hash is compared in constant time (:func:`hmac.compare_digest`), all of them whatever
    matched, so the time taken says nothing about how close a guess came."""
    if token is None:
        return None
    given = token_hash(token)
    found = None
    for student, stored in hashes:
        if hmac.compare_digest(given, stored) and found is None:
            found = student
    return found


class State(StrEnum):
    """Where a submission stands in the queue."""

    QUEUED = "queued"  # received, waiting for a grading process
    GRADING = "grading"  # a grading process has it
    DONE = "done"  # graded (or refused) once and for all: never graded again


def after_restart(state: State) -> State:
    """Where a submission stands when the service starts again: one a grading process had when
    the service stopped (killed, it never finished) is queued again; the others stay."""
    return State.QUEUED if state is State.GRADING else state


class RateLimit:
    """At most ``per_minute`` submissions per student in any 60 seconds (a sliding window,
    kept in memory: a restart forgets it). Safe to use from several threads."""

    def __init__(self, per_minute: int, *, clock: Callable[[], float] = time.monotonic):
        if per_minute < 1:
            raise ValueError(f"submissions per minute must be at least 1, got {per_minute}")
        self.per_minute = per_minute
        self.clock = clock
        self.seen: dict[str, deque[float]] = defaultdict(deque)
        self.lock = threading.Lock()

    def take(self, student: str) -> float:
        """0 when ``student`` may submit now (the submission is counted); else the seconds to
        wait before the next one is accepted (nothing is counted)."""
        now = self.clock()
        with self.lock:
            times = self.seen[student]
            while times and times[0] <= now - 60:
                times.popleft()
            if len(times) >= self.per_minute:
                return max(times[0] + 60 - now, 0.001)
            times.append(now)
            return 0.0


class Refused(Exception):
    """A request the service turns down: the HTTP status and a sentence for the student."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def submission_id(text: str) -> int:
    """The submission id a URL names; :class:`Refused` (404) for anything that is not one."""
    if not text.isascii() or not text.isdigit() or len(text) > 19 or not 1 <= int(text) <= MAX_ID:
        raise Refused(404, "there is no such submission")
    return int(text)


def declared_length(header: str | None, cap: int) -> None:
    """:class:`Refused` when a request's Content-Length is not a length or is over ``cap``
    bytes of file plus its envelope (a missing one is checked as the body is read)."""
    if header is None:
        return
    if not header.isascii() or not header.isdigit():
        raise Refused(400, "the request's Content-Length is not a number of bytes")
    if int(header) > cap + ENVELOPE:
        raise too_large(cap)


def too_slow(seconds: float) -> Refused:
    """The refusal of an upload whose body had not all arrived after ``seconds``."""
    return Refused(408, f"the file took more than {seconds:g} s to arrive: send it again")


#: Seconds a sender is asked to wait before sending again when the service is too busy.
BUSY_SECONDS = 30


def too_busy() -> Refused:
    """The refusal of an upload the service could not store or read just now (its own trouble)."""
    return Refused(
        503, f"the service is too busy to take your file just now: send it again in {BUSY_SECONDS} s"
    )


def too_large(cap: int) -> Refused:
    """The refusal of an upload over ``cap`` bytes."""
    return Refused(413, f"the file is too large: the service takes files up to {cap >> 10} KiB")


def upload_suffix(data: bytes, wire_name: str | None) -> str:
    """The suffix the upload is stored under, ``.ipynb`` or ``.py``: the one the sender's file
    name ends with when it is one of those two, else a notebook when the file starts as JSON
    does. The sender's name decides nothing else: it is never a path."""
    name = (wire_name or "").lower()
    for suffix in (".ipynb", ".py"):
        if name.endswith(suffix):
            return suffix
    return ".ipynb" if data.lstrip()[:1] == b"{" else ".py"


def check_upload(data: bytes, cap: int) -> None:
    """:class:`Refused` unless ``data`` is a file the service may queue: not empty, at most
    ``cap`` bytes."""
    if not data:
        raise Refused(400, "the file is empty: send your lesson's file in the form field 'file'")
    if len(data) > cap:
        raise too_large(cap)


def _texts(*values) -> bool:
    return all(isinstance(v, str) for v in values)


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _table(value) -> bool:
    """Whether ``value`` is a picture's table: heads of square rows of numbers (or nothing)."""
    if value == ():
        return True
    try:
        return np.asarray(value, dtype=float).ndim == 3
    except (ValueError, TypeError, OverflowError):
        return False


def well_formed(report: Report) -> bool:
    """Whether ``report``, rebuilt from JSON that came over the wire, holds what the reporters
    read: texts where they print texts, finite numbers where they add scores up, pictures whose
    tables are tables. A service that answers anything else is not to be printed from."""
    if not _texts(report.submission, report.problem):
        return False
    for t in report.tests:
        if not _texts(t.name, t.exercise, t.title, t.feedback, t.counterexample):
            return False
        if not (_number(t.score) and _number(t.max_score)):
            return False
    for name, found in report.diagnoses.items():
        if not _texts(name) or not all(_texts(d.code, d.hint, *d.checks) for d in found):
            return False
    for p in report.pictures:
        if not (
            _texts(p.exercise, p.title, p.problem, *p.tokens) and _table(p.reference) and _table(p.student)
        ):
            return False
    return all(isinstance(f.graded, bool) for f in report.lesson_errors)
