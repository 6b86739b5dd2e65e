"""The student's code in the checker's own process (isolation ``none``), or nowhere at all.

Fast, for a student checking their own work: each call runs under a limit of processor
time, with a wall-clock guard far above it (:func:`time_limit`: interval timers and their
signals, or a watchdog thread where the system has no ``SIGALRM``). :class:`Refused` stands for a submission that could not be
taken in: nothing runs, and every check says why.
"""

from __future__ import annotations

import io
import os
import signal
import threading
import time
from contextlib import contextmanager

import numpy as np

from ..core.errors import Failure, StudentError, StudentTimeout, Unfinished
from ..core.inert import student_strings, student_text
from ..core.intake import Intake
from ..core.results import CallOutcome
from ..core.settings import Isolation, Limits
from .clock import CPU, IDLE, WALL, KeptUsage, Stopwatch, Usage, read_usage, stopped_message
from .inside.worker import UMASK, LoadProblem, Program, answer_of, encode, read_frame
from .standin import failure_reply, request_problem

try:
    import _signal  # CPython's own, below the signal module
except ImportError:  # pragma: no cover - another Python: the module's function, as it is
    _signal = signal


class Alarm(BaseException):
    """Raised inside student code by the timer; never escapes the module that set it.
    ``verdict`` says which limit (:data:`.clock.CPU`, :data:`.clock.IDLE`, :data:`.clock.WALL`)."""

    def __init__(self, verdict: str = CPU):
        super().__init__(verdict)
        self.verdict = verdict


#: Seconds between two looks at a block's clocks (its idle time, its wall time).
TICK = 0.25


def thread_usage(native_id: int | None = None):
    """A function giving the Usage of a thread (this one by default): Linux's own figures for
    it, else the processor time of the whole process (no run delay: idle time unknown)."""
    native_id = threading.get_native_id() if native_id is None else native_id
    key = (os.getpid(), native_id)  # a fork's thread is another task, with a file of its own
    clock = _THREAD_CLOCKS.get(key)
    if clock is None:
        task = f"/proc/self/task/{native_id}"
        if read_usage(task) is None:
            return lambda: Usage(time.process_time(), None)
        clock = _ThreadClock(task)
        while len(_THREAD_CLOCKS) >= _KEPT_THREAD_CLOCKS:
            _THREAD_CLOCKS.pop(next(iter(_THREAD_CLOCKS))).close()
        _THREAD_CLOCKS[key] = clock
    return clock


class _ThreadClock:
    """A thread's Usage, read through its /proc file kept open (:class:`~.clock.KeptUsage`): a
    call of the student's is timed from two readings, and opening the files for each (as
    :func:`grader.sandbox.clock.read_usage` does) was a tenth of a ``check``. Where the kept file
    cannot be read (the thread ended, and this thread, which asks, was given its number), it is
    opened again."""

    def __init__(self, task: str):
        self.task = task
        self.kept: KeptUsage | None = None

    def __call__(self) -> Usage | None:
        for _ in range(2):
            if self.kept is None:
                self.kept = KeptUsage(self.task)
            usage = self.kept.read()
            if usage is not None:
                return usage
            self.close()
        return read_usage(self.task)

    def close(self) -> None:
        if self.kept is not None:
            self.kept.close()
            self.kept = None


#: The kept clocks of the threads that ran a timed block, by (process, thread); a few at most.
_THREAD_CLOCKS: dict[tuple[int, int], _ThreadClock] = {}
_KEPT_THREAD_CLOCKS = 8


def timed_out(alarm: Alarm, subject: str, limit: float) -> StudentTimeout:
    """The exception that tells the checks how a block stopped by ``alarm`` ended."""
    return (Unfinished if alarm.verdict == WALL else StudentTimeout)(
        stopped_message(subject, alarm.verdict, limit)
    )


@contextmanager
def time_limit(seconds: float | None):
    """Interrupt the block with Alarm once it used ``seconds`` of processor time, or waited
    that long without running, or a wall-clock guard far above (:mod:`.clock`) is passed.

    Where the system has ``SIGALRM`` (Linux, macOS) and the block runs in the main thread,
    interval timers raise it: ``ITIMER_PROF`` counts this process's processor time, and
    ``ITIMER_REAL`` looks at the clocks every :data:`TICK` (a signal also cuts a
    ``time.sleep`` short). Elsewhere (Windows, which has no ``SIGALRM``; a thread other than
    the main one) a watchdog does it (:func:`_watchdog`). Either way the block sees one Alarm,
    once its time is up, and none after the block has ended.
    """
    if seconds is None:
        yield
        return
    if not _ALARMS or threading.current_thread() is not threading.main_thread():
        with _watchdog(seconds):
            yield
        return
    watch = Stopwatch(seconds, thread_usage())

    def cpu_over(signum, frame):
        raise Alarm(CPU)

    def look(signum, frame):
        verdict = watch.verdict()
        if verdict:
            raise Alarm(verdict)

    # _signal's own function: signal.signal would look each handler up among the named ones
    # (by raising and catching an error), twice per call of the student's code
    previous = _signal.signal(signal.SIGPROF, cpu_over), _signal.signal(signal.SIGALRM, look)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    signal.setitimer(signal.ITIMER_REAL, min(TICK, seconds), TICK)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.setitimer(signal.ITIMER_PROF, 0)
        _signal.signal(signal.SIGPROF, previous[0])
        _signal.signal(signal.SIGALRM, previous[1])


@contextmanager
def _sandbox_umask():
    """The block (the student's code) runs under the sandbox's file-creation mask."""
    before = os.umask(UMASK)
    try:
        yield
    finally:
        os.umask(before)


#: Whether this system has the interval timers and their signals (not on Windows).
_ALARMS = all(hasattr(signal, n) for n in ("SIGALRM", "SIGPROF", "setitimer", "ITIMER_PROF"))


@contextmanager
def _watchdog(seconds: float):
    """Raise Alarm in this thread once a limit of :func:`time_limit` is reached, from a thread
    that looks at its clocks (this thread's own on Linux; elsewhere the process's processor
    time, and no idle time: a block that sleeps is stopped by the wall-clock guard alone).

    Why a thread that raises an exception in this one (CPython's ``PyThreadState_SetAsyncExc``,
    reached through ctypes) rather than the other ways to stop a call without ``SIGALRM``:

    * ``_thread.interrupt_main`` raises KeyboardInterrupt in the main thread only, or runs the
      handler of SIGINT, which a Jupyter kernel (where the nbgrader test cells run) keeps for
      its own interrupt button: the student's Ctrl-C and the grader's limit would be mixed up.
      The exception set here is Alarm itself, in the very thread that runs the call, whichever
      it is, and no signal handler is touched.
    * a child process for each call (multiprocessing's spawn) would start a Python, import
      numpy and load the student's file again for every call, and the arguments and results
      would be pickled across: the ``none`` level exists to be fast, and it checks which
      arguments a call changed in place by looking at them in this process.

    As with a signal, the exception arrives when the interpreter next runs Python code: a
    loop of the student's is stopped, a single long call into C (a ``time.sleep``, a huge
    matrix product) only when it returns. Where ctypes cannot reach the interpreter (not
    CPython), the block runs without a limit.
    """
    target = threading.get_ident()
    raise_in = _async_raiser()
    if raise_in is None:
        yield
        return
    lock, over = threading.Lock(), threading.Event()
    state = {"done": False, "fired": False}
    clocks = Stopwatch(seconds, thread_usage(threading.get_native_id()))

    def watch():
        while True:
            cpu = clocks.cpu()
            left = seconds - cpu if cpu is not None else seconds
            if over.wait(min(max(left, 0.0005), TICK)):
                return
            verdict = clocks.verdict()
            if verdict:
                break
        with lock:
            if not state["done"]:
                raise_in(target, _ALARM_OF[verdict])
                state["fired"] = True

    watcher = threading.Thread(target=watch, name="grader-time-limit", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        with lock:
            state["done"] = True  # the watchdog raises nothing from now on
        over.set()
        if state["fired"]:
            raise_in(target, None)  # an Alarm not delivered yet never escapes the block


class _CpuAlarm(Alarm):
    def __init__(self):
        super().__init__(CPU)


class _IdleAlarm(Alarm):
    def __init__(self):
        super().__init__(IDLE)


class _WallAlarm(Alarm):
    def __init__(self):
        super().__init__(WALL)


#: The Alarm the watchdog raises for each verdict: an exception set in another thread is given
#: as a class, without arguments.
_ALARM_OF = {CPU: _CpuAlarm, IDLE: _IdleAlarm, WALL: _WallAlarm}


def _async_raiser():
    """A function ``(thread id, exception class or None)`` that sets (or clears) the exception
    a thread raises when it next runs Python code; None where ctypes cannot do it."""
    try:
        import ctypes

        set_async = ctypes.pythonapi.PyThreadState_SetAsyncExc
    except (ImportError, AttributeError):
        return None
    set_async.argtypes = (ctypes.c_ulong, ctypes.py_object)
    set_async.restype = ctypes.c_int

    def raise_in(thread: int, exception) -> None:
        set_async(thread, ctypes.py_object(exception) if exception is not None else ctypes.py_object())

    return raise_in


def _copy(value):
    """The student keeps no handle on what the checks receive."""
    if isinstance(value, tuple):
        return tuple(_copy(v) for v in value)
    return np.array(value, copy=True)


def _stand_in(name: str, function):
    """The reference's ``function`` as the student's code calls it in place of its own ``name``:
    the arguments as a sandbox's wire carries them, the same bounds, the same exceptions
    (:mod:`.standin`), so that ``check`` scores a file as ``grade`` does."""

    def stand_in(*args, **kwargs):
        carried = read_frame(io.BytesIO(encode({"args": list(args), "kwargs": kwargs})).read)
        args, kwargs = carried["args"], carried["kwargs"]
        reply = request_problem(name, args, kwargs)
        if reply is None:
            try:
                reply = {"type": "return", "value": function(*args, **kwargs)}
            except Exception as err:  # noqa: BLE001 - the student's arguments; a time limit passes
                reply = failure_reply(name, err)
        return answer_of(reply)

    stand_in.__name__ = name
    return stand_in


def _outcome(said: dict, *, value=None, mutated: tuple[str, ...] = ()) -> CallOutcome:
    """A :class:`grader.sandbox.inside.worker.Program` outcome (trusted: it ran here) as a CallOutcome."""
    if said["ok"]:
        return CallOutcome(value=value, mutated=mutated)
    said = student_strings({k: v for k, v in said.items() if k != "value"})  # texts enter here
    return CallOutcome(
        failure=said["kind"], message=said["message"], raised=tuple(said.get("raised", ())), mutated=mutated
    )


class InProcess:
    """Runs the student's file in this process (isolation level ``none``)."""

    isolation = Isolation.NONE

    def __init__(
        self,
        intake: Intake,
        *,
        exercises: tuple[str, ...],
        helpers: dict | None,
        limits: Limits,
    ):
        self.call_timeout = call_timeout = limits.call_timeout
        self.problem = self.unfinished = ""
        self._signatures: dict = {}
        try:
            helper = (lambda name: _stand_in(name, helpers[name])) if helpers else None
            self.program = Program(intake.source, intake.shown, exercises, helper, passthrough=(Alarm,))
            with time_limit(call_timeout), _sandbox_umask():
                self._signatures = student_strings(self.program.signatures())
        except Alarm as alarm:
            stop = timed_out(alarm, "Your file", call_timeout)
            if isinstance(stop, Unfinished):
                self.unfinished = stop.message
            else:
                self.problem = stop.message[:-1] + " while it was loading."
        except LoadProblem as err:
            self.problem = student_text(str(err))

    @property
    def signatures(self) -> dict:
        if self.unfinished:  # the machine, not the file: no check has a verdict
            raise Unfinished(self.unfinished)
        return self._signatures

    def call(self, exercise: str, name: str, arguments: dict, replace=None) -> CallOutcome:
        """Every call is audited, as a sandbox's keeper watches every call: an argument the
        function changes in place is in the outcome of a plain call too, and the likely mistake
        ("the cache passed in was changed") is found by ``check`` as by ``grade``."""
        return self.audited_call(exercise, name, arguments, replace=replace)

    def audited_call(self, exercise: str, name: str, arguments: dict, replace=None) -> CallOutcome:
        """A call that also reports which arrays it changed (here, in this very process)."""
        given = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in arguments.items()}
        before = {k: v.tobytes() for k, v in given.items() if isinstance(v, np.ndarray)}
        try:
            with time_limit(self.call_timeout), _sandbox_umask():
                said = self.program.call(exercise, name, given, copy=False, replace=replace)
        except Alarm as alarm:
            raise timed_out(alarm, f"`{name}`", self.call_timeout) from None
        mutated = tuple(k for k, raw in before.items() if given[k].tobytes() != raw)
        return _outcome(said, value=_copy(said["value"]) if said["ok"] else None, mutated=mutated)

    def begin_example(self) -> None:
        pass  # Hypothesis seeds this process's generators itself

    def close(self) -> None:
        pass


class Refused:
    """The executor of a submission that could not be taken in: nothing runs, every check says
    why. With ``unfinished`` the machine kept it from being read (not the file): no check has a
    verdict, and the grade is unfinished."""

    def __init__(self, problem: str, isolation: Isolation, *, unfinished: bool = False):
        self.problem = "" if unfinished else problem
        self.unfinished = problem if unfinished else ""
        self.isolation = isolation
        self._signatures: dict = {}

    @property
    def signatures(self) -> dict:
        if self.unfinished:
            raise Unfinished(self.unfinished)
        return self._signatures

    def call(self, exercise: str, name: str, arguments: dict, replace=None) -> CallOutcome:
        """Nothing runs: the call fails with the submission's problem, as every check does."""
        if self.unfinished:
            raise Unfinished(self.unfinished)
        raise StudentError(self.problem, kind=Failure.LOAD)

    audited_call = call

    def begin_example(self) -> None:
        pass

    def close(self) -> None:
        pass
