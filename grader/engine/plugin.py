"""The pytest plugin behind the checks: options, Hypothesis profiles, the ``student`` fixture.

Loaded with ``-p grader.plugin`` (the project's pytest settings do so; that
module is this one's face). The checks of lesson NAME, in ``tests/checks/NAME/``
of a course, take a ``student`` argument: the submission's functions as their
exercise sees them (see :mod:`grader.engine.submission`). A check's lesson is
known from its path.

The run's :class:`grader.core.settings.Settings` come from whoever started
pytest: :func:`grader.engine.run.run_checks` hands over its own (with the
submission, opened already); a plain ``pytest`` run resolves them once from
the options below.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..core.errors import LessonError
from ..core.lesson import Lesson, check_of
from ..core.results import Visibility
from ..core.settings import Isolation, Profile, Settings, resolve
from .checking import load_profile, record_inputs, replayed, settling
from .checking import replay_key as checking_key
from .marks import MARK, MarkError, grading_of
from .submission import Submission
from .upkeep import fix_seed

__all__ = [
    "pytest_addoption",
    "pytest_configure",
    "pytest_collection_modifyitems",
    "pytest_collection_finish",
    "pytest_runtest_makereport",
    "pytest_pyfunc_call",
    "pytest_pyfunc_call_replayed",
    "pytest_unconfigure",
    "collection_faults",
    "student",
]

#: The submission under test of each lesson, by the lesson's checks folder.
_SUBMISSIONS = pytest.StashKey[dict]()
#: What :func:`grader.core.lesson.check_of` said of each folder of test files.
_CHECK_FOLDERS = pytest.StashKey[dict]()
#: The settings of this run.
_SETTINGS = pytest.StashKey[Settings]()
#: Checks set aside at collection for a mistake of the lesson's ((file, line), what), when a
#: grading runs them (:func:`use_run`); a plain ``pytest`` run stops on them instead.
_FAULTS = pytest.StashKey[list]()


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
        choices=[p.value for p in Profile],
        default=Profile.GRADING.value,
        help="Hypothesis profile: 'grading' (deterministic) or 'explore' (random, more examples)",
    )
    group.addoption(
        "--isolation",
        choices=[i.value for i in Isolation],
        default=None,
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
        default=None,
        help="seconds one call of a student function may take (default 3)",
    )


def use_run(config, settings: Settings, submission: Submission) -> None:
    """Run with ``settings`` and a submission opened before pytest started (its workers boot
    during collection); called by :func:`grader.engine.run.run_checks` before
    :func:`pytest_configure`."""
    config.stash[_SETTINGS] = settings
    config.stash.setdefault(_SUBMISSIONS, {})[submission.lesson.checks] = submission
    config.stash[_FAULTS] = []


def collection_faults(config) -> list[tuple[tuple[Path, int], str]]:
    """The checks a grading set aside when it collected them, each ((file, line), why): a mark
    that is wrong, a name taken twice, a check without a mark or in the wrong folder."""
    return list(config.stash.get(_FAULTS, []))


def settings_of(config) -> Settings:
    """This run's settings: those handed over, else resolved once from the options."""
    if _SETTINGS not in config.stash:
        try:
            config.stash[_SETTINGS] = resolve(
                "pytest",
                isolation=config.getoption("isolation"),
                call_timeout=config.getoption("call_timeout"),
                total_timeout=config.getoption("total_timeout"),
                max_examples=config.getoption("max_examples"),
                explore=config.getoption("grading_profile") == Profile.EXPLORE.value,
            )
        except ValueError as err:
            raise pytest.UsageError(str(err)) from None
    return config.stash[_SETTINGS]


def pytest_configure(config):
    """Register the mark and load the chosen Hypothesis profile."""
    config.addinivalue_line(
        "markers", f"{MARK}(exercise, points, visibility): a graded check (see grader.marks)"
    )
    load_profile(settings_of(config))


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
    only under the lesson's ``hidden/``; the hidden checks run after every other test."""
    problems, seen, checks, bad = [], set(), [], set()

    def problem(item, message: str) -> None:
        problems.append((item, message))
        bad.add(id(item))

    for item in items:
        try:
            found = _check(item)
        except LessonError as err:
            problem(item, str(err))
            continue
        if found is None:
            continue
        lesson, in_hidden = found
        checks.append(item)
        if item.name in seen:
            problem(item, f"another check has the name {item.name}; names must be unique")
            continue
        seen.add(item.name)
        try:
            grading = grading_of(item, lesson.exercises)
        except MarkError as err:
            problem(item, f"{err} (the exercises of lesson {lesson.name})")
            continue
        if grading is None:
            problem(item, "a check without a @graded(...) mark")
            continue
        if in_hidden != (grading.visibility is Visibility.HIDDEN):
            problem(
                item,
                f"visibility {grading.visibility.value!r} but the file is "
                f"{'in' if in_hidden else 'outside'} tests/checks/{lesson.name}/hidden",
            )
    if problems and _FAULTS not in config.stash:  # a plain pytest run: stop, saying which
        lines = [f"{item.nodeid}: {message}" for item, message in problems]
        raise pytest.UsageError("invalid graded checks:\n  " + "\n  ".join(lines))
    for item, message in problems:  # a grading: each set aside, said at its place in the lesson
        path, line, _ = item.reportinfo()
        config.stash[_FAULTS].append(((Path(str(path)), (line or 0) + 1), f"{item.name}: {message}"))
    if bad:
        dropped = [item for item in items if id(item) in bad]
        items[:] = [item for item in items if id(item) not in bad]
        checks = [item for item in checks if id(item) not in bad]
        config.hook.pytest_deselected(items=dropped)
    # hidden checks last: nothing shown of a visible check comes from code that saw a hidden input
    hidden = {id(item) for item in checks if _check(item)[1]}
    items.sort(key=lambda item: id(item) in hidden)
    derandomize = settings_of(config).derandomized
    for item in checks:
        record_inputs(item.obj)
        fix_seed(getattr(item, "obj", None), derandomize=derandomize)


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    fixtures = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    with settling(pyfuncitem.obj, fixtures):
        return (yield)


@pytest.hookimpl(tryfirst=True, specname="pytest_pyfunc_call")
def pytest_pyfunc_call_replayed(pyfuncitem):
    """Run a property of a graded check with its examples replayed where this process knows
    them (:mod:`grader.engine.replay`); None (pytest runs the check as usual) where replay is
    off or does not apply."""
    lesson = lesson_of(pyfuncitem)
    fixtures = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    return (
        replayed(
            pyfuncitem.obj,
            fixtures,
            lesson=lesson,
            nodeid=pyfuncitem.nodeid,
            settings=settings_of(pyfuncitem.config),
            submission=None if lesson is None else submission_of(pyfuncitem.config, lesson, create=False),
        )
        or None
    )


def replay_key(item, lesson: Lesson) -> tuple:
    """What the examples of the check ``item`` of ``lesson`` are kept under
    (:func:`grader.engine.checking.replay_key`)."""
    return checking_key(lesson, item.nodeid, settings_of(item.config))


def use_settings(config, settings: Settings) -> None:
    """Run with ``settings`` (a run that grades no submission: see :func:`use_run`)."""
    config.stash[_SETTINGS] = settings


def submission_of(config, lesson: Lesson, *, create: bool = True) -> Submission | None:
    """The submission of ``lesson`` under test, loaded on first use (None if not loaded and
    not ``create``)."""
    opened = config.stash.setdefault(_SUBMISSIONS, {})
    if lesson.checks not in opened:
        if not create:
            return None
        opened[lesson.checks] = Submission(
            Path(config.getoption("submission") or lesson.source), lesson=lesson, settings=settings_of(config)
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
