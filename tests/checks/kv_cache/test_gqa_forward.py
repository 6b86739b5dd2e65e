"""Checks of gqa_forward: query heads in groups, each group sharing one key/value head.

The visible checks compare gqa_forward with itself on weights rewritten so that the answer
must not change; the hidden ones compare it with the first lesson's mha_forward."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from grader import expect
from grader.draw import between
from grader.expect import describe
from grader.marks import graded

from .spec import ATOL, RTOL, widened
from .strategies import grouped_layers
from .work import first_token_attended


def forward(student, case, causal=True, **replace):
    args = case.args(**replace)
    name = f"gqa_forward(..., n_heads={args[5]}, n_kv_heads={args[6]}, causal={causal})"
    out = student.gqa_forward(*args, causal=causal)
    expect.shape(out, args[0].shape, name=name)
    return out, name


def at_work(out, case, *, name):
    first_token_attended(out, case.x, case.W_v, case.W_o, case.n_heads, case.n_kv_heads, name=name)


@graded("gqa_forward", points=2)
@given(case=grouped_layers())
def test_first_token_gets_its_own_value(student, case):
    """With the mask the first token sees only itself: each query head gives back that token's
    value in the key/value head of its group, and W_o mixes them."""
    out, name = forward(student, case)
    at_work(out, case, name=name)


@graded("gqa_forward", points=3)
@given(case=grouped_layers(kv_heads="one"), causal=st.booleans())
def test_one_kv_head_is_shared_by_every_head(student, case, causal):
    """With n_kv_heads = 1 every query head attends with the same keys and values: the output is
    that of H key/value heads that are all copies of the one."""
    out, name = forward(student, case, causal=causal)
    H = case.n_heads
    copies, _ = forward(
        student, case, causal=causal, W_k=np.tile(case.W_k, H), W_v=np.tile(case.W_v, H), n_kv_heads=H
    )
    expect.close(
        out,
        copies,
        rtol=RTOL,
        atol=ATOL,
        name=name,
        what="differs from giving every query head a copy of the one key/value head",
    )
    masked, masked_name = (
        (out, name) if causal else forward(student, case)
    )  # the first token's output needs the mask
    at_work(masked, case, name=masked_name)


@graded("gqa_forward", points=3)
@given(case=grouped_layers(min_kv_heads=2), causal=st.booleans())
def test_groups_share_in_order(student, case, causal):
    """Query head h uses key/value head h // n_rep: giving each query head its own copy of
    those columns of W_k and W_v (n_kv_heads = n_heads) changes nothing."""
    out, name = forward(student, case, causal=causal)
    H, H_kv = case.n_heads, case.n_kv_heads
    W_k, W_v = widened(case.W_k, H_kv, H // H_kv), widened(case.W_v, H_kv, H // H_kv)
    copies, _ = forward(student, case, causal=causal, W_k=W_k, W_v=W_v, n_kv_heads=H)
    expect.close(
        out,
        copies,
        rtol=RTOL,
        atol=ATOL,
        name=name,
        what="differs from giving query head h a copy of key/value head h // n_rep",
    )
    at_work(forward(student, case)[0], case, name=name.replace("causal=False", "causal=True"))


@graded("gqa_forward", points=2)
@given(case=grouped_layers(min_tokens=2))
def test_later_tokens_change_no_earlier_output(student, case):
    """With the mask, the outputs of the first t tokens do not depend on the tokens after them."""
    out, name = forward(student, case)
    at_work(out, case, name=name)
    t = case.x.shape[-2] - 1
    shorter, short_name = forward(student, case, x=case.x[..., :t, :])
    expect.close(
        out[..., :t, :],
        shorter,
        rtol=RTOL,
        atol=ATOL,
        name=f"the first {t} outputs of {name}",
        what="change when the last token is left out",
    )


@st.composite
def bad_head_counts(draw, case):
    """Head counts gqa_forward must refuse, for the width of ``case``."""
    H = case.n_heads
    kind = draw(between(0, 2))
    if kind == 0:  # n_kv_heads does not divide n_heads
        options = [k for k in range(1, 2 * H + 1) if H % k]
        return H, options[draw(between(0, len(options) - 1))]
    if kind == 1:  # no key/value head
        return H, draw(between(-1, 0))
    return draw(between(-1, 0)), 1  # no query head


@graded("gqa_forward", points=2)
@given(case=grouped_layers(), data=st.data())
def test_bad_head_counts_raise_value_error(student, case, data):
    """n_kv_heads that does not divide n_heads (or below 1), or n_heads below 1, raises ValueError;
    good counts give the layer's output."""
    out, name = forward(student, case)
    at_work(out, case, name=name)
    H, H_kv = data.draw(bad_head_counts(case), label="bad head counts")
    reason = (
        f"{H} query heads cannot be cut into {H_kv} equal groups"
        if H >= 1 and H_kv >= 1
        else "there must be at least one head of each kind"
    )
    expect.raises(
        lambda: student.gqa_forward(*case.args(n_heads=H, n_kv_heads=H_kv)),
        "ValueError",
        name=f"gqa_forward({describe(x=case.x, n_heads=H, n_kv_heads=H_kv)})",
        reason=reason,
    )
