"""rope_angles counts positions from 1: the first token is turned too."""

EXERCISE = "rope_angles"
DIAGNOSIS = "angles-positions-from-1"

import numpy as np


def rope_angles(T, Dh, base=10000.0):
    if Dh % 2:
        raise ValueError("Dh must be even")
    speed = base ** (-2 * np.arange(Dh // 2) / Dh)
    return np.arange(1, T + 1)[:, None] * speed
