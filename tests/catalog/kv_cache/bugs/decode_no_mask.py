"""No mask in the step: when a step holds several tokens, each sees the later ones too."""

EXERCISE = "decode_step"
DIAGNOSIS = "step-no-mask"

import numpy as np


def decode_step(x_new, cache, W_q, W_k, W_v, W_o, n_heads):
    D = x_new.shape[-1]
    Dh = D // n_heads
    q = split_heads(x_new @ W_q, n_heads)
    k = split_heads(x_new @ W_k, n_heads)
    v = split_heads(x_new @ W_v, n_heads)
    cache = extend_cache(cache, np.stack([k, v]))
    scores = q @ np.swapaxes(cache[0], -1, -2) / np.sqrt(Dh)
    weights = softmax(scores, axis=-1)
    return merge_heads(weights @ cache[1]) @ W_o, cache
