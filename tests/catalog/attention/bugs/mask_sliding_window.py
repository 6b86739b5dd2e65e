"""Over-masking: besides the future, tokens more than 2 positions back are hidden too (a sliding window)."""

EXERCISE = "apply_causal_mask"
DIAGNOSIS = "mask-over-masks"

import numpy as np


def apply_causal_mask(scores):
    T = scores.shape[-1]
    i = np.arange(T)[:, None]  # (T, 1) query
    j = np.arange(T)[None, :]  # (1, T) key
    hide = (j > i) | (j < i - 2)  # no future, and only a short memory
    masked = scores.copy()
    masked[..., hide] = -np.inf
    return masked
