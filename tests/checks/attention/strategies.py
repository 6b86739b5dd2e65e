"""Random inputs for the checks, kept small so that failures shrink to tiny examples.

Sizes are drawn so that T (tokens), H (heads) and Dh (numbers per head) differ
from one another: when two of them are equal, code that swaps their axes can
still give the right shape and the right numbers by accident.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from grader.expect import pretty

MAX_TOKENS = 6
MAX_HEADS = 4
MAX_HEAD_WIDTH = 4
MAX_BATCH_AXES = 2
MAX_BATCH_SIZE = 3


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


def draw_batch(draw, *, min_axes: int = 0) -> tuple[int, ...]:
    """Leading batch axes: from none to two, each of size 1 to 3."""
    return tuple(draw(_SIZES) for _ in range(draw(_AXES[min_axes])))


def draw_tokens(draw, low: int = 1, high: int = MAX_TOKENS) -> int:
    return draw(between(low, high))


def draw_dims(
    draw,
    *,
    min_batch_axes: int = 0,
    min_tokens: int = 1,
    max_tokens: int = MAX_TOKENS,
    heads: st.SearchStrategy | None = None,
) -> Dims:
    """Sizes with T, H and Dh pairwise different (as far as the ranges allow)."""
    batch = draw_batch(draw, min_axes=min_batch_axes)
    H = draw(heads) if heads is not None else _HEAD_CHOICES[draw(_HEAD_INDEX)]
    T = _other_than(draw_tokens(draw, min_tokens, max_tokens), (H,), min_tokens, max_tokens)
    Dh = _other_than(draw(_WIDTHS), (H, T), 1, MAX_HEAD_WIDTH)
    return Dims(batch, T, H, Dh)


_RANGES: dict[tuple[int, int], st.SearchStrategy] = {}


def between(low: int, high: int) -> st.SearchStrategy:
    """Integers low..high (one shared strategy per range: building strategies is slow)."""
    if (low, high) not in _RANGES:
        _RANGES[low, high] = st.integers(low, high)
    return _RANGES[low, high]


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


#: Values are drawn on a grid of this many steps either side of the range's centre.
GRID_STEPS = 4


_SPREADS = st.integers(0, GRID_STEPS)
_SEEDS = st.integers(0, 2**32 - 1)


def draw_values(draw, shape, *, low: float = -10.0, high: float = 10.0, dtype=np.float64) -> np.ndarray:
    """An array of the given shape with values on a coarse grid in [low, high].

    Hypothesis draws a spread and a seed, and numpy fills the array: far faster
    than drawing every entry, and shrinking still leads to small, readable
    arrays (spread 0 is the constant array at the range's centre, spread 1 uses
    only three values).
    """
    return draw_many(draw, [shape], low=low, high=high, dtype=dtype)[0]


def draw_many(draw, shapes, *, low: float = -10.0, high: float = 10.0, dtype=np.float64) -> list[np.ndarray]:
    """Several arrays from one spread and one seed (fewer draws: faster examples)."""
    spread = draw(_SPREADS)
    rng = np.random.default_rng(draw(_SEEDS))
    centre, half = (low + high) / 2, (high - low) / 2
    return [
        (centre + rng.integers(-spread, spread + 1, size=s) * (half / GRID_STEPS)).astype(dtype)
        for s in shapes
    ]


@st.composite
def score_tables(draw, *, min_batch_axes: int = 0, min_tokens: int = 1, dtype=np.float64) -> np.ndarray:
    """A stack of (T, T) score tables with leading axes: shape (..., T, T)."""
    batch = draw_batch(draw, min_axes=min_batch_axes)
    T = draw_tokens(draw, min_tokens)
    return draw_values(draw, (*batch, T, T), dtype=dtype)


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
    max_tokens: int = MAX_TOKENS,
    heads: st.SearchStrategy | None = None,
    x_range: float = 3.0,
    dtype=np.float64,
) -> Layer:
    """Tokens in [-x_range, x_range] and projections in [-1, 1]."""
    d = draw_dims(
        draw, min_batch_axes=min_batch_axes, min_tokens=min_tokens, max_tokens=max_tokens, heads=heads
    )
    x = draw_values(draw, (*d.batch, d.T, d.D), low=-x_range, high=x_range, dtype=dtype)
    Ws = draw_many(draw, [(d.D, d.D)] * 4, low=-1.0, high=1.0, dtype=dtype)
    return Layer(x, *Ws, n_heads=d.H)
