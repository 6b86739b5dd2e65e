"""Colour for the text report, only where a person reads it on a terminal.

A :class:`Style` wraps the reporter's own words (scores, check names, the likely mistake,
the next step) in ANSI colour codes; it never touches text a student chose, which
:mod:`grader.core.inert` has already made plain (its escape characters are shown, not run). A
plain Style (the default) returns every text unchanged, so files, pipes and JSON stay
byte-plain. Whether to colour is decided once per run
(:func:`grader.core.settings.use_colour`).
"""

from __future__ import annotations

from dataclasses import dataclass

#: SGR codes per role: what each part of the report is, not how it looks.
_CODES = {
    "title": "1",  # bold
    "name": "1",
    "good": "32",  # green
    "bad": "31",  # red
    "hint": "33",  # yellow
    "dim": "2",
    "next": "36",  # cyan
}


@dataclass(frozen=True)
class Style:
    """Colours roles of the report's text when ``colour`` is on; leaves it plain otherwise."""

    colour: bool = False

    def __call__(self, text: str, role: str) -> str:
        if not self.colour or not text:
            return text
        return f"\x1b[{_CODES[role]}m{text}\x1b[0m"
