"""Every function returns -inf everywhere: a mask that hides every score, and nothing else done."""

import numpy as np


def apply_causal_mask(scores):
    return np.full_like(scores, -np.inf)


def split_heads(x, n_heads):
    *batch, T, D = x.shape
    return np.full((*batch, n_heads, T, D // n_heads), -np.inf, dtype=x.dtype)


def merge_heads(x):
    *batch, H, T, Dh = x.shape
    return np.full((*batch, T, H * Dh), -np.inf, dtype=x.dtype)


def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
    *batch, T, D = x.shape
    out = np.full_like(x, -np.inf)
    if return_weights:
        return out, np.full((*batch, n_heads, T, T), -np.inf, dtype=x.dtype)
    return out
