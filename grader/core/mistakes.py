"""Stock tests of the calls seen, for a lesson's ``shows=`` mistakes (:mod:`grader.diagnosis`).

Each is a test of a list of :class:`~grader.core.diagnosis.Seen` (or makes one from what it is
given) that says whether the calls betray a mistake any lesson's function can make: an argument
changed in place, an error not raised where the reference raises one, a result of another shape
or dtype, a function right only up to some size::

    Mistake("changes-x", "x was changed in place: return a new array", shows=changed("x"))
    Mistake("no-value-error", "n below 1 must raise ValueError", shows=not_refused)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .diagnosis import Seen

__all__ = [
    "changed",
    "not_of_dtype",
    "not_refused",
    "wrong_beyond",
    "wrong_beyond_axes",
    "wrong_dtype",
    "wrong_shape",
]

Shows = Callable[[Sequence[Seen]], bool]


def changed(name: str) -> Shows:
    """Some call changed the array argument ``name`` in place."""
    return lambda seen: any(name in s.call.mutated for s in seen)


def not_refused(seen: Sequence[Seen]) -> bool:
    """Some call the reference refuses (it raises) was not refused as the reference does."""
    return any(s.refused and not s.right for s in seen)


def wrong_shape(seen: Sequence[Seen]) -> bool:
    """Some call the reference answers returned a result of another shape."""
    return any(
        s.call.returned and np.shape(s.call.value) != np.shape(s.expected) for s in seen if not s.refused
    )


def wrong_dtype(seen: Sequence[Seen]) -> bool:
    """Some call the reference answers returned an array of another dtype than the reference's
    (float32 in, float64 out)."""
    return any(
        s.call.returned and isinstance(s.call.value, np.ndarray) and s.call.value.dtype != s.expected.dtype
        for s in seen
        if not s.refused
    )


def not_of_dtype(dtype) -> Shows:
    """Some call the reference answers returned an array whose dtype is not ``dtype`` (a mask of
    numbers where booleans are promised: ``not_of_dtype(np.bool_)``)."""
    return lambda seen: any(
        s.call.returned and isinstance(s.call.value, np.ndarray) and s.call.value.dtype != dtype
        for s in seen
        if not s.refused
    )


def _all_zero(s: Seen) -> bool:
    """Every array the call was given holds only zeros: a function that leaves part of its result
    at zero (the part past the size it handles) is right on such a call by accident."""
    arrays = [v for v in s.arguments.values() if isinstance(v, np.ndarray)]
    return bool(arrays) and not any(np.any(v) for v in arrays)


def wrong_beyond(size: Callable[[Seen], int]) -> Shows:
    """Right on every call up to some ``size(call)``, wrong on every call beyond it: a size
    written into the code (calls on zeros alone, which say nothing of that, left out).

    ``wrong_beyond(lambda s: s.arguments["x"].shape[-2])`` is a function that works up to some
    number of tokens only."""

    def shows(seen: Sequence[Seen]) -> bool:
        seen = [s for s in seen if not s.refused and not _all_zero(s)]
        sizes = sorted({size(s) for s in seen})
        return any(
            all(s.right for s in seen if size(s) <= t) and not any(s.right for s in seen if size(s) > t)
            for t in sizes[:-1]
        )

    return shows


def wrong_beyond_axes(name: str, core: int) -> Shows:
    """Right up to some number of leading (batch) axes of argument ``name``, wrong on every call
    with more; ``core`` is the number of axes the argument has without batch axes."""
    return wrong_beyond(lambda s: s.arguments[name].ndim - core)
