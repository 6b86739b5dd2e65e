"""mha_forward with a Python loop over the heads, each head using its own column slices of W_q, W_k and W_v."""

EXERCISE = "mha_forward"

import numpy as np


def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
    D = x.shape[-1]
    Dh = D // n_heads
    outs, all_weights = [], []
    for h in range(n_heads):
        cols = slice(h * Dh, (h + 1) * Dh)
        q = x @ W_q[:, cols]  # (..., T, Dh)
        k = x @ W_k[:, cols]
        v = x @ W_v[:, cols]
        s = q @ np.swapaxes(k, -1, -2) / np.sqrt(Dh)  # (..., T, T)
        if causal:
            s = apply_causal_mask(s)
        w = softmax(s, axis=-1)  # (..., T, T)
        outs.append(w @ v)  # (..., T, Dh)
        all_weights.append(w)
    out = np.concatenate(outs, axis=-1) @ W_o  # (..., T, D) @ (D, D)
    if return_weights:
        return out, np.stack(all_weights, axis=-3)  # (..., H, T, T)
    return out
