"""Assertions for the checks, each failing with a message a student can act on.

Every message names the quantity, then shows what was expected and what the
student's code gave, on the smallest example Hypothesis could find. Checks go
in a fixed order: type, shape, dtype, values.
"""

from __future__ import annotations

import numpy as np

from ..core.errors import Failure, PropertyFailure, StudentError

__all__ = [
    "PropertyFailure",
    "SHOW_WHOLE",
    "close",
    "dtype",
    "equal",
    "floating",
    "fmt",
    "is_tuple",
    "pretty",
    "raises",
    "rows_sum_to_one",
    "shape",
    "show",
    "that",
]

#: Arrays with at most this many entries are printed whole in messages.
SHOW_WHOLE = 48


def fmt(a) -> str:
    """Short, readable text for an array or a number."""
    if isinstance(a, np.ndarray):
        return np.array2string(a, precision=4, separator=", ", max_line_width=100)
    if isinstance(a, (float, np.floating)):
        return f"{float(a):.6g}"
    return repr(a)


def show(a: np.ndarray) -> str:
    """An array as a reader would write it: np.eye(3), np.zeros((2, 2)) or its entries."""
    if a.ndim == 2 and a.shape[0] == a.shape[1] and a.size > 1 and np.array_equal(a, np.eye(a.shape[0])):
        return f"np.eye({a.shape[0]})"
    if a.size > 1 and np.all(a == a.flat[0]):
        value = float(a.flat[0])
        return f"np.zeros({a.shape})" if value == 0 else f"np.full({a.shape}, {value:g})"
    text = np.array2string(a, precision=4, separator=", ", max_line_width=100, prefix="np.array(")
    return f"np.array({text}{', dtype=np.float32' if a.dtype == np.float32 else ''})"


def pretty(**fields) -> str:
    """'field = value' lines, arrays shown by :func:`show`."""
    lines = []
    for key, value in fields.items():
        text = show(value) if isinstance(value, np.ndarray) else repr(value)
        lines.append(f"{key} = " + text.replace("\n", "\n" + " " * (len(key) + 3)))
    return "\n".join(lines)


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


def _values_message(got, expected, bad, *, name: str, what: str) -> str:
    where = _first_mismatch(bad)
    count = int(bad.sum())
    text = (
        f"{name} {what} at index {list(where)}: expected {fmt(expected[where])}, got {fmt(got[where])}"
        f" ({count} of {bad.size} entries differ)."
    )
    if expected.size <= SHOW_WHOLE:
        text += f"\nexpected:\n{fmt(expected)}\ngot:\n{fmt(got)}"
    return text


def equal(got: np.ndarray, expected: np.ndarray, *, name: str, what: str = "is wrong") -> None:
    """Same shape and exactly the same values (infinities included)."""
    shape(got, expected.shape, name=name)
    bad = ~((got == expected) | (np.isnan(got) & np.isnan(expected)))
    if bad.any():
        raise PropertyFailure(_values_message(got, expected, bad, name=name, what=what))


def close(got, expected, *, name: str, rtol: float, atol: float, what: str = "is wrong") -> None:
    """Same shape and values equal up to rounding (``rtol``, ``atol``)."""
    shape(got, expected.shape, name=name)
    finite = np.isfinite(got)
    bad = ~np.isclose(got, expected, rtol=rtol, atol=atol) | ~finite
    if bad.any():
        raise PropertyFailure(_values_message(got, expected, bad, name=name, what=what))


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
