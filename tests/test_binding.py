"""How a check's call of the student's function is bound to the reference's parameters
(grader.engine.submission._Binder): exactly as ``inspect.Signature.bind`` binds it, names,
order and errors, whatever the signature and the call."""

from __future__ import annotations

import inspect

from hypothesis import given, settings
from hypothesis import strategies as st

from grader.engine.submission import _Binder

NAMES = ("x", "w", "heads", "causal", "scale")
KINDS = (
    inspect.Parameter.POSITIONAL_OR_KEYWORD,
    inspect.Parameter.POSITIONAL_ONLY,
    inspect.Parameter.KEYWORD_ONLY,
)


@st.composite
def calls(draw) -> tuple[inspect.Signature, tuple, dict]:
    """A signature (plain parameters most often, as a lesson's functions have) and a call of it:
    some positional arguments, then keywords in any order, its own names or others."""
    names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=5))
    plain = draw(st.booleans())
    kinds = [inspect.Parameter.POSITIONAL_OR_KEYWORD] * len(names)
    if not plain:
        kinds = sorted(draw(st.lists(st.sampled_from(KINDS), min_size=len(names), max_size=len(names))))
    params, defaulted = [], False
    for name, kind in zip(names, kinds, strict=True):
        default = inspect.Parameter.empty
        if kind is not inspect.Parameter.KEYWORD_ONLY and (defaulted or draw(st.booleans())):
            default, defaulted = 0, True  # after one default, every positional one has one
        elif kind is inspect.Parameter.KEYWORD_ONLY and draw(st.booleans()):
            default = 0
        params.append(inspect.Parameter(name, kind, default=default))
    if not plain and draw(st.booleans()):
        params.append(inspect.Parameter("more", inspect.Parameter.VAR_KEYWORD))
    args = tuple(range(draw(st.integers(0, len(names) + 1))))
    keywords = draw(st.permutations([*names, "other"]))[: draw(st.integers(0, len(names) + 1))]
    return inspect.Signature(params), args, {name: -1 for name in keywords}


def _bound(bind):
    try:
        return bind(), None
    except TypeError as err:
        return None, str(err)


@settings(max_examples=500, derandomize=True, database=None, deadline=None)
@given(calls())
def test_binding_is_inspects_own(call):
    signature, args, kwargs = call
    theirs = _bound(lambda: dict(signature.bind(*args, **kwargs).arguments))
    ours = _bound(lambda: _Binder(signature).bind(args, kwargs))
    assert ours == theirs
    if theirs[0] is not None:
        assert list(ours[0]) == list(theirs[0])  # in the signature's order
