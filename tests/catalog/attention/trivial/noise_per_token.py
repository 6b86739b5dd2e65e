"""Every function returns random numbers seeded by each token's own numbers and as large as that
token: a token always gets the same answer whatever the other tokens are, a token of zeros
gets zeros, and none of it is computed."""

import hashlib

import numpy as np


def _row_noise(rows, width, dtype):
    """One row of noise per row of ``rows`` (..., T, n), each seeded by that row's bytes and
    scaled by its largest number."""
    flat = np.ascontiguousarray(rows).reshape(-1, rows.shape[-1])
    out = np.empty((flat.shape[0], width))
    for i, row in enumerate(flat):
        seed = int.from_bytes(hashlib.sha256(row.tobytes()).digest()[:8], "little")
        out[i] = np.random.default_rng(seed).standard_normal(width) * np.max(np.abs(row), initial=0.0)
    return out.reshape(*rows.shape[:-1], width).astype(dtype)


def apply_causal_mask(scores):
    return _row_noise(scores, scores.shape[-1], scores.dtype)


def split_heads(x, n_heads):
    *batch, T, D = x.shape
    noise = _row_noise(x, D, x.dtype)  # (..., T, D)
    return np.swapaxes(noise.reshape(*batch, T, n_heads, D // n_heads), -3, -2)


def merge_heads(x):
    *batch, H, T, Dh = x.shape
    return _row_noise(np.swapaxes(x, -3, -2).reshape(*batch, T, H * Dh), H * Dh, x.dtype)


def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
    *batch, T, D = x.shape
    out = _row_noise(x, D, x.dtype)
    if return_weights:
        weights = _row_noise(x, n_heads * T, x.dtype).reshape(*batch, T, n_heads, T)
        return out, np.swapaxes(weights, -3, -2)
    return out
