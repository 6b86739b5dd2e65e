"""Plain numpy a lesson's checks and diagnoses compute with, written to be trusted: a stable
softmax, and cutting a row of numbers into heads and joining them back, one head at a time.

None of this is an exercise's answer to copy: the checks use it to say what is expected, the
diagnoses to say what a mistake gives. Letters: T rows (tokens), H heads, Dh numbers per head.
"""

from __future__ import annotations

import numpy as np

__all__ = ["head_slices", "joined_heads", "softmax"]


def softmax(z: np.ndarray, axis: int = -1) -> np.ndarray:
    """exp(z) over its sum along ``axis``, each slice's largest value taken away first, so that
    no exp overflows; -inf becomes a weight of exactly 0."""
    z = z - np.max(z, axis=axis, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=axis, keepdims=True)


def head_slices(x: np.ndarray, H: int) -> np.ndarray:
    """(..., T, H*Dh) -> (..., H, T, Dh): head h holds columns h*Dh to (h+1)*Dh of every row,
    built one head at a time."""
    *lead, T, width = x.shape
    Dh = width // H
    heads = np.empty((*lead, H, T, Dh), dtype=x.dtype)
    for h in range(H):
        heads[..., h, :, :] = x[..., :, h * Dh : (h + 1) * Dh]
    return heads


def joined_heads(heads: np.ndarray) -> np.ndarray:
    """(..., H, T, Dh) -> (..., T, H*Dh): the heads side by side, head h in columns h*Dh to
    (h+1)*Dh (the inverse of :func:`head_slices`)."""
    return np.concatenate([heads[..., h, :, :] for h in range(heads.shape[-3])], axis=-1)
