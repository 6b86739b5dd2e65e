"""Arguments compared exactly (grader.core.exact), and the reference's answers kept by a
sandbox (Sandboxed.answered, and its worker: worker.Answers): the same question asked again is answered as before, a slow answer
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
from grader.sandbox.inside import worker
from grader.sandbox.inside.worker import Answers, encode
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
def test_a_question_asked_again_in_a_sandbox_is_answered_in_the_sandbox(remember):
    """The typical mistakes' mha_forward asks the reference for the functions it calls; asked
    the same call again, its worker answers every question of it from the answers it kept, and
    none reaches this side (replay off: all of them do, as the first time)."""
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


# ----------------------------------------------------------------------------- kept by the worker


def _call(answers: Answers, replace=("split",), keep=True, exercise="mha") -> Answers:
    answers.serves({"type": "call", "exercise": exercise, "name": exercise, "replace": replace, "keep": keep})
    return answers


def _question(n: int) -> bytes:
    return encode({"type": "callback", "name": "split", "args": [np.arange(4.0), n], "kwargs": {}})


def test_a_worker_answers_again_only_what_it_may():
    """Kept: a value, or arguments refused; given again only in a call that keeps answers and
    has the reference stand in for that function (not for the function being checked)."""
    answers = _call(Answers())
    value = {"type": "return", "value": np.arange(4.0).reshape(2, 2)}
    answers.put("split", _question(2), value)
    answers.put("split", _question(0), {"type": "raise", "exc": "ValueError", "message": "no heads"})
    answers.put("split", _question(5), {"type": "raise", "exc": "RuntimeError", "message": "too long"})
    answers.put("split", _question(6), {"type": "raise", "exc": "MemoryError", "message": "too big"})
    assert np.array_equal(answers.get("split", _question(2))["value"], value["value"])
    assert answers.get("split", _question(0))["exc"] == "ValueError"
    assert answers.get("split", _question(5)) is None and answers.get("split", _question(6)) is None
    assert answers.get("split", _question(3)) is None  # never asked
    assert _call(answers, replace=()).get("split", _question(2)) is None  # its own split
    assert _call(answers, replace=None).get("split", _question(2)) is None
    assert _call(answers, keep=False).get("split", _question(2)) is None  # replay off
    assert _call(answers, replace=("split",), exercise="split").get("split", _question(2)) is None
    assert _call(answers).get("split", _question(2)) is not None
    fresh = _call(Answers(), keep=False)
    fresh.put("split", _question(2), value)
    assert not fresh.kept  # replay off: nothing is kept either


def test_an_answer_given_again_is_a_fresh_copy():
    """The student's code may change what a stand-in gave it: the next time, the same question
    still gets the reference's answer."""
    answers = _call(Answers())
    given = np.arange(4.0)
    answers.put("split", _question(2), {"type": "return", "value": (given, np.ones(2))})
    given[...] = -1.0  # what the first caller was given
    first = answers.get("split", _question(2))["value"]
    first[0][...] = -2.0
    again = answers.get("split", _question(2))["value"]
    assert again[0].tolist() == [0.0, 1.0, 2.0, 3.0] and again[1].tolist() == [1.0, 1.0]


def test_a_worker_keeps_answers_within_its_bounds(monkeypatch):
    monkeypatch.setattr(worker, "KEPT_ANSWERS", 2)
    answers = _call(Answers())
    for n in range(4):
        answers.put("split", _question(n), {"type": "return", "value": np.zeros(2)})
    assert len(answers.kept) == 2 and answers.get("split", _question(3)) is None
    monkeypatch.setattr(worker, "KEPT_ANSWERS", 100)
    monkeypatch.setattr(worker, "KEPT_BYTES", 1 << 12)
    answers = _call(Answers())
    for n in range(4):
        answers.put("split", _question(n), {"type": "return", "value": np.zeros(256)})  # 2 KiB each
    assert len(answers.kept) == 1 and answers.size <= 1 << 12


def _typical_box():
    """A sandbox holding the gallery's typical mistakes, and the names of the questions its
    worker sends this side."""
    from grader.core.intake import open_submission
    from grader.engine.submission import reference_of

    from .support import ATTENTION

    intake = open_submission(ATTENTION.gallery / "typical-mistakes" / ATTENTION.filename, ATTENTION.filename)
    box = Sandboxed(intake, helpers=reference_of(ATTENTION), level=best_level(), lesson=ATTENTION)
    asked = []
    helped = box._help
    box._help = lambda *args: (asked.append(args[1]["name"]), helped(*args))[1]
    return box, asked


def _mha(box):
    rng = np.random.default_rng(0)
    arguments = {
        "x": rng.standard_normal((2, 5, 8)),
        **{f"W_{w}": rng.standard_normal((8, 8)) for w in "qkvo"},
    }
    replace = ("apply_causal_mask", "split_heads", "merge_heads")
    return box.call("mha_forward", "mha_forward", {**arguments, "n_heads": 2}, replace=replace)


@pytest.mark.skipif(best_level() is Isolation.NONE, reason="no sandbox on this machine")
def test_nothing_a_worker_kept_outlives_it():
    """Two submissions in turn (the second on the sandbox the first gave back): the second's
    questions all reach this side, as the first's did. Within one submission, a worker started
    afresh (its predecessor ended) starts with nothing kept either, then answers a question
    asked again itself."""
    counts = []
    for _ in range(2):
        box, asked = _typical_box()
        try:
            assert not box.problem, box.problem
            first = _mha(box)
            counts.append(len(asked))
            box._end_worker()  # the next call starts a new worker
            again = _mha(box)
            respawned = len(asked) - counts[-1]
            third = _mha(box)
        finally:
            box.close()
        assert first.ok and again.ok and third.ok
        assert np.array_equal(first.value, again.value) and np.array_equal(first.value, third.value)
        assert respawned == counts[-1]  # the new worker asked everything again
        assert len(asked) == 2 * counts[-1]  # the third call: answered in the sandbox
    assert counts[0] == counts[1] >= 4
