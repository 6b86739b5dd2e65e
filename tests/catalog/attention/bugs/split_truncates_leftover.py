"""When D is not a multiple of n_heads the leftover columns are silently dropped instead of raising ValueError."""

EXERCISE = "split_heads"
DIAGNOSIS = "no-divisibility-check"

import numpy as np


def split_heads(x, n_heads):
    *batch, T, D = x.shape
    if n_heads < 1:
        raise ValueError("need at least one head")
    Dh = D // n_heads
    x = x[..., : n_heads * Dh]  # throw away what does not fit
    x = x.reshape(*batch, T, n_heads, Dh)  # (..., T, H, Dh)
    return np.swapaxes(x, -3, -2)  # (..., H, T, Dh)
