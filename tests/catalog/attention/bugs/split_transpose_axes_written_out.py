"""The transpose spells out its axes for no batch axis, one or two; with three batch axes there is no entry for the shape."""

EXERCISE = "split_heads"
DIAGNOSIS = "no-batch-support"

import numpy as np

# axis orders that move H in front of T, by the number of axes of (..., T, H, Dh)
_ORDER = {3: (1, 0, 2), 4: (0, 2, 1, 3), 5: (0, 1, 3, 2, 4)}


def split_heads(x, n_heads):
    *batch, T, D = x.shape
    if n_heads < 1 or D % n_heads != 0:
        raise ValueError(f"cannot split {D} numbers into {n_heads} heads")
    x = x.reshape(*batch, T, n_heads, D // n_heads)  # (..., T, H, Dh)
    return np.transpose(x, _ORDER[x.ndim])  # (..., H, T, Dh)
