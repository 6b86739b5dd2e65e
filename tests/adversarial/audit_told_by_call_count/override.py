# Tampering: apply_causal_mask has the in-place bug except on the first call its process makes.
# When the watched call ran in a child forked for it alone, it was always the first; now every
# call of the worker is watched, the later ones too.
import builtins


def apply_causal_mask(scores):
    builtins._mask_calls = getattr(builtins, "_mask_calls", 0) + 1
    if builtins._mask_calls == 1:
        scores = scores.copy()
    T = scores.shape[-1]
    future = np.triu(np.ones((T, T), dtype=bool), k=1)
    scores[..., future] = -np.inf  # the bug, after the first call: no copy
    return scores
