"""The grown cache is used for the step but the cache it was given is returned: the next step
starts without this step's tokens."""

EXERCISE = "decode_step"
DIAGNOSIS = "step-old-cache-returned"

import numpy as np


def decode_step(x_new, cache, W_q, W_k, W_v, W_o, n_heads):
    T_new, D = x_new.shape[-2:]
    Dh = D // n_heads
    q = split_heads(x_new @ W_q, n_heads)
    k = split_heads(x_new @ W_k, n_heads)
    v = split_heads(x_new @ W_v, n_heads)
    grown = extend_cache(cache, np.stack([k, v]))
    scores = q @ np.swapaxes(grown[0], -1, -2) / np.sqrt(Dh)
    scores = np.where(causal_mask(T_new, grown.shape[-2]), scores, -np.inf)
    weights = softmax(scores, axis=-1)
    return merge_heads(weights @ grown[1]) @ W_o, cache
