"""Every function raises ValueError, whatever it is given."""


def causal_mask(n_queries, n_keys):
    raise ValueError("no")


def extend_cache(cache, kv_new):
    raise ValueError("no")


def decode_step(x_new, cache, W_q, W_k, W_v, W_o, n_heads):
    raise ValueError("no")


def repeat_kv(kv, n_rep):
    raise ValueError("no")


def gqa_forward(x, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, causal=True):
    raise ValueError("no")
