"""Running a lesson's checks through pytest, and what only pytest's collection gives: the points
of every check, a process made ready to grade, the examples drawn ahead.

:func:`grader.engine.run.run_checks` comes here for the checks :mod:`grader.engine.direct`
leaves to pytest; the :class:`~grader.engine.collector.Collector` is told, through pytest's
hooks (:class:`_Hooks`), what it is told without them.
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pytest

from ..core.authored import error_place, said
from ..core.errors import GraderError
from ..core.lesson import Lesson
from ..core.settings import Isolation, Settings
from ..sandbox.wardens import WardenFault, WardenLost, settle, warm
from . import direct, replay, shipped
from .checking import load_profile
from .collector import Check, Collector
from .marks import grading_of
from .plugin import collection_faults, lesson_of, replay_key, use_run, use_settings
from .store import open_store
from .submission import StudentView
from .upkeep import as_a_grading, give_seed


class _Hooks:
    """A :class:`Collector` as a pytest plugin: each hook tells it what happened."""

    def __init__(self, collector: Collector):
        self.collector = collector
        self._checks: dict[int, tuple[object, Check]] = {}  # id(item) -> (item, its Check)

    def _check(self, item) -> Check | None:
        """``item`` as a :class:`Check` (None: it is no graded check)."""
        known = self._checks.get(id(item))
        if known is not None and known[0] is item:
            return known[1]
        grading = grading_of(item)
        if grading is None:
            return None
        check = Check(
            name=item.name,
            nodeid=item.nodeid,
            function=item.obj,
            grading=grading,
            lesson=lesson_of(item),
            module=getattr(item, "module", None),
            where=lambda: _written(item),
            original=getattr(item, "originalname", item.name),
        )
        self._checks[id(item)] = (item, check)
        return check

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config):
        """Before the plugin's own: this run's settings, and its submission opened already."""
        use_run(config, self.collector.settings, self.collector.submission)

    def pytest_collection_finish(self, session):
        self.collector.collected([check for check in map(self._check, session.items) if check is not None])

    def pytest_exception_interact(self, node, call, report):
        """A check file that cannot be imported (a syntax error, a mark whose values are wrong, a
        strategy that fails as it is built): the lesson's mistake, at its line; the checks of the
        other files still run, and the score is no grade."""
        if isinstance(node, pytest.Item):
            return  # a check's own failure: pytest_runtest_makereport has it
        collector = self.collector
        err = call.excinfo.value
        cause = getattr(err, "__cause__", None) or err
        path = Path(str(getattr(node, "path", collector.lesson.checks)))
        collector.unloaded = True
        collector.fault(
            error_place(collector.lesson, cause, (path, 1)) or (path, 1),
            f"the checks in this file cannot be imported, so none of them ran: {said(cause)}",
        )

    def pytest_collection_modifyitems(self, config, items):
        """Keep only the checks the collector chooses, in its order."""
        for place, message in collection_faults(config):
            self.collector.fault(place, message)
        found = {id(item): check for item in items if (check := self._check(item)) is not None}
        chosen = self.collector.chosen(list(found.values()))
        by_check = {id(check): item for item in items if (check := found.get(id(item))) is not None}
        keep = [by_check[id(check)] for check in chosen]
        for item in keep:
            # a failure is read from its exception (pytest_runtest_makereport): pytest's own
            # rendering of it, which walks and filters every frame of the traceback, is not made
            item.repr_failure = _unrendered
        kept = {id(item) for item in keep}
        drop = [item for item in items if id(item) not in kept]
        items[:] = keep
        if drop:
            config.hook.pytest_deselected(items=drop)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        check = self._check(item)
        if check is not None:
            self.collector.starting(check)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        view = getattr(item, "funcargs", {}).get("student")
        before = view.answers if isinstance(view, StudentView) else 0
        yield
        if isinstance(view, StudentView):
            self.collector.answered[item.nodeid] = view.answers - before

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        check = self._check(item)
        if check is None:
            return
        if report.when == "call" or (report.when == "setup" and not report.passed):
            if report.passed:
                self.collector.ended(check, None)
            elif call.excinfo is not None:
                self.collector.ended(check, call.excinfo.value, setup=report.when == "setup")
            else:
                self.collector.ended(check, None, unexplained=str(report.longrepr))

    def pytest_sessionfinish(self, session):
        self.collector.finish()


def _written(item) -> tuple[Path, int]:
    path, line, _ = item.reportinfo()
    return Path(str(path)), line or 0


def through_pytest(collector: Collector, checks: Path | None, captured: io.StringIO) -> None:
    """Run the checks of ``collector``'s lesson (or those under ``checks``) through pytest,
    telling ``collector``; GraderError where pytest itself stops (saying the end of what it
    wrote to ``captured``, where the caller sends the standard output)."""
    args = [
        *pytest_arguments(collector.lesson, checks),
        "--assert=plain",  # the checks fail through grader.expect, never a bare assert
        # the report is read from each failure's exception (Collector): pytest's own rendering of
        # it, which nothing reads, is kept to one line (a traceback formatted for each failing
        # check was a sixth of a stub's grading; pytest's own errors are printed whole anyway)
        "--tb=line",
        # a check file that cannot be imported is the lesson's mistake, noted (Collector): the
        # checks of the lesson's other files still run
        "--continue-on-collection-errors",
    ]
    with plugin_autoload_off():
        code = pytest.main(args, plugins=[_Hooks(collector)])
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED):
        tail = "\n".join(captured.getvalue().strip().splitlines()[-30:])
        raise GraderError(f"pytest stopped with exit code {int(code)}:\n{tail}")


def _unrendered(excinfo) -> str:
    """What pytest keeps of a graded check's failure (in the place of its rendered traceback:
    the report is made from the exception itself)."""
    return f"{excinfo.typename} (the grader's report says more)"


class _Points:
    """Collects the points of every check without running any (imported under the Hypothesis
    profile of ``settings``: a check's settings are fixed as it is decorated)."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.points: dict[str, float] = {}

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config):
        use_settings(config, self.settings)

    def pytest_collection_modifyitems(self, items):
        for item in items:
            grading = grading_of(item)
            if grading is not None:
                self.points[grading.exercise] = self.points.get(grading.exercise, 0) + grading.points


def suite_points(
    lesson: Lesson, checks: Path | None = None, settings: Settings | None = None
) -> dict[str, float]:
    """Maximum points per exercise of ``lesson``, read from the marks of its checks (or of those
    under ``checks``), imported under ``settings``' Hypothesis profile (a grading's by default)."""
    counter = _Points(settings or Settings())
    args = [*pytest_arguments(lesson, checks), "--collect-only"]
    with plugin_autoload_off(), contextlib.redirect_stdout(io.StringIO()):
        pytest.main(args, plugins=[counter])
    return {name: counter.points.get(name, 0) for name in lesson.exercises}


def prepare(lesson: Lesson, settings: Settings) -> None:
    """Do now, before any submission is seen, what every grading of ``lesson`` starts with: the
    checks are imported (the strategies they build at import among them; no check runs, so
    nothing is drawn and nothing is kept of any run) as a grading with ``settings`` imports
    them: under their Hypothesis profile (a check's settings, its number of examples among them,
    are fixed as it is decorated, and each child grades with the checks imported here), without
    pytest where :mod:`.direct` can (its streams are never closed; under pytest's capture, a
    check file that took ``sys.stderr`` would hold a file pytest closes after its collection),
    else collected by pytest with the grader's plugin. The sandbox is started too
    (:func:`prepare_sandbox`). A process that then forks one child per submission pays for these
    once; each child starts from this very state."""
    load_profile(settings)
    # imported as a grading imports them (:func:`grader.engine.run.run_checks`): a check file
    # that draws from Python's or numpy's generator as it is imported draws what it draws there
    alone = settle(settings, lesson.private).level is not Isolation.NONE
    with as_a_grading(alone=alone, derandomized=settings.derandomized):
        if settings.through_pytest or not direct.imported(lesson):
            suite_points(lesson, settings=settings)
    prepare_sandbox(lesson, settings)
    store = open_store(lesson, settle(settings, lesson.private))
    if store is not None:
        store.load()  # each child starts with the examples kept on disk


def keep_on_disk(lesson: Lesson, settings: Settings) -> int:
    """Write to the store the examples this process keeps of ``lesson`` that it lacks (a
    process that adopted them from a child: :func:`grader.engine.replay.adopt`); how many."""
    store = open_store(lesson, settle(settings, lesson.private))
    return 0 if store is None else store.save()


class _Predraw:
    """Collects the checks, with ``settings``, and draws ahead the arguments of every kept
    example (:func:`grader.engine.replay.predraw`), those the lesson ships (:mod:`.shipped`)
    read first; runs none. Counts the properties whose examples this process does not keep
    (:attr:`unkept`). ``draw``: True draws, False does not, None draws only where every
    property is kept (none is then left for the engine to find)."""

    def __init__(self, settings: Settings, *, draw: bool | None = True):
        self.settings = settings
        self.draw = draw
        self.drawn = 0
        self.unkept = 0

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config):
        use_settings(config, self.settings)  # the Hypothesis profile the checks run under

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items):
        for lesson in {lesson_of(item) for item in items} - {None}:
            shipped.load(lesson, settle(self.settings, lesson.private))  # as a grading's would
        checks = [(item, lesson_of(item)) for item in items]
        checks = [(item, replay_key(item, lesson)) for item, lesson in checks if lesson is not None]
        self.unkept = sum(
            1
            for item, key in checks
            if getattr(item.obj, "hypothesis", None) is not None and replay.kept(key) is None
        )
        if self.draw or (self.draw is None and self.unkept == 0):
            for item, key in checks:  # after the plugin's own: every check is marked for its seed
                give_seed(item.obj)  # once, for every child that runs the engine on it
                self.drawn += replay.predraw(item.obj, key)


def unkept(lesson: Lesson, settings: Settings, *, else_predraw: bool = False) -> int:
    """How many of ``lesson``'s properties this process keeps no examples of, once it has read
    those the lesson ships (:mod:`.shipped`; the store's are read by :func:`prepare`). A
    zygote that keeps every one need not grade the reference to learn them. With
    ``else_predraw``, where it keeps every one, their arguments are drawn ahead in the same
    collection, as :func:`predraw` draws them."""
    counter = _Predraw(settings, draw=None if else_predraw and _draws_ahead(lesson, settings) else False)
    _collect_only(lesson, counter)
    return counter.unkept


def _collect_only(lesson: Lesson, plugin: _Predraw) -> None:
    """Collect ``lesson``'s checks with ``plugin``, as a sandboxed grading collects them; run none."""
    args = [*pytest_arguments(lesson, None), "--collect-only"]
    with (
        plugin_autoload_off(),
        as_a_grading(alone=True, derandomized=plugin.settings.derandomized),  # a sandboxed one's
        contextlib.redirect_stdout(io.StringIO()),
    ):
        pytest.main(args, plugins=[plugin])


def predraw(lesson: Lesson, settings: Settings) -> int:
    """Draw ahead, in this process, the arguments of every example of ``lesson`` it keeps
    (:func:`grader.engine.replay.adopt`), as a grading with ``settings`` would draw them, so
    that each child forked from it only calls the checks on them; returns how many examples.
    For a zygote, after it adopted its examples and before any child (a child's copy of them
    is its own)."""
    if not _draws_ahead(lesson, settings):
        return 0
    drawer = _Predraw(settings)
    _collect_only(lesson, drawer)
    return drawer.drawn


def _draws_ahead(lesson: Lesson, settings: Settings) -> bool:
    """Whether a grading of ``lesson`` with ``settings`` replays its examples in a sandbox, where
    their arguments may be drawn ahead (:func:`predraw`)."""
    return bool(settings.replay) and settle(settings, lesson.private).level is not Isolation.NONE


def prepare_sandbox(lesson: Lesson, settings: Settings) -> None:
    """Start the sandbox ``settings`` grade ``lesson`` in, unless it runs already (none at the
    ``none`` level)."""
    level = settle(settings, lesson.private).level
    if level is not Isolation.NONE:
        try:
            warm(level.value, settings.limits.memory)
        except (WardenLost, WardenFault, OSError):
            pass  # nothing is running: the grading that needs a sandbox starts one, as without this


#: pytest's own plugins that no run of the grader's asks for, each turned off (``-p no:NAME``):
#: doctests; the clean-up of the plugins that report exceptions no one caught, which runs the
#: garbage collector five times (a tenth of a second, whether a check ran or not); a debugger, a
#: paste service, a JUnit file of pytest's own, a run that stops at its first failure, fixture plans.
UNUSED_PLUGINS = (
    "doctest",
    "unraisableexception",
    "threadexception",
    "debugging",
    "pastebin",
    "junitxml",
    "stepwise",
    "setuponly",
    "setupplan",
)


def pytest_arguments(lesson: Lesson, checks: Path | None) -> list[str]:
    """pytest's arguments for ``lesson``'s checks (or those under ``checks``): quiet, with the
    grader's plugin, no cache and none of :data:`UNUSED_PLUGINS`, whatever the course's own
    pytest settings say. Every run of pytest the grader makes starts from these (a grading, a
    collection alone, the lint)."""
    where = ["--rootdir", str(lesson.root)]
    return [
        str(checks or lesson.checks),
        "-p",
        "grader.plugin",
        "-p",
        "no:cacheprovider",
        *(arg for name in UNUSED_PLUGINS for arg in ("-p", f"no:{name}")),
        "-o",
        "addopts=",
        *where,
        "-q",
    ]


@contextlib.contextmanager
def plugin_autoload_off():
    """Load only the plugins the checks need: faster, and immune to what else is installed."""
    old = os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    try:
        yield
    finally:
        if old is None:
            del os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"]
        else:
            os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = old
