"""The scores are multiplied by a 0/1 lower-triangular mask, which turns future scores into 0 rather than -inf."""

EXERCISE = "apply_causal_mask"
DIAGNOSIS = "mask-not-neginf"

import numpy as np


def apply_causal_mask(scores):
    T = scores.shape[-1]
    keep = np.tril(np.ones((T, T), dtype=scores.dtype))  # (T, T): 1 on and below the diagonal, 0 above
    return scores * keep  # broadcasts over the leading axes
