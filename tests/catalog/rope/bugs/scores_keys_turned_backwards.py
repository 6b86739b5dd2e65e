"""rope_attention_scores turns the keys by MINUS their positions, to get "relative" angles: the
score then depends on i + j, not on i - j (the turns already make it relative)."""

EXERCISE = "rope_attention_scores"
DIAGNOSIS = "scores-keys-turned-backwards"

import numpy as np


def rope_attention_scores(q, k):
    k_turned = apply_rope(k, -np.arange(k.shape[-2]))
    return apply_rope(q) @ np.swapaxes(k_turned, -1, -2) / q.shape[-1] ** 0.5
