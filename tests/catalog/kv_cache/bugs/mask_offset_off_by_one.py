"""The diagonal is shifted one key too far left: each query stands at n_keys - n_queries + i
but the mask stops one key before it, so no token sees itself."""

EXERCISE = "causal_mask"
DIAGNOSIS = "mask-hides-itself"

import numpy as np


def causal_mask(n_queries, n_keys):
    if n_queries < 1 or n_keys < n_queries:
        raise ValueError("bad sizes")
    return np.tril(np.ones((n_queries, n_keys), dtype=bool), k=n_keys - n_queries - 1)
