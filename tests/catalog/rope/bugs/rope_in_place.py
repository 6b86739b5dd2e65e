"""apply_rope writes the turned pairs back into x and returns it: right numbers, but the
caller's array is changed."""

EXERCISE = "apply_rope"
DIAGNOSIS = "rope-in-place"

import numpy as np


def apply_rope(x, positions=None, base=10000.0):
    T, Dh = x.shape[-2:]
    if Dh % 2:
        raise ValueError("Dh must be even")
    if positions is None:
        positions = np.arange(T)
    angles = np.asarray(positions)[:, None] * base ** (-2 * np.arange(Dh // 2) / Dh)
    cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)
    first, second = x[..., 0::2].copy(), x[..., 1::2].copy()
    x[..., 0::2] = first * cos - second * sin
    x[..., 1::2] = first * sin + second * cos
    return x
