"""The mask is the last n_queries rows of the square staircase of all n_keys tokens."""

import numpy as np


def causal_mask(n_queries, n_keys):
    if n_queries < 1 or n_keys < n_queries:
        raise ValueError(f"bad sizes {n_queries}, {n_keys}")
    return np.tril(np.ones((n_keys, n_keys), dtype=bool))[n_keys - n_queries :]
