"""Checks of apply_rope: each pair of neighbours turned by its position's angle."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from grader import expect
from grader.expect import describe
from grader.marks import graded

from . import spec
from .spec import ATOL, RTOL
from .strategies import turnings
from .work import turn_at_work


def turn(student, case, positions="given"):
    """The student's apply_rope on the case: without positions (and base) when the case has
    none, else with ``positions`` (the case's own by default). Returns (result, name)."""
    if case.positions is None and isinstance(positions, str):
        got = student.apply_rope(case.x)
        name = f"apply_rope({describe(x=case.x)})"
    else:
        p = case.positions if isinstance(positions, str) else positions
        got = student.apply_rope(case.x, p, case.base)
        name = f"apply_rope({describe(x=case.x)}, positions, base={case.base})"
    expect.shape(got, case.x.shape, name=name)
    return got, name


@graded("apply_rope", points=2)
@given(case=turnings(min_tokens=2))
def test_result_has_the_shape_and_dtype_of_x(student, case):
    """The result has the shape and dtype of x: every number of every token, turned."""
    got, name = turn(student, case)
    expect.dtype(got, case.x.dtype, name=name)
    turn_at_work(got, case.x, case.where, name=name)


@graded("apply_rope", points=4)
@given(case=turnings(min_tokens=2))
def test_the_first_token_is_left_as_it_is(student, case):
    """With positions 0 to T - 1, the first token stands at 0: its angles are 0 and it comes
    back as it was."""
    got, name = turn(student, case)
    expect.close(got[..., 0, :], case.x[..., 0, :], rtol=RTOL, atol=ATOL, name=f"token 0 of {name}",
                 what="differs from token 0 of x", sides=("x:", f"{name}:"))  # fmt: skip
    turn_at_work(got, case.x, case.where, name=name)


@graded("apply_rope", points=5)
@given(case=turnings(given=True))
def test_each_pair_keeps_its_length(student, case):
    """A turn keeps the length of each pair of neighbours (x[2i], x[2i + 1]) of each token."""
    got, name = turn(student, case)
    expect.close(
        spec.pair_lengths(got),
        spec.pair_lengths(case.x),
        rtol=RTOL,
        atol=ATOL,
        name=f"the lengths of the pairs (numbers 2i and 2i + 1) of {name}",
        what="differ from those of x",
        sides=("x:", f"{name}:"),
    )
    turn_at_work(got, case.x, case.where, name=name)


@graded("apply_rope", points=8)
@given(case=turnings())
def test_pair_i_of_token_t_turns_by_its_angle(student, case):
    """Pair i of token t (numbers 2i and 2i + 1) is turned counter-clockwise by
    t * 10000 ** (-2i / Dh) radians."""
    got, name = turn(student, case)
    expect.close(got, spec.turned(case.x, case.where, case.base), rtol=RTOL, atol=ATOL, name=name)


@graded("apply_rope", points=5)
@given(case=turnings(given=True))
def test_the_positions_given_are_used(student, case):
    """Given positions (any whole numbers, in any order), token t turns by positions[t] times
    each pair's base ** (-2i / Dh)."""
    got, name = turn(student, case)
    expect.close(got, spec.turned(case.x, case.positions, case.base), rtol=RTOL, atol=ATOL, name=name)


@graded("apply_rope", points=4)
@given(case=turnings(given=True))
def test_negated_positions_turn_the_tokens_back(student, case):
    """Turning by the positions and then by the negated positions gives x back."""
    got, name = turn(student, case)
    turn_at_work(got, case.x, case.where, name=name)
    back = student.apply_rope(got, -case.positions, case.base)
    expect.close(
        back,
        case.x,
        rtol=RTOL,
        atol=ATOL,
        name=f"apply_rope({name}, -positions, base={case.base})",
        what="is not x again",
        sides=("x:", "turned back:"),
    )


@graded("apply_rope", points=4)
@given(case=turnings(given=True, min_tokens=2), offset=st.integers(-20, 20).filter(bool))
def test_shifted_positions_keep_the_dot_products(student, case, offset):
    """Adding one offset to every position changes no dot product between two turned tokens:
    how alike they are depends only on how far apart they stand."""
    got, name = turn(student, case)
    turn_at_work(got, case.x, case.where, name=name)
    shifted, _ = turn(student, case, case.positions + offset)
    expect.that(
        not np.allclose(shifted, got, rtol=RTOL, atol=ATOL),
        f"{name} gives the same tokens when every position moves by {offset}: the tokens must "
        "turn further (only their dot products stay).",
    )
    before = got @ np.swapaxes(got, -1, -2)  # (..., T, T) token with token
    after = shifted @ np.swapaxes(shifted, -1, -2)
    expect.close(
        after,
        before,
        rtol=RTOL,
        atol=1e-7,
        name=f"the dot products of the tokens of {name}",
        what=f"changed when every position moved by {offset}",
    )


@graded("apply_rope", points=2)
@given(case=turnings(given=True), data=st.data())
def test_batch_elements_are_turned_alike(student, case, data):
    """Each batch element is turned as it would be alone: the leading axes only stack them."""
    got, name = turn(student, case)
    turn_at_work(got, case.x, case.where, name=name)
    if case.x.ndim == 2:
        return
    index = tuple(data.draw(st.integers(0, n - 1), label=f"index on axis {a}") for a, n in
                  enumerate(case.x.shape[:-2]))  # fmt: skip
    alone = student.apply_rope(case.x[index], case.positions, case.base)
    expect.close(
        got[index],
        alone,
        rtol=RTOL,
        atol=ATOL,
        name=f"batch element {list(index)} of {name}",
        what="differs from that element turned alone",
        sides=("alone:", "in the batch:"),
    )


@graded("apply_rope", points=2)
@given(case=turnings(min_tokens=2), odd=turnings(odd=True))
def test_odd_Dh_tokens_raise_value_error(student, case, odd):
    """x with an odd number of numbers per token cannot be cut into pairs: ValueError."""
    got, name = turn(student, case)
    turn_at_work(got, case.x, case.where, name=name)
    Dh = odd.x.shape[-1]
    expect.raises(
        lambda: student.apply_rope(odd.x),
        "ValueError",
        name=f"apply_rope({describe(x=odd.x)})",
        reason=f"Dh = {Dh} numbers cannot be cut into pairs",
    )


@graded("apply_rope", points=2)
@given(case=turnings(given=True, min_tokens=2))
def test_x_is_left_alone(student, case):
    """apply_rope returns a new array and leaves the x passed in as it was."""
    got = student.audited("apply_rope", case.x, case.positions, case.base)
    expect.that(
        "x" not in student.mutated,
        "apply_rope changed the x you passed in: the caller may still need it as it was. "
        "Build a new array (np.empty_like(x), then fill it) instead of writing into x.",
    )
    turn_at_work(got, case.x, case.where, name=f"apply_rope({describe(x=case.x)}, positions)")
