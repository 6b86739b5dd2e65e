"""The new tokens attend to the cache as it was, and only then are their keys and values
stored: a token cannot see itself (and the first one has nothing to see)."""

EXERCISE = "decode_step"
DIAGNOSIS = "step-attends-before-storing"

import numpy as np


def decode_step(x_new, cache, W_q, W_k, W_v, W_o, n_heads):
    D = x_new.shape[-1]
    Dh = D // n_heads
    q = split_heads(x_new @ W_q, n_heads)
    k = split_heads(x_new @ W_k, n_heads)
    v = split_heads(x_new @ W_v, n_heads)
    scores = q @ np.swapaxes(cache[0], -1, -2) / np.sqrt(Dh)
    weights = softmax(scores, axis=-1)
    out = merge_heads(weights @ cache[1]) @ W_o
    return out, extend_cache(cache, np.stack([k, v]))
