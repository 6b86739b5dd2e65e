"""Future scores are set to 0 instead of -inf, so after the softmax they still get weight e^0."""

EXERCISE = "apply_causal_mask"
DIAGNOSIS = "mask-not-neginf"

import numpy as np


def apply_causal_mask(scores):
    T = scores.shape[-1]
    future = np.triu(np.ones((T, T), dtype=bool), k=1)
    masked = scores.copy()
    masked[..., future] = 0.0  # "switch off" the future
    return masked
