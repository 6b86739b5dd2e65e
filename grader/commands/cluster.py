"""``batch --cluster ADDRESS``: the class graded on the workers of a Dask cluster.

    python -m grader batch DIR --cluster local:4          # an embedded LocalCluster, 4 workers
    python -m grader batch DIR --cluster tcp://HOST:8786  # a scheduler already running

Only where a submission is graded changes (:func:`grader.commands.batch.main` does the rest:
intake, resume, gradebook, reports, class report). The driver takes each submission in as a local
batch does, reads it again through the same intake when its turn comes, and sends its source
(bytes, never a path) as one task. On the worker, :class:`Readiness` (a worker plugin) has
checked once that the worker grades as the driver would: the same grader version, the same
lesson suite (:func:`grader.commands.batch.suite_hash`, over the worker's own copy of the course,
``$GRADER_COURSE`` or the driver's path) and a sandbox at the batch's isolation level. The task
writes the source to a private temporary folder and asks a ``grade-stream`` process of that
worker thread to grade it (a fresh sandboxed child per submission, as locally); it returns the
answer line as text, which the driver reads as it reads a local one
(:func:`grader.commands.batch.answered`). Workers write nothing shared; the driver alone writes
the gradebook, one row per student, whether a task ran once or twice (a worker that died after
finishing has its tasks run again by the scheduler: the driver records each submission's result once).

Dask is an extra (``pip install -e '.[cluster]'``); only this module imports it.
"""

from __future__ import annotations

import itertools
import os
import shutil
import sys
import tempfile
import threading
from concurrent.futures import CancelledError
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path

from distributed import Client, KilledWorker, LocalCluster, WorkerPlugin, get_worker

from .. import __version__
from ..core.errors import IsolationRefused, LessonError
from ..core.inert import student_text
from ..core.intake import IntakeError, Refusal, open_submission
from ..core.lesson import COURSE_VARIABLE, Lesson, find_course
from ..core.results import Report
from ..core.settings import Isolation, Settings
from ..sandbox.wardens import choose_level, processes_missing
from .batch import GRACE, UNFINISHED, Entry, Grader, answered, stream_options, suite_hash
from .stream import CHANGED

#: The worker plugin's name on the cluster.
PLUGIN = "grader-readiness"
#: Seconds to wait for a scheduler to answer, or for an embedded cluster's workers to start.
CONNECT = 30
#: Tasks waiting per worker thread: one being graded and one ready, so that no thread waits for the driver.
AHEAD = 2


class ClusterRefused(IsolationRefused):
    """No worker of the cluster can grade this batch (each says why)."""


class Readiness(WorkerPlugin):
    """Checks, when a worker joins (or the plugin is registered), that it grades as the driver
    does; keeps the worker's ``grade-stream`` processes (one per worker thread) and their
    temporary folder, removed when the plugin is."""

    def __init__(
        self, *, version: str, lesson: str, course: str, settings: Settings, isolation: str, suite: str
    ):
        self.version, self.lesson, self.course = version, lesson, course
        self.settings, self.isolation, self.suite = settings, isolation, suite
        self.refusal = "not checked yet"
        self.name = "?"
        self.options: list[str] = []
        self.filename = ""
        self.scratch: Path | None = None

    def setup(self, worker) -> None:
        self.name = worker.address
        self.graders: dict[int, Grader] = {}  # made here, on the worker: a lock is not sent
        self.lock = threading.Lock()
        try:
            self.refusal = self._check()
        except Exception as err:  # noqa: BLE001 - whatever it is, this worker does not grade
            self.refusal = f"it could not check itself ({type(err).__name__}: {str(err)[:200]})"
        if not self.refusal:
            # in the worker's own folder, which Dask removes, or purges at the next start on this
            # machine when the worker was killed
            self.scratch = Path(tempfile.mkdtemp(prefix="grader-", dir=worker.local_directory))

    def _check(self) -> str:
        """Why this worker cannot grade the batch ('' when it can)."""
        if __version__ != self.version:
            return f"it runs grader {__version__}, the batch grader {self.version}"
        given = None if os.environ.get(COURSE_VARIABLE) else Path(self.course)
        try:
            lesson = find_course(given).lesson(self.lesson)
        except LessonError as err:
            return f"it has no lesson {self.lesson!r} ({err})"
        missing = processes_missing()
        if missing:
            return f"it cannot run the sandbox ({missing} is missing)"
        isolation = Isolation(self.isolation)
        try:
            choose_level(isolation, lesson.private)
        except IsolationRefused as err:
            return f"its sandbox cannot isolate at level {isolation.value} ({err})"
        if suite_hash(lesson, self.settings, isolation=isolation) != self.suite:
            return (
                f"its lesson {lesson.name!r} (in {lesson.root}) or its grader differs from the batch's "
                "(another suite hash): give it the same course and grader"
            )
        self.options = stream_options(lesson, self.settings, isolation)
        self.filename = lesson.filename
        return ""

    def teardown(self, worker) -> None:
        with self.lock:
            graders, self.graders = list(self.graders.values()), {}
        for grader in graders:
            grader.close()
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)

    def grade(self, source: bytes, sha256: str, shown: str, limit: float) -> dict:
        """The answer of this worker thread's ``grade-stream`` process to ``source``, as plain data."""
        with self.lock:
            grader = self.graders.get(threading.get_ident())
            if grader is None:
                environment = {**os.environ, "TMPDIR": str(self.scratch)}
                grader = self.graders[threading.get_ident()] = Grader(self.options, None, environment)
        folder = Path(tempfile.mkdtemp(dir=self.scratch))  # 0700: this submission's alone
        try:
            path = folder / self.filename
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(source)
            request = {"path": str(path), "sha256": sha256, "shown": shown}
            line, why = grader.ask(request, limit, {}, "")
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return {"line": line.decode("utf-8", "replace")} if line is not None else {"error": why}


def grade_on_worker(source: bytes, sha256: str, shown: str, limit: float) -> dict:
    """The task: one submission's source graded on the worker that runs it."""
    worker = get_worker()
    plugin = worker.plugins.get(PLUGIN)
    if not isinstance(plugin, Readiness):
        return {"refused": f"worker {worker.address} refuses: it was not checked for this batch"}
    if plugin.refusal:
        return {"refused": f"worker {worker.address} refuses: {plugin.refusal}"}
    return plugin.grade(source, sha256, shown, limit)


def parse_address(text: str) -> tuple[str, int | None]:
    """('local', workers or None) or ('tcp', the address) for ``--cluster``; ValueError otherwise."""
    if text == "local":
        return "local", None
    if text.startswith("local:"):
        count = text.removeprefix("local:")
        if count.isdigit() and int(count) > 0:
            return "local", int(count)
        raise ValueError(f"{text!r}: after local: comes a number of workers, such as local:4")
    if text.startswith("tcp://") and text.rpartition(":")[2].isdigit():
        return "tcp", None
    raise ValueError(f"{text!r} is no cluster address: give local, local:N or tcp://HOST:PORT")


class Cluster:
    """The driver's side: a connection to the cluster (a context manager), the plugin registered
    for one batch and removed after it, and the graders that send tasks."""

    def __init__(self, address: str):
        kind, count = parse_address(address)
        self.address = address
        self.local: LocalCluster | None = None
        self.client: Client | None = None
        self.kind, self.count = kind, count
        self.approved: list[str] = []
        self.refusals: list[str] = []
        self.filename = ""
        self.futures: set = set()
        self.lock = threading.Lock()
        self.numbers = itertools.count()

    def __enter__(self) -> Cluster:
        try:
            if self.kind == "local":
                self.local = LocalCluster(
                    n_workers=self.count or max(os.cpu_count() or 1, 1),
                    threads_per_worker=1,
                    processes=True,
                    host="127.0.0.1",
                    dashboard_address=None,
                    silence_logs=40,  # errors only
                )
                self.client = Client(self.local, timeout=CONNECT)
            else:
                self.client = Client(self.address, timeout=CONNECT)
        except (OSError, TimeoutError) as err:
            self.__exit__(None, None, None)
            raise ClusterRefused(f"no Dask scheduler answered at {self.address} ({str(err)[:200]})") from None
        return self

    def __exit__(self, *exc) -> None:
        if self.client is not None:
            try:
                if self.approved or self.refusals:
                    self.client.unregister_worker_plugin(PLUGIN)  # its teardown ends the workers' graders
            except Exception:  # noqa: BLE001 - a cluster already gone has nothing left to remove
                pass
            self.client.close()
        if self.local is not None:
            self.local.close()

    def start(
        self, *, lesson: Lesson, settings: Settings, isolation: Isolation, suite: str, jobs: int | None
    ) -> int:
        """Register the plugin, read every worker's check and say which refused; how many
        submissions to keep on the cluster at once (``jobs``, else AHEAD per worker thread)."""
        plugin = Readiness(
            version=__version__,
            lesson=lesson.name,
            course=str(lesson.root),
            settings=settings,
            isolation=isolation.value,
            suite=suite,
        )
        self.filename = lesson.filename
        self.client.register_plugin(plugin, name=PLUGIN)
        checks = self.client.run(_refusal)
        for worker, refusal in sorted(checks.items()):
            if refusal:
                self.refusals.append(f"worker {worker} refuses: {refusal}")
            else:
                self.approved.append(worker)
        for refusal in self.refusals:
            print(f"grader: {refusal}", file=sys.stderr)
        if not self.approved:
            raise ClusterRefused(
                f"no worker at {self.address} can grade this batch"
                + (f" ({len(checks)} refused, each said why above)" if checks else " (it has no worker)")
            )
        threads = self.client.nthreads()
        return jobs or AHEAD * sum(threads.get(w, 1) for w in self.approved)

    def grader(self) -> RemoteGrader:
        return RemoteGrader(self)

    def cancel(self) -> None:
        """Cancel every task still on the cluster (interrupted)."""
        with self.lock:
            futures, self.futures = list(self.futures), set()
        if futures and self.client is not None:
            self.client.cancel(futures)


def _refusal(dask_worker=None) -> str:
    plugin = (dask_worker or get_worker()).plugins.get(PLUGIN)
    return plugin.refusal if isinstance(plugin, Readiness) else "it has no grader plugin"


class RemoteGrader:
    """What :mod:`.batch` takes a grading process for: it grades one submission at a time, on
    the cluster."""

    proc = None  # no local process to end

    def __init__(self, cluster: Cluster):
        self.cluster = cluster

    def grade(self, entry: Entry, limit: float, running: dict) -> tuple[Entry, Report | None, str]:
        """(entry, its report or None, why there is none), as :meth:`.batch.Grader.grade`."""
        try:
            intake = open_submission(entry.file, self.cluster.filename)  # read again, as the local one is
        except IntakeError as err:
            if err.kind is Refusal.UNFINISHED:  # the machine's, for a moment: graded again later
                return entry, None, f"{UNFINISHED}: {err.message}"
            return entry, None, err.message
        if intake.sha256 != entry.file_hash:
            return entry, None, CHANGED
        cluster = self.cluster
        future = cluster.client.submit(
            grade_on_worker,
            intake.source,
            entry.file_hash,
            entry.shown,
            limit,
            key=f"grade-{next(cluster.numbers)}-{entry.file_hash[:16]}",
            workers=cluster.approved,
            allow_other_workers=False,
        )
        with cluster.lock:
            cluster.futures.add(future)
        try:
            # a task may wait behind one other on its worker, and run again if its worker dies
            result = future.result(timeout=3 * limit + GRACE)
        except FutureTimeout:
            future.cancel()
            return entry, None, f"{UNFINISHED}: the cluster did not grade it within {3 * limit + GRACE:g} s"
        except KilledWorker:
            return (
                entry,
                None,
                "the grader failed: the workers that took this submission died; run the batch again",
            )
        except CancelledError:
            return entry, None, "interrupted"
        finally:
            with cluster.lock:
                cluster.futures.discard(future)
            future.release()
        return read_result(entry, result)

    def close(self, *, interrupt: bool = False) -> None:
        pass


def read_result(entry: Entry, result) -> tuple[Entry, Report | None, str]:
    """A task's result, plain data from a worker, read as a local grading process's answer."""
    if isinstance(result, dict) and isinstance(result.get("line"), str):
        return answered(entry, result["line"].encode())
    for kind in ("error", "refused"):
        if isinstance(result, dict) and isinstance(result.get(kind), str):
            text = student_text(result[kind][:300])  # from the other side: made safe to show
            return entry, None, text if kind == "error" else f"the grader failed: {text}"
    return entry, None, "the grader failed: a worker's answer could not be read; run the batch again"
