"""Every function hands back its input as it came (a copy): a mask that masks nothing, heads
never split or merged, a forward pass that returns x."""

import numpy as np


def apply_causal_mask(scores):
    return scores.copy()


def split_heads(x, n_heads):
    return x.copy()


def merge_heads(x):
    return x.copy()


def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
    *batch, T, D = x.shape
    if return_weights:
        return x.copy(), np.zeros((*batch, n_heads, T, T), dtype=x.dtype)
    return x.copy()
