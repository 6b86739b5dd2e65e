"""Heads are cut one at a time in a loop that stops at 4 heads (the most the lesson's examples use); the heads after the fourth stay 0."""

EXERCISE = "split_heads"
DIAGNOSIS = "hardcoded-size"

import numpy as np

MAX_HEADS = 4


def split_heads(x, n_heads):
    *batch, T, D = x.shape
    if n_heads < 1 or D % n_heads != 0:
        raise ValueError(f"cannot split {D} numbers into {n_heads} heads")
    Dh = D // n_heads
    heads = np.zeros((*batch, n_heads, T, Dh), dtype=x.dtype)
    for h in range(min(n_heads, MAX_HEADS)):
        heads[..., h, :, :] = x[..., :, h * Dh : (h + 1) * Dh]
    return heads
