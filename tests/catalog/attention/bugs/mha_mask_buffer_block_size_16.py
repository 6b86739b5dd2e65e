"""The causal mask is a buffer made once for a block size of 16 tokens (as in nanoGPT); longer sequences do not fit it."""

EXERCISE = "mha_forward"
DIAGNOSIS = "hardcoded-size"

import numpy as np

BLOCK_SIZE = 16
_ALLOWED = np.tril(np.ones((BLOCK_SIZE, BLOCK_SIZE), dtype=bool))  # (16, 16) the staircase


def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
    T, D = x.shape[-2], x.shape[-1]
    Dh = D // n_heads
    q = split_heads(x @ W_q, n_heads)  # (..., H, T, Dh)
    k = split_heads(x @ W_k, n_heads)
    v = split_heads(x @ W_v, n_heads)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(Dh)  # (..., H, T, T)
    if causal:
        scores = np.where(_ALLOWED[:T, :T], scores, -np.inf)
    weights = softmax(scores, axis=-1)
    out = merge_heads(weights @ v) @ W_o
    if return_weights:
        return out, weights
    return out
