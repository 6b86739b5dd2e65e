"""``exercises``: write each lesson's stubs, ``exercises/NAME.py``, from its solution."""

from __future__ import annotations

import sys

from ..core.solution import strip_solutions


def main(*, lessons, check: bool = False) -> int:
    """Write each lesson's stubs from its solution, or with ``check`` only report whether
    they are stale (1 if any is)."""
    stale = 0
    for lesson in lessons:
        wanted = strip_solutions(lesson.solution.read_text(encoding="utf-8"))
        exercise = lesson.stubs
        current = exercise.read_text(encoding="utf-8") if exercise.exists() else None
        if check:
            if current == wanted:
                print(f"{exercise} is up to date", file=sys.stderr)
            else:
                print(f"{exercise} is stale: run `python -m grader exercises`", file=sys.stderr)
                stale = 1
            continue
        if current != wanted:
            exercise.parent.mkdir(parents=True, exist_ok=True)
            exercise.write_text(wanted, encoding="utf-8")
        print(f"wrote {exercise}", file=sys.stderr)
    return stale
