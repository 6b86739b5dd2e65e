"""Every function returns NaN of the right shape and dtype, whatever it is given."""

import numpy as np


def apply_causal_mask(scores):
    return np.full_like(scores, np.nan)


def split_heads(x, n_heads):
    *batch, T, D = x.shape
    return np.full((*batch, n_heads, T, D // n_heads), np.nan, dtype=x.dtype)


def merge_heads(x):
    *batch, H, T, Dh = x.shape
    return np.full((*batch, T, H * Dh), np.nan, dtype=x.dtype)


def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
    *batch, T, D = x.shape
    out = np.full_like(x, np.nan)
    if return_weights:
        return out, np.full((*batch, n_heads, T, T), np.nan, dtype=x.dtype)
    return out
