"""Rotary position embeddings (RoPE): telling attention where each token stands.

Attention by itself does not know the order of the tokens: shuffle them and
every token gets the same blend as before, only shuffled. A model must be
told where each token stands. Rotary embeddings do it by TURNING each query
and key by an angle that grows with the token's position, just before their
scores are taken.

Cut a vector of Dh numbers into Dh // 2 pairs of neighbours: numbers 0 and 1,
numbers 2 and 3, and so on. Read each pair as a point on a plane, and turn
it about the origin. Pair i of the token at position t turns by

    angle[t, i] = t * base ** (-2 * i / Dh)

radians: pair 0 turns 1 radian per position, and each later pair turns
slower than the one before, the last one base ** (-(Dh - 2) / Dh) radians per
position. Like the hands of a clock, the fast pairs tell near positions
apart and the slow ones far positions.

Why turning? A turn keeps a pair's length. And the dot product of two pairs
turned by angles a and b depends only on a - b. So the score of query i and
key j depends on where they stand only through i - j: how far apart they
are, not where the sequence started.

Letters used in every shape comment below:

    T       number of tokens (positions)
    T_q     number of query tokens, T_k number of key tokens
    Dh      numbers per token inside one head (even)
    ...     any number of leading batch axes, possibly none

The turn by angle a of the pair (x0, x1) is the pair

    (x0 * cos(a) - x1 * sin(a),   x0 * sin(a) + x1 * cos(a)),

counter-clockwise: the pair (1, 0) turned by 90 degrees becomes (0, 1).
"""

import numpy as np  # noqa: F401 (your code will use it)


def rope_angles(T, Dh, base=10000.0):
    """The angle each pair of numbers turns by, at each position.

    T: number of positions, 0 to T - 1.
    Dh: numbers per token, an even number (they are cut into Dh // 2 pairs
        of neighbours).
    base: how fast the pairs slow down: the last pair turns nearly base
        times slower than the first. 10000 (the original Transformer's
        choice) in most models; Llama 3 uses 500000.

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
    raise NotImplementedError()


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
    raise NotImplementedError()


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
