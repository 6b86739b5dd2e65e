"""Run the checks on one submission through pytest and collect a Report."""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import os
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import configuration as hypothesis_configuration

from ..core.authored import code_line, def_line, error_place, key_line, raised_by_lesson, said
from ..core.diagnosis import Call, Diagnosis, diagnose
from ..core.errors import Failure, GraderError, PropertyFailure, StudentError, StudentTimeout
from ..core.inert import one_line
from ..core.intake import Intake, IntakeError
from ..core.lesson import Lesson
from ..core.pictures import Heatmap, heatmap
from ..core.results import NOT_RUN, LessonFault, Report, Status, TestResult, Visibility
from ..core.settings import Isolation, Profile, Settings
from ..sandbox.wardens import WardenFault, WardenLost, settle, warm
from . import replay, shipped
from .feedback import Outcome, counterexample_of, flaky, outcome_of
from .marks import grading_of
from .plugin import collection_faults, lesson_of, replay_key, use_run, use_settings
from .store import open_store
from .submission import StudentView, Submission
from .upkeep import give_seed, no_local_constants, numpy_generator_left_alone, seeded_in_place


def _title(item) -> str:
    doc = getattr(getattr(item, "function", None), "__doc__", None) or ""
    return " ".join(doc.strip().split("\n\n")[0].split())


def _name(item) -> str:
    return item.name.removeprefix("test_")


class Collector:
    """A pytest plugin object that records one TestResult per graded check."""

    def __init__(self, lesson: Lesson, settings: Settings, submission: Submission):
        self.lesson = lesson
        self.settings = settings
        self.exercises = lesson.exercises if settings.exercises is None else settings.exercises
        self.submission = submission
        self.results: list[TestResult] = []
        self.problem = ""
        self.isolation = None
        # exercise -> (a failed visible check's place in the report, its calls on its smallest
        # failing input)
        self.evidence: dict[str, list[tuple[int, str, tuple[Call, ...]]]] = {}
        self.diagnoses: dict[str, tuple[Diagnosis, ...]] = {}
        self.pictures: tuple[Heatmap, ...] = ()
        self.package = ""  # the Python package of the lesson's checks
        self.rank: dict[str, int] = {}  # check -> its place in the report (the lesson's order)
        self.probes: dict[str, list[Call]] = {}  # exercise -> the student's calls on its probes
        self.shown = False  # the pictures and probes are drawn (before any hidden check)
        self.with_hidden: set[str] = set()  # exercises with hidden checks in this run
        self.faults: dict[tuple[str, str], LessonFault] = {}  # the lesson's mistakes, by where and what
        self.unloaded = False  # a file of checks could not be imported: not every check is known
        self.not_run: dict[tuple[str, str], tuple[str, ...]] = {}  # the checks each kept from running
        self.weak: dict[str, frozenset[str]] = {}  # exercise -> checks a do-nothing function passes
        self.answered: dict[str, int] = {}  # check -> how many calls of the student's code it got answers to
        self.store = None  # the examples drawn by earlier runs (grader.engine.store), once collected

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config):
        """Before the plugin's own: this run's settings, and its submission opened already."""
        use_run(config, self.settings, self.submission)

    def pytest_collection_finish(self, session):
        """The checks are imported: the examples the lesson ships are read (:mod:`.shipped`),
        the store's key can take in every module they loaded, and its examples are read before
        the first check runs (sandboxed runs only)."""
        shipped.load(self.lesson, self.settings)
        if not self.submission.runs_here:
            self.store = open_store(self.lesson, self.settings)
            if self.store is not None:
                self.store.load()
                self.store.begin()
                for item in session.items:  # what draws each property's examples, to write them down
                    lesson = lesson_of(item)
                    if lesson is not None and getattr(item.obj, "hypothesis", None) is not None:
                        self.store.checks[replay_key(item, lesson)] = item.obj

    def fault(self, place: tuple[Path, int], message: str, *, graded: bool = True, check: str = "") -> None:
        """Note a mistake of the lesson at ``place`` (a file of the lesson and its line): said
        once, at the file's place in the course (the report is the same wherever it is read);
        the ``check``s it kept from running are named together."""
        path, line = place
        try:
            where = Path(path).resolve().relative_to(self.lesson.root.resolve())
        except (OSError, ValueError):
            where = Path(path)
        key = (f"{where}:{max(1, int(line or 1))}", " ".join(message.split()))
        old = self.faults.get(key)
        checks = (*self.not_run.get(key, ()), *([check] if check else []))
        self.not_run[key] = checks
        said = key[1]
        if checks:
            names = ", ".join(checks)
            said = f"the check{'s' if len(checks) > 1 else ''} {names} could not run: {key[1]}"
        self.faults[key] = LessonFault(key[0], said, graded or (old is not None and old.graded))

    def pytest_exception_interact(self, node, call, report):
        """A check file that cannot be imported (a syntax error, a mark whose values are wrong, a
        strategy that fails as it is built): the lesson's mistake, at its line; the checks of the
        other files still run, and the score is no grade."""
        if isinstance(node, pytest.Item):
            return  # a check's own failure: pytest_runtest_makereport has it
        err = call.excinfo.value
        cause = getattr(err, "__cause__", None) or err
        path = Path(str(getattr(node, "path", self.lesson.checks)))
        self.unloaded = True
        self.fault(
            error_place(self.lesson, cause, (path, 1)) or (path, 1),
            f"the checks in this file cannot be imported, so none of them ran: {said(cause)}",
        )

    def pytest_collection_modifyitems(self, config, items):
        """Keep only the chosen checks: every visible one first, then the hidden ones, each in
        the lesson's order of exercises.

        Hidden checks come last so that nothing a student reads is computed by code that has
        seen a hidden input (a function that keeps what it was sent, in a global or a file, can
        only tell it in a hidden check's own failure, whose details no student sees). An
        exercise stands in for another's reference only once every one of its checks, hidden
        ones included, has passed (:meth:`Submission.replace_for`): until its hidden checks
        have run, the reference serves the exercises that call it.
        """
        for place, message in collection_faults(config):
            self.fault(place, message)
        keep, drop = [], []
        for item in items:
            grading = grading_of(item)
            wanted = (
                grading is not None
                and grading.exercise in self.exercises
                and (self.settings.include_hidden or grading.visibility is Visibility.VISIBLE)
            )
            (keep if wanted else drop).append(item)
        keep.sort(key=lambda item: self.lesson.exercises.index(grading_of(item).exercise))
        self.rank = {_name(item): place for place, item in enumerate(keep)}  # the report's order
        self.with_hidden = {
            grading_of(item).exercise for item in keep if grading_of(item).visibility is Visibility.HIDDEN
        }
        keep.sort(key=lambda item: grading_of(item).visibility is Visibility.HIDDEN)
        for item in keep:
            module = getattr(item, "module", None)
            if module is not None and Path(module.__file__).parent == self.lesson.checks:
                self.package = module.__package__ or ""
            # a failure is read from its exception (pytest_runtest_makereport): pytest's own
            # rendering of it, which walks and filters every frame of the traceback, is not made
            item.repr_failure = _unrendered
        self.weak = self._weak_checks([*keep, *drop])
        items[:] = keep
        if drop:
            config.hook.pytest_deselected(items=drop)

    def _weak_checks(self, items) -> dict[str, frozenset[str]]:
        """The lesson's ``WEAK_CHECKS`` (in ``work.py``), each name checked against the checks
        of its exercise: a misspelt one would silently pay a do-nothing function. (A student
        release has no hidden checks: the names of those are not looked for there.)"""
        declared = self._declared(self.lesson.work, graded=True)
        weak = getattr(declared, "WEAK_CHECKS", None) if declared is not None else None
        if weak is None:
            return {}
        if not isinstance(weak, dict):
            self.fault(
                (self.lesson.work, key_line(self.lesson.work, "WEAK_CHECKS", "")),
                "WEAK_CHECKS must be a dict",
            )
            return {}
        names: dict[str, set[str]] = {}
        for item in items:
            grading = grading_of(item)
            if grading is not None:
                names.setdefault(grading.exercise, set()).add(_name(item))
        found = {}
        for exercise, checks in weak.items():
            if isinstance(checks, str):
                checks = (checks,)  # a one-name tuple without its comma: said below if no check
            complete = self.lesson.hidden.is_dir() and not self.unloaded  # every check of the lesson known
            unknown = sorted(set(checks) - names.get(exercise, set())) if complete else []
            if exercise not in self.lesson.exercises or unknown:
                # a misspelt name would pay a do-nothing function: the score is no grade until mended
                self.fault(
                    (self.lesson.work, key_line(self.lesson.work, "WEAK_CHECKS", exercise)),
                    f"WEAK_CHECKS names {unknown or [exercise]}, which are not checks of {exercise} "
                    f"(its checks: {', '.join(sorted(names.get(exercise, ())))})",
                )
                continue
            found[exercise] = frozenset(checks)
        return found

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        """Before the first hidden check, draw what the report shows of the student's code."""
        grading = grading_of(item)
        if grading is not None and grading.visibility is Visibility.HIDDEN:
            self._show()

    def _show(self) -> None:
        """The pictures, and the student's calls on the probes of every exercise that lost points
        or may lose some in a hidden check: drawn once, after the visible checks and before any
        hidden one, so that no hidden input can reach them."""
        if self.shown:
            return
        self.shown = True
        if self.submission.problem or self.lesson.reference is None:
            return
        self.pictures = self._pictures()
        declared = self._diagnoses()
        if declared is None:
            return
        lost = {t.exercise for t in self.results if t.status is not Status.PASSED}
        for exercise in self.exercises:
            probes = declared.PROBES.get(exercise, ()) if declared.MISTAKES.get(exercise) else ()
            if probes and (exercise in lost or exercise in self.with_hidden):
                probes = self._callable_probes(exercise, probes)
                self.probes[exercise] = self._probed(exercise, probes) if probes else []

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        view = getattr(item, "funcargs", {}).get("student")
        before = view.answers if isinstance(view, StudentView) else 0
        yield
        if isinstance(view, StudentView):
            self.answered[item.nodeid] = view.answers - before

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        grading = grading_of(item)
        if grading is None:
            return
        if report.when == "call" or (report.when == "setup" and not report.passed):
            if report.passed:
                result = Outcome(Status.PASSED, "")
            elif call.excinfo is not None:
                result = self._lesson_error(item, call.excinfo.value, setup=report.when == "setup")
                result = result or outcome_of(call.excinfo.value)
            else:
                result = Outcome(Status.ERROR, str(report.longrepr))
            passed = result.status is Status.PASSED
            # a hidden check's calls are never kept: were they read when the likely mistake is
            # picked, what a function does on hidden inputs alone would choose what a student reads
            if not passed and call.excinfo is not None and grading.visibility is Visibility.VISIBLE:
                calls = getattr(call.excinfo.value, "grader_calls", ())
                place = self.rank.get(_name(item), len(self.rank))
                self.evidence.setdefault(grading.exercise, []).append((place, _name(item), tuple(calls)))
            self.results.append(
                TestResult(
                    name=_name(item),
                    exercise=grading.exercise,
                    max_score=grading.points,
                    score=grading.points if passed else 0,
                    status=result.status,
                    visibility=grading.visibility,
                    title=_title(item),
                    message="" if passed else result.message,
                    counterexample="" if passed else result.counterexample,
                )
            )

    def pytest_sessionfinish(self, session):
        """What the submission says of itself, read while it is still open, and the likely
        mistake of each exercise that lost points, from what a student may see the function do
        alone: the calls of its failed visible checks and those on its probes, all made before
        any hidden check (a hidden check's calls are not kept)."""
        self.problem = self.submission.problem
        self.isolation = self.submission.isolation
        self.results.sort(key=lambda t: self.rank.get(t.name, len(self.rank)))
        self.results = _gated(self.results, self.weak)
        self._show()
        if self.problem or self.lesson.reference is None:
            return
        lost = {t.exercise for t in self.results if t.status is not Status.PASSED}
        declared = self._diagnoses() if lost else None
        for exercise in self.exercises if declared else ():
            mistakes = declared.MISTAKES.get(exercise, ()) if exercise in lost else ()
            if mistakes:
                failed = sorted(self.evidence.get(exercise, []), key=lambda e: e[0])  # the report's order
                calls = [call for *_, made in failed for call in made] + self.probes.get(exercise, [])
                sources = [name for _, name, made in failed for _ in made]  # the probes': none
                found = diagnose(
                    mistakes,
                    calls,
                    self.submission.reference[exercise],
                    slipped=self._slipped,
                    sources=sources,
                )
                if found:
                    self.diagnoses[exercise] = tuple(found)

    def _lesson_error(self, item, err: BaseException, *, setup: bool) -> Outcome | None:
        """The outcome of a check that failed by the lesson's own mistake (a typo in the check, a
        fixture it misnames, a strategy that cannot draw), noted at the lesson's file and line;
        None for a failure of the student's code (or of the grader's)."""
        if isinstance(
            err, (StudentError, StudentTimeout, PropertyFailure, GraderError, WardenLost, WardenFault)
        ):
            return None
        if flaky(err):
            # the student's function answered differently (its draws too, where what it returned
            # decides what the check draws next): outcome_of says so. A lesson whose own strategy
            # is flaky is flaky on the reference too, and `lint` shows it
            return None
        if getattr(err, "grader_calls", ()):
            # the student's function ran in this example and the check then stopped on what it
            # returned: the student's failure, never "no grade" (a submission must not be able
            # to hold its own grade back). A check that stops on the reference's answers too is
            # the lesson's mistake, and `lint` and the catalog's correct files show it.
            return Outcome(
                Status.FAILED,
                f"This check could not use what your function returned ({said(err)[:200]}): "
                "look at the type, shape and dtype of its result for this input.",
                counterexample_of(err),
            )
        hypothesis = type(err).__module__.split(".")[0] == "hypothesis"
        if hypothesis and not setup and self.answered.get(item.nodeid):
            # Hypothesis's engine stopped the check (every example set aside by an assume() on
            # what the student's function returned, a health check) once that function had
            # answered in it: its answers decided it, and a submission must not be able to hold
            # its own grade back. As above, a check that stops so on the reference is the
            # lesson's mistake, and `lint` shows it.
            if type(err).__name__ == "Unsatisfiable":
                why = "it set aside every input it drew, because of what your function returned for them"
            else:
                why = f"its search for inputs stopped on what your function returned ({type(err).__name__})"
            return Outcome(
                Status.FAILED,
                f"This check could not judge your function: {why}. Look at what your function "
                "returns (its values, shape and dtype) for the inputs of this check.",
                counterexample_of(err),
            )
        path, line, _ = item.reportinfo()
        written = (Path(str(path)), (line or 0) + 1)  # the check itself, where its mark is
        raised = raised_by_lesson(self.lesson, err)
        if raised is False or (raised is None and not (setup or hypothesis)):
            return None  # raised by the grader's own code: its failure, said as before
        place = error_place(self.lesson, err, None)
        reason = said(err)
        if type(err).__name__ == "FixtureLookupError":  # said where the parameters are written
            reason = f"it asks for {getattr(err, 'argname', '?')!r}, which no fixture provides"
            name = getattr(item, "originalname", item.name)
            written = (written[0], def_line(written[0], name, written[1]))
        grading = grading_of(item)
        if grading is not None and grading.visibility is Visibility.HIDDEN:
            # its message may quote a hidden input (a size, a value), and students read this
            # report: the kind of error and its place only; `lint` shows the author the rest
            reason = f"{type(err).__name__} (python -m grader lint shows its message)"
        self.fault(place or written, reason, check=_name(item))
        return Outcome(Status.LESSON_ERROR, NOT_RUN)

    def _declared(self, path: Path, *, graded: bool = False):
        """A module the lesson declares beside its checks (``diagnoses.py``, ``pictures.py``,
        ``work.py``), imported as part of their package (None when the lesson has none, or when it
        cannot be imported: then the lesson's mistake is noted)."""
        if not path.is_file() or not self.package:
            return None
        try:
            return importlib.import_module(f"{self.package}.{path.stem}")
        except Exception as err:  # noqa: BLE001 - the course's file, not the student's
            self.fault(
                error_place(self.lesson, err, (path, 1)) or (path, 1),
                f"cannot be imported: {said(err)}",
                graded=graded,
            )
            return None

    def _diagnoses(self):
        """``diagnoses.py`` when it can be read (PROBES and MISTAKES dicts); else None, its
        mistake noted: the report then names no likely mistake, and the grade stands."""
        declared = self._declared(self.lesson.diagnoses)
        if declared is None:
            return None
        for name in ("PROBES", "MISTAKES"):
            if not isinstance(getattr(declared, name, None), dict):
                where = (self.lesson.diagnoses, key_line(self.lesson.diagnoses, name, ""))
                self.fault(where, f"{name} must be a dict keyed by exercise", graded=False)
                return None
        return declared

    def _callable_probes(self, exercise: str, probes) -> list:
        """The probes of ``exercise`` that name its parameters; the lesson's mistake is noted for
        the others (the diagnosis goes on with the calls of the failed checks)."""
        kept = []
        where = (self.lesson.diagnoses, key_line(self.lesson.diagnoses, "PROBES", exercise))
        try:
            signature = inspect.signature(self.submission.reference[exercise])
        except (TypeError, ValueError):
            return list(probes)
        for index, arguments in enumerate(probes):
            try:
                signature.bind(**arguments)
            except TypeError as err:  # also: a probe that is no dict of arguments
                self.fault(
                    (where[0], key_line(where[0], "PROBES", exercise, index)),
                    f"probe {index} of {exercise} cannot call it: {err} "
                    f"({exercise} takes {', '.join(signature.parameters)})",
                    graded=False,
                )
                continue
            kept.append(arguments)
        return kept

    def _slipped(self, mistake, part: str, err: BaseException) -> None:
        """A mistake of ``diagnoses.py`` whose code slipped (a misspelt name, parameters that are
        not the exercise's): noted at its line; the mistake is named for no one meanwhile."""
        function = getattr(mistake, part, None)
        fallback = (
            self.lesson.diagnoses,
            code_line(function, key_line(self.lesson.diagnoses, "MISTAKES", "")),
        )
        place = error_place(self.lesson, err, fallback) or fallback
        self.fault(place, f"the mistake {mistake.code!r}: its {part}= stops with {said(err)}", graded=False)

    def _pictures(self) -> tuple[Heatmap, ...]:
        """The lesson's pictures of each exercise checked: the student's function called on the
        picture's arguments as the checks call it, beside the reference on the same."""
        path = self.lesson.pictures
        declared = self._declared(path)
        if declared is None:
            return ()
        tokens, pictures = getattr(declared, "TOKENS", None), getattr(declared, "PICTURES", None)
        if not isinstance(pictures, dict) or not isinstance(tokens, (tuple, list)):
            self.fault(
                (path, key_line(path, "PICTURES", "")),
                "needs TOKENS, a tuple of words, and PICTURES, a dict",
                graded=False,
            )
            return ()
        drawn = []
        for exercise in self.exercises:
            picture = pictures.get(exercise)
            if picture is None:
                continue
            where = (path, key_line(path, "PICTURES", exercise))
            try:  # the lesson's part: the reference on the picture's arguments, read as weights
                expected = self.submission.reference[exercise](**_copies(picture.arguments))
                table = np.asarray(picture.weights(expected), dtype=float)
                if table.ndim != 3 or table.shape[1:] != (len(tokens), len(tokens)):
                    raise ValueError(
                        f"the weights read from the reference's answer have shape {table.shape}, "
                        f"not (heads, T, T) with T = {len(tokens)}, one per token of TOKENS"
                    )
            except Exception as err:  # noqa: BLE001 - the lesson's: noted, the picture left out
                self.fault(
                    error_place(self.lesson, err, where) or where,
                    f"the picture of {exercise} cannot be drawn: {said(err)}",
                    graded=False,
                )
                continue
            try:
                got = self.submission.view(exercise).call(exercise, **_copies(picture.arguments))
                drawn.append(heatmap(exercise, picture, tokens, expected, got))
            except (StudentError, StudentTimeout) as err:
                drawn.append(heatmap(exercise, picture, tokens, expected, problem=err.message))
        return tuple(drawn)

    def _probed(self, exercise: str, probes) -> list[Call]:
        """The student's function on the lesson's probes, run as the checks run it."""
        view, calls = self.submission.view(exercise), []
        for arguments in probes:
            given = _copies(arguments)
            try:
                value = view.call(exercise, **given)
                calls.append(Call(arguments, value, mutated=view.mutated))
            except StudentError as err:
                if err.kind in (Failure.MISSING, Failure.SIGNATURE, Failure.NOT_IMPLEMENTED):
                    return []  # nothing there to diagnose
                calls.append(Call(arguments, None, False, str(err.kind), err.raised))
            except StudentTimeout:
                break  # no more of the student's time for this
        return calls


def _gated(results: list[TestResult], weak: dict[str, frozenset[str]]) -> list[TestResult]:
    """Do-nothing earns nothing: a weak check (one a function that does no work can pass: a
    shape, an input left alone, outputs that ignore other tokens) pays only alongside a sign of
    real work in its exercise, that is if one of the exercise's other checks in this run passed.
    Otherwise it counts as failed, and says why."""
    gated = []
    for result in results:
        mine = weak.get(result.exercise, frozenset())
        others = [t for t in results if t.exercise == result.exercise and t.name not in mine]
        if (
            result.name in mine
            and result.status is Status.PASSED
            and others
            and not any(t.status is Status.PASSED for t in others)
        ):
            result = replace(
                result,
                score=0,
                status=Status.FAILED,
                message=(
                    f"This property holds even for a function that does no real work (noise, a "
                    f"constant, its input handed back), so it earns points only once `{result.exercise}` "
                    "passes one of its other checks, and none of them passed."
                ),
            )
        gated.append(result)
    return gated


def _copies(arguments: dict) -> dict:
    """Arguments with their arrays copied: a call may not change the lesson's own."""
    return {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in arguments.items()}


def run_checks(
    submission: Intake | IntakeError | Path,
    *,
    lesson: Lesson,
    settings: Settings,
    checks: Path | None = None,
    shown: str | None = None,
) -> Report:
    """Grade ``submission`` (what :func:`grader.core.intake.open_submission` took in, its
    refusal, or a path for it to take in) against ``lesson``'s checks (or those under ``checks``) as ``settings``
    say, and return the Report (its submission called ``shown``: by default as it was named;
    a refusal must be given it)."""
    # Open the submission first: a sandboxed worker boots while pytest collects the checks.
    if shown is None:
        shown = submission.shown if isinstance(submission, Intake) else one_line(str(submission))
    settings = settle(settings, lesson.private)  # the level, decided here unless it was before
    opened = Submission(submission, lesson=lesson, settings=settings)
    collector = Collector(lesson, settings, opened)
    args = [
        *pytest_arguments(lesson, checks),
        "--assert=plain",  # the checks fail through grader.expect, never a bare assert
        # the report is read from each failure's exception (Collector): pytest's own rendering of
        # it, which nothing reads, is kept to one line (a traceback formatted for each failing
        # check was a sixth of a stub's grading; pytest's own errors are printed whole anyway)
        "--tb=line",
        # a check file that cannot be imported is the lesson's mistake, noted (Collector): the
        # checks of the lesson's other files still run
        "--continue-on-collection-errors",
    ]
    captured = io.StringIO()
    alone = not opened.runs_here  # nothing in this process draws from numpy's global generator
    with (
        plugin_autoload_off(),
        nothing_stored(),
        numpy_generator_left_alone(alone),
        seeded_in_place(settings.profile is Profile.GRADING),  # after the line above: it saves states
        no_local_constants(),  # a check's inputs depend on nothing the process loaded before
        contextlib.redirect_stdout(captured),
    ):
        try:
            code = pytest.main(args, plugins=[collector])
        finally:
            if collector.store is not None:
                collector.store.end()  # a file opened after this run is no run's
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED):
        tail = "\n".join(captured.getvalue().strip().splitlines()[-30:])
        raise GraderError(f"pytest stopped with exit code {int(code)}:\n{tail}")
    if collector.store is not None and not opened.runs_here:
        collector.store.save()  # what this run's engine drew, for the next run
    return Report(
        submission=shown,
        tests=tuple(collector.results),
        problem=collector.problem,
        isolation=collector.isolation,
        diagnoses=collector.diagnoses,
        pictures=collector.pictures,
        lesson_errors=tuple(collector.faults.values()),
    )


def _unrendered(excinfo) -> str:
    """What pytest keeps of a graded check's failure (in the place of its rendered traceback:
    the report is made from the exception itself)."""
    return f"{excinfo.typename} (the grader's report says more)"


@contextlib.contextmanager
def nothing_stored():
    """Hypothesis keeps nothing where the checks run.

    Besides its example database (which the profiles turn off), Hypothesis caches
    the constants it reads in local source files, the course's checks and reference
    among them, in ``.hypothesis/`` of the working folder: in a notebook's kernel
    that is the folder nbgrader collects from and returns feedback into. For the run,
    its storage is a temporary folder of its own, removed after.
    """
    home = vars(hypothesis_configuration).get("__hypothesis_home_directory")
    with tempfile.TemporaryDirectory(prefix="grader-hypothesis-") as scratch:
        hypothesis_configuration.set_hypothesis_home_dir(scratch)
        try:
            yield
        finally:
            hypothesis_configuration.set_hypothesis_home_dir(home)


class _Points:
    """Collects the points of every check without running any."""

    def __init__(self):
        self.points: dict[str, float] = {}

    def pytest_collection_modifyitems(self, items):
        for item in items:
            grading = grading_of(item)
            if grading is not None:
                self.points[grading.exercise] = self.points.get(grading.exercise, 0) + grading.points


def suite_points(lesson: Lesson, checks: Path | None = None) -> dict[str, float]:
    """Maximum points per exercise of ``lesson``, read from the marks of its checks (or of those
    under ``checks``)."""
    counter = _Points()
    args = [*pytest_arguments(lesson, checks), "--collect-only"]
    with plugin_autoload_off(), contextlib.redirect_stdout(io.StringIO()):
        pytest.main(args, plugins=[counter])
    return {name: counter.points.get(name, 0) for name in lesson.exercises}


def prepare(lesson: Lesson, settings: Settings) -> None:
    """Do now, before any submission is seen, what every grading of ``lesson`` starts with:
    pytest collects the checks (importing them, the strategies they build at import and the
    grader's plugin; no check runs, so nothing is drawn and nothing is kept of any run) and the
    sandbox is started (:func:`prepare_sandbox`). A process that then forks one child per
    submission pays for these once; each child starts from this very state."""
    suite_points(lesson)
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
        nothing_stored(),
        numpy_generator_left_alone(True),  # as where the student's code runs in a sandbox
        no_local_constants(),
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
