"""Solution markers: the student stubs are the reference with every solution block replaced.

Everything between a ``### BEGIN SOLUTION`` line and its ``### END SOLUTION``
line is replaced by the two lines nbgrader also uses, indented like the
markers; every other byte of the reference is kept, so signatures and
docstrings cannot drift apart. One addition: an import the stubs no longer use
(the reference's code used it, the student's will) is marked for linters, so a
student's starter file is clean under ruff or flake8 before they write a line.
"""

from __future__ import annotations

import ast

from .pylines import comment_only_lines, physical_lines

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
STUB = ("# YOUR CODE HERE", "raise NotImplementedError()")
#: What marks an import the stubs leave unused (pyflakes' F401, which ruff and flake8 share).
FOR_YOUR_CODE = "  # noqa: F401 (your code will use it)"


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
    return _for_your_code("".join(out))


def _for_your_code(stubs: str) -> str:
    """``stubs`` with each top-level import that binds only names it never uses marked
    :data:`FOR_YOUR_CODE` (an import on one line, without a comment of its own)."""
    try:
        tree = ast.parse(stubs)
    except SyntaxError:
        return stubs  # the file's own problem, reported where it is graded
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    exported = _exported(tree)
    lines = stubs.splitlines(keepends=True)
    for node in tree.body:
        if not isinstance(node, (ast.Import, ast.ImportFrom)) or node.lineno != node.end_lineno:
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        bound = {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        if "*" in bound or bound & (used | exported):
            continue
        line = lines[node.lineno - 1]
        body = line.rstrip("\r\n")
        if "#" in body[node.end_col_offset :]:
            continue
        lines[node.lineno - 1] = body + FOR_YOUR_CODE + line[len(body) :]
    return "".join(lines)


def _exported(tree: ast.Module) -> set[str]:
    """The names a module's ``__all__`` lists (a plain list or tuple of strings), if any."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            if isinstance(node.value, (ast.List, ast.Tuple)):
                names |= {elt.value for elt in node.value.elts if isinstance(elt, ast.Constant)}
    return {name for name in names if isinstance(name, str)}


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
