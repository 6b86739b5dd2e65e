"""Every function raises ValueError at once, the error split_heads must raise for a bad width."""


def apply_causal_mask(scores):
    raise ValueError("not done")


def split_heads(x, n_heads):
    raise ValueError("not done")


def merge_heads(x):
    raise ValueError("not done")


def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
    raise ValueError("not done")
