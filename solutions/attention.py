"""Causal masks and multiple heads, written with numpy.

Letters used in every shape comment below:

    T    number of tokens in the sequence
    D    numbers per token (the model width)
    H    number of heads (``n_heads``)
    Dh   numbers per token inside one head, D // H
    ...  any number of leading batch axes, possibly none

A score table has one row per query token i (who is looking) and one column
per key token j (who is looked at). Every matrix acts on row vectors: a
token's query is ``x @ W_q``.
"""

import numpy as np


def softmax(z, axis=-1):
    """Turn scores into weights that are positive and sum to 1 along ``axis``.

    Given to you (it comes from the previous lesson). Subtracting the largest
    score first leaves the result unchanged but keeps ``np.exp`` from
    overflowing when scores are large. A score of -inf becomes a weight of
    exactly 0.
    """
    z = z - np.max(z, axis=axis, keepdims=True)  # largest score in each row is now 0
    e = np.exp(z)
    return e / np.sum(e, axis=axis, keepdims=True)


def apply_causal_mask(scores):
    """Forbid every query from looking at later keys.

    scores: float array of shape (..., T, T); row i is query token i and
        column j is key token j. Any number of leading axes is allowed.

    Returns a new array with the same shape and dtype in which every entry
    with j > i (a key to the right of the diagonal, in the future) is -inf
    and every other entry equals the one in ``scores``. ``scores`` itself is
    left unchanged.
    """
    ### BEGIN SOLUTION
    T = scores.shape[-1]
    future = np.triu(np.ones((T, T), dtype=bool), k=1)  # (T, T), True right of the diagonal
    masked = scores.copy()  # (..., T, T), a new array: the caller's scores stay intact
    masked[..., future] = -np.inf  # cross out the triangle; the staircase remains
    return masked
    ### END SOLUTION


def split_heads(x, n_heads):
    """Cut each token's D numbers into ``n_heads`` equal, contiguous slices.

    x: array of shape (..., T, D), any number of leading axes (or none).
    n_heads: number of heads H, a positive integer that divides D.

    Returns an array of shape (..., H, T, Dh) with Dh = D // H, where head h
    of token t holds ``x[..., t, h*Dh:(h+1)*Dh]`` (head 0 takes the first Dh
    columns, head 1 the next Dh, and so on).

    Raises ValueError when n_heads < 1 or when D is not a multiple of n_heads.
    """
    ### BEGIN SOLUTION
    *batch, T, D = x.shape
    if n_heads < 1:
        raise ValueError(f"n_heads must be at least 1, got {n_heads}")
    if D % n_heads != 0:
        raise ValueError(f"width D={D} cannot be split into {n_heads} equal heads")
    Dh = D // n_heads
    x = x.reshape(*batch, T, n_heads, Dh)  # (..., T, D) -> (..., T, H, Dh)
    return np.swapaxes(x, -3, -2)  # (..., T, H, Dh) -> (..., H, T, Dh)
    ### END SOLUTION


def merge_heads(x):
    """Join the heads back side by side: the exact inverse of ``split_heads``.

    x: array of shape (..., H, T, Dh).

    Returns an array of shape (..., T, H*Dh) in which head h fills columns
    h*Dh to (h+1)*Dh of every token.
    """
    ### BEGIN SOLUTION
    *batch, H, T, Dh = x.shape
    x = np.swapaxes(x, -3, -2)  # (..., H, T, Dh) -> (..., T, H, Dh)
    return x.reshape(*batch, T, H * Dh)  # (..., T, H, Dh) -> (..., T, D)
    ### END SOLUTION


def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
    """Multi-head self-attention over a sequence of tokens.

    x: array of shape (..., T, D).
    W_q, W_k, W_v, W_o: arrays of shape (D, D), applied as ``x @ W``. Head h
        owns columns h*Dh:(h+1)*Dh of W_q, W_k and W_v, with Dh = D // n_heads.
    n_heads: number of heads H; it must divide D.
    causal: when True, each token attends only to itself and earlier tokens;
        when False, every token attends to every token.
    return_weights: when True, also return the attention weights.

    Each head scores queries against keys, scales the scores by 1/sqrt(Dh),
    masks them when ``causal``, turns each row into weights with a softmax and
    blends the values. The heads are merged and mixed by W_o.

    Returns ``out`` of shape (..., T, D), or ``(out, weights)`` with weights
    of shape (..., H, T, T) when ``return_weights`` is True.
    """
    ### BEGIN SOLUTION
    D = x.shape[-1]
    Dh = D // n_heads
    q = split_heads(x @ W_q, n_heads)  # (..., T, D) -> (..., H, T, Dh)
    k = split_heads(x @ W_k, n_heads)  # (..., T, D) -> (..., H, T, Dh)
    v = split_heads(x @ W_v, n_heads)  # (..., T, D) -> (..., H, T, Dh)

    # every head builds its own score table at once
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(Dh)  # (..., H, T, Dh) @ (..., H, Dh, T) -> (..., H, T, T)
    if causal:
        scores = apply_causal_mask(scores)  # (..., H, T, T), future keys at -inf
    weights = softmax(scores, axis=-1)  # (..., H, T, T), each row sums to 1

    heads = weights @ v  # (..., H, T, T) @ (..., H, T, Dh) -> (..., H, T, Dh)
    out = merge_heads(heads) @ W_o  # (..., T, D) @ (D, D) -> (..., T, D)
    if return_weights:
        return out, weights
    return out
    ### END SOLUTION
