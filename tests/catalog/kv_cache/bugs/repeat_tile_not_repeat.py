"""np.tile instead of np.repeat: the heads come out as 0, 1, 0, 1 (query head h gets key/value
head h % H_kv) instead of 0, 0, 1, 1."""

EXERCISE = "repeat_kv"
DIAGNOSIS = "repeat-tiled"

import numpy as np


def repeat_kv(kv, n_rep):
    if n_rep < 1:
        raise ValueError("n_rep must be at least 1")
    return np.tile(kv, (n_rep, 1, 1))
