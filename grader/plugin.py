"""The pytest plugin behind the checks: options, Hypothesis profiles, the ``student`` fixture.

Loaded with ``-p grader.plugin`` (the project's pytest settings do so). The
checks of lesson NAME, in ``tests/checks/NAME/`` of a course, take a ``student``
argument: the submission's functions as their exercise sees them (see
:mod:`grader.submission`). A check's lesson is known from its path.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings

from .lesson import Lesson, LessonError, check_of
from .marks import MARK, MarkError, grading_of
from .results import Visibility
from .sandbox import LEVELS, Limits
from .submission import DEFAULT_CALL_TIMEOUT, StudentError, Submission

#: Examples per property when grading. The whole catalog of student bugs is
#: caught from 8 examples on (benchmarks/bench_grader.py --power measures it;
#: tests/test_catalog.py asserts it at this value): 20 leaves a margin for
#: bugs nobody has catalogued yet while a full run stays near a second.
GRADING_EXAMPLES = 20
#: Examples per property when a student explores locally with fresh randomness.
EXPLORE_EXAMPLES = 400

PROFILES = {
    # The same submission always gets the same score: fixed seeds, no memory
    # of earlier runs, no wall-clock deadline, a bounded number of examples.
    "grading": dict(
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
    "explore": dict(
        derandomize=False,
        deadline=None,
        max_examples=EXPLORE_EXAMPLES,
        phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        print_blob=False,
    ),
}

#: The submission under test of each lesson, by the lesson's checks folder.
_SUBMISSIONS = pytest.StashKey[dict]()
#: What :func:`grader.lesson.check_of` said of each folder of test files.
_CHECK_FOLDERS = pytest.StashKey[dict]()


def pytest_addoption(parser):
    """Options of the checks: which file to check and how hard."""
    group = parser.getgroup("grader", "autograder")
    group.addoption(
        "--submission",
        default=None,
        help="the file to check (default: the lesson's reference solution, or its stubs where there is none)",
    )
    group.addoption(
        "--profile",
        dest="grading_profile",
        choices=sorted(PROFILES),
        default="grading",
        help="Hypothesis profile: 'grading' (deterministic) or 'explore' (random, more examples)",
    )
    group.addoption(
        "--isolation",
        choices=("auto", *LEVELS),
        default="none",
        help="how to run student code: auto (the best available), namespaces, process or none (default)",
    )
    group.addoption(
        "--total-timeout",
        type=float,
        default=None,
        help="seconds the whole submission may take (sandboxed runs only)",
    )
    group.addoption(
        "--max-examples",
        type=int,
        default=None,
        help="examples per property (default: the profile's)",
    )
    group.addoption(
        "--call-timeout",
        type=float,
        default=DEFAULT_CALL_TIMEOUT,
        help="seconds one call of a student function may take",
    )


def pytest_configure(config):
    """Register the mark and load the chosen Hypothesis profile."""
    config.addinivalue_line(
        "markers", f"{MARK}(exercise, points, visibility): a graded check (see grader.marks)"
    )
    for name, values in PROFILES.items():
        settings.register_profile(name, **values)
    profile = config.getoption("grading_profile")
    examples = config.getoption("max_examples")
    if examples is not None:
        if examples < 1:
            raise pytest.UsageError(f"--max-examples must be at least 1, got {examples}")
        settings.register_profile(
            f"{profile}-{examples}", settings.get_profile(profile), max_examples=examples
        )
        profile = f"{profile}-{examples}"
    settings.load_profile(profile)


def _check(item) -> tuple[Lesson, bool] | None:
    """(lesson, hidden?) of a check, None for a test that is no check (LessonError: a check
    in a folder that is no lesson). Learnt once per folder."""
    folder = Path(str(item.path)).parent
    known = item.config.stash.setdefault(_CHECK_FOLDERS, {})
    if folder not in known:
        try:
            known[folder] = check_of(Path(str(item.path)))
        except LessonError as err:
            known[folder] = err
    if isinstance(known[folder], LessonError):
        raise known[folder]
    return known[folder]


def lesson_of(item) -> Lesson | None:
    """The lesson a collected check belongs to (None for a test that is no check)."""
    found = _check(item)
    return None if found is None else found[0]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Every check carries a valid graded mark naming an exercise of its lesson, hidden ones
    only under the lesson's ``hidden/``."""
    problems, seen, checks = [], set(), []
    for item in items:
        try:
            found = _check(item)
        except LessonError as err:
            problems.append(f"{item.nodeid}: {err}")
            continue
        if found is None:
            continue
        lesson, in_hidden = found
        checks.append(item)
        if item.name in seen:
            problems.append(f"{item.nodeid}: another check has the name {item.name}; names must be unique")
        seen.add(item.name)
        try:
            grading = grading_of(item, lesson.exercises)
        except MarkError as err:
            problems.append(f"{item.nodeid}: {err} (the exercises of lesson {lesson.name})")
            continue
        if grading is None:
            problems.append(f"{item.nodeid}: a check without a @graded(...) mark")
            continue
        if in_hidden != (grading.visibility is Visibility.HIDDEN):
            problems.append(
                f"{item.nodeid}: visibility {grading.visibility.value!r} but the file is "
                f"{'in' if in_hidden else 'outside'} tests/checks/{lesson.name}/hidden"
            )
    if problems:
        raise pytest.UsageError("invalid graded checks:\n  " + "\n  ".join(problems))
    for item in checks:
        _record_inputs(item)


#: Arguments that are not inputs of the student's function.
_NOT_INPUTS = ("student", "data")
#: Failures that no input causes: the file did not load, a function is missing or has the wrong
#: signature (the feedback shows no input for them). Every example fails alike, so the search
#: for a smaller one would cost a fraction of a second per check and find nothing.
_SETTLED = ("load", "missing", "signature")


class Settled(BaseException):
    """Carries such a StudentError out of Hypothesis at its first example (a BaseException, as
    StudentTimeout is: Hypothesis neither retries nor shrinks it); the check then fails with the
    StudentError itself (:func:`pytest_pyfunc_call`)."""

    def __init__(self, error: StudentError):
        super().__init__(error.message)
        self.error = error


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    try:
        return (yield)
    except Settled as settled:
        raise settled.error from None


def _record_inputs(item) -> None:
    """Make a Hypothesis check attach its arguments to whatever it raises, and stop at once on
    a failure that does not depend on them (:data:`_SETTLED`).

    Hypothesis re-raises the error of the smallest example last, so the
    arguments found on the error are the smallest failing input.
    """
    hypothesis = getattr(getattr(item, "obj", None), "hypothesis", None)
    if hypothesis is None or getattr(hypothesis.inner_test, "_records_inputs", False):
        return
    inner = hypothesis.inner_test

    @functools.wraps(inner)
    def recorded(*args, **kwargs):
        try:
            return inner(*args, **kwargs)
        except BaseException as err:
            err.grader_inputs = {k: v for k, v in kwargs.items() if k not in _NOT_INPUTS}
            if isinstance(err, StudentError) and err.kind in _SETTLED:
                raise Settled(err) from None
            raise

    recorded._records_inputs = True
    hypothesis.inner_test = recorded


def submission_of(config, lesson: Lesson, *, create: bool = True) -> Submission | None:
    """The submission of ``lesson`` under test, loaded on first use (None if not loaded and
    not ``create``)."""
    opened = config.stash.setdefault(_SUBMISSIONS, {})
    if lesson.checks not in opened:
        if not create:
            return None
        limits = Limits(call_timeout=config.getoption("call_timeout"))
        if config.getoption("total_timeout") is not None:
            limits = Limits(call_timeout=limits.call_timeout, total_timeout=config.getoption("total_timeout"))
        opened[lesson.checks] = Submission(
            Path(config.getoption("submission") or lesson.source),
            lesson=lesson,
            isolation=config.getoption("isolation"),
            limits=limits,
        )
    return opened[lesson.checks]


def pytest_collection_finish(session):
    """Tell each submission how many checks of each exercise this run holds."""
    counts: dict[Path, dict[str, int]] = {}
    for item in session.items:
        lesson, grading = lesson_of(item), grading_of(item)
        if lesson is not None and grading is not None:
            mine = counts.setdefault(lesson.checks, {})
            mine[grading.exercise] = mine.get(grading.exercise, 0) + 1
    for checks, submission in session.config.stash.get(_SUBMISSIONS, {}).items():
        submission.expect(counts.get(checks, {}))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Record each check's end: a function whose checks all pass may serve the next exercise."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" or (report.when == "setup" and not report.passed):
        lesson, grading = lesson_of(item), grading_of(item)
        submission = submission_of(item.config, lesson, create=False) if lesson is not None else None
        if submission is not None and grading is not None:
            submission.record(grading.exercise, report.passed)


def provide_submission(config, submission: Submission) -> None:
    """Use a submission opened before pytest started (its workers boot during collection)."""
    config.stash.setdefault(_SUBMISSIONS, {})[submission.lesson.checks] = submission


def pytest_unconfigure(config):
    """End the workers: nothing the student's code started outlives the run."""
    for submission in config.stash.get(_SUBMISSIONS, {}).values():
        submission.close()


@pytest.fixture
def student(request):
    """The submission's functions as seen by this check's exercise."""
    lesson, grading = lesson_of(request.node), grading_of(request.node)
    if lesson is None or grading is None:
        raise pytest.UsageError(
            f"{request.node.nodeid} uses `student` but is no graded check of a lesson "
            "(tests/checks/NAME/ of a course, with a @graded mark)"
        )
    return submission_of(request.config, lesson).view(grading.exercise)
