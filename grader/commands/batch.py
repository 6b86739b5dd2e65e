"""``batch``: grade a whole class, in parallel, into a gradebook.

    python -m grader batch DIR --out gradebook.csv [--jobs N]

DIR holds one folder per student (the folder name is the student id) with the
lesson's file, ``NAME.py`` (or a single notebook), inside. Each submission is taken in
(:func:`grader.core.intake.open_submission`: found, read once and hashed) here, then
graded, sandboxed, several at a time, by long-lived grading processes
(``grade-stream``) that load Python, pytest and the checks only once and fork a
child for each submission (:mod:`grader.commands.zygote`); they receive the
absolute path and the hash, and grade only that very source. Results go to
``gradebook.sqlite`` beside the CSV (the source of truth, one transaction per
submission), then to the CSV, and to one JSON and one text report per
student in ``gradebook_reports/`` (the text is the one ``grade`` prints for the same file), and
to the class report beside the CSV (``gradebook_class_report.html`` for ``gradebook.csv``,
:mod:`grader.formats.class_report`).
Running the same command again grades only what is new, has changed, or got no grade last time;
``export`` and ``report`` (:mod:`grader.commands.export`) write the same files from the
gradebook alone, grading nothing.

A mistake in the lesson met while grading (a check that could not run, a reference that does
not load) gives the students it touched the standing ``lesson_error``, with no number in any
export, and the batch says where the mistake is and exits with :data:`LESSON_ERROR_EXIT`; a
picture or a diagnosis that could not be made is noted and the grade stands.

A grade that a wall-clock guard touched (the machine was too busy for some check, see
:mod:`grader.sandbox.clock`) is no grade: such submissions are graded again at the end of
the run, one at a time (:data:`AGAIN_JOBS`), and stay ``unfinished`` in the gradebook, with
no number in any export, if they still do not finish.

The grading processes keep their temporary files in one folder the batch makes
and removes when it ends, finished or interrupted.

With ``--cluster`` the submissions are graded on the workers of a Dask cluster instead
(:mod:`grader.commands.cluster`, given to :func:`main` as ``cluster``); everything else here
is the same.
"""

from __future__ import annotations

import json
import os
import queue
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unicodedata
from collections import defaultdict
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path

from ..core.errors import AuthorError, IsolationRefused
from ..core.fingerprint import fingerprint
from ..core.inert import file_stem, one_line, student_name, student_text
from ..core.installed import IMPORTED_FROM
from ..core.intake import IntakeError, Refusal, open_submission
from ..core.lesson import Lesson
from ..core.results import LESSON_ERROR_EXIT, UNFINISHED_EXIT, ExerciseResult, Report, Standing
from ..core.settings import Isolation, Settings, encoded
from ..engine.pytested import suite_points
from ..engine.submission import reference_of
from ..engine.upkeep import DECIDING_PACKAGES
from ..formats.gradebook import Gradebook, Row
from ..formats.html import to_html
from ..formats.json_report import from_dict, to_dict
from ..formats.junit import class_junit
from ..formats.lms import Export
from ..formats.text import lesson_errors, to_text
from ..sandbox.clock import WALL_FACTOR
from ..sandbox.wardens import processes_missing, settle
from .export import class_report_of, write_class_report
from .stopping import Stopped
from .stream import Verdict, read_answer

#: Seconds a grade process may take beyond the wall-clock guard of a submission (start-up,
#: loading the checks) before the batch gives up on it; the submission is then unfinished.
GRACE = 60.0
#: Grading processes that grade the unfinished submissions again at the end of a run: one, so
#: that the batch itself loads the machine as little as it can.
AGAIN_JOBS = 1
#: Seconds a grading process is given to end cleanly (and remove its sandbox) before it is killed.
GOODBYE = 5.0
#: Student ids that need no comment: letters, digits and . _ - @ +
PLAIN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]*$")


@dataclass(frozen=True)
class Entry:
    """One student's folder as found in DIR."""

    student: str
    file: Path
    """The submission's file, absolute when it was taken in."""
    file_hash: str
    """The sha256 of the source taken in, or when there is none the refusal's name (the
    gradebook keeps it so)."""
    problem: str = ""
    """Why it cannot be graded (the intake's refusal)."""
    refusal: Refusal | None = None
    shown: str = ""
    """The file as the batch's user named it: the folder given, the student's, the file."""


def suite_hash(lesson: Lesson, settings: Settings, *, isolation: Isolation) -> str:
    """A fingerprint of everything that decides a grade besides the student's file: the lesson's
    files, the grader's own, the settings, the isolation level and the versions that matter (see
    :mod:`grader.core.fingerprint`). Computed once per batch."""
    return fingerprint(lesson, settings, isolation=isolation.value, packages=DECIDING_PACKAGES)


def stream_options(lesson: Lesson, settings: Settings, isolation: Isolation) -> list[str]:
    """The command line of a ``grade-stream`` process that grades as ``settings`` say, at
    ``isolation`` (a level already chosen, never ``auto``): the settings go whole, typed
    (:func:`grader.core.settings.encoded`), with the level asked for by name."""
    return [
        "--course",
        str(lesson.root),
        "--lesson",
        lesson.name,
        "--settings",
        encoded(replace(settings, isolation=isolation, level=None)),
    ]


def discover(folder: Path, filename: str) -> tuple[list[Entry], list[str]]:
    """The submissions in ``folder`` and remarks about what looks odd there.

    A student's id is the folder's name made safe (:func:`grader.core.inert.student_name`):
    bytes that are not UTF-8, control characters and the like are written out, and two
    folders never share an id. Anything that goes wrong while a folder is taken in makes
    that student's entry, never the end of the batch."""
    entries, remarks = [], []
    seen: dict[str, list[str]] = defaultdict(list)
    for path in sorted(folder.iterdir(), key=lambda p: os.fsencode(p.name)):
        name = student_name(path.name)
        if name.startswith("."):
            remarks.append(f"{_quoted(name)}: hidden, skipped")
            continue
        if path.is_symlink():  # it may lead anywhere, the reference included: never followed
            seen[_look(name)].append(name)
            why = "the student's folder is a symbolic link, and the grader follows no links"
            entries.append(Entry(name, path, Refusal.UNREADABLE.value, why, Refusal.UNREADABLE))
            continue
        if not path.is_dir():
            remarks.append(f"{_quoted(name)}: not a folder, skipped")
            continue
        if not PLAIN_ID.match(name):
            remarks.append(
                f"{_quoted(name)}: an unusual student id (spaces or special characters); graded as is"
            )
        seen[_look(name)].append(name)
        try:
            intake = open_submission(path, filename)
        except IntakeError as err:
            entries.append(Entry(name, path, err.kind.value, err.message, err.kind))
            continue
        except Exception as err:  # noqa: BLE001 - ours, not the student's: this student's row says so
            entries.append(Entry(name, path, "failed", _ours("taking the submission in", err)))
            continue
        entries.append(Entry(name, intake.path, intake.sha256, shown=intake.shown))
    for names in seen.values():
        if len(names) > 1:
            remarks.append(
                f"{' and '.join(_quoted(n) for n in names)} look like the same student; each graded on its own"
            )
    return entries, remarks


def _look(name: str) -> str:
    """What two ids that look alike have in common (for a remark only: each is graded on its
    own, and a roster matches ids by a stricter rule, :mod:`grader.formats.lms`)."""
    return unicodedata.normalize("NFKC", name).casefold()


def _ours(doing: str, err: BaseException) -> str:
    """The message of a row whose grading failed on the grader's side."""
    return student_text(
        f"the grader failed while {doing} ({type(err).__name__}: {str(err)[:200]}); "
        "this is not the student's fault: report it, and run the batch again"
    )


def _quoted(text: str) -> str:
    """A student id (or any text from a student) for the terminal: quoted, escapes shown, not run."""
    return f"'{one_line(text)}'"


def lane_cores(jobs: int) -> list[int | None]:
    """The core each of ``jobs`` grading processes is kept on, in turn over the cores this
    process may use, where there are at least as many jobs as cores: a job, its sandbox and
    everything in it then share one core, and two jobs never take turns on one while another
    idles. None for each where there are fewer jobs than cores (each submission's calls are
    then kept on whichever core its job runs on at the time, :mod:`grader.sandbox.cores`, so
    that the machine's other work is not crowded onto the first cores), only one core, or no
    way to pin a process to a core."""
    try:
        cores = sorted(os.sched_getaffinity(0))
    except AttributeError:
        cores = []
    pinned = len(cores) > 1 and jobs >= len(cores)
    return [cores[job % len(cores)] if pinned else None for job in range(jobs)]


def request_of(entry: Entry) -> dict:
    """The request a ``grade-stream`` process grades ``entry`` from (see :mod:`.stream`)."""
    return {"path": str(entry.file), "sha256": entry.file_hash, "shown": entry.shown}


def answered(entry: Entry, line: bytes) -> tuple[Entry, Report | None, str]:
    """(entry, its report or None, why there is none) from the answer line a ``grade-stream``
    process gave, read as a text from the other side (:func:`.stream.read_answer`)."""
    try:
        answer = read_answer(line)  # texts enter here
    except ValueError as err:
        return entry, None, f"the grader failed: its answer could not be read ({str(err)[:300]})"
    if answer.verdict is Verdict.GRADED:
        return entry, answer.report, ""
    if answer.verdict is Verdict.REFUSED:  # the file is not the one taken in, or no longer readable
        return entry, None, answer.message[:300]
    return entry, None, f"the grader failed: {answer.message[:300]}"


class Grader:
    """A long-lived ``grade-stream`` process: Python, pytest and the checks are loaded once, not
    per submission, and each submission is graded in a process forked from it
    (:mod:`grader.commands.zygote`)."""

    def __init__(self, options: list[str], cpu: int | None = None, environment: dict | None = None):
        self.options = options
        self.cpu = cpu  # the one core this process, its sandbox and everything in it run on
        self.environment = environment  # TMPDIR: the batch's own temporary folder
        self.proc: subprocess.Popen | None = None
        self.buffer = b""

    def _start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "grader", "grade-stream", *self.options],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=IMPORTED_FROM,  # where ``grader`` imports from; every path it is sent is absolute
            env=self.environment,
        )
        if self.cpu is not None:  # before it has a submission, hence a sandbox (which inherits it)
            try:
                os.sched_setaffinity(self.proc.pid, {self.cpu})
            except OSError:
                pass
        self.buffer = b""

    def grade(self, entry: Entry, limit: float, running: dict) -> tuple[Entry, Report | None, str]:
        """(entry, its report or None, why there is none)."""
        line, why = self.ask(request_of(entry), limit, running, entry.student)
        if line is None:
            return entry, None, why
        return answered(entry, line)

    def ask(self, request: dict, limit: float, running: dict, key: str) -> tuple[bytes | None, str]:
        """(the answer line to ``request``, '') or (None, why there is none); the process is in
        ``running`` under ``key`` while it grades."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        running[key] = self.proc
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
            return self._line(time.monotonic() + limit), ""
        except TimeoutError:
            self.close(interrupt=True)
            return None, f"{UNFINISHED}: grading took longer than {limit:g} s and was stopped"
        except (OSError, EOFError):
            self.close()
            return None, "the grader stopped while grading this submission"
        finally:
            running.pop(key, None)

    def _line(self, deadline: float) -> bytes:
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise EOFError
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def close(self, *, interrupt: bool = False) -> None:
        """End the grading process, cleanly if it can (see :func:`_end`)."""
        if self.proc is not None:
            _end([self.proc], interrupt=interrupt)
            self.proc.stdout.close()
            self.proc = None


#: How the reason for no report begins when a wall-clock guard stopped the grading.
UNFINISHED = "unfinished, the machine was too busy"
#: How a row begins whose grading a mistake in the lesson stopped.
LESSON = "the lesson has a mistake"


def _end(procs: list[subprocess.Popen], *, interrupt: bool) -> None:
    """End grading processes the way that leaves nothing behind.

    Each gets the end of its input (and, with ``interrupt``, SIGINT, which stops
    a submission being graded); a process that ends removes its sandbox and its
    temporary folders. Whatever has not ended after GOODBYE seconds is killed.
    """
    for proc in procs:
        if interrupt:
            proc.send_signal(signal.SIGINT)  # does nothing to a process that has ended
        try:
            proc.stdin.close()
        except (OSError, ValueError):
            pass  # it is gone, or another thread is closing it
    deadline = time.monotonic() + GOODBYE
    for proc in procs:
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 0))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _close_all(graders: queue.Queue) -> None:
    """End every grading process at once (each ends in its own time, at most GOODBYE seconds)."""
    idle = []
    while not graders.empty():
        idle.append(graders.get())
    _end([g.proc for g in idle if g.proc is not None], interrupt=False)
    for grader in idle:
        grader.close()  # ended already: this only lets go of its pipes


class Progress:
    """A one-line progress bar on stderr (a line per submission when stderr is not a terminal)."""

    def __init__(self, total: int):
        self.total, self.done, self.problems = total, 0, 0
        self.start = time.monotonic()
        self.tty = sys.stderr.isatty()

    def step(self, student: str, note: str) -> None:
        self.done += 1
        width = 30
        filled = int(width * self.done / max(self.total, 1))
        rate = self.done / max(time.monotonic() - self.start, 1e-9) * 60
        bar = f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}  {rate:.0f}/min"
        student, note = one_line(student), one_line(note)
        if self.tty:
            sys.stderr.write(f"\r{bar}  {student[:20]:<20} {note[:20]:<20}")
            if self.done == self.total:
                sys.stderr.write("\n")
        else:
            sys.stderr.write(f"{bar}  {student}: {note}\n")
        sys.stderr.flush()


def main(
    *,
    lesson: Lesson,
    settings: Settings,
    folder: Path,
    out: Path,
    jobs: int | None = None,
    export: Export | None = None,
    junit: Path | None = None,
    cluster=None,
) -> int:
    """Grade every submission in ``folder`` that is new or changed; write the gradebook, its CSV
    in ``export``'s layout (plain by default) and, with ``junit``, the class as JUnit XML.

    With ``cluster`` (:class:`grader.commands.cluster.Cluster`), the submissions are graded on
    its workers instead of here; everything else (intake, resume, gradebook, reports) is the same."""
    folder, out = Path(folder), Path(out)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder of submissions")
    missing = processes_missing()  # its grading processes are read through select(), as pipes
    if missing:
        raise IsolationRefused(
            f"batch runs on Linux and macOS ({missing} is missing here); grade one file with grade"
        )
    settings = settle(settings, lesson.private)  # refused here, once, not for every student
    isolation = settings.level
    limits = settings.limits
    suite = suite_hash(lesson, settings, isolation=isolation)
    if cluster is not None:  # its workers checked, before anything is written
        jobs = cluster.start(lesson=lesson, settings=settings, isolation=isolation, suite=suite, jobs=jobs)
    jobs = jobs or os.cpu_count() or 1
    book = Gradebook(out.with_suffix(".sqlite"))
    book.describe(lesson.name, lesson.exercises)  # for an export or a class report made later
    reports = out.with_name(out.stem + "_reports")
    reports.mkdir(parents=True, exist_ok=True)

    entries, remarks = discover(folder, lesson.filename)
    points = suite_points(lesson)
    faults: dict[str, None] = {}  # the lesson's mistakes met, in the order met
    failed_lesson = []  # the students whose checks a mistake of the lesson kept from running
    try:
        reference_of(lesson)  # a reference that does not load grades no one: said once, here
        stopped = ""
    except AuthorError as err:
        faults.update(dict.fromkeys(err.places))
        stopped = f"{LESSON}: {'; '.join(err.places)}"
    todo = []
    for entry in entries:
        if not book.is_current(entry.student, entry.file_hash, suite):
            todo.append(entry)
        elif not (reports / f"{file_stem(entry.student)}.txt").exists():  # killed between database and files
            report, message = book.stored(entry.student)
            try:
                _write_reports(reports, entry, from_dict(json.loads(report)) if report else None, message)
            except Exception:  # noqa: BLE001 - a row that cannot be read again is graded again
                todo.append(entry)
    print(
        f"{len(entries)} submissions in {folder}: {len(todo)} to grade, "
        f"{len(entries) - len(todo)} unchanged since the last run",
        file=sys.stderr,
    )
    options = stream_options(lesson, settings, isolation)
    progress = Progress(len(todo))
    failures: list[str] = []
    running: dict[str, subprocess.Popen] = {}
    interrupted = False
    stop = threading.Event()  # set once interrupted: no submission is started after that
    scratch = Path(tempfile.mkdtemp(prefix="grader-batch-"))  # the grading processes' TMPDIR
    environment = {**os.environ, "TMPDIR": str(scratch)}
    graders: queue.Queue[Grader] = queue.Queue()

    def grader_for(cpu: int | None):
        return Grader(options, cpu, environment) if cluster is None else cluster.grader()

    for cpu in lane_cores(jobs):
        graders.put(grader_for(cpu))
    limit = WALL_FACTOR * limits.total_timeout + GRACE

    def grade(entry: Entry):
        if stop.is_set():
            return entry, None, "interrupted"
        grader = graders.get()
        try:
            return grader.grade(entry, limit, running)
        except Exception as err:  # noqa: BLE001 - ours: this student's row says so, the batch goes on
            grader.close()
            return entry, None, _ours("grading this submission", err)
        finally:
            graders.put(grader)

    def grade_all(entries: list[Entry], pool: ThreadPoolExecutor) -> list[Entry]:
        """Grade and store ``entries``; the ones left unfinished."""
        unfinished, pending = [], set()
        for entry in entries:
            if entry.problem:
                _record(book, reports, entry, suite, None, entry.problem, points, failures)
                progress.step(entry.student, entry.problem)
            elif stopped:  # nothing can be graded: each student's row says why, no number
                _record(book, reports, entry, suite, None, stopped, points, [])
                progress.step(entry.student, LESSON)
            else:
                pending.add(pool.submit(grade, entry))
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                entry, report, error = future.result()
                if report is not None:
                    faults.update(dict.fromkeys(f.text() for f in report.lesson_errors))
                    if report.lesson_failed:
                        failed_lesson.append(entry.student)
                if _unfinished(report, error):  # listed at the end if it stays so
                    error = _record(book, reports, entry, suite, report, error, points, [])
                    unfinished.append(entry)
                else:
                    error = _record(book, reports, entry, suite, report, error, points, failures)
                note = error or (
                    (LESSON if report.lesson_failed else "unfinished")
                    if report.unfinished
                    else f"{report.score:g}/{report.max_score:g}"
                )
                progress.step(entry.student, note)
        return unfinished

    signals = Stopped()
    pool = ThreadPoolExecutor(max_workers=jobs)
    left: list[Entry] = []
    try:
        signals.catch()  # SIGTERM from here on ends the batch as Ctrl-C does
        again = grade_all(todo, pool)
        if again:  # the machine was too busy for them: once more, one at a time
            print(f"\ngrading {len(again)} unfinished submission(s) again, one at a time", file=sys.stderr)
            pool.shutdown(wait=True)
            _close_all(graders)
            for _ in range(AGAIN_JOBS):
                graders.put(grader_for(None))
            pool = ThreadPoolExecutor(max_workers=AGAIN_JOBS)
            progress = Progress(len(again))
            left = grade_all(again, pool)
            for entry in left:
                failures.append(
                    f"{_quoted(entry.student)}: unfinished, the machine was too busy (run again later)"
                )
    except KeyboardInterrupt:
        interrupted = True
        signals.hold()  # a second Ctrl-C or SIGTERM no longer cuts what follows short
        stop.set()
        _end(list(running.values()), interrupt=True)  # their submissions are graded again next time
        if cluster is not None:
            cluster.cancel()  # the tasks still on its workers
    finally:
        signals.hold()
        try:
            pool.shutdown(wait=True, cancel_futures=True)
            _close_all(graders)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    try:
        written, class_page = _write_files(book, out, lesson, export, junit)
    finally:
        signals.release()
    interrupted = interrupted or signals.caught
    book.close()
    _summary(len(written.rows), out, reports, entries, remarks + list(written.notes), failures, interrupted)
    print(f"class report: {class_page}")
    if faults:  # once for the class, at the lesson's files and lines
        print(lesson_errors(list(faults)))
    if interrupted:
        return 128 + int(signals.number)
    if stopped or failed_lesson:  # a picture or a diagnosis alone leaves every grade standing
        return LESSON_ERROR_EXIT
    unread = any(entry.refusal is Refusal.UNFINISHED for entry in todo)  # the machine's, for a moment
    return UNFINISHED_EXIT if left or unread else 0


def _write_files(book, out: Path, lesson: Lesson, export: Export | None, junit: Path | None):
    """The CSV, the class report beside it and, when asked, the JUnit XML; (what the CSV holds,
    the class report's path)."""
    written = book.export_csv(out, lesson.exercises, export, lesson=lesson.name)
    class_page = class_report_of(out)
    write_class_report(book, class_page)
    if junit is not None:
        students = [
            (
                row.student,
                from_dict(json.loads(row.report)) if row.report else None,
                row.standing.value,
                row.message,
            )
            for row in book.rows()
        ]
        Path(junit).write_text(class_junit(students, lesson=lesson.name), encoding="utf-8")
        print(f"JUnit XML of the class: {junit}", file=sys.stderr)
    return written, class_page


def _record(book, reports, entry, suite, report, error, points, failures: list[str]) -> str:
    """Store one student (:func:`_store`); whatever fails on the way becomes that student's row,
    saying so, and the batch goes on. Returns why there is no grade ('' when there is one)."""
    try:
        _store(book, reports, entry, suite, report, error, points)
    except Exception as err:  # noqa: BLE001 - ours: this student's row says so, the batch goes on
        error = _ours("recording the grade", err)
        try:
            _store(book, reports, entry, suite, None, error, points)
        except Exception as again:  # noqa: BLE001 - the database itself fails: said at the end
            error = _ours("recording the grade", again)
    if error and error != entry.problem:  # a problem found when taking it in is listed already
        failures.append(f"{_quoted(entry.student)}: {one_line(error)}")
    return error


def _unfinished(report: Report | None, error: str) -> bool:
    """Whether a wall-clock guard touched this grading (its report's checks, or the batch's own)."""
    return report.busy if report is not None else error.startswith(UNFINISHED)


def _store(
    book, reports: Path, entry: Entry, suite: str, report: Report | None, error: str, points: dict
) -> None:
    """Record one student: the database first, then the report files."""
    row = gradebook_row(entry, suite, report, error, points)
    book.record(row)
    _write_reports(reports, entry, report, error)


def gradebook_row(entry: Entry, suite: str, report: Report | None, error: str, points: dict) -> Row:
    """The gradebook's row for ``entry``: its report's standing and scores, or, without a report,
    why (``error``) and 0 out of ``points`` (exercise -> points)."""
    if report is not None:
        return Row(
            entry.student,
            Standing.LESSON_ERROR
            if report.lesson_failed
            else Standing.UNFINISHED
            if report.unfinished
            else Standing.GRADED,
            entry.file_hash,
            suite,
            report.score,
            report.max_score,
            report.exercises,
            json.dumps(to_dict(report)),
            report.problem,
        )
    else:
        standing = Standing(entry.refusal.value) if entry.refusal is not None else Standing.FAILED
        if _unfinished(None, error):
            standing = Standing.UNFINISHED
        if error.startswith(LESSON):
            standing = Standing.LESSON_ERROR
        zero = tuple(ExerciseResult(n, 0, points[n]) for n in points)
        return Row(entry.student, standing, entry.file_hash, suite, 0, sum(points.values()), zero, "", error)


def _write_reports(reports: Path, entry: Entry, report: Report | None, error: str) -> None:
    """The student's JSON, text and HTML reports: each the one ``grade`` prints for the file."""
    name = file_stem(entry.student)
    if report is not None:
        (reports / f"{name}.json").write_text(json.dumps(to_dict(report), indent=2) + "\n", encoding="utf-8")
        (reports / f"{name}.html").write_text(to_html(report), encoding="utf-8")
        text = to_text(report)
    else:
        text = f"Report for {entry.student}\n\nNo grade: {error}\n"
    (reports / f"{name}.txt").write_text(text, encoding="utf-8")


def _summary(rows, out, reports, entries, remarks, failures, interrupted) -> None:
    print(
        f"\ngradebook: {out} ({rows} students), database {out.with_suffix('.sqlite')}, reports in {reports}/"
    )
    if interrupted:
        print("interrupted: the grades finished so far are saved; run the same command to grade the rest")
    notes = [f"{_quoted(e.student)}: {one_line(e.problem)}" for e in entries if e.problem]
    notes += remarks + failures
    if notes:
        print("to look at:")
        for note in notes:
            print(f"  - {note}")
