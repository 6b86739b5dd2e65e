"""The staircase is aligned to the top left corner (as PyTorch's is_causal does for a
rectangular mask): query i sees keys 0 to i, so a new token after a cache sees only the first
keys. The classic bug of decoding with a cache."""

EXERCISE = "causal_mask"
DIAGNOSIS = "mask-top-left"

import numpy as np


def causal_mask(n_queries, n_keys):
    if n_queries < 1 or n_keys < n_queries:
        raise ValueError("bad sizes")
    return np.tril(np.ones((n_queries, n_keys), dtype=bool))
