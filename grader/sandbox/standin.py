"""The reference standing in for a graded function the student's code calls: one contract,
kept the same in the student's own process (``check``) and in a sandbox (``grade``).

What the student's code passes goes as a sandbox's wire carries it (lists as tuples, numpy
scalars as Python's, arrays as plain copies), must keep the reference's contract within bounds
(:func:`arguments_problem`), and what the reference raises reaches the student's code as the
sandbox's worker raises it (:func:`failure_reply`, :func:`grader.sandbox.inside.worker.answer_of`).
The bounds protect the grading process, where the reference runs: they cap the work one
question can ask for, not the shapes an honest file passes on (a fused projection of queries,
keys and values is three times as wide as the model).
"""

from __future__ import annotations

import numpy as np

#: Elements all the arrays of one question may hold together, and the longest axis of any:
#: far more than any check's inputs, or anything made from them (the checks use D <= 64), far
#: less than a risk to the grading process.
HELPER_ELEMENTS = 1 << 18
HELPER_AXIS = 1024
#: Arguments a reference helper may be given, at most, and items in a tuple or list among them.
HELPER_ARGUMENTS = 16
#: The largest whole number an argument may be.
HELPER_INTEGER = 1 << 20


def arguments_problem(values: list) -> str:
    """Why these arguments may not reach the reference ('' if they may).

    Arrays (alone, or in a tuple or list of them) are bounded in size, and arrays with batch
    axes (all but the last two) share them exactly: the reference's contract has one batch,
    and weights without one; batch axes that broadcast against each other would multiply the
    work the reference does. None passes as it is (how a student passes on an argument whose
    default is None).
    """
    batches, elements = set(), 0
    for value in values:
        items = value if isinstance(value, tuple) else (value,)
        if len(items) > HELPER_ARGUMENTS:
            return f"a tuple of {len(items)} items is more than the checks ever use"
        arrays = [item for item in items if isinstance(item, np.ndarray)]
        if isinstance(value, tuple) and arrays and len(arrays) == len(value):
            if len({a.shape for a in arrays}) == 1:  # the one array numpy makes of them (k and v)
                arrays = [np.broadcast_to(arrays[0], (len(value), *arrays[0].shape))]
        for array in arrays:
            if array.ndim > 2:
                batches.add(array.shape[:-2])
        for item in items:
            if isinstance(item, np.ndarray):
                elements += item.size
                if elements > HELPER_ELEMENTS or max(item.shape, default=0) > HELPER_AXIS:
                    return f"an array of shape {item.shape} is larger than the checks ever use"
            elif item is None:
                continue
            elif isinstance(item, tuple):
                return "a tuple inside a tuple is not accepted"
            elif not isinstance(item, (bool, int, float)) or (
                isinstance(item, int) and abs(item) > HELPER_INTEGER
            ):
                return f"an argument of type {type(item).__name__} is not accepted"
    if len(batches) > 1:
        return f"arrays whose batch axes differ ({', '.join(str(b) for b in sorted(batches))})"
    return ""


def request_problem(helper: str, args, kwargs) -> dict | None:
    """The reply to a question whose arguments the reference may not be given (None: it may)."""
    if not (
        isinstance(args, tuple)
        and isinstance(kwargs, dict)
        and all(isinstance(k, str) for k in kwargs)
        and len(args) + len(kwargs) <= HELPER_ARGUMENTS
    ):
        return {"type": "raise", "exc": "TypeError", "message": "bad arguments"}
    problem = arguments_problem([*args, *kwargs.values()])
    if problem:
        return {"type": "raise", "exc": "ValueError", "message": f"{helper}: {problem}"}
    return None


def failure_reply(helper: str, err: Exception) -> dict:
    """The reply for what the reference raised on the student's arguments: their ValueError and
    TypeError as they are, anything else a ValueError saying the reference failed."""
    if isinstance(err, MemoryError):
        return {"type": "raise", "exc": "MemoryError", "message": f"{helper} needs too much memory here"}
    if isinstance(err, (ValueError, TypeError)):
        return {"type": "raise", "exc": type(err).__name__, "message": str(err)[:300]}
    return {"type": "raise", "exc": "ValueError", "message": f"{helper} failed: {str(err)[:300]}"}
