"""The mistakes students make in this lesson, and the inputs that tell them apart.

Read by the grader when an exercise loses points: it calls the student's function on the
``PROBES`` of that exercise and names each mistake of ``MISTAKES`` that explains every call it
saw. A mistake is what it returns (``returns=``, computed here from the lesson's definitions,
never from the student's code) or a test of the calls seen (``shows=``). Codes are stable: each
bug of tests/catalog/rope/ declares the one that must name it.

Letters as in the lesson: T tokens, Dh numbers per token (Dh // 2 pairs), T_q queries, T_k keys.
"""

from __future__ import annotations

import numpy as np

from grader.arrays import softmax
from grader.diagnosis import Mistake, changed, not_refused

_RNG = np.random.default_rng(20261201)


def _normal(*shape: int) -> np.ndarray:
    return _RNG.standard_normal(shape)


# ----------------------------------------------------------------------------- the probes

PROBES = {
    "rope_angles": [
        {"T": 4, "Dh": 8, "base": 10000.0},  # four pairs: the exponent's mistakes differ
        {"T": 3, "Dh": 6, "base": 100.0},  # another base
        {"T": 5, "Dh": 4, "base": 10.0},
        {"T": 3, "Dh": 5, "base": 10000.0},  # odd: no pairs
    ],
    "apply_rope": [
        {"x": _normal(2, 4, 8), "positions": None, "base": 10000.0},  # a batch axis
        {"x": _normal(5, 6), "positions": None, "base": 100.0},  # none
        {"x": _normal(3, 4), "positions": np.array([5, -2, 0]), "base": 10.0},  # given, out of order
        {"x": _normal(2, 3, 4).astype(np.float32), "positions": None, "base": 10000.0},
        {"x": _normal(3, 5), "positions": None, "base": 10000.0},  # odd: no pairs
    ],
    "rope_attention_scores": [
        {"q": _normal(2, 4, 8), "k": _normal(2, 3, 8)},  # a batch axis, T_q != T_k
        {"q": _normal(5, 6), "k": _normal(5, 6)},
        {"q": _normal(3, 4).astype(np.float32), "k": _normal(4, 4).astype(np.float32)},
        {"q": _normal(2, 5), "k": _normal(3, 5)},  # odd: no pairs
    ],
}


# ----------------------------------------------------------------------------- helpers


def _even(Dh: int) -> None:
    if Dh % 2:
        raise ValueError("Dh must be even")


def _angles(positions, Dh: int, base: float, *, twice: int = 2, first_pair: int = 0, sign: int = -1):
    """(T, Dh // 2): positions[t] * base ** (sign * twice * i / Dh), the pairs numbered from
    ``first_pair``."""
    i = np.arange(first_pair, first_pair + Dh // 2)
    return np.asarray(positions, dtype=float)[:, None] * base ** (sign * twice * i / Dh)


def _turn(x, positions=None, base=10000.0, *, layout="neighbours", backwards=False, **angles):
    """apply_rope, right or with one of the lesson's mistakes (in float64)."""
    T, Dh = x.shape[-2:]
    _even(Dh)
    where = np.arange(T) if positions is None else positions
    a = _angles(where, Dh, base, **angles) * (-1 if backwards else 1)
    cos, sin = np.cos(a), np.sin(a)
    if layout == "halves":
        first, second = x[..., : Dh // 2], x[..., Dh // 2 :]
        return np.concatenate([first * cos - second * sin, first * sin + second * cos], axis=-1)
    out = np.empty(x.shape)
    out[..., 0::2] = x[..., 0::2] * cos - x[..., 1::2] * sin
    out[..., 1::2] = x[..., 0::2] * sin + x[..., 1::2] * cos
    return out


def _angle_mistake(**how):
    """rope_angles with one mistake, still refusing an odd Dh."""

    def returns(T, Dh, base=10000.0):
        _even(Dh)
        return _angles(np.arange(T), Dh, base, **how)

    return returns


def _floor_divided(T, Dh, base=10000.0):
    """-2 * i // Dh: floor division gives -1 for every pair but the first."""
    _even(Dh)
    return np.arange(T)[:, None] * base ** (-2 * np.arange(Dh // 2) // Dh)


def _scores(q, k, *, turn_q=True, turn_k=True, k_backwards=False, scale="sqrt"):
    """rope_attention_scores, right or with one of the lesson's mistakes."""
    Dh = q.shape[-1]
    _even(Dh)
    q_turned = _turn(q) if turn_q else q
    k_turned = _turn(k, -np.arange(k.shape[-2])) if k_backwards else _turn(k) if turn_k else k
    scores = q_turned @ np.swapaxes(k_turned, -1, -2)
    return scores / {"sqrt": np.sqrt(Dh), "Dh": Dh, "none": 1.0}[scale]


def _widened(seen, name: str) -> bool:
    """A float32 argument ``name`` gave a float64 answer (whatever its numbers)."""
    return any(
        s.call.returned
        and isinstance(s.call.value, np.ndarray)
        and s.arguments[name].dtype == np.float32
        and s.call.value.dtype == np.float64
        for s in seen
    )


def _fails_with_batch_axes(name: str):
    """Right on every call whose ``name`` has no batch axis, and not right on some call whose
    ``name`` has one (a wrong answer or an error); float64 calls only, so that a float32 answer
    widened to float64 is not taken for it."""

    def shows(seen) -> bool:
        good = [s for s in seen if not s.refused and s.arguments[name].dtype == np.float64]
        flat = [s for s in good if s.arguments[name].ndim == 2]
        batched = [s for s in good if s.arguments[name].ndim > 2]
        return bool(flat) and all(s.right for s in flat) and any(not s.right for s in batched)

    return shows


def _angles_from(start: int, T: int, Dh: int, base: float) -> np.ndarray:
    """rope_angles with positions start to start + T - 1."""
    _even(Dh)
    return _angles(np.arange(start, start + T), Dh, base)


MISTAKES = {
    "rope_angles": [
        Mistake(
            "angles-half-exponent",
            "The exponent is -i / Dh: it is -2 * i / Dh, so that the last pair turns about "
            "1 / base radians per position (base ** (-(Dh - 2) / Dh)).",
            returns=_angle_mistake(twice=1),
        ),
        Mistake(
            "angles-exponent-sign",
            "The exponent lost its minus sign: each pair must turn SLOWER than the one before, "
            "base ** (-2 * i / Dh).",
            returns=_angle_mistake(sign=+1),
        ),
        Mistake(
            "angles-floor-division",
            "-2 * i // Dh is floor division (-1 for every pair but the first): divide with /, -2 * i / Dh.",
            returns=_floor_divided,
        ),
        Mistake(
            "angles-positions-from-1",
            "The positions start at 1: they are 0 to T - 1, so row 0 is all zeros (the first "
            "token is not turned).",
            returns=lambda T, Dh, base=10000.0: _angles_from(1, T, Dh, base),
        ),
        Mistake(
            "angles-pairs-from-1",
            "The pairs are numbered from 1: pair 0 has exponent 0 and turns exactly 1 radian per position.",
            returns=_angle_mistake(first_pair=1),
        ),
        Mistake(
            "angles-base-ignored",
            "The angles are right for base 10000 only: use the base you are given.",
            returns=lambda T, Dh, base=10000.0: _angle_mistake()(T, Dh, 10000.0),
        ),
        Mistake(
            "angles-transposed",
            "The table is (Dh // 2, T): one ROW per position, one column per pair.",
            returns=lambda T, Dh, base=10000.0: _angle_mistake()(T, Dh, base).T,
        ),
        Mistake(
            "angles-odd-width-accepted",
            "An odd Dh cannot be cut into pairs: raise ValueError.",
            shows=not_refused,
        ),
    ],
    "apply_rope": [
        Mistake(
            "rope-halves",
            "Number i is paired with number i + Dh // 2 (the two halves, GPT-NeoX's layout): "
            "pair the NEIGHBOURS, numbers 2i and 2i + 1 (x[..., 0::2] with x[..., 1::2]).",
            returns=lambda x, positions=None, base=10000.0: _turn(x, positions, base, layout="halves"),
        ),
        Mistake(
            "rope-half-exponent",
            "The pairs' speeds use base ** (-i / Dh): the exponent is -2 * i / Dh.",
            returns=lambda x, positions=None, base=10000.0: _turn(x, positions, base, twice=1),
        ),
        Mistake(
            "rope-turns-backwards",
            "Every pair turns clockwise, by minus its angle: the minus sign goes on the second "
            "number's sine, (a cos - b sin, a sin + b cos).",
            returns=lambda x, positions=None, base=10000.0: _turn(x, positions, base, backwards=True),
        ),
        Mistake(
            "rope-positions-from-1",
            "Without positions, the tokens stand at 0 to T - 1: the first token is not turned.",
            returns=lambda x, positions=None, base=10000.0: _turn(
                x, np.arange(1, x.shape[-2] + 1) if positions is None else positions, base
            ),
        ),
        Mistake(
            "rope-positions-ignored",
            "The positions given are not used: token t must turn by positions[t], not by t.",
            returns=lambda x, positions=None, base=10000.0: _turn(x, None, base),
        ),
        Mistake(
            "rope-batch-axes",
            "Right for x of shape (T, Dh) only: index the last axis, x[..., 0::2], so that any "
            "leading batch axes are kept.",
            shows=_fails_with_batch_axes("x"),
        ),
        Mistake(
            "rope-float64",
            "float32 tokens come back as float64: build the result in x's dtype (cast the cosines "
            "and sines, or the result, with .astype(x.dtype)).",
            shows=lambda seen: _widened(seen, "x"),
        ),
        Mistake(
            "rope-in-place",
            "The x passed in was changed: build a new array (np.empty_like(x)) for the result.",
            shows=changed("x"),
        ),
        Mistake(
            "rope-odd-width-accepted",
            "An odd Dh cannot be cut into pairs: raise ValueError.",
            shows=not_refused,
        ),
    ],
    "rope_attention_scores": [
        Mistake(
            "scores-only-q-turned",
            "Only the queries are turned: turn the keys too (apply_rope(k)), so that a score "
            "depends on how far apart query and key are.",
            returns=lambda q, k: _scores(q, k, turn_k=False),
        ),
        Mistake(
            "scores-not-turned",
            "Neither queries nor keys are turned: these are the first lesson's scores, blind to "
            "positions. Turn both with apply_rope first.",
            returns=lambda q, k: _scores(q, k, turn_q=False, turn_k=False),
        ),
        Mistake(
            "scores-keys-turned-backwards",
            "The keys are turned by minus their positions: turn them forwards like the queries; "
            "the dot product already takes the difference of the angles.",
            returns=lambda q, k: _scores(q, k, k_backwards=True),
        ),
        Mistake(
            "scores-not-scaled",
            "The scores are not divided by sqrt(Dh).",
            returns=lambda q, k: _scores(q, k, scale="none"),
        ),
        Mistake(
            "scores-scaled-by-Dh",
            "The scores are divided by Dh: divide by sqrt(Dh).",
            returns=lambda q, k: _scores(q, k, scale="Dh"),
        ),
        Mistake(
            "scores-softmaxed",
            "These are weights (a softmax was taken): return the scores themselves.",
            returns=lambda q, k: softmax(_scores(q, k)),
        ),
        Mistake(
            "scores-batch-axes",
            "Right for (T, Dh) queries and keys only: .T reverses EVERY axis; swap only the last "
            "two, np.swapaxes(k, -1, -2).",
            shows=_fails_with_batch_axes("q"),
        ),
        Mistake(
            "scores-float64",
            "float32 queries and keys give float64 scores: np.sqrt(Dh) is a float64 number; "
            "divide by Dh ** 0.5 (a Python float) or cast the result.",
            shows=lambda seen: _widened(seen, "q"),
        ),
    ],
}
