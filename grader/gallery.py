"""``gallery``: grade a folder of submissions and print a score table.

Without a folder it grades the bundled gallery: the reference solution, the
untouched stubs and the sample student files in ``examples/gallery``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from . import paths
from .reporters.json_report import to_dict
from .reporters.table import to_table
from .run import run_checks


def entries(folder: Path | None) -> list[tuple[str, Path]]:
    """(label, attention.py) for every submission to show."""
    found: list[tuple[str, Path]] = []
    if folder is None:
        folder = paths.GALLERY
        found += [("reference solution", paths.SOLUTION), ("untouched stubs", paths.EXERCISE)]
    for sub in sorted(p for p in Path(folder).iterdir() if p.is_dir()):
        if (sub / "attention.py").is_file():
            found.append((sub.name, sub / "attention.py"))
    return found


FORMATS = ("table", "json")


def main(*, folder: Path | None = None, fmt: str = "table", **options) -> int:
    """Grade every entry and print the table, or a JSON object of reports (progress on stderr).

    ``options`` go to :func:`grader.run.run_checks` (exercises, call_timeout, max_examples).
    """
    if folder is not None and not Path(folder).is_dir():
        raise FileNotFoundError(f"{folder} is not a folder of submissions")
    rows = []
    for label, file in entries(folder):
        print(f"grading {label} ({file}) ...", file=sys.stderr)
        rows.append((label, run_checks(file, **{"isolation": "auto", **options})))
    if fmt == "json":
        sys.stdout.write(json.dumps({label: to_dict(report) for label, report in rows}, indent=1) + "\n")
    else:
        sys.stdout.write(to_table(rows))
    return 0
