"""The lesson's pictures, drawn by the HTML report (:mod:`grader.pictures`).

The lesson's short sentence, "the cat sat on a mat", goes through each attention function the
way the lesson draws it: a table of weights per head, one row per token looking, one column per
token looked at. With the mask, each table is the staircase; with two heads, two tables side by
side. The grader calls the student's function on these arguments as in any check, and the
reference on the same, and the report shows the two beside each other.

Letters as in the lesson: T tokens, D numbers per token, H heads, Dh = D // H.
"""

from __future__ import annotations

import numpy as np

from grader.arrays import softmax
from grader.pictures import Picture

TOKENS = ("the", "cat", "sat", "on", "a", "mat")

_T, _D, _H = len(TOKENS), 8, 2  # two heads of Dh = 4
_RNG = np.random.default_rng(6)
#: One row of numbers per token; fixed, so that every report draws the same sentence.
_X = np.round(_RNG.standard_normal((_T, _D)), 2)  # (T, D)
_W = {
    name: np.round(_RNG.standard_normal((_D, _D)) / np.sqrt(_D), 2) for name in ("W_q", "W_k", "W_v", "W_o")
}
#: The lesson's scores: the row for "cat" is [1, 2, 3] before the mask; the others are drawn.
_SCORES = np.round(_RNG.standard_normal((_T, _T)), 1)  # (T, T)
_SCORES[1, :3] = [1.0, 2.0, 3.0]

PICTURES = {
    "apply_causal_mask": Picture(
        title="softmax of the masked scores: the staircase (one table)",
        arguments={"scores": _SCORES},
        weights=lambda masked: softmax(np.asarray(masked))[None],  # (1, T, T)
    ),
    "mha_forward": Picture(
        title="the weights of each head with causal=True: two staircases side by side",
        arguments={"x": _X, **_W, "n_heads": _H, "causal": True, "return_weights": True},
        weights=lambda got: np.asarray(got[1]),  # (H, T, T)
    ),
}
