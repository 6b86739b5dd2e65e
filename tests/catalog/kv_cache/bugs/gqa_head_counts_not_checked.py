"""No check that n_kv_heads divides n_heads: the group size is rounded down and the layer
goes on with heads that do not fit (or divides by zero)."""

EXERCISE = "gqa_forward"
DIAGNOSIS = "gqa-head-counts-not-checked"

import numpy as np


def gqa_forward(x, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, causal=True):
    T, D = x.shape[-2:]
    Dh = D // n_heads
    q = split_heads(x @ W_q, n_heads)
    k = repeat_kv(split_heads(x @ W_k, n_kv_heads), n_heads // n_kv_heads)
    v = repeat_kv(split_heads(x @ W_v, n_kv_heads), n_heads // n_kv_heads)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(Dh)
    if causal:
        scores = np.where(causal_mask(T, T), scores, -np.inf)
    return merge_heads(softmax(scores, axis=-1) @ v) @ W_o
