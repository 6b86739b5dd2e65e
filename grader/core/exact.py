"""Arguments compared exactly, and values copied whole: what lets a call be answered again.

:func:`arguments_digest` tells two calls apart unless every argument is equal, kind and shape
included (an array by its dtype, shape and bytes; a number, a string or None by its type and
``repr``; a tuple or list item by item), and gives up (None) on anything else: an object's
``repr`` may leave out what differs (numpy prints a large array with an ellipsis) or name a
memory address that is used again. :func:`copied` copies a call's value so that nothing holding
the copy can change the original.
"""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["NUMERIC_KINDS", "arguments_digest", "copied", "nbytes"]

#: The kinds of array compared, and written down, exactly (booleans, integers, floats, complex).
NUMERIC_KINDS = frozenset("biufc")
#: Plain values compared by their type and ``repr`` (which tells any two of them apart).
_PLAIN = (bool, int, float, complex, str, bytes, type(None))


class _Inexact(Exception):
    """An argument that cannot be compared exactly."""


def _feed(h, value) -> None:
    if type(value) is np.ndarray:
        if value.dtype.kind not in NUMERIC_KINDS or value.dtype.names is not None:
            raise _Inexact
        h.update(f"a{value.dtype.str}{value.shape}".encode())
        h.update(np.ascontiguousarray(value).tobytes())
    elif type(value) in _PLAIN or isinstance(value, np.generic) and value.dtype.kind in NUMERIC_KINDS:
        h.update(f"v{type(value).__name__}:{value!r}".encode())
    elif type(value) in (tuple, list):
        h.update(f"{type(value).__name__}{len(value)}(".encode())
        for item in value:
            _feed(h, item)
            h.update(b",")
        h.update(b")")
    else:
        raise _Inexact
    h.update(b"\0")


def arguments_digest(arguments: dict) -> bytes | None:
    """A digest of a call's arguments (name -> value) that two calls share only if every
    argument is equal, kind and shape included; None where an argument cannot be compared so."""
    h = hashlib.blake2b(digest_size=20)
    try:
        for name, value in arguments.items():
            h.update(name.encode())
            h.update(b"=")
            _feed(h, value)
    except _Inexact:
        return None
    return h.digest()


def copied(value):
    """A copy of a call's value that shares no array with ``value``."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, (tuple, list)):
        return type(value)(copied(v) for v in value)
    return value


def nbytes(value) -> int:
    """The bytes of the arrays in a call's value (tuples and lists looked into)."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, (tuple, list)):
        return sum(nbytes(v) for v in value)
    return 0
