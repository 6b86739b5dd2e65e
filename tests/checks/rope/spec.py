"""What the exercises promise, written plainly for the checks to use.

Each helper follows a docstring of ``solutions/rope.py`` number by number, slowly on purpose,
with Python's ``math`` rather than numpy's arrays; none calls the student's code nor the
reference.
"""

from __future__ import annotations

import math

import numpy as np

#: Two float64 computations of one turn that take sines and products in another order (a
#: complex number, a 2x2 matrix, a reshape) differ by rounding only, a few units in the 15th
#: digit of numbers up to about 10 (angles up to 40 radians); every mistake of the catalog moves
#: results by far more.
RTOL = 1e-9
ATOL = 1e-9


def angle(t: float, i: int, Dh: int, base: float) -> float:
    """The angle pair i of a token at position t turns by: t * base ** (-2i / Dh)."""
    return t * base ** (-2 * i / Dh)


def angles(T: int, Dh: int, base: float) -> np.ndarray:
    """(T, Dh // 2): entry [t, i] = angle(t, i)."""
    table = np.zeros((T, Dh // 2))
    for t in range(T):
        for i in range(Dh // 2):
            table[t, i] = angle(t, i, Dh, base)
    return table


def turned(x: np.ndarray, positions, base: float) -> np.ndarray:
    """(..., T, Dh): pair i of token t turned counter-clockwise by angle(positions[t], i), in
    float64 whatever x's dtype."""
    *_, T, Dh = x.shape
    x = x.astype(np.float64)
    out = np.empty_like(x)
    for t in range(T):
        for i in range(Dh // 2):
            a = angle(float(positions[t]), i, Dh, base)
            first, second = x[..., t, 2 * i], x[..., t, 2 * i + 1]
            out[..., t, 2 * i] = first * math.cos(a) - second * math.sin(a)
            out[..., t, 2 * i + 1] = first * math.sin(a) + second * math.cos(a)
    return out


def scores(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    """(..., T_q, T_k): query i turned by position i dotted with key j turned by position j,
    over sqrt(Dh)."""
    *_, T_q, Dh = q.shape
    T_k = k.shape[-2]
    q_turned = turned(q, range(T_q), 10000.0)
    k_turned = turned(k, range(T_k), 10000.0)
    table = np.empty((*q.shape[:-2], T_q, T_k))
    for i in range(T_q):
        for j in range(T_k):
            table[..., i, j] = np.sum(q_turned[..., i, :] * k_turned[..., j, :], axis=-1) / math.sqrt(Dh)
    return table


def pair_lengths(x: np.ndarray) -> np.ndarray:
    """(..., T, Dh // 2): the length of each pair of neighbours."""
    return np.hypot(x[..., 0::2].astype(np.float64), x[..., 1::2].astype(np.float64))
