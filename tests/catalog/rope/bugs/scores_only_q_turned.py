"""rope_attention_scores turns the queries and forgets the keys: the score of query i and
key j then depends on where the query stands, not on how far apart the two are."""

EXERCISE = "rope_attention_scores"
DIAGNOSIS = "scores-only-q-turned"

import numpy as np


def rope_attention_scores(q, k):
    return apply_rope(q) @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5
