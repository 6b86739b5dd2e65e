"""An additive float64 mask is added without casting, so float32 scores come back as float64."""

EXERCISE = "apply_causal_mask"
DIAGNOSIS = "wrong-dtype"

import numpy as np


def apply_causal_mask(scores):
    T = scores.shape[-1]
    future = np.triu(np.ones((T, T), dtype=bool), k=1)
    mask = np.where(future, -np.inf, 0.0)  # (T, T) float64: 0 where allowed, -inf in the future
    return scores + mask  # float32 + float64 -> float64
