"""rope_attention_scores divides by Dh instead of sqrt(Dh)."""

EXERCISE = "rope_attention_scores"
DIAGNOSIS = "scores-scaled-by-Dh"

import numpy as np


def rope_attention_scores(q, k):
    return apply_rope(q) @ np.swapaxes(apply_rope(k), -1, -2) / q.shape[-1]
