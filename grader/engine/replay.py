"""Replay a property's examples as a plain loop; run Hypothesis's engine only for one that fails.

Grading is derandomized: as long as every example of a property passes, Hypothesis's engine
draws the same examples in the same order whatever the submission, so drawing them again for
each student only costs time. Once a property has passed under the engine in this process, the
choices that made each of its examples (a few integers per example: the seed and sizes from
which the checks' strategies rebuild every array) are kept, in memory, in :data:`_KEPT`; the
next submission graded by this process has its examples rebuilt from them (fresh objects, drawn
by the property's own strategies) and the check called on each, in order, without the engine.

When every replayed example passes, the check passes, as it would have: the student's code saw
the very calls the engine would have made. When one fails, or anything unexpected happens, the
property runs under the engine as it always did, and its report (status, feedback, smallest
input) is the engine's. So that the student's code sees exactly the calls it would see without
replay, the engine's first examples, which the replay has already sent, are answered from a
*tape* of what the student's code answered in the replay (:class:`Tape`): the student's code is
called again only from the first example the replay did not finish (shrinking included).

What is kept, and why it is safe:

* Only choices drawn by Hypothesis's engine in this process (or in the process that forked it,
  or by an earlier run that wrote them to the grading side's own store on disk,
  :mod:`grader.engine.store`), and only after a run in which the student's code did not run in
  the grading process (a sandboxed run): nothing a submission does can change what is kept.
  Examples read from disk are believed only while they fit: one that cannot be drawn from its
  choices ends the replay (the engine runs), and one that fails where the engine's own run then
  passes leaves the verdict to the engine, as without the store. A submission only
  decides *whether* a property's examples are kept (by passing), never *what* they are: the
  next student gets the very examples the engine would give.
* A property whose examples depend on what the student's code returned (a draw with
  ``st.data()`` after a call of the student's code in the same example) is never kept, and a
  replay stops just before such a draw: the engine then draws it, as it would have.
* Hidden checks' choices stay in this process's memory: a sandbox is started by a warden that
  is a fresh program (:mod:`grader.sandbox.wardens`), never a fork of this process, and a
  student release holds none of it.
* A process that forks one child per submission (a batch's zygote) also draws the arguments
  of its kept examples once, before any child (:func:`predraw`): a child replays on its own
  copy of them (the fork's), uses them once, and nothing it does to them reaches another.
* A failure seen in the replay is never lost: if the engine's run then passes (code that answers
  differently when asked again), the check fails as flaky (:func:`run`).

This relies on how Hypothesis runs one example (private names, read in the releases of
:data:`grader.engine.upkeep.HYPOTHESIS_RANGE`): :func:`supported` says whether they are there,
and where they are not, every property runs under the engine (tests/test_replay.py fails loudly).
"""

from __future__ import annotations

import marshal
import random
from dataclasses import replace

import numpy as np
from hypothesis import settings as hypothesis_settings
from hypothesis.errors import FlakyFailure

from ..core.errors import StudentTimeout
from ..core.exact import arguments_digest, copied
from .upkeep import can_reseed, reseed
from .written import DataLater, exact, read, written

try:  # private: see the module's text
    from hypothesis import control as _control
    from hypothesis._settings import local_settings as _local_settings
    from hypothesis.internal.conjecture.data import ConjectureData as _ConjectureData
    from hypothesis.internal.entropy import deterministic_PRNG as _deterministic_PRNG
except ImportError:  # pragma: no cover - a release outside the range refuses to start anyway
    _control = _local_settings = _ConjectureData = _deterministic_PRNG = None

__all__ = [
    "COUNTS",
    "Tape",
    "adopt",
    "adopt_items",
    "checked",
    "forget",
    "handed",
    "items",
    "kept",
    "predraw",
    "shipped",
    "run",
    "supported",
    "write_down",
    "written_down",
]

#: In a property's key (its checks folder, its node, this, the examples per property), where the
#: check's seed once stood: a check's seed is a digest of its source, which the key of every
#: example kept beyond this process takes in already (the store's key, a shipped file's header),
#: and replay serves only the checks seeded so (:func:`grader.engine.upkeep.fix_seed`).
DERANDOMIZED = "derandomized"
#: The examples of each property that passed under the engine in this process: key -> the
#: choices of each example, in the order the engine ran them.
_KEPT: dict[tuple, tuple[tuple, ...]] = {}
#: How many properties this process passed by replay alone, ran under the engine, how many of the
#: student's calls the engine had answered from a tape, and how many examples' arguments were read
#: as written down instead of drawn (for tests and measurements).
COUNTS = {"replayed": 0, "engine": 0, "answered": 0, "read": 0}
#: The arguments of kept examples, drawn ahead (:func:`predraw`): key -> for each example, its
#: ConjectureData (past the draws of the check's arguments) and those arguments (for one read
#: from what was written down, also the choices its data holds once the check ran), or None
#: where the example is drawn when it is replayed. Each is used once, by the first replay of the key.
_DRAWN: dict[tuple, list] = {}
#: The kept properties whose examples were read from the store on disk (:mod:`.store`), not drawn
#: by an engine of this run or of the process that forked it.
_FROM_DISK: set[tuple] = set()
#: Of those, the properties whose examples came from a file the lesson ships (:mod:`.shipped`):
#: every run reads that file again, so the store need not keep a copy of them.
_SHIPPED: set[tuple] = set()
#: The drawn arguments of kept examples, written down (:mod:`.written`): key -> for each example,
#: what :func:`grader.engine.written.written` wrote, or None where it is drawn from its choices.
_WRITTEN: dict[tuple, tuple] = {}


def supported() -> bool:
    """Whether the Hypothesis internals replay needs are where this module looks for them."""
    return (
        _ConjectureData is not None
        and hasattr(_ConjectureData, "for_choices")
        and hasattr(_control, "BuildContext")
        and hasattr(_control.BuildContext, "prep_args_kwargs_from_strategies")
        and hasattr(_control, "_current_build_context")
        and can_reseed()
    )


def forget() -> None:
    """Drop every kept example, and the counts (tests use it)."""
    _KEPT.clear()
    _DRAWN.clear()
    _FROM_DISK.clear()
    _SHIPPED.clear()
    _WRITTEN.clear()
    COUNTS.update(dict.fromkeys(COUNTS, 0))


def kept(key: tuple) -> tuple[tuple, ...] | None:
    """The kept choices of the property ``key``, or None."""
    return _KEPT.get(key)


def handed() -> bytes:
    """The examples this process's own engine drew, as bytes for the process that forked this
    one (:func:`adopt`): only numbers, strings, bytes, None and tuples of them (marshal's format),
    nothing that runs. Not those it read from disk (the store, a file the lesson ships) and
    replayed as they were: the forking process read them itself, and keeps them as read from
    disk (were they handed back, they would come back as the engine's own: believed over the
    engine's verdict where one fails, and written to the store though the lesson ships them)."""
    return marshal.dumps(tuple((key, examples) for key, examples in _KEPT.items() if key not in _FROM_DISK))


#: What a choice may be (Hypothesis's choice sequences hold nothing else).
_CHOICE = (bool, int, float, bytes, str)


def adopt(data: bytes) -> int:
    """Keep the examples :func:`handed` wrote in a child of this process, which graded the
    lesson's reference sandboxed (so that every later child of this process replays them);
    anything not of their exact shape is refused whole (ValueError). Returns how many
    properties were adopted."""
    try:
        items = marshal.loads(data)
    except (EOFError, ValueError, TypeError) as err:
        raise ValueError(f"kept examples could not be read ({err})") from None
    return adopt_items(items)


def items() -> tuple:
    """Every kept example, in :func:`handed`'s shape (key, examples)."""
    return tuple(_KEPT.items())


def checked(items) -> dict:
    """``items`` (in :func:`handed`'s shape) as key -> examples if every part is of their exact
    shape; else ValueError (nothing is kept)."""
    adopted = {}
    for item in items if isinstance(items, tuple) else [None]:
        if not (isinstance(item, tuple) and len(item) == 2):
            raise ValueError("kept examples of an unknown shape")
        key, examples = item
        if not (isinstance(key, tuple) and all(isinstance(k, (str, int)) for k in key)):
            raise ValueError("a kept property's key is of an unknown shape")
        for example in examples if isinstance(examples, tuple) else [None]:
            if not (
                isinstance(example, tuple)
                and len(example) == 2
                and isinstance(example[0], tuple)
                and all(isinstance(c, _CHOICE) for c in example[0])
                and (example[1] is None or example[1] in _STOPS)
            ):
                raise ValueError("a kept example is of an unknown shape")
        adopted[key] = examples
    return adopted


def adopt_items(items, *, from_disk: bool = False, shipped: bool = False, down: dict | None = None) -> int:
    """Keep ``items`` (in :func:`handed`'s shape, from wherever they were read: a child of this
    process, the store on disk), all or nothing: anything not of their exact shape is refused
    whole (ValueError). Returns how many properties were adopted. Examples ``from_disk`` were not
    drawn by an engine of this run: where one fails and the engine's run then passes, the
    engine's verdict stands (:func:`run`). ``shipped``: read from a file the lesson ships (they are
    from disk, too). ``down``: key -> the examples' arguments written down (:data:`_WRITTEN`), for
    the keys that have them."""
    adopted = checked(items)
    before = {key: _KEPT.get(key) for key in adopted}
    _KEPT.update(adopted)
    for key, examples in adopted.items():
        written_of = (down or {}).get(key)
        if isinstance(written_of, tuple) and len(written_of) == len(examples):
            _WRITTEN[key] = written_of
        elif before[key] != examples:
            _WRITTEN.pop(key, None)  # other examples: drawn from their choices until written down
    if from_disk or shipped:
        _FROM_DISK.update(adopted)
    else:
        _FROM_DISK.difference_update(adopted)
    if shipped:
        _SHIPPED.update(adopted)
    else:
        _SHIPPED.difference_update(adopted)
    return len(adopted)


def shipped(key: tuple) -> bool:
    """Whether the examples kept for ``key`` are those a file of the lesson ships."""
    return key in _SHIPPED


def predraw(check, key: tuple) -> int:
    """Draw now the arguments of each kept example of the property ``key`` (``check``: what
    pytest calls), so that its next replay only calls the check on them; returns how many.

    For a process that forks one child per submission (:mod:`grader.commands.zygote`), after
    :func:`adopt` and before any child: each child replays from its own copy of what is drawn
    here (the process's memory, copied at the fork), so no child sees what another did to them.
    The draws are those the replay would make itself, in the same context; a property whose
    draws leave anything behind in that context (a clean-up task, a printer, a used generator)
    is drawn at its replay, as before. An example whose arguments are written down
    (:data:`_WRITTEN`) is read instead, as its replay would read it (a tenth of the cost of a
    draw), and kept with the choices its data holds once the check ran."""
    examples = _KEPT.get(key)
    if examples is None or key in _DRAWN or not supported():
        return 0
    handle = getattr(check, "hypothesis", None)
    down = _WRITTEN.get(key)
    made: list = []
    try:
        for number, (choices, stop) in enumerate(examples):
            if stop is not None:
                made.append(None)
                continue
            if down is not None and down[number] is not None:
                try:
                    ahead, expected = _read_ahead(down[number], key, choices)
                except ValueError:
                    pass  # drawn from its choices, as at its replay
                else:
                    made.append((*ahead, expected))
                    continue
            data = _ConjectureData.for_choices(choices)
            with (
                _local_settings(_its_settings(check)),
                _deterministic_PRNG(),
                _control.BuildContext(data, is_final=False, wrapped_test=check) as context,
            ):
                before = _generators()
                drawn, _ = context.prep_args_kwargs_from_strategies(handle._given_kwargs)
                if _generators() != before or context.tasks or context.known_object_printers:
                    return 0
            made.append((data, drawn))
    except Exception:  # noqa: BLE001 - not drawn ahead: the replay draws it, as without this
        return 0
    _DRAWN[key] = made
    if key not in _WRITTEN:
        _WRITTEN[key] = _down(key, examples, made)
    return sum(1 for one in made if one is not None)


def _down(key: tuple, examples, made: list) -> tuple:
    """The arguments of ``made`` (each kept example's data and drawn arguments, or None) written
    down, each only if it reads back exactly and its draws took every choice of its example, or
    every choice the check does not draw itself from its ``st.data()`` argument (written as
    :class:`~grader.engine.written.DataLater`); else None (drawn from its choices at replay)."""
    out = []
    for (choices, stop), one in zip(examples, made, strict=True):
        down = None
        if one is not None and stop is None:
            data, drawn = one
            taken = len(data.choices)
            later = {name: DataLater(taken) for name, value in drawn.items() if _draws_from(value, data)}
            if later or taken == len(choices):
                down = written({**drawn, **later})
            if down is not None and not exact(down, key[0]):
                down = None
        out.append(down)
    return tuple(out)


def _draws_from(value, data) -> bool:
    """Whether ``value`` is the ``st.data()`` object a check draws from ``data`` with."""
    return getattr(value, "conjecture_data", None) is data and type(value).__name__ == "DataObject"


def _read_ahead(down, key: tuple, choices) -> tuple:
    """An example's data and arguments as written down (``down``), and the choices its data will
    hold once the check ran: those its ``st.data()`` argument, if it has one, draws from (the
    choices past those the other arguments took); ValueError where they do not fit."""
    values = read(down, key[0])
    taken = {value.taken for value in values.values() if type(value) is DataLater}
    left = tuple(choices)[taken.pop() :] if taken else ()
    if taken:
        raise ValueError("written arguments that took two numbers of choices")
    return (_ConjectureData.for_choices(left), values), left


def write_down(check, key: tuple) -> int:
    """Write down (:data:`_WRITTEN`) the drawn arguments of each kept example of ``key`` that
    has none, drawing them from their choices as :func:`predraw` does (``check``: what pytest
    calls), for the store on disk (:mod:`.store`); returns how many examples were written down."""
    if key in _WRITTEN or key not in _KEPT:
        return 0
    if predraw(check, key) == 0:  # its draws cannot be made ahead: none is written down
        _WRITTEN[key] = (None,) * len(_KEPT[key])
        return 0
    _DRAWN.pop(key, None)  # drawn for writing down only: this process's next replay draws its own
    return sum(1 for one in _WRITTEN.get(key, ()) if one is not None)


def written_down(key: tuple) -> tuple | None:
    """The kept examples' arguments of ``key`` written down (None for each not), or None."""
    return _WRITTEN.get(key)


def _generators() -> tuple:
    """The states of the global generators a draw could use (Python's and numpy's)."""
    state = np.random.get_state()
    return random.getstate(), state[0], state[1].tobytes(), state[2:]


def _data():
    """The ConjectureData of the example being run, or None."""
    context = _control._current_build_context.value
    return None if context is None else context.data


def _choices() -> tuple:
    data = _data()
    return () if data is None else tuple(data.choices)


# ----------------------------------------------------------------------------- the tape

#: How the engine ends an example without a verdict (it is not counted): a draw past the
#: length it allowed the example, or an assumption that does not hold.
_STOPS = ("StopTest", "UnsatisfiedAssumption")


class DrawAfterCall(BaseException):
    """A replayed example was about to draw after a call of the student's code: what it draws
    may depend on what the student returned, so the engine must draw it."""


class NotKept(Exception):
    """A replayed example did not use the choices kept for it (never expected)."""


class _Answer:
    """One call of the student's code and what it came to: an outcome, or a time limit. The
    call's arguments are kept as a copy; their digest (:func:`~grader.core.exact.arguments_digest`)
    is taken only if the engine's run asks the tape for this call (a replay that passes never
    does)."""

    __slots__ = ("_digest", "arguments", "audit", "name", "outcome", "stopped")

    def __init__(
        self, name: str, audit: bool, arguments: dict, outcome=None, stopped: StudentTimeout | None = None
    ):
        self.name, self.audit, self.arguments = name, audit, arguments
        self.outcome, self.stopped = outcome, stopped
        self._digest: bytes | None = None

    @property
    def digest(self) -> bytes | None:
        """Of the call's arguments; None: they cannot be compared, and the call is never answered."""
        if self.arguments is not None:
            self._digest, self.arguments = arguments_digest(self.arguments), None
        return self._digest

    def give(self):
        if self.stopped is not None:
            raise type(self.stopped)(self.stopped.message)
        return replace(self.outcome, value=copied(self.outcome.value))


def _snapshot(arguments: dict) -> dict:
    """A call's arguments as they are now, kept apart from what the check may change later (its
    arrays copied, tuples and lists looked into): what their digest is taken of, if ever."""
    return {name: copied(value) for name, value in arguments.items()}


class Tape:
    """What one run of a property (replayed, or under the engine) sees of the student's code.

    Replaying (``keep``), it keeps every call's answer, example by example. Under the engine
    after a replay (``answers``: what the replay kept), it answers the engine's first examples
    from those, as long as the engine's example and calls are the replayed ones (choices and
    arguments compared); past them, or once anything differs, calls reach the student's code.
    Either way it notes whether an example drew after a call of the student's code.
    """

    def __init__(self, *, keep: bool = False, answers=(), choices=()):
        self.keep = keep
        self.kept: list[list[_Answer]] = []
        self._answers = list(answers)
        self._choices = list(choices)
        self._playing: list[_Answer] | None = None
        self.example = -1
        self.first_call_at: int | None = None
        self.drew_after_call = False
        self.seen: list[tuple] = []  # the choices of each example run, once it ended
        self.answered = 0  # calls answered from the tape

    def begin(self) -> None:
        """An example starts (its arguments are drawn already)."""
        self.example += 1
        self.first_call_at = None
        if self.keep:
            self.kept.append([])
        self._playing = None
        if self.example < len(self._answers):
            now, then = _choices(), self._choices[self.example][0]
            if tuple(then[: len(now)]) == now:
                self._playing = list(reversed(self._answers[self.example]))
            else:  # not the replayed example: from here on, every call is real
                del self._answers[self.example :]

    def end(self, ended: BaseException | None = None) -> None:
        """The example ended: passed (``ended`` None), failed, or stopped by the engine (a draw
        past the length it allowed, an unsatisfied assumption)."""
        data = _data()
        if data is None:
            return
        stop = type(ended).__name__ if ended is not None and type(ended).__name__ in _STOPS else None
        if self.first_call_at is not None and (len(data.choices) > self.first_call_at or stop):
            self.drew_after_call = True  # what it drew, or that it stopped, may depend on the student
        self.seen.append((tuple(data.choices), stop))

    def call(self, name: str, arguments: dict, audit: bool, send):
        """The outcome of one call: from the tape, else ``send()``."""
        if self.first_call_at is None:
            data = _data()
            self.first_call_at = 0 if data is None else len(data.choices)
        if self._playing:
            answer = self._playing.pop()
            digest = arguments_digest(arguments) if (answer.name, answer.audit) == (name, audit) else None
            if digest is not None and answer.digest == digest:
                self.answered += 1
                return answer.give()
            self._playing = None  # the engine's call is not the replayed one
            del self._answers[self.example :]
        try:
            outcome = send()
        except StudentTimeout as stop:
            if self.keep:
                self.kept[-1].append(_Answer(name, audit, _snapshot(arguments), stopped=stop))
            raise
        if self.keep:
            self.kept[-1].append(
                _Answer(
                    name, audit, _snapshot(arguments), outcome=replace(outcome, value=copied(outcome.value))
                )
            )
        return outcome


# ----------------------------------------------------------------------------- one property


def _its_settings(check) -> hypothesis_settings:
    """The settings ``check`` was decorated with, which Hypothesis runs its test under: not the
    default profile of the moment, which a check file may have changed as it was imported (and
    which a batch's children load again after that, where ``grade`` does not)."""
    own = getattr(getattr(check, "__func__", check), "_hypothesis_internal_use_settings", None)
    return own if isinstance(own, hypothesis_settings) else hypothesis_settings.default


def _guarded(data, tape: Tape):
    """``data`` with its draws refused once the example has called the student's code."""
    plain = data.draw

    def draw(*args, **kwargs):
        if tape.first_call_at is not None:
            raise DrawAfterCall()
        return plain(*args, **kwargs)

    data.draw = draw
    return data


def _replayed(
    check, examples, fixtures: dict, view, made=None, key: tuple | None = None
) -> tuple[Tape, BaseException | None]:
    """Call ``check``'s test on each example, in order; stop at the first that does not pass.
    ``made``: the examples' arguments drawn ahead (:func:`predraw`), where they are; else, where
    the store wrote them down (:data:`_WRITTEN`, under ``key``), read back.
    Returns the tape and what stopped it (None: every example passed)."""
    tape = Tape(keep=True)
    view.tape = tape
    down = _WRITTEN.get(key) if key is not None else None
    try:
        with _local_settings(_its_settings(check)), _deterministic_PRNG():
            return _loop(check, examples, fixtures, tape, made, key, down)
    finally:
        view.tape = None


def _loop(check, examples, fixtures: dict, tape: Tape, made, key, down) -> tuple[Tape, BaseException | None]:
    """:func:`_replayed`'s loop, under Hypothesis's settings and its seeded generators."""
    handle = check.hypothesis
    for number, (choices, stop) in enumerate(examples):
        if number:
            # each example from the state a context of its own would seed (the states of before
            # are put back once, at the end): nothing between two examples draws from them
            reseed()
        ahead = made[number] if made is not None and number < len(made) else None
        expected = tuple(choices)  # what the example's data holds once it ran
        if ahead is not None and len(ahead) == 3:  # read ahead from what was written down
            ahead, expected = ahead[:2], ahead[2]
        if ahead is None and down is not None and down[number] is not None:
            try:  # read as written down: no choice is left to draw but the check's own
                ahead, expected = _read_ahead(down[number], key, choices)
                COUNTS["read"] += 1
            except Exception:  # noqa: BLE001 - read refuses with ValueError; anything else alike
                ahead = None  # drawn from its choices, as without them
        data = _ConjectureData.for_choices(choices) if ahead is None else ahead[0]
        try:
            with _control.BuildContext(data, is_final=False, wrapped_test=check) as context:
                if ahead is None:
                    try:
                        drawn, _ = context.prep_args_kwargs_from_strategies(handle._given_kwargs)
                    except (KeyboardInterrupt, SystemExit):
                        raise
                    except BaseException as err:  # noqa: BLE001 - no student code ran yet
                        if stop is not None and type(err).__name__ == stop:
                            raise  # the engine stopped this example there too
                        return tape, NotKept()  # the choices do not make this example
                else:  # a check's st.data() argument is made for it from the data: a fresh one
                    drawn = {
                        name: data.draw(handle._given_kwargs[name]) if type(value) is DataLater else value
                        for name, value in ahead[1].items()
                    }
                _guarded(data, tape)
                handle.inner_test(**fixtures, **drawn)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as err:  # noqa: BLE001 - whatever it is, the engine decides
            if stop is not None and type(err).__name__ == stop and tape.first_call_at is None:
                continue  # the engine stopped this example there too, before any call
            if stop is None and (type(err).__name__ == "StopTest" or data.misaligned_at is not None):
                return tape, NotKept()  # the kept choices ran out or did not fit: not the student's
            return tape, err
        if stop is not None or tuple(data.choices) != expected or data.misaligned_at is not None:
            return tape, NotKept()
    return tape, None


def run(check, *, key: tuple, fixtures: dict, view, keep: bool, settled: type, engine=None) -> None:
    """Run the Hypothesis test ``check`` (what pytest calls) with ``fixtures``, its examples
    replayed where they are known under ``key``; returns as the check passes and raises as it
    fails, exactly as ``check(**fixtures)`` does. ``view`` is the student's view the check
    calls through; ``keep``: this run may keep the examples (the student's code does not run in
    this process). An exception of type ``settled`` ends the check at once, whatever the
    example (it carries a failure no input causes). ``engine()``, if given, is called before
    Hypothesis's engine runs the check (it gives the check its seed)."""
    examples = _KEPT.get(key)
    if examples is None and not keep:
        if engine is not None:
            engine()
        check(**fixtures)  # nothing to replay, nothing to keep: the engine, as without replay
        return
    seen, stopped = None, None
    if examples is not None:
        seen, stopped = _replayed(check, examples, fixtures, view, _DRAWN.pop(key, None), key)
        if stopped is None:
            COUNTS["replayed"] += 1
            return
        if isinstance(stopped, settled):
            raise stopped  # the engine would stop at this very example, with this very error
    tape = Tape(
        answers=seen.kept if seen is not None else (),
        choices=examples if seen is not None else (),
    )
    view.tape = tape
    COUNTS["engine"] += 1
    if engine is not None:
        engine()
    try:
        check(**fixtures)
    finally:
        view.tape = None
        COUNTS["answered"] += tape.answered
    from_disk = key in _FROM_DISK
    if stopped is not None and not isinstance(stopped, (DrawAfterCall, NotKept)) and not from_disk:
        # The replay failed and the engine's run passed: the student's code answered
        # differently when the engine asked again. That failure must not be lost.
        if not isinstance(stopped, Exception):
            raise stopped
        flaky = FlakyFailure("the check failed when replayed and passed under the engine", [stopped])
        flaky.grader_inputs = getattr(stopped, "grader_inputs", {})
        flaky.grader_calls = getattr(stopped, "grader_calls", ())
        raise flaky
    # (Examples read from disk that failed where the engine's own run passed were not what the
    # engine draws: a store from before a change its key missed, or a file made by hand. The
    # engine's verdict stands, as without a store, and its own examples replace them.)
    if keep and not tape.drew_after_call and tape.seen:
        if _KEPT.get(key) != tuple(tape.seen) or stopped is not None:
            # the engine's own examples, or the same choices whose arguments, as written down,
            # failed where the engine's own draws passed: written down anew when stored
            _WRITTEN.pop(key, None)
        _KEPT[key] = tuple(tape.seen)
        _FROM_DISK.discard(key)
        _SHIPPED.discard(key)
