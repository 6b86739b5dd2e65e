import numpy as np


def apply_causal_mask(scores):
    T = scores.shape[2]  # assumes a batch axis is always there
    future = np.triu(np.ones((T, T), dtype=bool), k=1)
    return np.where(future, -np.inf, scores)
