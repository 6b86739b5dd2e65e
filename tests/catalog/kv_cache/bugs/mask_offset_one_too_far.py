"""The offset counts the queries' own first token as cached: query i sees one key past itself."""

EXERCISE = "causal_mask"
DIAGNOSIS = "mask-one-too-far"

import numpy as np


def causal_mask(n_queries, n_keys):
    if n_queries < 1 or n_keys < n_queries:
        raise ValueError("bad sizes")
    position = n_keys - n_queries + 1 + np.arange(n_queries)[:, None]
    return np.arange(n_keys)[None, :] <= position
