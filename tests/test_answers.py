"""Arguments compared exactly (grader.core.exact), and the reference's answers kept by a
sandbox (Sandboxed.answered, and its keeper): the same question asked again is answered as before, a slow answer
is not kept, the number kept is bounded; and in a real run the reference runs less often, for
the same report.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given

from grader.core.exact import arguments_digest, copied
from grader.core.settings import Isolation, Settings
from grader.engine.run import run_checks
from grader.formats.json_report import to_dict
from grader.sandbox import session
from grader.sandbox.session import HELPER_ANSWERS, Sandboxed
from grader.sandbox.wardens import best_level

from .support import TOY, TOY_BUGGY
from .values import arguments, same

# ----------------------------------------------------------------------------- exact keys


@given(arguments(), arguments())
def test_two_calls_share_a_digest_only_when_their_arguments_are_equal(a, b):
    assert (arguments_digest(a) == arguments_digest(b)) == (
        list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    )
    assert arguments_digest(a) == arguments_digest({k: copied(v) for k, v in a.items()})


def test_what_repr_would_hide_still_tells_calls_apart():
    big = np.zeros(5000)
    other = big.copy()
    other[2500] = 1.0  # numpy prints both arrays alike ("...")
    assert repr(big) == repr(other)
    assert arguments_digest({"x": big}) != arguments_digest({"x": other})
    assert arguments_digest({"x": big}) != arguments_digest({"x": big.astype(np.float32)})
    assert arguments_digest({"x": big}) != arguments_digest({"x": big.reshape(50, 100)})
    assert arguments_digest({"x": np.zeros(2)}) != arguments_digest({"x": np.zeros(2).view(np.matrix)})


@pytest.mark.parametrize(
    "value",
    [object(), np.array([object()], dtype=object), np.zeros(2).view(np.matrix), {"a": 1}, np.zeros(1, "V8")],
    ids=["object", "object-array", "subclass", "dict", "void"],
)
def test_an_argument_that_cannot_be_compared_exactly_gives_no_key(value):
    assert arguments_digest({"x": np.zeros(2), "y": value}) is None


# ----------------------------------------------------------------------------- the reference's answers


def _sandbox(remember: bool) -> tuple[Sandboxed, list]:
    """A Sandboxed with no sandbox behind it: only its answering of the student's requests."""
    ran: list = []

    def split(x, n):
        ran.append(n)
        if n == 0:
            raise ValueError("no heads")
        return x.reshape(n, -1)

    box = Sandboxed.__new__(Sandboxed)
    box.helpers = {"split": split}
    box.answered = {} if remember else None
    box.answered_bytes = 0
    return box, ran


def _ask(box: Sandboxed, *args, **kwargs) -> dict:
    return box._help("mha", {"name": "split", "args": args, "kwargs": kwargs}, ("split",))


def test_the_reference_is_asked_once_per_question():
    box, ran = _sandbox(remember=True)
    first = _ask(box, np.arange(4.0), 2)
    again = _ask(box, np.arange(4.0), 2)
    assert len(ran) == 1 and np.array_equal(first["value"], again["value"])
    _ask(box, np.arange(4.0), n=2)  # said otherwise: asked afresh
    _ask(box, np.arange(4.0), 4)
    assert len(ran) == 3
    _ask(box, np.arange(4.0), 0)
    refused = _ask(box, np.arange(4.0), 0)
    assert len(ran) == 4 and refused["exc"] == "ValueError"
    plain, ran = _sandbox(remember=False)
    _ask(plain, np.arange(4.0), 2)
    _ask(plain, np.arange(4.0), 2)
    assert len(ran) == 2


def test_the_reference_keeps_a_bounded_number_of_answers():
    box, ran = _sandbox(remember=True)
    for n in range(HELPER_ANSWERS + 10):
        _ask(box, np.full(2, float(n)), 1)
    assert len(box.answered) == HELPER_ANSWERS and len(ran) == HELPER_ANSWERS + 10


def test_the_answers_kept_hold_a_bounded_number_of_bytes(monkeypatch):
    """The student's code chooses the questions: each new one with a large answer must not make
    the grader's own process large."""
    monkeypatch.setattr(session, "HELPER_ANSWER_BYTES", 10 * 8 * 4096)
    box, ran = _sandbox(remember=True)
    for n in range(40):
        _ask(box, np.full((64, 64), float(n)), 1)  # an answer of 32 KiB each
    assert len(box.answered) == 10 and box.answered_bytes <= session.HELPER_ANSWER_BYTES
    _ask(box, np.full((64, 64), 39.0), 1)
    assert len(ran) == 41  # the later ones were not kept: asked again, the reference runs


def test_a_keyword_named_like_a_position_is_another_question():
    """split(x, 2, **{"1": 3}) is not split(x, 3): its answer (a TypeError) must not be given to
    the honest question."""
    box, ran = _sandbox(remember=True)
    odd = _ask(box, np.arange(6.0), 2, **{"1": 3})
    assert odd["exc"] == "TypeError"
    honest = _ask(box, np.arange(6.0), 3)
    assert honest["type"] == "return" and honest["value"].shape == (3, 2)


def test_an_answer_that_took_too_long_is_not_kept(monkeypatch):
    box, ran = _sandbox(remember=True)
    slow = {"type": "raise", "exc": "RuntimeError", "message": "split took too long on these inputs"}
    monkeypatch.setattr(box, "_reference", lambda *a: (ran.append(1), slow)[1])
    _ask(box, np.arange(4.0), 2)
    _ask(box, np.arange(4.0), 2)
    assert len(ran) == 2 and not box.answered


# ----------------------------------------------------------------------------- a real run


@pytest.mark.skipif(best_level() is Isolation.NONE, reason="no sandbox on this machine")
def test_a_real_run_asks_the_reference_less_for_the_same_report(monkeypatch):
    """A file whose center_tokens is wrong: its layer_norm is checked with the reference standing
    in for center_tokens, which the sandbox asks the trusted side for; with the answers kept,
    the reference runs less often and the report is the same."""
    runs = []
    reference = Sandboxed._reference

    def counted(self, *args):
        runs[-1] += 1
        return reference(self, *args)

    monkeypatch.setattr(Sandboxed, "_reference", counted)
    reports = []
    for remember in (False, True):
        runs.append(0)
        report = run_checks(
            TOY_BUGGY, lesson=TOY, settings=Settings(isolation=Isolation.AUTO, replay=remember)
        )
        reports.append(json.dumps(to_dict(report), sort_keys=True))
    assert reports[0] == reports[1]
    assert 0 < runs[1] < runs[0], runs


@pytest.mark.skipif(best_level() is Isolation.NONE, reason="no sandbox on this machine")
@pytest.mark.parametrize("remember", [True, False])
def test_a_question_asked_again_in_a_sandbox_is_answered_by_its_keeper(remember):
    """The typical mistakes' mha_forward asks the reference for the functions it calls; asked
    the same call again, the sandbox's keeper answers every question of it from the answers
    it kept, and none reaches this side (replay off: all of them do, as the first time)."""
    from grader.core.intake import open_submission
    from grader.engine.submission import reference_of

    from .support import ATTENTION

    intake = open_submission(ATTENTION.gallery / "typical-mistakes" / ATTENTION.filename, ATTENTION.filename)
    asked = []
    box = Sandboxed(
        intake, helpers=reference_of(ATTENTION), level=best_level(), lesson=ATTENTION, remember=remember
    )
    helped = box._help
    box._help = lambda *args: (asked.append(args[1]["name"]), helped(*args))[1]
    rng = np.random.default_rng(0)
    arguments = {
        "x": rng.standard_normal((2, 5, 8)),
        **{f"W_{w}": rng.standard_normal((8, 8)) for w in "qkvo"},
    }
    replace = ("apply_causal_mask", "split_heads", "merge_heads")
    try:
        assert not box.problem, box.problem
        first = box.call("mha_forward", "mha_forward", {**arguments, "n_heads": 2}, replace=replace)
        questions = len(asked)
        again = box.call("mha_forward", "mha_forward", {**arguments, "n_heads": 2}, replace=replace)
    finally:
        box.close()
    assert first.ok and again.ok and np.array_equal(first.value, again.value)
    assert questions >= 4 and set(asked) <= set(replace)
    assert len(asked) == (questions if remember else 2 * questions), asked
