"""``examples``: write the examples each lesson's checks draw, to ship with the lesson.

A lesson's checks draw the same examples for every submission. Written beside the checks
(:mod:`grader.engine.shipped`), they are replayed from the very first run on a machine: a
student's ``check``, a Gradescope container, a CI runner, a fresh batch. They are made by
grading the reference, sandboxed, under Hypothesis's engine (nothing read from an earlier
file or the store), so they are what the engine draws. ``release`` and ``gradescope-bundle``
make them anew for what they write; this command writes them into the course.
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import replace

from ..core.errors import GraderError, LessonError
from ..core.lesson import Lesson
from ..core.results import Status
from ..core.settings import Isolation, Settings, resolve
from ..engine import replay, shipped, store
from ..engine.run import run_checks
from ..sandbox.wardens import best_level

__all__ = ["made", "main"]


def made(lesson: Lesson, settings: Settings | None = None) -> dict[bool, bytes]:
    """The files of ``lesson``'s examples, public (False) and hidden (True), made by grading its
    reference with ``settings`` (by default: ``grade``'s) sandboxed, every check, under the engine.
    Raises LessonError if there is no reference, or it fails a check (its examples would not be
    the ones every passing submission gets)."""
    if lesson.reference is None:
        raise LessonError(
            f"lesson {lesson.name} has no reference ({lesson.solution}) to draw its examples with"
        )
    if settings is None:
        settings = resolve("grade", lesson_exercises=lesson.exercises, lesson_name=lesson.name)
    level = best_level() if settings.isolation is Isolation.AUTO else settings.isolation
    if level is Isolation.NONE:
        raise GraderError(
            "examples are drawn with the reference sandboxed, and no sandbox runs here "
            "(each run draws its own, as without them)"
        )
    replay.forget()
    shipped.forget()
    folder = None
    try:
        with tempfile.TemporaryDirectory(prefix="grader-examples-") as folder:
            chosen = replace(settings, store=folder, include_hidden=True, replay=True, exercises=None)
            with shipped.unread():
                report = run_checks(lesson.reference, lesson=lesson, settings=chosen)
            failed = [t.name for t in report.tests if t.status is not Status.PASSED]
            if failed or report.problem or report.lesson_errors:
                said = failed[0] if failed else "the run"
                raise LessonError(
                    f"lesson {lesson.name}'s reference does not pass every check ({said}): "
                    "its examples are written only once it does (`python -m grader lint` says why)"
                )
            items = replay.items()
            down = {key: replay.written_down(key) for key, _ in items}
            down = {key: one for key, one in down.items() if one is not None}
            return {
                hidden: shipped.packed(lesson, chosen, items, down, hidden=hidden) for hidden in (False, True)
            }
    finally:
        replay.forget()  # what the next run of this process draws is its own
        shipped.forget()
        if folder is not None:
            store.forget_opened(folder)


def main(*, lessons, check: bool = False) -> int:
    """Write each lesson's examples (public and hidden), or with ``check`` only report whether
    those it ships are current (1 if any is not; a lesson that ships none is not stale)."""
    stale = 0
    for lesson in lessons:
        files = made(lesson)
        for hidden, data in files.items():
            path = shipped.path_of(lesson, hidden=hidden)
            if not path.parent.is_dir():
                continue  # a lesson with no hidden checks
            current = path.read_bytes() if path.is_file() else None
            if check:
                if current is None:
                    print(f"{path}: none shipped (the engine draws them)", file=sys.stderr)
                elif current == data:
                    print(f"{path} is up to date", file=sys.stderr)
                else:
                    print(f"{path} is stale: run `python -m grader examples`", file=sys.stderr)
                    stale = 1
            else:
                if current != data:
                    path.write_bytes(data)
                print(f"wrote {path}", file=sys.stderr)
    return stale
