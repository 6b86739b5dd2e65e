"""Scores divided by sqrt(D), the model width, instead of sqrt(Dh), one head's width."""

EXERCISE = "decode_step"
DIAGNOSIS = "step-wrong-scale"

import numpy as np


def decode_step(x_new, cache, W_q, W_k, W_v, W_o, n_heads):
    T_new, D = x_new.shape[-2:]
    q = split_heads(x_new @ W_q, n_heads)
    k = split_heads(x_new @ W_k, n_heads)
    v = split_heads(x_new @ W_v, n_heads)
    cache = extend_cache(cache, np.stack([k, v]))
    scores = q @ np.swapaxes(cache[0], -1, -2) / np.sqrt(D)
    scores = np.where(causal_mask(T_new, cache.shape[-2]), scores, -np.inf)
    weights = softmax(scores, axis=-1)
    return merge_heads(weights @ cache[1]) @ W_o, cache
