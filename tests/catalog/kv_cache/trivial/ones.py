"""Every function returns ones (a mask that hides nothing) of the right shape."""

import numpy as np


def causal_mask(n_queries, n_keys):
    return np.ones((n_queries, n_keys), dtype=bool)


def extend_cache(cache, kv_new):
    return np.ones((*cache.shape[:-2], cache.shape[-2] + kv_new.shape[-2], cache.shape[-1]))


def decode_step(x_new, cache, W_q, W_k, W_v, W_o, n_heads):
    grown = np.ones((*cache.shape[:-2], cache.shape[-2] + x_new.shape[-2], cache.shape[-1]))
    return np.ones_like(x_new), grown


def repeat_kv(kv, n_rep):
    return np.ones((*kv.shape[:-3], kv.shape[-3] * n_rep, *kv.shape[-2:]))


def gqa_forward(x, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, causal=True):
    return np.ones_like(x)
