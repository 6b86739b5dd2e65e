"""The heads are glued back in reverse order: the last head ends up in the first columns."""

EXERCISE = "merge_heads"
DIAGNOSIS = "head-order"

import numpy as np


def merge_heads(x):
    *batch, H, T, Dh = x.shape
    x = x[..., ::-1, :, :]  # oops: walk the heads backwards
    x = np.swapaxes(x, -3, -2)  # (..., T, H, Dh)
    return x.reshape(*batch, T, H * Dh)
