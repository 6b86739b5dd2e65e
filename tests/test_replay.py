"""Replaying a property's examples (grader.engine.replay): the same reports as Hypothesis's engine,
the same calls seen by the student's code, nothing kept that a student could have shaped, no
failure lost; and a stub stopped at its first example.

Each test grades in this process (``run_checks``), so that what replay keeps (in memory, per
process) is there for the next grading; every test starts with nothing kept.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import marshal
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.core.lesson import Course
from grader.core.settings import REPLAY_VARIABLE, Isolation, Settings, resolve
from grader.engine import checking, replay
from grader.engine.run import run_checks
from grader.formats.json_report import to_dict
from grader.sandbox.wardens import best_level

from .support import ATTENTION, ROOT, TOY_COURSE

SANDBOXED = Settings(isolation=Isolation.AUTO)
HERE = Settings(isolation=Isolation.NONE)
TYPICAL = ROOT / "examples" / "gallery" / "attention" / "typical-mistakes" / ATTENTION.filename

needs_sandbox = pytest.mark.skipif(best_level() is Isolation.NONE, reason="no sandbox on this machine")


@pytest.fixture(autouse=True)
def nothing_kept():
    replay.forget()
    yield
    replay.forget()


def graded(path: Path, lesson, settings: Settings) -> str:
    return json.dumps(to_dict(run_checks(path, lesson=lesson, settings=settings)), sort_keys=True)


def without_replay(settings: Settings) -> Settings:
    return Settings(**{**settings.__dict__, "replay": False})


@functools.cache
def engines(path: Path) -> str:
    """The report of the first lesson's ``path`` graded sandboxed with every property under the
    engine (replay off: nothing kept is read, and the report is the same at every call), graded
    once for the module: what every replayed report here must equal."""
    return graded(path, ATTENTION, without_replay(SANDBOXED))


# ----------------------------------------------------------------------------- Hypothesis's internals


def test_the_hypothesis_internals_replay_reads_are_there():
    """Fails loudly on a Hypothesis release whose internals moved: replay rebuilds each example
    the engine ran, value for value, from the choices it kept."""
    assert replay.supported()
    ran = []

    @settings(derandomize=True, database=None, max_examples=30)
    @given(x=st.integers(-5, 5), y=st.lists(st.floats(-1, 1), max_size=4), data=st.data())
    def prop(x, y, data):
        z = data.draw(st.booleans())
        ran.append(((x, y, z), replay._choices()))

    prop()
    assert len(ran) >= 10
    from hypothesis import control
    from hypothesis.internal.conjecture.data import ConjectureData

    for values, choices in ran:
        data = ConjectureData.for_choices(choices)
        with control.BuildContext(data, is_final=False, wrapped_test=prop) as context:
            drawn, _ = context.prep_args_kwargs_from_strategies(prop.hypothesis._given_kwargs)
            z = drawn["data"].draw(st.booleans())
        assert (drawn["x"], drawn["y"], z) == values
        assert tuple(data.choices) == tuple(choices)


# ----------------------------------------------------------------------------- the same reports


@needs_sandbox
def test_replayed_reports_are_the_engines(tmp_path):
    """The reference keeps its examples; a submission with typical mistakes and a stub then get
    byte for byte the reports the engine gives them, most of their properties by replay."""
    assert graded(ATTENTION.solution, ATTENTION, SANDBOXED)  # keeps the examples
    kept = len(replay._KEPT)
    assert kept >= 20
    replayed = {}
    for path in (TYPICAL, ATTENTION.stubs):
        replayed[path] = graded(path, ATTENTION, SANDBOXED)
    assert replay.COUNTS["replayed"] > 20  # replay was used
    counts = dict(replay.COUNTS)
    for path, report in replayed.items():
        assert graded(path, ATTENTION, without_replay(SANDBOXED)) == report, path
    assert replay.COUNTS == counts  # the engine alone, with replay off


# ----------------------------------------------------------------------------- the same calls

#: Appended to the toy lesson's reference: center_tokens notes every call it gets, and is wrong
#: on tokens of 3 numbers and more (a failure a few examples in, then shrunk).
LOGGING = """
import builtins
_right = center_tokens


def center_tokens(x):
    builtins._replay_calls.append((x.shape, x.tobytes()))
    out = _right(x)
    return out + 1.0 if x.shape[-1] >= 3 else out
"""


def _toy(tmp_path: Path, extra: dict[str, str] | None = None) -> tuple[object, Path]:
    """A copy of the toy course (with ``extra`` check files) and a logging submission of it. Each
    copy has a name of its own: its checks are imported beside those of the others."""
    course = tmp_path / f"toy_{tmp_path.name}"
    shutil.copytree(TOY_COURSE, course)
    for name, text in (extra or {}).items():
        (course / "tests" / "checks" / "toy" / name).write_text(text)
    lesson = Course.at(course).lesson("toy")
    student = tmp_path / "student" / lesson.filename
    student.parent.mkdir()
    student.write_text(lesson.solution.read_text() + LOGGING)
    return lesson, student


@needs_sandbox
def test_the_student_sees_the_engines_calls(tmp_path, monkeypatch):
    """With replay, the student's code gets exactly the calls it gets from the engine, in the
    same order: a property that fails in replay is not sent its first examples again (the
    engine's are answered from the replay's tape), shrinking included."""
    import builtins

    lesson, student = _toy(tmp_path)
    graded(lesson.solution, lesson, SANDBOXED)  # keeps the examples
    assert replay._KEPT
    calls, reports = {}, {}
    for on in (True, False):
        monkeypatch.setattr(builtins, "_replay_calls", [], raising=False)
        reports[on] = graded(student, lesson, HERE if on else without_replay(HERE))
        calls[on] = list(builtins._replay_calls)
    assert replay.COUNTS["answered"] > 0  # a property failed in replay and its tape was used
    assert reports[True] == reports[False]
    assert len(calls[True]) == len(calls[False]) and calls[True] == calls[False]


#: Appended to the toy lesson's reference: center_tokens draws from Python's and numpy's global
#: generators, notes what it drew, and is wrong when Python's draw is high (never on the first
#: draw after the generators are seeded with 0, as they are at the start of every example).
RANDOM_DRAWS = """
import builtins
import random

import numpy as np

_right = center_tokens


def center_tokens(x):
    drawn = (random.random(), float(np.random.random()))
    builtins._replay_draws.append(drawn)
    out = _right(x)
    return out + 1.0 if drawn[0] > 0.9 else out
"""


@needs_sandbox
def test_every_replayed_example_starts_from_the_seeded_generators(tmp_path, monkeypatch):
    """Where the student's code runs in this process, each example starts with Python's and
    numpy's global generators seeded as under the engine (which seeds them around each
    example): a replayed example draws what the engine's would, and the report is the same."""
    import builtins

    lesson, student = _toy(tmp_path)
    student.write_text(lesson.solution.read_text() + RANDOM_DRAWS)
    graded(lesson.solution, lesson, SANDBOXED)  # keeps the examples
    draws, reports = {}, {}
    for on in (True, False):
        replay.COUNTS.update(replayed=0)
        monkeypatch.setattr(builtins, "_replay_draws", [], raising=False)
        reports[on] = graded(student, lesson, HERE if on else without_replay(HERE))
        draws[on] = list(builtins._replay_draws)
        assert (replay.COUNTS["replayed"] > 0) is on
    assert len(set(draws[True])) == 1  # the first draws after a seed, every time
    assert draws[True] == draws[False]
    assert reports[True] == reports[False]


def test_a_run_in_this_process_keeps_nothing(tmp_path):
    """Where the student's code runs in the grader's process it could have changed the engine:
    nothing that run drew is kept."""
    lesson, _ = _toy(tmp_path)
    graded(lesson.solution, lesson, HERE)
    assert not replay._KEPT


#: A check whose draws follow a call of the student's function.
DRAWS_AFTER_A_CALL = '''
"""A check that draws after calling the student's function."""

from hypothesis import given
from hypothesis import strategies as st

from grader import expect
from grader.marks import graded

from .strategies import tokens


@graded("center_tokens", points=1)
@given(x=tokens(), data=st.data())
def test_draws_after_a_call(student, x, data):
    """Centering twice changes nothing."""
    once = student.center_tokens(x)
    times = data.draw(st.integers(1, 3), label="times")
    again = once
    for _ in range(times):
        again = student.center_tokens(again)
    expect.close(again, once, name="center_tokens again", rtol=1e-9, atol=1e-9)
'''


@needs_sandbox
def test_a_property_that_draws_after_a_call_is_never_kept(tmp_path):
    """What a check draws after calling the student's code may depend on what came back: such a
    property always runs under the engine."""
    lesson, _ = _toy(tmp_path, {"test_draws_after.py": DRAWS_AFTER_A_CALL})
    graded(lesson.solution, lesson, SANDBOXED)
    kept = {key[1].rsplit("::", 1)[-1] for key in replay._KEPT}
    assert "test_centering_subtracts_each_token_mean" in kept
    assert "test_draws_after_a_call" not in kept


#: center_tokens fails on the first call its process gets, and only then.
FIRST_CALL_FAILS = """
import builtins
_right = center_tokens


def center_tokens(x):
    builtins._replay_first = getattr(builtins, "_replay_first", 0) + 1
    out = _right(x)
    return out.reshape(-1) if builtins._replay_first == 1 else out  # the wrong shape, once
"""


@needs_sandbox
def test_a_failure_seen_in_replay_is_never_lost(tmp_path, monkeypatch):
    """Should the engine's run pass after the replay saw a failure (here the tape is made to
    answer nothing, and the student's code fails on its first call only), the check fails as
    the engine fails code that answers differently when asked again."""
    import builtins

    lesson, student = _toy(tmp_path)
    student.write_text(lesson.solution.read_text() + FIRST_CALL_FAILS)
    graded(lesson.solution, lesson, SANDBOXED)
    monkeypatch.setattr(replay.Tape, "__init__", _deaf)
    monkeypatch.setattr(builtins, "_replay_first", 0, raising=False)
    report = json.loads(graded(student, lesson, HERE))
    first = next(t for t in report["tests"] if t["name"] == "centering_keeps_the_shape")
    assert first["status"] == "failed" and first["score"] == 0, first
    assert "different results for the same input" in first["feedback"]


def test_examples_from_disk_that_fail_where_the_engine_passes_leave_the_verdict_to_the_engine(
    tmp_path, monkeypatch
):
    """Examples read from the store on disk (grader.engine.store) were not drawn by an engine of
    this run: should one fail where the engine's own run then passes, the engine's verdict
    stands, as it would without a store (a stale or hand-made file is never the student's
    fault). The same case as above, its examples marked as read from disk."""
    import builtins

    lesson, student = _toy(tmp_path)
    student.write_text(lesson.solution.read_text() + FIRST_CALL_FAILS)
    graded(lesson.solution, lesson, SANDBOXED)
    replay.adopt_items(replay.items(), from_disk=True)
    monkeypatch.setattr(replay.Tape, "__init__", _deaf)
    monkeypatch.setattr(builtins, "_replay_first", 0, raising=False)
    report = json.loads(graded(student, lesson, HERE))
    first = next(t for t in report["tests"] if t["name"] == "centering_keeps_the_shape")
    assert first["status"] == "passed", first


_plain_init = replay.Tape.__init__


def _deaf(self, *, keep=False, answers=(), choices=()):
    """A tape that answers nothing: every call of the engine's run reaches the student's code."""
    _plain_init(self, keep=keep)


# ----------------------------------------------------------------------------- the early stop

#: The stub notes every call.
COUNTED_STUB = """
import builtins


def apply_causal_mask(scores):
    builtins._stub_calls.append("apply_causal_mask")
    raise NotImplementedError()


def split_heads(x, n_heads):
    builtins._stub_calls.append("split_heads")
    raise NotImplementedError()


def merge_heads(x):
    builtins._stub_calls.append("merge_heads")
    raise NotImplementedError()


def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
    builtins._stub_calls.append("mha_forward")
    raise NotImplementedError()
"""


def test_a_stub_ends_each_check_at_its_first_example(tmp_path, monkeypatch):
    """NotImplementedError settles a check: one call per check, and the report the engine gives
    when it searches for a smaller example (and finds the same error)."""
    import builtins

    stub = tmp_path / "stub" / ATTENTION.filename
    stub.parent.mkdir()
    stub.write_text(ATTENTION.stubs.read_text() + COUNTED_STUB)
    monkeypatch.setattr(builtins, "_stub_calls", [], raising=False)
    early = graded(stub, ATTENTION, without_replay(HERE))
    checks = len(json.loads(early)["tests"])
    # one call per check, and at most two per exercise for the pictures and probes of the report
    assert checks <= len(builtins._stub_calls) <= checks + 2 * len(ATTENTION.exercises)
    monkeypatch.setattr(
        checking, "SETTLED", tuple(k for k in checking.SETTLED if k.value != "not_implemented")
    )
    builtins._stub_calls.clear()
    assert graded(stub, ATTENTION, without_replay(HERE)) == early
    assert len(builtins._stub_calls) > 3 * checks  # the engine's search, which the stop saves


# ----------------------------------------------------------------------------- the setting


def test_replay_is_on_unless_turned_off():
    assert resolve("grade", environ={}).replay
    assert not resolve("grade", environ={REPLAY_VARIABLE: "off"}).replay
    assert not resolve("grade", environ={REPLAY_VARIABLE: "0"}).replay
    assert resolve("grade", environ={REPLAY_VARIABLE: "on"}).replay
    with pytest.raises(ValueError, match=REPLAY_VARIABLE):
        resolve("grade", environ={REPLAY_VARIABLE: "maybe"})


# ----------------------------------------------------------------------------- a batch's children


@needs_sandbox
def test_a_zygote_primed_on_the_reference_hands_its_children_only_the_examples(tmp_path):
    """``grade-stream`` grades the reference once in a child and keeps only the choices that
    child's engine drew: the child's own module state dies with it, what comes back is numbers,
    and a submission then graded (as a batch's next child is) replays them, with the engine's
    very report."""
    from grader.commands.stream import prime

    kept = prime(ATTENTION, SANDBOXED, scratch=tmp_path)
    assert kept >= 20 and len(replay._KEPT) == kept
    assert replay.COUNTS == dict.fromkeys(replay.COUNTS, 0)  # the grading ran in the child
    report = graded(TYPICAL, ATTENTION, SANDBOXED)
    assert replay.COUNTS["replayed"] > 10
    replay.forget()
    assert engines(TYPICAL) == report
    assert prime(ATTENTION, without_replay(SANDBOXED), scratch=tmp_path) == 0 and not replay._KEPT


@needs_sandbox
def test_a_zygote_that_keeps_every_propertys_examples_grades_no_reference(tmp_path, monkeypatch):
    """Where the zygote keeps the examples of every property already (from the store on disk, or
    shipped with the lesson), it does not grade the reference again to learn them: it only draws
    their arguments ahead."""
    from grader.commands import stream

    assert stream.prime(ATTENTION, SANDBOXED, scratch=tmp_path) >= 20
    kept = dict(replay._KEPT)
    replay._DRAWN.clear()

    def refused(*args, **kwargs):
        raise AssertionError("the reference was graded again")

    monkeypatch.setattr(stream, "run_forked", refused)
    assert stream.prime(ATTENTION, SANDBOXED, scratch=tmp_path) == 0
    assert replay._KEPT == kept and len(replay._DRAWN) >= 20


def _drawn_arrays() -> list:
    """Every array of numbers among the arguments drawn ahead (grader.engine.replay.predraw),
    those inside tuples, lists and a lesson's dataclasses (a layer of weights) included."""
    arrays = []

    def walk(value) -> None:
        if isinstance(value, np.ndarray):
            if value.dtype.kind == "f":
                arrays.append(value)
        elif isinstance(value, (tuple, list)):
            for item in value:
                walk(item)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            for field in dataclasses.fields(value):
                walk(getattr(value, field.name))

    for made in replay._DRAWN.values():
        for one in made:
            for value in one[1].values() if one is not None else ():
                walk(value)
    return arrays


@needs_sandbox
def test_a_childs_changes_to_the_examples_drawn_ahead_reach_no_other_child(tmp_path):
    """A zygote draws the arguments of its kept examples once, before any child; a child
    replays on its own copy of them. Whatever a child does to them (here every float argument
    overwritten with NaN) is not what the next child grades on: its report is the engine's."""
    from grader.commands.stream import prime
    from grader.commands.zygote import run_forked

    assert prime(ATTENTION, SANDBOXED, scratch=tmp_path) >= 20
    assert sum(1 for made in replay._DRAWN.values() for one in made if one is not None) > 300
    assert _drawn_arrays()

    def scribble() -> bytes:
        for array in _drawn_arrays():
            array.fill(np.nan)
        return b"done"

    assert run_forked(scribble, scratch=tmp_path).output == b"done"
    solution = ATTENTION.solution
    second = run_forked(lambda: graded(solution, ATTENTION, SANDBOXED).encode(), scratch=tmp_path)
    replay.forget()
    assert second.output.decode() == engines(solution)


@needs_sandbox
def test_examples_drawn_ahead_serve_one_replay_and_give_the_engines_reports(tmp_path):
    """The reference, the typical mistakes and the stub graded on examples drawn ahead (each
    grading in this process after a fresh priming) get the engine's reports; a property's
    drawn arguments are used by its first replay only (the next draws its own)."""
    from grader.commands.stream import prime

    for path in (ATTENTION.solution, TYPICAL, ATTENTION.stubs):
        replay.forget()
        prime(ATTENTION, SANDBOXED, scratch=tmp_path)
        drawn = set(replay._DRAWN)
        assert len(drawn) >= 20
        report = graded(path, ATTENTION, SANDBOXED)
        assert not drawn & set(replay._DRAWN)  # every property replayed used them up
        replay.forget()
        assert engines(path) == report, path


@needs_sandbox
def test_examples_written_down_are_read_ahead_and_give_the_engines_reports(tmp_path):
    """A zygote whose examples have their arguments written down reads them ahead (a tenth of
    the cost of drawing them) instead of drawing them; the reports are the engine's."""
    from grader.commands.stream import prime
    from grader.commands.zygote import run_forked

    def scribble() -> bytes:  # a child that spoils every float array it was handed
        for array in _drawn_arrays():
            array.fill(np.nan)
        return b"done"

    for path in (ATTENTION.solution, TYPICAL):
        replay.forget()
        prime(ATTENTION, SANDBOXED, scratch=tmp_path)  # keeps the examples, draws and writes them down
        assert replay._WRITTEN
        replay._DRAWN.clear()
        prime(ATTENTION, SANDBOXED, scratch=tmp_path)  # as a zygote that read them from the store
        read = [one for made in replay._DRAWN.values() for one in made if one is not None and len(one) == 3]
        assert len(read) > 300 and _drawn_arrays()
        assert run_forked(scribble, scratch=tmp_path).output == b"done"  # reaches no other child
        report = run_forked(lambda path=path: graded(path, ATTENTION, SANDBOXED).encode(), scratch=tmp_path)
        replay.forget()
        assert engines(path) == report.output.decode(), path


@pytest.mark.parametrize(
    "handed",
    [
        b"",
        b"not marshal",
        marshal.dumps([1, 2]),
        marshal.dumps(((("k",), ((((1,),), None),)),)),  # a choice of no kind (a tuple)
        marshal.dumps(((("k",), (((1,), "Exit"),)),)),  # a stop of no kind
        marshal.dumps((((1.5,), (((1,), None),)),)),  # a key of no kind
    ],
)
def test_kept_examples_of_another_shape_are_refused_whole(handed):
    with pytest.raises(ValueError):
        replay.adopt(handed)
    assert not replay._KEPT
    assert replay.adopt(marshal.dumps(((("k", 1), (((1, 2.5, True, b"x", "s"), None),)),))) == 1
