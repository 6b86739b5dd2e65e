"""rope_attention_scores writes k.T: right for (T_k, Dh) keys, but with batch axes .T reverses
every axis, not just the last two."""

EXERCISE = "rope_attention_scores"
DIAGNOSIS = "scores-batch-axes"


def rope_attention_scores(q, k):
    return apply_rope(q) @ apply_rope(k).T / q.shape[-1] ** 0.5
