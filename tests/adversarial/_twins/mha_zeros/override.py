# Honest twin: mha_forward does no work at all and returns zeros of the right shapes. The other
# functions are the reference's.


def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
    *batch, T, D = x.shape
    out = np.zeros_like(x)
    if return_weights:
        return out, np.zeros((*batch, n_heads, T, T), dtype=x.dtype)
    return out
