"""Every function returns zeros of the right shape and dtype, whatever it is given."""

import numpy as np


def apply_causal_mask(scores):
    return np.zeros_like(scores)


def split_heads(x, n_heads):
    *batch, T, D = x.shape
    return np.zeros((*batch, n_heads, T, D // n_heads), dtype=x.dtype)


def merge_heads(x):
    *batch, H, T, Dh = x.shape
    return np.zeros((*batch, T, H * Dh), dtype=x.dtype)


def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
    *batch, T, D = x.shape
    out = np.zeros_like(x)
    if return_weights:
        return out, np.zeros((*batch, n_heads, T, T), dtype=x.dtype)
    return out
