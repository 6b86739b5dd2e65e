"""Random inputs for the checks: mostly of the lesson's sizes, so that failures shrink to tiny
examples, and now and then far larger, so that code that only works at the lesson's sizes fails.

Sizes are drawn so that T (tokens), H (heads) and Dh (numbers per head) differ
from one another: when two of them are equal, code that swaps their axes can
still give the right shape and the right numbers by accident.

About one example in four is *large*: tens of tokens, up to 8 heads, widths up to 64 and up to
three batch axes. Whether an example is large is Hypothesis's first choice, and shrinking
turns it off first, so a bug that also shows at the lesson's sizes is still reported on a tiny
example; a bug that only shows on large inputs is reported on the smallest large one found.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from grader import draw as drawn
from grader.draw import between, draw_many, draw_values, large
from grader.expect import pretty

MAX_TOKENS = 6
MAX_HEADS = 4
MAX_HEAD_WIDTH = 4
MAX_BATCH_AXES = 2
MAX_BATCH_SIZE = 3

#: The large examples. Tokens from BIG_MIN_TOKENS, so that a large example is never mistaken
#: for a lesson-sized one. Batch axes are cut to size 1 where an array of the example (the
#: score tables (..., H, T, T) included) would pass BIG_NUMBERS numbers: large examples stay
#: fast, and within what the grader lets a student's function ask of the reference.
BIG_MIN_TOKENS = 10
BIG_MAX_TOKENS = 40
BIG_MAX_HEADS = 8
BIG_MAX_WIDTH = 64
BIG_MAX_BATCH_AXES = 3
BIG_MAX_BATCH_SIZE = 2
BIG_NUMBERS = 16384


@dataclass(frozen=True)
class Dims:
    """The sizes of one example."""

    batch: tuple[int, ...]  # leading axes, possibly none
    T: int
    H: int
    Dh: int

    @property
    def D(self) -> int:
        return self.H * self.Dh


_SIZES = st.integers(1, MAX_BATCH_SIZE)
_AXES = {n: st.integers(n, MAX_BATCH_AXES) for n in range(MAX_BATCH_AXES + 1)}
#: Head counts in the order Hypothesis prefers them: two or more most of the
#: time (a single head hides head-order bugs), sometimes one.
_HEAD_CHOICES = (2, 3, 4, 1)
_HEAD_INDEX = st.integers(0, len(_HEAD_CHOICES) - 1)
_WIDTHS = st.integers(1, MAX_HEAD_WIDTH)
_BIG_SIZES = st.integers(1, BIG_MAX_BATCH_SIZE)
_BIG_AXES = {n: st.integers(n, BIG_MAX_BATCH_AXES) for n in range(BIG_MAX_BATCH_AXES + 1)}
_BIG_HEADS = st.integers(1, BIG_MAX_HEADS)


def draw_batch(draw, *, min_axes: int = 0, big: bool = False) -> tuple[int, ...]:
    """Leading batch axes: from none to two, each of size 1 to 3 (large: up to three of size 1 or 2)."""
    if big:
        return tuple(draw(_BIG_SIZES) for _ in range(draw(_BIG_AXES[min_axes])))
    return tuple(draw(_SIZES) for _ in range(draw(_AXES[min_axes])))


def fit(batch: tuple[int, ...], per_item: int) -> tuple[int, ...]:
    """The batch axes cut (see :func:`grader.draw.fit`) until an array of the example holds at
    most BIG_NUMBERS numbers."""
    return drawn.fit(batch, per_item, BIG_NUMBERS)


def draw_tokens(draw, low: int = 1, high: int = MAX_TOKENS) -> int:
    return draw(between(low, high))


def draw_dims(
    draw,
    *,
    min_batch_axes: int = 0,
    batch_axes: bool = True,
    min_tokens: int = 1,
    heads: st.SearchStrategy | None = None,
) -> Dims:
    """Sizes with T, H and Dh pairwise different (as far as the ranges allow); no batch axes
    unless ``batch_axes``."""
    if not large(draw):
        batch = draw_batch(draw, min_axes=min_batch_axes) if batch_axes else ()
        H = draw(heads) if heads is not None else _HEAD_CHOICES[draw(_HEAD_INDEX)]
        T = _other_than(draw_tokens(draw, min_tokens, MAX_TOKENS), (H,), min_tokens, MAX_TOKENS)
        Dh = _other_than(draw(_WIDTHS), (H, T), 1, MAX_HEAD_WIDTH)
        return Dims(batch, T, H, Dh)
    batch = draw_batch(draw, min_axes=min_batch_axes, big=True) if batch_axes else ()
    H = draw(heads) if heads is not None else draw(_BIG_HEADS)
    T = draw_tokens(draw, BIG_MIN_TOKENS, BIG_MAX_TOKENS)
    widest = BIG_MAX_WIDTH // H
    Dh = _other_than(draw(between(1, widest)), (H, T), 1, widest)
    return Dims(fit(batch, max(T * H * Dh, H * T * T)), T, H, Dh)


def indices(n: int) -> st.SearchStrategy:
    """Integers 0..n-1."""
    return between(0, n - 1)


@st.composite
def tokens(draw, **kwargs) -> Tokens:
    """x of shape (..., T, D) and a head count H that divides D."""
    d = draw_dims(draw, **kwargs)
    return Tokens(draw_values(draw, (*d.batch, d.T, d.D)), d.H)


def _other_than(n: int, taken: tuple[int, ...], low: int, high: int) -> int:
    """The first size from n upwards (wrapping round to low) that is not taken, if any."""
    span = high - low + 1
    for step in range(span):
        candidate = low + (n - low + step) % span
        if candidate not in taken:
            return candidate
    return n


#: Scores lie on a grid centred on 1.25 (steps of 2.5 from -8.75 to 11.25): no score is 0, 1,
#: 2.5 or any other round number, so a mask that writes such a number never passes for one
#: that kept the score.
SCORE_LOW, SCORE_HIGH = -8.75, 11.25
#: Where a table of scores (see :mod:`grader.draw`) starts: the grid's centre, not 0.
SCORE_ORIGIN = 1.25


@st.composite
def score_tables(draw, *, min_batch_axes: int = 0, min_tokens: int = 1, dtype=np.float64) -> np.ndarray:
    """A stack of (T, T) score tables with leading axes: shape (..., T, T)."""
    if large(draw):
        batch = draw_batch(draw, min_axes=min_batch_axes, big=True)
        T = draw_tokens(draw, BIG_MIN_TOKENS, BIG_MAX_TOKENS)
        batch = fit(batch, T * T)
    else:
        batch = draw_batch(draw, min_axes=min_batch_axes)
        T = draw_tokens(draw, min_tokens)
    return draw_values(draw, (*batch, T, T), low=SCORE_LOW, high=SCORE_HIGH, dtype=dtype, origin=SCORE_ORIGIN)


@dataclass(frozen=True)
class Tokens:
    """An input for split_heads: tokens x of shape (..., T, D) and a head count."""

    x: np.ndarray
    n_heads: int

    def describe(self) -> str:
        """How a failing example is shown to the student."""
        return pretty(x=self.x, n_heads=self.n_heads)


@dataclass(frozen=True)
class Layer:
    """One example for mha_forward: tokens and the four projections."""

    x: np.ndarray  # (..., T, D)
    W_q: np.ndarray  # (D, D)
    W_k: np.ndarray  # (D, D)
    W_v: np.ndarray  # (D, D)
    W_o: np.ndarray  # (D, D)
    n_heads: int

    def describe(self) -> str:
        """How a failing example is shown to the student."""
        return pretty(x=self.x, W_q=self.W_q, W_k=self.W_k, W_v=self.W_v, W_o=self.W_o, n_heads=self.n_heads)

    def args(self, x=None, **replace):
        """Positional arguments of mha_forward, optionally with some replaced."""
        Ws = {"W_q": self.W_q, "W_k": self.W_k, "W_v": self.W_v, "W_o": self.W_o, **replace}
        return (self.x if x is None else x, Ws["W_q"], Ws["W_k"], Ws["W_v"], Ws["W_o"], self.n_heads)


@st.composite
def layers(
    draw,
    *,
    min_batch_axes: int = 0,
    min_tokens: int = 1,
    heads: st.SearchStrategy | None = None,
    x_range: float = 3.0,
    dtype=np.float64,
) -> Layer:
    """Tokens in [-x_range, x_range] and projections in [-1, 1]."""
    d = draw_dims(draw, min_batch_axes=min_batch_axes, min_tokens=min_tokens, heads=heads)
    x = draw_values(draw, (*d.batch, d.T, d.D), low=-x_range, high=x_range, dtype=dtype)
    Ws = draw_many(draw, [(d.D, d.D)] * 4, low=-1.0, high=1.0, dtype=dtype)
    return Layer(x, *Ws, n_heads=d.H)
