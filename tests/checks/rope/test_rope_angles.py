"""Checks of rope_angles: t * base ** (-2i / Dh) for each position t and pair i."""

import numpy as np
from hypothesis import given

from grader import expect
from grader.expect import describe
from grader.marks import graded

from . import spec
from .spec import ATOL, RTOL
from .strategies import angle_sizes
from .work import angles_at_work


def angles_of(student, case, *, base=True):
    """The student's angles for the case (without base when ``base`` is False), shape checked."""
    if base:
        got = student.rope_angles(case.T, case.Dh, case.base)
        name = f"rope_angles({case.T}, {case.Dh}, base={case.base})"
    else:
        got = student.rope_angles(case.T, case.Dh)
        name = f"rope_angles({case.T}, {case.Dh})"
    expect.shape(got, (case.T, case.Dh // 2), name=name)
    return got, name


@graded("rope_angles", points=3)
@given(case=angle_sizes(min_tokens=2))
def test_one_angle_per_position_and_pair(student, case):
    """The result has one row per position and one column per pair of numbers: shape
    (T, Dh // 2)."""
    got, name = angles_of(student, case)
    angles_at_work(got, name=name)


@graded("rope_angles", points=3)
@given(case=angle_sizes(min_tokens=2))
def test_the_first_position_is_not_turned(student, case):
    """Row 0 is all zeros: the token at position 0 is not turned at all."""
    got, name = angles_of(student, case)
    expect.equal(got[0], np.zeros(case.Dh // 2), name=f"row 0 of {name}", what="is not all zeros")
    angles_at_work(got, name=name)


@graded("rope_angles", points=4)
@given(case=angle_sizes(min_tokens=2))
def test_pair_0_turns_one_radian_per_position(student, case):
    """Pair 0 turns base ** 0 = 1 radian per position, whatever the base: column 0 of
    rope_angles(T, Dh) is 0, 1, ..., T - 1."""
    got, name = angles_of(student, case, base=False)
    expect.close(got[:, 0], np.arange(case.T, dtype=float), rtol=RTOL, atol=ATOL, name=f"column 0 of {name}")


@graded("rope_angles", points=6)
@given(case=angle_sizes(min_tokens=2, min_pairs=2))
def test_angle_is_t_times_base_to_minus_2i_over_Dh(student, case):
    """Entry [t, i] is t * base ** (-2 * i / Dh)."""
    got, name = angles_of(student, case)
    expect.close(got, spec.angles(case.T, case.Dh, case.base), rtol=RTOL, atol=ATOL, name=name)


@graded("rope_angles", points=3)
@given(case=angle_sizes(min_tokens=2, min_pairs=2))
def test_each_pair_turns_slower_than_the_one_before(student, case):
    """Along a row, each pair's angle is the one before it times base ** (-2 / Dh): the pairs
    turn slower and slower, by one factor."""
    got, name = angles_of(student, case)
    angles_at_work(got, name=name)
    with np.errstate(all="ignore"):
        ratio = got[1:, 1:] / got[1:, :-1]  # (T - 1, Dh // 2 - 1) from position 1 on
    factor = case.base ** (-2 / case.Dh)
    expect.close(
        ratio,
        np.full(ratio.shape, factor),
        rtol=RTOL,
        atol=ATOL,
        name=f"each angle over the one before it, from row 1 of {name}",
        what=f"is not base ** (-2 / Dh) = {expect.number(factor)}",
    )


@graded("rope_angles", points=3)
@given(case=angle_sizes(min_tokens=2), odd=angle_sizes(odd=True))
def test_an_odd_Dh_raises_value_error(student, case, odd):
    """An odd Dh cannot be cut into pairs: ValueError (and an even one gives the angles)."""
    got, name = angles_of(student, case)
    angles_at_work(got, name=name)
    expect.raises(
        lambda: student.rope_angles(odd.T, odd.Dh, odd.base),
        "ValueError",
        name=f"rope_angles({describe(T=odd.T, Dh=odd.Dh)})",
        reason=f"Dh = {odd.Dh} numbers cannot be cut into pairs",
    )
