"""What grading produces: small frozen dataclasses and enums, serialised by :mod:`grader.formats`."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

from .diagnosis import Diagnosis
from .enums import StrEnum
from .errors import Failure
from .pictures import Heatmap
from .settings import Isolation

#: Where a failed check's feedback turns from what went wrong to the smallest input that shows it
#: (:attr:`TestResult.feedback`).
EXAMPLE_LEAD = "\nSmallest input found:\n"


def paragraph(message: str, counterexample: str) -> str:
    """The paragraph a student reads of a failed check: ``message``, then the smallest input."""
    if not counterexample:
        return message
    return message + EXAMPLE_LEAD + textwrap.indent(counterexample, "    ")


#: The exit code of a command whose grade is not final because the machine was too busy
#: (``EX_TEMPFAIL`` of sysexits.h: a temporary failure; the same command may succeed later).
UNFINISHED_EXIT = 75
#: The exit code of a command that met a mistake in the lesson itself that kept checks from
#: running (a check, its mark, a strategy, the reference): ``EX_CONFIG`` of sysexits.h, a
#: configuration error. The report is still written, with no number; the lesson's author must
#: mend the file and line it names. (A picture or a diagnosis that could not be made is noted,
#: and the command exits as it would without it: the grade stands.)
LESSON_ERROR_EXIT = 78

#: What a student reads for a check that could not run because of a mistake in the lesson.
NOT_RUN = (
    "This check could not run: the mistake is in the lesson, not in your code. Your instructor "
    "has been told; it costs you nothing and gives you nothing until they mend it."
)


class Status(StrEnum):
    """How one check ended."""

    PASSED = "passed"
    FAILED = "failed"  # the code ran but broke the property
    ERROR = "error"  # the code could not run: missing, raised, wrong signature
    TIMEOUT = "timeout"  # the code ran past its time limit
    UNFINISHED = "unfinished"  # the machine was too busy to let the code finish: no verdict
    LESSON_ERROR = "lesson_error"  # the lesson's own check failed (its mistake): no verdict


class Visibility(StrEnum):
    """Who may see a check's details before grades are published."""

    VISIBLE = "visible"
    HIDDEN = "hidden"


class Standing(StrEnum):
    """Where a student stands in the gradebook after a batch."""

    GRADED = "graded"  # the one final standing: the same source and suite need no second look
    MISSING = "missing"  # nothing to grade was found
    UNREADABLE = "unreadable"  # a file was found that cannot be graded
    FAILED = "failed"  # grading did not finish (the grader failed)
    UNFINISHED = "unfinished"  # a wall-clock guard stopped some of it: the machine was too busy
    LESSON_ERROR = "lesson_error"  # a mistake in the lesson kept some checks from running

    @property
    def pending(self) -> bool:
        """Whether the grade is not known yet (unfinished, or the lesson kept checks from
        running): no export writes a number for it, 0 included."""
        return self in (Standing.UNFINISHED, Standing.LESSON_ERROR)


@dataclass(frozen=True)
class TestResult:
    """The outcome of one graded property."""

    name: str
    """Stable identifier: the test function's name without ``test_``."""
    exercise: str
    """The graded function this check belongs to."""
    max_score: float
    score: float
    status: Status
    visibility: Visibility
    title: str = ""
    """One line saying what the property means, in the lesson's words."""
    message: str = ""
    """Why it failed (empty when it passed), without the smallest input: its first line the
    reason, the lines after it the details (expected and got values, the student's line)."""
    counterexample: str = ""
    """The smallest input Hypothesis found, as text (empty if none)."""

    __test__ = False  # not a pytest test class

    @property
    def feedback(self) -> str:
        """The whole paragraph a student reads: :attr:`message`, then the smallest input."""
        return paragraph(self.message, self.counterexample)

    @property
    def unfinished(self) -> bool:
        """Whether this check has no verdict (a wall-clock guard stopped it, or a mistake in the
        lesson kept it from running): its ``score`` is then no grade."""
        return self.status in (Status.UNFINISHED, Status.LESSON_ERROR)


@dataclass(frozen=True)
class LessonFault:
    """A mistake in the lesson met while grading, said where its author mends it."""

    place: str
    """``FILE:LINE`` in the lesson's files."""
    message: str
    """What went wrong there, in one line."""
    graded: bool = True
    """Whether it kept checks from running (the score is then no grade); False for a picture or
    a diagnosis, which the report leaves out while the grade stands."""

    def text(self) -> str:
        return f"{self.place}: {self.message}"


@dataclass(frozen=True)
class ExerciseResult:
    """Points of one graded function, and the likely mistakes when it lost some."""

    name: str
    score: float
    max_score: float
    diagnoses: tuple[Diagnosis, ...] = ()
    unfinished: bool = False
    """Whether a wall-clock guard stopped one of its checks: ``score`` is then no grade."""


@dataclass(frozen=True)
class Report:
    """Everything known about grading one submission."""

    submission: str
    """The path that was graded, as given."""
    tests: tuple[TestResult, ...]
    problem: str = ""
    """Why the file as a whole could not be used (empty when it loaded)."""
    isolation: Isolation | None = None
    """The level the student's code was run at (None: nothing was run)."""
    diagnoses: dict[str, tuple[Diagnosis, ...]] = field(default_factory=dict)
    """Per exercise that lost points, the lesson's mistakes that fit what the student's function
    did, most likely first (:mod:`grader.core.diagnosis`)."""
    pictures: tuple[Heatmap, ...] = ()
    """The lesson's pictures of the student's functions beside the reference's
    (:mod:`grader.core.pictures`), for the HTML report."""
    lesson_errors: tuple[LessonFault, ...] = ()
    """Mistakes in the lesson met while grading, for the instructor (empty when none)."""

    @property
    def score(self) -> float:
        return _total(t.score for t in self.tests)

    @property
    def unfinished(self) -> bool:
        """Whether the score is no grade: a check has no verdict (a wall-clock guard stopped it,
        or the lesson kept it from running), or a mistake in the lesson kept checks out."""
        return any(t.unfinished for t in self.tests) or self.lesson_failed

    @property
    def lesson_failed(self) -> bool:
        """Whether a mistake in the lesson kept checks from running (a picture or a diagnosis
        that could not be made leaves the grade standing)."""
        return any(f.graded for f in self.lesson_errors)

    @property
    def busy(self) -> bool:
        """Whether a wall-clock guard stopped a check: the same grading later may finish."""
        return any(t.status is Status.UNFINISHED for t in self.tests)

    @property
    def max_score(self) -> float:
        return _total(t.max_score for t in self.tests)

    @property
    def exercises(self) -> tuple[ExerciseResult, ...]:
        """Points per exercise, in the lesson's order (the order its checks ran in)."""
        names = list(dict.fromkeys(t.exercise for t in self.tests))
        return tuple(
            ExerciseResult(
                name=n,
                score=_total(t.score for t in self.tests if t.exercise == n),
                max_score=_total(t.max_score for t in self.tests if t.exercise == n),
                diagnoses=self.diagnoses.get(n, ()),
                unfinished=any(t.unfinished for t in self.tests if t.exercise == n),
            )
            for n in names
        )


def _total(values) -> float:
    """Sum points, giving an int when every point is whole (``7`` not ``7.0``)."""
    total = round(sum(values), 6)
    return int(total) if total == int(total) else total


@dataclass(frozen=True)
class CallOutcome:
    """What one call of a student's function came to, as the code running it reports it."""

    value: object = None
    """The checked result: a plain numeric array or a tuple of them (None after a failure or
    an audited call)."""
    mutated: tuple[str, ...] = ()
    """Names of the array arguments the call changed in place."""
    failure: Failure | None = None
    """None when the call returned; else how it failed."""
    message: str = ""
    """What went wrong, for the student (empty when it returned)."""
    raised: tuple[str, ...] = ()
    """For :attr:`Failure.RAISED`: the exception's class and its bases, by name."""

    @property
    def ok(self) -> bool:
        return self.failure is None

    @classmethod
    def failed(cls, failure: Failure, message: str, raised: tuple[str, ...] = ()) -> CallOutcome:
        return cls(failure=Failure(failure), message=message, raised=tuple(raised))
