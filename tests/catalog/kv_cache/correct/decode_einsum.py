"""decode_step with einsum and an additive -inf mask."""

import numpy as np


def decode_step(x_new, cache, W_q, W_k, W_v, W_o, n_heads):
    T_new, D = x_new.shape[-2:]
    Dh = D // n_heads
    q = split_heads(x_new @ W_q, n_heads)
    kv = np.stack([split_heads(x_new @ W_k, n_heads), split_heads(x_new @ W_v, n_heads)])
    cache = extend_cache(cache, kv)
    T = cache.shape[-2]
    scores = np.einsum("...hqd,...hkd->...hqk", q, cache[0]) * Dh**-0.5
    scores = scores + np.where(causal_mask(T_new, T), 0.0, -np.inf)
    weights = softmax(scores, axis=-1)
    heads = np.einsum("...hqk,...hkd->...hqd", weights, cache[1])
    return merge_heads(heads) @ W_o, cache
