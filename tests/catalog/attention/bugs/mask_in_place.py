"""Masks in place: the caller's scores are overwritten with -inf and the same array is returned."""

EXERCISE = "apply_causal_mask"
DIAGNOSIS = "mutates-input"

import numpy as np


def apply_causal_mask(scores):
    T = scores.shape[-1]
    future = np.triu(np.ones((T, T), dtype=bool), k=1)
    scores[..., future] = -np.inf  # saves a copy
    return scores
