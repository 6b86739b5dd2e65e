"""The ``graded`` mark: which exercise a check belongs to, its points, who sees it.

Points and visibility are validated where the mark is written. Whether the
exercise is one of the lesson's is known once the check's lesson is: the plugin
validates that when it collects the check (:func:`grading_of` with ``exercises``).

The mark is kept on the check itself (:data:`ATTRIBUTE`), not as a pytest mark: importing a
lesson's checks then imports no pytest, which a run that replays every example needs not load.
A check marked the pytest way (``@pytest.mark.graded(...)``) is read as well.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.results import Visibility

__all__ = [
    "ATTRIBUTE",
    "Grading",
    "MARK",
    "MarkError",
    "graded",
    "grading_of",
    "own_grading",
    "validate",
]

MARK = "graded"
#: Where :func:`graded` keeps the marks of a check: a tuple of :class:`Grading`, in the check's own
#: ``__dict__`` (one mark; more are refused when the check is collected).
ATTRIBUTE = "__grader_graded__"


class MarkError(ValueError):
    """A ``graded`` mark with a bad value."""


@dataclass(frozen=True)
class Grading:
    """The validated content of one ``graded`` mark."""

    exercise: str
    points: float
    visibility: Visibility


def validate(exercise, points, visibility, exercises: tuple[str, ...] | None = None) -> Grading:
    """Check a mark's values (the exercise against ``exercises``, the lesson's, when given);
    the message says what is wrong and what would be right."""
    if not isinstance(exercise, str) or not exercise.isidentifier():
        raise MarkError(f"graded: exercise must be the name of a function, got {exercise!r}")
    if exercises is not None and exercise not in exercises:
        raise MarkError(f"graded: exercise {exercise!r} is not one of {', '.join(exercises)}")
    if isinstance(points, bool) or not isinstance(points, (int, float)) or not points > 0:
        raise MarkError(f"graded: points must be a positive number, got {points!r}")
    try:
        seen = Visibility(visibility)
    except ValueError:
        allowed = ", ".join(v.value for v in Visibility)
        raise MarkError(f"graded: visibility {visibility!r} is not one of {allowed}") from None
    return Grading(exercise, points, seen)


def graded(exercise: str, *, points: float, visibility: str = "visible"):
    """Mark a check as worth ``points`` in ``exercise``; validated right here."""
    grading = validate(exercise, points, visibility)

    def mark(check):
        setattr(check, ATTRIBUTE, (*vars(check).get(ATTRIBUTE, ()), grading))
        return check

    return mark


def own_grading(check, exercises: tuple[str, ...] | None = None, *, name: str = "") -> Grading | None:
    """The validated mark :func:`graded` put on the function ``check`` (its exercise one of
    ``exercises``, when given), or None if it has none; ``name``: the check's, for messages."""
    own = vars(check).get(ATTRIBUTE, ()) if hasattr(check, "__dict__") else ()
    if not isinstance(own, tuple) or not all(isinstance(grading, Grading) for grading in own):
        raise MarkError(f"{name or getattr(check, '__name__', '?')}: {ATTRIBUTE} holds no graded mark")
    if len(own) > 1:
        raise MarkError(f"{name or getattr(check, '__name__', '?')}: more than one graded mark")
    if not own:
        return None
    (grading,) = own
    return validate(grading.exercise, grading.points, grading.visibility.value, exercises)


def grading_of(item, exercises: tuple[str, ...] | None = None) -> Grading | None:
    """The validated ``graded`` mark of a collected test (its exercise one of ``exercises``,
    when given), or None if it has none."""
    marks = list(item.iter_markers(MARK))
    if not marks:
        return own_grading(getattr(item, "obj", None), exercises, name=item.nodeid)
    own = own_grading(getattr(item, "obj", None), None, name=item.nodeid)
    if len(marks) + (own is not None) > 1:
        raise MarkError(f"{item.nodeid}: more than one graded mark")
    kwargs = dict(marks[0].kwargs)
    if marks[0].args:
        kwargs.setdefault("exercise", marks[0].args[0])
    return validate(
        kwargs.get("exercise"), kwargs.get("points"), kwargs.get("visibility", "visible"), exercises
    )
