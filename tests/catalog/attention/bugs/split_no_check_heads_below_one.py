"""Only divisibility is checked, not n_heads < 1, so n_heads=0 crashes with ZeroDivisionError instead of a ValueError."""

EXERCISE = "split_heads"
DIAGNOSIS = "no-divisibility-check"

import numpy as np


def split_heads(x, n_heads):
    *batch, T, D = x.shape
    if D % n_heads != 0:
        raise ValueError(f"D={D} is not divisible by n_heads={n_heads}")
    Dh = D // n_heads
    x = x.reshape(*batch, T, n_heads, Dh)  # (..., T, H, Dh)
    return np.swapaxes(x, -3, -2)  # (..., H, T, Dh)
