"""No check of n_rep: n_rep = 0 gives no head at all instead of a ValueError."""

EXERCISE = "repeat_kv"
DIAGNOSIS = "repeat-n-rep-not-checked"

import numpy as np


def repeat_kv(kv, n_rep):
    return np.repeat(kv, max(n_rep, 0), axis=-3)
