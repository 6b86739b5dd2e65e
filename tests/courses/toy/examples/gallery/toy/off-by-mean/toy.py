"""A student's toy.py: center_tokens divides by the mean instead of subtracting it."""

import numpy as np


def token_mean(x):
    return np.mean(x, axis=-1, keepdims=True)


def center_tokens(x):
    return x / token_mean(x)


def layer_norm(x, gamma, beta, eps=1e-5):
    centered = center_tokens(x)
    var = token_mean(centered**2)
    return centered / np.sqrt(var + eps) * gamma + beta
