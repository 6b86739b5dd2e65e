"""A score table: one row per submission, one column per exercise.

A submission a wall-clock guard stopped shows ``unfinished`` where its scores would be (in the
exercises concerned and the total), and is listed below the table with what to do.

Labels are folder names and problems quote the student's file, both chosen by
students: each is shown on one line through :func:`grader.core.inert.one_line`.
"""

from __future__ import annotations

from ..core.inert import one_line
from ..core.results import Report
from .text import score_of


def to_table(rows: list[tuple[str, Report]], exercises: tuple[str, ...]) -> str:
    """Align ``(label, report)`` rows into a plain-text table, a column per exercise."""
    header = ["submission", *exercises, "total"]
    body = []
    for label, report in rows:
        scores = {e.name: score_of(e) for e in report.exercises}
        total = score_of(report)
        body.append([one_line(label), *(scores.get(n, "-") for n in exercises), total])
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]

    def fmt(row: list[str]) -> str:
        cells = (
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        return "  ".join(cells)

    lines = [fmt(header), fmt(["-" * w for w in widths]), *map(fmt, body)]
    problems = [(label, report.problem) for label, report in rows if report.problem]
    if problems:
        lines += ["", "Files that could not be loaded:"]
        lines += [f"  {one_line(label)}: {one_line(problem)}" for label, problem in problems]
    broken = [label for label, report in rows if report.lesson_failed]
    if broken:
        lines += ["", "Not graded, a mistake in the lesson kept some checks from running:"]
        lines += [f"  {one_line(label)}" for label in broken]
    unfinished = [label for label, report in rows if report.unfinished and not report.lesson_failed]
    if unfinished:
        lines += [
            "",
            "Not graded, the machine was too busy to finish some checks (run the same command again later):",
        ]
        lines += [f"  {one_line(label)}" for label in unfinished]
    return "\n".join(lines) + "\n"
