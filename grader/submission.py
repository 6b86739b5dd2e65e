"""How the checks call a student's functions, whichever way the code is run.

The checks never touch the student's module: they call through a
:class:`StudentView`, which enforces the expected signature, sends the call to
an executor and turns every failure into a :class:`StudentError` (or a
:class:`StudentTimeout`) whose message a student understands. Executors:

* :class:`InProcess` (isolation ``none``): the student's file runs in the
  grader's own process, with a per-call alarm. Fast; for a student checking
  their own work.
* :class:`grader.session.Sandboxed` (isolation ``namespaces`` or ``process``):
  the file runs in a separate, limited worker process; only checked arrays
  come back.

Both run the bytes :func:`grader.intake.open_submission` took in, never a
second reading of the file.

Either way each exercise gets a namespace of its own in which the *other*
graded functions are the reference ones, so a broken function costs points in
its own exercise only, never in a later one that calls it.
"""

from __future__ import annotations

import inspect
import signal
import threading
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from .intake import Intake, IntakeError, open_submission
from .worker import LoadProblem, Program, compile_source, describe_signature, signature_text

#: Seconds one call of a student function may take before it is stopped.
DEFAULT_CALL_TIMEOUT = 3.0


class StudentError(Exception):
    """The student's code failed in a way that is theirs to fix."""

    def __init__(self, message: str, *, kind: str = "raised", raised: tuple[str, ...] = ()):
        super().__init__(message)
        self.message = message
        self.kind = kind  # missing | not_implemented | signature | raised | return | load | crashed
        self.raised = tuple(raised)  # for kind "raised": the exception's class and its bases, by name


class StudentTimeout(BaseException):
    """A call ran past its time limit.

    A ``BaseException`` on purpose: Hypothesis does not retry or shrink it, so a
    stuck function costs one time limit per check, not hundreds.
    """

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def load_reference(path: Path, exercises: tuple[str, ...]) -> dict:
    """The reference's graded functions, ``exercises`` (trusted code, run in this process)."""
    _, code = compile_source(Path(path).read_bytes(), str(path))
    namespace: dict = {"__name__": "reference"}
    exec(code, namespace)
    return {name: namespace[name] for name in exercises}


class StudentView:
    """The student's functions as one exercise's checks see them."""

    def __init__(self, executor, exercise: str, reference: dict, replace=lambda: None):
        self._executor = executor
        self._exercise = exercise
        self._replace = replace  # () -> the other graded functions the reference must stand in for
        self._reference = reference
        self._signatures = {n: inspect.signature(f) for n, f in reference.items()}
        self._approved: dict[str, object] = {}  # name -> the signature already found right
        self.mutated: tuple[str, ...] = ()
        """Names of the arguments the last call changed in place."""

    def __getattr__(self, name: str):
        if name.startswith("_") or name not in self._reference:
            raise AttributeError(name)
        return lambda *args, **kwargs: self.call(name, *args, **kwargs)

    def call(self, name: str, *args, **kwargs):
        """Call the student's ``name`` on the arguments; return a checked copy of the result."""
        return self._invoke(name, args, kwargs, audit=False)

    def audited(self, name: str, *args, **kwargs) -> None:
        """Call ``name`` only to learn for sure which array arguments it changed (in
        :attr:`mutated`): the student's code runs where it cannot hide that. The value it
        returns is checked (a plain array) but not given back."""
        return self._invoke(name, args, kwargs, audit=True)

    def _invoke(self, name: str, args: tuple, kwargs: dict, *, audit: bool):
        if self._executor.problem:
            raise StudentError(self._executor.problem, kind="load")
        theirs = self._executor.signatures.get(name)
        if self._approved.get(name) is not theirs:
            self._approve(name, theirs)
        arguments = dict(self._signatures[name].bind(*args, **kwargs).arguments)
        if audit:
            outcome = self._executor.audited_call(self._exercise, name, arguments, replace=self._replace())
        else:
            outcome = self._executor.call(self._exercise, name, arguments, replace=self._replace())
        if not outcome["ok"]:
            raise StudentError(outcome["message"], kind=outcome["kind"], raised=outcome.get("raised", ()))
        self.mutated = tuple(outcome.get("mutated", ()))
        return outcome["value"]

    def _approve(self, name: str, theirs) -> None:
        """Raise StudentError unless the student's ``name`` is a function with the right signature."""
        if theirs is None:
            raise StudentError(f"`{name}` is not defined in your file.", kind="missing")
        if isinstance(theirs, str):
            raise StudentError(f"`{name}` in your file is {theirs}.", kind="missing")
        wanted = describe_signature(self._reference[name])
        if [tuple(p) for p in theirs] != [tuple(p) for p in wanted]:
            raise StudentError(
                f"`{name}` must be defined as `def {signature_text(name, wanted)}`, "
                f"but yours is `def {signature_text(name, theirs)}`.",
                kind="signature",
            )
        self._approved[name] = theirs


class Alarm(BaseException):
    """Raised inside student code by the timer; never escapes this module."""


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


class InProcess:
    """Runs the student's file in this process (isolation level ``none``)."""

    isolation = "none"

    def __init__(
        self,
        intake: Intake,
        *,
        exercises: tuple[str, ...],
        helpers: dict | None,
        call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
    ):
        self.call_timeout = call_timeout
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

    def call(self, exercise: str, name: str, arguments: dict, replace=None) -> dict:
        try:
            with time_limit(self.call_timeout):
                outcome = self.program.call(exercise, name, arguments, replace=replace)
        except Alarm:
            raise StudentTimeout(f"`{name}` did not finish within {self.call_timeout:g} s.") from None
        if outcome["ok"]:
            outcome["value"] = _copy(outcome["value"])
        return outcome

    def audited_call(self, exercise: str, name: str, arguments: dict, replace=None) -> dict:
        """A call that also reports which arrays it changed (here, in this very process)."""
        given = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in arguments.items()}
        before = {k: v.tobytes() for k, v in given.items() if isinstance(v, np.ndarray)}
        try:
            with time_limit(self.call_timeout):
                outcome = self.program.call(exercise, name, given, copy=False, replace=replace)
        except Alarm:
            raise StudentTimeout(f"`{name}` did not finish within {self.call_timeout:g} s.") from None
        if outcome["ok"]:
            outcome["value"] = None  # as in a sandbox: an audited call tells only what it changed
        outcome["mutated"] = [k for k, raw in before.items() if given[k].tobytes() != raw]
        return outcome

    def close(self) -> None:
        pass


class Refused:
    """The executor of a submission that could not be taken in: nothing runs, every check says why."""

    def __init__(self, problem: str, isolation: str):
        self.problem = problem
        self.isolation = isolation
        self.signatures: dict = {}

    def close(self) -> None:
        pass


class Submission:
    """A submission of ``lesson`` opened for grading: the reference, an executor, one view per
    exercise.

    ``submission`` is what :func:`grader.intake.open_submission` took in, or a
    path for it to take in (a refusal becomes the submission's problem). Without
    the reference (a student release has none), the signatures come from the
    stubs and each exercise runs with the student's own versions of the other
    functions.
    """

    def __init__(self, submission: Intake | Path, *, lesson, isolation: str = "auto", limits=None):
        from .sandbox import Limits, choose_level  # the sandbox builds on this module
        from .session import Sandboxed

        self.lesson = lesson
        limits = limits or Limits()
        reference = lesson.reference
        helpers = load_reference(reference, lesson.exercises) if reference is not None else None
        # without a reference, the stubs: they share every signature
        self.reference = helpers or load_reference(lesson.stubs, lesson.exercises)
        level = choose_level(isolation, lesson.private)
        try:
            if isinstance(submission, Intake):
                intake = submission
            else:
                intake = open_submission(submission, lesson.filename)
        except IntakeError as err:
            self.executor = Refused(err.message, level)
        else:
            if level == "none":
                self.executor = InProcess(
                    intake, exercises=lesson.exercises, helpers=helpers, call_timeout=limits.call_timeout
                )
            else:
                self.executor = Sandboxed(intake, helpers=helpers, level=level, limits=limits, lesson=lesson)
        self._views: dict[str, StudentView] = {}
        self._expected: dict[str, int] = {}  # exercise -> checks selected in this run
        self._done: dict[str, int] = {}
        self._failed: set[str] = set()

    def expect(self, counts: dict[str, int]) -> None:
        """How many checks of each exercise this run holds."""
        self._expected = dict(counts)

    def record(self, exercise: str, passed: bool) -> None:
        """One check of ``exercise`` ended."""
        self._done[exercise] = self._done.get(exercise, 0) + 1
        if not passed:
            self._failed.add(exercise)

    def replace_for(self, exercise: str) -> tuple[str, ...]:
        """The other graded functions the reference stands in for when ``exercise`` is checked.

        A function whose every check already passed in this run stays the
        student's own (its calls need no trip to the trusted side); any other,
        broken or not checked (yet), is replaced, so a mistake in it never costs
        points here.
        """
        return tuple(
            other
            for other in self.lesson.exercises
            if other != exercise
            and not (
                other not in self._failed
                and self._expected.get(other, 0) > 0
                and self._done.get(other, 0) >= self._expected[other]
            )
        )

    @property
    def problem(self) -> str:
        return self.executor.problem

    @property
    def isolation(self) -> str:
        return self.executor.isolation

    def view(self, exercise: str) -> StudentView:
        """The functions as seen by ``exercise``'s checks (the others are the reference's)."""
        if exercise not in self._views:
            self._views[exercise] = StudentView(
                self.executor, exercise, self.reference, replace=lambda: self.replace_for(exercise)
            )
        return self._views[exercise]

    def close(self) -> None:
        self.executor.close()
