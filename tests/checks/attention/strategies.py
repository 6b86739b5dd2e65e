"""Random inputs for the checks: mostly of the lesson's sizes, so that failures shrink to tiny
examples, and now and then far larger, so that code that only works at the lesson's sizes fails.

Sizes are drawn so that T (tokens), H (heads) and Dh (numbers per head) differ
from one another: when two of them are equal, code that swaps their axes can
still give the right shape and the right numbers by accident.

The sizes follow the grader's size policy (``grader.draw.SIZES``): about one example in four is
*large* (tens of tokens, up to 8 heads, widths up to 64, up to three batch axes), and a bug
that also shows at the lesson's sizes is still reported on a tiny example (the grader looks
among lesson-sized examples when the smallest failing one is large); a bug that only shows on
large inputs is reported on the smallest large one found.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from grader.draw import SIZES, between, draw_many, draw_values, other_than
from grader.expect import pretty


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


#: Head counts in the order Hypothesis prefers them: two or more most of the
#: time (a single head hides head-order bugs), sometimes one.
_HEAD_CHOICES = (2, 3, 4, 1)


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
    big = SIZES.large(draw)
    batch = SIZES.batch(draw, min_axes=min_batch_axes, big=big) if batch_axes else ()
    if not big:
        H = draw(heads) if heads is not None else _HEAD_CHOICES[draw(between(0, len(_HEAD_CHOICES) - 1))]
        T = other_than(SIZES.tokens(draw, low=min_tokens), (H,), min_tokens, SIZES.max_tokens)
        Dh = other_than(draw(between(1, SIZES.max_head_width)), (H, T), 1, SIZES.max_head_width)
        return Dims(batch, T, H, Dh)
    H = draw(heads) if heads is not None else draw(between(1, SIZES.big_max_heads))
    T = SIZES.tokens(draw, big=True)
    widest = SIZES.big_max_width // H
    Dh = other_than(draw(between(1, widest)), (H, T), 1, widest)
    return Dims(SIZES.fit(batch, max(T * H * Dh, H * T * T)), T, H, Dh)


def indices(n: int) -> st.SearchStrategy:
    """Integers 0..n-1."""
    return between(0, n - 1)


@st.composite
def tokens(draw, **kwargs) -> Tokens:
    """x of shape (..., T, D) and a head count H that divides D."""
    d = draw_dims(draw, **kwargs)
    return Tokens(draw_values(draw, (*d.batch, d.T, d.D)), d.H)


@st.composite
def score_tables(draw, *, min_batch_axes: int = 0, min_tokens: int = 1, dtype=np.float64) -> np.ndarray:
    """A stack of (T, T) score tables with leading axes: shape (..., T, T). Scores lie on the size
    policy's grid (steps of 2.5 from -8.75 to 11.25): no score is 0, 1, 2.5 or any other round
    number, so a mask that writes such a number never passes for one that kept the score."""
    big = SIZES.large(draw)
    batch = SIZES.batch(draw, min_axes=min_batch_axes, big=big)
    T = SIZES.tokens(draw, low=min_tokens, big=big)
    if big:
        batch = SIZES.fit(batch, T * T)
    return SIZES.values(draw, [(*batch, T, T)], dtype=dtype)[0]


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
