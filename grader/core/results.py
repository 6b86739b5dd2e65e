"""What grading produces: small frozen dataclasses and enums, serialised by :mod:`grader.formats`."""

from __future__ import annotations

from dataclasses import dataclass, field

from .diagnosis import Diagnosis
from .enums import StrEnum
from .errors import Failure
from .pictures import Heatmap
from .settings import Isolation

#: Where a failed check's feedback turns from what went wrong to the smallest input that shows it
#: (written by :func:`grader.engine.feedback.paragraph`, read by the reporters).
EXAMPLE_LEAD = "\nSmallest input found:\n"


#: The exit code of a command whose grade is not final because the machine was too busy
#: (``EX_TEMPFAIL`` of sysexits.h: a temporary failure; the same command may succeed later).
UNFINISHED_EXIT = 75


class Status(StrEnum):
    """How one check ended."""

    PASSED = "passed"
    FAILED = "failed"  # the code ran but broke the property
    ERROR = "error"  # the code could not run: missing, raised, wrong signature
    TIMEOUT = "timeout"  # the code ran past its time limit
    UNFINISHED = "unfinished"  # the machine was too busy to let the code finish: no verdict


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
    feedback: str = ""
    """Why it failed (empty when it passed): message, smallest input, student line."""
    counterexample: str = ""
    """The smallest input Hypothesis found, as text (empty if none)."""

    __test__ = False  # not a pytest test class

    @property
    def unfinished(self) -> bool:
        """Whether a wall-clock guard stopped this check: its ``score`` is then no verdict."""
        return self.status is Status.UNFINISHED


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

    @property
    def score(self) -> float:
        return _total(t.score for t in self.tests)

    @property
    def unfinished(self) -> bool:
        """Whether a wall-clock guard stopped a check: the score is then no grade."""
        return any(t.unfinished for t in self.tests)

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
