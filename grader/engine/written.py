"""A property's drawn arguments written down as plain data, and read back as fresh objects.

Replay (:mod:`.replay`) rebuilds each kept example by drawing it again from its choices, and
drawing is a third of what a replayed grade costs. The store on disk (:mod:`.store`) therefore
also keeps each example's arguments as they were drawn, written down here, so that a later
grading process reads them instead of drawing them. Only what can be written down exactly and
read back as the same thing is: arrays of numbers (dtype, shape and every byte), numbers (a
float by its 8 bytes), strings, None, tuples, lists, dictionaries with string keys,
instances of the lesson's own dataclasses (a class defined in a module of the lesson's checks,
already imported, rebuilt from its fields), and, for a property's ``st.data()`` argument, how
many of its example's choices the other arguments took (:class:`DataLater`: the check draws the
rest as it runs). The same array in two places is written once and read back as one array in
both places. Anything else (a Hypothesis ``data`` object inside another value, an
array that is a view of another argument's memory, a read-only or non-contiguous array, a
dataclass with fields its constructor does not take or attributes beyond its fields) leaves the
example to be drawn as before, and so does an example whose arrays hold more than
:data:`MAX_BYTES`. :func:`written` is checked by :func:`exact` before it is kept:
what reads back must write down to the very same text.

Reading (:func:`read`) never imports a module, never calls anything but a dataclass's own
constructor of a class found as above, makes arrays only of numeric dtypes from their bytes,
and refuses (ValueError) anything not of this shape.
"""

from __future__ import annotations

import base64
import dataclasses
import math
import os
import re
import struct
import sys

import numpy as np

from ..core.exact import NUMERIC_KINDS

__all__ = ["DataLater", "exact", "read", "written"]

#: How deep a written value may nest, and how many values it may hold in all.
MAX_DEPTH = 16
MAX_VALUES = 4096
#: The dtypes read back: byte order, kind, size (as ``dtype.str`` writes a number's dtype).
_DTYPE = re.compile(r"[<>|=]?[biufc][0-9]{1,2}")
#: A float's eight bytes in hexadecimal.
_HEX16 = re.compile(r"[0-9a-f]{16}")
#: The dtypes already read (their text -> the dtype), each checked once.
_DTYPES: dict[str, np.dtype] = {}
#: The longest axis of an array read back.
MAX_AXIS = 1 << 20
#: The bytes of arrays one example's arguments may hold to be written down: a larger example is
#: drawn from its choices. Drawing one of the first lesson's larger examples (a layer's weights,
#: a few KiB) costs more than reading it: at 64 KiB every one of its examples is read, and
#: the examples it ships take 96 KiB gzipped (44 KiB at 8 KiB, when a fifth were drawn).
MAX_BYTES = 1 << 16


class _Unwritable(Exception):
    """A value that cannot be written down exactly."""


class DataLater:
    """Stands, among written-down arguments, for a property's ``st.data()`` argument: what the
    check draws from it as it runs comes from its example's choices past the ``taken`` first
    (those its other arguments took). Replay (:mod:`.replay`) gives the check a fresh one."""

    __slots__ = ("taken",)

    def __init__(self, taken: int):
        self.taken = taken

    def __eq__(self, other) -> bool:
        return type(other) is DataLater and other.taken == self.taken

    def __hash__(self) -> int:
        return hash(("DataLater", self.taken))


#: The most choices written-down arguments may say they took (a check's examples take dozens).
MAX_TAKEN = 1 << 20


def _array_ok(value: np.ndarray) -> bool:
    dtype = value.dtype
    return (
        dtype.kind in NUMERIC_KINDS
        and dtype.names is None
        and dtype.subdtype is None
        and value.flags.c_contiguous
        and value.flags.writeable
    )


def _slots(cls: type) -> set[str]:
    """The slots a class's instances have, its bases' included (but ``__dict__`` and ``__weakref__``)."""
    names: set[str] = set()
    for klass in cls.__mro__:
        slots = vars(klass).get("__slots__", ())
        names |= {slots} if isinstance(slots, str) else set(slots)
    return names - {"__dict__", "__weakref__"}


def _write(value, arrays: list, depth: int, seen: set[int]):
    if depth > MAX_DEPTH:
        raise _Unwritable
    if type(value) in (list, dict, tuple) or dataclasses.is_dataclass(type(value)):
        if id(value) in seen and type(value) is not tuple:
            raise _Unwritable  # one object in two places: read back, they would be two
        seen.add(id(value))
    if type(value) is DataLater:
        if depth != 0:  # a property's own argument, never inside another value
            raise _Unwritable
        return {"h": value.taken}
    if type(value) is np.ndarray:
        for number, earlier in enumerate(arrays):
            if earlier is value:  # the very array again: read back, the very array again
                return {"r": number}
        if not _array_ok(value):
            raise _Unwritable
        arrays.append(value)
        return {"a": [value.dtype.str, list(value.shape), base64.b64encode(value.tobytes()).decode()]}
    if isinstance(value, np.generic):
        if value.dtype.kind not in NUMERIC_KINDS or type(value) is not value.dtype.type:
            raise _Unwritable
        return {"g": [value.dtype.str, base64.b64encode(value.tobytes()).decode()]}
    if type(value) is bool or value is None:
        return value
    if type(value) is int:
        return {"i": str(value)}  # any size, exactly
    if type(value) is float:
        return {"f": struct.pack(">d", value).hex()}  # every bit: -0.0, NaN's payload
    if type(value) is str:
        return {"s": value}
    if type(value) in (tuple, list):
        return {"t" if type(value) is tuple else "l": [_write(v, arrays, depth + 1, seen) for v in value]}
    if type(value) is dict:
        if not all(type(k) is str for k in value):
            raise _Unwritable
        return {"d": [[k, _write(v, arrays, depth + 1, seen)] for k, v in value.items()]}
    cls = type(value)
    if dataclasses.is_dataclass(cls) and not isinstance(value, type):
        fields = dataclasses.fields(cls)
        if any(not f.init for f in fields):
            raise _Unwritable
        names = {f.name for f in fields}
        if hasattr(value, "__dict__") and set(vars(value)) - names or _slots(cls) - names:
            raise _Unwritable  # state beyond its fields, which its constructor would not give back
        return {
            "c": [
                f"{cls.__module__}:{cls.__qualname__}",
                [[f.name, _write(getattr(value, f.name), arrays, depth + 1, seen)] for f in fields],
            ]
        }
    raise _Unwritable


def written(arguments: dict):
    """``arguments`` (name -> drawn value) written down as plain JSON data, or None where any of
    them cannot be (see the module's text), or two of their arrays share memory."""
    arrays: list[np.ndarray] = []
    try:
        seen: set[int] = set()
        down = {name: _write(value, arrays, 0, seen) for name, value in arguments.items()}
    except (_Unwritable, RecursionError):
        return None
    if sum(a.nbytes for a in arrays) > MAX_BYTES:
        return None
    for i, a in enumerate(arrays):  # each array once (the same one twice is written as one)
        for b in arrays[i + 1 :]:
            if np.may_share_memory(a, b):
                return None  # one argument a view of another's memory: read back apart, they would not be
    return down


class _Reader:
    def __init__(self, checks: str):
        self.checks = os.path.join(os.path.normpath(os.path.abspath(checks)), "")
        self.values = 0
        self.arrays: list[np.ndarray] = []  # in the order they were read, for "r" to name

    def _class(self, name) -> type:
        if not isinstance(name, str) or name.count(":") != 1:
            raise ValueError("a written class of an unknown shape")
        module_name, qualname = name.split(":")
        module = sys.modules.get(module_name)  # never imported here
        where = getattr(module, "__file__", None)
        if not isinstance(where, str) or not os.path.normpath(os.path.abspath(where)).startswith(self.checks):
            raise ValueError(f"a written class from outside the lesson's checks ({name[:100]})")
        found = module
        for part in qualname.split("."):
            if not part.isidentifier() or part.startswith("__"):
                raise ValueError("a written class of an unknown shape")
            found = vars(found).get(part) if isinstance(found, type) or found is module else None
        if not (
            isinstance(found, type)
            and dataclasses.is_dataclass(found)
            and found.__module__ == module_name
            and found.__qualname__ == qualname
        ):  # defined there, under that name: not one a module of the checks imported from elsewhere
            raise ValueError(f"no dataclass {name[:100]} in the lesson's checks")
        return found

    def value(self, item, depth: int = 0):
        self.values += 1
        if depth > MAX_DEPTH or self.values > MAX_VALUES:
            raise ValueError("written arguments too large")
        if item is None or type(item) is bool:
            return item
        if not (type(item) is dict and len(item) == 1):
            raise ValueError("a written value of an unknown shape")
        ((tag, body),) = item.items()
        if tag == "a" and type(body) is list and len(body) == 3:
            self.arrays.append(self._array(*body))
            return self.arrays[-1]
        if tag == "r" and type(body) is int and 0 <= body < len(self.arrays):
            return self.arrays[body]  # the same array as before, as it was drawn
        if tag == "g" and type(body) is list and len(body) == 2:
            dtype, raw = self._dtype(body[0]), self._bytes(body[1])
            if len(raw) != dtype.itemsize:
                raise ValueError("a written number of the wrong size")
            return np.frombuffer(raw, dtype=dtype)[0].copy()
        if tag == "h" and depth == 0 and type(body) is int and 0 <= body <= MAX_TAKEN:
            return DataLater(body)
        if tag == "i" and type(body) is str and len(body) <= 64:
            return int(body)
        if tag == "f" and type(body) is str and _HEX16.fullmatch(body):
            return struct.unpack(">d", bytes.fromhex(body))[0]
        if tag == "s" and type(body) is str:
            return body
        if tag in ("t", "l") and type(body) is list:
            items = [self.value(v, depth + 1) for v in body]
            return tuple(items) if tag == "t" else items
        if tag == "d" and type(body) is list:
            return {self._key(pair): self.value(pair[1], depth + 1) for pair in body}
        if tag == "c" and type(body) is list and len(body) == 2 and type(body[1]) is list:
            cls = self._class(body[0])
            fields = {self._key(pair): self.value(pair[1], depth + 1) for pair in body[1]}
            if set(fields) != {f.name for f in dataclasses.fields(cls) if f.init}:
                raise ValueError("a written dataclass with other fields than its class")
            try:
                return cls(**fields)
            except Exception as err:  # noqa: BLE001 - the lesson's constructor refused them
                raise ValueError(f"a written dataclass its class refused ({type(err).__name__})") from None
        raise ValueError("a written value of an unknown kind")

    @staticmethod
    def _key(pair) -> str:
        if not (type(pair) is list and len(pair) == 2 and type(pair[0]) is str):
            raise ValueError("a written field of an unknown shape")
        return pair[0]

    @staticmethod
    def _dtype(text) -> np.dtype:
        known = _DTYPES.get(text) if type(text) is str else None
        if known is not None:
            return known
        if not (type(text) is str and _DTYPE.fullmatch(text)):
            raise ValueError("a written dtype of an unknown shape")
        try:
            dtype = np.dtype(text)
        except TypeError:
            raise ValueError("a written dtype numpy does not know") from None
        if dtype.kind not in NUMERIC_KINDS or dtype.names is not None or dtype.subdtype is not None:
            raise ValueError("a written dtype that is not a number's")
        if len(_DTYPES) < 64:  # the few a lesson writes, each looked up once
            _DTYPES[text] = dtype
        return dtype

    @staticmethod
    def _bytes(text) -> bytes:
        if type(text) is not str:
            raise ValueError("written bytes of an unknown shape")
        try:
            return base64.b64decode(text.encode("ascii"), validate=True)
        except (ValueError, UnicodeEncodeError):
            raise ValueError("written bytes that are not base64") from None

    def _array(self, dtype, shape, raw) -> np.ndarray:
        dtype = self._dtype(dtype)
        if not (
            type(shape) is list
            and len(shape) <= 32
            and all(type(n) is int and 0 <= n <= MAX_AXIS for n in shape)
        ):
            raise ValueError("a written shape of an unknown form")
        data = self._bytes(raw)
        if len(data) != math.prod(shape) * dtype.itemsize:
            raise ValueError("a written array whose bytes do not fill its shape")
        return np.frombuffer(data, dtype=dtype).reshape(shape).copy()


def read(data, checks: str) -> dict:
    """Fresh arguments (name -> value) from what :func:`written` wrote, its classes looked up
    among the modules of the lesson's checks folder ``checks`` imported in this process;
    ValueError for anything else."""
    if not (type(data) is dict and all(type(k) is str for k in data)):
        raise ValueError("written arguments of an unknown shape")
    reader = _Reader(checks)
    try:
        return {name: reader.value(item) for name, item in data.items()}
    except ValueError:
        raise
    except Exception as err:  # noqa: BLE001 - whatever numpy or struct made of it: not ours to read
        raise ValueError(f"written arguments that do not read back ({type(err).__name__})") from None


def exact(data, checks: str) -> bool:
    """Whether ``data`` (from :func:`written`) reads back as values that write down the same."""
    try:
        return written(read(data, checks)) == data
    except ValueError:
        return False
