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
    """Which keys each query may see, when the queries are the LAST tokens.

    n_queries: number of query tokens, at least 1.
    n_keys: number of key tokens, at least n_queries. The queries are the
        last n_queries of these n_keys tokens: query i stands at position
        n_keys - n_queries + i.

    Returns a boolean array of shape (n_queries, n_keys), True where query i
    may look at key j, that is where j <= n_keys - n_queries + i. So query i
    sees n_keys - n_queries + i + 1 keys, and the last query sees them all.
    With n_queries == n_keys this is the staircase of the previous lesson;
    with one query (one decoding step) the whole row is True.

    The staircase is aligned to the bottom right corner, not the top left:
    aligned top left, the first new token would see only the oldest key.

    Raises ValueError when n_queries < 1 or n_keys < n_queries.
    """
    ### BEGIN SOLUTION
    if n_queries < 1 or n_keys < n_queries:
        raise ValueError(f"need 1 <= n_queries <= n_keys, got n_queries={n_queries}, n_keys={n_keys}")
    offset = n_keys - n_queries  # tokens before the first query: the cached ones
    position = offset + np.arange(n_queries)[:, None]  # (n_queries, 1) where each query stands
    key = np.arange(n_keys)[None, :]  # (1, n_keys) where each key stands
    return key <= position  # (n_queries, n_keys), True on and left of the shifted diagonal
    ### END SOLUTION


def extend_cache(cache, kv_new):
    """Append the keys and values of new tokens to those of earlier tokens.

    cache: array of shape (2, ..., H, T_past, Dh), keys at [0], values at [1].
    kv_new: array of shape (2, ..., H, T_new, Dh), the new tokens' keys and
        values laid out the same way.

    Returns a new array of shape (2, ..., H, T_past + T_new, Dh) in which,
    for every head, the T_past earlier tokens come first, in their order,
    and the T_new new tokens after them. Neither argument is changed.
    """
    ### BEGIN SOLUTION
    return np.concatenate([cache, kv_new], axis=-2)  # (2, ..., H, T_past + T_new, Dh), along the tokens
    ### END SOLUTION


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
    ### BEGIN SOLUTION
    T_new, D = x_new.shape[-2:]
    Dh = D // n_heads
    q = split_heads(x_new @ W_q, n_heads)  # (..., T_new, D) -> (..., H, T_new, Dh)
    k = split_heads(x_new @ W_k, n_heads)  # (..., T_new, D) -> (..., H, T_new, Dh)
    v = split_heads(x_new @ W_v, n_heads)  # (..., T_new, D) -> (..., H, T_new, Dh)

    # store first: a new token must see its own key
    cache = extend_cache(cache, np.stack([k, v]))  # (2, ..., H, T_past + T_new, Dh)
    keys, values = cache[0], cache[1]  # each (..., H, T, Dh) with T = T_past + T_new
    T = keys.shape[-2]

    keys_t = np.swapaxes(keys, -1, -2)  # (..., H, T, Dh) -> (..., H, Dh, T)
    scores = q @ keys_t / np.sqrt(Dh)  # (..., H, T_new, Dh) @ (..., H, Dh, T) -> (..., H, T_new, T)
    scores = np.where(causal_mask(T_new, T), scores, -np.inf)  # (..., H, T_new, T), later keys hidden
    weights = softmax(scores, axis=-1)  # (..., H, T_new, T), each row sums to 1
    heads = weights @ values  # (..., H, T_new, T) @ (..., H, T, Dh) -> (..., H, T_new, Dh)
    out = merge_heads(heads) @ W_o  # (..., T_new, D) @ (D, D) -> (..., T_new, D)
    return out, cache
    ### END SOLUTION


def repeat_kv(kv, n_rep):
    """Give each query head the key/value head of its group.

    kv: array of shape (..., H_kv, T, Dh).
    n_rep: how many query heads share each key/value head, at least 1.

    Returns an array of shape (..., H_kv * n_rep, T, Dh) in which heads
    g*n_rep to (g+1)*n_rep - 1 are all copies of head g: query head h uses
    key/value head h // n_rep (the groups are neighbours, not interleaved).

    Raises ValueError when n_rep < 1.
    """
    ### BEGIN SOLUTION
    if n_rep < 1:
        raise ValueError(f"n_rep must be at least 1, got {n_rep}")
    return np.repeat(kv, n_rep, axis=-3)  # (..., H_kv, T, Dh) -> (..., H_kv * n_rep, T, Dh)
    ### END SOLUTION


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
    ### BEGIN SOLUTION
    T, D = x.shape[-2:]
    if n_heads < 1 or D % n_heads:
        raise ValueError(f"n_heads={n_heads} does not divide the width D={D}")
    if n_kv_heads < 1 or n_heads % n_kv_heads:
        raise ValueError(f"n_kv_heads={n_kv_heads} does not divide n_heads={n_heads}")
    Dh = D // n_heads
    n_rep = n_heads // n_kv_heads
    q = split_heads(x @ W_q, n_heads)  # (..., T, D) -> (..., H, T, Dh)
    k = split_heads(x @ W_k, n_kv_heads)  # (..., T, H_kv*Dh) -> (..., H_kv, T, Dh)
    v = split_heads(x @ W_v, n_kv_heads)  # (..., T, H_kv*Dh) -> (..., H_kv, T, Dh)
    k = repeat_kv(k, n_rep)  # (..., H_kv, T, Dh) -> (..., H, T, Dh)
    v = repeat_kv(v, n_rep)  # (..., H_kv, T, Dh) -> (..., H, T, Dh)

    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(Dh)  # (..., H, T, Dh) @ (..., H, Dh, T) -> (..., H, T, T)
    if causal:
        scores = np.where(causal_mask(T, T), scores, -np.inf)  # (..., H, T, T), the staircase
    weights = softmax(scores, axis=-1)  # (..., H, T, T)
    heads = weights @ v  # (..., H, T, T) @ (..., H, T, Dh) -> (..., H, T, Dh)
    return merge_heads(heads) @ W_o  # (..., T, D) @ (D, D) -> (..., T, D)
    ### END SOLUTION
