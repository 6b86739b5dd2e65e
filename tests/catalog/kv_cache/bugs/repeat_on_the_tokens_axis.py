"""np.repeat along the tokens axis (-2) instead of the heads axis (-3)."""

EXERCISE = "repeat_kv"
DIAGNOSIS = "repeat-tokens-axis"

import numpy as np


def repeat_kv(kv, n_rep):
    if n_rep < 1:
        raise ValueError("n_rep must be at least 1")
    return np.repeat(kv, n_rep, axis=-2)
