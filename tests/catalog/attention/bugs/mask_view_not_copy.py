"""`scores[...]` is taken for a copy, but it is a view, so masking it overwrites the caller's scores."""

EXERCISE = "apply_causal_mask"
DIAGNOSIS = "mutates-input"

import numpy as np


def apply_causal_mask(scores):
    T = scores.shape[-1]
    future = np.triu(np.ones((T, T), dtype=bool), k=1)
    masked = scores[...]  # "copy" of the scores (really a view)
    masked[..., future] = -np.inf
    return masked
