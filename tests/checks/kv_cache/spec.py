"""What the exercises promise, written plainly for the checks to use.

Each helper follows a docstring of ``solutions/kv_cache.py`` index by index, slowly on purpose;
none calls the student's code. The full forward pass these helpers do not give is the first
lesson's reference, which only the hidden checks hold (``hidden/oracle.py``).
"""

from __future__ import annotations

import numpy as np

from grader.arrays import head_slices

#: Two float64 computations of one formula that add in a different order (a token at a time
#: against the whole sequence, a loop over groups against repeated heads) differ by rounding
#: only, a few units in the 15th digit per operation; every mistake of the catalog moves
#: results by far more.
RTOL = 1e-9
ATOL = 1e-12


def allowed(n_queries: int, n_keys: int) -> np.ndarray:
    """(n_queries, n_keys) booleans: query i, standing at n_keys - n_queries + i, sees key j
    when j is not later than it."""
    seen = np.zeros((n_queries, n_keys), dtype=bool)
    for i in range(n_queries):
        position = n_keys - n_queries + i
        for j in range(n_keys):
            seen[i, j] = j <= position
    return seen


def keys_and_values(x: np.ndarray, W_k: np.ndarray, W_v: np.ndarray, H: int) -> np.ndarray:
    """The cache of the tokens x (..., T, D): shape (2, ..., H, T, Dh), keys at [0], values at [1]."""
    cache = np.empty((2, *x.shape[:-2], H, x.shape[-2], W_k.shape[-1] // H), dtype=np.float64)
    cache[0] = head_slices(x @ W_k, H)
    cache[1] = head_slices(x @ W_v, H)
    return cache


def repeated(kv: np.ndarray, n_rep: int) -> np.ndarray:
    """(..., H_kv, T, Dh) -> (..., H_kv*n_rep, T, Dh): query head h gets key/value head h // n_rep."""
    *lead, H_kv, T, Dh = kv.shape
    copies = np.empty((*lead, H_kv * n_rep, T, Dh), dtype=kv.dtype)
    for h in range(H_kv * n_rep):
        copies[..., h, :, :] = kv[..., h // n_rep, :, :]
    return copies


def widened(W: np.ndarray, n_kv_heads: int, n_rep: int) -> np.ndarray:
    """A key or value projection (D, H_kv*Dh) of grouped heads as one of H = H_kv*n_rep heads
    (D, H*Dh): query head h gets the columns of key/value head h // n_rep."""
    Dh = W.shape[-1] // n_kv_heads
    blocks = [W[:, (h // n_rep) * Dh : (h // n_rep + 1) * Dh] for h in range(n_kv_heads * n_rep)]
    return np.concatenate(blocks, axis=-1)


def first_output(x: np.ndarray, W_v: np.ndarray, W_o: np.ndarray, n_heads: int, n_kv_heads: int):
    """The first token's output, (..., D): it sees only itself, so each head gives back that
    token's value in its key/value head, whatever the scores."""
    return x[..., 0, :] @ widened(W_v, n_kv_heads, n_heads // n_kv_heads) @ W_o
