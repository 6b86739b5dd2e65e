"""A second way to the answers, on the trusted side, for the hidden checks: each pair of
neighbours read as one complex number, turned by multiplying it by exp(1j * angle).

Written apart from ``spec.py`` on purpose (numpy's complex numbers there, Python's ``math``
there), so that a slip in one shows against the other.
"""

from __future__ import annotations

import numpy as np


def frequencies(Dh: int, base: float) -> np.ndarray:
    """(Dh // 2,): radians per position of each pair, 1 / base ** (2i / Dh)."""
    return 1.0 / base ** (np.arange(0, Dh, 2) / Dh)


def turned(x: np.ndarray, positions, base: float) -> np.ndarray:
    """(..., T, Dh) in float64: pair i of token t times exp(1j * positions[t] * frequency i)."""
    pairs = x.astype(np.float64)[..., 0::2] + 1j * x.astype(np.float64)[..., 1::2]  # (..., T, Dh // 2)
    angles = np.outer(np.asarray(positions, dtype=np.float64), frequencies(x.shape[-1], base))
    out = pairs * np.exp(1j * angles)  # (..., T, Dh // 2)
    return np.stack([out.real, out.imag], axis=-1).reshape(x.shape)  # pairs back side by side


def scores(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    """(..., T_q, T_k): the turned queries times the turned keys transposed, over sqrt(Dh)."""
    q_turned = turned(q, np.arange(q.shape[-2]), 10000.0)
    k_turned = turned(k, np.arange(k.shape[-2]), 10000.0)
    return np.einsum("...id,...jd->...ij", q_turned, k_turned) / np.sqrt(q.shape[-1])
