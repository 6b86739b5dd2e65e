"""np.tril of np.ones without dtype=bool: the right pattern, as 0.0 and 1.0."""

EXERCISE = "causal_mask"
DIAGNOSIS = "mask-not-boolean"

import numpy as np


def causal_mask(n_queries, n_keys):
    if n_queries < 1 or n_keys < n_queries:
        raise ValueError("bad sizes")
    return np.tril(np.ones((n_queries, n_keys)), k=n_keys - n_queries)
