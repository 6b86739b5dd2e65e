"""Checks of repeat_kv: each key/value head copied for the query heads of its group."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from grader import expect
from grader.expect import describe
from grader.marks import graded

from .spec import repeated
from .strategies import shared_heads


def repeat(student, case, n_rep=None):
    n_rep = case.n_rep if n_rep is None else n_rep
    got = student.repeat_kv(case.kv, n_rep)
    *lead, H_kv, T, Dh = case.kv.shape
    name = f"repeat_kv({describe(kv=case.kv, n_rep=n_rep)})"
    expect.shape(got, (*lead, H_kv * n_rep, T, Dh), name=name)
    return got, name


@graded("repeat_kv", points=5)
@given(case=shared_heads())
def test_query_head_h_gets_kv_head_h_over_n_rep(student, case):
    """Query head h holds key/value head h // n_rep: the copies of one head are neighbours
    (heads 0, 0, 1, 1 for two groups of two, not 0, 1, 0, 1)."""
    got, name = repeat(student, case)
    expect.equal(got, repeated(case.kv, case.n_rep), name=name)


@graded("repeat_kv", points=2)
@given(case=shared_heads())
def test_n_rep_times_as_many_heads(student, case):
    """The result has H_kv * n_rep heads on axis -3, made of the input's numbers, each n_rep times."""
    got, name = repeat(student, case)
    expect.equal(
        np.sort(got, axis=None),
        np.sort(np.repeat(case.kv.reshape(-1), case.n_rep)),
        name=f"the sorted numbers of {name}",
        what="are not those of kv, each repeated n_rep times",
    )


@graded("repeat_kv", points=2)
@given(case=shared_heads())
def test_one_repetition_changes_nothing(student, case):
    """With n_rep = 1 every query head has a key/value head of its own: kv comes back as it is
    (and with more it is repeated)."""
    got, name = repeat(student, case, 1)
    expect.equal(got, case.kv, name=name, what="differs from kv")
    repeat(student, case)


@graded("repeat_kv", points=3)
@given(case=shared_heads())
def test_each_group_shares_one_head(student, case):
    """The n_rep query heads of a group (heads g*n_rep to (g+1)*n_rep - 1) all hold the same
    key/value head, and the first group holds head 0."""
    got, name = repeat(student, case)
    n = case.n_rep
    for g in range(case.kv.shape[-3]):
        for r in range(1, n):
            expect.equal(
                got[..., g * n + r, :, :],
                got[..., g * n, :, :],
                name=f"head {g * n + r} of {name}",
                what=f"differs from head {g * n} of its group",
            )
    expect.equal(
        got[..., 0, :, :], case.kv[..., 0, :, :], name=f"head 0 of {name}", what="is not head 0 of kv"
    )


@graded("repeat_kv", points=3)
@given(case=shared_heads(), bad=st.integers(-2, 0))
def test_fewer_than_one_repetition_raises_value_error(student, case, bad):
    """n_rep below 1 raises ValueError (a group cannot have no query head); n_rep >= 1 repeats."""
    got, name = repeat(student, case)
    expect.equal(
        got[..., :1, :, :], case.kv[..., :1, :, :], name=f"head 0 of {name}", what="is not head 0 of kv"
    )
    expect.raises(
        lambda: student.repeat_kv(case.kv, bad),
        "ValueError",
        name=f"repeat_kv({describe(kv=case.kv, n_rep=bad)})",
        reason=f"n_rep={bad} query heads cannot share a key/value head",
    )
