"""The ``graded`` mark: which exercise a check belongs to, its points, who sees it."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from . import EXERCISES
from .results import Visibility

MARK = "graded"


class MarkError(ValueError):
    """A ``graded`` mark with a bad value."""


@dataclass(frozen=True)
class Grading:
    """The validated content of one ``graded`` mark."""

    exercise: str
    points: float
    visibility: Visibility


def validate(exercise, points, visibility) -> Grading:
    """Check a mark's values; the message says what is wrong and what would be right."""
    if exercise not in EXERCISES:
        raise MarkError(f"graded: exercise {exercise!r} is not one of {', '.join(EXERCISES)}")
    if isinstance(points, bool) or not isinstance(points, (int, float)) or not points > 0:
        raise MarkError(f"graded: points must be a positive number, got {points!r}")
    try:
        seen = Visibility(visibility)
    except ValueError:
        allowed = ", ".join(v.value for v in Visibility)
        raise MarkError(f"graded: visibility {visibility!r} is not one of {allowed}") from None
    return Grading(exercise, points, seen)


def graded(exercise: str, *, points: float, visibility: str = "visible") -> pytest.MarkDecorator:
    """Mark a check as worth ``points`` in ``exercise``; validated right here."""
    grading = validate(exercise, points, visibility)
    return getattr(pytest.mark, MARK)(
        exercise=grading.exercise, points=grading.points, visibility=grading.visibility.value
    )


def grading_of(item) -> Grading | None:
    """The validated ``graded`` mark of a collected test, or None if it has none."""
    marks = list(item.iter_markers(MARK))
    if not marks:
        return None
    if len(marks) > 1:
        raise MarkError(f"{item.nodeid}: more than one graded mark")
    kwargs = dict(marks[0].kwargs)
    if marks[0].args:
        kwargs.setdefault("exercise", marks[0].args[0])
    return validate(kwargs.get("exercise"), kwargs.get("points"), kwargs.get("visibility", "visible"))
