"""Checks of layer_norm: normalised tokens, scaled and shifted."""

import numpy as np
from hypothesis import given

from grader import expect
from grader.marks import graded

from .strategies import layers


def expected(x, gamma, beta, eps=1e-5):
    """The lesson's formula, written out once for the checks."""
    centered = x - x.mean(axis=-1, keepdims=True)
    return centered / np.sqrt((centered**2).mean(axis=-1, keepdims=True) + eps) * gamma + beta


@graded("layer_norm", points=2)
@given(case=layers())
def test_layer_norm_keeps_the_shape(student, case):
    """The result has the shape of x."""
    x, gamma, beta = case
    expect.shape(student.layer_norm(x, gamma, beta), x.shape, name=f"layer_norm(x of shape {x.shape})")


@graded("layer_norm", points=4)
@given(case=layers())
def test_layer_norm_follows_the_formula(student, case):
    """Each token is centred, divided by sqrt(var + eps), scaled by gamma and shifted by beta."""
    x, gamma, beta = case
    got = student.layer_norm(x, gamma, beta)
    name = f"layer_norm(x of shape {x.shape})"
    expect.shape(got, x.shape, name=name)
    expect.close(got, expected(x, gamma, beta), name=name, rtol=1e-7, atol=1e-7)
