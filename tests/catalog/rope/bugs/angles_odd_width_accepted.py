"""rope_angles never checks Dh: an odd width gives (Dh - 1) // 2 columns instead of an error."""

EXERCISE = "rope_angles"
DIAGNOSIS = "angles-odd-width-accepted"

import numpy as np


def rope_angles(T, Dh, base=10000.0):
    speed = base ** (-2 * np.arange(Dh // 2) / Dh)
    return np.arange(T)[:, None] * speed
