"""The head axis is moved to the very front, before the batch axes: (H, ..., T, Dh) instead of
(..., H, T, Dh). Right for a single (T, D) sequence, wrong as soon as x has batch axes."""

EXERCISE = "split_heads"
DIAGNOSIS = "wrong-axis-order"

import numpy as np


def split_heads(x, n_heads):
    *batch, T, D = x.shape
    if n_heads < 1:
        raise ValueError("need at least one head")
    if D % n_heads != 0:
        raise ValueError(f"D={D} is not divisible by n_heads={n_heads}")
    Dh = D // n_heads
    x = x.reshape(*batch, T, n_heads, Dh)  # (..., T, H, Dh)
    return np.moveaxis(x, -2, 0)  # (H, ..., T, Dh): the heads go first
