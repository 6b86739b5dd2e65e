"""Signs of real work: what a check asks besides its own property when a function that does
nothing (zeros, a constant, noise, its input handed back, ValueError for everything) would pass
that property alone. Each sign follows from what the exercise promises, so the right answer
always shows it, and every realistic mistake of tests/catalog/rope/ shows it too, so partial
credit stays partial credit.
"""

from __future__ import annotations

import numpy as np

from grader import expect

from .spec import ATOL, RTOL

#: Checks whose property a do-nothing function has and that ask no sign of work: each pays only
#: when its exercise passes another check in the same run.
WEAK_CHECKS = {
    "rope_angles": ("one_angle_per_position_and_pair",),
    "apply_rope": (
        "result_has_the_shape_and_dtype_of_x",
        "batch_elements_are_turned_alike",
        "x_is_left_alone",
    ),
    "rope_attention_scores": ("one_score_per_query_and_key",),
}


def angles_at_work(got: np.ndarray, *, name: str) -> None:
    """Angles grow with the position: from two positions on, pair 0's angle (column 0) rises
    from each position to the next (by one radian each), and every angle is a number."""
    expect.that(
        got.ndim == 2 and got.shape[0] >= 2 and got.shape[1] >= 1,
        f"{name} has shape {got.shape}: one row per position and one column per pair.",
    )
    expect.that(bool(np.all(np.isfinite(got))), f"{name} holds numbers that are not finite.")
    first = got[:, 0]
    expect.that(
        bool(np.all(np.diff(first) > 0)),
        f"{name}: pair 0's angles {expect.fmt(first)} (column 0) must grow from each position to "
        "the next: a later token is turned further.",
    )


def turn_at_work(got: np.ndarray, x: np.ndarray, positions, *, name: str) -> None:
    """A turn keeps each token's length, and turns some token that does not stand at 0."""
    expect.that(
        isinstance(got, np.ndarray) and got.shape == x.shape,
        f"{name} has shape {np.shape(got)}: it must have the shape of x, {x.shape}.",
    )
    expect.close(
        np.linalg.norm(got.astype(np.float64), axis=-1),
        np.linalg.norm(x.astype(np.float64), axis=-1),
        rtol=1e-5 if got.dtype == np.float32 else RTOL,
        atol=1e-4 if got.dtype == np.float32 else ATOL,
        name=f"the length of each token of {name}",
        what="differs from the length of that token of x (a turn keeps lengths)",
        sides=("x:", f"{name}:"),
    )
    moved = np.asarray(positions) != 0  # (T,) the tokens that must be turned
    if moved.any():
        expect.that(
            not np.array_equal(got[..., moved, :], x[..., moved, :]),
            f"{name} gives back the tokens not at position 0 as they were: each must be turned "
            "by its position's angles.",
        )


def scores_at_work(got: np.ndarray, q: np.ndarray, k: np.ndarray, *, name: str) -> None:
    """Scores are numbers, not one number everywhere (queries and keys here are never all alike
    at every distance), and the first query and key, neither turned, score with the sign of
    their dot product."""
    expect.that(bool(np.all(np.isfinite(got))), f"{name} holds scores that are not finite.")
    plain = np.sum(q[..., 0, :] * k[..., 0, :], axis=-1)  # (...,) dot products at position 0
    first = got[..., 0, 0]
    wrong = (plain != 0) & (np.sign(first) != np.sign(plain))
    expect.that(
        not np.any(wrong),
        f"{name}: the score of query 0 and key 0 is {expect.fmt(first[wrong][:1])} where q[0] . k[0] "
        f"is {expect.fmt(plain[wrong][:1])}: at position 0 nothing is turned, so the score has the "
        "sign of that dot product.",
    )
    expect.that(
        got.size >= 2 and not np.all(got == got.reshape(-1)[0]),
        f"{name} is one number, {expect.fmt(got.reshape(-1)[:1])}, everywhere: the score of a "
        "query and a key depends on their numbers and on how far apart they stand.",
    )
