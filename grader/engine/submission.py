"""How the checks call a student's functions, whichever way the code is run.

The checks never touch the student's module: they call through a
:class:`StudentView`, which enforces the expected signature, sends the call to
an executor and turns every failure into a :class:`StudentError` (or a
:class:`StudentTimeout`) whose message a student understands. Executors:

* :class:`grader.sandbox.inprocess.InProcess` (isolation ``none``): the student's
  file runs in the grader's own process, with a per-call alarm. Fast; for a
  student checking their own work.
* :class:`grader.sandbox.session.Sandboxed` (isolation ``namespaces`` or ``process``):
  the file runs in a separate, limited worker process; only checked arrays
  come back.

Both run the bytes :func:`grader.core.intake.open_submission` took in, never a
second reading of the file.

Either way each exercise gets a namespace of its own in which the other graded
functions that its reference calls (:func:`grader.core.scope.reference_calls`) are
the reference ones until they pass all their checks, so a broken function costs
points in its own exercise only, never in a later one that calls it. A call to any
other graded function runs the student's own: the reference never does work the
exercise asked the student to do.
"""

from __future__ import annotations

import inspect
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..core.authored import error_place, said
from ..core.diagnosis import Call
from ..core.errors import AuthorError, Failure, StudentError
from ..core.intake import Intake, IntakeError, Refusal, open_submission
from ..core.lesson import Lesson
from ..core.scope import reference_calls
from ..core.settings import Isolation, Settings
from ..sandbox import Executor
from ..sandbox.inprocess import InProcess, Refused
from ..sandbox.inside.worker import compile_source, describe_signature, signature_text
from ..sandbox.session import Sandboxed
from ..sandbox.wardens import settle


def load_reference(path: Path, exercises: tuple[str, ...]) -> dict:
    """The reference's graded functions, ``exercises`` (trusted code, run in this process)."""
    _, code = compile_source(Path(path).read_bytes(), str(path))
    namespace: dict = {"__name__": "reference"}
    exec(code, namespace)
    return {name: namespace[name] for name in exercises}


def reference_of(lesson: Lesson) -> dict | None:
    """``lesson``'s reference functions (None in a student release); AuthorError, at the line of
    the reference where it stops, when it cannot be loaded."""
    reference = lesson.reference
    if reference is None:
        return None
    try:
        return load_reference(reference, lesson.exercises)
    except Exception as err:  # noqa: BLE001 - the lesson's reference: its author's to mend, at its line
        path, line = error_place(lesson, err, (reference, 1)) or (reference, 1)
        where = Path(path).relative_to(lesson.root) if lesson.root in Path(path).parents else path
        raise AuthorError([f"{where}:{line}: the reference cannot be loaded: {said(err)}"]) from None


#: Calls of one example kept for the diagnosis (a check makes a handful).
RECORDED_CALLS = 8


def _recorded(arguments: dict, outcome) -> Call:
    """A call as the diagnosis reads it. The arrays are the check's own, drawn afresh for each
    example: :meth:`StudentView.failed_calls` copies them when an example fails."""
    if outcome.ok:
        return Call(arguments, outcome.value, mutated=outcome.mutated)
    return Call(arguments, None, False, str(outcome.failure), outcome.raised)


class StudentView:
    """The student's functions as one exercise's checks see them."""

    def __init__(self, executor: Executor, exercise: str, reference: dict, replace=lambda: None):
        self._executor = executor
        self._exercise = exercise
        self._replace = replace  # () -> the other graded functions the reference must stand in for
        self._reference = reference
        self._signatures = {n: _Binder(inspect.signature(f)) for n, f in reference.items()}
        self._approved: dict[str, object] = {}  # name -> the signature already found right
        self.mutated: tuple[str, ...] = ()
        """Names of the arguments the last call changed in place."""
        self.calls: list[Call] = []
        """The calls of this exercise's own function since :meth:`begin` (one example's), for the
        diagnosis of a failed check."""
        self.tape = None
        """While a property is replayed (:mod:`grader.engine.replay`): what every call goes
        through, to be kept or answered from what was kept."""
        self.answers = 0
        """Calls of the student's code that came back with an answer, every check's together."""

    def begin(self) -> None:
        """A new example starts: forget the calls of the last one."""
        self.calls.clear()
        self._executor.begin_example()
        if self.tape is not None:
            self.tape.begin()

    def failed_calls(self) -> tuple[Call, ...]:
        """The calls of an example that failed, with copies of their arrays."""
        return tuple(
            replace(
                call,
                arguments={
                    k: v.copy() if isinstance(v, np.ndarray) else v for k, v in call.arguments.items()
                },
            )
            for call in self.calls
        )

    def __getattr__(self, name: str):
        if name.startswith("_") or name not in self._reference:
            raise AttributeError(name)
        return lambda *args, **kwargs: self.call(name, *args, **kwargs)

    def call(self, name: str, *args, **kwargs):
        """Call the student's ``name`` on the arguments; return a checked copy of the result."""
        return self._invoke(name, args, kwargs, audit=False)

    def audited(self, name: str, *args, **kwargs):
        """Call ``name`` and learn for sure which array arguments it changed (in
        :attr:`mutated`): the student's code runs where it cannot hide that. Returns what
        it returned, as a plain call does."""
        return self._invoke(name, args, kwargs, audit=True)

    def _invoke(self, name: str, args: tuple, kwargs: dict, *, audit: bool):
        if self._executor.problem:
            raise StudentError(self._executor.problem, kind=Failure.LOAD)
        theirs = self._executor.signatures.get(name)
        if self._approved.get(name) is not theirs:
            self._approve(name, theirs)
        arguments = self._signatures[name].bind(args, kwargs)
        if self.tape is not None:
            outcome = self.tape.call(name, arguments, audit, lambda: self._sent(name, arguments, audit))
        else:
            outcome = self._sent(name, arguments, audit)
        self.answers += 1
        if name == self._exercise and len(self.calls) < RECORDED_CALLS:
            self.calls.append(_recorded(arguments, outcome))
        if not outcome.ok:
            raise StudentError(outcome.message, kind=outcome.failure, raised=outcome.raised)
        self.mutated = outcome.mutated
        return outcome.value

    def _sent(self, name: str, arguments: dict, audit: bool):
        """The call as the executor runs it."""
        if audit:
            return self._executor.audited_call(self._exercise, name, arguments, replace=self._replace())
        return self._executor.call(self._exercise, name, arguments, replace=self._replace())

    def _approve(self, name: str, theirs) -> None:
        """Raise StudentError unless the student's ``name`` is a function with the right signature."""
        if theirs is None:
            raise StudentError(f"`{name}` is not defined in your file.", kind=Failure.MISSING)
        if isinstance(theirs, str):
            raise StudentError(f"`{name}` in your file is {theirs}.", kind=Failure.MISSING)
        wanted = describe_signature(self._reference[name])
        if [tuple(p) for p in theirs] != [tuple(p) for p in wanted]:
            raise StudentError(
                f"`{name}` must be defined as `def {signature_text(name, wanted)}`, "
                f"but yours is `def {signature_text(name, theirs)}`.",
                kind=Failure.SIGNATURE,
            )
        self._approved[name] = theirs


class _Binder:
    """A reference function's signature binding the arguments a check passes, as
    ``signature.bind(...).arguments`` does (every name given, in the signature's order, no
    default filled in), in a few dictionary steps where its parameters are all plain ones;
    inspect's own binding, with its errors, otherwise (a tenth of a millisecond per call)."""

    def __init__(self, signature: inspect.Signature):
        self.signature = signature
        params = signature.parameters.values()
        self.plain = all(p.kind is p.POSITIONAL_OR_KEYWORD for p in params)
        self.order = tuple(signature.parameters)
        self.required = frozenset(p.name for p in params if p.default is p.empty)

    def bind(self, args: tuple, kwargs: dict) -> dict:
        if self.plain and len(args) <= len(self.order):
            given = dict(zip(self.order, args, strict=False))  # args may be fewer
            if not any(k in given or k not in self.signature.parameters for k in kwargs):
                given.update(kwargs)
                if self.required <= given.keys():
                    return {name: given[name] for name in self.order if name in given}
        return dict(self.signature.bind(*args, **kwargs).arguments)


class Submission:
    """A submission of ``lesson`` opened for grading: the reference, an executor, one view per
    exercise.

    ``submission`` is what :func:`grader.core.intake.open_submission` took in, its
    refusal, or a path for it to take in (a refusal becomes the submission's problem). Without
    the reference (a student release has none), the signatures come from the
    stubs and each exercise runs with the student's own versions of the other
    functions.
    """

    def __init__(self, submission: Intake | IntakeError | Path, *, lesson: Lesson, settings: Settings):
        self.lesson = lesson
        limits = settings.limits
        reference = lesson.reference
        helpers = reference_of(lesson)
        #: exercise -> the other exercises its reference calls: the only ones the reference may
        #: stand in for while it is checked
        self.scope = (
            reference_calls(reference.read_text(encoding="utf-8"), lesson.exercises)
            if reference is not None
            else {}
        )
        # without a reference, the stubs: they share every signature
        self.reference = helpers or load_reference(lesson.stubs, lesson.exercises)
        level = settle(settings, lesson.private).level
        self.executor: Executor
        try:
            if isinstance(submission, IntakeError):
                raise submission
            if isinstance(submission, Intake):
                intake = submission
            else:
                intake = open_submission(submission, lesson.filename)
        except IntakeError as err:
            self.executor = Refused(err.message, level, unfinished=err.kind is Refusal.UNFINISHED)
        else:
            if level is Isolation.NONE:
                self.executor = InProcess(intake, exercises=lesson.exercises, helpers=helpers, limits=limits)
            else:
                self.executor = Sandboxed(
                    intake,
                    helpers=helpers,
                    level=level,
                    limits=limits,
                    lesson=lesson,
                    remember=settings.replay,
                )
        self._views: dict[str, StudentView] = {}
        self._expected: dict[str, int] = {}  # exercise -> checks selected in this run
        self._done: dict[str, int] = {}
        self._failed: set[str] = set()

    @property
    def runs_here(self) -> bool:
        """Whether the student's code runs in this process (no sandbox)."""
        return isinstance(self.executor, InProcess)

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

        Only functions that ``exercise``'s reference itself calls (:attr:`scope`) are
        candidates; of those, one whose every check already passed in this run stays the
        student's own (its calls need no trip to the trusted side), and any other, broken or
        not checked (yet), is replaced, so a mistake in it never costs points here. A call to
        a graded function the reference does not call runs the student's own function.
        """
        return tuple(
            other
            for other in self.lesson.exercises
            if other in self.scope.get(exercise, ())
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
    def isolation(self) -> Isolation:
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
