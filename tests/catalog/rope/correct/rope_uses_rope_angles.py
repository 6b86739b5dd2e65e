"""apply_rope that asks rope_angles for the speeds (the angles at position 1), and splits and
interleaves the pairs with reshapes."""

EXERCISE = "apply_rope"

import numpy as np


def apply_rope(x, positions=None, base=10000.0):
    *lead, T, Dh = x.shape
    speed = rope_angles(2, Dh, base)[1]  # raises ValueError for an odd Dh
    if positions is None:
        positions = np.arange(T)
    angles = np.multiply.outer(np.asarray(positions, dtype=float), speed)
    cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)
    pairs = x.reshape(*lead, T, Dh // 2, 2)
    a, b = pairs[..., 0], pairs[..., 1]
    return np.stack([a * cos - b * sin, a * sin + b * cos], axis=-1).reshape(x.shape)
