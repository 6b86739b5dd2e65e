"""The grown cache is allocated once at its full length and filled: old tokens, then new ones."""

import numpy as np


def extend_cache(cache, kv_new):
    T_past, T_new = cache.shape[-2], kv_new.shape[-2]
    grown = np.empty(
        (*cache.shape[:-2], T_past + T_new, cache.shape[-1]), dtype=np.result_type(cache, kv_new)
    )
    grown[..., :T_past, :] = cache
    grown[..., T_past:, :] = kv_new
    return grown
