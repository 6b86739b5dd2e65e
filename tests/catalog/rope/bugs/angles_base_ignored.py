"""rope_angles writes 10000 where the base belongs: right only for the default base."""

EXERCISE = "rope_angles"
DIAGNOSIS = "angles-base-ignored"

import numpy as np


def rope_angles(T, Dh, base=10000.0):
    if Dh % 2:
        raise ValueError("Dh must be even")
    speed = 10000.0 ** (-2 * np.arange(Dh // 2) / Dh)
    return np.outer(np.arange(T), speed)
