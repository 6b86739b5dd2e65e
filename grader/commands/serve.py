"""``serve``: the grading service, holding the reference, grading what students upload.

    python -m grader serve --data DIR --lesson NAME --roster FILE [--host 127.0.0.1] [--port 8000]

Students send their file over HTTP and get the official visible report back: the public checks
run against the instructor's reference, so diagnoses and cascades work as in the course,
which the student release (without the reference) cannot do.

* Tokens: each roster student gets a secret token, written once to ``DIR/tokens.csv``
  (``student,token``, readable by its owner only) for the instructor to hand out; the database
  keeps only its SHA-256 (:mod:`grader.core.service`). Starting again with ``--roster`` adds the
  students who are new; the others keep their tokens.
* API (JSON; ``Authorization: Bearer TOKEN`` on every ``/api`` route):
  ``GET /health``; ``POST /api/submissions`` (multipart field ``file``: the lesson's ``.py`` or a
  notebook) answers 202 ``{"id": N}`` at once; ``GET /api/submissions`` lists the caller's own (the latest :data:`~grader.core.service.LISTED`);
  ``GET /api/submissions/N`` is ``{"status": "queued"|"grading"}`` until graded, then the report
  (as ``grade --public --format json``). Another student's submission is 404, a bad token 401,
  a file too large 413, one whose upload took longer than ``--upload-seconds`` 408, too many
  submissions in a minute 429, anything else wrong 400: each with ``{"error": "..."}``.
  A connection that has not sent a whole request head within ``--upload-seconds`` is closed.
* The queue is in ``DIR/gradebook.sqlite`` (:mod:`grader.formats.queue`). Grading processes are
  the batch's (:class:`grader.commands.batch.Grader`: ``grade-stream`` zygotes, a sandboxed child
  per submission). A submission is ``done`` once graded and never graded again; one that was
  being graded when the service was killed is queued again when it starts.
* Pages: ``/`` for students (token, upload, the HTML report with its pictures, their
  submissions) and ``/instructor`` (the class's latest grades, CSV export in the LMS layouts of
  :mod:`grader.formats.lms`), plain HTML and one script (``service_files/``). The instructor's
  token is written once to ``DIR/instructor_token.txt``; ``GET /api/class`` and
  ``GET /api/class.csv?layout=plain|canvas|moodle|blackboard`` take it (a student's token: 403).
  A student's latest graded submission is also their row of the gradebook
  (:mod:`grader.formats.gradebook`), so ``export --from DIR/gradebook.csv`` reads it too.
* An upload is stored under a name the service chooses (``DIR/submissions/RANDOM/NAME.py``);
  the name the sender gave is read for its suffix only.

The web packages (Starlette, uvicorn, python-multipart) are the ``server`` extra: this module
alone imports them, and the command line imports it only to serve.
"""

from __future__ import annotations

import csv
import html
import io
import ipaddress
import json
import math
import os
import secrets
import shutil
import socket
import stat
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from uvicorn.protocols.http.h11_impl import H11Protocol

from ..core.errors import IsolationRefused, UsageError
from ..core.inert import csv_cell, one_line
from ..core.intake import IntakeError, Refusal, open_submission
from ..core.lesson import Lesson
from ..core.service import (
    BUSY_SECONDS,
    ENVELOPE,
    LISTED,
    UPLOAD_SECONDS,
    RateLimit,
    Refused,
    State,
    bearer,
    check_upload,
    declared_length,
    new_token,
    student_of,
    submission_id,
    token_hash,
    too_busy,
    too_large,
    too_slow,
    upload_suffix,
)
from ..core.settings import Isolation, Settings
from ..formats.gradebook import Gradebook
from ..formats.html import to_html
from ..formats.json_report import from_dict, to_dict
from ..formats.lms import Export, Layout, read_roster, table
from ..formats.queue import Queue
from ..sandbox.clock import WALL_FACTOR
from ..sandbox.wardens import processes_missing, settle
from .batch import GRACE, Entry, Grader, gradebook_row, lane_cores, stream_options, suite_hash

#: Seconds an idle grading thread waits for the next upload before it looks at the queue again.
IDLE = 1.0
#: Seconds the service waits for its grading threads to end when it stops.
GOODBYE = 10.0
#: The pages' files (HTML, a script, a style sheet), served as they are.
FILES = Path(__file__).resolve().parent / "service_files"
#: What the pages may load: their own script and style sheet; the report's frame has its inline
#: styles and pictures, and runs nothing (it is sandboxed).
PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "frame-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
REPORT_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'"


@dataclass(frozen=True)
class Service:
    """What one running service grades, and how."""

    data: Path
    lesson: Lesson
    settings: Settings
    isolation: Isolation
    """The level the submissions run at (chosen once, never ``auto``)."""
    max_upload: int
    per_minute: int
    suite: str
    """The fingerprint of what decides a grade besides the file (:func:`grader.commands.batch.suite_hash`)."""
    upload_seconds: float = UPLOAD_SECONDS
    """The time an upload's body may take to arrive (one that never ends would hold its memory)."""

    @property
    def database(self) -> Path:
        return self.data / "gradebook.sqlite"

    @property
    def tokens(self) -> Path:
        return self.data / "tokens.csv"

    @property
    def instructor_token(self) -> Path:
        return self.data / "instructor_token.txt"


# the students and their tokens


def enrol(queue: Queue, tokens: Path, students: list[str]) -> list[str]:
    """Give every student of ``students`` not known yet a token: appended to ``tokens`` (made
    readable by its owner only), then its hash stored. The students added."""
    known = {student for student, _ in queue.students()}
    new = [s for s in dict.fromkeys(students) if s and s not in known]
    if not new:
        return []
    given = [(student, new_token()) for student in new]
    _append_tokens(tokens, given)  # first: a token stored but never written down would be lost
    queue.add_students([(student, token_hash(token)) for student, token in given])
    return new


def instructor(queue: Queue, path: Path) -> bool:
    """Make the instructor's token when there is none: written to ``path`` (readable by its owner
    only), then its hash stored. Whether one was made."""
    if queue.instructors():
        return False
    token = new_token()
    with _secret_file(path, "the instructor's token", append=False) as (f, _):
        f.write(token + "\n")
    queue.add_instructor(token_hash(token))
    return True


def _append_tokens(path: Path, given: list[tuple[str, str]]) -> None:
    """Append ``student,token`` rows to the CSV ``path`` (its header first when it is new)."""
    with _secret_file(path, "the students' tokens", append=True) as (f, new):
        writer = csv.writer(f)
        if new:
            writer.writerow(("student", "token"))
        writer.writerows((csv_cell(student), token) for student, token in given)


@contextmanager
def _secret_file(path: Path, what: str, *, append: bool) -> Iterator[tuple[TextIO, bool]]:
    """(``path`` open to write text, whether it was empty), readable by its owner only (a file
    left with wider rights is narrowed), written to disk when the block ends. A link, a pipe or
    anything but a plain file at ``path`` is refused, never followed or written to."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    flags |= os.O_APPEND if append else os.O_TRUNC
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as err:
        raise UsageError(f"{what} could not be written to {path}: {err.strerror or err}") from None
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UsageError(f"{path} is not a file: move it away, the service writes {what} there")
        os.fchmod(fd, 0o600)
        yield f, info.st_size == 0
        f.flush()
        os.fsync(fd)


# grading


def fresh_scratch(data: Path) -> Path:
    """The grading processes' TMPDIR, ``DATA/scratch``, emptied: a service stopped by SIGKILL or a
    power cut cannot remove what its grading left there, so the next start does (in the system's
    temporary folder it would pile up, one folder per start, unseen)."""
    scratch = data / "scratch"
    if scratch.is_symlink() or (scratch.exists() and not scratch.is_dir()):
        raise UsageError(f"{scratch} is not a folder: move it away, the service grades there")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(mode=0o700, exist_ok=True)
    return scratch


class Workers:
    """Threads that grade the queue, each through a grading process of the batch's."""

    def __init__(self, service: Service, jobs: int, cluster=None):
        self.service = service
        self.cluster = cluster
        self.stop = threading.Event()
        self.wake = threading.Event()
        self.scratch = fresh_scratch(service.data)  # the grading processes' TMPDIR
        environment = {**os.environ, "TMPDIR": str(self.scratch)}
        options = stream_options(service.lesson, service.settings, service.isolation)
        self.graders = [
            Grader(options, cpu, environment) if cluster is None else cluster.grader()
            for cpu in lane_cores(jobs)
        ]
        self.threads = [
            threading.Thread(target=self._work, args=(g,), name=f"grader-{i}", daemon=True)
            for i, g in enumerate(self.graders)
        ]
        self.limit = WALL_FACTOR * service.settings.limits.total_timeout + GRACE

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def close(self) -> None:
        """Stop grading: what is being graded stays ``grading`` and is queued again at the next start."""
        self.stop.set()
        self.wake.set()
        if self.cluster is not None:
            self.cluster.cancel()  # what the cluster grades now is answered "interrupted"
        for grader in self.graders:
            try:
                grader.close(interrupt=True)
            except (OSError, AttributeError, ValueError):
                pass  # its thread closed it at the same moment
        for thread in self.threads:
            thread.join(GOODBYE)
        shutil.rmtree(self.scratch, ignore_errors=True)

    def _work(self, grader: Grader) -> None:
        queue = Queue(self.service.database)
        book = Gradebook(self.service.database)
        try:
            while not self.stop.is_set():
                submission = queue.claim()
                if submission is None:
                    self.wake.wait(IDLE)
                    self.wake.clear()
                    continue
                report, message = self._grade(grader, submission)
                if self.stop.is_set() and report is None:
                    break  # stopped under it: left ``grading``, queued again at the next start
                queue.finish(
                    submission.id, report=json.dumps(to_dict(report)) if report else "", message=message
                )
                if report is not None and queue.latest_done(submission.student) == submission.id:
                    entry = Entry(submission.student, Path(submission.file), submission.file_hash)
                    book.record(gradebook_row(entry, self.service.suite, report, "", {}))
        finally:
            queue.close()
            book.close()

    def _grade(self, grader: Grader, submission):
        name = self.service.lesson.name + Path(submission.file).suffix
        entry = Entry(submission.student, Path(submission.file), submission.file_hash, shown=name)
        try:
            _, report, message = grader.grade(entry, self.limit, {})
        except Exception as err:  # noqa: BLE001 - ours: this submission says so, the service goes on
            grader.close()
            return None, f"the grader failed ({type(err).__name__}); this is not your fault: submit again"
        return report, told_to_the_student(message) if report is None else message


def told_to_the_student(message: str) -> str:
    """A grading process's reason for no report, as the student who sent the file reads it: the
    batch's advice ("run the batch again", for the instructor) is theirs to send it again."""
    said, advice, _ = message.rpartition("run the batch again")
    if not advice:
        return message
    for tail in ("report it, and", "this is not the student's fault:"):
        said = said.rstrip("; ,").removesuffix(tail)
    return f"{said.rstrip('; ,')}; this is not your fault: submit again"


# the web application


def _error(status: int, message: str, **headers: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers or None)


def application(service: Service, wake: threading.Event) -> Starlette:
    """The ASGI application of ``service`` (its handlers run on the event loop's one thread,
    which alone uses its database connection); ``wake`` is set on every new submission."""
    queue = Queue(service.database)
    book = Gradebook(service.database)
    students = queue.students()  # read once: new roster students need a restart
    instructors = queue.instructors()
    pages = {
        name: (FILES / name)
        .read_text(encoding="utf-8")
        .replace("@LESSON@", html.escape(service.lesson.name))
        .replace("@FILENAME@", html.escape(service.lesson.filename))
        for name in ("student.html", "instructor.html", "service.js", "service.css")
    }
    limit = RateLimit(service.per_minute)
    uploads = service.data / "submissions"
    uploads.mkdir(mode=0o700, exist_ok=True)
    cap = service.max_upload

    def caller(request: Request) -> str:
        student = student_of(bearer(request.headers.get("authorization")), students)
        if student is None:
            raise Refused(
                401, "no valid token: send 'Authorization: Bearer TOKEN' with the token you were given"
            )
        return student

    def the_instructor(request: Request) -> None:
        token = bearer(request.headers.get("authorization"))
        if student_of(token, instructors) is None:
            if student_of(token, students) is not None:
                raise Refused(403, "this needs the instructor's token, not a student's")
            raise Refused(
                401, "no valid token: send 'Authorization: Bearer TOKEN' with the instructor's token"
            )

    def page(name: str, kind: str):
        async def serve_page(request: Request) -> Response:
            headers = {"Content-Security-Policy": PAGE_POLICY, "X-Content-Type-Options": "nosniff"}
            return Response(pages[name], media_type=kind, headers=headers)

        return serve_page

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "lesson": service.lesson.name})

    async def submit(request: Request) -> JSONResponse:
        student = caller(request)
        wait = limit.take(student)
        if wait:
            return _error(
                429,
                f"too many submissions: at most {service.per_minute} a minute; "
                f"try again in {math.ceil(wait)} s",
                **{"Retry-After": str(math.ceil(wait))},
            )
        declared_length(request.headers.get("content-length"), cap)
        if not request.headers.get("content-type", "").lower().startswith("multipart/form-data"):
            raise Refused(400, "send the file as multipart/form-data, in the form field 'file'")
        body = bytearray()
        try:
            with anyio.fail_after(service.upload_seconds):
                async for chunk in request.stream():
                    body += chunk
                    if len(body) > cap + ENVELOPE:
                        raise too_large(cap)
        except TimeoutError:
            raise too_slow(service.upload_seconds) from None
        except ClientDisconnect:  # the sender hung up mid-upload: nothing is kept, nobody is told
            return Response(status_code=400)

        async def replay():
            return {"type": "http.request", "body": bytes(body), "more_body": False}

        form = await Request(request.scope, replay).form(max_files=1, max_fields=4)
        try:
            upload = form.get("file")
            if not isinstance(upload, UploadFile):
                raise Refused(400, "no file: send your lesson's file in the form field 'file'")
            data = await upload.read(cap + 1)
            wire_name = upload.filename
        finally:
            await form.close()
        check_upload(data, cap)
        try:
            file = _store(uploads, service.lesson.name + upload_suffix(data, wire_name), data)
        except OSError:  # the service's own trouble (out of descriptors, a full disk): never the file's
            raise too_busy() from None
        try:  # off the event loop: a notebook's intake reads and parses it, and nobody waits on it
            intake = await run_in_threadpool(open_submission, file, service.lesson.filename)
        except IntakeError as err:
            shutil.rmtree(file.parent, ignore_errors=True)
            if err.kind is Refusal.UNFINISHED:  # the machine could not read it just now
                raise too_busy() from None
            raise Refused(400, err.message) from None
        id_ = queue.add(student, str(file), intake.sha256)
        wake.set()
        return JSONResponse({"id": id_, "status": State.QUEUED.value}, status_code=202)

    async def listing(request: Request) -> JSONResponse:
        student = caller(request)
        return JSONResponse({"submissions": [_summary(s) for s in queue.of(student, LISTED)]})

    async def one(request: Request) -> JSONResponse:
        student = caller(request)
        submission = queue.get(submission_id(request.path_params["id"]), student)
        if submission is None:
            raise Refused(404, "there is no such submission")
        if submission.state is not State.DONE:
            return JSONResponse({"id": submission.id, "status": submission.state.value})
        if submission.report:
            return JSONResponse(json.loads(submission.report))
        return JSONResponse({"id": submission.id, "status": "done", "problem": submission.message})

    async def report_page(request: Request) -> Response:
        student = caller(request)
        submission = queue.get(submission_id(request.path_params["id"]), student)
        if submission is None or not submission.report:
            raise Refused(404, "there is no report for this submission (yet)")
        page = to_html(from_dict(json.loads(submission.report)), heading=f"Submission {submission.id}")
        headers = {"Content-Security-Policy": REPORT_POLICY, "X-Content-Type-Options": "nosniff"}
        return Response(page, media_type="text/html", headers=headers)

    async def the_class(request: Request) -> JSONResponse:
        the_instructor(request)
        counts, rows = queue.counts(), {row.student: row for row in book.rows()}
        listed = []
        for student, _ in students:
            line: dict = {
                "student": student,
                "submissions": counts.get(student, 0),
                "status": "no submission",
            }
            row = rows.get(student)
            if row is not None:
                score = None if row.standing.pending else row.score
                line.update(status=row.standing.value, score=score, max_score=row.max_score)
            listed.append(line)
        return JSONResponse({"lesson": service.lesson.name, "students": listed})

    async def class_csv(request: Request) -> Response:
        the_instructor(request)
        try:
            layout = Layout(request.query_params.get("layout", "plain"))
        except ValueError:
            raise Refused(400, f"no such layout; choose {', '.join(x.value for x in Layout)}") from None
        written = table(book.rows(), book.about()[1], Export(layout=layout), lesson=service.lesson.name)
        out = io.StringIO()
        writer = csv.writer(out, quoting=csv.QUOTE_ALL if written.quote_all else csv.QUOTE_MINIMAL)
        writer.writerow(written.header)
        writer.writerows(written.rows)
        disposition = f'attachment; filename="{service.lesson.name}-{layout.value}.csv"'
        return Response(out.getvalue(), media_type="text/csv", headers={"Content-Disposition": disposition})

    async def refused(request: Request, err: Refused) -> JSONResponse:
        extra = {"WWW-Authenticate": "Bearer"} if err.status == 401 else {}
        if err.status == 503:
            extra["Retry-After"] = str(BUSY_SECONDS)
        return _error(err.status, err.message, **extra)

    async def http_error(request: Request, err: HTTPException) -> JSONResponse:
        message = {404: "no such page", 405: "this address does not take that method"}.get(
            err.status_code, one_line(str(err.detail))
        )
        return _error(err.status_code, message)

    async def failed(request: Request, err: Exception) -> JSONResponse:
        print(f"grader: serve: {type(err).__name__}: {one_line(str(err))[:300]}", file=sys.stderr)
        return _error(500, "the service failed on this request; this is not your fault: try again")

    return Starlette(
        routes=[
            Route("/", page("student.html", "text/html")),
            Route("/instructor", page("instructor.html", "text/html")),
            Route("/service.js", page("service.js", "text/javascript")),
            Route("/service.css", page("service.css", "text/css")),
            Route("/health", health),
            Route("/api/submissions", submit, methods=["POST"]),
            Route("/api/submissions", listing, methods=["GET"]),
            Route("/api/submissions/{id}", one, methods=["GET"]),
            Route("/api/submissions/{id}/report.html", report_page, methods=["GET"]),
            Route("/api/class", the_class, methods=["GET"]),
            Route("/api/class.csv", class_csv, methods=["GET"]),
        ],
        exception_handlers={Refused: refused, HTTPException: http_error, Exception: failed},
    )


#: Connections one address may hold open at once: a browser opens six, a student's ``check
#: --server`` one; those beyond are closed as they open.
PER_ADDRESS = 32


def connection_budget() -> int:
    """Connections the service holds open at once, all addresses together: half the file
    descriptors it may open (after raising its own limit to the most it is allowed), so that
    the other half is always there for storing uploads, the gradebook and the grading."""
    try:
        import resource
    except ImportError:  # Windows: no such limit to read
        return 512
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 65536 if hard == resource.RLIM_INFINITY else min(hard, 65536)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError):
            pass
    return max(16, (65536 if soft == resource.RLIM_INFINITY else soft) // 2)


def client_key(host: str) -> str:
    """What the per-address cap counts a client under: its IPv4 address, or its IPv6 address's
    /64 (one household's, or one machine's, network: an address of its own for each connection
    is free there)."""
    try:
        address = ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return host
    if address.version == 6:
        if address.ipv4_mapped is not None:  # an IPv4 client of a dual-stack socket
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


def _protocol(seconds: float, budget: int, per_address: int = PER_ADDRESS) -> type[H11Protocol]:
    """uvicorn's HTTP/1.1 with a time limit on a request's head: a connection that has not sent
    a whole request line and its headers ``seconds`` after it opened (or after its last answer)
    is closed. uvicorn has no such limit: a client sending a byte now and then, without any
    token, kept its connection, and enough of them took every file descriptor the service has.

    And with a cap on the connections held open: at most ``per_address`` from one address and
    ``budget`` in all; one more is closed as soon as it opens. Without it one client opening
    connections faster than the time limit closed them took every descriptor: uploads failed
    ("could not be read (Too many open files)", the file blamed) and every refused connection
    wrote a traceback to the log."""
    # address -> connections open, and all of them ("" keys the total: no address is empty
    # once made a key); one event loop: no lock needed
    held: dict[str, int] = {"": 0}

    class Protocol(H11Protocol):
        counted: str | None = None

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            address = client_key(self.client[0] if self.client else "?")
            if held.get(address, 0) >= per_address or held[""] >= budget:
                transport.abort()  # its descriptor is given back at once; nothing is answered
                return
            held[address] = held.get(address, 0) + 1
            held[""] += 1
            self.counted = address
            self._arm()

        def connection_lost(self, exc) -> None:
            if self.counted is not None:
                held[""] -= 1
                held[self.counted] -= 1
                if not held[self.counted]:
                    del held[self.counted]
                self.counted = None
            super().connection_lost(exc)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()

        def _arm(self) -> None:
            self.loop.call_later(seconds, self._late, self.cycle)

        def _late(self, cycle) -> None:
            if self.cycle is cycle and not self.transport.is_closing():  # no request began since
                self.transport.close()

    return Protocol


def _store(uploads: Path, name: str, data: bytes) -> Path:
    """Write an upload to a fresh folder of its own, under ``name`` (the service's, never the
    sender's); its path."""
    folder = uploads / secrets.token_hex(12)
    folder.mkdir(mode=0o700)
    file = folder / name
    fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return file


def _summary(submission) -> dict:
    """One line of a student's list of submissions."""
    line: dict = {
        "id": submission.id,
        "status": submission.state.value,
        "received_at": submission.received_at,
    }
    if submission.report:
        report = json.loads(submission.report)
        line.update(score=report.get("score"), max_score=report.get("max_score"))
    return line


def main(
    *,
    lesson: Lesson,
    settings: Settings,
    data: Path,
    roster: Path | None,
    roster_key: str = "student",
    host: str = "127.0.0.1",
    port: int = 8000,
    jobs: int | None = None,
    per_minute: int,
    max_upload: int,
    upload_seconds: float = UPLOAD_SECONDS,
    cluster=None,
) -> int:
    """Serve ``lesson`` until interrupted (Ctrl-C or SIGTERM); 0 then. With ``cluster``
    (:class:`grader.commands.cluster.Cluster`, connected), the queue is graded on its workers,
    ``jobs`` submissions at once (default: two for each worker thread); else here (default 1)."""
    missing = processes_missing()
    if missing:
        raise IsolationRefused(f"serve runs on Linux and macOS ({missing} is missing here)")
    data = Path(data).absolute()  # as given, from where the command started; its gradings need it whole
    data.mkdir(parents=True, exist_ok=True)
    settings = settle(settings, lesson.private)
    isolation = settings.level
    service = Service(
        data=data,
        lesson=lesson,
        settings=settings,
        isolation=isolation,
        max_upload=max_upload,
        per_minute=per_minute,
        upload_seconds=upload_seconds,
        suite=suite_hash(lesson, settings, isolation=isolation),
    )
    book = Gradebook(service.database)
    book.describe(lesson.name, settings.exercises or lesson.exercises)  # for export and the class page
    book.close()
    queue = Queue(service.database)
    try:
        if instructor(queue, service.instructor_token):
            print(f"grader: the instructor's token is in {service.instructor_token}", file=sys.stderr)
        added = enrol(queue, service.tokens, list(read_roster(roster, roster_key).ids)) if roster else []
        if not queue.students():
            raise UsageError("the service has no students yet: give --roster, a CSV with a column 'student'")
        again = queue.recover()
    finally:
        queue.close()
    if added:
        print(
            f"grader: {len(added)} new student(s), their tokens appended to {service.tokens}", file=sys.stderr
        )
    if again:
        print(f"grader: {again} submission(s) whose grading was cut short are queued again", file=sys.stderr)
    if cluster is not None:  # its workers checked, before anything is served
        jobs = cluster.start(
            lesson=lesson, settings=settings, isolation=isolation, suite=service.suite, jobs=jobs
        )
        print(f"grader: grading on the cluster at {cluster.address}, {jobs} at once", file=sys.stderr)
    listener = socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
    workers = Workers(service, jobs or 1, cluster)
    app = application(service, workers.wake)
    where = f"http://{host if ':' not in host else f'[{host}]'}:{listener.getsockname()[1]}"
    print(f"grader: serving {lesson.name} at {where}/ (Ctrl-C stops)", flush=True)
    if host not in ("127.0.0.1", "::1", "localhost"):
        print("grader: tokens travel in clear over HTTP: put the service behind HTTPS", file=sys.stderr)
    workers.start()
    try:
        budget = connection_budget()
        config = uvicorn.Config(
            app,
            http=_protocol(service.upload_seconds, budget),
            # how many waiting connections are taken at once, before any is looked at (and the
            # ones over the cap closed): uvicorn's 2,048 took every descriptor in one go
            backlog=max(8, min(128, budget // 4)),
            log_level="warning",
            access_log=False,
        )
        uvicorn.Server(config).run(sockets=[listener])
    finally:
        workers.close()
        listener.close()
    return 0
