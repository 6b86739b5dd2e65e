"""Scores divided by sqrt(H_kv * Dh), the width of W_k, instead of sqrt(Dh), one head's width."""

EXERCISE = "gqa_forward"
DIAGNOSIS = "gqa-wrong-scale"

import numpy as np


def gqa_forward(x, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, causal=True):
    T, D = x.shape[-2:]
    if n_heads < 1 or D % n_heads or n_kv_heads < 1 or n_heads % n_kv_heads:
        raise ValueError("bad head counts")
    q = split_heads(x @ W_q, n_heads)
    k = repeat_kv(split_heads(x @ W_k, n_kv_heads), n_heads // n_kv_heads)
    v = repeat_kv(split_heads(x @ W_v, n_kv_heads), n_heads // n_kv_heads)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(W_k.shape[-1])
    if causal:
        scores = np.where(causal_mask(T, T), scores, -np.inf)
    return merge_heads(softmax(scores, axis=-1) @ v) @ W_o
