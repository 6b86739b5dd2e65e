"""``grade``: grade one submission for an instructor or CI, in the format its tools read."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from ..core.intake import take_in
from ..core.lesson import Lesson
from ..core.settings import Settings
from ..engine.run import run_checks
from ..formats.github import step_output, to_github
from ..formats.gradescope import to_gradescope
from ..formats.html import to_html
from ..formats.json_report import to_dict
from ..formats.terminal import Style
from ..formats.text import WIDTH, to_text
from .check import terminal_layout

FORMATS = ("text", "json", "gradescope", "github", "html")


def render(report, fmt: str, *, seconds: float = 0.0, details: bool = False, style=None, width=WIDTH) -> str:
    """The report in one of FORMATS (text: short, or every failure in full with ``details``,
    coloured by ``style`` and ``width`` wide)."""
    if fmt == "json":
        return json.dumps(to_dict(report), indent=2) + "\n"
    if fmt == "gradescope":
        return json.dumps(to_gradescope(report, execution_time=seconds), indent=2) + "\n"
    if fmt == "github":
        return json.dumps(to_github(report), indent=2) + "\n"
    if fmt == "html":
        return to_html(report, details=details)
    return to_text(report, details=details, style=style, width=width)


def main(
    *,
    lesson: Lesson,
    settings: Settings,
    path: Path,
    fmt: str = "text",
    output: Path | None = None,
    github_output: bool = False,
    details: bool = False,
    colour: str | None = None,
) -> int:
    """Grade ``path`` (a file, or a folder holding the lesson's file); 0 once a report is written.

    With ``github_output``, also append the GitHub Classroom result to the file
    named by $GITHUB_OUTPUT, as the step output ``result`` (base64 JSON).
    """
    intake, file = take_in(path, lesson.filename)
    if github_output and not os.environ.get("GITHUB_OUTPUT"):
        raise FileNotFoundError("--github-output needs $GITHUB_OUTPUT (set by GitHub Actions in every step)")
    print(f"grading {file} ...", file=sys.stderr)
    start = time.monotonic()
    report = run_checks(intake, lesson=lesson, settings=settings, shown=str(file))
    style, width = terminal_layout(sys.stdout, colour) if output is None else (Style(), WIDTH)
    text = render(report, fmt, seconds=time.monotonic() - start, details=details, style=style, width=width)
    if output is None:
        sys.stdout.write(text)
    else:
        Path(output).write_text(text, encoding="utf-8")
        print(f"wrote {output}", file=sys.stderr)
    if github_output:
        with open(os.environ["GITHUB_OUTPUT"], "a", encoding="utf-8") as f:
            f.write(step_output(to_github(report)))
    print(f"score: {report.score:g}/{report.max_score:g}", file=sys.stderr)
    return 0
