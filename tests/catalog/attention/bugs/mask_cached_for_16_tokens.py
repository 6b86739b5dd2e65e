"""The staircase is built once for a context of 16 tokens and sliced; longer sequences break it."""

EXERCISE = "apply_causal_mask"
DIAGNOSIS = "hardcoded-size"

import numpy as np

# the longest sequence we will ever see (so it seemed)
_CONTEXT = 16
_FUTURE = np.triu(np.ones((_CONTEXT, _CONTEXT), dtype=bool), k=1)


def apply_causal_mask(scores):
    T = scores.shape[-1]
    future = _FUTURE[:T, :T]  # (T, T) as long as T <= 16
    masked = scores.copy()
    masked[..., future] = -np.inf
    return masked
