"""mha_forward written with np.einsum: the head split, the scores, the blend and W_o in index notation."""

EXERCISE = "mha_forward"

import numpy as np


def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
    *batch, T, D = x.shape
    H = n_heads
    Dh = D // H
    # view each projection as (D, H, Dh): head h owns columns h*Dh:(h+1)*Dh
    Wq = W_q.reshape(D, H, Dh)
    Wk = W_k.reshape(D, H, Dh)
    Wv = W_v.reshape(D, H, Dh)
    q = np.einsum("...td,dhe->...hte", x, Wq)  # (..., H, T, Dh)
    k = np.einsum("...td,dhe->...hte", x, Wk)
    v = np.einsum("...td,dhe->...hte", x, Wv)
    scores = np.einsum("...hie,...hje->...hij", q, k) / np.sqrt(Dh)  # (..., H, T, T)
    if causal:
        scores = apply_causal_mask(scores)
    weights = softmax(scores, axis=-1)
    heads = np.einsum("...hij,...hje->...hie", weights, v)  # (..., H, T, Dh)
    out = np.einsum("...hte,hef->...tf", heads, W_o.reshape(H, Dh, D))  # (..., T, D)
    if return_weights:
        return out, weights
    return out
