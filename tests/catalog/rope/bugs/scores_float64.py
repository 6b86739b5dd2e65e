"""rope_attention_scores divides by np.sqrt(Dh), a float64 number: float32 queries and keys
give float64 scores."""

EXERCISE = "rope_attention_scores"
DIAGNOSIS = "scores-float64"

import numpy as np


def rope_attention_scores(q, k):
    return apply_rope(q) @ np.swapaxes(apply_rope(k), -1, -2) / np.sqrt(q.shape[-1])
