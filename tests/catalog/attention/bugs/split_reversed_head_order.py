"""The heads come out in reverse order: head 0 holds the last block of columns."""

EXERCISE = "split_heads"
DIAGNOSIS = "head-order"

import numpy as np


def split_heads(x, n_heads):
    *batch, T, D = x.shape
    if n_heads < 1:
        raise ValueError("need at least one head")
    if D % n_heads != 0:
        raise ValueError(f"D={D} is not divisible by n_heads={n_heads}")
    Dh = D // n_heads
    heads = []
    for h in range(n_heads):
        # count blocks from the right
        start = D - (h + 1) * Dh
        heads.append(x[..., :, start : start + Dh])  # (..., T, Dh)
    return np.stack(heads, axis=-3)  # (..., H, T, Dh)
