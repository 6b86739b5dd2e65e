"""Assertions for the checks, each failing with a message a student can act on.

Every message names the quantity, then shows what was expected and what the
student's code gave, on the smallest example Hypothesis could find. Checks go
in a fixed order: type, shape, dtype, values.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from ..core.errors import Failure, PropertyFailure, StudentError
from .draw import rebuilt

__all__ = [
    "Example",
    "PropertyFailure",
    "SHOW_WHOLE",
    "SIDES",
    "close",
    "describe",
    "dtype",
    "equal",
    "floating",
    "fmt",
    "is_tuple",
    "number",
    "pair",
    "pretty",
    "raises",
    "rows_sum_to_one",
    "shape",
    "show",
    "that",
]

#: Arrays with at most this many entries are printed whole in messages.
SHOW_WHOLE = 48
#: Fewest and most significant digits a number is printed with: the fewest that show a
#: difference, from 4 (the most a reader takes in at a glance) up to all of a float64's.
DIGITS, MAX_DIGITS = 4, 17
#: A value this small beside the largest of its array (or beside 1) is 0 up to rounding: it is
#: printed as 0 unless it is where two arrays differ.
ROUNDING = 1e-12
#: An input array is written as nested rows when it has at most this many rows; else flat, with
#: ``.reshape`` (a column of 10 numbers takes one line, not 10).
MAX_ROWS = 8
#: Characters of numbers on one line of an input written flat.
FLAT_LINE = 48
#: Widest multiple of the array's step written as a whole number (``0.25 * np.array([[1, -3]])``).
MAX_MULTIPLE = 999


def number(x, digits: int = DIGITS) -> str:
    """A number as a reader writes it: ``0``, ``-inf``, ``2.5``, ``0.3142``, ``1.2e-05``."""
    x = float(x)
    if x == 0:
        return "0"
    if not np.isfinite(x):
        return str(x)
    return f"{x:.{digits}g}"


def _texts(a: np.ndarray, digits: int, keep: np.ndarray | None = None) -> np.ndarray:
    """Each entry of ``a`` as :func:`number` writes it, entries 0 up to rounding written 0
    (except where ``keep``)."""
    a = np.asarray(a, dtype=float)
    finite = a[np.isfinite(a)]
    scale = max(1.0, float(np.abs(finite).max())) if finite.size else 1.0
    tiny = np.isfinite(a) & (np.abs(a) < ROUNDING * scale)
    if keep is not None:
        tiny &= ~keep
    written = np.empty(a.shape, dtype=object)
    for index in np.ndindex(a.shape):
        written[index] = "0" if tiny[index] else number(a[index], digits)
    return written


def _nested(texts: np.ndarray, indent: int = 0) -> str:
    """Entries (strings) as nested rows, right-aligned: ``[[ 1, -2],\n [ 0,  3]]``."""
    if texts.ndim == 0:
        return str(texts[()])
    width = max((len(t) for t in texts.flat), default=0)

    def rows(block, depth):
        if block.ndim == 1:
            return "[" + ", ".join(t.rjust(width) for t in block) + "]"
        gap = ",\n" + "\n" * (block.ndim - 2) + " " * (indent + depth + 1)
        return "[" + gap.join(rows(sub, depth + 1) for sub in block) + "]"

    return rows(texts, 0)


def fmt(a, digits: int = DIGITS) -> str:
    """Short, readable text for an array or a number."""
    if isinstance(a, np.ndarray):
        return _nested(_texts(a, digits))
    if isinstance(a, (float, np.floating)):
        return number(a, digits)
    return repr(a)


def pair(expected, got, differ=None) -> tuple[str, str]:
    """Two numbers or arrays written with the fewest digits (from :data:`DIGITS`) at which
    every entry where they differ (``differ``, default: wherever they are not equal) prints
    differently: two values that differ never print alike."""
    e, g = np.asarray(expected, dtype=float), np.asarray(got, dtype=float)
    if differ is None:
        differ = ~((e == g) | (np.isnan(e) & np.isnan(g)))
    differ = np.broadcast_to(differ, e.shape)
    where = list(zip(*np.nonzero(differ), strict=True)) if e.ndim else ([()] if differ else [])
    for digits in range(DIGITS, MAX_DIGITS + 1):
        te, tg = _texts(e, digits, differ), _texts(g, digits, differ)
        if all(te[i] != tg[i] for i in where):
            break
    if e.ndim == 0:
        return str(te[()]), str(tg[()])
    return _nested(te), _nested(tg)


def _step(a: np.ndarray) -> float | None:
    """The step of the grid ``a``'s values lie on (each an exact whole multiple of it, none past
    :data:`MAX_MULTIPLE`), or None."""
    finite = a[np.isfinite(a)]
    nonzero = np.abs(finite[finite != 0])
    if finite.size != a.size or nonzero.size == 0:
        return None
    for step in sorted(set(nonzero.tolist()))[:3]:
        with np.errstate(all="ignore"):
            multiples = np.round(a / step)
        if np.array_equal(multiples * step, a) and np.abs(multiples).max() <= MAX_MULTIPLE:
            return step
    return None


def show(a: np.ndarray) -> str:
    """An array as Python code that rebuilds it exactly: ``np.eye(3)``, ``np.zeros((2, 2))``,
    ``0.25 * np.array([[1, -3], [0, 2]], dtype=float)`` (values on a grid, as whole multiples of
    its step), or its entries. Never cut: an array of more than :data:`SHOW_WHOLE` entries that
    is a table is written ``np.arange(...)``; one of many rows (more than :data:`MAX_ROWS`)
    drawn by :mod:`grader.engine.draw`, by the seeded call that drew it; else flat, with
    ``.reshape``."""
    a = np.asarray(a)
    if a.dtype.kind in "iub":
        return _whole_numbers(a)
    single = a.dtype == np.float32
    dtype = "np.float32" if single else "float"
    if a.ndim == 2 and a.shape[0] == a.shape[1] and a.size > 1 and np.array_equal(a, np.eye(a.shape[0])):
        return f"np.eye({a.shape[0]}{', dtype=np.float32' if single else ''})"
    if a.size > 1 and np.all(a == a.flat[0]):
        value = float(a.flat[0])
        if value == 0:
            return f"np.zeros({a.shape}{', dtype=np.float32' if single else ''})"
        return f"np.full({a.shape}, {_exact(value)}{', dtype=np.float32' if single else ''})"
    many_rows = a.ndim > 1 and _rows(a.shape) > MAX_ROWS
    if a.size > SHOW_WHOLE or many_rows:
        short = rebuilt(a, seeded=many_rows)
        if short is not None:
            return short
    step = _step(a.astype(float)) if a.dtype.kind == "f" and a.size else None
    if step is not None:
        ints = np.round(a.astype(float) / step).astype(np.int64).astype(str).astype(object)
        scale = "" if step == 1 else f"{f'np.float32({_exact(step)})' if single else _exact(step)} * "
        return scale + _built(ints, a.shape, dtype, indent=len(scale))
    texts = np.vectorize(_exact, otypes=[object])(a.astype(float)) if a.size else a.astype(object)
    return _built(texts, a.shape, dtype if single else "")


def _whole_numbers(a: np.ndarray) -> str:
    """An array of integers or booleans as Python code that rebuilds it exactly, entries written
    as they are (``np.array([0, 3, -1])``), with its dtype where numpy would not infer it."""
    default = a.dtype == np.asarray(True if a.dtype.kind == "b" else 0).dtype
    named = ("bool" if a.dtype.kind == "b" else "int") if default else f"np.{a.dtype.name}"
    if a.size == 0 and a.ndim:
        return f"np.zeros({a.shape}, dtype={named})"
    if a.size > 1 and np.all(a == a.flat[0]) and a.dtype.kind != "b":
        value = a.flat[0].item()
        if value == 0:
            return f"np.zeros({a.shape}, dtype={named})"
        return f"np.full({a.shape}, {value}{'' if default else f', dtype={named}'})"
    texts = np.array([repr(v) for v in a.ravel().tolist()], dtype=object).reshape(a.shape)
    return _built(texts, a.shape, "" if default and a.size else named)


def _exact(x: float) -> str:
    """The shortest text that reads back as ``x`` exactly (``0.1``, ``-np.inf``, ``2.0``)."""
    if np.isnan(x):
        return "np.nan"
    if np.isinf(x):
        return "np.inf" if x > 0 else "-np.inf"
    return repr(float(x))


def _rows(shape: tuple) -> int:
    """Rows of numbers an array of ``shape`` is written in (1 for an empty or 1-D one)."""
    return int(np.prod(shape[:-1])) if len(shape) > 1 and shape[-1] else 1


def _built(texts: np.ndarray, shape: tuple, dtype: str, indent: int = 0) -> str:
    """``np.array(...)`` of the entries: nested rows when there are few, else flat with
    ``.reshape``."""
    typed = f", dtype={dtype}" if dtype else ""
    if texts.ndim <= 1 or _rows(shape) <= MAX_ROWS:
        return f"np.array({_nested(texts, indent=indent + len('np.array('))}{typed})"
    rows, line = [], ""
    for text in (str(t) for t in texts.flat):  # flat, a line of numbers at a time
        if line and len(line) + len(text) + 2 > FLAT_LINE:
            rows.append(line + ",")
            line = ""
        line = f"{line}, {text}" if line else text
    flat = ("\n" + " " * (indent + len("np.array(["))).join([*rows, line])
    return f"np.array([{flat}]{typed}).reshape{shape}"


def pretty(**fields) -> str:
    """'field = value' lines, arrays shown by :func:`show`."""
    lines = []
    for key, value in fields.items():
        text = show(value) if isinstance(value, np.ndarray) else repr(value)
        lines.append(f"{key} = " + text.replace("\n", "\n" + " " * (len(key) + 3)))
    return "\n".join(lines)


def describe(**values) -> str:
    """The arguments of a call in brief, for a message's ``name=``: arrays by their shape, other
    values as Python writes them: ``describe(x=np.zeros((2, 3)), n_heads=2)`` is
    ``'x of shape (2, 3), n_heads=2'``."""
    return ", ".join(
        f"{k} of shape {v.shape}" if isinstance(v, np.ndarray) else f"{k}={v!r}" for k, v in values.items()
    )


@runtime_checkable
class Example(Protocol):
    """What a strategy may draw besides plain values: an object that writes itself whole.

    When a check fails on an example a strategy drew as such an object (a dataclass holding the
    arrays of one call, say), the grader shows the student ``example.describe()``: Python lines
    that rebuild every input, as :func:`pretty` writes them. Any other value is shown by the
    grader itself (an array by :func:`show`)."""

    def describe(self) -> str:
        """The example as ``name = value`` lines a student can paste and run."""
        ...


def that(condition: bool, message: str) -> None:
    """Fail with ``message`` unless ``condition`` holds."""
    if not condition:
        raise PropertyFailure(message)


def is_tuple(got, *, name: str, length: int) -> None:
    that(
        isinstance(got, tuple) and len(got) == length,
        f"{name} should be a tuple of {length} arrays, but it is "
        + (f"a tuple of {len(got)}" if isinstance(got, tuple) else "a single array")
        + ".",
    )


def shape(got: np.ndarray, expected: tuple, *, name: str) -> None:
    """The shape must be ``expected`` exactly."""
    that(
        isinstance(got, np.ndarray),
        f"{name} should be a numpy array of shape {expected}, but it is a tuple.",
    )
    that(got.shape == tuple(expected), f"{name} has shape {got.shape}, expected {tuple(expected)}.")


def dtype(got: np.ndarray, expected, *, name: str) -> None:
    expected = np.dtype(expected)
    that(got.dtype == expected, f"{name} has dtype {got.dtype}, expected {expected} (the input's dtype).")


def floating(got: np.ndarray, *, name: str) -> None:
    that(got.dtype.kind == "f", f"{name} has dtype {got.dtype}, expected a floating-point dtype.")


def _first_mismatch(bad: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(bad)[0])


#: How the two sides of a comparison are called when a check says nothing else.
SIDES = ("expected", "got")


def sides_of(name: str, what: str, sides: tuple[str, str] | None) -> tuple[str, str]:
    """What to call the two sides (``expected``'s, then ``got``'s): as a check says, else read
    from its words where both come from the student's own function: ``what`` = "differs from X"
    compares ``name`` with X; "changed when ..." compares a value before and after a change.
    Else "expected" and "got". (A check's words, not a new argument, so that no check's source
    changes: Hypothesis seeds each check's examples from its source.)"""
    if sides is not None:
        return sides
    if what.startswith("differs from "):
        return what.removeprefix("differs from ") + ":", name + ":"
    if what.startswith("changed when "):
        return "before:", "after:"
    return SIDES


def _values_message(got, expected, bad, *, name: str, what: str, sides: tuple[str, str] | None) -> str:
    where = _first_mismatch(bad)
    count = int(bad.sum())
    one, other = pair(expected[where], got[where])
    first, second = sides_of(name, what, sides)
    text = (
        f"{name} {what} at index {list(where)}: {first} {one}, {second} {other}"
        f" ({count} of {bad.size} entries differ)."
    )
    if expected.size <= SHOW_WHOLE:
        whole_expected, whole_got = pair(expected, got, bad)
        text += f"\n{first.rstrip(':')}:\n{whole_expected}\n{second.rstrip(':')}:\n{whole_got}"
    return text


def equal(
    got: np.ndarray,
    expected: np.ndarray,
    *,
    name: str,
    what: str = "is wrong",
    sides: tuple[str, str] | None = None,
) -> None:
    """Same shape and exactly the same values (infinities included). ``sides`` names the two
    (what ``expected`` is, what ``got`` is) where "expected" and "got" would mislead."""
    shape(got, expected.shape, name=name)
    bad = ~((got == expected) | (np.isnan(got) & np.isnan(expected)))
    if bad.any():
        raise PropertyFailure(_values_message(got, expected, bad, name=name, what=what, sides=sides))


def close(
    got,
    expected,
    *,
    name: str,
    rtol: float,
    atol: float,
    what: str = "is wrong",
    sides: tuple[str, str] | None = None,
) -> None:
    """Same shape and values equal up to rounding (``rtol``, ``atol``); ``sides`` as for
    :func:`equal`."""
    shape(got, expected.shape, name=name)
    finite = np.isfinite(got)
    bad = ~np.isclose(got, expected, rtol=rtol, atol=atol) | ~finite
    if bad.any():
        raise PropertyFailure(_values_message(got, expected, bad, name=name, what=what, sides=sides))


def rows_sum_to_one(weights: np.ndarray, *, name: str, atol: float) -> None:
    """Every row of weights adds up to 1 (and holds no nan)."""
    sums = weights.sum(axis=-1)
    bad = ~np.isclose(sums, 1.0, rtol=0, atol=atol)
    if bad.any():
        where = _first_mismatch(bad)
        raise PropertyFailure(
            f"Row {list(where)} of {name} adds up to {fmt(sums[where])}, but every row of weights "
            f"must add up to 1.\n{name}{list(where)} = {fmt(weights[where])}"
        )


def raises(call, exception: str, *, name: str, reason: str) -> None:
    """``call()`` must raise ``exception`` (by name); ``reason`` says why it should."""
    try:
        call()
    except StudentError as err:
        if err.kind is not Failure.RAISED:
            raise  # missing, unwritten, wrong signature: reported as such
        that(exception in err.raised, f"{name} should raise {exception} ({reason}), but {err.message}")
        return
    raise PropertyFailure(f"{name} returned a result, but {reason}: it should raise {exception}.")
