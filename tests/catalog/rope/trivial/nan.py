"""NaN of the right shape everywhere."""

import numpy as np


def rope_angles(T, Dh, base=10000.0):
    return np.full((T, Dh // 2), np.nan)


def apply_rope(x, positions=None, base=10000.0):
    return np.full_like(x, np.nan)


def rope_attention_scores(q, k):
    return np.full((*q.shape[:-1], k.shape[-2]), np.nan, dtype=q.dtype)
