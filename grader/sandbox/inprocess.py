"""The student's code in the checker's own process (isolation ``none``), or nowhere at all.

Fast, for a student checking their own work: each call runs under an alarm
(:func:`time_limit`). :class:`Refused` stands for a submission that could not be
taken in: nothing runs, and every check says why.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

import numpy as np

from ..core.errors import StudentTimeout
from ..core.intake import Intake
from ..core.results import CallOutcome
from ..core.settings import Isolation, Limits
from ..worker import LoadProblem, Program


class Alarm(BaseException):
    """Raised inside student code by the timer; never escapes the module that set it."""


def _ring(signum, frame):
    raise Alarm()


@contextmanager
def time_limit(seconds: float | None):
    """Interrupt the block with Alarm after ``seconds`` (main thread, POSIX only)."""
    usable = (
        seconds is not None
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return
    previous = signal.getsignal(signal.SIGALRM)
    if previous is not _ring:
        signal.signal(signal.SIGALRM, _ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        if previous is not _ring:
            signal.signal(signal.SIGALRM, previous)


def _copy(value):
    """The student keeps no handle on what the checks receive."""
    if isinstance(value, tuple):
        return tuple(_copy(v) for v in value)
    return np.array(value, copy=True)


def _outcome(said: dict, *, value=None, mutated: tuple[str, ...] = ()) -> CallOutcome:
    """A :class:`grader.worker.Program` outcome (trusted: it ran here) as a CallOutcome."""
    if said["ok"]:
        return CallOutcome(value=value, mutated=mutated)
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
        self.problem = ""
        self.signatures: dict = {}
        try:
            helper = helpers.__getitem__ if helpers else None
            self.program = Program(intake.source, intake.shown, exercises, helper, passthrough=(Alarm,))
            with time_limit(call_timeout):
                self.signatures = self.program.signatures()
        except Alarm:
            self.problem = f"Your file did not finish loading within {call_timeout:g} s."
        except LoadProblem as err:
            self.problem = str(err)

    def call(self, exercise: str, name: str, arguments: dict, replace=None) -> CallOutcome:
        try:
            with time_limit(self.call_timeout):
                said = self.program.call(exercise, name, arguments, replace=replace)
        except Alarm:
            raise StudentTimeout(f"`{name}` did not finish within {self.call_timeout:g} s.") from None
        return _outcome(said, value=_copy(said["value"]) if said["ok"] else None)

    def audited_call(self, exercise: str, name: str, arguments: dict, replace=None) -> CallOutcome:
        """A call that also reports which arrays it changed (here, in this very process)."""
        given = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in arguments.items()}
        before = {k: v.tobytes() for k, v in given.items() if isinstance(v, np.ndarray)}
        try:
            with time_limit(self.call_timeout):
                said = self.program.call(exercise, name, given, copy=False, replace=replace)
        except Alarm:
            raise StudentTimeout(f"`{name}` did not finish within {self.call_timeout:g} s.") from None
        mutated = tuple(k for k, raw in before.items() if given[k].tobytes() != raw)
        return _outcome(said, value=_copy(said["value"]) if said["ok"] else None, mutated=mutated)

    def close(self) -> None:
        pass


class Refused:
    """The executor of a submission that could not be taken in: nothing runs, every check says why."""

    def __init__(self, problem: str, isolation: Isolation):
        self.problem = problem
        self.isolation = isolation
        self.signatures: dict = {}

    def close(self) -> None:
        pass
