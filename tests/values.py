"""Values a check may pass to a function, drawn for the tests of what compares and writes them
down (tests/test_answers.py, tests/test_written.py), and how two of them are told the same."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

DTYPES = st.sampled_from(["<f8", "<f4", "<i8", "<i4", "|b1", "<c16", "<u2"]).map(np.dtype)
ARRAYS = DTYPES.flatmap(lambda dtype: hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=3, max_side=4)))
PLAIN = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.sampled_from([np.float64(-0.0), np.float64(0.5), np.float32(np.nan), np.int16(-3), np.bool_(True)]),
)


def values(*, dicts: bool = False) -> st.SearchStrategy:
    """Plain values and arrays, nested in tuples and lists (and dictionaries with ``dicts``)."""

    def nested(inner):
        kinds = [st.tuples(inner, inner), st.lists(inner, max_size=3)]
        if dicts:
            kinds.append(st.dictionaries(st.text(max_size=3), inner, max_size=2))
        return st.one_of(*kinds)

    return st.recursive(st.one_of(PLAIN, ARRAYS), nested, max_leaves=4)


def arguments(*, dicts: bool = False) -> st.SearchStrategy:
    """A call's arguments: name -> value."""
    return st.dictionaries(st.sampled_from(["x", "y", "n_heads"]), values(dicts=dicts), max_size=3)


def same(a, b) -> bool:
    """Equal as a call's argument: the same types throughout, arrays and numpy numbers by dtype,
    shape and bytes, anything else by ``repr``."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, np.generic):
        return a.dtype == b.dtype and a.tobytes() == b.tobytes()
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if dataclasses.is_dataclass(a):
        return all(same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    return repr(a) == repr(b)
