"""The settings of one run: one frozen object, resolved once, handed to every module that needs it.

:func:`resolve` takes, in this order, what the command line asked for, what the
lesson allows, and the defaults below; nothing else in the grader picks a
default for these. A bad value is refused here, with where it came from.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field, replace

from .enums import StrEnum
from .errors import LessonError

#: Seconds one call of a student function may take before it is stopped.
DEFAULT_CALL_TIMEOUT = 3.0
#: Seconds a whole (sandboxed) submission may take.
DEFAULT_TOTAL_TIMEOUT = 60.0
#: Address space a sandboxed worker may use.
DEFAULT_MEMORY = 2 << 30
#: Examples per property when grading. The whole catalog of student bugs is
#: caught from 8 examples on (benchmarks/bench_grader.py --power measures it;
#: tests/test_catalog.py asserts it at this value): 20 leaves a margin for
#: bugs nobody has catalogued yet while a full run stays near a second.
GRADING_EXAMPLES = 20
#: Examples per property when a student explores locally with fresh randomness.
EXPLORE_EXAMPLES = 400
#: Set to 0 (or off, no, false) to grade every property under Hypothesis's engine, without
#: replaying the examples it drew before (see :mod:`grader.engine.replay`).
REPLAY_VARIABLE = "GRADER_REPLAY"
#: Set to 1 (or on, yes, true) to run every lesson's checks through pytest, even those the grader
#: can find and run without it (see :mod:`grader.engine.direct`): the reports are the same.
THROUGH_PYTEST_VARIABLE = "GRADER_THROUGH_PYTEST"
#: The folder where the examples replay uses are kept between runs (:mod:`grader.engine.store`),
#: or off; unset: ``grader/replay`` in the user's cache folder ($XDG_CACHE_HOME, else ~/.cache).
STORE_VARIABLE = "GRADER_REPLAY_STORE"


def _store_folder(environ) -> str | None:
    """Where the kept examples are stored, as ``environ`` says (None: nowhere)."""
    asked = environ.get(STORE_VARIABLE, "").strip()
    if asked.lower() in ("0", "off", "no", "false"):
        return None
    if asked:
        return os.path.abspath(os.path.expanduser(asked))
    cache = environ.get("XDG_CACHE_HOME", "").strip()
    if not cache or not os.path.isabs(cache):  # the XDG rule: a relative value is ignored
        home = environ.get("HOME", "").strip() or os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        cache = os.path.join(home, ".cache")
    if not os.path.isdir(os.path.dirname(cache)):
        return None  # a home that is not there is not made (as root, anywhere): no store
    return os.path.join(cache, "grader", "replay")


class Isolation(StrEnum):
    """How a student's code is run (see :mod:`grader.sandbox`)."""

    AUTO = "auto"  # the best level this machine offers
    NAMESPACES = "namespaces"  # bubblewrap
    PROCESS = "process"  # a separate process with limits, no filesystem or network isolation
    NONE = "none"  # inside the checker's own process

    def describe(self) -> str:
        """One line for reports."""
        if self is Isolation.NAMESPACES:
            return "namespaces (bubblewrap: no network, private filesystem" + (
                ", an unprivileged user)" if os.geteuid() == 0 else ")"
            )
        if self is Isolation.PROCESS:
            return "process (a separate process with resource limits; no filesystem or network isolation)"
        if self is Isolation.NONE:
            return "none (your code ran inside the checker's process)"
        return self.value


#: The levels a run ends up at, best first (``auto`` chooses one of the first two).
LEVELS = (Isolation.NAMESPACES, Isolation.PROCESS, Isolation.NONE)


class Profile(StrEnum):
    """Which Hypothesis profile the checks run under."""

    GRADING = "grading"  # derandomized: the same file always gets the same score
    EXPLORE = "explore"  # fresh random inputs, more of them


@dataclass(frozen=True)
class Limits:
    """What a student's code may use."""

    call_timeout: float = DEFAULT_CALL_TIMEOUT
    total_timeout: float = DEFAULT_TOTAL_TIMEOUT
    memory: int = DEFAULT_MEMORY


#: The isolation a command takes when none is asked for: students checking their own work (and
#: a plain pytest run of the checks) run the code in their own process; everything that grades,
#: in a sandbox.
UNSANDBOXED_BY_DEFAULT = ("check", "pytest", "notebook")


@dataclass(frozen=True)
class Settings:
    """How one run grades."""

    isolation: Isolation = Isolation.AUTO
    """Asked for (``auto``: the best level the machine offers); the run grades at :attr:`level`."""
    limits: Limits = field(default_factory=Limits)
    profile: Profile = Profile.GRADING
    max_examples: int | None = None
    """Examples per property; None: the profile's own (GRADING_EXAMPLES or EXPLORE_EXAMPLES)."""
    exercises: tuple[str, ...] | None = None
    """The exercises to check; None: every one of the lesson's."""
    include_hidden: bool = True
    """Whether the hidden checks run too (``check --public`` leaves them out)."""
    replay: bool = True
    """Whether a property's examples, once drawn in this process, are replayed as a plain loop
    (Hypothesis runs only for a property that fails); off: every property runs under Hypothesis."""
    through_pytest: bool = False
    """Whether the checks run through pytest even where the grader can run them itself (the
    same report either way: tests compare them)."""
    store: str | None = None
    """The folder where replay's examples are kept between runs (:mod:`grader.engine.store`);
    None: kept only in the process that drew them."""
    level: Isolation | None = None
    """The level the run grades at: :attr:`isolation` decided (never ``auto``), once, where the
    run starts (:func:`grader.sandbox.wardens.settle`, which refuses a level that may not run
    there); None until then."""

    @property
    def examples(self) -> int:
        """Examples per property, as the run will try them."""
        if self.max_examples is not None:
            return self.max_examples
        return EXPLORE_EXAMPLES if self.profile is Profile.EXPLORE else GRADING_EXAMPLES

    @property
    def derandomized(self) -> bool:
        """Whether every check runs with its fixed seed (a grading's profile). Read here, never
        from Hypothesis's default profile: a check file may load a profile of its own as it is
        imported, and a batch's children load the grader's again after that, where ``grade``
        does not (the two seeded the checks differently)."""
        return self.profile is Profile.GRADING


def resolve(
    command: str,
    *,
    lesson_exercises: tuple[str, ...] | None = None,
    lesson_name: str = "",
    isolation: str | None = None,
    only: tuple[str, ...] | None = None,
    call_timeout: float | None = None,
    total_timeout: float | None = None,
    max_examples: int | None = None,
    explore: bool = False,
    public: bool = False,
    replay: bool | None = None,
    through_pytest: bool | None = None,
    environ=os.environ,
) -> Settings:
    """The settings of ``command``: each value as asked for (None: not asked), checked against
    the lesson's exercises, else its default. Raises ValueError saying which value is wrong."""
    if isolation is None:
        chosen = Isolation.NONE if command in UNSANDBOXED_BY_DEFAULT else Isolation.AUTO
    else:
        try:
            chosen = Isolation(isolation)
        except ValueError:
            levels = ", ".join(level.value for level in Isolation)
            raise ValueError(f"unknown isolation level {isolation!r}; choose {levels}") from None
    if only is not None and lesson_exercises is not None:
        unknown = [n for n in only if n not in lesson_exercises]
        if unknown:
            raise LessonError(
                f"unknown exercise {unknown[0]!r} in lesson {lesson_name}; "
                f"choose from {', '.join(lesson_exercises)}"
            )
    for name, value in (("call timeout", call_timeout), ("total timeout", total_timeout)):
        if value is not None and not value > 0:
            raise ValueError(f"a {name} must be above 0 seconds, got {value}")
    if max_examples is not None and max_examples < 1:
        raise ValueError(f"--max-examples must be at least 1, got {max_examples}")
    if replay is None:
        asked = environ.get(REPLAY_VARIABLE, "").strip().lower()
        if asked not in ("", "1", "on", "yes", "true", "0", "off", "no", "false"):
            raise ValueError(f"{REPLAY_VARIABLE} must be on or off, got {asked!r}")
        replay = asked not in ("0", "off", "no", "false")
    if through_pytest is None:
        asked = environ.get(THROUGH_PYTEST_VARIABLE, "").strip().lower()
        if asked not in ("", "1", "on", "yes", "true", "0", "off", "no", "false"):
            raise ValueError(f"{THROUGH_PYTEST_VARIABLE} must be on or off, got {asked!r}")
        through_pytest = asked in ("1", "on", "yes", "true")
    return Settings(
        store=_store_folder(environ) if replay else None,
        isolation=chosen,
        limits=Limits(
            call_timeout=DEFAULT_CALL_TIMEOUT if call_timeout is None else float(call_timeout),
            total_timeout=DEFAULT_TOTAL_TIMEOUT if total_timeout is None else float(total_timeout),
        ),
        profile=Profile.EXPLORE if explore else Profile.GRADING,
        max_examples=max_examples,
        exercises=only,
        include_hidden=not public,
        replay=replay,
        through_pytest=through_pytest,
    )


def encoded(settings: Settings) -> str:
    """``settings`` whole, as one line of JSON, for another grader process of the same run (a
    batch's ``grade-stream``): every field, typed, and nothing re-parsed from a command line.
    The level is sent as asked for by name, so that the process that grades decides it on its
    own machine (:func:`grader.sandbox.wardens.settle`, which refuses a level that may not run
    there); so is the store: whether one is used, the folder being the grading machine's own
    (a cluster's worker may be another machine, another user)."""
    limits = settings.limits
    asked = settings.level if settings.level is not None else settings.isolation
    return json.dumps(
        {
            "isolation": asked.value,
            "limits": {
                "call_timeout": limits.call_timeout,
                "total_timeout": limits.total_timeout,
                "memory": limits.memory,
            },
            "profile": settings.profile.value,
            "max_examples": settings.max_examples,
            "exercises": list(settings.exercises) if settings.exercises is not None else None,
            "include_hidden": settings.include_hidden,
            "replay": settings.replay,
            "through_pytest": settings.through_pytest,
            "store": settings.store is not None,
        },
        sort_keys=True,
    )


def decoded(text: str, *, lesson_exercises: tuple[str, ...] | None = None, environ=os.environ) -> Settings:
    """The Settings :func:`encoded` wrote; ValueError naming the first field that is not as
    :func:`resolve` would have made it (an exercise the lesson lacks included)."""
    try:
        body = json.loads(text)
    except (ValueError, RecursionError) as err:
        raise ValueError(f"settings are one JSON object ({err})") from None
    fields = {
        "isolation",
        "limits",
        "profile",
        "max_examples",
        "exercises",
        "include_hidden",
        "replay",
        "through_pytest",
        "store",
    }
    if not isinstance(body, dict) or set(body) != fields:
        raise ValueError(f"settings are a JSON object of exactly {', '.join(sorted(fields))}")
    limits = body["limits"]
    if not isinstance(limits, dict) or set(limits) != {"call_timeout", "total_timeout", "memory"}:
        raise ValueError("settings' limits are call_timeout, total_timeout and memory")

    seconds = [limits[name] for name in ("call_timeout", "total_timeout")]
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) for v in seconds):
        raise ValueError("settings' timeouts must be numbers of seconds")
    memory = limits["memory"]
    if isinstance(memory, bool) or not isinstance(memory, int) or memory < 1:
        raise ValueError("settings' memory must be a number of bytes above 0")
    examples = body["max_examples"]
    if examples is not None and (isinstance(examples, bool) or not isinstance(examples, int)):
        raise ValueError("settings' max_examples must be a whole number")
    exercises = body["exercises"]
    if exercises is not None and not (
        isinstance(exercises, list) and all(isinstance(e, str) for e in exercises)
    ):
        raise ValueError("settings' exercises must be a list of names")
    for name in ("isolation", "profile"):
        if not isinstance(body[name], str):
            raise ValueError(f"settings' {name} must be a name")
    for name in ("include_hidden", "replay", "through_pytest", "store"):
        if not isinstance(body[name], bool):
            raise ValueError(f"settings' {name} must be true or false")
    try:  # every value as resolve checks one asked for on a command line
        settings = resolve(
            "grade-stream",
            lesson_exercises=lesson_exercises,
            isolation=body["isolation"],
            only=tuple(exercises) if exercises is not None else None,
            call_timeout=seconds[0],
            total_timeout=seconds[1],
            max_examples=examples,
            explore=Profile(body["profile"]) is Profile.EXPLORE,
            public=not body["include_hidden"],
            replay=body["replay"],
            through_pytest=body["through_pytest"],
            environ=environ,
        )
    except LessonError as err:  # an exercise the lesson lacks
        raise ValueError(f"settings: {err}") from None
    return replace(
        settings,
        limits=replace(settings.limits, memory=memory),
        store=settings.store if body["store"] else None,
    )


class Colour(StrEnum):
    """Whether the text report is coloured (``--color``)."""

    AUTO = "auto"  # on a terminal, unless NO_COLOR is set
    ALWAYS = "always"
    NEVER = "never"


def use_colour(asked: str | None, *, terminal: bool, environ=os.environ) -> bool:
    """Whether to colour a report written to ``terminal`` (a tty or not): ``--color always`` or
    ``never`` as asked; else (``auto``) only on a terminal and only when NO_COLOR is not set to a
    non-empty value (https://no-color.org). Raises ValueError for an unknown choice."""
    try:
        chosen = Colour(asked or Colour.AUTO.value)
    except ValueError:
        raise ValueError(f"unknown --color {asked!r}; choose auto, always or never") from None
    if chosen is not Colour.AUTO:
        return chosen is Colour.ALWAYS
    return terminal and not environ.get("NO_COLOR")
