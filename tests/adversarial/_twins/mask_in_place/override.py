# Honest twin: apply_causal_mask masks the caller's scores in place and returns them.
# Every value is right; only "scores is left unchanged" is broken.


def apply_causal_mask(scores):
    T = scores.shape[-1]
    future = np.triu(np.ones((T, T), dtype=bool), k=1)
    scores[..., future] = -np.inf  # the bug: no copy
    return scores
