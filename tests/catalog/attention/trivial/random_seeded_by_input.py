"""Every function returns random numbers seeded by its input's bytes: the same input always gets
the same answer, a different input a different one, and none of it is computed."""

import hashlib

import numpy as np


def _noise(shape, dtype, *arrays):
    digest = hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for a in arrays)).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
    return rng.standard_normal(shape).astype(dtype)


def apply_causal_mask(scores):
    return _noise(scores.shape, scores.dtype, scores)


def split_heads(x, n_heads):
    *batch, T, D = x.shape
    return _noise((*batch, n_heads, T, D // n_heads), x.dtype, x)


def merge_heads(x):
    *batch, H, T, Dh = x.shape
    return _noise((*batch, T, H * Dh), x.dtype, x)


def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
    *batch, T, D = x.shape
    out = _noise(x.shape, x.dtype, x, W_q, W_k, W_v, W_o)
    if return_weights:
        return out, _noise((*batch, n_heads, T, T), x.dtype, x, W_q, W_k, W_v, W_o, x)
    return out
