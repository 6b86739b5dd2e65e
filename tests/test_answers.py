"""Answering a call the student's code already answered (grader.engine.answers), and the
reference's answers kept by a sandbox (Sandboxed.answered): exact keys, the code asked again
within an example, copies, nothing kept after a call that ended without an answer, bounds; and
in a real run, fewer calls of the student's code with the same report.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from grader.core.errors import StudentTimeout
from grader.core.exact import arguments_digest, copied
from grader.core.results import CallOutcome
from grader.core.settings import Isolation, Settings
from grader.engine.answers import Answers
from grader.engine.run import run_checks
from grader.engine.submission import StudentView
from grader.formats.json_report import to_dict
from grader.sandbox.session import HELPER_ANSWERS, Sandboxed

from .support import TOY

# ----------------------------------------------------------------------------- exact keys

_DTYPES = st.sampled_from([np.float64, np.float32, np.int64, np.int32, np.bool_, np.complex128])
_ARRAYS = _DTYPES.flatmap(
    lambda dtype: hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=3, max_side=4))
)
_PLAIN = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=5),
    st.sampled_from([np.float64(0.5), np.float32(0.5), np.int64(3)]),
)
_VALUES = st.recursive(
    st.one_of(_PLAIN, _ARRAYS),
    lambda inner: st.one_of(st.tuples(inner, inner), st.lists(inner, max_size=3)),
    max_leaves=4,
)
_ARGUMENTS = st.dictionaries(st.sampled_from(["x", "y", "n_heads"]), _VALUES, max_size=3)


def _same(a, b) -> bool:
    """Equal as a call's argument: same type, and for arrays same dtype, shape and bytes."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return repr(a) == repr(b)


def _same_call(a: dict, b: dict) -> bool:
    return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)


@given(_ARGUMENTS, _ARGUMENTS)
def test_two_calls_share_a_digest_only_when_their_arguments_are_equal(a, b):
    assert (arguments_digest(a) == arguments_digest(b)) == _same_call(a, b)
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


# ----------------------------------------------------------------------------- the view


class Counting:
    """An executor whose function answers how many times it ran, plus the sum of its input."""

    problem = ""
    signatures = {"f": [["x", "POSITIONAL_OR_KEYWORD", None]]}

    def __init__(self):
        self.ran = 0
        self.timeout_next = False

    def call(self, exercise, name, arguments, replace=None):
        if self.timeout_next:
            self.timeout_next = False
            raise StudentTimeout("`f` ran out of time")
        self.ran += 1
        return CallOutcome(value=np.array([self.ran, float(np.sum(arguments["x"]))]))

    audited_call = call


def f(x):
    return x


def _view(answers: Answers | None) -> tuple[StudentView, Counting]:
    executor = Counting()
    return StudentView(executor, "f", {"f": f}, replace=lambda: (), answers=answers), executor


def test_a_later_example_is_answered_as_the_first_was():
    view, code = _view(Answers())
    view.begin()
    first = view.f(np.ones(3))
    view.begin()
    again = view.f(np.ones(3))
    assert code.ran == 1 and np.array_equal(first, again)
    view.f(np.ones(4))  # other arguments: the code runs
    assert code.ran == 2


def test_without_answers_every_call_runs():
    view, code = _view(None)
    for _ in range(3):
        view.begin()
        view.f(np.ones(3))
    assert code.ran == 3


def test_within_one_example_the_same_call_again_reaches_the_code():
    view, code = _view(Answers())
    view.begin()
    view.f(np.ones(3))
    view.f(np.ones(3))  # a check asking twice (does it answer alike?) asks the code twice
    assert code.ran == 2
    view.begin()
    once, twice = view.f(np.ones(3)), view.f(np.ones(3))
    assert code.ran == 3  # the first from what was kept, the second from the code
    assert once[0] == 1 and twice[0] == 3


def test_an_answer_given_again_is_a_fresh_copy():
    view, code = _view(Answers())
    for _ in range(2):  # the code's own answer, then the one given again: each changed by the check
        view.begin()
        view.f(np.ones(3))[:] = -7
    view.begin()
    assert view.f(np.ones(3))[0] == 1 and code.ran == 1


def test_a_function_that_ran_out_of_time_is_never_answered_from_what_was_kept():
    view, code = _view(Answers())
    view.begin()
    view.f(np.ones(3))
    code.timeout_next = True
    view.begin()
    with pytest.raises(StudentTimeout):
        view.f(np.ones(2))
    view.begin()
    view.f(np.ones(3))  # kept before the time-out, yet the code is asked: the executor's rules stand
    assert code.ran == 2


def test_the_key_holds_the_exercise_and_what_the_reference_stands_in_for():
    answers = Answers()
    args = {"x": np.ones(2)}
    keys = {
        answers.key("f", (), "f", False, args),
        answers.key("g", (), "f", False, args),
        answers.key("f", ("g",), "f", False, args),
        answers.key("f", (), "f", True, args),
    }
    assert len(keys) == 4


def test_nothing_more_is_kept_past_the_bounds():
    outcome = CallOutcome(value=np.zeros(100))
    few = Answers(max_kept=2)
    for n in range(5):
        few.keep(few.key("f", (), "f", False, {"x": np.full(1, n)}), outcome)
    assert [few.get(few.key("f", (), "f", False, {"x": np.full(1, n)})) is not None for n in range(5)] == [
        True,
        True,
        False,
        False,
        False,
    ]
    small = Answers(max_bytes=1000)
    small.keep(small.key("f", (), "f", False, {"x": np.ones(1)}), outcome)  # 800 bytes: kept
    small.keep(small.key("f", (), "f", False, {"x": np.zeros(1)}), outcome)  # would pass 1000
    assert small.get(small.key("f", (), "f", False, {"x": np.ones(1)})) is not None
    assert small.get(small.key("f", (), "f", False, {"x": np.zeros(1)})) is None


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


def test_an_answer_that_took_too_long_is_not_kept(monkeypatch):
    box, ran = _sandbox(remember=True)
    slow = {"type": "raise", "exc": "RuntimeError", "message": "split took too long on these inputs"}
    monkeypatch.setattr(box, "_reference", lambda *a: (ran.append(1), slow)[1])
    _ask(box, np.arange(4.0), 2)
    _ask(box, np.arange(4.0), 2)
    assert len(ran) == 2 and not box.answered


# ----------------------------------------------------------------------------- a real run


STATEFUL = """
import os

import numpy as np

def _ran():
    with open(os.environ["TOY_CALLS"], "a") as f:
        f.write("x\\n")

def token_mean(x):
    return np.mean(x, axis=-1, keepdims=True)

def center_tokens(x):
    _ran()
    return x - token_mean(x)

def layer_norm(x, gamma, beta, eps=1e-5):
    _ran()
    c = center_tokens(x)
    return c / np.sqrt(np.mean(c * c, axis=-1, keepdims=True) + eps) * gamma + beta
"""


def test_a_real_run_asks_the_code_less_for_the_same_report(tmp_path, monkeypatch):
    student = tmp_path / TOY.filename
    student.write_text(STATEFUL, encoding="utf-8")
    reports, calls = [], []
    for replay in (False, True):
        log = tmp_path / f"calls-{replay}"
        monkeypatch.setenv("TOY_CALLS", str(log))
        report = run_checks(student, lesson=TOY, settings=Settings(isolation=Isolation.NONE, replay=replay))
        reports.append(json.dumps(to_dict(report), sort_keys=True))
        calls.append(len(log.read_text().splitlines()))
    assert reports[0] == reports[1]
    assert json.loads(reports[1])["score"] == json.loads(reports[1])["max_score"]
    assert calls[1] < calls[0], calls
