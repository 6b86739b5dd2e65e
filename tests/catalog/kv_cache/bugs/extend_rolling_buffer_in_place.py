"""A rolling buffer written into the caller's cache: once the cache is as long as the new
tokens, the oldest tokens are shifted out in place and the cache keeps its length."""

EXERCISE = "extend_cache"
DIAGNOSIS = "cache-in-place"

import numpy as np


def extend_cache(cache, kv_new):
    T_new = kv_new.shape[-2]
    if cache.shape[-2] > T_new:
        cache[..., :-T_new, :] = cache[..., T_new:, :]
        cache[..., -T_new:, :] = kv_new
        return cache
    return np.concatenate([cache, kv_new], axis=-2)
