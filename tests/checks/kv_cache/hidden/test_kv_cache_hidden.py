"""Hidden checks: decoding and grouped heads against the first lesson's mha_forward."""

from hypothesis import given
from hypothesis import strategies as st

from grader import expect
from grader.marks import graded

from ..spec import ATOL, RTOL, keys_and_values
from ..strategies import grouped_layers, sequences
from ..test_decode_step import decode
from .oracle import full_forward, grouped_forward

HIDDEN = dict(visibility="hidden")


@graded("decode_step", points=6, **HIDDEN)
@given(seq=sequences())
def test_decoding_equals_the_full_causal_forward(student, seq):
    """Decoding a sequence in steps from the empty cache gives the outputs of the first lesson's
    causal mha_forward on the whole sequence."""
    out, _ = decode(student, seq, seq.chunks)
    want = full_forward(seq.x, *seq.weights, seq.n_heads)
    expect.close(
        out,
        want,
        rtol=RTOL,
        atol=ATOL,
        name=f"the outputs of decode_step in steps {list(seq.chunks)}",
        what="differ from mha_forward on the whole sequence",
    )


@graded("decode_step", points=4, **HIDDEN)
@given(seq=sequences(min_tokens=2, chunked=False), data=st.data())
def test_a_step_after_a_given_cache_equals_the_full_forward(student, seq, data):
    """Given the cache of the first tokens, one step on the rest gives the last rows of
    mha_forward on the whole sequence."""
    T = seq.x.shape[-2]
    t = data.draw(st.integers(1, T - 1), label="tokens in the cache")
    cache = keys_and_values(seq.x[..., :t, :], seq.W_k, seq.W_v, seq.n_heads)  # (2, ..., H, t, Dh)
    name = f"decode_step(x[..., {t}:, :], cache of {t} tokens, ..., n_heads={seq.n_heads})"
    got = student.decode_step(seq.x[..., t:, :], cache, *seq.weights, seq.n_heads)
    expect.is_tuple(got, name=name, length=2)
    want = full_forward(seq.x, *seq.weights, seq.n_heads)[..., t:, :]
    expect.close(
        got[0],
        want,
        rtol=RTOL,
        atol=ATOL,
        name=f"the output of {name}",
        what="differs from the last rows of mha_forward on the whole sequence",
    )


@graded("gqa_forward", points=4, **HIDDEN)
@given(case=grouped_layers(kv_heads="all"), causal=st.booleans())
def test_as_many_kv_heads_as_query_heads_is_multi_head_attention(student, case, causal):
    """With n_kv_heads = n_heads every query head has its own keys and values: gqa_forward is the
    first lesson's mha_forward."""
    got = student.gqa_forward(*case.args(), causal=causal)
    want = full_forward(case.x, case.W_q, case.W_k, case.W_v, case.W_o, case.n_heads, causal=causal)
    expect.close(
        got,
        want,
        rtol=RTOL,
        atol=ATOL,
        name=f"gqa_forward(..., n_kv_heads=n_heads, causal={causal})",
        what="differs from mha_forward",
    )


@graded("gqa_forward", points=4, **HIDDEN)
@given(case=grouped_layers(), causal=st.booleans())
def test_grouped_heads_match_multi_head_attention_with_shared_columns(student, case, causal):
    """gqa_forward equals the first lesson's mha_forward whose W_k and W_v give query head h the
    columns of key/value head h // n_rep."""
    got = student.gqa_forward(*case.args(), causal=causal)
    want = grouped_forward(*case.args(), causal=causal)
    expect.close(
        got,
        want,
        rtol=RTOL,
        atol=ATOL,
        name=f"gqa_forward(..., n_heads={case.n_heads}, n_kv_heads={case.n_kv_heads}, causal={causal})",
        what="differs from mha_forward with the key/value heads shared",
    )
