"""Checks of extend_cache: the new tokens' keys and values go after the earlier ones."""

from hypothesis import given

from grader import expect
from grader.marks import graded

from .strategies import appendings
from .work import holds_the_numbers_of

NAME = "extend_cache(cache, kv_new)"


def extended(student, case):
    """The student's result, checked for its shape: (2, ..., H, T_past + T_new, Dh)."""
    got = student.extend_cache(case.cache, case.kv_new)
    *lead, T_past, Dh = case.cache.shape
    expect.shape(got, (*lead, T_past + case.kv_new.shape[-2], Dh), name=NAME)
    return got


@graded("extend_cache", points=2)
@given(case=appendings())
def test_grows_along_the_tokens(student, case):
    """The result has T_past + T_new tokens (axis -2); every other axis is as it was."""
    got = extended(student, case)
    holds_the_numbers_of(got, case.cache, case.kv_new, name=NAME)


@graded("extend_cache", points=4)
@given(case=appendings())
def test_earlier_tokens_come_first(student, case):
    """The first T_past tokens of every head are the cached ones, in their order."""
    got = extended(student, case)
    T_past = case.cache.shape[-2]
    expect.equal(got[..., :T_past, :], case.cache, name=f"{NAME}[..., :T_past, :]", what="differs from cache")
    holds_the_numbers_of(got, case.cache, case.kv_new, name=NAME)


@graded("extend_cache", points=4)
@given(case=appendings())
def test_new_tokens_come_after(student, case):
    """The last T_new tokens of every head are the new ones, keys with keys and values with values."""
    got = extended(student, case)
    T_past = case.cache.shape[-2]
    expect.equal(
        got[..., T_past:, :], case.kv_new, name=f"{NAME}[..., T_past:, :]", what="differs from kv_new"
    )


@graded("extend_cache", points=3)
@given(case=appendings(empty=True))
def test_an_empty_cache_gives_the_new_tokens(student, case):
    """Before the first step the cache holds no token (T_past = 0): the result is kv_new."""
    got = extended(student, case)
    expect.equal(got, case.kv_new, name=NAME, what="differs from kv_new")


@graded("extend_cache", points=2)
@given(case=appendings())
def test_cache_and_kv_new_left_unchanged(student, case):
    """extend_cache returns a new array and leaves cache and kv_new as they were."""
    student.audited("extend_cache", case.cache, case.kv_new)  # runs where a change cannot be hidden
    changed = [n for n in ("cache", "kv_new") if n in student.mutated]
    expect.that(
        not changed,
        f"extend_cache changed the `{changed[0] if changed else ''}` you passed in: the caller may "
        "still need it (to try another continuation, say). Build a new array instead.",
    )
    got = extended(student, case)  # the audited call gives no value back
    holds_the_numbers_of(got, case.cache, case.kv_new, name=NAME)
