"""Hidden checks of mha_forward: agreement with an independent computation."""

from dataclasses import replace

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from grader import expect
from grader.draw import draw_many, draw_values
from grader.marks import graded

from ..spec import ATOL, ATOL_FLOAT32, ROW_SUM_ATOL, RTOL, RTOL_FLOAT32
from ..strategies import Layer, draw_dims, layers
from ..work import layer_at_work
from .oracle import attention_one_head, mha_oracle

HIDDEN = dict(visibility="hidden")


def compare(student, layer, *, causal, rtol=RTOL, atol=ATOL):
    """The student's (out, weights) against the oracle's."""
    name = f"mha_forward(..., n_heads={layer.n_heads}, causal={causal}, return_weights=True)"
    got = student.mha_forward(*layer.args(), causal=causal, return_weights=True)
    expect.is_tuple(got, name=name, length=2)
    x64 = [np.asarray(a, dtype=np.float64) for a in layer.args()[:5]]
    want_out, want_weights = mha_oracle(*x64, layer.n_heads, causal=causal)
    expect.close(got[1], want_weights, rtol=rtol, atol=atol, name=f"the weights of {name}")
    expect.close(got[0], want_out, rtol=rtol, atol=atol, name=f"the output of {name}")
    return got


@graded("mha_forward", points=4, **HIDDEN)
@given(layer=layers(), causal=st.booleans())
def test_matches_a_head_by_head_computation(student, layer, causal):
    """Output and weights equal those of attention computed one head at a time."""
    compare(student, layer, causal=causal)


@graded("mha_forward", points=2, **HIDDEN)
@given(layer=layers(heads=st.just(1)), causal=st.booleans())
def test_one_head_is_plain_attention(student, layer, causal):
    """With one head, mha_forward is single-head attention over the full width, then W_o."""
    x = layer.x
    blended, _ = attention_one_head(x @ layer.W_q, x @ layer.W_k, x @ layer.W_v, causal=causal)
    out = student.mha_forward(*layer.args(), causal=causal)
    expect.close(out, blended @ layer.W_o, rtol=RTOL, atol=ATOL, name="mha_forward(..., n_heads=1)")


@st.composite
def loud_layers(draw):
    """Tokens of size 50..100 with W_q = W_k = I: every score is in the thousands."""
    d = draw_dims(draw)
    x = draw_values(draw, (*d.batch, d.T, d.D), low=50.0, high=100.0)
    W_v, W_o = draw_many(draw, [(d.D, d.D)] * 2, low=-1.0, high=1.0)
    eye = np.eye(d.D)
    return Layer(x, eye, eye, W_v, W_o, n_heads=d.H)


@graded("mha_forward", points=4, **HIDDEN)
@given(layer=loud_layers(), causal=st.booleans())
def test_stable_when_scores_are_in_the_thousands(student, layer, causal):
    """Scores in the thousands still give finite outputs and rows of weights that sum to 1."""
    with np.errstate(all="ignore"):
        got = student.mha_forward(*layer.args(), causal=causal, return_weights=True)
    expect.is_tuple(got, name="mha_forward(..., return_weights=True)", length=2)
    out, weights = got
    expect.shape(weights, (*layer.x.shape[:-2], layer.n_heads, *layer.x.shape[-2:][:1] * 2), name="weights")
    expect.that(
        bool(np.all(np.isfinite(out))) and bool(np.all(np.isfinite(weights))),
        "With scores in the thousands mha_forward gives inf or nan: np.exp overflows. "
        "Subtract each row's largest score before the exponential (a stable softmax).",
    )
    expect.rows_sum_to_one(weights, name="weights", atol=ROW_SUM_ATOL)
    compare(student, layer, causal=causal)


@graded("mha_forward", points=2, **HIDDEN)
@given(layer=layers(), data=st.data())
def test_renumbering_the_heads_changes_nothing(student, layer, data):
    """Reordering the heads consistently in W_q, W_k, W_v (columns) and W_o (rows) keeps the output."""
    H, D = layer.n_heads, layer.x.shape[-1]
    Dh = D // H
    order = data.draw(st.permutations(range(H)), label="head order")
    idx = np.concatenate([np.arange(h * Dh, (h + 1) * Dh) for h in order])  # new column order
    shuffled = replace(
        layer, W_q=layer.W_q[:, idx], W_k=layer.W_k[:, idx], W_v=layer.W_v[:, idx], W_o=layer.W_o[idx, :]
    )
    out = student.mha_forward(*layer.args())
    expect.shape(out, layer.x.shape, name="mha_forward(x)")
    layer_at_work(out, layer, name="mha_forward(x)")
    again = student.mha_forward(*shuffled.args())
    expect.close(
        again,
        out,
        rtol=RTOL,
        atol=ATOL,
        name=f"mha_forward with heads in order {list(order)}",
        what="differs from the original order",
    )


@graded("mha_forward", points=2, **HIDDEN)
@given(layer=layers(dtype=np.float32), causal=st.booleans())
def test_accepts_float32(student, layer, causal):
    """float32 tokens and projections work and give the float64 answer to float32 precision."""
    got = compare(student, layer, causal=causal, rtol=RTOL_FLOAT32, atol=ATOL_FLOAT32)
    expect.floating(got[0], name="the output")
