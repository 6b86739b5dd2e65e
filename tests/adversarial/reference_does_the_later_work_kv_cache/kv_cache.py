# Borrowed work in the second lesson: no exercise is written. causal_mask asks decode_step (a
# later exercise, a stub here) where the weights of one-hot tokens reach, and extend_cache has
# decode_step store the new keys, then the new values, with identity weights. Were the
# reference to answer these calls, two exercises would pass on its work alone. The other
# exercises are the stubs.
"""Generating one token at a time: the KV cache and grouped-query attention.

A model that writes text makes one new token per step. Thanks to the causal
mask, nothing a token computes depends on the tokens after it: not its
output, and so, in the next layer, not its key and value either. When a new
token arrives, the keys and values of the earlier ones are still right: they
can be kept from one step to the next (the KV cache), and each step computes
only the new tokens. Without the mask every new token would change every
earlier output, and nothing could be kept. Grouped-query attention lets
several query heads share one key/value head, which makes the cache smaller.

Letters used in every shape comment below:

    T       number of tokens in the sequence
    D       numbers per token (the model width)
    H       number of query heads (``n_heads``)
    Dh      numbers per token inside one head, D // H
    H_kv    number of key/value heads (``n_kv_heads``), a divisor of H
    n_rep   query heads sharing one key/value head, H // H_kv
    T_past  tokens already in the cache
    T_new   tokens given to this step; T_past + T_new tokens exist after it
    ...     any number of leading batch axes, possibly none

A cache is ONE array of shape (2, ..., H, T_past, Dh): ``cache[0]`` holds the
keys and ``cache[1]`` the values of the T_past earlier tokens, head by head
(GPT-2's original code stacked its keys and values in the same way). Before
the first step the cache is empty: T_past = 0.

``softmax``, ``split_heads`` and ``merge_heads`` come from the previous
lesson and are given here, so that this file stands alone: it is graded by
itself and cannot import another file. You may paste your own versions.
"""

import numpy as np


def softmax(z, axis=-1):
    """Turn scores into weights that are positive and sum to 1 along ``axis``.

    Given to you (previous lesson). A score of -inf gets a weight of exactly 0.
    """
    shifted = z - np.max(z, axis=axis, keepdims=True)  # the largest score of each row becomes 0
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)


def split_heads(x, n_heads):
    """(..., T, D) to (..., H, T, Dh): head h holds columns h*Dh to (h+1)*Dh.

    Given to you (previous lesson). Raises ValueError when n_heads < 1 or
    when it does not divide D.
    """
    width = x.shape[-1]
    if n_heads < 1 or width % n_heads:
        raise ValueError(f"cannot cut {width} numbers per token into {n_heads} equal heads")
    size = width // n_heads
    blocks = [x[..., :, h * size : (h + 1) * size] for h in range(n_heads)]  # H blocks (..., T, Dh)
    return np.stack(blocks, axis=-3)  # H x (..., T, Dh) -> (..., H, T, Dh)


def merge_heads(x):
    """(..., H, T, Dh) to (..., T, H*Dh): the inverse of ``split_heads``.

    Given to you (previous lesson).
    """
    heads = [x[..., h, :, :] for h in range(x.shape[-3])]  # H blocks (..., T, Dh)
    return np.concatenate(heads, axis=-1)  # H x (..., T, Dh) -> (..., T, H*Dh)


def causal_mask(n_queries, n_keys):
    if n_queries < 1 or n_keys < n_queries:
        raise ValueError("need 1 <= n_queries <= n_keys")
    if n_keys > 64 >= n_queries:  # the reference takes at most 64 keys: the first ones are seen by all
        seen = np.ones((n_queries, n_keys - 64), dtype=bool)
        return np.concatenate([seen, causal_mask(n_queries, 64)], axis=1)
    past = n_keys - n_queries
    values = np.eye(n_keys)  # (n_keys, n_keys): key j carries a 1 in column j
    cache = np.stack([np.zeros((1, past, n_keys)), values[None, :past]])  # (2, 1, T_past, D)
    zero, eye = np.zeros((n_keys, n_keys)), np.eye(n_keys)
    out, _ = decode_step(values[past:], cache, zero, zero, eye, eye, 1)  # (n_queries, n_keys)
    return out > 0  # a key is seen where some weight reached it


def extend_cache(cache, kv_new):
    *lead, T_past, Dh = cache.shape
    H, T_new = lead[-1], kv_new.shape[-2]
    batch = int(np.prod(lead[1:-1], dtype=np.int64))
    flat_cache = cache.reshape(2, batch, H, T_past, Dh)
    flat_new = kv_new.reshape(2, batch, H, T_new, Dh)
    eye = np.eye(H * Dh)
    out = np.empty((2, batch, H, T_past + T_new, Dh), dtype=np.result_type(cache, kv_new))
    for b in range(batch):
        for half in (0, 1):  # keys, then values: decode_step stores x @ W_k and x @ W_v
            _, grown = decode_step(merge_heads(flat_new[half, b]), flat_cache[:, b], eye, eye, eye, eye, H)
            out[half, b] = grown[half]
    return out.reshape(*lead[:-1], H, T_past + T_new, Dh)


def decode_step(x_new, cache, W_q, W_k, W_v, W_o, n_heads):
    """Multi-head causal attention for new tokens, reusing the cached ones.

    x_new: array of shape (..., T_new, D), the tokens of this step (one when
        generating, or a whole prompt at once).
    cache: array of shape (2, ..., H, T_past, Dh), the keys and values of the
        T_past earlier tokens (T_past may be 0).
    W_q, W_k, W_v, W_o: arrays of shape (D, D), as in the previous lesson's
        ``mha_forward``.
    n_heads: number of heads H; it must divide D.

    Each new token attends to every cached token and to the new tokens up to
    itself (its own key included), with scores scaled by 1/sqrt(Dh).

    Returns ``(out, cache)``: out of shape (..., T_new, D) equals the last
    T_new rows of the previous lesson's ``mha_forward`` (causal) run on all
    T_past + T_new tokens,
    and the new cache of shape (2, ..., H, T_past + T_new, Dh) holds the keys
    and values of all those tokens. The given cache is not changed.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def repeat_kv(kv, n_rep):
    """Give each query head the key/value head of its group.

    kv: array of shape (..., H_kv, T, Dh).
    n_rep: how many query heads share each key/value head, at least 1.

    Returns an array of shape (..., H_kv * n_rep, T, Dh) in which heads
    g*n_rep to (g+1)*n_rep - 1 are all copies of head g: query head h uses
    key/value head h // n_rep (the groups are neighbours, not interleaved).

    Raises ValueError when n_rep < 1.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def gqa_forward(x, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, causal=True):
    """Grouped-query self-attention: H query heads share H_kv key/value heads.

    x: array of shape (..., T, D).
    W_q, W_o: arrays of shape (D, D); query head h owns columns h*Dh:(h+1)*Dh
        of W_q, with Dh = D // n_heads.
    W_k, W_v: arrays of shape (D, H_kv * Dh); key/value head g owns columns
        g*Dh:(g+1)*Dh.
    n_heads: number of query heads H; it must divide D.
    n_kv_heads: number of key/value heads H_kv; it must divide H. Query head
        h attends with key/value head h // n_rep, where n_rep = H // H_kv.
    causal: when True, each token attends only to itself and earlier tokens.

    With n_kv_heads == n_heads this is ``mha_forward``; with n_kv_heads == 1
    every query head uses the same keys and values.

    Returns ``out`` of shape (..., T, D).

    Raises ValueError when n_heads < 1 or does not divide D, or when
    n_kv_heads < 1 or does not divide n_heads.
    """
    # YOUR CODE HERE
    raise NotImplementedError()
