"""Python source read as Python reads it: its lines, its comments and IPython's magics.

``str.splitlines`` ends a line at U+2028, U+2029, form feed, vertical tab,
``\\x1c``-``\\x1e`` and ``\\x85`` as well; Python's tokenizer ends one only at
``\\n``, ``\\r\\n`` or ``\\r``, so text after a U+2028 inside a comment is still
the comment. Whatever the grader reads line by line in code (solution markers,
magics, the line a traceback names) it splits here, and finds comments,
strings and brackets with :mod:`tokenize`, as Python and Jupyter do.
"""

from __future__ import annotations

import re
import tokenize

#: The only line endings Python knows.
_ENDING = re.compile(r"\r\n|\r|\n")

#: What Python counts as indentation.
_INDENT = " \t\x0c"

#: Cell magics whose body IPython runs as the cell's own Python, in the notebook's
#: namespace (what they define stays defined); any other cell magic (%%writefile,
#: %%bash, %%timeit, ...) hands its body to something else, so none of it is code.
BODY_IS_CODE = frozenset({"time", "capture"})

#: Most rounds of :func:`magic_lines` (each one tokenizes the cell): a cell written by
#: hand needs one or two; a hostile one must not buy minutes of tokenizing.
MAX_ROUNDS = 8


class TooTangled(ValueError):
    """A cell whose magics cannot be told from its code in :data:`MAX_ROUNDS` rounds."""


def physical_lines(text: str, *, keepends: bool = False) -> list[str]:
    """The lines of ``text`` as Python's tokenizer counts them (``keepends``: with their endings)."""
    if keepends:
        found, start = [], 0
        for end in _ENDING.finditer(text):
            found.append(text[start : end.end()])
            start = end.end()
        if start < len(text):
            found.append(text[start:])
        return found
    lines = _ENDING.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _tokens(text: str):
    """Python's tokens of ``text``, stopping quietly where it stops being Python.

    Every line ending becomes ``\\n`` first: :mod:`tokenize` reads lines as its
    ``readline`` gives them, and a lone ``\\r`` ends a line for the compiler.
    """
    lines = iter(line + "\n" for line in physical_lines(text))
    try:
        yield from tokenize.generate_tokens(lambda: next(lines, ""))
    except (tokenize.TokenError, SyntaxError):
        return


_OPEN, _CLOSE = "([{", ")]}"
_FSTRING_START = getattr(tokenize, "FSTRING_START", None)
_FSTRING_END = getattr(tokenize, "FSTRING_END", None)


def logical_starts(text: str) -> tuple[set[int], int | None]:
    """(starts, reached): the lines of ``text`` (numbered from 1) whose first token starts a
    logical line (not inside a string or brackets, nor after a backslash that continues the
    line before), and, where the text stops being Python, the last line whose tokens were
    read (None: all of them were). Past that line, nothing is known."""
    starts, seen = set(), set()
    depth, previous, reached = 0, None, 0
    for token in _tokens(text):
        kind, row, reached = token.type, token.start[0], token.end[0]
        if kind == tokenize.ENCODING:
            continue
        if row not in seen:
            seen.add(row)
            if depth == 0 and previous in (None, tokenize.NEWLINE, tokenize.NL):
                starts.add(row)
        if kind == tokenize.OP and token.string in _OPEN or kind == _FSTRING_START:
            depth += 1
        elif kind == tokenize.OP and token.string in _CLOSE or kind == _FSTRING_END:
            depth = max(depth - 1, 0)
        if kind not in (tokenize.INDENT, tokenize.DEDENT):
            previous = kind
    return starts, None if previous == tokenize.ENDMARKER else reached


def comment_only_lines(text: str) -> dict[int, str]:
    """{line number (from 1): comment} of the lines of ``text`` that hold nothing but a comment."""
    found, busy = {}, set()
    for token in _tokens(text):
        if token.type == tokenize.COMMENT and token.line[: token.start[1]].strip(_INDENT) == "":
            found[token.start[0]] = token.string
        elif token.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            busy.update(range(token.start[0], token.end[0] + 1))
    return {row: comment for row, comment in found.items() if row not in busy}


def _is_candidate(line: str) -> bool:
    return line.lstrip(_INDENT).startswith(("%", "!"))


def _continued(line: str) -> bool:
    """True when a magic's line goes on to the next one (it ends with a backslash)."""
    return _ENDING.sub("", line).endswith("\\")


def _neutral(lines: list[str], magics: set[int]) -> list[str]:
    """``lines`` with each magic (and the lines its backslashes continue) made a ``pass``."""
    made, going_on = [], False
    for number, line in enumerate(lines, start=1):
        body = _ENDING.sub("", line)
        ending = line[len(body) :]
        if going_on:  # the line a magic's backslash continues is the magic's, whatever it holds
            made.append(f"# {body}{ending}")
            going_on = _continued(line)
        elif number in magics:
            indent = body[: len(body) - len(body.lstrip(_INDENT))]
            made.append(f"{indent}pass  # {body[len(indent) :]}{ending}")
            going_on = _continued(line)
        else:
            made.append(line)
    return made


def magic_lines(lines: list[str]) -> set[int]:
    """The lines (numbered from 1) that IPython runs as line magics or shell escapes: a ``%``
    or ``!`` first in a logical line, once every magic before it is taken out.

    Guess that every line starting with one is a magic, tokenize with the
    guesses taken out, guess again the lines that start a logical line, until
    the guess holds. Whether a line starts a logical one depends only on the
    lines before it, so each round puts right at least the first wrong guess,
    and a guess that holds is what reading line by line gives.
    """
    candidates = {n for n, line in enumerate(lines, start=1) if _is_candidate(line)}
    guess = candidates
    for _ in range(MAX_ROUNDS):
        if not candidates:
            return guess
        starts, reached = logical_starts("".join(_neutral(lines, guess)))
        # past where the text stops being Python, the guess stands: it fails to compile anyway
        unknown = set() if reached is None else {n for n in guess if n > reached}
        better = {n for n in candidates if n in starts} | unknown
        if better == guess:
            return guess
        guess = better
    raise TooTangled("its magics (lines starting with % or !) are tangled with its strings and brackets")


def cell_code(source: str) -> str:
    """The Python that Jupyter runs for a code cell whose text is ``source``, with as many
    lines: each line magic or shell escape (and the lines it continues) becomes a ``pass``;
    a cell magic whose body is not run as Python leaves the whole cell a comment.

    Raises :class:`TooTangled` for a cell no one writes by hand.
    """
    lines = physical_lines(source, keepends=True)
    first = next((n for n, line in enumerate(lines) if line.strip(_INDENT + "\r\n")), None)
    if first is not None and lines[first].startswith("%%"):
        name = lines[first][2:].split(maxsplit=1)[:1]
        if not name or name[0] not in BODY_IS_CODE:
            return "".join(f"# {line}" if line.strip() else line for line in lines)
        lines[first] = f"# {lines[first]}"
    return "".join(_neutral(lines, magic_lines(lines)))
