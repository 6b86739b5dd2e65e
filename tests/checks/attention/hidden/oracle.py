"""An independent multi-head attention: one head at a time, straight from the definition.

Deliberately unlike the reference solution (a Python loop over heads, column
slices of the projections, an explicit 1/sqrt(Dh) factor), so that agreeing
with it means something.
"""

from __future__ import annotations

import numpy as np

from grader.arrays import softmax

from ..spec import future


def attention_one_head(q, k, v, *, causal: bool):
    """Single-head attention: q, k (..., T, d), v (..., T, dv) -> ((..., T, dv), (..., T, T))."""
    T, d = q.shape[-2], q.shape[-1]
    scores = (q @ np.swapaxes(k, -1, -2)) * (1.0 / np.sqrt(d))  # (..., T, T)
    if causal:
        scores = np.where(future(T), -np.inf, scores)
    weights = softmax(scores)  # (..., T, T)
    return weights @ v, weights


def mha_oracle(x, W_q, W_k, W_v, W_o, n_heads, *, causal: bool):
    """Multi-head attention by a loop over heads: ((..., T, D), (..., H, T, T))."""
    *batch, T, D = x.shape
    Dh = D // n_heads
    merged = np.empty((*batch, T, D))
    weights = np.empty((*batch, n_heads, T, T))
    for h in range(n_heads):
        cols = slice(h * Dh, (h + 1) * Dh)  # head h owns these columns
        blended, weights[..., h, :, :] = attention_one_head(
            x @ W_q[:, cols], x @ W_k[:, cols], x @ W_v[:, cols], causal=causal
        )
        merged[..., :, cols] = blended
    return merged @ W_o, weights
