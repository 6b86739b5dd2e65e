"""Inputs of the toy lesson's checks: small token arrays, with or without a leading axis."""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

VALUES = st.floats(-10, 10, allow_nan=False, allow_infinity=False, width=64)


@st.composite
def tokens(draw, *, min_width: int = 1):
    """x of shape (..., T, D): at most one leading axis, T from 1 to 4, D from ``min_width`` to 5."""
    batch = draw(st.lists(st.integers(1, 3), max_size=1))
    shape = (*batch, draw(st.integers(1, 4)), draw(st.integers(min_width, 5)))
    return draw(hnp.arrays(np.float64, shape, elements=VALUES))


@st.composite
def layers(draw):
    """(x, gamma, beta) for layer_norm."""
    x = draw(tokens(min_width=2))
    D = x.shape[-1]
    gamma = draw(hnp.arrays(np.float64, (D,), elements=st.floats(0.5, 2, width=64)))
    beta = draw(hnp.arrays(np.float64, (D,), elements=VALUES))
    return x, gamma, beta
