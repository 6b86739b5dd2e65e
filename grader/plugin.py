"""The pytest plugin behind the checks: options, Hypothesis profiles, the ``student`` fixture.

Loaded with ``-p grader.plugin`` (the project's pytest settings do so). The
checks in ``tests/checks`` take a ``student`` argument: the submission's
functions as their exercise sees them (see :mod:`grader.submission`).
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings

from . import paths
from .marks import MARK, MarkError, grading_of
from .results import Visibility
from .sandbox import LEVELS, Limits
from .submission import DEFAULT_CALL_TIMEOUT, Submission

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

_SUBMISSION = pytest.StashKey[Submission]()


def pytest_addoption(parser):
    """Options of the checks: which file to check and how hard."""
    group = parser.getgroup("grader", "attention autograder")
    group.addoption(
        "--submission",
        default=str(paths.SOLUTION if paths.SOLUTION.is_file() else paths.EXERCISE),
        help="the attention.py to check (default: the reference solution, or the stubs where there is none)",
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


def _in_checks(item) -> bool:
    return paths.CHECKS in Path(str(item.path)).resolve().parents


def pytest_collection_modifyitems(config, items):
    """Every check carries a valid graded mark, hidden ones only under ``hidden/``."""
    problems, seen = [], set()
    for item in items:
        if not _in_checks(item):
            continue
        if item.name in seen:
            problems.append(f"{item.nodeid}: another check has the name {item.name}; names must be unique")
        seen.add(item.name)
        try:
            grading = grading_of(item)
        except MarkError as err:
            problems.append(f"{item.nodeid}: {err}")
            continue
        if grading is None:
            problems.append(f"{item.nodeid}: a check without a @graded(...) mark")
            continue
        in_hidden = "hidden" in Path(str(item.path)).relative_to(paths.CHECKS).parts
        if in_hidden != (grading.visibility is Visibility.HIDDEN):
            problems.append(
                f"{item.nodeid}: visibility {grading.visibility.value!r} but the file is "
                f"{'in' if in_hidden else 'outside'} tests/checks/hidden"
            )
    if problems:
        raise pytest.UsageError("invalid graded checks:\n  " + "\n  ".join(problems))
    for item in items:
        if _in_checks(item):
            _record_inputs(item)


#: Arguments that are not inputs of the student's function.
_NOT_INPUTS = ("student", "data")


def _record_inputs(item) -> None:
    """Make a Hypothesis check attach its arguments to whatever it raises.

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
            raise

    recorded._records_inputs = True
    hypothesis.inner_test = recorded


def submission_of(config, *, create: bool = True) -> Submission | None:
    """The submission under test, loaded on first use (None if not loaded and not ``create``)."""
    if _SUBMISSION not in config.stash:
        if not create:
            return None
        limits = Limits(call_timeout=config.getoption("call_timeout"))
        if config.getoption("total_timeout") is not None:
            limits = Limits(call_timeout=limits.call_timeout, total_timeout=config.getoption("total_timeout"))
        config.stash[_SUBMISSION] = Submission(
            Path(config.getoption("submission")),
            reference=paths.SOLUTION,
            isolation=config.getoption("isolation"),
            limits=limits,
        )
    return config.stash[_SUBMISSION]


def pytest_collection_finish(session):
    """Tell the submission how many checks of each exercise this run holds."""
    submission = submission_of(session.config, create=False)
    if submission is not None:
        counts: dict[str, int] = {}
        for item in session.items:
            grading = grading_of(item)
            if grading is not None:
                counts[grading.exercise] = counts.get(grading.exercise, 0) + 1
        submission.expect(counts)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Record each check's end: a function whose checks all pass may serve the next exercise."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" or (report.when == "setup" and not report.passed):
        submission = submission_of(item.config, create=False)
        grading = grading_of(item)
        if submission is not None and grading is not None:
            submission.record(grading.exercise, report.passed)


def provide_submission(config, submission: Submission) -> None:
    """Use a submission opened before pytest started (its workers boot during collection)."""
    config.stash[_SUBMISSION] = submission


def pytest_unconfigure(config):
    """End the worker: nothing the student's code started outlives the run."""
    submission = submission_of(config, create=False)
    if submission is not None:
        submission.close()


@pytest.fixture
def student(request):
    """The submission's functions as seen by this check's exercise."""
    grading = grading_of(request.node)
    if grading is None:
        raise pytest.UsageError(f"{request.node.nodeid} uses `student` without a @graded mark")
    return submission_of(request.config).view(grading.exercise)
