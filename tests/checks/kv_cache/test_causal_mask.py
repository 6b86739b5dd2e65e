"""Checks of causal_mask: the staircase, aligned to the bottom right for the last queries."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from grader import expect
from grader.draw import between
from grader.marks import graded

from .spec import allowed
from .strategies import mask_sizes
from .work import mask_at_work


def name_of(n_queries, n_keys) -> str:
    return f"causal_mask({n_queries}, {n_keys})"


@graded("causal_mask", points=4)
@given(T=between(2, 12))
def test_square_mask_is_the_staircase(student, T):
    """With as many queries as keys, token i sees tokens 0 to i: the first lesson's staircase."""
    got = student.causal_mask(T, T)
    expect.equal(got, np.tril(np.ones((T, T), dtype=bool)), name=name_of(T, T), what="is not the staircase")


@graded("causal_mask", points=5)
@given(sizes=mask_sizes())
def test_query_i_sees_its_past_and_itself(student, sizes):
    """Query i stands at position n_keys - n_queries + i and sees exactly the keys up to there:
    n_keys - n_queries + i + 1 of them (the staircase is aligned to the bottom right)."""
    n_queries, n_keys = sizes
    got = student.causal_mask(n_queries, n_keys)
    name = name_of(n_queries, n_keys)
    expect.shape(got, (n_queries, n_keys), name=name)
    counts = np.sum(got, axis=-1)  # (n_queries,) keys each query sees
    want = n_keys - n_queries + np.arange(n_queries) + 1
    expect.equal(counts, want, name=f"the number of keys each query sees in {name}")
    expect.equal(got, allowed(n_queries, n_keys), name=name)


@graded("causal_mask", points=3)
@given(sizes=mask_sizes())
def test_last_query_sees_every_key(student, sizes):
    """The last query is the newest token: it sees every key, its own included."""
    n_queries, n_keys = sizes
    got = student.causal_mask(n_queries, n_keys)
    name = name_of(n_queries, n_keys)
    expect.shape(got, (n_queries, n_keys), name=name)
    expect.equal(got[-1], np.ones(n_keys, dtype=bool), name=f"the last row of {name}", what="hides a key")
    mask_at_work(got, name=name)


@graded("causal_mask", points=3)
@given(n_keys=between(1, 40), sizes=mask_sizes())
def test_one_decoding_step_sees_the_whole_cache(student, n_keys, sizes):
    """One new token after n_keys - 1 cached ones sees all n_keys keys: the row is all True
    (while with more queries the first one does not see the last key)."""
    got = student.causal_mask(1, n_keys)
    name = name_of(1, n_keys)
    expect.equal(got, np.ones((1, n_keys), dtype=bool), name=name, what="hides a key from the newest token")
    mask_at_work(student.causal_mask(*sizes), name=name_of(*sizes))


@graded("causal_mask", points=2)
@given(sizes=mask_sizes())
def test_boolean_of_shape_queries_by_keys(student, sizes):
    """The mask is a boolean array with one row per query and one column per key."""
    n_queries, n_keys = sizes
    got = student.causal_mask(n_queries, n_keys)
    name = name_of(n_queries, n_keys)
    expect.shape(got, (n_queries, n_keys), name=name)
    expect.dtype(got, np.bool_, name=name)
    mask_at_work(got, name=name)


@st.composite
def bad_sizes(draw) -> tuple[int, int]:
    """No query at all, or more queries than keys."""
    if draw(st.booleans()):
        return draw(between(-2, 0)), draw(between(0, 6))
    n_keys = draw(between(0, 6))
    return n_keys + draw(between(1, 3)), n_keys


@graded("causal_mask", points=3)
@given(bad=bad_sizes(), good=mask_sizes())
def test_impossible_sizes_raise_value_error(student, bad, good):
    """Fewer than one query, or more queries than keys (the queries are among the keys),
    raises ValueError; possible sizes give the mask."""
    mask_at_work(student.causal_mask(*good), name=name_of(*good))
    n_queries, n_keys = bad
    reason = (
        "there must be at least one query"
        if n_queries < 1
        else f"{n_queries} queries cannot be the last tokens of only {n_keys}"
    )
    expect.raises(
        lambda: student.causal_mask(n_queries, n_keys), "ValueError", name=name_of(*bad), reason=reason
    )
