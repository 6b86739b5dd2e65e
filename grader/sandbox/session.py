"""One submission's time in a sandbox: its worker, its watched calls, its limits.

The trusted side (this module, in the process that holds the checks, the
reference and the scores) hands the student's file to a keeper the sandbox's
warden starts for it (:mod:`grader.sandbox.wardens`), which forks a worker for it.
Calls go to the worker one at a time, straight from this process, which watches what each
one does to its arguments while the kernel holds the worker stopped (:mod:`.watching`);
answers come back in a format that cannot execute code (:mod:`grader.sandbox.inside.worker`). When the student's code calls another graded
function, the worker asks back and the reference runs here.

Limits: a limit of processor time per call and one per submission, counted on the
worker's own clock (the worker may start no process and no thread, so its processor time
is all the student's code used), plus the work done here for the call (the reference's, and
watching its arguments), read from outside (/proc) and enforced here: the worker is ended when it is over. A wall-clock guard far above them stops a call the machine did not let run;
that call is *unfinished*, not the student's failure (:mod:`.clock` says how the two are
told apart). Everything the student started is ended when the submission is done.
"""

from __future__ import annotations

import os
import select
import signal
import threading
import time
from contextlib import contextmanager

from ..core.errors import Failure, StudentError, StudentTimeout, Unfinished
from ..core.exact import arguments_digest, nbytes
from ..core.inert import student_strings, student_text
from ..core.intake import Intake
from ..core.results import CallOutcome
from ..core.settings import Isolation, Limits
from .clock import CPU, WALL, WALL_FACTOR, KeptUsage, Stopwatch, Usage, lingered, stopped_message
from .cores import Shared
from .inprocess import Alarm, time_limit
from .inside import worker
from .inside.worker import FREEZES, WireError
from .standin import failure_reply, request_problem
from .wardens import (
    START_TIMEOUT,
    Deadline,
    Deadlined,
    WardenFault,
    WardenLost,
    acquire,
    release,
)
from .watching import Arena, Frozen, Watched

#: The reference's answers a submission's sandbox keeps, at most, and the bytes of arrays they
#: may hold together (see Sandboxed.answered): the student's code chooses the questions.
HELPER_ANSWERS = 4096
HELPER_ANSWER_BYTES = 16 << 20
#: Seconds, and bytes of memory beyond what the grader already uses, one call of a reference
#: helper may take on the trusted side: far more than the largest call the bounds above allow.
HELPER_SECONDS = 2.0
HELPER_MEMORY = 1 << 30
#: Sandboxes a submission may bring down before its remaining checks are given up.
MAX_WARDEN_LOSSES = 3

_NOT_AGAIN = " (Not tried again on later checks.)"
#: Said when a file that loaded once cannot be loaded again in a new worker. Not what the file
#: said then: that load ran after the calls before it (hidden checks' among them) and could tell
#: what they sent, in the report's problem, which every student reads.
RELOAD_FAILED = (
    "Your file loaded at first, but not again when the grader started a new worker for it "
    "(after a crash or a time-out), so the remaining checks were not run."
)

#: The name used in messages while the file is being loaded.
LOADING = "your file"
#: What every check of a submission says when its sandbox did not start (the machine's fault).
NOT_STARTED = (
    "The grader could not start the sandbox your code runs in (it stopped before it answered). "
    "This is not a mistake of yours: tell your instructor."
)

#: What every check of a submission says when the grader could not find its worker's process to
#: watch it (the machine's fault: /proc unreadable).
NOT_WATCHED = (
    "The grader could not watch the sandbox your code runs in. "
    "This is not a mistake of yours: tell your instructor."
)
#: The kinds of failure a worker may report.
OUTCOME_KINDS = (Failure.MISSING, Failure.NOT_IMPLEMENTED, Failure.RAISED, Failure.RETURN)


def _subject(name: str) -> str:
    """How messages name what failed: a function, or the file while it loads."""
    return "Your file" if name == LOADING else f"`{name}`"


class Stopped(Deadline):
    """A call was stopped while the worker had not answered: ``verdict`` says by which limit
    (:data:`.clock.CPU`, :data:`.clock.IDLE` or :data:`.clock.WALL`)."""

    def __init__(self, verdict: str):
        super().__init__(verdict)
        self.verdict = verdict


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class Sandboxed(Deadlined):
    """Runs one student's file in a sandbox: a worker for its calls, each one watched from here."""

    def __init__(
        self,
        intake: Intake,
        *,
        helpers: dict | None,
        level: Isolation = Isolation.NAMESPACES,
        limits: Limits | None = None,
        lesson,
        remember: bool = True,
    ):
        self.isolation = level
        self.lesson = lesson  # its exercises and its file name go to the sandbox
        self.limits = limits = limits or Limits()
        self.helpers = helpers or {}
        #: the reference's answers to the student's code, by helper and arguments (None: each
        #: asked afresh): the reference is a function of its arguments, and shrinking asks it
        #: the same question many times
        self.answered: dict[tuple, dict] | None = {} if remember else None
        self.answered_bytes = 0
        self.started = time.monotonic()
        self.fresh = False  # an example began since the last call: the worker seeds its generators
        self.watch: Stopwatch | None = None  # the clocks of the call (or load) being waited for
        self.worker_pid: int | None = None  # the worker, as this side's /proc numbers it
        # its clock, read through a /proc file kept open (never another process's), and the
        # clock of the thread here that makes its calls (:meth:`_trusted_usage`)
        self.worker_clock: KeptUsage | None = None
        self.trusted_clock: KeptUsage | None = None
        self.trusted_thread: int | None = None
        self.cpu_spent = 0.0  # processor seconds of the workers of this submission that are gone
        self.worker_seen = 0.0  # processor seconds of the current worker, as last read
        self.worker_last: Usage | None = None  # its last reading (None: none, or unreadable)
        self.relayed = 0.0  # processor seconds this side spent for the calls (reference, watching)
        self.idle = 0.0  # seconds the calls so far waited for the student's code while it did not run
        self.unfinished = ""  # why the file's loading was stopped by a wall-clock guard
        self._signatures: dict = {}
        self._problem = ""
        self._loading = False  # a worker spawned, its answer to "load" not read yet
        self.stuck: dict[str, Exception] = {}  # function -> what to raise: it timed out or broke the sandbox
        self.alive = False  # a worker is serving this submission
        self.losses = 0  # sandboxes this submission brought down
        self.spawns = 0  # workers spawned for it (the first: before any of its code ran anywhere)
        self.reload_failed = False  # the file loaded once, then not in a new worker
        self.warden = None
        self.cores = Shared()  # the one core of the calls, once the worker runs (see .cores)
        self.raw = intake.source
        self.warden = acquire(level, limits.memory)
        try:
            self._spawn()  # the worker loads the file while the checks are being collected
        except StudentError as err:
            self._problem = err.message

    @property
    def problem(self) -> str:
        self._loaded()
        return self._problem

    @property
    def signatures(self) -> dict:
        self._loaded()
        if self.unfinished:  # the machine, not the file: no check has a verdict
            raise Unfinished(self.unfinished)
        return self._signatures

    # -- the warden

    def _lost(self, name: str) -> str:
        """The sandbox went down while ``name`` ran: why, in words; ``name`` is not called again."""
        self.alive = False
        self.losses += 1
        message = f"{_subject(name)} stopped the sandbox it ran in."
        if name != LOADING:
            self.stuck[name] = StudentError(message + _NOT_AGAIN, kind=Failure.CRASHED)
        return message

    def _never_started(self, lost: WardenLost) -> bool:
        """Whether ``lost`` is a sandbox that never started for this submission's first worker:
        the warden stopped before its first answer, before any of the submission's code ran
        anywhere (the grading machine's fault, never the student's: the grade is unfinished)."""
        return not lost.started and self.spawns == 1

    def _raise_stuck(self, name: str) -> None:
        """Fail a call of a function that timed out or broke the sandbox before.

        Always from this line, so that Hypothesis, replaying an example, sees the same failure."""
        stuck = self.stuck[name]
        if isinstance(stuck, StudentTimeout):
            raise type(stuck)(stuck.message)
        raise StudentError(stuck.message, kind=stuck.kind)

    def _ensure_begun(self) -> None:
        """The warden holds this submission's source (again, if it is a new sandbox)."""
        if self.losses >= MAX_WARDEN_LOSSES:
            raise StudentError(
                f"Your code brought down the grader's sandbox {self.losses} times; "
                "the remaining checks were not run.",
                kind=Failure.CRASHED,
            )
        if self.warden.proc is None or self.warden.holder is not self:
            self.warden.begin(self, self.raw, self.lesson, self.limits.memory)

    # -- the worker's life

    def _spawn(self) -> None:
        """Have the warden fork a worker and ask it to load the file; _loaded reads the answer."""
        self.spawns += 1
        try:
            self._ensure_begun()
            requests_r, requests_w = os.pipe()
            replies_r, replies_w = os.pipe()
            arena = Arena()
            # the channel's flags are set before the worker has the read end of the answers (its
            # first step sets the watch on it): the two never change the pipe's flags at once
            channel = Watched(replies_r, requests_w, wait=self._wait, arena=arena)
            os.set_blocking(requests_w, False)  # a worker that stops reading cannot hold the grader
            try:
                backstop = int(WALL_FACTOR * (self.limits.total_timeout + START_TIMEOUT))
                self.warden.post(
                    {"type": "spawn", "cpu": backstop},
                    fds=(requests_r, replies_w, replies_r, arena.fd),
                    keeper=True,
                )
            except BaseException:
                arena.close()
                for fd in (requests_w, replies_r):
                    os.close(fd)
                raise
            finally:
                os.close(requests_r)
                os.close(replies_w)
        except WardenLost as lost:
            if self._never_started(lost):
                self.unfinished = NOT_STARTED
                return
            raise StudentError(self._lost(LOADING), kind=Failure.CRASHED) from None
        self.requests, self.replies, self.arena = requests_w, replies_r, arena
        self.channel = channel
        self.alive = True
        load = {
            "type": "load",
            "exercises": list(self.lesson.exercises),
            "substitute": bool(self.helpers),
            "cpu": START_TIMEOUT,  # the worker's own timer, for where its clock cannot be read here
        }
        self.cpu_spent += self.worker_seen
        self.worker_seen = 0.0
        self._forget_clocks()
        self.watch = None
        self.load_deadline = time.monotonic() + WALL_FACTOR * START_TIMEOUT  # a guard: see _loaded
        self._loading = True
        try:
            self._send(load, self.load_deadline, name=LOADING)
        except StudentTimeout:
            self._loading = False
            self.unfinished = stopped_message("Your file", WALL, START_TIMEOUT)

    def _loaded(self) -> None:
        """Read the warden's and the worker's answers to the spawn, once."""
        if not self._loading:
            return
        self._loading = False
        try:
            replies = self.warden.collect(self.load_deadline)
        except WardenLost as lost:
            if self._never_started(lost):
                self.unfinished = NOT_STARTED
            else:
                self._problem = self._lost(LOADING)
            self._end_worker(reset=False)
            return
        for reply in replies:
            if reply.get("problem"):
                self._problem = f"The grader could not start your code: {student_text(reply['problem'])}."
                self._end_worker()
                return
            if reply.get("type") == "spawned" and isinstance(reply.get("pid"), int):
                self._find_worker(reply["pid"])
        if FREEZES and self.channel.frozen is None:  # it stops at its first write: no one would let it go on
            self.unfinished = NOT_WATCHED
            self._end_worker()
            return
        # the worker's processor time from its start (it was forked for this load) is the load's
        self.watch = Stopwatch(START_TIMEOUT, self._worker_usage, self._trusted_usage, first=Usage(0.0, 0.0))
        try:
            reply = self._receive(self.load_deadline, name=LOADING)
        except StudentError as err:
            self._problem = err.message
            return
        except Unfinished as stop:
            self.unfinished = stop.message
            return
        except StudentTimeout as stop:
            self._problem = stop.message
            return
        finally:
            self.idle += self.watch.idle()  # each load's too: a file may sleep as it is loaded again
            self.watch = None
        signatures = _plain_signatures(reply.get("signatures"))
        if reply.get("type") == "ready" and signatures is not None:
            if not self._outlived_the_load():
                self._problem = self._lost(LOADING)
                self._end_worker(reset=False)
                return
            self._signatures = signatures
        else:
            problem = reply.get("problem")
            self._problem = (
                problem if isinstance(problem, str) and problem else "Your file could not be loaded."
            )[:2000]
            self._end_worker()

    def _outlived_the_load(self) -> bool:
        """Whether the sandbox outlived the file's load: its warden answers a request made after
        it. A file that signalled its warden while loading had its answer relayed or not, as the
        warden's death and the reading of it raced: without this its first call, whichever check made it,
        found the sandbox gone (a score that changed from run to run). The warden handles a
        signal before it reads the request: such a file has always stopped its sandbox loading."""
        try:  # within the load's own guard: a warden the file stopped (SIGSTOP) is its doing
            self.warden.request({"type": "alive"}, max(self.load_deadline - time.monotonic(), START_TIMEOUT))
        except (WardenLost, WardenFault):
            return False
        return True

    def _close_pipes(self) -> None:
        if self.alive:
            self.alive = False
            for fd in (self.requests, self.replies):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self.arena.close()
            if self.channel.frozen is not None:
                self.channel.frozen.close()

    def _end_worker(self, *, reset: bool = True) -> None:
        """SIGKILL the worker and everything the student started (the warden does it)."""
        self._close_pipes()
        if reset and self.warden is not None:
            self.warden.reset(wipe=False)

    def close(self) -> None:
        """The submission is done: nothing it started survives, nothing it wrote stays."""
        self._close_pipes()
        self._forget_clocks()
        if self.trusted_clock is not None:
            self.trusted_clock.close()
            self.trusted_clock = self.trusted_thread = None
        self.cores.release()
        if self.warden is not None:
            # every process of the student's ends now. Its files go with the sandbox, which
            # serves no other submission (:meth:`grader.sandbox.wardens.Warden.begin`), but at
            # the process level they lie in the machine's folders: swept now
            self.warden.reset(wipe=self.warden.level == "process")
            release(self.warden)
            self.warden = None

    # -- the worker's clocks

    def _find_worker(self, inside: int) -> None:
        """Find the worker the keeper numbers ``inside`` (in the sandbox's PID namespace, if it
        has one) among the sandbox's processes, as this side numbers them (None if it cannot)."""
        proc = self.warden.proc if self.warden is not None else None
        if proc is None:
            return
        seen, todo = set(), [proc.pid]
        parent_of: dict[int, int] = {}  # as the walk found them
        while todo and len(seen) < 64:  # the sandbox: bwrap, the warden, a keeper, a worker
            pid = todo.pop()
            if pid in seen:
                continue
            seen.add(pid)
            try:
                with open(f"/proc/{pid}/status") as f:
                    status = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
                with open(f"/proc/{pid}/task/{pid}/children") as f:
                    children = [int(n) for n in f.read().split()]
            except (OSError, ValueError):
                continue
            todo.extend(children)
            parent_of.update(dict.fromkeys(children, pid))
            numbers = status.get("NSpid", status.get("Pid", "")).split()
            if pid != proc.pid and numbers and numbers[-1] == str(inside):
                self._forget_clocks()
                self.worker_pid, self.worker_clock = pid, KeptUsage(pid)
                keeper = parent_of.get(pid)
                frozen = Frozen(pid, parent=keeper)
                self.channel.frozen = frozen if frozen.known else None
                warden = parent_of.get(keeper) if keeper is not None else None
                self.cores.pin(tuple(p for p in (warden, keeper, pid) if p is not None))
                return

    def _forget_clocks(self) -> None:
        if self.worker_clock is not None:
            self.worker_clock.close()
        self.worker_pid = self.worker_clock = self.worker_last = None

    def _worker_usage(self) -> Usage | None:
        """The worker's processor time and run delay so far (None: not known here: gone, even
        if its number now names another process)."""
        usage = self.worker_clock.read() if self.worker_clock is not None else None
        self.worker_last = usage
        if usage is None:
            return None
        self.worker_seen = max(self.worker_seen, usage.cpu)
        return usage

    def _trusted_usage(self) -> Usage | None:
        """The usage of the thread here that makes the calls: its work for a call (watching the
        worker at each write, the reference's answers to its questions) is the call's, and the
        time it waited for a processor while the worker was stopped for it is not the worker's
        idle time (it was the keeper's, when the keeper relayed the calls)."""
        thread = threading.get_native_id()
        if thread != self.trusted_thread:
            if self.trusted_clock is not None:
                self.trusted_clock.close()
            self.trusted_thread, self.trusted_clock = thread, KeptUsage(f"/proc/self/task/{thread}")
        return self.trusted_clock.read()

    def _spent(self) -> float:
        """Processor seconds the student's code has used on this submission so far."""
        self._worker_usage()  # brings worker_seen up to date, while the worker lives
        return self.cpu_spent + self.worker_seen + self.relayed

    def _wait(self, fd: int) -> None:
        self._watched(lambda left: bool(select.select([fd], [], [], left)[0]))

    def _wait_writable(self, fd: int) -> None:
        self._watched(lambda left: bool(select.select([], [fd], [], left)[1]))

    def _watched(self, ready) -> None:
        """Wait until ``ready(seconds)`` says the worker's pipe is ready, looking at its clocks
        whenever they are due (:meth:`.clock.Stopwatch.next_look`: a wait that ends sooner reads
        none); raise Stopped once a limit is reached (and the pipe still not ready: a late look
        never stops a call that has answered)."""
        watch = self.watch
        if watch is None:  # no call is watched: a plain wall-clock deadline (the grader's own steps)
            left = self.deadline - time.monotonic()
            if left <= 0 or not ready(left):
                raise Deadline()
            return
        while True:
            began = time.monotonic()
            answered = ready(watch.next_look())
            watch.waited += time.monotonic() - began
            if answered:
                return
            verdict = watch.verdict(waited=watch.waited)
            if verdict and not ready(0):
                raise Stopped(verdict)

    # -- the channel

    def _timeout(self, name: str, verdict: str) -> StudentTimeout:
        """The call (or load) stopped by ``verdict``; the worker is ended."""
        limit = self.watch.limit if self.watch is not None else START_TIMEOUT
        self._worker_usage()  # its last reading, for the total
        self._end_worker()
        message = stopped_message(_subject(name), verdict, limit)
        if name == LOADING and verdict != WALL:
            message = message[:-1] + " while it was loading."
        return (Unfinished if verdict == WALL else StudentTimeout)(message)

    def _send(self, message: dict, deadline: float, *, name: str) -> None:
        self.deadline = deadline
        try:
            self.channel.send(message, wait_writable=self._wait_writable)
        except Deadline as stop:
            raise self._timeout(name, getattr(stop, "verdict", WALL)) from None
        except OSError:
            pass  # the worker is gone; receiving says how

    def _receive(self, deadline: float, *, name: str) -> dict:
        self.deadline = deadline
        try:
            message = self.channel.receive()
        except Deadline as stop:
            raise self._timeout(name, getattr(stop, "verdict", WALL)) from None
        except EOFError:
            message = None  # handled below: an error raised here would carry this one as context
        except WireError as err:
            self._read_at_the_end()
            self._end_worker()
            raise StudentError(
                f"{_subject(name)} sent back something the grader does not accept: {student_text(str(err))}."
            ) from None
        message = student_strings(message)  # its texts enter here, made safe for every later use
        if message is not None and not isinstance(message.get("type"), str):
            self._read_at_the_end()
            self._end_worker()  # every comparison below trusts the type to be a string
            raise StudentError(f"{_subject(name)} sent back a message of no known type.")
        if message is None:
            self._read_at_the_end()
            why = self._death(name)
            if name in self.stuck:
                self._raise_stuck(name)
            raise StudentError(why, kind=Failure.CRASHED)
        # an answer that took too much processor time counts as none; a question for the
        # reference, when the clocks are due (the wait for the next frame looks at them too)
        if self.watch is not None and (message["type"] != "callback" or self.watch.due()):
            if (self.watch.cpu() or 0.0) > self.watch.limit:
                raise self._timeout(name, CPU)
            if message["type"] == "callback":
                self.watch.pending()  # it asks: it has not answered yet
        return message

    def _read_at_the_end(self) -> None:
        """Read the clocks of a call (or load) that ended without an answer (the worker gone,
        or saying what the grader does not accept), while the worker can still be read: its
        idle time is counted as of its end (:meth:`.clock.Stopwatch.idle`)."""
        if self.watch is not None:
            self.watch.cpu()

    def _death(self, name: str) -> str:
        """Why the worker is gone, in a student's words."""
        self._close_pipes()
        before, began = self._worker_usage(), time.monotonic()
        try:
            status = self.warden.request({"type": "status", "wait": 2.0}, keeper=True)
        except WardenLost:
            return self._lost(name)
        code = status.get("code")
        # it let go of its end and stayed (alive, or ended meanwhile): the wait was its own doing
        self.idle += lingered(time.monotonic() - began, before, self._worker_usage())
        self._end_worker()
        if status.get("alive"):
            return f"{_subject(name)} closed its connection to the grader."
        if not isinstance(code, int):
            return f"{_subject(name)} stopped the worker that ran it."
        signum = -code if code < 0 else 0
        if signum == signal.SIGKILL:
            return f"{_subject(name)} was stopped: it probably used more than {self.limits.memory / 2**30:g} GiB of memory."
        if signum:
            return f"{_subject(name)} crashed (signal {signum}, {_signal_name(signum)})."
        return f"{_subject(name)} exited the interpreter (exit code {code})."

    # -- calls

    def _may_call(self, name: str) -> None:
        if name in self.stuck:
            self._raise_stuck(name)
        if self.reload_failed:
            raise StudentError(RELOAD_FAILED, kind=Failure.CRASHED)
        total = self.limits.total_timeout
        if self._spent() > total:
            raise StudentTimeout(f"Your file used more than {total:g} s of processor time in total.")
        if self.idle > total:  # a sleep in each call, each under the call's limit: the student's too
            raise StudentTimeout(
                f"Your file waited more than {total:g} s in total without running "
                "(sleeps, or waiting for something that never comes)."
            )
        if time.monotonic() - self.started > WALL_FACTOR * total:
            raise Unfinished(
                f"Grading of your file was stopped: the machine was too busy to give it its {total:g} s "
                "of processor time. This is not a mistake of yours: run it again later."
            )
        self._loaded()
        if self.unfinished:
            raise Unfinished(self.unfinished)

    def call(self, exercise: str, name: str, arguments: dict, replace=None) -> CallOutcome:
        self._may_call(name)  # it read the worker's clock: the call's start, unless a worker is spawned
        respawned = not self.alive
        if respawned:
            loaded_before = bool(self._signatures)
            self._spawn()  # replace a worker that was ended or died
            self._loaded()
            if self.unfinished:
                raise Unfinished(self.unfinished)
            if self._problem and loaded_before:
                self._problem, self.reload_failed = "", True
                self._end_worker()
                raise StudentError(RELOAD_FAILED, kind=Failure.CRASHED)
            if self._problem:
                raise StudentError(self._problem, kind=Failure.LOAD)
        limit = self.limits.call_timeout
        deadline = time.monotonic() + WALL_FACTOR * limit  # for the grader's own steps; see _watched
        first = None if respawned else self.worker_last
        self.watch = Stopwatch(limit, self._worker_usage, self._trusted_usage, first=first)
        answered = False  # the clocks were read at the answer, which ends the call
        try:
            if self.channel.spoke():  # nothing was asked of it since its last answer
                self._end_worker()
                raise StudentError(
                    f"{_subject(name)} sent back something the grader does not accept: "
                    "it wrote to the grader out of turn."
                )
            places, scalars, image = worker.laid_out(arguments)
            base = self.arena.place(image, places)  # watched from now until the answer is read whole
            if base is None:
                return self._checked(
                    name, {"type": "outcome", "ok": False, "kind": "raised", "message": "arguments too large"}
                )
            request = {
                "type": "call",
                "exercise": exercise,
                "name": name,
                "scalars": scalars,
                "places": places,
                "base": base,
                "cpu": limit,  # the worker's own timer, for where its clock cannot be read here
            }
            if replace is not None:
                request["replace"] = tuple(replace)
                request["keep"] = self.answered is not None  # so may the worker (worker.Answers)
            if self.fresh:
                request["fresh"], self.fresh = True, False
            self._send(request, deadline, name=name)
            while True:
                reply = self._receive(deadline, name=name)
                if reply["type"] == "callback":
                    answer = self._help(exercise, reply, replace or ())  # on this thread's clock
                    self._send(answer, deadline, name=name)
                    continue
                answered = True  # _receive read the clocks at it
                if reply.get("type") != "outcome":
                    self._end_worker()
                    raise StudentError(f"`{name}` broke the conversation with the grader.")
                reply["mutated"] = self.arena.verdict()  # this side's word, over the worker's
                if reply.get("ok") is False and isinstance(reply.get("kind"), str) and reply["kind"] == "cpu":
                    # its own timer stopped it (the field came from the worker: a string first)
                    raise self._timeout(name, CPU)
                return self._checked(name, reply)
        except StudentTimeout as stop:
            self.stuck[name] = type(stop)(stop.message + _NOT_AGAIN)
            raise
        finally:
            self.relayed += self.watch.others(reread=not answered)
            self.idle += self.watch.idle()
            self.watch = None

    def begin_example(self) -> None:
        self.fresh = True

    def audited_call(self, exercise: str, name: str, arguments: dict, replace=None) -> CallOutcome:
        """A call whose effect on its arguments is known for sure: every call of a worker is
        watched (:mod:`.watching`), so this is a call like any other."""
        return self.call(exercise, name, arguments, replace=replace)

    def _help(self, exercise: str, request: dict, replace: tuple[str, ...]) -> dict:
        """Run the reference for a graded function the student's code called, if it is one the
        reference stands in for in this call (``replace``: the worker was told so, but the
        worker runs the student's code and may ask for any).

        Everything in the request came from the student's side: each field is checked
        before use, the arguments must keep the reference's contract within small bounds,
        and the reference runs under a time and a memory limit, so a request can make the
        grader's own process neither fail nor slow nor large.
        """
        helper = request.get("name")
        if (
            not isinstance(helper, str)
            or helper not in replace
            or helper == exercise
            or helper not in self.helpers
        ):
            shown = helper if isinstance(helper, str) else "that function"
            return {"type": "raise", "exc": "RuntimeError", "message": f"{shown[:100]} is not available here"}
        args, kwargs = request.get("args", ()), request.get("kwargs", {})
        refused = request_problem(helper, args, kwargs)  # as in the student's own process
        if refused is not None:
            return refused
        key = None
        if self.answered is not None:
            digest = arguments_digest({"args": tuple(args), "kwargs": tuple(kwargs.items())})
            key = None if digest is None else (helper, digest)
            if key in self.answered:
                return self.answered[key]
        reply = self._reference(exercise, helper, args, kwargs)
        if key is not None and (reply.get("type"), reply.get("exc")) in worker.KEPT_KINDS:
            size = nbytes(reply.get("value"))
            if len(self.answered) < HELPER_ANSWERS and self.answered_bytes + size <= HELPER_ANSWER_BYTES:
                self.answered[key] = reply  # sent as bytes each time: nothing changes it
                self.answered_bytes += size
        return reply

    def _reference(self, exercise: str, helper: str, args: tuple, kwargs: dict) -> dict:
        """The reply of the reference's ``helper`` to the arguments, run within its limits."""
        try:
            with time_limit(HELPER_SECONDS), memory_limit(HELPER_MEMORY):
                value = self.helpers[helper](*args, **kwargs)
        except Alarm as alarm:
            if alarm.verdict == WALL:  # this machine was too slow for the reference: no verdict
                self._end_worker()  # it waits for an answer it will not get
                raise Unfinished(stopped_message(f"`{exercise}`", WALL, self.limits.call_timeout)) from None
            return {
                "type": "raise",
                "exc": "RuntimeError",
                "message": f"{helper} took too long on these inputs",
            }
        except Exception as err:  # noqa: BLE001 - bad input from the student's side
            return failure_reply(helper, err)
        return {"type": "return", "value": value}

    @staticmethod
    def _checked(name: str, reply: dict) -> CallOutcome:
        """An outcome whose every field has the expected type; values only plain numeric arrays.

        Which arguments changed comes from this side (:class:`.watching.Arena`), set over
        anything the worker (the student's code) put in the frame."""
        if reply.get("ok") is True:
            problem = worker.check_value(name, reply.get("value"))
            if problem:
                return CallOutcome.failed(Failure.RETURN, problem)
            mutated = reply.get("mutated", ())
            if not isinstance(mutated, tuple) or not all(isinstance(m, str) for m in mutated):
                mutated = ()
            return CallOutcome(value=reply["value"], mutated=mutated)
        kind = reply.get("kind")
        raised = reply.get("raised", ())
        message = reply.get("message")
        return CallOutcome.failed(
            kind if isinstance(kind, str) and kind in OUTCOME_KINDS else Failure.RAISED,
            message[:2000] if isinstance(message, str) else f"`{name}` failed.",
            tuple(r for r in raised if isinstance(r, str)) if isinstance(raised, tuple) else (),
        )


def _plain_signatures(described) -> dict | None:
    """What a worker said its file defines, if it has the form :func:`grader.sandbox.inside.worker.describe_signature`
    gives (``{name: why-not-a-function or [[name, kind, default or None], ...]}``); else None.
    The worker runs the student's code, so it may say anything."""
    if not isinstance(described, dict) or not all(isinstance(k, str) for k in described):
        return None
    for value in described.values():
        if isinstance(value, str):
            continue
        if not isinstance(value, tuple) or not all(
            isinstance(p, tuple)
            and len(p) == 3
            and isinstance(p[0], str)
            and isinstance(p[1], str)
            and (p[2] is None or isinstance(p[2], str))
            for p in value
        ):
            return None
    return described


@contextmanager
def memory_limit(extra: int):
    """Let this process use at most ``extra`` more bytes of address space within the block
    (a MemoryError past it), where the system can say so (Linux); else no limit."""
    try:
        import resource

        with open("/proc/self/statm") as f:
            used = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = used + extra if hard == resource.RLIM_INFINITY else min(used + extra, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, OSError, ValueError):
        yield
        return
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
