"""Turn the way a check ended into a status and a paragraph a student can act on."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..core.authored import message_of
from ..core.errors import Failure, PropertyFailure, StudentError, StudentTimeout, Unfinished
from ..core.results import Status
from .expect import Example, show


@dataclass(frozen=True)
class Outcome:
    """What one failed check says: its status, the message and the smallest example."""

    status: Status
    message: str
    counterexample: str = ""


def _show(value) -> str:
    if isinstance(value, Example):
        return value.describe()
    if isinstance(value, np.ndarray):
        return show(value)
    return repr(value)


def counterexample_of(err: BaseException) -> str:
    """The inputs of Hypothesis's smallest failing example, one per line, as Python that
    rebuilds them exactly (every argument, never cut).

    The plugin records the arguments on the exception (``grader_inputs``);
    values drawn inside the test come from Hypothesis's notes.
    """
    inputs = getattr(err, "grader_inputs", None) or {}
    lines = []
    for name, value in inputs.items():
        text = _show(value)
        lines.append(
            text
            if isinstance(value, Example)
            else f"{name} = " + text.replace("\n", "\n" + " " * (len(name) + 3))
        )
    for note in getattr(err, "__notes__", ()):
        match = re.match(r"Draw \d+ \((\w+)\): (.*)", note, re.S)
        if match:
            lines.append(f"{match.group(1)} = {match.group(2)}")
    return "\n".join(lines)  # whole, however large: the text report shortens it, never this


def flaky(err: BaseException) -> bool:
    """Whether Hypothesis found the check's runs of one input to differ (any kind of its ``Flaky``:
    a failure that passed when run again, or draws that changed between runs because what the
    student's function returned decided them). Told by the class's ancestry, so that this module
    need not import Hypothesis."""
    return any(c.__name__ == "Flaky" and c.__module__ == "hypothesis.errors" for c in type(err).__mro__)


def _flaky_cause(err: BaseException) -> BaseException | None:
    for inner in getattr(err, "exceptions", ()):
        return inner
    return None


def outcome_of(err: BaseException) -> Outcome:
    """Classify an exception raised by a check."""
    example = counterexample_of(err)
    if isinstance(err, Unfinished):
        return Outcome(Status.UNFINISHED, err.message, example)
    if isinstance(err, StudentTimeout):
        return Outcome(Status.TIMEOUT, err.message, example)
    if isinstance(err, StudentError):
        # a missing or unwritten function fails on every input: no example to show
        useful = err.kind in (Failure.RAISED, Failure.RETURN)
        return Outcome(Status.ERROR, err.message, example if useful else "")
    if isinstance(err, PropertyFailure):
        return Outcome(Status.FAILED, str(err), example)
    if flaky(err):
        inner = _flaky_cause(err)
        detail = f" The failure was: {outcome_of(inner).message}" if inner is not None else ""
        return Outcome(
            Status.FAILED,
            "Your function gave different results for the same input on different runs "
            "(does it keep state between calls, or use randomness?)." + detail,
            example,
        )
    return Outcome(
        Status.ERROR,
        f"The check itself stopped with {type(err).__name__}: {message_of(err)}. This is probably a bug in "
        "the grader, not in your code; please tell your instructor.",
        example,
    )
