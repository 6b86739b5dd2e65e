"""The errors of the grader, told apart by whose they are: the student's, the course's, the grader's."""

from __future__ import annotations

from .enums import StrEnum


class Failure(StrEnum):
    """How a call of a student's function failed: what :class:`StudentError` says of itself."""

    MISSING = "missing"  # not defined, or not a function
    NOT_IMPLEMENTED = "not_implemented"  # still the stub
    SIGNATURE = "signature"  # defined with other parameters
    RAISED = "raised"  # it raised an exception
    RETURN = "return"  # it returned something that is no plain numeric array
    LOAD = "load"  # the file as a whole could not be loaded
    CRASHED = "crashed"  # it ended its worker or the sandbox


class StudentError(Exception):
    """The student's code failed in a way that is theirs to fix."""

    def __init__(self, message: str, *, kind: Failure = Failure.RAISED, raised: tuple[str, ...] = ()):
        super().__init__(message)
        self.message = message
        self.kind = Failure(kind)
        self.raised = tuple(raised)  # for RAISED: the exception's class and its bases, by name


class StudentTimeout(BaseException):
    """A call ran past its time limit.

    A ``BaseException`` on purpose: Hypothesis does not retry or shrink it, so a
    stuck function costs one time limit per check, not hundreds.
    """

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class Unfinished(StudentTimeout):
    """A call was stopped by a wall-clock guard while its processor time was still within the
    limit: the machine did not give the student's code its time. Not the student's doing; a
    grade that holds one is not final (see :mod:`grader.sandbox.clock`)."""


class PropertyFailure(AssertionError):
    """A property of the student's function does not hold."""


class LessonError(Exception):
    """No course, or no such lesson or exercise; the message says which exist and what to pass."""


class AuthorError(Exception):
    """A mistake in a lesson's own files (a check, its mark, a strategy, ``diagnoses.py``,
    ``pictures.py``, ``work.py``, the reference): the lesson's author's to mend, neither the
    student's nor the grader's. ``places`` holds each ``FILE:LINE: what`` found."""

    def __init__(self, places: tuple[str, ...] | list[str]):
        self.places = tuple(places)
        super().__init__("; ".join(self.places))


class GraderError(RuntimeError):
    """The grader could not run its checks (not the student's fault)."""


class IsolationRefused(Exception):
    """The isolation asked for cannot be given safely here; the message says what to do."""


class UsageError(Exception):
    """What the command line asked for cannot be done (a roster without the column named, ...);
    the message says why and what to pass instead."""
