"""Splits with split_heads but merges inline with a bare reshape of (..., H, T, Dh) to (..., T, D), forgetting to bring the head axis back next to Dh."""

EXERCISE = "mha_forward"
DIAGNOSIS = "reshape-without-transpose"

import numpy as np


def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
    *batch, T, D = x.shape
    Dh = D // n_heads
    q = split_heads(x @ W_q, n_heads)  # (..., H, T, Dh)
    k = split_heads(x @ W_k, n_heads)
    v = split_heads(x @ W_v, n_heads)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(Dh)  # (..., H, T, T)
    if causal:
        scores = apply_causal_mask(scores)
    weights = softmax(scores, axis=-1)
    heads = weights @ v  # (..., H, T, Dh)
    out = heads.reshape(*batch, T, D) @ W_o  # glue the heads back together
    if return_weights:
        return out, weights
    return out
