"""No mask at all: the function only returns a copy of the scores, so every token still sees the future."""

EXERCISE = "apply_causal_mask"
DIAGNOSIS = "mask-missing"

import numpy as np


def apply_causal_mask(scores):
    # TODO: mask the future
    return np.array(scores, copy=True)
