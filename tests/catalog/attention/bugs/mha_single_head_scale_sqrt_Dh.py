"""The head split is skipped: one head attends over all D numbers, yet its scores are divided by
sqrt(Dh) = sqrt(D // n_heads), the scale of one of the heads it should have had."""

EXERCISE = "mha_forward"
DIAGNOSIS = "ignores-n-heads"

import numpy as np


def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
    D = x.shape[-1]
    Dh = D // n_heads
    q, k, v = x @ W_q, x @ W_k, x @ W_v  # (..., T, D): never cut into heads
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(Dh)  # (..., T, T)
    if causal:
        scores = apply_causal_mask(scores)
    weights = softmax(scores, axis=-1)  # (..., T, T)
    out = (weights @ v) @ W_o
    if return_weights:
        return out, weights
    return out
