"""True and False swapped: True where the key is in the future (the mask of what to hide)."""

EXERCISE = "causal_mask"
DIAGNOSIS = "mask-inverted"

import numpy as np


def causal_mask(n_queries, n_keys):
    if n_queries < 1 or n_keys < n_queries:
        raise ValueError("bad sizes")
    return np.triu(np.ones((n_queries, n_keys), dtype=bool), k=n_keys - n_queries + 1)
