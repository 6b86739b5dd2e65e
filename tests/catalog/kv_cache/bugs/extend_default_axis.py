"""np.concatenate without an axis joins along axis 0: keys and values of the two become four."""

EXERCISE = "extend_cache"
DIAGNOSIS = "cache-axis-0"

import numpy as np


def extend_cache(cache, kv_new):
    return np.concatenate([cache, kv_new])
