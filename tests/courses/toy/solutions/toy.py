"""Layer normalisation, written with numpy.

A small lesson the grader's own tests carry, to show that a lesson is just its
files. Letters used below:

    T    number of tokens
    D    numbers per token
    ...  any number of leading axes, possibly none
"""

import numpy as np


def token_mean(x):
    """The mean of each token's D numbers, kept as an axis of length 1. Given to you."""
    return np.mean(x, axis=-1, keepdims=True)  # (..., T, D) -> (..., T, 1)


def center_tokens(x):
    """Move each token's numbers so that their mean is 0.

    x: array of shape (..., T, D).

    Returns a new array of the same shape: each token's numbers minus their mean.
    """
    ### BEGIN SOLUTION
    return x - token_mean(x)  # (..., T, D) - (..., T, 1) -> (..., T, D)
    ### END SOLUTION


def layer_norm(x, gamma, beta, eps=1e-5):
    """Normalise each token, then scale it by ``gamma`` and shift it by ``beta``.

    x: array of shape (..., T, D).
    gamma, beta: arrays of shape (D,).
    eps: added to the variance, so that a constant token does not divide by 0.

    Returns ``center_tokens(x) / sqrt(var + eps) * gamma + beta`` of shape (..., T, D),
    where var is the mean of the squares of ``center_tokens(x)`` over each token.
    """
    ### BEGIN SOLUTION
    centered = center_tokens(x)  # (..., T, D)
    var = token_mean(centered**2)  # (..., T, 1)
    return centered / np.sqrt(var + eps) * gamma + beta  # (..., T, D)
    ### END SOLUTION
