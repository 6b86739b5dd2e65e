"""rope_attention_scores forgets to divide by sqrt(Dh)."""

EXERCISE = "rope_attention_scores"
DIAGNOSIS = "scores-not-scaled"

import numpy as np


def rope_attention_scores(q, k):
    return apply_rope(q) @ np.swapaxes(apply_rope(k), -1, -2)
