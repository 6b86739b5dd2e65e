"""The diagonal is masked too: a token may not even look at itself (k=0 instead of k=1)."""

EXERCISE = "apply_causal_mask"
DIAGNOSIS = "mask-diagonal"

import numpy as np


def apply_causal_mask(scores):
    T = scores.shape[-1]
    # everything from the diagonal to the right is hidden
    hide = np.triu(np.ones((T, T), dtype=bool))  # (T, T), k=0 keeps the diagonal in the triangle
    out = scores.copy()
    out[..., hide] = -np.inf
    return out
