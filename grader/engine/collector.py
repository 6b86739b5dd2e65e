"""What a run of a lesson's checks makes of them: one TestResult per check, the pictures, the
likely mistakes, the lesson's own faults: the Report's parts.

Whichever way the checks run (through pytest, :mod:`grader.engine.pytested`, or without it,
:mod:`grader.engine.direct`), that runner finds each check as a :class:`Check` and tells the
:class:`Collector` what happened, in the same order: which checks were found, each one's start
and end, the end of the run. Nothing here imports pytest.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType

import numpy as np

from ..core.authored import code_line, def_line, error_place, key_line, raised_by_lesson, said
from ..core.diagnosis import Call, Diagnosis, diagnose
from ..core.errors import Failure, GraderError, PropertyFailure, StudentError, StudentTimeout
from ..core.lesson import Lesson
from ..core.pictures import Heatmap, heatmap
from ..core.results import NOT_RUN, LessonFault, Status, TestResult, Visibility
from ..core.settings import Settings
from ..sandbox.wardens import WardenFault, WardenLost
from . import shipped
from .checking import replay_key
from .feedback import Outcome, counterexample_of, flaky, outcome_of
from .marks import Grading
from .store import open_store
from .submission import Submission


@dataclass(frozen=True)
class Check:
    """One graded check of a lesson, as the run found it."""

    name: str  # its function's name (test_...)
    nodeid: str  # as pytest names it: its file relative to the course, "::", its name
    function: Callable  # what is called: a Hypothesis test (or a plain function) taking `student`
    grading: Grading  # its mark, checked against the lesson
    lesson: Lesson | None  # the lesson its folder belongs to (None: a folder of no lesson)
    module: ModuleType | None  # the module it was found in
    where: Callable[[], tuple[Path, int]]  # its file, and the line (from 0) its definition starts at
    original: str = ""  # the name it was written with, where the runner named it otherwise

    @property
    def short(self) -> str:
        """Its name in the report."""
        return self.name.removeprefix("test_")

    @property
    def title(self) -> str:
        """The first paragraph of its docstring, on one line."""
        doc = getattr(self.function, "__doc__", None) or ""
        return " ".join(doc.strip().split("\n\n")[0].split())


class Collector:
    """Records one TestResult per graded check, and what the report shows besides."""

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

    def collected(self, checks: list[Check]) -> None:
        """The checks are imported: the examples the lesson ships are read (:mod:`.shipped`),
        the store's key can take in every module they loaded, and its examples are read before
        the first check runs (sandboxed runs only)."""
        shipped.load(self.lesson, self.settings)
        if not self.submission.runs_here:
            self.store = open_store(self.lesson, self.settings)
            if self.store is not None:
                self.store.load()
                self.store.begin()
                for check in checks:  # what draws each property's examples, to write them down
                    if check.lesson is not None and getattr(check.function, "hypothesis", None) is not None:
                        self.store.checks[replay_key(check.lesson, check.nodeid, self.settings)] = (
                            check.function
                        )

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

    def chosen(self, checks: list[Check]) -> list[Check]:
        """The checks to run, of those found: every visible one first, then the hidden ones,
        each in the lesson's order of exercises.

        Hidden checks come last so that nothing a student reads is computed by code that has
        seen a hidden input (a function that keeps what it was sent, in a global or a file, can
        only tell it in a hidden check's own failure, whose details no student sees). An
        exercise stands in for another's reference only once every one of its checks, hidden
        ones included, has passed (:meth:`Submission.replace_for`): until its hidden checks
        have run, the reference serves the exercises that call it.
        """
        keep = [
            check
            for check in checks
            if check.grading.exercise in self.exercises
            and (self.settings.include_hidden or check.grading.visibility is Visibility.VISIBLE)
        ]
        keep.sort(key=lambda check: self.lesson.exercises.index(check.grading.exercise))
        self.rank = {check.short: place for place, check in enumerate(keep)}  # the report's order
        self.with_hidden = {
            check.grading.exercise for check in keep if check.grading.visibility is Visibility.HIDDEN
        }
        keep.sort(key=lambda check: check.grading.visibility is Visibility.HIDDEN)
        for check in keep:
            module = check.module
            if module is not None and Path(module.__file__).parent == self.lesson.checks:
                self.package = module.__package__ or ""
        self.weak = self._weak_checks(checks)
        return keep

    def _weak_checks(self, checks: list[Check]) -> dict[str, frozenset[str]]:
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
        for check in checks:
            names.setdefault(check.grading.exercise, set()).add(check.short)
        found = {}
        for exercise, named in weak.items():
            if isinstance(named, str):
                named = (named,)  # a one-name tuple without its comma: said below if no check
            complete = self.lesson.hidden.is_dir() and not self.unloaded  # every check of the lesson known
            unknown = sorted(set(named) - names.get(exercise, set())) if complete else []
            if exercise not in self.lesson.exercises or unknown:
                # a misspelt name would pay a do-nothing function: the score is no grade until mended
                self.fault(
                    (self.lesson.work, key_line(self.lesson.work, "WEAK_CHECKS", exercise)),
                    f"WEAK_CHECKS names {unknown or [exercise]}, which are not checks of {exercise} "
                    f"(its checks: {', '.join(sorted(names.get(exercise, ())))})",
                )
                continue
            found[exercise] = frozenset(named)
        return found

    def starting(self, check: Check) -> None:
        """Before a check starts (before its ``student`` is made): before the first hidden one,
        draw what the report shows of the student's code."""
        if check.grading.visibility is Visibility.HIDDEN:
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

    def ended(
        self,
        check: Check,
        error: BaseException | None,
        *,
        setup: bool = False,
        unexplained: str | None = None,
    ) -> None:
        """``check`` ended: passed (``error`` None), or failed with ``error`` (as its ``student``
        was made, with ``setup``); ``unexplained``: the runner's words for a failure without an
        error to read."""
        if error is not None:
            result = self._lesson_error(check, error, setup=setup) or outcome_of(error)
        elif unexplained is not None:
            result = Outcome(Status.ERROR, unexplained)
        else:
            result = Outcome(Status.PASSED, "")
        grading = check.grading
        passed = result.status is Status.PASSED
        # a hidden check's calls are never kept: were they read when the likely mistake is
        # picked, what a function does on hidden inputs alone would choose what a student reads
        if not passed and error is not None and grading.visibility is Visibility.VISIBLE:
            calls = getattr(error, "grader_calls", ())
            place = self.rank.get(check.short, len(self.rank))
            self.evidence.setdefault(grading.exercise, []).append((place, check.short, tuple(calls)))
        self.results.append(
            TestResult(
                name=check.short,
                exercise=grading.exercise,
                max_score=grading.points,
                score=grading.points if passed else 0,
                status=result.status,
                visibility=grading.visibility,
                title=check.title,
                message="" if passed else result.message,
                counterexample="" if passed else result.counterexample,
            )
        )

    def finish(self) -> None:
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

    def _lesson_error(self, check: Check, err: BaseException, *, setup: bool) -> Outcome | None:
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
        if hypothesis and not setup and self.answered.get(check.nodeid):
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
        path, line = check.where()
        written = (Path(str(path)), (line or 0) + 1)  # the check itself, where its mark is
        raised = raised_by_lesson(self.lesson, err)
        if raised is False or (raised is None and not (setup or hypothesis)):
            return None  # raised by the grader's own code: its failure, said as before
        place = error_place(self.lesson, err, None)
        reason = said(err)
        if type(err).__name__ == "FixtureLookupError":  # said where the parameters are written
            reason = f"it asks for {getattr(err, 'argname', '?')!r}, which no fixture provides"
            name = check.original or check.name
            written = (written[0], def_line(written[0], name, written[1]))
        if check.grading.visibility is Visibility.HIDDEN:
            # its message may quote a hidden input (a size, a value), and students read this
            # report: the kind of error and its place only; `lint` shows the author the rest
            reason = f"{type(err).__name__} (python -m grader lint shows its message)"
        self.fault(place or written, reason, check=check.short)
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
