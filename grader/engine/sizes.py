"""The size policy: how large the examples a lesson's strategies draw are.

Most examples are of a lesson's own sizes (a few tokens, a few heads, narrow heads, at most two
batch axes), so that a failure shrinks to an input a student can read whole. About one in four
(:func:`grader.draw.large`) is far larger (tens of tokens, more heads, wider heads, up to three
batch axes), so that code that only works at the lesson's sizes still fails. Whether an example
is large is the first thing drawn. Shrinking alone seldom turns it off (every later choice is
then read as a lesson-sized one, and the example it reads mostly passes), so when the smallest
failing example is large the grader looks again among lesson-sized examples alone
(:func:`grader.engine.draw.lesson_sized_only`): a bug that shows at the lesson's sizes is
reported on a small example, one that shows only on large inputs on the smallest large one
found. The examples that decide a score are drawn as before: only the one shown changes.

A lesson draws its sizes through one :class:`SizePolicy` (``SIZES``, or its own made with
``dataclasses.replace``); what each example holds (which sizes, which must differ) is the
lesson's. Values default to a grid centred away from 0 (:attr:`SizePolicy.low` to
:attr:`SizePolicy.high`) on which no number is whole, and tables that start at its centre, so
that no value is ever 0: zeros, a constant written over part of an array, or the input handed
back never pass for the right numbers by accident.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from .draw import between, draw_many, fit, large

__all__ = ["SIZES", "SizePolicy", "other_than"]


@dataclass(frozen=True)
class SizePolicy:
    """The bounds of the examples a lesson draws: lesson-sized ones, large ones, and values."""

    #: Lesson-sized examples: tokens 1..max_tokens, heads up to max_heads, head widths
    #: 1..max_head_width, 0..max_batch_axes batch axes of size 1..max_batch_size.
    max_tokens: int = 6
    max_heads: int = 4
    max_head_width: int = 4
    max_batch_axes: int = 2
    max_batch_size: int = 3
    #: Large examples: tokens from big_min_tokens (so a large example is never mistaken for a
    #: lesson-sized one) to big_max_tokens, up to big_max_heads heads and big_max_width numbers
    #: per token, 0..big_max_batch_axes batch axes of size 1..big_max_batch_size.
    big_min_tokens: int = 10
    big_max_tokens: int = 40
    big_max_heads: int = 8
    big_max_width: int = 64
    big_max_batch_axes: int = 3
    big_max_batch_size: int = 2
    #: Batch axes of a large example are cut to size 1 (:meth:`fit`) until each of its arrays
    #: holds at most this many numbers: large examples stay fast, and within what the grader
    #: lets a student's function ask of the reference.
    big_numbers: int = 16384
    #: The default range of values, a grid of steps of 2.5 (``draw_many``'s four steps either
    #: side of the centre 1.25): -8.75, -6.25, ..., 11.25, none of them 0 or a whole number.
    low: float = -8.75
    high: float = 11.25
    #: Where a table of values (see :mod:`grader.draw`) starts: the grid's centre, not 0.
    origin: float = 1.25

    def __post_init__(self):
        for field in fields(self):
            value = getattr(self, field.name)
            if field.type == "int" and (
                not isinstance(value, int) or value < (0 if "axes" in field.name else 1)
            ):
                raise ValueError(
                    f"SizePolicy({field.name}={value!r}): give a whole number of at least "
                    f"{0 if 'axes' in field.name else 1}"
                )
        if self.big_min_tokens > self.big_max_tokens:
            raise ValueError(
                f"SizePolicy: big_min_tokens={self.big_min_tokens} is above "
                f"big_max_tokens={self.big_max_tokens}; give big_min_tokens <= big_max_tokens"
            )
        if not self.low <= self.origin <= self.high:
            raise ValueError(
                f"SizePolicy: origin={self.origin} is outside [low, high] = [{self.low}, {self.high}]"
            )

    def large(self, draw) -> bool:
        """Whether this example is a large one (about one in four; :func:`grader.draw.large`)."""
        return large(draw)

    def batch(self, draw, *, min_axes: int = 0, big: bool = False) -> tuple[int, ...]:
        """Leading batch axes: min_axes to max_batch_axes of them, each of size 1 to
        max_batch_size (large: up to big_max_batch_axes of size 1 to big_max_batch_size)."""
        most, size = (
            (self.big_max_batch_axes, self.big_max_batch_size)
            if big
            else (self.max_batch_axes, self.max_batch_size)
        )
        return tuple(draw(between(1, size)) for _ in range(draw(between(min_axes, most))))

    def tokens(self, draw, *, low: int = 1, big: bool = False) -> int:
        """A number of tokens: low to max_tokens, or (large) from big_min_tokens (or low, if
        more) to big_max_tokens."""
        if big:
            return draw(between(max(low, self.big_min_tokens), self.big_max_tokens))
        return draw(between(low, self.max_tokens))

    def fit(self, batch: tuple[int, ...], per_item: int) -> tuple[int, ...]:
        """The batch axes cut (see :func:`grader.draw.fit`) until batch * per_item numbers are at
        most big_numbers."""
        return fit(batch, per_item, self.big_numbers)

    def values(self, draw, shapes, *, low: float | None = None, high: float | None = None, dtype=np.float64):
        """Arrays of the given shapes (:func:`grader.draw.draw_many`), by default in the policy's
        range, whose tables start at its origin; in another range, tables start where
        ``draw_many`` starts them."""
        if low is None and high is None:
            low, high, origin = self.low, self.high, self.origin
        else:
            low = self.low if low is None else low
            high = self.high if high is None else high
            origin = self.origin if (low, high) == (self.low, self.high) else None
        return draw_many(draw, shapes, low=low, high=high, dtype=dtype, origin=origin)


#: The default policy; a lesson may make its own with ``dataclasses.replace(SIZES, max_tokens=8)``.
SIZES = SizePolicy()


def other_than(n: int, taken, low: int, high: int) -> int:
    """The first size from n upwards (wrapping round to low) within low..high that is not in
    ``taken``; n itself when every size of the range is taken.

    Sizes that differ keep mistakes visible: when two of an example's sizes are equal, code that
    swaps their axes can give the right shape, and even the right numbers, by accident."""
    span = high - low + 1
    for step in range(span):
        candidate = low + (n - low + step) % span
        if candidate not in taken:
            return candidate
    return n
