"""Reading a notebook: the Python code inside a ``.ipynb`` file, standard library only.

:func:`notebook_source` turns a notebook's content into the bytes of a ``.py``
file, so that every command grades a notebook as it grades the lesson's file;
:mod:`grader.core.intake` reads the file (once, bounded) and calls it. Every
refusal is a :class:`NotebookError` whose message a student can act on.
"""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path

from .pylines import TooTangled, cell_code


class NotebookError(ValueError):
    """A notebook file that cannot be read; the message says why, for a student."""


# ----------------------------------------------------------------------------- reading notebooks


def _text(source, where: str) -> str:
    """A cell's source as one string (nbformat allows a string or a list of strings)."""
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(part, str) for part in source):
        return "".join(source)
    kind = "a list holding something other than text" if isinstance(source, list) else _kind(source)
    raise NotebookError(
        f"{where} is damaged: its source is {kind}, not text. Open the notebook in Jupyter, "
        "retype that cell and save, or start again from a fresh copy of the assignment."
    )


def _kind(value) -> str:
    if value is None:
        return "missing"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


def nbgrader_metadata(cell: dict) -> dict | None:
    """The cell's nbgrader metadata, or None when it has none."""
    metadata = cell.get("metadata")
    found = metadata.get("nbgrader") if isinstance(metadata, dict) else None
    return found if isinstance(found, dict) else None


def is_autograder_cell(cell: dict) -> bool:
    """An autograder test cell: graded by nbgrader from its output, not written by the student."""
    meta = nbgrader_metadata(cell)
    return bool(meta and meta.get("grade") and not meta.get("solution"))


def comment_magics(code: str) -> str:
    """The Python Jupyter runs for a cell's ``code``, line for line: IPython magics and shell
    escapes made ``pass`` statements (see :func:`grader.core.pylines.cell_code`)."""
    return cell_code(code)


#: Largest notebook file accepted, in bytes: room for plots in the outputs, far below a risk.
MAX_NOTEBOOK = 16 << 20
#: Deepest nesting of JSON arrays and objects accepted; a notebook saved by Jupyter needs
#: about ten levels, and a parser that recurses must never meet thousands.
MAX_NESTING = 64

#: A lone surrogate: JSON may spell one (``"\\ud800"``), but no UTF-8 file holds it.
_SURROGATE = re.compile("[\ud800-\udfff]")

#: What matters to nesting in JSON text: brackets, quotes and backslashes.
_STRUCTURE = re.compile(r'[\[\]{}"\\]')


def too_large(name: str, size: int) -> NotebookError:
    """The error for a notebook of ``size`` bytes, over :data:`MAX_NOTEBOOK`."""
    return NotebookError(
        f"{name} holds {size / 2**20:.1f} MiB; a notebook may hold at most {MAX_NOTEBOOK >> 20} MiB. "
        "Its outputs (plots, printed arrays) probably fill it: clear them (Edit > Clear Outputs of "
        "All Cells), save, and hand it in again."
    )


def _nested_too_deep(text: str) -> bool:
    """True when the JSON ``text`` nests arrays and objects more than MAX_NESTING deep.

    One pass over the characters that matter, brackets inside strings left out:
    it cannot be driven into a RecursionError, and its time grows with the text's
    length, never faster (an unclosed string full of escaped quotes included).
    """
    if text.count("[") + text.count("{") <= MAX_NESTING:
        return False
    depth, in_string, skip = 0, False, -1
    for found in _STRUCTURE.finditer(text):
        where, char = found.start(), found.group()
        if where == skip:  # the character a backslash escapes
            continue
        if in_string:
            if char == "\\":
                skip = where + 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_NESTING:
                return True
        elif char in "]}":
            depth -= 1
    return False


def _read(path: Path) -> bytes:
    """The bytes of the notebook file at ``path``, never more than MAX_NOTEBOOK of them."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > MAX_NOTEBOOK:
                raise too_large(path.name, size)
            return f.read(MAX_NOTEBOOK + 1)  # one byte over: read_cells refuses a file that grew
    except OSError as err:
        raise NotebookError(f"{path.name} could not be read ({err.strerror or err}).") from None


def read_cells(notebook: Path | bytes, *, name: str | None = None) -> list[dict]:
    """The cells of an nbformat-4 notebook, each with its source as one string.

    ``notebook`` is the file's content (``name`` is then how messages call it)
    or, for trusted callers, a path to read. Raises NotebookError with a
    message a student understands when it is not a usable notebook.
    """
    if isinstance(notebook, bytes):
        raw, name = notebook, name or "the notebook"
    else:
        raw, name = _read(Path(notebook)), name or Path(notebook).name
    if len(raw) > MAX_NOTEBOOK:
        raise too_large(name, len(raw))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise NotebookError(
            f"{name} is not a notebook: it is not text (not UTF-8). Download it again from "
            "Jupyter (File > Download) without opening it in another program."
        ) from None
    if _nested_too_deep(text):
        raise NotebookError(
            f"{name} is not a readable notebook: its JSON is nested more than {MAX_NESTING} levels "
            "deep, which no notebook saved by Jupyter is. Download it again from Jupyter "
            "(File > Download), or start again from a fresh copy of the assignment."
        )
    try:
        document = json.loads(text)
    except json.JSONDecodeError as err:
        hint = (
            "it ends too early, as if it was cut off while saving"
            if not raw.rstrip().endswith(b"}") or err.pos >= len(text.rstrip()) - 1
            else f"line {err.lineno}, column {err.colno}: {err.msg}"
        )
        raise NotebookError(
            f"{name} is not a readable notebook: its JSON is broken ({hint}). It was probably "
            "truncated or edited outside Jupyter; restore a checkpoint (File > Revert Notebook "
            "to Checkpoint) or download it again."
        ) from None
    except (ValueError, RecursionError):  # a number of thousands of digits, say
        raise NotebookError(
            f"{name} is not a readable notebook: its JSON holds a value no notebook holds. It was "
            "probably edited outside Jupyter; restore a checkpoint or download it again."
        ) from None
    if not isinstance(document, dict):
        raise NotebookError(f"{name} is not a notebook: it holds {_kind(document)}, not a notebook object.")
    version = document.get("nbformat")
    if version != 4:
        shown = "no format number" if version is None else f"format {version!r}"
        raise NotebookError(
            f"{name} is not a Jupyter notebook in format 4 (it has {shown}). Open it in a current "
            "Jupyter and save it again, or start from a fresh copy of the assignment."
        )
    cells = document.get("cells")
    if not isinstance(cells, list):
        raise NotebookError(f"{name} is damaged: it has no list of cells.")
    if not cells:
        raise NotebookError(f"{name} has no cells at all: there is nothing to grade.")
    readable = []
    for number, cell in enumerate(cells, start=1):
        where = f"cell {number} of {name}"
        if not isinstance(cell, dict):
            raise NotebookError(f"{where} is damaged: it is {_kind(cell)}, not a cell.")
        kind = cell.get("cell_type")
        if kind not in ("code", "markdown", "raw"):
            raise NotebookError(f"{where} is damaged: its type is {kind!r}, not code, markdown or raw.")
        readable.append({**cell, "source": _text(cell.get("source"), where)})
    return readable


def notebook_source(notebook: Path | bytes, *, name: str | None = None) -> bytes:
    """The Python code of a notebook (its content, or a path: see :func:`read_cells`), as the
    bytes of a ``.py`` file.

    When the notebook carries nbgrader metadata (it came from the nbgrader
    assignment), the code is that of its solution cells, preceded by the
    locked cells that give code (the imports and given helpers, without which no
    solution runs); test cells and cells the student added are left out.
    Otherwise it is the code of every code cell. Cells are joined with blank
    lines; IPython magics and shell lines become ``pass`` statements (so every
    cell keeps its number of lines), read as Jupyter reads them: see
    :mod:`grader.core.pylines`. Raises NotebookError for a file
    that is not a usable notebook, or a cell that Python cannot read on its own
    (Jupyter runs each cell alone; joined, two broken cells could mend each other).
    """
    cells = read_cells(notebook, name=name)
    code = [(n, c) for n, c in enumerate(cells, start=1) if c["cell_type"] == "code"]
    if any(nbgrader_metadata(c) is not None for c in cells):
        code = [(n, c) for n, c in code if nbgrader_metadata(c) is not None and not is_autograder_cell(c)]
    called = name or ("the notebook" if isinstance(notebook, bytes) else Path(notebook).name)
    for number, cell in code:
        lone = _SURROGATE.search(cell["source"])
        if lone:
            raise NotebookError(
                f"code cell {number} of {called} holds a character that is not text (U+{ord(lone.group()):04X}, "
                "half of a pair that no file can store alone). Delete it in Jupyter, save, and hand the "
                "notebook in again."
            )
    parts = [_cell_python(c["source"], f"cell {n} of {called}") for n, c in code]
    return ("\n\n".join(p for p in parts if p.strip()) + "\n").encode("utf-8")


def _cell_python(source: str, where: str) -> str:
    """The Python Jupyter runs for a cell's ``source``, checked to be Python on its own."""
    try:
        code = cell_code(source)
        compile(code, where, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except TooTangled as err:
        raise NotebookError(f"{where} cannot be read: {err}. Put each magic on a line of its own.") from None
    except SyntaxError as err:
        line = f" at line {err.lineno} of the cell" if err.lineno else ""
        raise NotebookError(
            f"Python cannot read {where}: {err.msg}{line}. Jupyter cannot run that cell either; "
            "fix it, run it, save, and hand the notebook in again."
        ) from None
    except (ValueError, RecursionError, MemoryError, OverflowError):  # NUL bytes; nesting
        raise NotebookError(f"Python cannot read {where}: it holds something no Python cell holds.") from None
    return code.rstrip("\r\n")
