"""apply_rope with complex numbers: pair (a, b) is a + bi, and turning it by an angle is
multiplying it by exp(i * angle) (as Meta's Llama code does it)."""

EXERCISE = "apply_rope"

import numpy as np


def apply_rope(x, positions=None, base=10000.0):
    T, Dh = x.shape[-2:]
    if Dh % 2:
        raise ValueError("Dh must be even")
    if positions is None:
        positions = np.arange(T)
    angles = np.outer(positions, base ** (-np.arange(0, Dh, 2) / Dh))  # (T, Dh // 2)
    pairs = x[..., 0::2] + 1j * x[..., 1::2]  # (..., T, Dh // 2) complex
    turned = pairs * np.exp(1j * angles)
    return np.stack([turned.real, turned.imag], axis=-1).reshape(x.shape).astype(x.dtype)
