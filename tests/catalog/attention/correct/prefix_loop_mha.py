"""The lesson's naive causal attention: for each t, attend over the prefix x[..., :t+1, :] without a mask and keep only its last row."""

EXERCISE = "mha_forward"

import numpy as np


def _attend(x, W_q, W_k, W_v, n_heads):
    """Unmasked attention of every token over all of x: heads (..., H, T, Dh), weights (..., H, T, T)."""
    Dh = x.shape[-1] // n_heads
    q = split_heads(x @ W_q, n_heads)
    k = split_heads(x @ W_k, n_heads)
    v = split_heads(x @ W_v, n_heads)
    w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(Dh), axis=-1)
    return w @ v, w


def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
    *batch, T, D = x.shape
    Dh = D // n_heads
    if not causal:
        heads, weights = _attend(x, W_q, W_k, W_v, n_heads)
    else:
        heads = np.zeros((*batch, n_heads, T, Dh), dtype=np.result_type(x, W_q, W_k, W_v))
        weights = np.zeros((*batch, n_heads, T, T), dtype=heads.dtype)  # future stays exactly 0
        for t in range(T):
            h_t, w_t = _attend(x[..., : t + 1, :], W_q, W_k, W_v, n_heads)  # sees tokens 0..t only
            heads[..., t, :] = h_t[..., t, :]  # last row of the prefix: token t
            weights[..., t, : t + 1] = w_t[..., t, :]
    out = merge_heads(heads) @ W_o
    if return_weights:
        return out, weights
    return out
