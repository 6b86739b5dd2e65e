"""rope_angles with base ** (-i / Dh): the 2 forgotten, so the pairs slow down half as fast
(the last pair turns about base ** -0.5 radians per position, not base ** -1)."""

EXERCISE = "rope_angles"
DIAGNOSIS = "angles-half-exponent"

import numpy as np


def rope_angles(T, Dh, base=10000.0):
    if Dh % 2:
        raise ValueError("Dh must be even")
    i = np.arange(Dh // 2)
    return np.arange(T)[:, None] * base ** (-i / Dh)
