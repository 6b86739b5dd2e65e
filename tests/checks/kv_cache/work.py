"""Signs of real work: what a check asks besides its own property when a function that does
nothing (zeros, a constant, noise, its input handed back, ValueError for everything) would
pass that property alone. Each sign follows from what the exercise promises, so the right
answer always shows it, and every realistic mistake of tests/catalog/kv_cache/ shows it too,
so partial credit stays partial credit.
"""

from __future__ import annotations

import numpy as np

from grader import expect

from .spec import ATOL, RTOL, first_output


def mask_at_work(got: np.ndarray, *, name: str) -> None:
    """With two queries or more, the first query sees the first key and not the last one."""
    expect.that(
        got.ndim == 2 and got.shape[0] >= 2 and got.shape[1] >= 2,
        f"{name} has shape {got.shape}: a mask has one row per query and one column per key.",
    )
    expect.that(
        bool(got[0, 0]) and not bool(got[0, -1]),
        f"{name}: the first query must see the first key (True at [0, 0]) and not the last "
        f"key, which comes after it (False at [0, -1]); got {got[0, 0]!r} and {got[0, -1]!r}.",
    )


def holds_the_numbers_of(got: np.ndarray, *parts: np.ndarray, name: str) -> None:
    """Appending only moves numbers: the result holds exactly the numbers of its inputs."""
    expect.equal(
        np.sort(got, axis=None),
        np.sort(np.concatenate([p.reshape(-1) for p in parts])),
        name=f"the sorted numbers of {name}",
        what="differ from those of cache and kv_new together (each must appear once)",
    )


def first_token_attended(out: np.ndarray, x, W_v, W_o, n_heads: int, n_kv_heads: int, *, name: str) -> None:
    """The first token of a sequence sees only itself: its output is its own value, mixed by W_o,
    whatever the scores (a layer that computes nothing cannot give it)."""
    expect.close(
        out[..., 0, :],
        first_output(x, W_v, W_o, n_heads, n_kv_heads),
        rtol=RTOL,
        atol=ATOL,
        name=f"the first token's output of {name}",
        what="is not that token's own value mixed by W_o (it sees only itself)",
    )
