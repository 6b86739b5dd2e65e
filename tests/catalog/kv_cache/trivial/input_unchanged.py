"""Every function hands its input back (the mask, which has no array to hand back: its sizes)."""

import numpy as np


def causal_mask(n_queries, n_keys):
    return np.array([n_queries, n_keys])


def extend_cache(cache, kv_new):
    return cache


def decode_step(x_new, cache, W_q, W_k, W_v, W_o, n_heads):
    return x_new, cache


def repeat_kv(kv, n_rep):
    return kv


def gqa_forward(x, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, causal=True):
    return x
