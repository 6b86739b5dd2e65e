"""Checks of split_heads: one token's D numbers cut into H contiguous slices."""

from dataclasses import dataclass

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from grader import expect
from grader.arrays import head_slices
from grader.draw import SIZES, draw_values
from grader.expect import describe, pretty
from grader.marks import graded

from .strategies import Tokens, indices, tokens
from .work import holds_the_numbers_of


@graded("split_heads", points=3)
@given(case=tokens())
def test_split_shape(student, case):
    """(..., T, D) becomes (..., H, T, D // H), made of the numbers of x."""
    x, H = case.x, case.n_heads
    *lead, T, D = x.shape
    got = student.split_heads(x, H)
    name = f"split_heads({describe(x=x, n_heads=H)})"
    expect.shape(got, (*lead, H, T, D // H), name=name)
    holds_the_numbers_of(got, x, name=name, of="x")


@graded("split_heads", points=6)
@given(case=tokens())
def test_head_h_holds_column_block_h(student, case):
    """Head h of token t is the block of columns h*Dh to (h+1)*Dh of that token."""
    x, H = case.x, case.n_heads
    got = student.split_heads(x, H)
    expect.equal(got, head_slices(x, H), name=f"split_heads({describe(x=x, n_heads=H)})")


@graded("split_heads", points=3)
@given(case=tokens(min_tokens=2), data=st.data())
def test_changing_a_token_changes_only_its_slices(student, case, data):
    """Changing the numbers of token t changes that token's row in every head, nothing else."""
    x, H = case.x, case.n_heads
    T = x.shape[-2]
    t = data.draw(indices(T), label="t")
    before = student.split_heads(x, H)
    changed = x.copy()
    changed[..., t, :] += 1.0
    after = student.split_heads(changed, H)
    name = f"split_heads({describe(x=x, n_heads=H)})"
    expect.shape(before, (*x.shape[:-2], H, T, x.shape[-1] // H), name=name)
    expect.shape(after, before.shape, name=name)
    moved = np.any(after != before, axis=-1)  # (..., H, T): which (head, token) rows changed
    others = np.delete(moved, t, axis=-1)
    expect.that(
        not others.any(),
        f"Changing only token {t} changed the head rows of other tokens in {name}: "
        "each token's numbers must stay in that token's row of every head.",
    )
    expect.that(
        moved[..., t].all(),
        f"Changing token {t} left some head's row for token {t} unchanged in {name}: "
        "every head must get a slice of that token.",
    )


@st.composite
def bad_widths(draw):
    """x of shape (..., T, D) and a head count that cannot split D evenly."""
    batch = SIZES.batch(draw)
    T = draw(st.integers(1, 4))
    H = draw(st.one_of(st.integers(2, SIZES.max_heads + 1), st.integers(-2, 0)))
    if H >= 2:
        D = draw(st.integers(1, 12).filter(lambda w: w % H != 0))
    else:
        D = draw(st.integers(1, 6))
    return Tokens(draw_values(draw, (*batch, T, D)), H)


@dataclass(frozen=True)
class Widths:
    """A width the heads cannot share, and tokens whose width they can share."""

    bad: Tokens
    even: Tokens

    def describe(self) -> str:
        return (
            pretty(x=self.bad.x, n_heads=self.bad.n_heads)
            + "\n"
            + pretty(x_even=self.even.x, n_heads_even=self.even.n_heads)
        )


@st.composite
def widths(draw) -> Widths:
    return Widths(draw(bad_widths()), draw(tokens(batch_axes=False)))


@graded("split_heads", points=4)
@given(case=widths())
def test_rejects_widths_that_do_not_divide(student, case):
    """A width D that H heads cannot share equally (or fewer than 1 head) raises ValueError;
    a width they can share is split."""
    even = case.even
    got = student.split_heads(even.x, even.n_heads)
    name = f"split_heads({describe(x_even=even.x, n_heads_even=even.n_heads)})"
    T, D = even.x.shape
    expect.shape(got, (even.n_heads, T, D // even.n_heads), name=name)
    holds_the_numbers_of(got, even.x, name=name, of="x_even")
    x, H = case.bad.x, case.bad.n_heads
    reason = (
        f"there is no such thing as {H} heads"
        if H < 1
        else f"{x.shape[-1]} numbers cannot be cut into {H} equal heads"
    )
    expect.raises(
        lambda: student.split_heads(x, H),
        "ValueError",
        name=f"split_heads({describe(x=x, n_heads=H)})",
        reason=reason,
    )


@graded("split_heads", points=4)
@given(case=tokens())
def test_no_number_lost_or_invented(student, case):
    """H heads of Dh numbers hold exactly the D numbers of the token, each once."""
    x, H = case.x, case.n_heads
    got = student.split_heads(x, H)
    name = f"split_heads({describe(x=x, n_heads=H)})"
    Dh = x.shape[-1] // H
    expect.that(
        got.ndim == x.ndim + 1 and got.shape[-3] == H and got.shape[-1] == Dh,
        f"{name} has shape {got.shape}: it should hold {H} heads (axis -3) of {Dh} numbers "
        "(the last axis), one more axis than x.",
    )
    expect.that(got.size == x.size, f"{name} holds {got.size} numbers, but x holds {x.size}.")
    holds_the_numbers_of(got, x, name=name, of="x")
