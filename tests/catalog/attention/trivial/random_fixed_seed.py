"""Every function returns random numbers of the right shape and dtype from a generator seeded
the same way on every call: the same shape always gets the same numbers, and none of it is
computed."""

import numpy as np


def _noise(shape, dtype):
    return np.random.default_rng(0).standard_normal(shape).astype(dtype)


def apply_causal_mask(scores):
    return _noise(scores.shape, scores.dtype)


def split_heads(x, n_heads):
    *batch, T, D = x.shape
    return _noise((*batch, n_heads, T, D // n_heads), x.dtype)


def merge_heads(x):
    *batch, H, T, Dh = x.shape
    return _noise((*batch, T, H * Dh), x.dtype)


def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
    *batch, T, D = x.shape
    out = _noise(x.shape, x.dtype)
    if return_weights:
        return out, _noise((*batch, n_heads, T, T), x.dtype)
    return out
