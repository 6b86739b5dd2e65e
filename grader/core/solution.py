"""Solution markers: the student stubs are the reference with every solution block replaced.

Everything between a ``### BEGIN SOLUTION`` line and its ``### END SOLUTION``
line is replaced by the two lines nbgrader also uses, indented like the
markers; every other byte of the reference is kept, so signatures and
docstrings cannot drift apart.
"""

from __future__ import annotations

from .pylines import comment_only_lines, physical_lines

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
STUB = ("# YOUR CODE HERE", "raise NotImplementedError()")


class MarkerError(ValueError):
    """The solution markers are unbalanced."""


def _markers(source: str) -> dict[int, str]:
    """{line number: BEGIN or END} of the lines of ``source`` that are a marker comment
    (Python's own lines and comments: a marker inside a string is not one)."""
    return {
        row: comment.strip()
        for row, comment in comment_only_lines(source).items()
        if comment.strip() in (BEGIN, END)
    }


def strip_solutions(source: str) -> str:
    """Return ``source`` with every solution block replaced by the stub."""
    out: list[str] = []
    inside = False
    markers = _markers(source)
    for number, line in enumerate(physical_lines(source, keepends=True), start=1):
        marker = markers.get(number)
        if marker == BEGIN:
            if inside:
                raise MarkerError(f"line {number}: {BEGIN} inside another solution block")
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            out.extend(f"{indent}{stub}\n" for stub in STUB)
        elif marker == END:
            if not inside:
                raise MarkerError(f"line {number}: {END} without a matching {BEGIN}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise MarkerError(f"{BEGIN} is never closed")
    return "".join(out)


def solution_lines(source: str) -> list[str]:
    """The non-blank lines between the markers (to prove a file holds none)."""
    lines, inside = [], False
    markers = _markers(source)
    for number, line in enumerate(physical_lines(source), start=1):
        stripped = line.strip()
        if number in markers:
            inside = markers[number] == BEGIN
        elif inside and stripped:
            lines.append(stripped)
    return lines
