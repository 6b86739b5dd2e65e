"""The keys are repeated for the groups but the values are not."""

EXERCISE = "gqa_forward"
DIAGNOSIS = "gqa-values-not-repeated"

import numpy as np


def gqa_forward(x, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, causal=True):
    T, D = x.shape[-2:]
    if n_heads < 1 or D % n_heads or n_kv_heads < 1 or n_heads % n_kv_heads:
        raise ValueError("bad head counts")
    Dh = D // n_heads
    q = split_heads(x @ W_q, n_heads)
    k = repeat_kv(split_heads(x @ W_k, n_kv_heads), n_heads // n_kv_heads)
    v = split_heads(x @ W_v, n_kv_heads)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(Dh)
    if causal:
        scores = np.where(causal_mask(T, T), scores, -np.inf)
    return merge_heads(softmax(scores, axis=-1) @ v) @ W_o
