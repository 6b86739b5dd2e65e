"""Checks of apply_causal_mask: the staircase that hides later tokens."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from grader import expect
from grader.arrays import softmax
from grader.draw import SIZES, between, draw_values, large
from grader.marks import graded

from .spec import ROW_SUM_ATOL, future
from .strategies import score_tables
from .work import mask_at_work

NAME = "apply_causal_mask(scores)"


@graded("apply_causal_mask", points=3)
@given(scores=score_tables())
def test_future_scores_become_minus_inf(student, scores):
    """Every score of a later key (column j > row i) becomes exactly -inf."""
    got = student.apply_causal_mask(scores)
    expect.shape(got, scores.shape, name=NAME)
    ahead = np.broadcast_to(future(scores.shape[-1]), scores.shape)
    expected = np.where(ahead, -np.inf, got)  # only the future entries are judged here
    expect.equal(got, expected, name=NAME, what="is not -inf for a later key")
    mask_at_work(got, scores, name=NAME)


@graded("apply_causal_mask", points=3)
@given(scores=score_tables())
def test_past_and_present_scores_unchanged(student, scores):
    """Scores on and left of the diagonal (j <= i) come back exactly as they went in."""
    got = student.apply_causal_mask(scores)
    expect.shape(got, scores.shape, name=NAME)
    ahead = np.broadcast_to(future(scores.shape[-1]), scores.shape)
    expected = np.where(ahead, got, scores)  # only the past and present are judged here
    expect.equal(got, expected, name=NAME, what="changed a score it must keep")
    mask_at_work(got, scores, name=NAME)


@graded("apply_causal_mask", points=2)
@given(scores=score_tables())
def test_input_is_not_modified(student, scores):
    """The mask returns a new array and leaves the caller's scores untouched."""
    got = student.audited("apply_causal_mask", scores)  # runs where a change cannot be hidden
    expect.that(
        "scores" not in student.mutated,
        "apply_causal_mask changed the `scores` you passed in. Masking in place destroys the "
        "caller's table; make a copy (or use np.where) and mask that instead.",
    )
    expect.shape(got, scores.shape, name=NAME)
    mask_at_work(got, scores, name=NAME)


@graded("apply_causal_mask", points=2)
@given(scores=score_tables(dtype=np.float32))
def test_keeps_shape_and_dtype(student, scores):
    """The masked table has the input's shape and dtype (float32 stays float32)."""
    got = student.apply_causal_mask(scores)
    expect.shape(got, scores.shape, name=NAME)
    expect.dtype(got, scores.dtype, name=NAME)
    mask_at_work(got, scores, name=NAME)


@graded("apply_causal_mask", points=4)
@given(scores=score_tables())
def test_softmax_gives_zero_to_the_future(student, scores):
    """After a softmax, later keys get weight exactly 0, every earlier key or the token
    itself gets some weight above 0, and each row still sums to 1."""
    masked = student.apply_causal_mask(scores)
    expect.shape(masked, scores.shape, name=NAME)
    with np.errstate(invalid="ignore"):
        weights = softmax(masked)  # (..., T, T)
    name = "softmax(apply_causal_mask(scores))"
    expect.rows_sum_to_one(weights, name=name, atol=ROW_SUM_ATOL)
    ahead = np.broadcast_to(future(scores.shape[-1]), scores.shape)
    expect.equal(weights, np.where(ahead, 0.0, weights), name=name, what="gives weight to a later key")
    blocked = ~ahead & ~(weights > 0)
    if blocked.any():
        where = [int(i) for i in np.argwhere(blocked)[0]]
        raise expect.PropertyFailure(
            f"{name} gives weight 0 to the allowed key at index {where}: the mask hides "
            "a token that may be seen (itself or an earlier one). Only keys with j > i are masked."
        )


@graded("apply_causal_mask", points=3)
@given(scores=score_tables(min_batch_axes=1))
def test_each_table_masked_alone(student, scores):
    """With leading axes, every (T, T) table is masked just as it would be on its own."""
    got = student.apply_causal_mask(scores)
    expect.shape(got, scores.shape, name=NAME)
    first = scores[(0,) * (scores.ndim - 2)]  # (T, T), the first table of the stack
    alone = student.apply_causal_mask(first)
    expect.equal(
        got[(0,) * (scores.ndim - 2)],
        alone,
        name="apply_causal_mask(scores)[0, ...]",
        what="differs from masking that table alone",
    )
    expected = np.where(np.broadcast_to(future(scores.shape[-1]), scores.shape), -np.inf, scores)
    expect.equal(got, expected, name=NAME)


@st.composite
def the_cat_sat_on(draw) -> np.ndarray:
    """The lesson's table for "the cat sat" (every row [1, 2, 3]), raised by a drawn amount,
    with the sentence going on for some tokens more ("on a mat ..."), whose scores are drawn."""
    more = (
        draw(between(SIZES.big_max_tokens // 2, SIZES.big_max_tokens)) if large(draw) else draw(between(0, 3))
    )
    T = 3 + more
    scores = draw_values(draw, (T, T), low=-8.0, high=8.0)  # (T, T) the rest of the sentence
    scores[:, :3] = np.array([1.0, 2.0, 3.0]) + draw(between(-4, 4))  # (T, 3) the lesson's scores
    return scores


@graded("apply_causal_mask", points=3)
@given(scores=the_cat_sat_on())
def test_lesson_example_the_cat_sat(student, scores):
    """The lesson's example: the row for "cat" in "the cat sat" with scores [1, 2, 3]
    keeps e^1 : e^2 between "the" and "cat" and gives "sat" nothing (nor any word after it,
    whatever its score; adding the same number to every score changes no weight)."""
    masked = student.apply_causal_mask(scores)
    expect.shape(masked, scores.shape, name=NAME)
    weights = softmax(masked)
    e1, e2 = np.exp(1.0), np.exp(2.0)
    cat = np.zeros(scores.shape[-1])
    cat[:2] = [e1 / (e1 + e2), e2 / (e1 + e2)]  # about [0.269, 0.731, 0, ...]
    expect.close(
        weights[1],
        cat,
        name='the weights of "cat"',
        rtol=1e-12,
        atol=0.0,
        what="do not match the lesson",
    )
