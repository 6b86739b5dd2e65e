"""What to hide, built with np.triu above the shifted diagonal, then inverted."""

import numpy as np


def causal_mask(n_queries, n_keys):
    if not 1 <= n_queries <= n_keys:
        raise ValueError("need 1 <= n_queries <= n_keys")
    return ~np.triu(np.ones((n_queries, n_keys), dtype=bool), k=n_keys - n_queries + 1)
