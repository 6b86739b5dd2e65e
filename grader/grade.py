"""``grade``: grade one submission for an instructor or CI, as text or JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from . import EXERCISES
from .reporters.json_report import to_dict
from .reporters.text import to_text
from .run import run_checks
from .submission import DEFAULT_CALL_TIMEOUT, find_file

FORMATS = ("text", "json")


def render(report, fmt: str) -> str:
    """The report in one of FORMATS."""
    if fmt == "json":
        return json.dumps(to_dict(report), indent=2) + "\n"
    return to_text(report)


def main(
    *,
    path: Path,
    fmt: str = "text",
    output: Path | None = None,
    call_timeout: float = DEFAULT_CALL_TIMEOUT,
    exercises: tuple[str, ...] = EXERCISES,
    max_examples: int | None = None,
    isolation: str = "auto",
    total_timeout: float | None = None,
) -> int:
    """Grade ``path`` (a file, or a folder holding attention.py); 0 once a report is written."""
    file = find_file(Path(path))
    print(f"grading {file} ...", file=sys.stderr)
    report = run_checks(
        file,
        call_timeout=call_timeout,
        exercises=exercises,
        max_examples=max_examples,
        isolation=isolation,
        total_timeout=total_timeout,
    )
    text = render(report, fmt)
    if output is None:
        sys.stdout.write(text)
    else:
        Path(output).write_text(text, encoding="utf-8")
        print(f"wrote {output}", file=sys.stderr)
    print(f"score: {report.score:g}/{report.max_score:g}", file=sys.stderr)
    return 0
