"""The mask is applied after the softmax by zeroing future weights, so the rows no longer sum to 1 and the future still shapes the past."""

EXERCISE = "mha_forward"
DIAGNOSIS = "mask-after-softmax"

import numpy as np


def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
    *batch, T, D = x.shape
    Dh = D // n_heads
    q = split_heads(x @ W_q, n_heads)  # (..., H, T, Dh)
    k = split_heads(x @ W_k, n_heads)
    v = split_heads(x @ W_v, n_heads)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(Dh)  # (..., H, T, T)
    weights = softmax(scores, axis=-1)
    if causal:
        keep = np.tril(np.ones((T, T)))  # 1 on and below the diagonal
        weights = weights * keep  # future weights become 0
    out = merge_heads(weights @ v) @ W_o
    if return_weights:
        return out, weights
    return out
