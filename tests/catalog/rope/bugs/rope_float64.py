"""apply_rope multiplies by float64 cosines and sines and stacks the result: float32 tokens
come back as float64 (twice the memory, and not the dtype the model runs in)."""

EXERCISE = "apply_rope"
DIAGNOSIS = "rope-float64"

import numpy as np


def apply_rope(x, positions=None, base=10000.0):
    T, Dh = x.shape[-2:]
    if Dh % 2:
        raise ValueError("Dh must be even")
    if positions is None:
        positions = np.arange(T)
    angles = np.asarray(positions)[:, None] * base ** (-2 * np.arange(Dh // 2) / Dh)
    cos, sin = np.cos(angles), np.sin(angles)
    first, second = x[..., 0::2], x[..., 1::2]
    out = np.stack([first * cos - second * sin, first * sin + second * cos], axis=-1)
    return out.reshape(x.shape)
