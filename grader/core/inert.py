"""Text that came from a student, made inert before a person or a program reads it.

Two dangers, two functions:

* a terminal runs escape sequences (colours, cursor moves, window titles,
  hyperlinks) and carriage returns rewrite what was printed: :func:`visible`
  shows every control character as a plain escape (``\\x1b``) instead;
* a spreadsheet runs a cell that starts with ``=``, ``+``, ``-``, ``@`` (or a
  tab or carriage return) as a formula: :func:`csv_cell` makes such a cell
  plain text, as OWASP's advice on CSV injection says.

Student text reaches a report through exception messages, printed values and
file and folder names, all chosen by the student: every reporter that writes
for a terminal or a spreadsheet passes that text through here. JSON needs
nothing: ``json.dumps`` escapes control characters itself.
"""

from __future__ import annotations

import re

#: What a terminal may act on or a reader cannot see: C0 and C1 control characters (tab and
#: newline excepted) and DEL; the characters that reorder or hide text (bidirectional marks,
#: overrides and isolates, zero-width ones, line and paragraph separators, Unicode tags);
#: and lone surrogates, which no UTF-8 stream can even carry (writing one raises).
_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f"
    "\ufeff\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f]"
)

#: First characters that make a spreadsheet evaluate a cell.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")

#: A plain decimal number, the only text starting with ``-`` or ``+`` a cell may keep as it is.
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(text: str) -> str:
    """``text`` with every control character written out (``\\x1b[31m`` stays readable, runs
    nothing); tabs and newlines are kept."""
    return _CONTROL.sub(_escape, text)


def one_line(text: str) -> str:
    """:func:`visible`, and newlines and tabs shown too: for a name on one line (a student id)."""
    return visible(text).replace("\n", "\\n").replace("\t", "\\t")


def csv_cell(value):
    """A value for a CSV cell: numbers as they are; text made visible and, where a spreadsheet
    would read it as a formula, prefixed with a quote so that it stays text."""
    if not isinstance(value, str):
        return value
    text = visible(value)
    if text.lstrip(" ").startswith(_FORMULA_START) and not _NUMBER.fullmatch(text):
        return "'" + text
    return text
