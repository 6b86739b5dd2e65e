"""A loop over the key/value groups: the n_rep query heads of group g attend together to the
keys and values of head g, which are never copied."""

import numpy as np


def gqa_forward(x, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, causal=True):
    T, D = x.shape[-2:]
    if n_heads < 1 or D % n_heads:
        raise ValueError("n_heads must divide D")
    if n_kv_heads < 1 or n_heads % n_kv_heads:
        raise ValueError("n_kv_heads must divide n_heads")
    Dh = D // n_heads
    n_rep = n_heads // n_kv_heads
    q = split_heads(x @ W_q, n_heads)  # (..., H, T, Dh)
    k = split_heads(x @ W_k, n_kv_heads)  # (..., H_kv, T, Dh)
    v = split_heads(x @ W_v, n_kv_heads)
    groups = []
    for g in range(n_kv_heads):
        qg = q[..., g * n_rep : (g + 1) * n_rep, :, :]  # (..., n_rep, T, Dh)
        kg, vg = k[..., g : g + 1, :, :], v[..., g : g + 1, :, :]  # (..., 1, T, Dh), shared by the group
        scores = qg @ np.swapaxes(kg, -1, -2) / np.sqrt(Dh)  # (..., n_rep, T, T)
        if causal:
            scores = np.where(causal_mask(T, T), scores, -np.inf)
        groups.append(softmax(scores, axis=-1) @ vg)  # (..., n_rep, T, Dh)
    return merge_heads(np.concatenate(groups, axis=-3)) @ W_o
