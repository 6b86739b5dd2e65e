"""Random inputs for the checks: mostly of the lesson's sizes, so that failures shrink to tiny
examples, and about one in four far larger (tens of tokens, up to 8 heads, wider heads, up to
three batch axes), so that code that only works at the lesson's sizes fails. Whether an
example is large is drawn first and turned off first when Hypothesis shrinks.

Sizes and values follow the grader's size policy (``grader.draw.SIZES``): caches and tokens lie
on its grid centred away from 0, so that zeros or the input handed back never pass for the right
numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from grader.draw import SIZES, between, other_than
from grader.expect import pretty


@dataclass(frozen=True)
class Dims:
    """The sizes of one example: batch axes, tokens, query heads, key/value heads, head width."""

    batch: tuple[int, ...]
    T: int
    H: int
    H_kv: int
    Dh: int

    @property
    def D(self) -> int:
        return self.H * self.Dh


#: Head counts of lesson-sized examples, in the order Hypothesis prefers them.
_HEAD_CHOICES = (2, 4, 3, 1)


def draw_dims(draw, *, min_tokens: int = 1, grouped: bool = False, min_kv_heads: int = 1) -> Dims:
    """Sizes with T, H and Dh different where the ranges allow; H_kv = H unless ``grouped``, then a
    divisor of H (H_kv < H most of the time)."""
    big = SIZES.large(draw)
    batch = SIZES.batch(draw, big=big)
    T = SIZES.tokens(draw, low=min_tokens, big=big)
    if big:
        H = draw(between(2, SIZES.big_max_heads))
        Dh = draw(between(1, SIZES.big_max_width // H))
    else:
        H = _HEAD_CHOICES[draw(between(0, len(_HEAD_CHOICES) - 1))]
        Dh = other_than(draw(between(1, SIZES.max_head_width)), (H,), 1, SIZES.max_head_width)
    if grouped and min_kv_heads > 1:  # head counts with a group of two or more, and two groups or more
        H = (4, 6, 8)[draw(between(0, 2))] if big else (4, 6)[draw(between(0, 1))]
        Dh = min(Dh, SIZES.big_max_width // H)
    H_kv = H
    if grouped:
        divisors = [d for d in range(1, H + 1) if H % d == 0 and d >= min_kv_heads]
        smaller = [d for d in divisors if d < H] or divisors
        H_kv = smaller[draw(between(0, len(smaller) - 1))]
    if big:
        batch = SIZES.fit(batch, max(2 * H * T * Dh, H * T * T, T * H * Dh))
    return Dims(batch, T, H, H_kv, Dh)


@st.composite
def mask_sizes(draw, *, min_queries: int = 2) -> tuple[int, int]:
    """(n_queries, n_keys) with min_queries <= n_queries <= n_keys (n_keys > n_queries mostly)."""
    top = SIZES.big_max_tokens if SIZES.large(draw) else SIZES.max_tokens + 2
    n_queries = draw(between(min_queries, top))
    n_keys = n_queries + draw(between(0, top))
    if n_keys == n_queries and draw(between(0, 3)):
        n_keys += 1
    return n_queries, n_keys


@dataclass(frozen=True)
class Appending:
    """An input for extend_cache: a cache and the new tokens' keys and values."""

    cache: np.ndarray  # (2, ..., H, T_past, Dh)
    kv_new: np.ndarray  # (2, ..., H, T_new, Dh)

    def describe(self) -> str:
        return pretty(cache=self.cache, kv_new=self.kv_new)


@st.composite
def appendings(draw, *, empty: bool = False) -> Appending:
    """A cache of T_past >= 0 tokens (none when ``empty``) and T_new >= 1 new ones."""
    d = draw_dims(draw, min_tokens=2)
    T_new = draw(between(1, d.T))
    T_past = 0 if empty else d.T - T_new
    cache, kv_new = SIZES.values(draw, [(2, *d.batch, d.H, T_past, d.Dh), (2, *d.batch, d.H, T_new, d.Dh)])
    return Appending(cache, kv_new)


@dataclass(frozen=True)
class Sequence:
    """An input for decode_step: the tokens of a whole sequence, the four projections, the
    head count and how the sequence is cut into steps (chunk sizes that add up to T)."""

    x: np.ndarray  # (..., T, D)
    W_q: np.ndarray  # (D, D)
    W_k: np.ndarray
    W_v: np.ndarray
    W_o: np.ndarray
    n_heads: int
    chunks: tuple[int, ...]

    def describe(self) -> str:
        return (
            pretty(x=self.x, W_q=self.W_q, W_k=self.W_k, W_v=self.W_v, W_o=self.W_o, n_heads=self.n_heads)
            + f"\nsteps = {list(self.chunks)}  # tokens given to each call of decode_step"
        )

    @property
    def weights(self) -> tuple[np.ndarray, ...]:
        return (self.W_q, self.W_k, self.W_v, self.W_o)

    def empty_cache(self) -> np.ndarray:
        """(2, ..., H, 0, Dh): the cache before the first step."""
        D = self.x.shape[-1]
        return np.zeros((2, *self.x.shape[:-2], self.n_heads, 0, D // self.n_heads))


@st.composite
def sequences(draw, *, min_tokens: int = 2, chunked: bool = True) -> Sequence:
    """Tokens in [-3, 3] and projections in [-1, 1]; with ``chunked``, steps of uneven sizes."""
    d = draw_dims(draw, min_tokens=min_tokens)
    (x,) = SIZES.values(draw, [(*d.batch, d.T, d.D)], low=-3.0, high=3.0)
    Ws = SIZES.values(draw, [(d.D, d.D)] * 4, low=-1.0, high=1.0)
    chunks: tuple[int, ...] = (d.T,)
    if chunked:
        cuts, left = [], d.T
        while left:
            step = draw(between(1, left))
            cuts.append(step)
            left -= step
        chunks = tuple(cuts)
    return Sequence(x, *Ws, n_heads=d.H, chunks=chunks)


@dataclass(frozen=True)
class Heads:
    """An input for repeat_kv: key/value heads and how many query heads share each."""

    kv: np.ndarray  # (..., H_kv, T, Dh)
    n_rep: int

    def describe(self) -> str:
        return pretty(kv=self.kv, n_rep=self.n_rep)


@st.composite
def shared_heads(draw, *, min_rep: int = 2, min_kv_heads: int = 2) -> Heads:
    """H_kv >= min_kv_heads key/value heads (so that the order of the copies shows) and n_rep."""
    d = draw_dims(draw)
    H_kv = max(d.H, min_kv_heads)
    n_rep = draw(between(min_rep, 4))
    (kv,) = SIZES.values(draw, [(*d.batch, H_kv, d.T, d.Dh)])
    return Heads(kv, n_rep)


@dataclass(frozen=True)
class Grouped:
    """An input for gqa_forward."""

    x: np.ndarray  # (..., T, D)
    W_q: np.ndarray  # (D, D)
    W_k: np.ndarray  # (D, H_kv*Dh)
    W_v: np.ndarray  # (D, H_kv*Dh)
    W_o: np.ndarray  # (D, D)
    n_heads: int
    n_kv_heads: int

    def describe(self) -> str:
        return pretty(
            x=self.x,
            W_q=self.W_q,
            W_k=self.W_k,
            W_v=self.W_v,
            W_o=self.W_o,
            n_heads=self.n_heads,
            n_kv_heads=self.n_kv_heads,
        )

    def args(self, **replace) -> tuple:
        """Positional arguments of gqa_forward, some replaced by name."""
        given = {
            "x": self.x,
            "W_q": self.W_q,
            "W_k": self.W_k,
            "W_v": self.W_v,
            "W_o": self.W_o,
            "n_heads": self.n_heads,
            "n_kv_heads": self.n_kv_heads,
            **replace,
        }
        return tuple(given[k] for k in ("x", "W_q", "W_k", "W_v", "W_o", "n_heads", "n_kv_heads"))


@st.composite
def grouped_layers(draw, *, min_kv_heads: int = 1, kv_heads: str = "grouped", min_tokens: int = 1) -> Grouped:
    """Tokens in [-3, 3], projections in [-1, 1]; ``kv_heads`` is "grouped" (a divisor of H,
    fewer than H where H allows), "all" (H_kv = H) or "one"."""
    d = draw_dims(draw, grouped=kv_heads == "grouped", min_kv_heads=min_kv_heads, min_tokens=min_tokens)
    H_kv = {"grouped": d.H_kv, "all": d.H, "one": 1}[kv_heads]
    (x,) = SIZES.values(draw, [(*d.batch, d.T, d.D)], low=-3.0, high=3.0)
    W_q, W_k, W_v, W_o = SIZES.values(
        draw, [(d.D, d.D), (d.D, H_kv * d.Dh), (d.D, H_kv * d.Dh), (d.D, d.D)], low=-1.0, high=1.0
    )
    return Grouped(x, W_q, W_k, W_v, W_o, d.H, H_kv)
