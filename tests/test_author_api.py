"""The pieces a lesson takes from the grader instead of writing its own: the size policy
(``grader.draw.SIZES``), the stock tests of a diagnosis (``grader.diagnosis``), plain numpy
(``grader.arrays``), ``describe`` and the ``Example`` protocol (``grader.expect``).

Each on small inputs whose answer is written out by hand, and the size policy's bounds on every
example Hypothesis draws from it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.arrays import head_slices, joined_heads, softmax
from grader.core.diagnosis import look
from grader.diagnosis import (
    Call,
    changed,
    not_of_dtype,
    not_refused,
    wrong_beyond,
    wrong_beyond_axes,
    wrong_dtype,
    wrong_shape,
)
from grader.draw import SIZES, SizePolicy, other_than
from grader.engine.feedback import counterexample_of
from grader.expect import Example, describe, pretty, show

# ----------------------------------------------------------------------------- grader.arrays


def test_softmax_of_a_small_row_and_its_columns():
    z = np.array([[0.0, np.log(3.0)], [1.0, 1.0]])
    np.testing.assert_allclose(softmax(z), [[0.25, 0.75], [0.5, 0.5]], rtol=1e-15)
    columns = softmax(np.array([[0.0, 5.0], [np.log(3.0), 5.0]]), axis=0)
    np.testing.assert_allclose(columns, [[0.25, 0.5], [0.75, 0.5]], rtol=1e-15)


def test_softmax_gives_minus_inf_exactly_nothing_and_never_overflows():
    got = softmax(np.array([1000.0, 1000.0, -np.inf]))
    assert got.tolist() == [0.5, 0.5, 0.0]
    assert softmax(np.array([[2.0, -np.inf, 2.0]], dtype=np.float32)).dtype == np.float32


def test_head_slices_cut_contiguous_columns_and_joined_heads_undo_them():
    x = np.arange(12.0).reshape(2, 6)  # (T, H*Dh) with T = 2, H = 3, Dh = 2
    heads = head_slices(x, 3)
    assert heads.shape == (3, 2, 2)
    assert heads[1].tolist() == [[2.0, 3.0], [8.0, 9.0]]  # head 1: columns 2 and 3
    assert joined_heads(heads).tolist() == x.tolist()
    batch = np.arange(24.0).reshape(2, 2, 6)  # a leading axis is carried along
    assert head_slices(batch, 2)[1, 1].tolist() == [[15.0, 16.0, 17.0], [21.0, 22.0, 23.0]]
    assert np.array_equal(joined_heads(head_slices(batch, 2)), batch)
    assert head_slices(x.astype(np.float32), 3).dtype == np.float32


# ----------------------------------------------------------------------------- grader.expect


def test_describe_names_arrays_by_shape_and_other_values_as_python():
    assert describe(x=np.zeros((2, 3)), n_heads=2, causal=True) == "x of shape (2, 3), n_heads=2, causal=True"
    assert describe() == ""


@dataclass(frozen=True)
class _Case:
    x: np.ndarray
    n: int

    def describe(self) -> str:
        return pretty(x=self.x, n=self.n)


def test_an_object_with_describe_is_an_example_and_is_shown_by_it():
    case = _Case(np.array([1.0, 2.0]), 3)
    assert isinstance(case, Example)
    assert not isinstance(np.zeros(2), Example) and not isinstance(3, Example)
    err = AssertionError()
    err.grader_inputs = {"case": case, "y": np.array([3.0, 5.0])}
    assert counterexample_of(err) == f"{case.describe()}\ny = {show(err.grader_inputs['y'])}"
    assert case.describe() == "x = np.array([1, 2], dtype=float)\nn = 3"


# ----------------------------------------------------------------------------- grader.diagnosis


def _double(x, n=1):
    if n < 1:
        raise ValueError("n must be at least 1")
    return 2 * x


def _seen(*calls: Call):
    return look(calls, _double)


X = np.array([1.0, 2.0])


def test_changed_names_the_argument_changed_in_place():
    seen = _seen(Call({"x": X}, 2 * X, mutated=("x",)))
    assert changed("x")(seen)
    assert not changed("y")(seen)
    assert not changed("x")(_seen(Call({"x": X}, 2 * X)))


def test_not_refused_is_a_call_the_reference_refuses_and_the_student_answered():
    answered = Call({"x": X, "n": 0}, 2 * X)
    refused = Call({"x": X, "n": 0}, returned=False, kind="raised", raised=("ValueError", "Exception"))
    other_error = Call({"x": X, "n": 0}, returned=False, kind="raised", raised=("TypeError", "Exception"))
    assert not_refused(_seen(answered))
    assert not_refused(_seen(other_error))
    assert not not_refused(_seen(refused))
    assert not not_refused(_seen(Call({"x": X}, 3 * X)))  # wrong, but not a call to refuse


def test_wrong_shape_and_wrong_dtype():
    assert wrong_shape(_seen(Call({"x": X}, np.zeros(3))))
    assert not wrong_shape(_seen(Call({"x": X}, 3 * X)))  # wrong numbers, right shape
    assert not wrong_shape(_seen(Call({"x": X, "n": 0}, np.zeros(3))))  # a refused call has no shape to keep
    x32 = X.astype(np.float32)
    assert wrong_dtype(_seen(Call({"x": x32}, 2 * X)))  # float32 in, float64 out
    assert not wrong_dtype(_seen(Call({"x": x32}, 2 * x32)))
    assert not wrong_dtype(_seen(Call({"x": x32}, [2.0, 4.0])))  # not an array: no dtype to compare


def test_not_of_dtype():
    assert not_of_dtype(np.bool_)(_seen(Call({"x": X}, np.array([1.0, 0.0]))))
    assert not not_of_dtype(np.bool_)(_seen(Call({"x": X}, np.array([True, False]))))
    assert not not_of_dtype(np.bool_)(_seen(Call({"x": X, "n": 0}, np.array([1.0]))))  # refused call


def _calls_up_to(right_until: int, sizes=(1, 2, 3, 4)):
    """Calls on x of each size, right up to ``right_until`` elements, wrong beyond."""
    calls = []
    for n in sizes:
        x = np.arange(1.0, n + 1)
        calls.append(Call({"x": x}, 2 * x if n <= right_until else np.zeros(n)))
    return calls


def test_wrong_beyond_is_right_up_to_a_size_and_wrong_past_it():
    size = wrong_beyond(lambda s: s.arguments["x"].size)
    assert size(_seen(*_calls_up_to(2)))
    assert size(_seen(*_calls_up_to(1)))
    assert not size(_seen(*_calls_up_to(4)))  # right everywhere
    assert not size(_seen(*_calls_up_to(0)))  # wrong everywhere: no size where it stops working
    mixed = _seen(
        Call({"x": np.ones(1)}, np.zeros(1)),  # wrong on a small call
        Call({"x": np.ones(2)}, 2 * np.ones(2)),
        Call({"x": np.ones(3)}, np.zeros(3)),
    )
    assert not size(mixed)
    # a call on zeros alone is right by accident for a function that leaves its result at zero
    zeros = _seen(*_calls_up_to(2), Call({"x": np.zeros(4)}, np.zeros(4)))
    assert size(zeros)


def test_wrong_beyond_axes_counts_leading_axes():
    calls = [
        Call({"x": np.ones(2)}, 2 * np.ones(2)),
        Call({"x": np.ones((3, 2))}, np.zeros((3, 2))),
        Call({"x": np.ones((1, 3, 2))}, np.zeros((1, 3, 2))),
    ]
    assert wrong_beyond_axes("x", 1)(_seen(*calls))
    calls[1] = Call({"x": np.ones((3, 2))}, 2 * np.ones((3, 2)))
    assert wrong_beyond_axes("x", 1)(_seen(*calls))  # right up to one batch axis
    calls[2] = Call({"x": np.ones((1, 3, 2))}, 2 * np.ones((1, 3, 2)))
    assert not wrong_beyond_axes("x", 1)(_seen(*calls))


# ----------------------------------------------------------------------------- the size policy


@settings(max_examples=300, deadline=None)
@given(data=st.data(), min_axes=st.integers(0, 2), low=st.integers(1, 6))
def test_the_size_policy_keeps_its_bounds(data, min_axes, low):
    big = SIZES.large(data.draw)
    batch = SIZES.batch(data.draw, min_axes=min_axes, big=big)
    T = SIZES.tokens(data.draw, low=low, big=big)
    if big:
        assert min_axes <= len(batch) <= SIZES.big_max_batch_axes
        assert all(1 <= n <= SIZES.big_max_batch_size for n in batch)
        assert SIZES.big_min_tokens <= T <= SIZES.big_max_tokens
        fitted = SIZES.fit(batch, T * T * SIZES.big_max_heads)
        assert len(fitted) == len(batch)
        assert int(np.prod(fitted)) * T * T * SIZES.big_max_heads <= SIZES.big_numbers
    else:
        assert min_axes <= len(batch) <= SIZES.max_batch_axes
        assert all(1 <= n <= SIZES.max_batch_size for n in batch)
        assert low <= T <= SIZES.max_tokens
    (values,) = SIZES.values(data.draw, [(*batch, T)])
    assert values.shape == (*batch, T)
    assert SIZES.low <= values.min() and values.max() <= SIZES.high
    assert not np.any(values == 0)  # neither the grid nor a table (from 1.25 up) holds 0
    (narrow,) = SIZES.values(data.draw, [(T,)], low=-1.0, high=1.0, dtype=np.float32)
    assert narrow.dtype == np.float32 and -1.0 <= narrow.min() and narrow.max() <= 1.0


def test_large_examples_come_and_shrinking_turns_them_off():
    seen = set()

    @settings(max_examples=200, deadline=None, database=None)
    @given(data=st.data())
    def draw(data):
        seen.add(SIZES.large(data.draw))

    draw()
    assert seen == {False, True}
    assert SIZES.large(lambda strategy: 0) is False  # where shrinking goes


def test_tables_of_the_policy_start_at_its_origin():
    draws = iter([1, 0])  # spread 1, seed 0: a table
    (table,) = SIZES.values(lambda strategy: next(draws), [(2, 3)])
    assert table.reshape(-1).tolist() == [1.25 + k for k in range(6)]


def test_a_policy_of_its_own_and_one_that_makes_no_sense():
    wide = replace(SIZES, max_tokens=9)
    assert wide.max_tokens == 9 and wide.max_heads == SIZES.max_heads
    with pytest.raises(ValueError, match=r"max_tokens=0.*at least 1"):
        SizePolicy(max_tokens=0)
    with pytest.raises(ValueError, match=r"big_min_tokens=50 is above big_max_tokens=40"):
        SizePolicy(big_min_tokens=50)
    with pytest.raises(ValueError, match=r"origin=20.*outside"):
        SizePolicy(origin=20.0)
    assert SizePolicy(max_batch_axes=0).max_batch_axes == 0  # no batch axes at all is a policy


def test_other_than_skips_the_sizes_taken():
    assert other_than(2, (3,), 1, 4) == 2
    assert other_than(3, (3,), 1, 4) == 4
    assert other_than(4, (4, 1), 1, 4) == 2  # wraps round to low, skipping what is taken
    assert other_than(1, (1,), 1, 1) == 1  # nothing else in the range: n itself
