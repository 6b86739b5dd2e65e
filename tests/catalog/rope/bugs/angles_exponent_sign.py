"""rope_angles with base ** (2i / Dh): the minus sign lost, so each pair turns FASTER than the
one before (the last one almost base times as fast as the first)."""

EXERCISE = "rope_angles"
DIAGNOSIS = "angles-exponent-sign"

import numpy as np


def rope_angles(T, Dh, base=10000.0):
    if Dh % 2:
        raise ValueError("Dh must be even")
    i = np.arange(Dh // 2)
    return np.arange(T)[:, None] * base ** (2 * i / Dh)
