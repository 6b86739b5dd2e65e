"""rope_angles with two plain loops, entry by entry."""

EXERCISE = "rope_angles"

import numpy as np


def rope_angles(T, Dh, base=10000.0):
    if Dh % 2 == 1:
        raise ValueError("Dh must be even")
    angles = np.zeros((T, Dh // 2))
    for t in range(T):
        for i in range(Dh // 2):
            angles[t, i] = t * base ** (-2 * i / Dh)
    return angles
