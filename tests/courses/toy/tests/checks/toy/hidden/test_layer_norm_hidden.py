"""The hidden check of layer_norm: eps is the one given, not a constant of the student's own."""

from hypothesis import given
from hypothesis import strategies as st

from grader import expect
from grader.marks import graded

from ..strategies import layers
from ..test_layer_norm import expected


@graded("layer_norm", points=2, visibility="hidden")
@given(case=layers(), eps=st.sampled_from([1e-3, 0.5, 4.0]))
def test_layer_norm_uses_the_eps_given(student, case, eps):
    """With another eps, the variance grows by that eps."""
    x, gamma, beta = case
    got = student.layer_norm(x, gamma, beta, eps=eps)
    name = f"layer_norm(x of shape {x.shape}, eps={eps})"
    expect.shape(got, x.shape, name=name)
    expect.close(got, expected(x, gamma, beta, eps), name=name, rtol=1e-7, atol=1e-7)
