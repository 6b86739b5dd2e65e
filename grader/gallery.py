"""``gallery``: grade a folder of submissions and print a score table.

Without a folder it grades the lesson's gallery: the reference solution, the
untouched stubs and the sample student files in ``examples/gallery/NAME/``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from .inert import one_line
from .lesson import Lesson
from .reporters.json_report import to_dict
from .reporters.table import to_table
from .run import run_checks


def entries(lesson: Lesson, folder: Path | None) -> list[tuple[str, Path]]:
    """(label, submission) for every submission to show: each subfolder that holds the
    lesson's file (whatever it is: one that cannot be graded is shown with the reason) or a
    notebook; :func:`grader.intake.open_submission` takes it in."""
    found: list[tuple[str, Path]] = []
    if folder is None:
        folder = lesson.gallery
        found += [("reference solution", lesson.solution), ("untouched stubs", lesson.stubs)]
        if not folder.is_dir():
            return found
    for sub in sorted(p for p in Path(folder).iterdir() if p.is_dir()):
        if os.path.lexists(sub / lesson.filename) or any(sub.glob("*.ipynb")):
            found.append((sub.name, sub))
    return found


FORMATS = ("table", "json")


def main(*, lesson: Lesson, folder: Path | None = None, fmt: str = "table", **options) -> int:
    """Grade every entry and print the table, or a JSON object of reports (progress on stderr).

    ``options`` go to :func:`grader.run.run_checks` (exercises, call_timeout, max_examples).
    """
    if folder is not None and not Path(folder).is_dir():
        raise FileNotFoundError(f"{folder} is not a folder of submissions")
    rows = []
    for label, file in entries(lesson, folder):
        print(f"grading {one_line(label)} ({one_line(str(file))}) ...", file=sys.stderr)
        rows.append((label, run_checks(file, lesson=lesson, **{"isolation": "auto", **options})))
    if fmt == "json":
        sys.stdout.write(json.dumps({label: to_dict(report) for label, report in rows}, indent=1) + "\n")
    else:
        sys.stdout.write(to_table(rows, lesson.exercises))
    return 0
