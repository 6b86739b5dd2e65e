"""An additive mask: 0 where a key may be seen and -inf in the future, cast to the scores' dtype and added."""

EXERCISE = "apply_causal_mask"

import numpy as np


def apply_causal_mask(scores):
    T = scores.shape[-1]
    i = np.arange(T)[:, None]  # (T, 1) query positions
    j = np.arange(T)[None, :]  # (1, T) key positions
    mask = np.where(j > i, -np.inf, 0.0).astype(scores.dtype)  # (T, T): 0 or -inf
    return scores + mask  # broadcasts over (..., T, T); a new array, same dtype
