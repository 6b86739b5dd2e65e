"""The width check is an assert, so a bad n_heads raises AssertionError instead of ValueError."""

EXERCISE = "split_heads"
DIAGNOSIS = "no-divisibility-check"

import numpy as np


def split_heads(x, n_heads):
    *batch, T, D = x.shape
    assert n_heads >= 1 and D % n_heads == 0, "n_heads must divide D"
    Dh = D // n_heads
    x = x.reshape(*batch, T, n_heads, Dh)  # (..., T, H, Dh)
    return np.swapaxes(x, -3, -2)  # (..., H, T, Dh)
