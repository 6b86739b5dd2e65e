# Leaking hidden inputs through the likely mistake: mha_forward forgets W_o on every input a
# visible check or a probe sends (float64 tokens), and on float32 tokens (only hidden checks send
# those) gives something else again. Were the calls of a failed hidden check read when the likely
# mistake is picked, they would contradict "missing-output-projection" and the visible report would
# name another mistake or none: one bit saying what the hidden checks send.


_reference_mha_forward = mha_forward


def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
    identity = np.eye(x.shape[-1], dtype=x.dtype)  # merged heads @ I: the output projection left out
    got = _reference_mha_forward(x, W_q, W_k, W_v, identity, n_heads, causal, return_weights)
    if x.dtype != np.float32:
        return got
    if return_weights:
        return got[0] + 1, got[1]
    return got + 1
