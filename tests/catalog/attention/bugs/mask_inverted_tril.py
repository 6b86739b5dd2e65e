"""The mask is flipped: the past (below the diagonal, np.tril) is hidden instead of the future."""

EXERCISE = "apply_causal_mask"
DIAGNOSIS = "mask-inverted"

import numpy as np


def apply_causal_mask(scores):
    T = scores.shape[-1]
    hide = np.tril(np.ones((T, T), dtype=bool), k=-1)  # (T, T) strictly below the diagonal
    out = scores.copy()
    out[..., hide] = -np.inf
    return out
