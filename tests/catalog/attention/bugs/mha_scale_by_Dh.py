"""Scores are divided by Dh, the width of one head, instead of by its square root sqrt(Dh)."""

EXERCISE = "mha_forward"
DIAGNOSIS = "scale-without-sqrt"

import numpy as np


def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
    D = x.shape[-1]
    Dh = D // n_heads
    q = split_heads(x @ W_q, n_heads)  # (..., H, T, Dh)
    k = split_heads(x @ W_k, n_heads)
    v = split_heads(x @ W_v, n_heads)
    scores = q @ np.swapaxes(k, -1, -2) / Dh  # the square root is forgotten
    if causal:
        scores = apply_causal_mask(scores)
    weights = softmax(scores, axis=-1)  # (..., H, T, T)
    out = merge_heads(weights @ v) @ W_o
    if return_weights:
        return out, weights
    return out
