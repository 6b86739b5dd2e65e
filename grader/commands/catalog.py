"""``catalog``: hold a lesson's checks to its catalog of mistakes.

    python -m grader catalog [--lesson NAME] [--jobs N] [--format text|json]

Every entry of ``tests/catalog/NAME/`` (:mod:`grader.core.catalog`) is graded as a class is,
by :mod:`grader.commands.batch` (sandboxed, a fresh child per entry), then held to what its
kind asks: a bug loses points in its own exercise only and is named first by its diagnosis, a
correct alternative gets full marks, a file that does no real work earns nothing. Without
``--lesson`` every lesson of the course with a catalog is held to its own.

Exit 0 when every entry holds, 1 when one does not, 75 when the machine was too busy to finish
one (run it again), 2 when a lesson has no catalog or its catalog cannot be read.
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
from pathlib import Path

from ..core.catalog import Entry, Judgement, Outcome, composed, entries, judge
from ..core.errors import LessonError
from ..core.inert import file_stem, one_line
from ..core.lesson import Lesson
from ..core.results import UNFINISHED_EXIT, Report
from ..core.settings import Settings
from ..formats import CATALOG_FORMATS
from ..formats.json_report import from_dict, to_dict

FORMATS = CATALOG_FORMATS


def main(*, lessons: tuple[tuple[Lesson, Settings], ...], jobs: int | None = None, fmt: str = "text") -> int:
    """Grade and judge each lesson's catalog; print a table (or JSON) of the judgements."""
    held: list[tuple[Lesson, list[tuple[Judgement, Report | None]]]] = []
    for lesson, settings in lessons:
        if not lesson.catalog.is_dir():
            if len(lessons) == 1:
                raise LessonError(
                    f"the lesson {lesson.name} has no catalog ({lesson.catalog} is not a folder)"
                )
            continue
        try:
            found = entries(lesson)
        except (SyntaxError, UnicodeDecodeError) as err:
            raise LessonError(
                f"the catalog of {lesson.name} cannot be read ({one_line(str(err))[:200]}); "
                f"python -m grader lint --lesson {lesson.name} names the file and line"
            ) from None
        held.append((lesson, _held(lesson, settings, found, jobs)))
    if fmt == "json":
        sys.stdout.write(json.dumps(_as_json(held), indent=1) + "\n")
    else:
        sys.stdout.write(_as_text(held))
    outcomes = {judgement.outcome for _, rows in held for judgement, _ in rows}
    if outcomes & {Outcome.FAILS, Outcome.UNGRADED}:
        return 1
    return UNFINISHED_EXIT if Outcome.UNFINISHED in outcomes else 0


def _held(
    lesson: Lesson, settings: Settings, found: tuple[Entry, ...], jobs: int | None
) -> list[tuple[Judgement, Report | None]]:
    """Grade ``found`` as a class of ``lesson`` (one folder per entry, named by its label) and
    judge each report."""
    with tempfile.TemporaryDirectory(prefix="grader-catalog-") as scratch:
        klass = Path(scratch) / "class"
        for entry in found:
            folder = klass / entry.label
            folder.mkdir(parents=True)
            (folder / lesson.filename).write_text(composed(lesson, entry), encoding="utf-8")
        out = Path(scratch) / "book" / "catalog.csv"
        out.parent.mkdir()
        print(f"{lesson.name}: grading {len(found)} catalog entries", file=sys.stderr)
        with contextlib.redirect_stdout(sys.stderr):  # the batch's summary is progress here
            from . import batch  # the batch's machinery, for this command alone

            code = batch.main(lesson=lesson, settings=settings, folder=klass, out=out, jobs=jobs)
        if code >= 128:  # interrupted (Ctrl-C, SIGTERM): what was graded is not the catalog
            raise KeyboardInterrupt
        rows = []
        for entry in found:
            report, problem = _report(out, entry)
            rows.append((judge(entry, report, lesson.exercises, problem=problem), report))
        return rows


def _report(out: Path, entry: Entry) -> tuple[Report | None, str]:
    """The report the batch wrote for ``entry`` (None, and why, when it wrote none)."""
    reports = out.with_name(out.stem + "_reports")
    path = reports / f"{file_stem(entry.label)}.json"
    if path.is_file():
        return from_dict(json.loads(path.read_text(encoding="utf-8"))), ""
    text = reports / f"{file_stem(entry.label)}.txt"
    said = text.read_text(encoding="utf-8", errors="replace").strip() if text.is_file() else ""
    return None, one_line(said)[:300] or "the batch wrote no report for it"


def _as_text(held) -> str:
    lines = []
    for lesson, rows in held:
        width = max((len(j.entry.label) for j, _ in rows), default=10)
        good = sum(j.outcome is Outcome.HOLDS for j, _ in rows)
        lines.append(f"{lesson.name}: {good} of {len(rows)} catalog entries hold")
        for judgement, report in rows:
            score = "" if report is None or report.unfinished else f"{report.score:g}/{report.max_score:g}"
            mark = {Outcome.HOLDS: "ok"}.get(judgement.outcome, judgement.outcome.value.upper())
            line = f"  {judgement.entry.label:<{width}}  {score:>8}  {mark}"
            lines.append(line + (f": {judgement.why}" if judgement.why else ""))
        lines.append("")
    return "\n".join(lines)


def _as_json(held) -> dict:
    return {
        lesson.name: {
            judgement.entry.label: {
                "kind": judgement.entry.kind.value,
                "exercise": judgement.entry.exercise,
                "diagnosis": judgement.entry.diagnosis,
                "outcome": judgement.outcome.value,
                "why": judgement.why,
                "report": to_dict(report) if report is not None else None,
            }
            for judgement, report in rows
        }
        for lesson, rows in held
    }
