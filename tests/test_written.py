"""A property's drawn arguments written down for the store (grader.engine.written): what is
written reads back as the very same values, whatever cannot be written exactly is left to be
drawn, and reading builds nothing but numeric arrays, plain values and the lesson's own
dataclasses, found among modules of its checks already imported.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import types

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grader.engine import replay
from grader.engine.written import MAX_BYTES, DataLater, exact, read, written

from .support import ROOT
from .values import arguments, same

#: Where the classes of these tests are "defined": a folder standing for a lesson's checks.
CHECKS = str(ROOT / "tests" / "checks" / "attention")


@dataclasses.dataclass(frozen=True)
class Case:
    x: np.ndarray
    n_heads: int


@dataclasses.dataclass
class WithHidden:
    x: int
    y: int = dataclasses.field(init=False, default=0)


@dataclasses.dataclass(frozen=True)
class Defaulted:
    x: int
    n_heads: int = 1


@dataclasses.dataclass
class Outside:
    """A dataclass of a module outside the lesson's checks (this one)."""

    v: int


@pytest.fixture()
def lesson_module(monkeypatch):
    """A module that claims a file among the lesson's checks, holding the dataclass Case."""
    module = types.ModuleType("lesson_checks_for_written")
    module.__file__ = f"{CHECKS}/strategies_for_written.py"
    module.Case, module.Defaulted = Case, Defaulted
    module.__hidden__ = Case  # found only by a name the reader refuses
    module.Outside = Outside  # imported there from elsewhere: not the lesson's own
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for cls in (Case, Defaulted):
        monkeypatch.setattr(cls, "__module__", module.__name__)
    return module


def _array_bytes(value) -> int:
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, dict):
        return sum(_array_bytes(v) for v in value.values())
    if isinstance(value, (tuple, list)):
        return sum(_array_bytes(v) for v in value)
    return 0


@given(arguments(dicts=True))
def test_what_is_written_reads_back_as_the_same_values(drawn):
    down = written(drawn)
    if down is None:  # only arrays too large to be worth it are left out here
        assert _array_bytes(drawn) > MAX_BYTES
        return
    assert json.loads(json.dumps(down)) == down  # plain JSON
    back = read(json.loads(json.dumps(down)), CHECKS)
    assert same(back, drawn) and exact(down, CHECKS)
    assert written(back) == down


def test_a_lesson_dataclass_reads_back_as_a_fresh_instance(lesson_module):
    case = Case(np.arange(6.0).reshape(2, 3), 3)
    down = written({"case": case})
    back = read(down, CHECKS)["case"]
    assert type(back) is Case and back is not case and same(back, case) and exact(down, CHECKS)
    back.x[0, 0] = 99.0  # a fresh array: the next read is untouched
    assert read(down, CHECKS)["case"].x[0, 0] == 0.0


@pytest.mark.parametrize(
    "value",
    [
        object(),
        np.array([object()], dtype=object),
        np.zeros((3, 4))[:, 1],  # not contiguous
        np.zeros(3).view(np.matrix),
        np.zeros(2, dtype=[("a", "<f8")]),
        np.zeros(MAX_BYTES // 8 + 1),
        WithHidden(1),
        {1: 2},
        st.data(),
    ],
    ids=[
        "object",
        "object-array",
        "strided",
        "subclass",
        "structured",
        "large",
        "init-false",
        "int-keys",
        "data",
    ],
)
def test_what_cannot_be_written_exactly_is_left_to_be_drawn(value):
    assert written({"x": np.ones(2), "y": value}) is None


def test_a_propertys_data_argument_is_written_as_the_choices_the_others_took():
    """A property's ``st.data()`` argument is written as how many choices the other arguments
    took (the check draws the rest as it runs), at the top of the arguments only."""
    down = written({"x": np.ones(2), "data": DataLater(3)})
    assert down["data"] == {"h": 3} and exact(down, CHECKS)
    back = read(json.loads(json.dumps(down)), CHECKS)
    assert back["data"] == DataLater(3) and type(back["data"]) is DataLater
    assert written({"x": (DataLater(3),)}) is None  # inside another value: not a property's own
    for bad in ({"t": [{"h": 3}]}, {"h": -1}, {"h": "3"}, {"h": 2**40}, {"h": 3.0}):
        with pytest.raises(ValueError):
            read({"data": bad}, CHECKS)


def test_the_same_array_in_two_places_reads_back_as_one_array():
    """An example that holds one array in two places (a layer whose two weights are the same
    identity matrix) is written once and read back as one array in both places, as drawn."""
    eye = np.eye(3)
    down = written({"case": (eye, 2), "w_q": eye, "w_k": eye, "other": np.eye(3)})
    assert down is not None and down["w_q"] == {"r": 0} and down["w_k"] == {"r": 0} and exact(down, CHECKS)
    back = read(json.loads(json.dumps(down)), CHECKS)
    assert back["w_q"] is back["case"][0] and back["w_k"] is back["w_q"] and back["other"] is not back["w_q"]
    assert same(back["other"], eye)
    for bad in ({"r": 1}, {"r": -1}, {"r": True}, {"r": "0"}):  # nothing read yet to name, or no index
        with pytest.raises(ValueError):
            read({"x": {"a": ["<f8", [1], "AAAAAAAAAAA="]}, "y": bad}, CHECKS)


def test_arrays_sharing_memory_and_read_only_ones_are_left_to_be_drawn():
    base = np.arange(8.0)
    assert written({"a": base[:4], "b": base[2:6]}) is None  # one a view of the other's numbers
    frozen = np.ones(3)
    frozen.flags.writeable = False
    assert written({"x": frozen}) is None
    assert written({"a": np.ones(2), "b": np.ones(2)}) is not None


@dataclasses.dataclass(slots=True)
class Slotted:
    x: int


class MoreSlots(Slotted):
    __slots__ = ("hidden",)


def test_one_object_in_two_places_and_state_in_slots_are_left_to_be_drawn():
    shared = [1.0, 2.0]
    assert written({"a": shared, "b": shared}) is None  # read back, they would be two lists
    assert written({"a": [1], "b": [1]}) is not None
    extra = MoreSlots(1)
    extra.hidden = 2
    assert written({"x": extra}) is None
    assert written({"x": Slotted(1)}) is not None


def test_an_attribute_beyond_the_fields_is_left_to_be_drawn(lesson_module):
    case = Case(np.ones(2), 1)
    object.__setattr__(case, "extra", 1)
    assert written({"case": case}) is None


@pytest.mark.parametrize(
    "down",
    [
        [],
        {"x": {"a": ["|O", [1], "AAAAAAAAAAA="]}},  # an object array: pointers
        {"x": {"a": ["V8", [1], "AAAAAAAAAAA="]}},
        {"x": {"a": ["<f8", [2], "AAAAAAAAAAA="]}},  # 8 bytes for two float64s
        {"x": {"a": ["<f8", [-1], ""]}},
        {"x": {"a": ["<f8", [1], "not base64!"]}},
        {"x": {"c": [f"{__name__}:Outside", [["v", {"i": "1"}]]]}},  # a dataclass outside the checks
        {"x": {"c": ["no_such_module_here:Case", []]}},  # never imported to find it
        {"x": {"c": ["lesson_checks_for_written:__hidden__", [["x", {"i": "1"}], ["n_heads", {"i": "1"}]]]}},
        {
            "x": {"c": ["lesson_checks_for_written:Defaulted", [["x", {"i": "1"}]]]}
        },  # a field left to its default
        {"x": {"c": ["lesson_checks_for_written:Outside", [["v", {"i": "1"}]]]}},
        {"x": {"i": "1" * 100}},
        {"x": {"f": "00"}},
        {"x": {"f": "00000000000000  "}},  # fromhex skips the spaces: 7 bytes
        {"x": {"a": ["<f8", [2**64], ""]}},
        {"x": {"a": [",O", [1], "AAAAAAAAAAA="]}},
        {"x": {"a": ["a", [1], "AA=="]}},
        {"x": {"zz": 1}},
        {"x": 3},  # a bare number: never written so
        {"x": {"t": [{"t": [{"t": []}]}] * 1}, "y": {"l": [None] * 5000}},
    ],
    ids=[
        "a list",
        "object dtype",
        "void dtype",
        "short bytes",
        "negative shape",
        "not base64",
        "class elsewhere",
        "module not imported",
        "dunder",
        "fields missing",
        "re-exported",
        "huge int",
        "short float",
        "spaced float",
        "huge axis",
        "comma dtype",
        "bytes dtype",
        "unknown tag",
        "bare number",
        "too many values",
    ],
)
def test_reading_refuses_anything_not_of_its_shape(lesson_module, down):
    with pytest.raises(ValueError):
        read(down, CHECKS)
    assert not exact(down, CHECKS)


def test_reading_never_nests_without_end():
    deep: dict = {"t": []}
    for _ in range(200):
        deep = {"t": [deep]}
    with pytest.raises(ValueError):
        read({"x": deep}, CHECKS)


def test_examples_adopted_again_keep_their_arguments_and_new_ones_lose_them():
    """A batch's zygote reads the store (arguments written down), then adopts the same examples
    handed back by the child that graded the reference: they are not written down again. Other
    examples under the key are drawn until written down for them."""
    replay.forget()
    try:
        examples = (((1, 2), None),)
        replay.adopt_items(((("k",), examples),), from_disk=True, down={("k",): ({"x": None},)})
        replay.adopt_items(((("k",), examples),))  # the same, from a child
        assert replay.written_down(("k",)) == ({"x": None},)
        replay.adopt_items(((("k",), (((3,), None),)),))  # others
        assert replay.written_down(("k",)) is None
    finally:
        replay.forget()
