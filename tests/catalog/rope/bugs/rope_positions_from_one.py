"""apply_rope without positions counts them from 1: the first token is turned too."""

EXERCISE = "apply_rope"
DIAGNOSIS = "rope-positions-from-1"

import numpy as np


def apply_rope(x, positions=None, base=10000.0):
    T, Dh = x.shape[-2:]
    if Dh % 2:
        raise ValueError("Dh must be even")
    if positions is None:
        positions = np.arange(1, T + 1)
    angles = np.asarray(positions)[:, None] * base ** (-2 * np.arange(Dh // 2) / Dh)
    cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)
    out = np.empty_like(x)
    out[..., 0::2] = x[..., 0::2] * cos - x[..., 1::2] * sin
    out[..., 1::2] = x[..., 0::2] * sin + x[..., 1::2] * cos
    return out
