"""The mistakes students make in this lesson, and the inputs that tell them apart.

Read by the grader (:mod:`grader.diagnosis`) when an exercise loses points: it calls the
student's function on the ``PROBES`` of that exercise and names each mistake of ``MISTAKES``
that fits what came back. A mistake is either what it returns (``returns=``, computed here
from the definitions in :mod:`.spec`, never from the student's code) or a test of the calls
seen (``shows=``). Codes are stable: tools read them.

Letters as in the lesson: T tokens, D numbers per token, H heads, Dh = D // H.
"""

from __future__ import annotations

import numpy as np

from grader.arrays import head_slices, softmax
from grader.diagnosis import (
    Mistake,
    changed,
    not_refused,
    wrong_beyond,
    wrong_beyond_axes,
    wrong_dtype,
    wrong_shape,
)

from .spec import future

_RNG = np.random.default_rng(20261130)


def _normal(*shape: int) -> np.ndarray:
    return _RNG.standard_normal(shape)


# ----------------------------------------------------------------------------- the probes

_D = 8  # two heads of Dh = 4: scaling by D and by Dh differ
_X = _normal(2, 5, _D)  # (B, T, D)
_WEIGHTS = {name: _normal(_D, _D) / np.sqrt(_D) for name in ("W_q", "W_k", "W_v", "W_o")}

PROBES = {
    "apply_causal_mask": [
        {"scores": _normal(2, 5, 5)},
        {"scores": _normal(5, 5)},
        {"scores": _normal(6, 6)},
        {"scores": _normal(3, 7, 7)},
        {"scores": _normal(2, 3, 3).astype(np.float32)},
        {"scores": _normal(20, 20)},  # past the sizes a mask is often cached for
    ],
    "split_heads": [
        {"x": _normal(2, 3, 6), "n_heads": 3},
        {"x": _normal(3, 8), "n_heads": 2},
        {"x": _normal(2, 3, 6), "n_heads": 4},  # 4 does not divide 6
        {"x": _normal(3, 6), "n_heads": 0},
        {"x": _normal(3, 16), "n_heads": 8},  # more heads than the lesson's examples
        {"x": _normal(1, 2, 1, 3, 6), "n_heads": 3},  # three batch axes
    ],
    "merge_heads": [
        {"x": _normal(2, 3, 4, 2)},  # (B, H, T, Dh)
        {"x": _normal(3, 4, 2)},
        {"x": _normal(1, 2, 1, 3, 4, 2)},  # three batch axes
    ],
    "mha_forward": [
        {"x": _X, **_WEIGHTS, "n_heads": 2, "causal": True, "return_weights": True},
        {"x": _X, **_WEIGHTS, "n_heads": 2, "causal": False, "return_weights": True},
        {"x": _X[0], **_WEIGHTS, "n_heads": 2, "causal": True, "return_weights": False},
        {"x": _X * 300.0, **_WEIGHTS, "n_heads": 2, "causal": True, "return_weights": False},
        {"x": _normal(1, 20, _D), **_WEIGHTS, "n_heads": 2, "causal": True, "return_weights": False},
    ],
}


# ----------------------------------------------------------------------------- helpers


def _masked(scores: np.ndarray, hide: np.ndarray, value: float = -np.inf) -> np.ndarray:
    out = scores.copy()
    out[..., hide] = value
    return out


def _band(T: int, k: int) -> np.ndarray:
    """(T, T) True where key j >= query i + k."""
    return np.triu(np.ones((T, T), dtype=bool), k=k)


def _T(one) -> int:
    return one.arguments["scores"].shape[-1]


def _finite_future(seen) -> bool:
    """Some call kept the past and put finite numbers (0, -1e9, ...) over the future."""
    for s in seen:
        got, scores = s.call.value, s.arguments["scores"]
        if not s.call.returned or s.right or getattr(got, "shape", None) != scores.shape:
            continue
        hide = future(scores.shape[-1])
        kept, covered = got[..., ~hide], got[..., hide]
        if np.allclose(kept, scores[..., ~hide]) and np.isfinite(covered).all():
            if not np.allclose(covered, scores[..., hide]):
                return True
    return False


def _hides_more(seen) -> bool:
    """Some call hid every future score and some of the past too."""
    for s in seen:
        got, scores = s.call.value, s.arguments["scores"]
        if not s.call.returned or s.right or getattr(got, "shape", None) != scores.shape:
            continue
        hide = future(scores.shape[-1])
        if np.isneginf(got[..., hide]).all() and np.isneginf(got[..., ~hide]).any():
            return True
    return False


# ----------------------------------------------------------------------------- heads


def _split(x, n_heads, *, layout="right"):
    *lead, T, D = x.shape
    if n_heads < 1 or D % n_heads:
        raise ValueError("bad n_heads")
    Dh = D // n_heads
    if layout == "right":
        return head_slices(x, n_heads)
    if layout == "no-transpose":
        return x.reshape(*lead, n_heads, T, Dh)
    if layout == "strided":
        return np.moveaxis(x.reshape(*lead, T, Dh, n_heads), -1, -3)
    if layout == "reversed":
        return head_slices(x, n_heads)[..., ::-1, :, :]
    if layout == "heads-first":
        return np.moveaxis(head_slices(x, n_heads), -3, 0)
    raise AssertionError(layout)


def _merge(x, *, layout="right"):
    *lead, H, T, Dh = x.shape
    if layout == "right":
        return np.swapaxes(x, -3, -2).reshape(*lead, T, H * Dh)
    if layout == "no-transpose":
        return x.reshape(*lead, T, H * Dh)
    if layout == "strided":
        return np.moveaxis(x, -3, -1).reshape(*lead, T, H * Dh)
    if layout == "reversed":
        return _merge(x[..., ::-1, :, :])
    if layout == "first-axis":
        return np.concatenate(list(x), axis=-1)
    raise AssertionError(layout)


# ----------------------------------------------------------------------------- attention


def _mha(
    x,
    W_q,
    W_k,
    W_v,
    W_o,
    n_heads,
    causal=True,
    return_weights=False,
    *,
    scale="Dh",
    axis=-1,
    output="W_o",
    values="W_v",
    masking="before",
    transposed=False,
    stable=True,
    split="right",
    merge="right",
    weights_shown="weights",
    shared=False,
    weight_heads="all",
):
    """The forward pass with one thing done differently (each keyword names what).

    ``split="one-head"``: one head over all D numbers; ``shared``: every head weighs the tokens
    by the average of the heads' score tables. Either leaves one table of weights, returned as
    ``weight_heads`` says: ``"all"`` repeated for each of the H heads, ``"one"`` with a head
    axis of 1, ``"none"`` without a head axis."""
    D = x.shape[-1]
    Dh = D // n_heads  # the lesson's Dh, whatever the mistake cuts the heads into
    one_head = split == "one-head"
    H, layout = (1, "right") if one_head else (n_heads, split)
    q = _split(x @ W_q, H, layout=layout)  # (..., H, T, Dh)
    k = _split(x @ W_k, H, layout=layout)
    v = _split(x @ (W_q if values == "W_q" else W_v), H, layout=layout)
    first, second = (k, q) if transposed else (q, k)
    scores = first @ np.swapaxes(second, -1, -2)  # (..., H, T, T)
    scores = scores / {"Dh": np.sqrt(Dh), "D": np.sqrt(D), "none": 1.0, "Dh-unrooted": Dh}[scale]
    if shared:
        scores = scores.mean(axis=-3, keepdims=True)  # (..., 1, T, T), one table for all heads
    T = x.shape[-2]
    hide = future(T)
    masked = causal if masking in ("before", "after") else masking == "always"
    if masked and masking != "after":
        scores = _masked(scores, hide)
    if stable:
        weights = softmax(np.moveaxis(scores, axis, -1))
        weights = np.moveaxis(weights, -1, axis)
    else:
        e = np.exp(scores)
        weights = e / e.sum(axis=-1, keepdims=True)
    if masked and masking == "after":
        weights = np.where(hide, 0.0, weights)
    heads = weights @ v  # (..., H, T, Dh)
    merged = _merge(heads, layout=merge)  # (..., T, D)
    if one_head or shared:
        table = weights[..., 0, :, :]  # (..., T, T)
        weights = {
            "none": table,
            "one": table[..., None, :, :],
            "all": np.broadcast_to(table[..., None, :, :], (*table.shape[:-2], n_heads, *table.shape[-2:])),
        }[weight_heads]
    out = {"W_o": merged @ W_o, "none": merged, "W_o.T": merged @ W_o.T}[output]
    if return_weights:
        return out, (scores if weights_shown == "scores" else weights)
    return out


def _mha_with(**change):
    return lambda **arguments: _mha(**arguments, **change)


def _scale_hint(arguments: dict) -> str:
    D = arguments["x"].shape[-1]
    Dh = D // arguments["n_heads"]
    return (
        f"your output matches scores scaled by 1/sqrt(D) (={1 / np.sqrt(D):.2f}) instead of "
        f"1/sqrt(Dh) (={1 / np.sqrt(Dh):.2f}): scale by the width of one head"
    )


def _unrooted_hint(arguments: dict) -> str:
    Dh = arguments["x"].shape[-1] // arguments["n_heads"]
    return (
        f"your output matches scores divided by Dh (={Dh}) instead of by its square root "
        f"sqrt(Dh) (={np.sqrt(Dh):.2f}): scale the scores by 1/sqrt(Dh)"
    )


#: The ways a mistake that leaves one table of weights for every head may return it: repeated
#: for each head, with a head axis of 1, or with no head axis (see _mha's weight_heads).
_WEIGHT_HEADS = ("all", "one", "none")

MISTAKES = {
    "apply_causal_mask": [
        Mistake(
            "mask-diagonal",
            "the diagonal is hidden too: each token must still see itself (hide only j > i)",
            returns=lambda scores: _masked(scores, _band(scores.shape[-1], 0)),
        ),
        Mistake(
            "mask-inverted",
            "the past is hidden instead of the future: hide the keys after the query (j > i)",
            returns=lambda scores: _masked(scores, ~_band(scores.shape[-1], 0)),
        ),
        Mistake(
            "mask-missing",
            "the scores come back unchanged: nothing hides the future keys",
            returns=lambda scores: scores.copy(),
        ),
        Mistake(
            "mask-leaks-future",
            "the next token is still visible: the hidden part starts one column too far right",
            returns=lambda scores: _masked(scores, _band(scores.shape[-1], 2)),
        ),
        Mistake(
            "mask-not-neginf",
            "the future scores become a finite number instead of -inf, so they still get some "
            "weight after the softmax",
            shows=_finite_future,
        ),
        Mistake(
            "mask-over-masks",
            "past keys are hidden as well as the future ones: only j > i may be hidden",
            shows=_hides_more,
        ),
        Mistake(
            "mutates-input",
            "the caller's scores were changed: work on a copy (scores.copy()) or build a new array",
            shows=changed("scores"),
        ),
        Mistake(
            "hardcoded-size",
            "it works up to some number of tokens only: build the mask from scores.shape[-1]",
            shows=wrong_beyond(_T),
        ),
        Mistake(
            "no-batch-support",
            "it breaks once scores have leading (batch) axes: take T from the last axis and let "
            "the mask broadcast over the others",
            shows=wrong_beyond_axes("scores", 2),
        ),
        Mistake(
            "wrong-dtype",
            "the result has another dtype than the scores (float32 in, float64 out): keep the input's dtype",
            shows=wrong_dtype,
        ),
    ],
    "split_heads": [
        Mistake(
            "reshape-without-transpose",
            "a reshape to (..., H, T, Dh) without a transpose mixes tokens into heads: reshape "
            "to (..., T, H, Dh), then swap the H and T axes",
            returns=lambda x, n_heads: _split(x, n_heads, layout="no-transpose"),
        ),
        Mistake(
            "strided-heads",
            "head h holds every H-th column instead of the block h*Dh:(h+1)*Dh",
            returns=lambda x, n_heads: _split(x, n_heads, layout="strided"),
        ),
        Mistake(
            "head-order",
            "the heads come out in reverse order: head 0 takes the first Dh columns",
            returns=lambda x, n_heads: _split(x, n_heads, layout="reversed"),
        ),
        Mistake(
            "wrong-axis-order",
            "the head axis is put in front of the batch axes, (H, ..., T, Dh): it belongs just "
            "before T, third from the end, as in (..., H, T, Dh)",
            returns=lambda x, n_heads: _split(x, n_heads, layout="heads-first"),
        ),
        Mistake(
            "no-divisibility-check",
            "n_heads < 1, or an n_heads that does not divide D, must raise ValueError",
            shows=not_refused,
        ),
        Mistake(
            "no-batch-support",
            "it breaks once x has leading (batch) axes: unpack the shape as *batch, T, D",
            shows=wrong_beyond_axes("x", 2),
        ),
        Mistake(
            "hardcoded-size",
            "it works up to some number of heads only: nothing in split_heads should depend on "
            "how many heads there are",
            shows=wrong_beyond(lambda s: s.arguments["n_heads"]),
        ),
        Mistake("wrong-shape", "the result does not have the shape (..., H, T, Dh)", shows=wrong_shape),
    ],
    "merge_heads": [
        Mistake(
            "reshape-without-transpose",
            "a reshape to (..., T, H*Dh) without a transpose mixes tokens: swap the H and T axes first",
            returns=lambda x: _merge(x, layout="no-transpose"),
        ),
        Mistake(
            "strided-heads",
            "the heads are interleaved column by column instead of placed side by side",
            returns=lambda x: _merge(x, layout="strided"),
        ),
        Mistake(
            "head-order",
            "the heads are joined in reverse order: head 0 fills the first Dh columns",
            returns=lambda x: _merge(x, layout="reversed"),
        ),
        Mistake(
            "wrong-axis-order",
            "the heads are taken along the first axis, which is a batch axis once there are "
            "leading axes: the head axis is the third from the end",
            returns=lambda x: _merge(x, layout="first-axis"),
        ),
        Mistake(
            "no-batch-support",
            "it breaks once x has leading (batch) axes: unpack the shape as *batch, H, T, Dh",
            shows=wrong_beyond_axes("x", 3),
        ),
        Mistake("wrong-shape", "the result does not have the shape (..., T, H*Dh)", shows=wrong_shape),
    ],
    "mha_forward": [
        Mistake("wrong-scale", _scale_hint, returns=_mha_with(scale="D")),
        Mistake(
            "wrong-scale",
            "your output matches unscaled scores: divide them by sqrt(Dh)",
            returns=_mha_with(scale="none"),
        ),
        Mistake("scale-without-sqrt", _unrooted_hint, returns=_mha_with(scale="Dh-unrooted")),
        Mistake(
            "softmax-axis",
            "each column of weights sums to 1: the softmax ran over the query axis, not over "
            "the keys (the last axis)",
            returns=_mha_with(axis=-2),
        ),
        Mistake(
            "missing-output-projection",
            "the output equals the merged heads without W_o: multiply by W_o last",
            returns=_mha_with(output="none"),
        ),
        Mistake(
            "wrong-projection",
            "the output matches merged heads @ W_o.T: W_o acts on row vectors, as merged @ W_o",
            returns=_mha_with(output="W_o.T"),
        ),
        Mistake(
            "wrong-projection",
            "the values match x @ W_q: the values come from W_v",
            returns=_mha_with(values="W_q"),
        ),
        Mistake(
            "mask-after-softmax",
            "future weights are set to 0 after the softmax, so the rows no longer sum to 1: "
            "mask the scores before it",
            returns=_mha_with(masking="after"),
        ),
        Mistake(
            "causal-flag-ignored",
            "with causal=False the future is still hidden: mask only when causal is True",
            returns=_mha_with(masking="always"),
        ),
        Mistake(
            "mask-missing",
            "with causal=True later tokens are still seen: apply the causal mask to the scores",
            returns=_mha_with(masking="never"),
        ),
        Mistake(
            "scores-transposed",
            "the scores are keys @ queries.T: row i must be query i, so q @ k.T",
            returns=_mha_with(transposed=True),
        ),
        Mistake(
            "unstable-softmax",
            "large scores overflow np.exp: subtract each row's largest score before the softmax",
            returns=_mha_with(stable=False),
        ),
        *(
            Mistake(
                "ignores-n-heads",
                "the output matches one single head over all D numbers: n_heads is ignored",
                returns=_mha_with(split="one-head", scale="D", weight_heads=shown),
            )
            for shown in _WEIGHT_HEADS
        ),
        *(
            Mistake(
                "ignores-n-heads",
                "the output matches one single head over all D numbers, scaled by 1/sqrt(Dh): "
                "n_heads only changed the scale. Cut q, k and v into n_heads heads of Dh numbers "
                "(split_heads), each with its own table of weights",
                returns=_mha_with(split="one-head", weight_heads=shown),
            )
            for shown in _WEIGHT_HEADS
        ),
        *(
            Mistake(
                "heads-share-scores",
                "every head weighs the tokens alike, by the average of the heads' score tables: "
                "each head must turn its own scores into its own weights, (..., H, T, T)",
                returns=_mha_with(shared=True, weight_heads=shown),
            )
            for shown in _WEIGHT_HEADS
        ),
        Mistake(
            "reshape-without-transpose",
            "the heads are cut with a reshape and no transpose: reshape to (..., T, H, Dh), "
            "then swap the H and T axes",
            returns=_mha_with(split="no-transpose"),
        ),
        Mistake(
            "reshape-without-transpose",
            "the heads are joined with a reshape and no transpose: swap the H and T axes before the reshape",
            returns=_mha_with(merge="no-transpose"),
        ),
        Mistake(
            "reshape-without-transpose",
            "the heads are cut and joined with reshapes and no transpose: reshape to "
            "(..., T, H, Dh), then swap the H and T axes (and back the same way)",
            returns=_mha_with(split="no-transpose", merge="no-transpose"),
        ),
        Mistake(
            "hardcoded-size",
            "it works up to some number of tokens only: build the mask from the sequence's own length T",
            shows=wrong_beyond(lambda s: s.arguments["x"].shape[-2]),
        ),
        Mistake(
            "weights-before-softmax",
            "with return_weights=True the scores come back instead of the weights (after the softmax)",
            returns=_mha_with(weights_shown="scores"),
        ),
    ],
}
