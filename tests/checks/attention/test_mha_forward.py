"""Checks of mha_forward that follow from the lesson without computing attention itself."""

from dataclasses import replace

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from grader import expect
from grader.arrays import softmax
from grader.draw import between, draw_values
from grader.marks import graded

from .spec import ATOL, ROW_SUM_ATOL, RTOL, future
from .strategies import indices, layers
from .work import layer_at_work


def run(student, layer, x=None, **kwargs):
    """Call the student's mha_forward on a layer (optionally on other tokens)."""
    return student.mha_forward(*layer.args(x), **kwargs)


def out_and_weights(student, layer, *, causal):
    """(out, weights) with their shapes checked first."""
    got = run(student, layer, causal=causal, return_weights=True)
    *batch, T, D = layer.x.shape
    name = f"mha_forward(..., causal={causal}, return_weights=True)"
    expect.is_tuple(got, name=name, length=2)
    out, weights = got
    expect.shape(out, (*batch, T, D), name=f"the output of {name}")
    expect.shape(weights, (*batch, layer.n_heads, T, T), name=f"the weights of {name}")
    return got[0], got[1]


@graded("mha_forward", points=3)
@given(layer=layers(), causal=st.booleans())
def test_output_and_weight_shapes(student, layer, causal):
    """The output has the shape of x, (..., T, D); the weights are (..., H, T, T). Tokens that
    are all 0 have values of 0, so they give an output of 0."""
    *batch, T, D = layer.x.shape
    name = f"mha_forward(..., causal={causal})"
    out = run(student, layer, causal=causal)
    expect.shape(out, (*batch, T, D), name=name)
    layer_at_work(out, layer, name=name)
    silent = replace(layer, x=np.zeros_like(layer.x))
    out, _ = out_and_weights(student, silent, causal=causal)
    expect.equal(out, np.zeros_like(layer.x), name="mha_forward(x = 0, ...)", what="is not 0")


@graded("mha_forward", points=4)
@given(layer=layers())
def test_causal_weights_ignore_the_future(student, layer):
    """With causal=True every row of weights sums to 1 and gives exactly 0 to later tokens."""
    out, weights = out_and_weights(student, layer, causal=True)
    layer_at_work(out, layer, name="the output of mha_forward(..., causal=True)")
    expect.rows_sum_to_one(weights, name="weights", atol=ROW_SUM_ATOL)
    ahead = np.broadcast_to(future(layer.x.shape[-2]), weights.shape)
    expect.equal(weights, np.where(ahead, 0.0, weights), name="weights", what="is not 0 for a later token")


@graded("mha_forward", points=3)
@given(layer=layers(min_tokens=2, x_range=1.0))
def test_without_the_mask_tokens_see_the_future(student, layer):
    """With causal=False every row of weights sums to 1 and later tokens get weight too."""
    D = layer.x.shape[-1]
    # Small queries and keys keep every score within a few units, so that no
    # weight can underflow to 0 and every token truly receives some weight.
    small = {"W_q": layer.W_q / D, "W_k": layer.W_k / D}
    got = student.mha_forward(*layer.args(**small), causal=False, return_weights=True)
    expect.is_tuple(got, name="mha_forward(..., causal=False, return_weights=True)", length=2)
    out, weights = got
    T = layer.x.shape[-2]
    expect.shape(out, layer.x.shape, name="the output of mha_forward(..., causal=False)")
    layer_at_work(out, layer, name="the output of mha_forward(..., causal=False)")
    expect.shape(weights, (*layer.x.shape[:-2], layer.n_heads, T, T), name="weights")
    expect.rows_sum_to_one(weights, name="weights", atol=ROW_SUM_ATOL)
    ahead = np.broadcast_to(future(T), weights.shape)
    expect.that(
        bool(np.all(weights[ahead] > 0)),
        "With causal=False the weights on later tokens should all be above 0, but some are 0: "
        "the mask must only be applied when causal is True.\n"
        f"weights[..., 0, :, :] = {expect.fmt(weights[(0,) * (weights.ndim - 2)])}",
    )


@graded("mha_forward", points=4)
@given(layer=layers(min_tokens=2), data=st.data())
def test_later_tokens_do_not_change_earlier_outputs(student, layer, data):
    """Changing the tokens after position t leaves the outputs of positions 0..t unchanged."""
    *batch, T, D = layer.x.shape
    t = data.draw(indices(T - 1), label="t")
    delta = draw_values(data.draw, (*batch, T - t - 1, D), low=0.5, high=2.0)  # (..., T-t-1, D)
    changed = layer.x.copy()
    changed[..., t + 1 :, :] += delta  # only tokens t+1, t+2, ... move
    before = run(student, layer)
    after = run(student, layer, x=changed)
    expect.shape(before, layer.x.shape, name="mha_forward(x)")
    expect.shape(after, layer.x.shape, name="mha_forward(x changed after t)")
    layer_at_work(before, layer, name="mha_forward(x)")
    expect.close(
        after[..., : t + 1, :],
        before[..., : t + 1, :],
        rtol=RTOL,
        atol=ATOL,
        name=f"the outputs of tokens 0..{t}",
        what="changed when only later tokens changed",
    )


@graded("mha_forward", points=4)
@given(layer=layers(), data=st.data())
def test_each_row_behaves_as_if_given_only_its_prefix(student, layer, data):
    """Running on the first k tokens alone gives the first k rows of running on all of them."""
    T = layer.x.shape[-2]
    k = data.draw(between(1, T), label="k")
    whole = run(student, layer)
    prefix = run(student, layer, x=layer.x[..., :k, :])
    expect.shape(whole, layer.x.shape, name="mha_forward(x)")
    layer_at_work(whole, layer, name="mha_forward(x)")
    expect.close(
        prefix,
        whole[..., :k, :],
        rtol=RTOL,
        atol=ATOL,
        name=f"mha_forward(x[..., :{k}, :])",
        what=f"differs from the first {k} rows of mha_forward(x)",
    )


@graded("mha_forward", points=3)
@given(layer=layers())
def test_first_token_only_sees_itself(student, layer):
    """The first token can only attend to itself, so its output is x[0] @ W_v @ W_o."""
    out = run(student, layer)
    expect.shape(out, layer.x.shape, name="mha_forward(x)")
    expected = layer.x[..., 0, :] @ layer.W_v @ layer.W_o  # (..., D)
    expect.close(
        out[..., 0, :],
        expected,
        rtol=RTOL,
        atol=ATOL,
        name="the output of the first token",
        what="is not x[0] @ W_v @ W_o",
    )


@graded("mha_forward", points=3)
@given(layer=layers(), causal=st.booleans())
def test_output_projection_mixes_the_merged_heads(student, layer, causal):
    """W_o = 0 gives an output of 0; any W_o gives (the output with W_o = I) @ W_o."""
    D = layer.x.shape[-1]
    zero = run(student, replace(layer, W_o=np.zeros((D, D))), causal=causal)
    expect.equal(zero, np.zeros(layer.x.shape), name="mha_forward with W_o = 0", what="is not 0")
    merged = run(student, replace(layer, W_o=np.eye(D)), causal=causal)
    out = run(student, layer, causal=causal)
    expect.shape(merged, layer.x.shape, name="mha_forward with W_o = I")
    expect.shape(out, layer.x.shape, name="mha_forward(x)")
    layer_at_work(out, layer, name="mha_forward(x)")
    expect.close(
        out,
        merged @ layer.W_o,
        rtol=RTOL,
        atol=ATOL,
        name="mha_forward(x)",
        what="is not (the merged heads) @ W_o",
    )


@graded("mha_forward", points=3)
@given(layer=layers(min_batch_axes=1), causal=st.booleans())
def test_batch_elements_are_independent(student, layer, causal):
    """Each sequence in a batch gives the same output as it would alone."""
    out = run(student, layer, causal=causal)
    expect.shape(out, layer.x.shape, name="mha_forward(x)")
    layer_at_work(out, layer, name="mha_forward(x)")
    first = (0,) * (layer.x.ndim - 2)
    alone = run(student, layer, x=layer.x[first], causal=causal)
    expect.close(
        out[first],
        alone,
        rtol=RTOL,
        atol=ATOL,
        name="the output of the first sequence",
        what="differs from running it alone",
    )


@graded("mha_forward", points=4)
@given(layer=layers(), causal=st.booleans())
def test_each_head_scores_its_own_slice(student, layer, causal):
    """Head h's weights are the softmax of its queries times its keys (columns h*Dh to
    (h+1)*Dh of x @ W_q and x @ W_k), divided by sqrt(Dh)."""
    got = student.mha_forward(*layer.args(), causal=causal, return_weights=True)
    name = f"the weights of mha_forward(..., causal={causal}, return_weights=True)"
    expect.is_tuple(got, name="mha_forward(..., return_weights=True)", length=2)
    *batch, T, D = layer.x.shape
    H = layer.n_heads
    expect.shape(got[1], (*batch, H, T, T), name=name)
    Dh = D // H
    for h in range(H):
        cols = slice(h * Dh, (h + 1) * Dh)
        q, k = layer.x @ layer.W_q[:, cols], layer.x @ layer.W_k[:, cols]  # (..., T, Dh) each
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(Dh)  # (..., T, T): row = query, column = key
        scores = np.where(future(T), -np.inf, scores) if causal else scores
        expect.close(
            got[1][..., h, :, :],
            softmax(scores),
            rtol=RTOL,
            atol=ATOL,
            name=f"{name}[..., {h}, :, :] (head {h})",
        )
