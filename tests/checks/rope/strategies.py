"""Random inputs for the checks of rope, drawn with the grader's size policy and value grid
(:data:`grader.draw.SIZES`).

Widths are even (a few checks draw odd ones on purpose), bases vary so that a base written into
the code shows, and positions given by hand are whole numbers that may be negative, repeat or
come in any order: ``apply_rope`` must turn each token by the number it is given.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from grader.draw import SIZES, between, large
from grader.expect import pretty

#: Arrays of the given shapes on the policy's grid (tables start at its centre, never at 0).
draw_many = SIZES.values

#: Pairs per token at the lesson's sizes, and in a large example (64 numbers, a real head's width).
MAX_PAIRS, BIG_MAX_PAIRS = 4, 32
#: The bases drawn: the original Transformer's first (and most often, as Hypothesis shrinks to
#: it), then small ones under which the last pairs still turn visibly, and Llama 3's.
BASES = (10000.0, 100.0, 10.0, 2.0, 500000.0)
#: Positions given by hand lie in this range: negative ones too (a turn backwards).
POSITION_LOW, POSITION_HIGH = -8, 40


@dataclass(frozen=True)
class Sizes:
    """The sizes of one example: batch axes, tokens, numbers per token (even)."""

    batch: tuple[int, ...]
    T: int
    Dh: int


def draw_sizes(draw, *, min_tokens: int = 1, min_pairs: int = 1) -> Sizes:
    """Sizes with T and Dh different where the ranges allow; Dh even."""
    if large(draw):
        batch = SIZES.batch(draw, big=True)
        T = SIZES.tokens(draw, low=min_tokens, big=True)
        Dh = 2 * draw(between(max(min_pairs, MAX_PAIRS + 1), BIG_MAX_PAIRS))
        return Sizes(SIZES.fit(batch, 2 * T * max(T, Dh)), T, Dh)
    batch = SIZES.batch(draw)
    T = SIZES.tokens(draw, low=min_tokens)
    Dh = 2 * draw(between(min_pairs, MAX_PAIRS))
    return Sizes(batch, T, Dh)


def draw_base(draw) -> float:
    return BASES[draw(between(0, len(BASES) - 1))]


@dataclass(frozen=True)
class Angles:
    """An input for rope_angles."""

    T: int
    Dh: int
    base: float

    def describe(self) -> str:
        return pretty(T=self.T, Dh=self.Dh, base=self.base)


@st.composite
def angle_sizes(draw, *, min_tokens: int = 1, min_pairs: int = 1, odd: bool = False) -> Angles:
    """T positions, Dh numbers (even, or odd with ``odd``) and a base."""
    d = draw_sizes(draw, min_tokens=min_tokens, min_pairs=min_pairs)
    return Angles(d.T, d.Dh + 1 if odd else d.Dh, draw_base(draw))


@dataclass(frozen=True)
class Turning:
    """An input for apply_rope: tokens, their positions (None: 0 to T - 1) and a base."""

    x: np.ndarray  # (..., T, Dh)
    positions: np.ndarray | None  # (T,) whole numbers
    base: float

    def describe(self) -> str:
        return pretty(x=self.x, positions=self.positions, base=self.base)

    @property
    def where(self) -> np.ndarray:
        """The positions the tokens stand at: those given, or 0 to T - 1."""
        T = self.x.shape[-2]
        return np.arange(T) if self.positions is None else self.positions


@st.composite
def turnings(
    draw, *, given: bool = False, min_tokens: int = 1, min_pairs: int = 1, odd: bool = False, dtype=np.float64
) -> Turning:
    """Tokens on the value grid; positions drawn by hand with ``given``, else None; the base
    drawn where positions are given (else the default, 10000)."""
    d = draw_sizes(draw, min_tokens=min_tokens, min_pairs=min_pairs)
    Dh = d.Dh + 1 if odd else d.Dh
    (x,) = draw_many(draw, [(*d.batch, d.T, Dh)], dtype=dtype)
    if not given:
        return Turning(x, None, 10000.0)
    positions = np.array(draw(st.lists(between(POSITION_LOW, POSITION_HIGH), min_size=d.T, max_size=d.T)))
    return Turning(x, positions, draw_base(draw))


@dataclass(frozen=True)
class Scoring:
    """An input for rope_attention_scores: queries and keys with the same batch axes."""

    q: np.ndarray  # (..., T_q, Dh)
    k: np.ndarray  # (..., T_k, Dh)

    def describe(self) -> str:
        return pretty(q=self.q, k=self.k)


@st.composite
def scorings(
    draw, *, min_tokens: int = 1, min_pairs: int = 1, odd: bool = False, dtype=np.float64
) -> Scoring:
    """T_q and T_k drawn apart (equal now and then), on the value grid."""
    d = draw_sizes(draw, min_tokens=min_tokens, min_pairs=min_pairs)
    T_k = draw(between(min_tokens, d.T))
    Dh = d.Dh + 1 if odd else d.Dh
    q, k = draw_many(draw, [(*d.batch, d.T, Dh), (*d.batch, T_k, Dh)], dtype=dtype)
    return Scoring(q, k)


@st.composite
def repeated(draw, *, min_tokens: int = 2) -> Scoring:
    """One query vector and one key vector, each repeated at every position (T_q = T_k): what
    the score of a query and a key can depend on is then only where they stand."""
    d = draw_sizes(draw, min_tokens=min_tokens)
    u, v = draw_many(draw, [(*d.batch, 1, d.Dh), (*d.batch, 1, d.Dh)])
    reps = (1,) * len(d.batch) + (d.T, 1)
    return Scoring(np.tile(u, reps), np.tile(v, reps))
