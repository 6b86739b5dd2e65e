"""The size policy and value grid this lesson draws with, copied from the other lessons'
``strategies.py`` (kv_cache's).

A copy, kept apart on purpose: the course is moving these helpers into the grader's author API,
and when it lands this module becomes one import. Nothing here is rope's own.

Examples are mostly of the lesson's sizes, so that failures shrink to tiny examples, and about
one in four far larger (tens of tokens, wider heads, up to three batch axes), so that code that
only works at the lesson's sizes fails. Whether an example is large is drawn first and turned
off first when Hypothesis shrinks.
"""

from __future__ import annotations

import numpy as np

from grader import draw as drawn

MAX_TOKENS = 6
MAX_BATCH_AXES = 2
MAX_BATCH_SIZE = 3
BIG_MIN_TOKENS = 10
BIG_MAX_TOKENS = 40
BIG_MAX_BATCH_AXES = 3
BIG_MAX_BATCH_SIZE = 2
#: Batch axes are cut to size 1 until every array of a large example holds at most this many
#: numbers: large examples stay fast, and within what the grader lets a student's function ask
#: of the reference.
BIG_NUMBERS = 16384
#: Numbers of tokens lie on a grid of steps of 2.5 from -8.75 to 11.25: none is 0 or another
#: round number, so every pair has a length and a turn always shows.
VALUE_LOW, VALUE_HIGH = -8.75, 11.25
#: Where a table of numbers (see :mod:`grader.draw`) starts: the grid's centre, not 0.
VALUE_ORIGIN = 1.25


def draw_many(draw, shapes, *, low: float = VALUE_LOW, high: float = VALUE_HIGH, dtype=np.float64):
    """Arrays of the given shapes in [low, high] (:func:`grader.draw.draw_many`); tables of the
    lesson's own range start at its centre."""
    origin = VALUE_ORIGIN if (low, high) == (VALUE_LOW, VALUE_HIGH) else None
    return drawn.draw_many(draw, shapes, low=low, high=high, origin=origin, dtype=dtype)


def fit(batch: tuple[int, ...], per_item: int) -> tuple[int, ...]:
    """The batch axes cut (see :func:`grader.draw.fit`) until batch * per_item <= BIG_NUMBERS."""
    return drawn.fit(batch, per_item, BIG_NUMBERS)
