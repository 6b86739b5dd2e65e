"""The transpose spells out its axes for no batch axis, one or two; with three batch axes there is no entry for the shape."""

EXERCISE = "merge_heads"
DIAGNOSIS = "no-batch-support"

import numpy as np

# axis orders that move T in front of H, by the number of axes of (..., H, T, Dh)
_ORDER = {3: (1, 0, 2), 4: (0, 2, 1, 3), 5: (0, 1, 3, 2, 4)}


def merge_heads(x):
    *batch, H, T, Dh = x.shape
    x = np.transpose(x, _ORDER[x.ndim])  # (..., T, H, Dh)
    return x.reshape(*batch, T, H * Dh)
