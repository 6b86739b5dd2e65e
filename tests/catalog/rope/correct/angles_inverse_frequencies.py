"""rope_angles as Hugging Face writes its frequencies: 1 / base ** (arange(0, Dh, 2) / Dh), then
an outer product with the positions."""

EXERCISE = "rope_angles"

import numpy as np


def rope_angles(T, Dh, base=10000.0):
    if Dh % 2 != 0:
        raise ValueError(f"odd Dh: {Dh}")
    inv_freq = 1.0 / (base ** (np.arange(0, Dh, 2) / Dh))
    return np.outer(np.arange(T), inv_freq)
