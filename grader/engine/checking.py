"""Running one graded check, with or without pytest: its profile, its inputs recorded, its call.

Both ways of running a lesson's checks use this module: pytest's, through the grader's plugin
(:mod:`grader.engine.plugin`, whose hooks are thin), and the grader's own
(:mod:`grader.engine.direct`), which runs them without loading pytest at all. Nothing here
imports pytest, so the second never pays for it.
"""

from __future__ import annotations

import contextlib
import functools

from hypothesis import HealthCheck, Phase
from hypothesis import settings as hypothesis_settings

from ..core.errors import Failure, PropertyFailure, StudentError, StudentTimeout
from ..core.lesson import Lesson
from ..core.settings import EXPLORE_EXAMPLES, GRADING_EXAMPLES, Profile, Settings
from . import replay
from .draw import drew_large, lesson_sized_only
from .submission import StudentView, Submission
from .upkeep import OURS, give_seed

PROFILES = {
    # The same submission always gets the same score: fixed seeds, no memory
    # of earlier runs, no wall-clock deadline, a bounded number of examples.
    Profile.GRADING: dict(
        derandomize=True,
        database=None,
        deadline=None,
        max_examples=GRADING_EXAMPLES,
        phases=(Phase.explicit, Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        print_blob=False,
    ),
    # For students hunting a bug: new random inputs on every run, more of them.
    Profile.EXPLORE: dict(
        derandomize=False,
        deadline=None,
        max_examples=EXPLORE_EXAMPLES,
        phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        print_blob=False,
    ),
}


def load_profile(settings: Settings) -> None:
    """Make the Hypothesis profile ``settings`` ask for (with their number of examples) the
    default of every check."""
    for profile, values in PROFILES.items():
        hypothesis_settings.register_profile(profile.value, **values)
    profile, examples = settings.profile.value, settings.max_examples
    if examples is not None:
        hypothesis_settings.register_profile(
            f"{profile}-{examples}", hypothesis_settings.get_profile(profile), max_examples=examples
        )
        profile = f"{profile}-{examples}"
    hypothesis_settings.load_profile(profile)


def replay_key(lesson: Lesson, nodeid: str, settings: Settings) -> tuple:
    """What the examples of the check ``nodeid`` (as pytest names it: its file relative to the
    course, ``::``, its name) of ``lesson`` are kept under (:mod:`grader.engine.replay`) in a run
    with ``settings``: its lesson, its node, how it is seeded and the examples per property."""
    return (str(lesson.checks), nodeid, replay.DERANDOMIZED, settings.examples)


#: Arguments that are not inputs of the student's function.
_NOT_INPUTS = ("student", "data")
#: Failures that no input causes: the file did not load, a function is missing or has the wrong
#: signature, or it is still the stub that raises NotImplementedError (the feedback shows no
#: input for them). Every example fails alike, so the search for a smaller one would cost a
#: fraction of a second per check (most of a stub's grading) and find nothing.
SETTLED = (Failure.LOAD, Failure.MISSING, Failure.SIGNATURE, Failure.NOT_IMPLEMENTED)


class Settled(BaseException):
    """Carries such a StudentError out of Hypothesis at its first example (a BaseException, as
    StudentTimeout is: Hypothesis neither retries nor shrinks it); the check then fails with the
    StudentError itself (:func:`unsettled`)."""

    def __init__(self, error: StudentError):
        super().__init__(error.message)
        self.error = error


def record_inputs(check) -> None:
    """Make the Hypothesis check ``check`` (the function pytest calls) attach its arguments, and
    the calls of its exercise's function, to whatever it raises, and stop at once on a failure
    that does not depend on them (:data:`SETTLED`).

    Hypothesis re-raises the error of the smallest example last, so the
    arguments found on the error are the smallest failing input.
    """
    hypothesis = getattr(check, "hypothesis", None)
    if hypothesis is None or getattr(hypothesis.inner_test, "_records_inputs", False):
        return
    inner = hypothesis.inner_test

    @functools.wraps(inner)
    def recorded(*args, **kwargs):
        view = kwargs.get("student")
        if isinstance(view, StudentView):
            view.begin()
        ended = None
        try:
            return inner(*args, **kwargs)
        except BaseException as err:
            ended = err
            err.grader_large = drew_large()  # the example drew a large size: see lesson_sized
            err.grader_inputs = {k: v for k, v in kwargs.items() if k not in _NOT_INPUTS}
            err.grader_calls = view.failed_calls() if isinstance(view, StudentView) else ()
            if isinstance(err, StudentError) and err.kind in SETTLED:
                raise Settled(err) from None
            raise
        finally:
            drew_large(forget=True)  # the next example draws its own sizes
            if isinstance(view, StudentView) and view.tape is not None:
                view.tape.end(ended)

    recorded._records_inputs = True
    hypothesis.inner_test = recorded


def replayed(
    check,
    fixtures: dict,
    *,
    lesson: Lesson | None,
    nodeid: str,
    settings: Settings,
    submission: Submission | None,
) -> bool:
    """Run the graded check ``check`` with ``fixtures``, its examples replayed where this
    process knows them (:mod:`grader.engine.replay`), and say True; False (after giving it its
    seed, where it is a Hypothesis check) where replay is off or does not apply: the caller
    then calls ``check(**fixtures)`` itself. Raises as the check fails."""
    handle = getattr(check, "hypothesis", None)
    if handle is None or not getattr(handle.inner_test, "_records_inputs", False):
        return False
    view = fixtures.get("student")
    if (
        not settings.replay
        or not settings.derandomized
        or not getattr(check, OURS, False)
        or not replay.supported()
        or not isinstance(view, StudentView)
        or lesson is None
    ):
        give_seed(check)
        return False
    replay.run(
        check,
        key=replay_key(lesson, nodeid, settings),
        fixtures=fixtures,
        view=view,
        keep=submission is not None and not submission.runs_here,
        settled=Settled,
        engine=lambda: give_seed(check),
    )
    return True


def called(check, fixtures: dict, **where) -> None:
    """Run the graded check ``check`` with ``fixtures`` as pytest's plugin runs it
    (``where``: as :func:`replayed` takes them), without pytest: replayed where it can be,
    else called."""
    with settling(check, fixtures):
        if not replayed(check, fixtures, **where):
            check(**fixtures)


@contextlib.contextmanager
def settling(check, fixtures: dict):
    """Around the call of the check ``check`` with ``fixtures`` (by :func:`called`, or by
    pytest): nothing drawn before it counts as its own, and whatever it raises is made what the
    report reads (:func:`unsettled`)."""
    drew_large(forget=True)  # nothing drawn before this check (by another, or ahead) says a thing
    try:
        yield
    except BaseException as err:  # noqa: BLE001 - each kind is sorted out by unsettled
        other = unsettled(err, check, fixtures)
        if other is err:
            raise
        raise other from None


def unsettled(err: BaseException, check, fixtures: dict) -> BaseException:
    """What a check that raised ``err`` fails with: the StudentError a :class:`Settled` carries;
    for a failure first found on a large example, the same kind of failure on a lesson-sized one
    where one fails so (:func:`lesson_sized`); else ``err`` itself."""
    if isinstance(err, Settled):
        return err.error
    if isinstance(err, (PropertyFailure, StudentError)) and getattr(err, "grader_large", False):
        smaller = lesson_sized(check, fixtures, type(err))
        if smaller is not None:
            return smaller
    return err


def lesson_sized(check, fixtures: dict, kind: type) -> BaseException | None:
    """The check's failure on a lesson-sized example (:func:`grader.engine.draw.lesson_sized_only`),
    of the same ``kind`` as the failure first found on a large one; None when no lesson-sized
    example fails so (the large one is then what the student is shown). Only the example shown
    changes: the check failed already, and fails either way."""
    give_seed(check)
    try:
        with lesson_sized_only():
            check(**fixtures)
    except kind as found:
        return None if getattr(found, "grader_large", False) else found
    except (Exception, StudentTimeout, Settled):  # noqa: BLE001 - any other end: the first failure stands
        return None
    return None
