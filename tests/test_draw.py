"""The arrays lessons draw (grader.draw): in range, shrunk to tables that trace well, and
written back as a short expression that rebuilds them exactly."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from grader.engine import draw as drawing
from grader.engine.draw import FINEST_STEP, draw_many, rebuilt, table
from grader.engine.expect import pretty, show


@settings(max_examples=300)
@given(
    st.integers(1, 20000),
    st.sampled_from([-10.0, -8.75, -3.0, -1.0, 0.0, 0.5]),
    st.sampled_from([0.5, 1.0, 3.0, 10.0, 11.25]),
    st.sampled_from([None, 1.25, 0.0]),
)
def test_a_table_stays_in_its_range_with_every_entry_different(n, low, high, origin):
    if low >= high or (origin is not None and not low <= origin <= high):
        return
    found = table(n, low=low, high=high, origin=origin)
    if found is None:  # only when not even the finest step fits from the range's low end
        assert low + (n - 1) * FINEST_STEP > high
        return
    start, step = found
    values = start + step * np.arange(float(n))
    assert step >= FINEST_STEP and low <= values.min() and values.max() <= high
    assert len(set(values.tolist())) == n
    if origin is not None and origin + (n - 1) * FINEST_STEP <= high:
        assert start == origin  # the table starts where the lesson asked whenever it can


def _groups(shapes, **kwargs):
    return st.composite(lambda draw: draw_many(draw, shapes, **kwargs))()


@settings(max_examples=200)
@given(_groups([(3, 4), (2, 5, 6)], low=-3.0, high=3.0), _groups([(40, 40)], low=-8.75, high=11.25))
def test_every_drawn_value_is_in_its_range(small, large):
    for a in small:
        assert -3.0 <= a.min() and a.max() <= 3.0
    for a in large:
        assert -8.75 <= a.min() and a.max() <= 11.25


def test_a_failure_that_shows_on_a_table_is_shown_on_one():
    """Where a bug shows on a table, Hypothesis shrinks to it: entry k reads k."""
    (x,) = find(
        _groups([(2, 5)], low=-10.0, high=10.0), lambda arrays: arrays[0].max() - arrays[0].min() >= 1
    )
    assert np.array_equal(x, np.arange(10.0).reshape(2, 5))
    assert show(x).startswith("np.array([[0, 1, 2, 3, 4],")


def test_a_failure_that_needs_other_numbers_is_still_found():
    """Tables do not stand in the way: a bug that no table shows is found on the grid."""
    (x,) = find(_groups([(2, 3)], low=-10.0, high=10.0), lambda arrays: (arrays[0] < 0).sum() >= 2)
    assert (x < 0).sum() >= 2 and -10 <= x.min()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_large_drawn_array_is_written_by_the_call_that_draws_it(dtype):
    """Each array of a group, the second drawn after the first from the same seed included."""
    x, w = find(
        _groups([(2, 17, 16), (33, 31)], low=-3.0, high=3.0, dtype=dtype),
        lambda arrays: arrays[0].std() > 1 and arrays[1].std() > 1,
    )
    for a in (x, w):
        assert show(a).count("np.random.default_rng(") == 1 and "\n" not in show(a)
    space = {"np": np}
    exec(pretty(x=x, w=w), space)
    for name, a in (("x", x), ("w", w)):
        assert (
            np.array_equal(space[name], a) and space[name].dtype == a.dtype and space[name].shape == a.shape
        )


def test_an_array_changed_after_it_was_drawn_is_never_written_by_its_seed():
    """The seed an array was drawn from is used only once it is shown to rebuild that very array:
    a check (or a student's function, run in the checker's process) may have changed it since."""
    (x,) = find(_groups([(2, 17, 16)], low=-3.0, high=3.0), lambda arrays: arrays[0].std() > 1)
    assert rebuilt(x, seeded=True) is not None
    x[1, 2, 3] += 0.75  # in place: the array is no longer what its seed gives
    assert rebuilt(x, seeded=True) is None
    space = {"np": np}
    exec(pretty(x=x), space)
    assert np.array_equal(space["x"], x)


def test_what_an_array_was_drawn_from_goes_with_it():
    (x,) = find(_groups([(2, 17, 16)], low=-3.0, high=3.0), lambda arrays: arrays[0].std() > 1)
    key = id(x)
    assert key in drawing._MADE
    del x
    gc.collect()
    assert key not in drawing._MADE


def test_an_array_of_another_making_is_not_mistaken_for_a_drawn_one():
    """A new array at the address of a drawn one that died is written by its own values."""
    (x,) = find(_groups([(2, 17, 16)], low=-3.0, high=3.0), lambda arrays: arrays[0].std() > 1)
    key = id(x)
    drawing._MADE.pop(key)
    impostor = np.full((2, 17, 16), 0.5)
    impostor[0, 0, 0] = 1.0
    drawing._MADE[id(impostor)] = drawing._Grid(seed=1, before=0, spread=2, centre=0.0, step=0.75)
    try:
        assert rebuilt(impostor, seeded=True) is None
    finally:
        drawing._MADE.pop(id(impostor), None)


@st.composite
def _tokens(draw):
    """A lesson-sized number of tokens, or (large) 10 to 40."""
    return draw(st.integers(10, 40)) if drawing.large(draw) else draw(st.integers(1, 6))


@settings(max_examples=60, database=None, derandomize=True)
@given(data=st.data())
def test_the_grader_knows_a_large_example_and_can_refuse_them(data):
    drawing.drew_large(forget=True)
    T = data.draw(_tokens())
    assert drawing.drew_large(forget=True) == (T >= 10)
    assert not drawing.drew_large()  # forgotten
    with drawing.lesson_sized_only():
        assert data.draw(_tokens()) <= 6
        assert not drawing.drew_large()


def test_refusing_large_examples_ends_with_its_block():
    with pytest.raises(ValueError), drawing.lesson_sized_only():
        raise ValueError
    assert find(_tokens(), lambda T: T >= 10, settings=settings(database=None, derandomize=True)) == 10
