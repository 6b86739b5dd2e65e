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
    T = scores.shape[-1]
    upper = np.triu(np.ones((T, T)), k=1).astype(bool)  # True above the diagonal
    return np.where(upper, -np.inf, scores).astype(scores.dtype)


def split_heads(x, n_heads):
    """Cut each token's D numbers into ``n_heads`` equal, contiguous slices.

    x: array of shape (..., T, D), any number of leading axes (or none).
    n_heads: number of heads H, a positive integer that divides D.

    Returns an array of shape (..., H, T, Dh) with Dh = D // H, where head h
    of token t holds ``x[..., t, h*Dh:(h+1)*Dh]`` (head 0 takes the first Dh
    columns, head 1 the next Dh, and so on).

    Raises ValueError when n_heads < 1 or when D is not a multiple of n_heads.
    """
    *lead, T, D = x.shape
    if n_heads < 1 or D % n_heads != 0:
        raise ValueError(f"cannot split {D} numbers into {n_heads} heads")
    Dh = D // n_heads
    return np.stack([x[..., h * Dh : (h + 1) * Dh] for h in range(n_heads)], axis=-3)


def merge_heads(x):
    """Join the heads back side by side: the exact inverse of ``split_heads``.

    x: array of shape (..., H, T, Dh).

    Returns an array of shape (..., T, H*Dh) in which head h fills columns
    h*Dh to (h+1)*Dh of every token.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


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
    # YOUR CODE HERE
    raise NotImplementedError()
