"""The full forward pass, on the trusted side: the first lesson's reference ``mha_forward``.

``first_lesson.py`` is a symbolic link to ``solutions/attention.py`` of this course, so the one
reference serves both lessons; a Gradescope bundle copies the file it points to, and no
student release holds it (it sits in hidden/). A student's file never reaches it: the
student's functions run through the ``student`` fixture, this runs here.
"""

from __future__ import annotations

import numpy as np

from ..spec import widened
from .first_lesson import mha_forward


def full_forward(x, W_q, W_k, W_v, W_o, n_heads, *, causal: bool = True) -> np.ndarray:
    """The first lesson's multi-head attention over the whole sequence: (..., T, D)."""
    return mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=causal)


def grouped_forward(x, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, *, causal: bool = True) -> np.ndarray:
    """Grouped-query attention as the first lesson's multi-head attention whose key and value
    projections give query head h the columns of key/value head h // n_rep."""
    n_rep = n_heads // n_kv_heads
    return full_forward(
        x, W_q, widened(W_k, n_kv_heads, n_rep), widened(W_v, n_kv_heads, n_rep), W_o, n_heads, causal=causal
    )
