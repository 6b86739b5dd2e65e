"""Naming the likely mistake: a lesson's known mistakes fitted to what a student's function did.

A lesson may declare, beside its checks (``tests/checks/NAME/diagnoses.py``), for each
exercise:

* ``PROBES[exercise]``: a few argument sets chosen to tell its mistakes apart;
* ``MISTAKES[exercise]``: :class:`Mistake` objects, each a stable code, a one-line hint, and
  either what the mistake returns on given arguments (``returns``) or a test of the calls seen
  (``shows``, for mistakes a value alone does not tell: an argument changed in place, an error
  not raised, sizes that work only up to some point).

When an exercise loses points, the grader collects :class:`Call` records of the student's
function (on the probes, and on the smallest failing inputs of its failed checks) and asks
:func:`diagnose` which mistakes fit them. A mistake is named only if it fits: this module
knows no lesson and guesses nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Call", "Diagnosis", "Mistake", "Seen", "diagnose", "same"]

#: How close a mistake's prediction must come to what the student returned (float32 work
#: keeps about 7 digits; every mistake of a lesson moves results by far more).
RTOL, ATOL = 1e-4, 1e-6
#: Diagnoses named at most per exercise.
MOST = 3
#: Exceptions that, raised by a lesson's mistake, mean a slip in its code (a misspelt name, a
#: module not imported) rather than "this mistake does not apply to these arguments".
SLIPS = (NameError, AttributeError, ImportError, SyntaxError)


@dataclass(frozen=True)
class Call:
    """One call of a student's function: its arguments and what came of it."""

    arguments: dict
    value: object = None  # what it returned, when it returned
    returned: bool = True
    kind: str = ""  # when it did not return: how it failed (raised, return, missing, ...)
    raised: tuple[str, ...] = ()  # when it raised: the exception's class and its bases, by name
    mutated: tuple[str, ...] = ()  # the array arguments it changed in place


@dataclass(frozen=True)
class Seen:
    """A call with the reference's answer beside it: ``expected`` (the exception, when the
    reference refuses the arguments: ``refused``) and whether the student's call gave exactly
    that (``right``: the same values, shape and dtype, or the same exception class)."""

    call: Call
    expected: object
    refused: bool
    right: bool

    @property
    def arguments(self) -> dict:
        return self.call.arguments


@dataclass(frozen=True)
class Mistake:
    """A known mistake of one exercise.

    ``returns(**arguments)`` computes what the mistake gives (raising when it does not apply to
    those arguments); ``shows(seen)`` says whether the calls seen (:class:`Seen`) betray it.
    ``hint`` is a line in the lesson's words, or a function of the arguments of a call it
    explains."""

    code: str
    hint: str | Callable[[dict], str]
    returns: Callable[..., object] | None = None
    shows: Callable[[Sequence[Seen]], bool] | None = None

    def __post_init__(self):
        if (self.returns is None) == (self.shows is None):
            raise ValueError(f"mistake {self.code!r}: give exactly one of returns= and shows=")

    def hint_for(self, arguments: dict) -> str:
        return self.hint(arguments) if callable(self.hint) else self.hint


@dataclass(frozen=True)
class Diagnosis:
    """A mistake that fits."""

    code: str
    hint: str
    checks: tuple[str, ...] = field(default=(), repr=False)
    """The failed checks whose smallest inputs the mistake explains, in the report's order; none
    when it explains only the lesson's probes."""

    def to_dict(self) -> dict:
        return {
            "code": self.code,
            "hint": self.hint,
            **({"checks": list(self.checks)} if self.checks else {}),
        }


def same(a, b) -> bool:
    """Whether two results agree: equal shapes (tuples item by item), values within tolerance,
    infinities and NaN in the same places."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (
            isinstance(a, tuple)
            and isinstance(b, tuple)
            and len(a) == len(b)
            and all(same(x, y) for x, y in zip(a, b, strict=True))
        )
    try:
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype.kind not in "biuf" or b.dtype.kind not in "biuf":
            return False
        with np.errstate(all="ignore"):
            return bool(np.isclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True).all())
    except (TypeError, ValueError):
        return False


def _predicted(function: Callable, arguments: dict):
    """(what ``function`` returns on copies of ``arguments``, True), or (the exception, False)."""
    given = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in arguments.items()}
    try:
        with np.errstate(all="ignore"):
            return function(**given), True
    except Exception as err:  # noqa: BLE001 - a mistake that does not apply to these arguments
        return err, False


def _slip(function: Callable, err: BaseException) -> bool:
    """Whether ``err``, raised by calling ``function``, is a slip of the lesson's code: a
    misspelt name, or arguments its parameters do not take (raised before it ran a line)."""
    if isinstance(err, SLIPS):
        return True
    if isinstance(err, TypeError):
        code = getattr(function, "__code__", None)
        tb, entered = err.__traceback__, False
        while tb is not None:
            entered = entered or tb.tb_frame.f_code is code
            tb = tb.tb_next
        return code is not None and not entered
    return False


def _support(mistake: Mistake, seen: Sequence[Seen], slipped: Slipped | None = None) -> list[Seen]:
    """The calls ``mistake`` explains; none when a call contradicts it. A slip in the mistake's
    code is told to ``slipped`` (the mistake then reads as before: not applying)."""
    if mistake.shows is not None:
        try:
            shown = bool(mistake.shows(seen))
        except Exception as err:  # noqa: BLE001 - a test that does not apply to these calls
            if slipped is not None and _slip(mistake.shows, err):
                slipped(mistake, "shows", err)
            shown = False
        return [next((s for s in seen if not s.right), seen[0])] if shown and seen else []
    explained = []
    for one in seen:
        predicted, predicts = _predicted(mistake.returns, one.arguments)
        if not predicts and slipped is not None and _slip(mistake.returns, predicted):
            slipped(mistake, "returns", predicted)
        if not predicts:
            if not one.refused and one.call.returned:
                return []  # the mistake would have raised: the student returned
            continue
        if not one.refused and same(predicted, one.expected):
            if not one.right:
                return []  # here the mistake changes nothing, but the student is wrong
            continue
        if not one.call.returned or not same(one.call.value, predicted):
            return []
        explained.append(one)
    return explained


def _dtypes(value) -> tuple:
    items = value if isinstance(value, tuple) else (value,)
    return tuple(str(getattr(item, "dtype", type(item).__name__)) for item in items)


def look(calls: Sequence[Call], reference: Callable) -> list[Seen]:
    """Each call beside the reference's answer to the same arguments."""
    seen = []
    for call in calls:
        expected, answers = _predicted(reference, call.arguments)
        if answers:
            right = call.returned and same(call.value, expected) and _dtypes(call.value) == _dtypes(expected)
        else:  # the reference refuses these arguments: right is refusing them the same way
            right = not call.returned and type(expected).__name__ in call.raised
        seen.append(Seen(call, expected, not answers, right))
    return seen


#: Told of a slip in a mistake's code: (the mistake, "returns", "shows" or "hint", the exception).
Slipped = Callable[[Mistake, str, BaseException], None]


def diagnose(
    mistakes: Sequence[Mistake],
    calls: Sequence[Call],
    reference: Callable,
    *,
    slipped: Slipped | None = None,
    sources: Sequence[str] = (),
) -> list[Diagnosis]:
    """The mistakes that fit ``calls`` of one function whose right answer ``reference`` gives,
    the one that explains most calls first (ties in the lesson's order), at most :data:`MOST`.
    Nothing when every call was right. A slip in a mistake's own code is told to ``slipped``
    (a hint that stops leaves its mistake unnamed); without it, a hint that stops raises.

    ``sources`` names, call by call, the failed check a call was made in (empty for a probe;
    calls past its end: probes): each diagnosis names the checks of the calls it explains
    (:attr:`Diagnosis.checks`)."""
    seen = look(calls, reference)
    source = {id(one): name for one, name in zip(seen, sources, strict=False)}
    if all(one.right and not one.call.mutated for one in seen):
        return []
    found = []
    for order, mistake in enumerate(mistakes):
        explained = _support(mistake, seen, slipped)
        if explained:
            try:
                hint = mistake.hint_for(explained[0].arguments)
            except Exception as err:
                if slipped is None:
                    raise
                slipped(mistake, "hint", err)
                continue
            checks = tuple(dict.fromkeys(source[id(one)] for one in explained if source.get(id(one))))
            found.append((-len(explained), order, Diagnosis(mistake.code, hint, checks)))
    return [diagnosis for *_, diagnosis in sorted(found, key=lambda f: f[:2])][:MOST]
