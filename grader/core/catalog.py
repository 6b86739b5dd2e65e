"""A lesson's catalog: the submissions its checks are held to, and what each must get.

``tests/catalog/NAME/`` holds three kinds of files, each a few of the lesson's functions:

* ``bugs/*.py``: one realistic mistake each, in the exercise named by ``EXERCISE = "name"``;
  it must lose points in that exercise and in no other, and the lesson's diagnoses must name it
  first by the code ``DIAGNOSIS = "code"`` gives;
* ``correct/*.py``: another right way to write a function; it must get full marks and no
  likely mistake;
* ``trivial/*.py``: a submission that does no real work (zeros, the input handed back, noise);
  it must earn nothing, on any check.

Each file is graded as the reference with the file's functions put in place of the
reference's (:func:`composed`), so a mistake is seen on its own. This module only reads the
catalog and judges reports; ``grader catalog`` (:mod:`grader.commands.catalog`) grades.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from .lesson import Lesson
from .results import Report, Status


class Kind(StrEnum):
    """The kinds of catalog entries, as their folders are named."""

    BUGS = "bugs"
    CORRECT = "correct"
    TRIVIAL = "trivial"


@dataclass(frozen=True)
class Entry:
    """One catalog file."""

    kind: Kind
    path: Path
    exercise: str | None = None
    """The exercise a bug breaks (``EXERCISE``); None when the file does not say."""
    diagnosis: str | None = None
    """The code of the mistake that must name a bug (``DIAGNOSIS``)."""

    @property
    def label(self) -> str:
        """How reports name the entry: ``bugs-mask_in_place``."""
        return f"{self.kind.value}-{self.path.stem}"


def declared_at(tree: ast.Module, name: str) -> tuple[object, int] | None:
    """(the literal a catalog file assigns to ``name`` at its top level, its line), or None when
    it assigns nothing to it; the value is None when it is not a literal (the file is read, never
    run)."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            try:
                return ast.literal_eval(node.value), node.lineno
            except ValueError:
                return None, node.lineno
    return None


def declared(source: str, name: str) -> object:
    """The literal a catalog file's ``source`` assigns to ``name`` (EXERCISE, DIAGNOSIS), or None."""
    found = declared_at(ast.parse(source), name)
    return None if found is None else found[0]


def entries(lesson: Lesson) -> tuple[Entry, ...]:
    """Every entry of ``lesson``'s catalog, by kind then name (none when it has no catalog).
    A file that does not parse raises SyntaxError: ``grader lint`` names it with its line."""
    found = []
    for kind in Kind:
        for path in sorted((lesson.catalog / kind.value).glob("*.py")):
            source = path.read_text(encoding="utf-8")
            exercise, diagnosis = declared(source, "EXERCISE"), declared(source, "DIAGNOSIS")
            found.append(
                Entry(
                    kind,
                    path,
                    exercise if isinstance(exercise, str) else None,
                    diagnosis if isinstance(diagnosis, str) else None,
                )
            )
    return tuple(found)


def composed(lesson: Lesson, entry: Entry) -> str:
    """The file graded for ``entry``: the reference, then the entry's own definitions (which,
    coming later, take the place of the reference's functions of the same names)."""
    text = lesson.solution.read_text(encoding="utf-8")
    return f"{text}\n\n# ---- entry: {entry.path.stem} ----\n{entry.path.read_text(encoding='utf-8')}"


class Outcome(StrEnum):
    """What grading an entry showed."""

    HOLDS = "holds"
    FAILS = "fails"
    UNFINISHED = "unfinished"
    """A wall-clock guard stopped a check (a busy machine): nothing can be said yet."""
    UNGRADED = "ungraded"
    """The entry got no report at all."""


@dataclass(frozen=True)
class Judgement:
    """An entry, held to what its kind asks."""

    entry: Entry
    outcome: Outcome
    why: str = ""
    """For an entry that does not hold: what it got instead, in a line."""


def judge(entry: Entry, report: Report | None, exercises: tuple[str, ...], *, problem: str = "") -> Judgement:
    """Whether ``report`` (the grading of ``entry``) is what the entry's kind asks."""
    if report is None:
        return Judgement(entry, Outcome.UNGRADED, problem or "no report")
    if report.unfinished:
        return Judgement(entry, Outcome.UNFINISHED, "the machine was too busy to finish a check")
    if report.problem:
        return Judgement(entry, Outcome.FAILS, f"the file could not be graded: {report.problem[:200]}")
    scores = {e.name: e for e in report.exercises}
    if entry.kind is Kind.BUGS:
        why = _bug(entry, report, scores, exercises)
    elif entry.kind is Kind.CORRECT:
        lost = {name: f"{e.score:g}/{e.max_score:g}" for name, e in scores.items() if e.score != e.max_score}
        named = [f"{name}: {d[0].code}" for name, e in scores.items() if (d := e.diagnoses)]
        why = (f"a correct file lost points ({_listed(lost)})" if lost else "") or (
            f"a correct file was given a likely mistake ({', '.join(named)})" if named else ""
        )
    else:
        earned = {name: f"{e.score:g}" for name, e in scores.items() if e.score}
        passed = [t.name for t in report.tests if t.status is Status.PASSED]
        why = (
            (f"a file doing no real work earned points ({_listed(earned)})" if earned else "")
            or (f"a file doing no real work passed {', '.join(passed)}" if passed else "")
            or _silent(report)
        )
    return Judgement(entry, Outcome.FAILS if why else Outcome.HOLDS, why)


def _bug(entry: Entry, report: Report, scores: dict, exercises: tuple[str, ...]) -> str:
    own = entry.exercise
    if own not in exercises:
        return f"the bug names no exercise of the lesson (EXERCISE = {own!r})"
    mine = scores.get(own)
    if mine is None or mine.score >= mine.max_score:
        return f"the bug escapes every check of {own}"
    others = {
        n: f"{e.score:g}/{e.max_score:g}" for n, e in scores.items() if n != own and e.score != e.max_score
    }
    if others:
        return f"the bug also costs points in {_listed(others)}"
    if _silent(report):
        return _silent(report)
    found = [d.code for d in mine.diagnoses]
    if entry.diagnosis is not None and (not found or found[0] != entry.diagnosis):
        return f"named {', '.join(found) or 'no likely mistake'} first, not {entry.diagnosis}"
    return ""


def _silent(report: Report) -> str:
    """What to say when a check failed without saying why (nothing when every one says)."""
    silent = [t.name for t in report.tests if t.status is not Status.PASSED and not t.feedback]
    return f"a failed check says nothing: {', '.join(silent)}" if silent else ""


def _listed(parts: dict[str, str]) -> str:
    return ", ".join(f"{name} {value}" for name, value in parts.items())
