"""n_heads is ignored: one single-head attention runs over the full width D, so the weights have no head axis."""

EXERCISE = "mha_forward"
DIAGNOSIS = "ignores-n-heads"

import numpy as np


def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
    D = x.shape[-1]
    q = x @ W_q  # (..., T, D)
    k = x @ W_k
    v = x @ W_v
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(D)  # (..., T, T)
    if causal:
        scores = apply_causal_mask(scores)
    weights = softmax(scores, axis=-1)  # (..., T, T)
    out = (weights @ v) @ W_o  # (..., T, D)
    if return_weights:
        return out, weights
    return out
