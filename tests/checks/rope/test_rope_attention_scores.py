"""Checks of rope_attention_scores: turned queries dotted with turned keys, over sqrt(Dh)."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from grader import expect
from grader.expect import describe
from grader.marks import graded

from . import spec
from .spec import ATOL, RTOL
from .strategies import repeated, scorings
from .work import scores_at_work


def scored(student, case):
    """The student's scores for the case, shape checked: (result, name)."""
    got = student.rope_attention_scores(case.q, case.k)
    name = f"rope_attention_scores({describe(q=case.q, k=case.k)})"
    expect.shape(got, (*case.q.shape[:-1], case.k.shape[-2]), name=name)
    return got, name


@graded("rope_attention_scores", points=2)
@given(case=scorings(min_tokens=2))
def test_one_score_per_query_and_key(student, case):
    """The scores have one row per query and one column per key: shape (..., T_q, T_k)."""
    got, name = scored(student, case)
    scores_at_work(got, case.q, case.k, name=name)


@graded("rope_attention_scores", points=8)
@given(case=scorings(min_tokens=2))
def test_turned_q_dot_turned_k_over_sqrt_Dh(student, case):
    """Score [i, j] is query i turned by position i, dotted with key j turned by position j,
    divided by sqrt(Dh)."""
    got, name = scored(student, case)
    expect.close(got, spec.scores(case.q, case.k), rtol=RTOL, atol=ATOL, name=name)


@graded("rope_attention_scores", points=4)
@given(case=scorings(min_tokens=2))
def test_same_position_scores_as_if_unturned(student, case):
    """Query t and key t are turned by the same angles, which cancel: score [t, t] is
    q[t] . k[t] / sqrt(Dh), as without rotary embeddings."""
    got, name = scored(student, case)
    n = case.k.shape[-2]
    diagonal = np.diagonal(got[..., :n, :], axis1=-2, axis2=-1)  # (..., T_k)
    plain = np.sum(case.q[..., :n, :] * case.k, axis=-1) / np.sqrt(case.q.shape[-1])  # (..., T_k)
    expect.close(
        diagonal,
        plain,
        rtol=RTOL,
        atol=ATOL,
        name=f"the scores [t, t] of {name}",
        what="differ from q[t] . k[t] / sqrt(Dh)",
        sides=("q[t] . k[t] / sqrt(Dh):", "score [t, t]:"),
    )
    scores_at_work(got, case.q, case.k, name=name)


@graded("rope_attention_scores", points=6)
@given(case=repeated())
def test_scores_depend_only_on_how_far_apart(student, case):
    """With one query vector and one key vector at every position, score [i, j] depends only on
    i - j: every diagonal of the table holds one number."""
    got, name = scored(student, case)
    scores_at_work(got, case.q, case.k, name=name)
    expect.close(
        got[..., 1:, 1:],
        got[..., :-1, :-1],
        rtol=RTOL,
        atol=ATOL,
        name=f"the scores [i + 1, j + 1] of {name}",
        what="differ from the scores [i, j], one step nearer the start",
        sides=("score [i, j]:", "score [i + 1, j + 1]:"),
    )


@graded("rope_attention_scores", points=2)
@given(case=scorings(min_tokens=2), data=st.data())
def test_batch_elements_are_scored_alike(student, case, data):
    """Each batch element is scored as it would be alone."""
    got, name = scored(student, case)
    scores_at_work(got, case.q, case.k, name=name)
    if case.q.ndim == 2:
        return
    index = tuple(data.draw(st.integers(0, n - 1), label=f"index on axis {a}") for a, n in
                  enumerate(case.q.shape[:-2]))  # fmt: skip
    alone = student.rope_attention_scores(case.q[index], case.k[index])
    expect.close(
        got[index],
        alone,
        rtol=RTOL,
        atol=ATOL,
        name=f"batch element {list(index)} of {name}",
        what="differs from that element scored alone",
        sides=("alone:", "in the batch:"),
    )


@graded("rope_attention_scores", points=2)
@given(case=scorings(min_tokens=2), odd=scorings(odd=True))
def test_odd_Dh_scores_raise_value_error(student, case, odd):
    """Queries and keys with an odd number of numbers cannot be cut into pairs: ValueError."""
    got, name = scored(student, case)
    scores_at_work(got, case.q, case.k, name=name)
    expect.raises(
        lambda: student.rope_attention_scores(odd.q, odd.k),
        "ValueError",
        name=f"rope_attention_scores({describe(q=odd.q, k=odd.k)})",
        reason=f"Dh = {odd.q.shape[-1]} numbers cannot be cut into pairs",
    )
