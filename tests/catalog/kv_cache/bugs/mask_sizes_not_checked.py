"""No check of the sizes: more queries than keys give a mask anyway."""

EXERCISE = "causal_mask"
DIAGNOSIS = "mask-sizes-not-checked"

import numpy as np


def causal_mask(n_queries, n_keys):
    return np.tril(np.ones((max(n_queries, 0), max(n_keys, 0)), dtype=bool), k=n_keys - n_queries)
