"""Checks of center_tokens: each token's numbers, moved to a mean of 0."""

from hypothesis import given

from grader import expect
from grader.marks import graded

from .strategies import tokens


@graded("center_tokens", points=2)
@given(x=tokens())
def test_centering_keeps_the_shape(student, x):
    """The result has the shape of x."""
    expect.shape(student.center_tokens(x), x.shape, name=f"center_tokens(x of shape {x.shape})")


@graded("center_tokens", points=3)
@given(x=tokens())
def test_centering_subtracts_each_token_mean(student, x):
    """Each token loses the mean of its own numbers, and only that."""
    got = student.center_tokens(x)
    name = f"center_tokens(x of shape {x.shape})"
    expect.shape(got, x.shape, name=name)
    expect.close(got, x - x.mean(axis=-1, keepdims=True), name=name, rtol=1e-9, atol=1e-9)


@graded("center_tokens", points=1)
@given(x=tokens())
def test_centering_leaves_x_unchanged(student, x):
    """x itself is not changed."""
    student.audited("center_tokens", x)  # runs where a change cannot be hidden
    expect.that(
        "x" not in student.mutated, "center_tokens changed the `x` you passed in; return a new array."
    )
