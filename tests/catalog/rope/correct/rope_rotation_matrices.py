"""apply_rope with one 2x2 rotation matrix per position and pair, applied with np.einsum."""

EXERCISE = "apply_rope"

import numpy as np


def apply_rope(x, positions=None, base=10000.0):
    *lead, T, Dh = x.shape
    if Dh % 2:
        raise ValueError("Dh must be even")
    if positions is None:
        positions = np.arange(T)
    angles = np.asarray(positions, dtype=float)[:, None] * base ** (-2 * np.arange(Dh // 2) / Dh)
    c, s = np.cos(angles), np.sin(angles)
    R = np.stack([np.stack([c, -s], axis=-1), np.stack([s, c], axis=-1)], axis=-2)  # (T, Dh/2, 2, 2)
    pairs = x.reshape(*lead, T, Dh // 2, 2)
    return np.einsum("tpab,...tpb->...tpa", R, pairs).reshape(x.shape).astype(x.dtype)
