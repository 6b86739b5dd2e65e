"""rope_attention_scores takes the first lesson's scores: neither queries nor keys are turned,
so the scores know nothing of the positions."""

EXERCISE = "rope_attention_scores"
DIAGNOSIS = "scores-not-turned"

import numpy as np


def rope_attention_scores(q, k):
    if q.shape[-1] % 2:
        raise ValueError("Dh must be even")
    return q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]).item()
