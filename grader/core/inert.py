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

Before any of that, text is made safe once, where it enters the grader's side
(the intake, the worker's messages, the roster): :func:`student_text` for free
text, :func:`student_name` for a name that must stay one line and tell two
students apart. What they return holds no lone surrogate, no byte that is not
UTF-8 and no control or bidirectional character, so SQLite, JSON, HTML, XML and
a terminal all take it as it is.
"""

from __future__ import annotations

import hashlib
import os
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


def student_text(text) -> str:
    """Any text that came from a student's side, safe for every later use: control and
    bidirectional characters and lone surrogates written out as by :func:`visible` (newlines
    and tabs kept). Bytes are read as UTF-8, a byte that is not shown as ``\\udcXX``;
    anything that is not text is shown as its ``repr``."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "surrogateescape")
    elif not isinstance(text, str):
        text = repr(text)
    return visible(text)


def student_strings(value):
    """``value``, a message decoded from a student's side, with every text in it (dictionary keys
    included) made safe by :func:`student_text`; numbers, arrays and the rest kept as they are."""
    if isinstance(value, str):
        return student_text(value)
    if isinstance(value, dict):
        return {student_strings(k): student_strings(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(student_strings(v) for v in value)
    return value


def student_name(name) -> str:
    """A name from a student's side (a folder, a file, a roster's id), safe and on one line.

    A name that needs nothing is kept as it is; any other is written out as by
    :func:`one_line` with its backslashes doubled. So two different names never
    give the same text (a folder named with the byte 0xff and one named ``\\udcff``
    stay two students), and the same name always gives the same text.
    A folder name read as bytes is taken as the file system gives it (``os.fsdecode``).
    """
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    if "\\" not in name and one_line(name) == name:
        return name
    return one_line(name.replace("\\", "\\\\"))


#: Longest file name the batch makes from a student's name, in bytes, before its hash and
#: suffix: far below the 255 bytes a file system allows (NAME_MAX).
FILE_STEM = 64


def file_stem(name: str) -> str:
    """A file name (without suffix) for a student's name, unique to it and stable across runs:
    the name itself when it is plain and short; otherwise its letters, digits and ``._@+-``
    (others as ``_``), cut to :data:`FILE_STEM` bytes, then ``-`` and a hash of the name."""
    clean = re.sub(r"[^A-Za-z0-9._@+-]", "_", name)  # ASCII only: a character is a byte
    plain = clean == name and clean not in ("", ".", "..") and not _HASHED.search(clean)
    if plain and len(clean) <= FILE_STEM:
        return clean
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return clean[:FILE_STEM] + "-" + digest


#: What a file name made from an unusual name ends with: a hash of the name.
_HASHED = re.compile(r"-[0-9a-f]{8}$")


#: Where a spreadsheet may start a new cell inside ours: a comma or a semicolon (which it may
#: take for the delimiter, quotes or not); tabs and line ends are written out before this.
_DELIMITER = re.compile("([,;])")


def csv_cell(value):
    """A value for a CSV cell: numbers as they are; text on one line (:func:`one_line`: no tab,
    no line end) and, wherever a spreadsheet would read a formula (at the start, or after a
    comma or semicolon that it may take for its delimiter), a quote put first so that it stays
    text."""
    if not isinstance(value, str):
        return value
    parts = _DELIMITER.split(one_line(value))  # the cells a spreadsheet may see, and the delimiters
    return "".join(part if i % 2 else _inert_part(part) for i, part in enumerate(parts))


def _inert_part(text: str) -> str:
    """``text`` (what a spreadsheet may read as one cell) prefixed with a quote when it would be
    read as a formula: it starts, after spaces and double quotes, with ``= + - @``, and is not
    a plain number."""
    if text.lstrip(' "').startswith(_FORMULA_START) and not _NUMBER.fullmatch(text.strip(' "')):
        return "'" + text
    return text
