"""rope_attention_scores with queries and keys both standing at positions 7, 8, ...: every
position shifted by one offset, which changes no score."""

EXERCISE = "rope_attention_scores"

import numpy as np


def rope_attention_scores(q, k):
    q_turned = apply_rope(q, 7 + np.arange(q.shape[-2]))
    k_turned = apply_rope(k, 7 + np.arange(k.shape[-2]))
    return np.einsum("...id,...jd->...ij", q_turned, k_turned) / q.shape[-1] ** 0.5
