"""The heads are taken as list(x), i.e. along the first axis, which is the batch axis rather than the head axis once x has leading axes."""

EXERCISE = "merge_heads"
DIAGNOSIS = "wrong-axis-order"

import numpy as np


def merge_heads(x):
    # x is (H, T, Dh): put the H blocks of (T, Dh) side by side
    return np.concatenate(list(x), axis=-1)
