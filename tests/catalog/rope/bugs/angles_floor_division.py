"""rope_angles writes -2 * i // Dh: Python's floor division gives -1 for every pair but the
first, so all the other pairs turn at one speed, 1 / base radians per position."""

EXERCISE = "rope_angles"
DIAGNOSIS = "angles-floor-division"

import numpy as np


def rope_angles(T, Dh, base=10000.0):
    if Dh % 2:
        raise ValueError("Dh must be even")
    i = np.arange(Dh // 2)
    return np.arange(T)[:, None] * base ** (-2 * i // Dh)
