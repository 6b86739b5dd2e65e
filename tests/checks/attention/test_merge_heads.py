"""Checks of merge_heads: the heads' slices put back side by side."""

from hypothesis import given
from hypothesis import strategies as st

from grader import expect
from grader.arrays import head_slices
from grader.draw import draw_values
from grader.expect import describe
from grader.marks import graded

from .strategies import draw_dims, tokens
from .work import holds_the_numbers_of


@st.composite
def heads(draw):
    """y of shape (..., H, T, Dh)."""
    d = draw_dims(draw)
    return draw_values(draw, (*d.batch, d.H, d.T, d.Dh))


@graded("merge_heads", points=3)
@given(y=heads())
def test_merged_shape(student, y):
    """(..., H, T, Dh) becomes (..., T, H*Dh), made of the numbers of the heads."""
    *batch, H, T, Dh = y.shape
    got = student.merge_heads(y)
    name = f"merge_heads({describe(y=y)})"
    expect.shape(got, (*batch, T, H * Dh), name=name)
    holds_the_numbers_of(got, y, name=name, of="the heads")


@graded("merge_heads", points=4)
@given(y=heads())
def test_head_h_fills_column_block_h(student, y):
    """Token t's row of head h lands in columns h*Dh to (h+1)*Dh of token t."""
    *batch, H, T, Dh = y.shape
    got = student.merge_heads(y)
    name = f"merge_heads({describe(y=y)})"
    expect.shape(got, (*batch, T, H * Dh), name=name)
    for h in range(H):
        expect.equal(
            got[..., :, h * Dh : (h + 1) * Dh],
            y[..., h, :, :],
            name=f"columns {h * Dh}:{(h + 1) * Dh} of {name}",
            what=f"do not hold head {h}",
        )


@graded("merge_heads", points=4)
@given(y=heads())
def test_split_after_merge_gives_back_the_heads(student, y):
    """Splitting the merged result into the same number of heads gives the heads back."""
    H = y.shape[-3]
    got = student.merge_heads(y)
    name = f"merge_heads({describe(y=y)})"
    expect.shape(got, (*y.shape[:-3], y.shape[-2], H * y.shape[-1]), name=name)
    expect.equal(head_slices(got, H), y, name=f"the heads of {name}", what="are not the heads given")


@graded("merge_heads", points=4)
@given(case=tokens())
def test_merge_after_split_gives_back_the_tokens(student, case):
    """Merging the heads of x (split as split_heads promises) gives x back exactly."""
    x, H = case.x, case.n_heads
    got = student.merge_heads(head_slices(x, H))
    expect.equal(got, x, name=f"merge_heads(split_heads(x, {H})) for x of shape {x.shape}", what="is not x")
