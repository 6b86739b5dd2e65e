"""The key/value heads are copied with np.tile: query head h gets key/value head h % H_kv, so
the heads of a group do not share theirs."""

EXERCISE = "gqa_forward"
DIAGNOSIS = "gqa-tiled-groups"

import numpy as np


def gqa_forward(x, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, causal=True):
    T, D = x.shape[-2:]
    if n_heads < 1 or D % n_heads or n_kv_heads < 1 or n_heads % n_kv_heads:
        raise ValueError("bad head counts")
    Dh = D // n_heads
    reps = (1,) * (x.ndim - 2) + (n_heads // n_kv_heads, 1, 1)
    q = split_heads(x @ W_q, n_heads)
    k = np.tile(split_heads(x @ W_k, n_kv_heads), reps)
    v = np.tile(split_heads(x @ W_v, n_kv_heads), reps)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(Dh)
    if causal:
        scores = np.where(causal_mask(T, T), scores, -np.inf)
    return merge_heads(softmax(scores, axis=-1) @ v) @ W_o
