"""The lesson's pictures, drawn by the HTML report (:mod:`grader.pictures`).

The sentence "the cat sat on a mat" with every token holding the SAME numbers: whatever a
table shows then comes from the positions alone. Turned by their positions, two tokens are as
alike as they are near, whoever they are: each table is made of stripes parallel to the
diagonal (one number per distance i - j). The grader calls the student's function on these
arguments as in any check, and the reference on the same, and the report shows the two side by
side with the cells that differ outlined.

Letters as in the lesson: T tokens, Dh numbers per token.
"""

from __future__ import annotations

import numpy as np

from grader.arrays import softmax
from grader.pictures import Picture

TOKENS = ("the", "cat", "sat", "on", "a", "mat")

_T, _DH = len(TOKENS), 8
#: One token's numbers, fixed so that every report draws the same picture; the same at every
#: position. Most of its length is in pair 0, the fast one (a radian per position): the shades
#: then run from near 1 to near 0 within six tokens, and come back as that pair turns full circle.
_U = np.array([2.5, 1.0, 1.0, 0.5, 0.5, -0.5, 0.25, 0.5])  # (Dh,)
_X = np.tile(_U, (_T, 1))  # (T, Dh): six copies


def _alike(turned) -> np.ndarray:
    """(1, T, T): how alike tokens i and j are after turning, (1 + cosine) / 2, in [0, 1]."""
    x = np.asarray(turned, dtype=float)
    lengths = np.linalg.norm(x, axis=-1)  # (T,)
    cosine = (x @ x.T) / np.outer(lengths, lengths)  # (T, T)
    return ((1 + np.clip(cosine, -1, 1)) / 2)[None]


PICTURES = {
    "apply_rope": Picture(
        title="how alike two tokens are once turned, (1 + cosine) / 2: the same numbers at "
        "every position, so one shade per distance (stripes along the diagonal)",
        arguments={"x": _X, "positions": None, "base": 10000.0},
        weights=_alike,
    ),
    "rope_attention_scores": Picture(
        title="softmax of the scores when every query and key holds the same numbers: each "
        "token leans on itself and its neighbours, by distance alone",
        arguments={"q": _X, "k": _X},
        weights=lambda scores: softmax(np.asarray(scores, dtype=float))[None],  # (1, T, T)
    ),
}
