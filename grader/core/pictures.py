"""Pictures of what a student's function computes, declared by a lesson, drawn by the HTML report.

A lesson may declare, beside its checks (``tests/checks/NAME/pictures.py``):

* ``TOKENS``: the words of the lesson's short sentence, one per token;
* ``PICTURES[exercise]``: a :class:`Picture`, the arguments to call the exercise's function
  with (on that sentence) and how to read a table of weights ``(heads, T, T)`` from what it
  returns (``weights``, lesson code run on the trusted side on the returned arrays).

After the checks, the grader calls the student's function on those arguments, as it calls it in
any check (in the sandbox where grading is sandboxed), and the reference on the same, and keeps
both tables in the report as a :class:`Heatmap`. This module knows no lesson.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["Heatmap", "Picture", "heatmap"]

#: A student's weight differs from the reference's when it is off by more than this (weights lie
#: in [0, 1]; float32 work keeps about 7 digits).
TOLERANCE = 1e-6


@dataclass(frozen=True)
class Picture:
    """What a lesson pictures for one exercise."""

    title: str
    """A line saying what the picture shows, in the lesson's words."""
    arguments: dict
    """The call: the lesson's sentence as the function's arguments."""
    weights: Callable[[object], np.ndarray]
    """From what the function returns, the weights to draw: (heads, T, T), row = who looks,
    column = who is looked at."""


@dataclass(frozen=True)
class Heatmap:
    """One exercise's picture: the student's weights beside the reference's, per head."""

    exercise: str
    title: str
    tokens: tuple[str, ...]
    reference: tuple
    """Nested tuples (heads, T, T) of floats."""
    student: tuple = ()
    """The same for the student's function; empty when it gave no such table."""
    problem: str = ""
    """Why there is no table of the student's (its call failed, or gave another shape)."""

    def differ(self) -> np.ndarray:
        """(heads, T, T) booleans: where the student's weight is not the reference's (all
        False without a table of the student's)."""
        reference = np.asarray(self.reference, dtype=float)
        if not self.student:
            return np.zeros(reference.shape, dtype=bool)
        student = np.asarray(self.student, dtype=float)
        with np.errstate(all="ignore"):
            return ~np.isclose(student, reference, rtol=0, atol=TOLERANCE)

    def to_dict(self) -> dict:
        return {
            "exercise": self.exercise,
            "title": self.title,
            "tokens": list(self.tokens),
            "reference": _lists(self.reference),
            "student": _lists(self.student),
            "problem": self.problem,
        }

    @classmethod
    def from_dict(cls, data: dict) -> Heatmap:
        return cls(
            exercise=data["exercise"],
            title=data.get("title", ""),
            tokens=tuple(data.get("tokens", ())),
            reference=_tuples(data["reference"]),
            student=_tuples(data.get("student", [])),
            problem=data.get("problem", ""),
        )


def _tuples(value):
    return tuple(_tuples(v) for v in value) if isinstance(value, (list, tuple)) else float(value)


def _lists(value):
    """Nested lists for JSON, a number that is not finite as text (``"nan"``, ``"-inf"``: JSON
    has no such number, and :func:`_tuples` reads them back)."""
    if isinstance(value, (list, tuple)):
        return [_lists(v) for v in value]
    return value if np.isfinite(value) else str(value)


def heatmap(
    exercise: str, picture: Picture, tokens: tuple[str, ...], expected, got=None, problem: str = ""
) -> Heatmap:
    """The Heatmap of ``picture``: the reference's result ``expected`` and the student's
    ``got`` (None with a ``problem`` when the call failed), each read by ``picture.weights``."""
    reference = np.asarray(picture.weights(expected), dtype=float)  # (heads, T, T)
    student = ()
    if got is not None and not problem:
        try:
            table = np.asarray(picture.weights(got), dtype=float)
        except (TypeError, ValueError, IndexError):
            table = None
        if table is None or table.shape != reference.shape:
            shape = "no table" if table is None else f"a table of shape {table.shape}"
            problem = f"your function gave {shape} where the weights should be {reference.shape}"
        else:
            student = _tuples(table.tolist())
    return Heatmap(exercise, picture.title, tuple(tokens), _tuples(reference.tolist()), student, problem)
