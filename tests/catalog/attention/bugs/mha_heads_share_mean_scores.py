"""Every head gets one shared table of scores, the average of the heads' own tables, so all heads
weigh the tokens alike (each still blends its own values)."""

EXERCISE = "mha_forward"
DIAGNOSIS = "heads-share-scores"

import numpy as np


def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
    D = x.shape[-1]
    Dh = D // n_heads
    q = split_heads(x @ W_q, n_heads)  # (..., H, T, Dh)
    k = split_heads(x @ W_k, n_heads)
    v = split_heads(x @ W_v, n_heads)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(Dh)  # (..., H, T, T)
    scores = scores.mean(axis=-3, keepdims=True)  # (..., 1, T, T): one table for every head
    if causal:
        scores = apply_causal_mask(scores)
    weights = softmax(scores, axis=-1)  # (..., 1, T, T)
    out = merge_heads(weights @ v) @ W_o  # the one table blends each head's values
    if return_weights:
        return out, weights
    return out
