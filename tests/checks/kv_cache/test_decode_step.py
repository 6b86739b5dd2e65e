"""Checks of decode_step: generating step by step gives what the whole sequence gives at once.

Every check decodes a sequence from the empty cache, so the first token's output is known
without any attention at all (it sees only itself); the hidden checks compare with the first
lesson's mha_forward."""

import numpy as np
from hypothesis import given

from grader import expect
from grader.marks import graded

from .spec import ATOL, RTOL, keys_and_values
from .strategies import sequences
from .work import first_token_attended


def decode(student, seq, chunks):
    """Run decode_step over ``x`` cut into ``chunks`` from the empty cache: (outputs joined along
    the tokens, the cache after each step)."""
    cache = seq.empty_cache()
    outs, caches, start = [], [], 0
    D = seq.x.shape[-1]
    for size in chunks:
        x_new = seq.x[..., start : start + size, :]  # (..., T_new, D)
        name = f"decode_step(x[..., {start}:{start + size}, :], cache, ..., n_heads={seq.n_heads})"
        got = student.decode_step(x_new, cache, *seq.weights, seq.n_heads)
        expect.is_tuple(got, name=name, length=2)
        out, cache = got
        expect.shape(out, x_new.shape, name=f"the output of {name}")
        grown = (2, *seq.x.shape[:-2], seq.n_heads, start + size, D // seq.n_heads)
        expect.shape(cache, grown, name=f"the cache returned by {name}")
        outs.append(out)
        caches.append(cache)
        start += size
    return np.concatenate(outs, axis=-2), caches


def at_work(out, seq, *, name):
    first_token_attended(out, seq.x, seq.W_v, seq.W_o, seq.n_heads, seq.n_heads, name=name)


@graded("decode_step", points=5)
@given(seq=sequences(chunked=False))
def test_token_by_token_equals_all_at_once(student, seq):
    """Decoding one token per step gives every token the output that one call on the whole
    sequence (from the empty cache) gives it."""
    T = seq.x.shape[-2]
    whole, _ = decode(student, seq, (T,))
    stepwise, _ = decode(student, seq, (1,) * T)
    at_work(stepwise, seq, name="decode_step one token at a time")
    expect.close(
        stepwise,
        whole,
        rtol=RTOL,
        atol=ATOL,
        name="the outputs one token at a time",
        what="differ from those of one call on all the tokens",
    )


@graded("decode_step", points=5)
@given(seq=sequences())
def test_uneven_steps_equal_all_at_once(student, seq):
    """Decoding in steps of uneven sizes (a prompt, then a few tokens at a time) gives the same
    outputs as one call on the whole sequence."""
    T = seq.x.shape[-2]
    whole, _ = decode(student, seq, (T,))
    chunked, _ = decode(student, seq, seq.chunks)
    at_work(chunked, seq, name=f"decode_step in steps {list(seq.chunks)}")
    expect.close(
        chunked,
        whole,
        rtol=RTOL,
        atol=ATOL,
        name=f"the outputs in steps {list(seq.chunks)}",
        what="differ from those of one call on all the tokens",
    )


@graded("decode_step", points=5)
@given(seq=sequences())
def test_cache_holds_the_keys_and_values_so_far(student, seq):
    """After t tokens the cache holds exactly their keys (x @ W_k) and values (x @ W_v), head
    by head, in token order: nothing more, nothing less."""
    _, caches = decode(student, seq, seq.chunks)
    start = 0
    for size, cache in zip(seq.chunks, caches, strict=True):
        start += size
        prefix = seq.x[..., :start, :]  # (..., t, D)
        want = keys_and_values(prefix, seq.W_k, seq.W_v, seq.n_heads)  # (2, ..., H, t, Dh)
        expect.close(
            cache,
            want,
            rtol=RTOL,
            atol=ATOL,
            name=f"the cache after {start} tokens",
            what="is not the keys ([0]) and values ([1]) of those tokens",
        )


@graded("decode_step", points=2)
@given(seq=sequences(min_tokens=1, chunked=False))
def test_first_token_sees_only_itself(student, seq):
    """From the empty cache the first token attends to itself alone: its output is its own
    value, x[0] @ W_v, mixed by W_o."""
    out, _ = decode(student, seq, (1,))
    at_work(out, seq, name="decode_step(x[..., :1, :], empty cache, ...)")


@graded("decode_step", points=3)
@given(seq=sequences())
def test_step_leaves_its_arguments_unchanged(student, seq):
    """decode_step leaves x_new, the cache and the weights as they were: the caller may decode
    another continuation from the same cache."""
    first, T = seq.chunks[0], seq.x.shape[-2]
    if first < T:  # the cache of a first step, and the rest of the sequence
        cache = keys_and_values(seq.x[..., :first, :], seq.W_k, seq.W_v, seq.n_heads)
        x_new = seq.x[..., first:, :]
    else:
        cache, x_new = seq.empty_cache(), seq.x
    student.audited("decode_step", x_new, cache, *seq.weights, seq.n_heads)
    changed = [n for n in ("x_new", "cache", "W_q", "W_k", "W_v", "W_o") if n in student.mutated]
    expect.that(
        not changed,
        f"decode_step changed the `{changed[0] if changed else ''}` you passed in. A step returns a "
        "new cache; the one it was given must stay as it was.",
    )
    out, _ = decode(student, seq, (1,))
    at_work(out, seq, name="decode_step(x[..., :1, :], empty cache, ...)")
