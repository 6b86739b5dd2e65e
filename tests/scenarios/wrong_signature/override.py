# The head count is called `heads` instead of `n_heads`.
_reference_mha = mha_forward


def mha_forward(x, W_q, W_k, W_v, W_o, heads, causal=True, return_weights=False):
    return _reference_mha(x, W_q, W_k, W_v, W_o, heads, causal, return_weights)
