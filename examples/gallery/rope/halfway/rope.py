"""A sample student's rope.py for `python -m grader gallery`: the angles and the turn are
written, the scores not yet."""

import numpy as np


def rope_angles(T, Dh, base=10000.0):
    """The angle each pair of numbers turns by, at each position.

    T: number of positions, 0 to T - 1.
    Dh: numbers per token, an even number (they are cut into Dh // 2 pairs
        of neighbours).
    base: how much slower the last pair turns than the first; 10000 in the
        original Transformer and in most models.

    Returns a float64 array of shape (T, Dh // 2) whose entry [t, i] is

        t * base ** (-2 * i / Dh)

    the angle in radians that pair i of the token at position t turns by.
    Row 0 is all zeros (the first token is not turned), column 0 is
    0, 1, 2, ..., T - 1 (pair 0 turns one radian per position), and along
    a row the angles shrink by the same factor base ** (-2 / Dh) from one
    pair to the next.

    Raises ValueError when Dh is odd: the numbers cannot be cut into pairs.
    """
    # YOUR CODE HERE
    if Dh % 2 != 0:
        raise ValueError("Dh has to be even")
    speeds = base ** (-2 * np.arange(Dh // 2) / Dh)
    return np.arange(T)[:, None] * speeds


def apply_rope(x, positions=None, base=10000.0):
    """Turn each pair of neighbours of each token by the angle of its position.

    x: float array of shape (..., T, Dh), Dh even: the queries (or keys) of
        T tokens. Pair i of token t is (x[..., t, 2*i], x[..., t, 2*i + 1]).
    positions: T numbers, where each token stands; None means 0, 1, ..., T-1.
    base: as in ``rope_angles``.

    Returns a NEW array of the shape and dtype of x (float32 stays float32)
    in which pair i of token t is turned counter-clockwise by the angle

        positions[t] * base ** (-2 * i / Dh)

    (with positions 0 to T - 1 these are the rows of ``rope_angles(T, Dh,
    base)``): with a = that angle,

        out[..., t, 2*i]     = x[..., t, 2*i] * cos(a) - x[..., t, 2*i+1] * sin(a)
        out[..., t, 2*i + 1] = x[..., t, 2*i] * sin(a) + x[..., t, 2*i+1] * cos(a)

    Every batch element is turned alike. x itself is left as it was. The
    pairs are NEIGHBOURS (numbers 0 and 1, 2 and 3, ...), not the two halves
    of the vector (numbers i and i + Dh // 2, as some libraries lay them out).

    Raises ValueError when Dh is odd.
    """
    # YOUR CODE HERE
    T, Dh = x.shape[-2], x.shape[-1]
    if Dh % 2 != 0:
        raise ValueError("Dh has to be even")
    if positions is None:
        positions = np.arange(T)
    angles = np.asarray(positions)[:, None] * base ** (-2 * np.arange(Dh // 2) / Dh)
    c, s = np.cos(angles), np.sin(angles)
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.zeros_like(x)
    out[..., 0::2] = a * c - b * s
    out[..., 1::2] = a * s + b * c
    return out


def rope_attention_scores(q, k):
    """Attention scores of queries and keys turned by their positions.

    q: float array of shape (..., T_q, Dh), the queries of T_q tokens at
        positions 0 to T_q - 1.
    k: float array of shape (..., T_k, Dh), the keys of T_k tokens at
        positions 0 to T_k - 1, with the same leading axes as q.

    Returns an array of shape (..., T_q, T_k) and the dtype of q whose entry
    [i, j] is the dot product of query i turned by position i
    (``apply_rope(q)``) and key j turned by position j (``apply_rope(k)``),
    divided by sqrt(Dh), as in the first lesson's scores. BOTH are turned.

    Because a turn changes a dot product only by the difference of the
    angles, entry [i, j] depends on the positions only through i - j: a
    query and a key at the same position score as if neither were turned.

    Raises ValueError when Dh is odd.
    """
    # YOUR CODE HERE
    raise NotImplementedError()
