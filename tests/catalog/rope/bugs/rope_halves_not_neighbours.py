"""apply_rope pairs number i with number i + Dh // 2 (the two halves of the vector, as GPT-NeoX
and Hugging Face's rotate_half lay them out) instead of the neighbours 2i and 2i + 1."""

EXERCISE = "apply_rope"
DIAGNOSIS = "rope-halves"

import numpy as np


def apply_rope(x, positions=None, base=10000.0):
    T, Dh = x.shape[-2:]
    if Dh % 2:
        raise ValueError("Dh must be even")
    if positions is None:
        positions = np.arange(T)
    speed = base ** (-2 * np.arange(Dh // 2) / Dh)
    angles = np.asarray(positions)[:, None] * speed
    cos = np.concatenate([np.cos(angles)] * 2, axis=-1).astype(x.dtype)
    sin = np.concatenate([np.sin(angles)] * 2, axis=-1).astype(x.dtype)
    first, second = x[..., : Dh // 2], x[..., Dh // 2 :]
    rotated_half = np.concatenate([-second, first], axis=-1)
    return x * cos + rotated_half * sin
