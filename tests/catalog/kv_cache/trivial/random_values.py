"""Every function returns fresh noise of the right shape."""

import numpy as np

rng = np.random.default_rng()


def causal_mask(n_queries, n_keys):
    return rng.random((n_queries, n_keys)) < 0.5


def extend_cache(cache, kv_new):
    return rng.normal(size=(*cache.shape[:-2], cache.shape[-2] + kv_new.shape[-2], cache.shape[-1]))


def decode_step(x_new, cache, W_q, W_k, W_v, W_o, n_heads):
    grown = rng.normal(size=(*cache.shape[:-2], cache.shape[-2] + x_new.shape[-2], cache.shape[-1]))
    return rng.normal(size=x_new.shape), grown


def repeat_kv(kv, n_rep):
    return rng.normal(size=(*kv.shape[:-3], kv.shape[-3] * n_rep, *kv.shape[-2:]))


def gqa_forward(x, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, causal=True):
    return rng.normal(size=x.shape)
