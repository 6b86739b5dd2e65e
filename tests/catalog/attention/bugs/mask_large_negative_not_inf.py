"""The future is filled with -1e9 instead of -inf, so the masked scores are not the exact -inf the function promises."""

EXERCISE = "apply_causal_mask"
DIAGNOSIS = "mask-not-neginf"

import numpy as np


def apply_causal_mask(scores):
    T = scores.shape[-1]
    future = np.triu(np.ones((T, T), dtype=bool), k=1)
    masked = scores.copy()
    masked[..., future] = -1e9  # big enough, exp(-1e9) is 0 anyway
    return masked
