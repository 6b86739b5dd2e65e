"""Off by one: np.triu with k=2 leaves the very next token (j = i+1) unmasked."""

EXERCISE = "apply_causal_mask"
DIAGNOSIS = "mask-leaks-future"

import numpy as np


def apply_causal_mask(scores):
    T = scores.shape[-1]
    future = np.triu(np.ones((T, T), dtype=bool), k=2)  # starts one column too far right
    masked = scores.copy()
    masked[..., future] = -np.inf
    return masked
