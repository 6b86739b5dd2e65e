"""A step of several tokens is decoded one token at a time: each token is stored, then attends
to every stored token (no mask needed, the later ones are not stored yet)."""

import numpy as np


def decode_step(x_new, cache, W_q, W_k, W_v, W_o, n_heads):
    D = x_new.shape[-1]
    Dh = D // n_heads
    outs = []
    for t in range(x_new.shape[-2]):
        token = x_new[..., t : t + 1, :]  # (..., 1, D)
        q = split_heads(token @ W_q, n_heads)  # (..., H, 1, Dh)
        kv = np.stack([split_heads(token @ W_k, n_heads), split_heads(token @ W_v, n_heads)])
        cache = extend_cache(cache, kv)  # (2, ..., H, t_all, Dh)
        weights = softmax(q @ np.swapaxes(cache[0], -1, -2) / np.sqrt(Dh), axis=-1)  # (..., H, 1, t_all)
        outs.append(merge_heads(weights @ cache[1]) @ W_o)  # (..., 1, D)
    return np.concatenate(outs, axis=-2), cache
