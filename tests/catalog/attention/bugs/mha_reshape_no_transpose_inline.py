"""The heads are cut inline with a bare reshape to (..., H, T, Dh) (no transpose, no split_heads), which mixes different tokens into one head row."""

EXERCISE = "mha_forward"
DIAGNOSIS = "reshape-without-transpose"

import numpy as np


def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
    *batch, T, D = x.shape
    H = n_heads
    Dh = D // H
    q = (x @ W_q).reshape(*batch, H, T, Dh)  # (..., H, T, Dh)
    k = (x @ W_k).reshape(*batch, H, T, Dh)
    v = (x @ W_v).reshape(*batch, H, T, Dh)

    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(Dh)  # (..., H, T, T)
    if causal:
        scores = apply_causal_mask(scores)
    weights = softmax(scores, axis=-1)
    heads = weights @ v  # (..., H, T, Dh)
    out = heads.reshape(*batch, T, D) @ W_o  # and back the same way
    if return_weights:
        return out, weights
    return out
