"""The mistakes students make in this lesson, and the inputs that tell them apart.

Read by the grader when an exercise loses points: it calls the student's function on the
``PROBES`` of that exercise and names each mistake of ``MISTAKES`` that explains every call it
saw. A mistake is what it returns (``returns=``, computed here from the lesson's definitions,
never from the student's code) or a test of the calls seen (``shows=``). Codes are stable.

Letters as in the lesson: T tokens, D numbers per token, H query heads, H_kv key/value heads,
n_rep = H // H_kv, Dh = D // H, T_past cached tokens, T_new tokens of a step.
"""

from __future__ import annotations

import numpy as np

from grader.arrays import head_slices, joined_heads, softmax
from grader.diagnosis import Mistake, changed, not_of_dtype, not_refused

from .spec import keys_and_values, widened

_RNG = np.random.default_rng(20261130)


def _normal(*shape: int) -> np.ndarray:
    return _RNG.standard_normal(shape)


# ----------------------------------------------------------------------------- the probes

_D = 8  # two heads of Dh = 4 (or four of 2): scaling by D and by Dh differ
_X = _normal(2, 6, _D)  # (B, T, D): 3 tokens cached, then steps
_W = {name: _normal(_D, _D) / np.sqrt(_D) for name in ("W_q", "W_k", "W_v", "W_o")}


def _cache_of(x: np.ndarray, n_heads: int = 2) -> np.ndarray:
    return keys_and_values(x, _W["W_k"], _W["W_v"], n_heads)


def _grouped(n_kv_heads: int, n_heads: int = 4) -> dict:
    width = n_kv_heads * (_D // n_heads)
    return {
        "x": _X,
        "W_q": _W["W_q"],
        "W_k": _normal(_D, width) / np.sqrt(_D),
        "W_v": _normal(_D, width) / np.sqrt(_D),
        "W_o": _W["W_o"],
        "n_heads": n_heads,
        "n_kv_heads": n_kv_heads,
        "causal": True,
    }


PROBES = {
    "causal_mask": [
        {"n_queries": 1, "n_keys": 5},
        {"n_queries": 2, "n_keys": 5},
        {"n_queries": 3, "n_keys": 3},
        {"n_queries": 4, "n_keys": 7},
        {"n_queries": 5, "n_keys": 4},  # more queries than keys
        {"n_queries": 0, "n_keys": 3},  # no query
    ],
    "extend_cache": [
        {"cache": _cache_of(_X[:, :3]), "kv_new": _cache_of(_X[:, 3:5])},  # T_past 3 > T_new 2
        {"cache": _cache_of(_X[0, :4]), "kv_new": _cache_of(_X[0, 4:5])},  # no batch axis
        {"cache": _cache_of(_X[:, :0]), "kv_new": _cache_of(_X[:, :3])},  # the empty cache
    ],
    "decode_step": [
        {"x_new": _X[:, 3:5], "cache": _cache_of(_X[:, :3]), **_W, "n_heads": 2},
        {"x_new": _X[:, 4:5], "cache": _cache_of(_X[:, :4]), **_W, "n_heads": 2},
        {"x_new": _X[:, :3], "cache": _cache_of(_X[:, :0]), **_W, "n_heads": 2},
    ],
    "repeat_kv": [
        {"kv": _normal(2, 2, 3, 4), "n_rep": 2},
        {"kv": _normal(3, 3, 2), "n_rep": 3},
        {"kv": _normal(2, 1, 2, 3, 2), "n_rep": 2},
        {"kv": _normal(2, 3, 2), "n_rep": 0},
        {"kv": _normal(2, 3, 2), "n_rep": -1},
    ],
    "gqa_forward": [
        _grouped(2),
        _grouped(1),
        _grouped(4),
        {**_grouped(2), "causal": False},
        _grouped(0),  # no key/value head
    ],
}


# ----------------------------------------------------------------------------- helpers


def _bottom_right(n_queries: int, n_keys: int, shift: int = 0) -> np.ndarray:
    return np.tril(np.ones((n_queries, n_keys), dtype=bool), k=n_keys - n_queries + shift)


def _checked_sizes(mask):
    """A mask mistake that still refuses impossible sizes, as the reference does."""

    def returns(n_queries, n_keys):
        if n_queries < 1 or n_keys < n_queries:
            raise ValueError("bad sizes")
        return mask(n_queries, n_keys)

    return returns


def _checked_rep(repeat):
    """A repeat_kv mistake that still refuses n_rep below 1."""

    def returns(kv, n_rep):
        if n_rep < 1:
            raise ValueError("bad n_rep")
        return repeat(kv, n_rep)

    return returns


# ----------------------------------------------------------------------------- decoding


def _decode(
    x_new, cache, W_q, W_k, W_v, W_o, n_heads, *, mask="right", scale="Dh", order="store-first",
    past="kept", blend="values", returned="grown",
):  # fmt: skip
    """decode_step, right or with one of the lesson's mistakes."""
    T_new, D = x_new.shape[-2:]
    Dh = D // n_heads
    q, k, v = (head_slices(x_new @ W, n_heads) for W in (W_q, W_k, W_v))  # (..., H, T_new, Dh) each
    grown = np.concatenate([cache, np.stack([k, v])], axis=-2)  # (2, ..., H, T, Dh)
    seen = {"store-first": grown, "attend-first": cache}[order]
    if past == "ignored":
        seen = np.stack([k, v])
    T = seen.shape[-2]
    scores = q @ np.swapaxes(seen[0], -1, -2) / np.sqrt({"Dh": Dh, "D": D}[scale])  # (..., H, T_new, T)
    allowed = {
        "right": lambda: _bottom_right(T_new, T),
        "top-left": lambda: np.tril(np.ones((T_new, T), dtype=bool)),
        "none": lambda: np.ones((T_new, T), dtype=bool),
    }[mask if order == "store-first" else "none"]()
    weights = softmax(np.where(allowed, scores, -np.inf))
    out = joined_heads(weights @ seen[{"values": 1, "keys": 0}[blend]]) @ W_o  # (..., T_new, D)
    kept = {"grown": grown, "given": cache}[returned]
    return out, (np.stack([k, v]) if past == "ignored" else kept)


def _decoding(**mistake):
    return lambda **arguments: _decode(**arguments, **mistake)


# ----------------------------------------------------------------------------- grouped heads


def _gqa(x, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, causal=True, *, groups="repeat", scale="Dh"):
    """gqa_forward, right or with one of the lesson's mistakes."""
    T, D = x.shape[-2:]
    if n_heads < 1 or D % n_heads or n_kv_heads < 1 or n_heads % n_kv_heads:
        raise ValueError("bad head counts")
    Dh, n_rep = D // n_heads, n_heads // n_kv_heads
    if groups == "repeat":
        W_k, W_v = widened(W_k, n_kv_heads, n_rep), widened(W_v, n_kv_heads, n_rep)
    else:  # tile: query head h gets key/value head h % H_kv
        W_k, W_v = np.tile(W_k, n_rep), np.tile(W_v, n_rep)
    width = {"Dh": Dh, "W_k": n_kv_heads * Dh}[scale]
    q, k, v = (head_slices(x @ W, n_heads) for W in (W_q, W_k, W_v))  # (..., H, T, Dh) each
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(width)  # (..., H, T, T)
    if causal:
        scores = np.where(_bottom_right(T, T), scores, -np.inf)
    return joined_heads(softmax(scores) @ v) @ W_o


def _fails_where(seen, broken) -> bool:
    """Right on every call with good head counts except those ``broken(H, H_kv)`` names, where it
    raised; and some call was broken."""
    good = [s for s in seen if not s.refused]
    marked = {id(s) for s in good if broken(s.arguments["n_heads"], s.arguments["n_kv_heads"])}
    return bool(marked) and all((not s.call.returned) if id(s) in marked else s.right for s in good)


MISTAKES = {
    "causal_mask": [
        Mistake(
            "mask-top-left",
            "The staircase starts at the top left corner, so a new token after a cache sees only "
            "the first keys. The queries are the LAST tokens: query i stands at "
            "n_keys - n_queries + i (np.tril(..., k=n_keys - n_queries)).",
            returns=_checked_sizes(
                lambda n_queries, n_keys: np.tril(np.ones((n_queries, n_keys), dtype=bool))
            ),
        ),
        Mistake(
            "mask-hides-itself",
            "The diagonal is one key too far left: no query sees its own token. Query i sees keys "
            "0 to n_keys - n_queries + i, that one included.",
            returns=_checked_sizes(lambda n_queries, n_keys: _bottom_right(n_queries, n_keys, -1)),
        ),
        Mistake(
            "mask-one-too-far",
            "The diagonal is one key too far right: each query sees the token after it.",
            returns=_checked_sizes(lambda n_queries, n_keys: _bottom_right(n_queries, n_keys, +1)),
        ),
        Mistake(
            "mask-inverted",
            "True and False are swapped: the mask must be True where a query MAY look.",
            returns=_checked_sizes(lambda n_queries, n_keys: ~_bottom_right(n_queries, n_keys)),
        ),
        Mistake(
            "mask-not-boolean",
            "The mask holds numbers: build it with dtype=bool.",
            shows=not_of_dtype(np.bool_),
        ),
        Mistake(
            "mask-sizes-not-checked",
            "Fewer than 1 query, or more queries than keys, must raise ValueError.",
            shows=not_refused,
        ),
    ],
    "extend_cache": [
        Mistake(
            "cache-heads-axis",
            "The new tokens are appended to the heads (axis -3): append along the tokens, axis -2.",
            returns=lambda cache, kv_new: np.concatenate([cache, kv_new], axis=-3),
        ),
        Mistake(
            "cache-axis-0",
            "np.concatenate joins along axis 0 unless told otherwise: pass axis=-2, the tokens.",
            returns=lambda cache, kv_new: np.concatenate([cache, kv_new]),
        ),
        Mistake(
            "cache-newest-only",
            "Only the new tokens are kept: the earlier tokens' keys and values must stay in front.",
            returns=lambda cache, kv_new: kv_new,
        ),
        Mistake(
            "cache-new-first",
            "The new tokens come before the earlier ones: the cache keeps token order.",
            returns=lambda cache, kv_new: np.concatenate([kv_new, cache], axis=-2),
        ),
        Mistake(
            "cache-in-place",
            "The cache passed in was changed: build a new array and leave the caller's alone.",
            shows=changed("cache"),
        ),
    ],
    "decode_step": [
        Mistake(
            "step-attends-before-storing",
            "The new tokens attend before their own keys are in the cache, so a token cannot see "
            "itself: extend the cache first, then attend to all of it.",
            returns=_decoding(order="attend-first"),
        ),
        Mistake(
            "step-mask-top-left",
            "The step's mask is aligned to the top left: the new tokens are the LAST rows of the "
            "sequence (use causal_mask(T_new, T_past + T_new), not the first rows of a staircase).",
            returns=_decoding(mask="top-left"),
        ),
        Mistake(
            "step-no-mask",
            "A step of several tokens has no mask: each new token sees the new ones after it.",
            returns=_decoding(mask="none"),
        ),
        Mistake(
            "step-wrong-scale",
            "Scores are divided by sqrt(D), the model width: divide by sqrt(Dh), one head's width.",
            returns=_decoding(scale="D"),
        ),
        Mistake(
            "step-old-cache-returned",
            "The cache returned is the one given: return the grown cache, with this step's tokens.",
            returns=_decoding(returned="given"),
        ),
        Mistake(
            "step-past-ignored",
            "The cache given is not used: each new token must also attend to the cached tokens.",
            returns=_decoding(past="ignored"),
        ),
        Mistake(
            "step-blends-keys",
            "The weights blend the cached keys (cache[0]): blend the values, cache[1].",
            returns=_decoding(blend="keys"),
        ),
    ],
    "repeat_kv": [
        Mistake(
            "repeat-tiled",
            "The copies come out as 0, 1, 0, 1 (np.tile): query head h must get key/value head "
            "h // n_rep, the copies of one head side by side (np.repeat).",
            returns=_checked_rep(lambda kv, n_rep: np.concatenate([kv] * n_rep, axis=-3)),
        ),
        Mistake(
            "repeat-tokens-axis",
            "The tokens are repeated (axis -2): repeat the heads, axis -3.",
            returns=_checked_rep(lambda kv, n_rep: np.repeat(kv, n_rep, axis=-2)),
        ),
        Mistake("repeat-n-rep-not-checked", "n_rep below 1 must raise ValueError.", shows=not_refused),
    ],
    "gqa_forward": [
        Mistake(
            "gqa-tiled-groups",
            "Query head h gets key/value head h % H_kv (np.tile): it must get h // n_rep, so that "
            "the heads of a group are neighbours (np.repeat, or repeat_kv).",
            returns=lambda **a: _gqa(**a, groups="tile"),
        ),
        Mistake(
            "gqa-wrong-scale",
            "Scores are divided by sqrt(H_kv * Dh), the width of W_k: divide by sqrt(Dh).",
            returns=lambda **a: _gqa(**a, scale="W_k"),
        ),
        Mistake(
            "gqa-values-not-repeated",
            "The keys are repeated for the groups but the values are not: repeat both.",
            shows=lambda seen: _fails_where(seen, lambda H, H_kv: 1 < H_kv < H),
        ),
        Mistake(
            "gqa-kv-heads-ignored",
            "Keys and values are cut into n_heads heads: W_k and W_v hold n_kv_heads heads.",
            shows=lambda seen: _fails_where(seen, lambda H, H_kv: H_kv < H),
        ),
        Mistake(
            "gqa-head-counts-not-checked",
            "n_kv_heads must be at least 1 and divide n_heads, or raise ValueError.",
            shows=not_refused,
        ),
    ],
}
