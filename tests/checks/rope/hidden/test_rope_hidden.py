"""Hidden checks: long sequences, Llama 3's base, float32, and the scores both ways round."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from grader import expect
from grader.draw import between
from grader.expect import describe
from grader.marks import graded

from ..strategies import Turning, draw_many, scorings, turnings
from ..test_rope_attention_scores import scored
from ..work import scores_at_work, turn_at_work
from . import oracle

HIDDEN = dict(visibility="hidden")

#: float32 keeps about 7 digits: numbers up to 11 turned by angles up to 40 radians (an angle
#: worked out in float32 is off by a few millionths of a radian), and scores that add up to 64
#: products of such numbers.
F32_TURN = dict(rtol=1e-5, atol=1e-4)
F32_SCORE = dict(rtol=1e-4, atol=1e-3)


@graded("rope_angles", points=3, **HIDDEN)
@given(T=between(100, 1000), pairs=between(32, 64), base=st.sampled_from([10000.0, 500000.0]))
def test_angles_of_a_long_sequence(student, T, pairs, base):
    """Up to 1000 positions and 128 numbers per token, with the original base and Llama 3's
    (500000): every angle follows the formula."""
    Dh = 2 * pairs
    got = student.rope_angles(T, Dh, base)
    name = f"rope_angles({T}, {Dh}, base={base})"
    expect.shape(got, (T, pairs), name=name)
    want = np.outer(np.arange(T, dtype=np.float64), oracle.frequencies(Dh, base))
    expect.close(got, want, rtol=1e-9, atol=1e-9, name=name)


@st.composite
def far_turnings(draw) -> Turning:
    """A few tokens at positions in the thousands, with a large base."""
    T = draw(between(1, 6))
    Dh = 2 * draw(between(1, 32))
    (x,) = draw_many(draw, [(T, Dh)])
    positions = np.array(draw(st.lists(between(1000, 8000), min_size=T, max_size=T)))
    return Turning(x, positions, draw(st.sampled_from([10000.0, 500000.0])))


@graded("apply_rope", points=3, **HIDDEN)
@given(case=far_turnings())
def test_tokens_far_into_a_long_text(student, case):
    """Tokens at positions 1000 to 8000 are turned by their angles (hundreds of turns for the
    fast pairs), with the original base and Llama 3's."""
    got = student.apply_rope(case.x, case.positions, case.base)
    name = f"apply_rope({describe(x=case.x)}, positions in the thousands, base={case.base})"
    expect.shape(got, case.x.shape, name=name)
    expect.close(got, oracle.turned(case.x, case.positions, case.base), rtol=1e-9, atol=1e-8, name=name)


@graded("apply_rope", points=4, **HIDDEN)
@given(case=turnings(given=True, min_tokens=2, dtype=np.float32))
def test_float32_tokens_stay_float32(student, case):
    """float32 tokens give float32 tokens, turned as right as float32 allows."""
    got = student.apply_rope(case.x, case.positions, case.base)
    name = f"apply_rope(float32 {describe(x=case.x)}, positions, base={case.base})"
    expect.shape(got, case.x.shape, name=name)
    expect.dtype(got, np.float32, name=name)
    expect.close(got, oracle.turned(case.x, case.positions, case.base), name=name, **F32_TURN)
    turn_at_work(got, case.x, case.positions, name=name)


@graded("rope_attention_scores", points=3, **HIDDEN)
@given(case=scorings(dtype=np.float32))
def test_float32_q_and_k_give_float32_scores(student, case):
    """float32 queries and keys give float32 scores, as right as float32 allows."""
    got, name = scored(student, case)
    expect.dtype(got, np.float32, name=name)
    expect.close(got, oracle.scores(case.q, case.k), name=name, **F32_SCORE)


@graded("rope_attention_scores", points=3, **HIDDEN)
@given(case=scorings(min_tokens=2))
def test_swapping_q_and_k_transposes_the_scores(student, case):
    """rope_attention_scores(k, q) is rope_attention_scores(q, k) transposed: a dot product
    does not care which side it is taken from."""
    got, name = scored(student, case)
    scores_at_work(got, case.q, case.k, name=name)
    swapped = student.rope_attention_scores(case.k, case.q)
    expect.close(
        swapped,
        np.swapaxes(got, -1, -2),
        rtol=1e-9,
        atol=1e-9,
        name="rope_attention_scores(k, q)",
        what="is not rope_attention_scores(q, k) transposed",
    )
