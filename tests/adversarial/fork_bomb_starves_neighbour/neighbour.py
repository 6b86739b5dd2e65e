# The neighbour: correct functions, except that mha_forward does its work through a helper
# function it keeps in a dict (an unusual choice). It is graded while the case tries to hold
# the process budget that every sandbox's user shares; it must still get full marks.
_honest_mha = mha_forward


def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
    steps = {"forward": _honest_mha}
    return steps["forward"](x, W_q, W_k, W_v, W_o, n_heads, causal, return_weights)
