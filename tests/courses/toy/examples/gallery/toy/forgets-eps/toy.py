"""A student's toy.py: layer_norm ignores the eps it is given."""

import numpy as np


def token_mean(x):
    return np.mean(x, axis=-1, keepdims=True)


def center_tokens(x):
    return x - token_mean(x)


def layer_norm(x, gamma, beta, eps=1e-5):
    centered = center_tokens(x)
    var = token_mean(centered**2)
    return centered / np.sqrt(var + 1e-5) * gamma + beta
