"""Heads are interleaved: reshaping to (..., T, Dh, H) gives head i the columns i, i+H, i+2H, ... instead of one contiguous block."""

EXERCISE = "split_heads"
DIAGNOSIS = "strided-heads"

import numpy as np


def split_heads(x, n_heads):
    *batch, T, D = x.shape
    if n_heads < 1:
        raise ValueError("need at least one head")
    if D % n_heads != 0:
        raise ValueError(f"D={D} is not divisible by n_heads={n_heads}")
    Dh = D // n_heads
    x = x.reshape(*batch, T, Dh, n_heads)  # (..., T, Dh, H)
    return np.moveaxis(x, -1, -3)  # (..., H, T, Dh), but head h = x[..., h::H]
