# Honest twin: apply_causal_mask does no work at all and returns zeros of the right shape and
# dtype. The other functions are the reference's.


def apply_causal_mask(scores):
    return np.zeros_like(scores)
