"""The new tokens are put before the earlier ones."""

EXERCISE = "extend_cache"
DIAGNOSIS = "cache-new-first"

import numpy as np


def extend_cache(cache, kv_new):
    return np.concatenate([kv_new, cache], axis=-2)
