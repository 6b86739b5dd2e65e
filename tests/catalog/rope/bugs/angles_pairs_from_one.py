"""rope_angles numbers the pairs from 1: pair 0 already turns slower than one radian per
position, and the last pair slower than base ** -1."""

EXERCISE = "rope_angles"
DIAGNOSIS = "angles-pairs-from-1"

import numpy as np


def rope_angles(T, Dh, base=10000.0):
    if Dh % 2:
        raise ValueError("Dh must be even")
    i = np.arange(1, Dh // 2 + 1)
    return np.arange(T)[:, None] * base ** (-2 * i / Dh)
