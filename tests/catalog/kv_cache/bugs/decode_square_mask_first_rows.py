"""The square mask of all T tokens is built, but its FIRST T_new rows are used instead of its
last ones: the square staircase applied to a step as if the new tokens came first."""

EXERCISE = "decode_step"
DIAGNOSIS = "step-mask-top-left"

import numpy as np


def decode_step(x_new, cache, W_q, W_k, W_v, W_o, n_heads):
    T_new, D = x_new.shape[-2:]
    Dh = D // n_heads
    q = split_heads(x_new @ W_q, n_heads)
    k = split_heads(x_new @ W_k, n_heads)
    v = split_heads(x_new @ W_v, n_heads)
    cache = extend_cache(cache, np.stack([k, v]))
    T = cache.shape[-2]
    scores = q @ np.swapaxes(cache[0], -1, -2) / np.sqrt(Dh)
    scores = np.where(causal_mask(T, T)[:T_new], scores, -np.inf)
    weights = softmax(scores, axis=-1)
    return merge_heads(weights @ cache[1]) @ W_o, cache
