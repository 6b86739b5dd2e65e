"""Examples a lesson ships: the first run on a fresh machine replays them too.

:mod:`grader.engine.store` keeps each property's examples between runs on one machine, in the
grading side's own folder, and only where the student's code cannot reach it: never for
``check``, which runs the student's code in its own process, and never on a machine that
grades once and is thrown away (a Gradescope container, a CI runner). There every run draws
its examples under Hypothesis's engine, though they are the same for every submission.

This module reads and writes them *with the lesson*: ``tests/checks/NAME/examples.json.gz``
holds the public checks' examples, ``tests/checks/NAME/hidden/examples.json.gz`` the hidden
ones' (a student release holds the first alone, as it holds the public checks alone). They are
made by grading the reference, sandboxed, under the engine (:mod:`grader.commands.examples`:
``python -m grader examples``, and anew by ``release`` and ``gradescope-bundle``), in the
store's format (each example's choices and its arguments written down,
:mod:`grader.engine.written`), gzipped, behind a header that says what made them.

What it is, and why that is safe:

* As trusted as the checks beside it: written by the lesson's author from the reference,
  read from the checks' own folder by the process that imports the checks, once per process
  (a batch's children are forked after it: they never read it again). Whoever can change it
  can change the checks.
* Believed only where everything that decides the examples is as it was when they were made
  (:func:`header`): the Python (major and minor), Hypothesis and numpy releases, the examples
  per property and the profile, and a digest of the grader's files and of the files of the
  checks that draw them (the public ones for the public file: what a release holds; every
  file of the checks and the reference for the hidden one). Anything else, and the engine
  draws, as without the file: a stale or foreign file makes a run slower, never different.
* Read as the store's files are: a regular file reached without a link, at most
  :data:`MAX_PACKED` bytes, unpacked to at most :data:`grader.engine.store.MAX_FILE`, its text of
  the store's fixed shape, checked whole before anything is used (nothing in it runs: the
  written arguments are rebuilt by :func:`grader.engine.written.read`, which imports nothing).
  Each property must be one of the file's own checks (the public file holds no hidden one).
* Replayed as examples from disk are (:func:`grader.engine.replay.run`): one that fails where
  the engine's own run then passes leaves the verdict to the engine; and only for properties
  this process has not drawn itself.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import stat
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import hypothesis
import numpy

from ..core.enums import StrEnum
from ..core.errors import LessonError
from ..core.fingerprint import files_digest, grader_digest, lesson_files, public_lesson_files
from ..core.lesson import SHIPPED, Lesson
from ..core.settings import Isolation, Settings
from . import replay
from .store import MAX_FILE, dumped, loaded

__all__ = [
    "MAX_PACKED",
    "Examined",
    "Verdict",
    "examine",
    "forget",
    "header",
    "load",
    "packed",
    "path_of",
    "unpacked",
    "unread",
]

#: How a file is opened: never through a link at its last step, a FIFO without waiting (the flags
#: Windows lacks are 0 there).
_OPEN = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
#: The format of the files (a change of it makes every file stale).
FORMAT = 1
#: Largest file read, packed (a lesson's examples take about 60 KiB).
MAX_PACKED = 4 << 20
#: What each file this process read held, where it was current: (file, examples per check,
#: profile) -> (items, written; empty where it was not), adopted again wherever this process has
#: lost them (:func:`grader.engine.replay.forget`), never read twice.
_READ: dict[tuple[str, int, str], tuple[tuple, dict]] = {}
#: The headers this process took: (checks folder, hidden, examples, profile) -> header.
_HEADERS: dict[tuple, dict] = {}
#: Whether the files are read (off while they are made anew: :func:`unread`).
_READING = {"on": True}


def path_of(lesson: Lesson, *, hidden: bool) -> Path:
    """Where ``lesson`` ships the examples of its public checks, or (``hidden``) its hidden ones."""
    return (lesson.hidden if hidden else lesson.checks) / SHIPPED


def _deciding(lesson: Lesson, *, hidden: bool) -> list[Path]:
    """The course's files that decide the examples of the public checks (what a release holds of
    them, and the course files they import) or, with ``hidden``, of every check (the batch's
    fingerprint's files: the reference, every file of the checks, pytest's files on the way and
    every course file any of them imports)."""
    return lesson_files(lesson) if hidden else public_lesson_files(lesson)


def header(lesson: Lesson, settings: Settings, *, hidden: bool) -> dict:
    """What decides the examples of ``lesson``'s public (or, ``hidden``, hidden) checks run with
    ``settings``: a file made under another is not believed. Taken once per process (its
    checks are imported once: a batch's children would otherwise each read every file again)."""
    asked = (str(lesson.checks), hidden, settings.examples, str(settings.profile))
    if asked not in _HEADERS:
        _HEADERS[asked] = _header(lesson, settings, hidden=hidden)
    return dict(_HEADERS[asked])


def _header(lesson: Lesson, settings: Settings, *, hidden: bool) -> dict:
    return {
        "format": FORMAT,
        "hidden": hidden,
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "implementation": sys.implementation.cache_tag or "",
        "hypothesis": hypothesis.__version__,
        "numpy": numpy.__version__,
        "examples": settings.examples,
        "profile": str(settings.profile),
        "grader": grader_digest(),
        "checks": files_digest("shipped examples", _deciding(lesson, hidden=hidden), lesson.root),
    }


def _node_is_hidden(lesson: Lesson, node: str) -> bool:
    where = node.split("::", 1)[0]
    hidden = lesson.hidden.relative_to(lesson.root).as_posix() + "/"
    return where.startswith(hidden)


def _ours(lesson: Lesson, node: str, *, hidden: bool) -> bool:
    """Whether the check ``node`` belongs in the file of ``lesson``'s public (or hidden) checks."""
    checks = lesson.checks.relative_to(lesson.root).as_posix() + "/"
    return node.split("::", 1)[0].startswith(checks) and _node_is_hidden(lesson, node) == hidden


def packed(lesson: Lesson, settings: Settings, items, down: dict, *, hidden: bool) -> bytes:
    """The file of ``lesson``'s public (or hidden) checks' examples: of ``items`` (kept examples,
    :func:`grader.engine.replay.items`' shape, keyed by this course's checks folder) those of its
    checks, with their arguments written down where ``down`` has them; the same bytes for the
    same examples (no time inside)."""
    mine = {}
    for key, examples in items:
        if len(key) == 4 and key[0] == str(lesson.checks) and _ours(lesson, str(key[1]), hidden=hidden):
            mine[tuple(key[1:])] = (examples, down.get(key))
    body = dumped(
        sorted(((key, examples) for key, (examples, _) in mine.items()), key=lambda kv: repr(kv[0])),
        {key: written for key, (_, written) in mine.items() if written is not None},
    )
    text = json.dumps(header(lesson, settings, hidden=hidden), sort_keys=True).encode() + b"\n" + body
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, compresslevel=9) as packer:
        packer.write(text)
    return out.getvalue()


def _opened(data: bytes) -> tuple[dict, bytes]:
    """The header of a file's bytes and the rest, unpacked; ValueError for anything not gzip,
    unpacking to more than the store's files may hold, or with a header that is no JSON object."""
    try:
        unpacker = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # gzip's framing
        text = unpacker.decompress(data, MAX_FILE + 1)
    except zlib.error as err:
        raise ValueError(f"not a gzip file ({err})") from None
    if len(text) > MAX_FILE or unpacker.unconsumed_tail:
        raise ValueError(f"more than {MAX_FILE >> 20} MiB unpacked")
    first, _, body = text.partition(b"\n")
    try:
        said = json.loads(first)
    except (ValueError, RecursionError) as err:
        raise ValueError(f"a header that is not JSON ({err})") from None
    if not isinstance(said, dict):
        raise ValueError("a header of an unknown shape")
    return said, body


def unpacked(data: bytes) -> tuple[dict, tuple, dict]:
    """The header, items and written arguments of a file's bytes (keys without the checks
    folder: node, how it is seeded, examples); ValueError for anything not of their shape."""
    said, body = _opened(data)
    return (said, *_body(body))


def _body(body: bytes) -> tuple[tuple, dict]:
    """The items and written arguments of a file's body, unpacked (see :func:`unpacked`)."""
    try:
        items, down = loaded(body)
    except (TypeError, RecursionError) as err:
        raise ValueError(f"not a file of kept examples ({err})") from None
    for key, _ in items:
        if not (
            len(key) == 3
            and isinstance(key[0], str)
            and key[1] == replay.DERANDOMIZED
            and isinstance(key[2], int)
            and not isinstance(key[2], bool)
        ):
            raise ValueError("a property's key of an unknown shape")
    return items, down


class Verdict(StrEnum):
    """What a run makes of a file of shipped examples."""

    NONE = "none"  # there is none
    REFUSED = "refused"  # not a plain file of examples of this folder's checks: ignored whole
    STALE = "stale"  # made under other files, releases or settings: the engine draws
    CURRENT = "current"  # replayed


@dataclass(frozen=True)
class Examined:
    """A file of shipped examples, read and judged (:func:`examine`)."""

    verdict: Verdict
    reason: str = ""  # why it was refused
    changed: tuple[str, ...] = ()  # the header's parts that differ, when it is stale
    items: tuple = ()  # when current: (node, how it is seeded, examples) -> its examples
    down: dict = field(default_factory=dict)  # when current: their arguments written down


def _read(path: Path) -> bytes | None:
    """The bytes of ``path`` if it is a regular file, reached without a link at its last step, of
    at most :data:`MAX_PACKED` bytes; None if there is none; ValueError for anything else."""
    try:
        fd = os.open(path, _OPEN)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise ValueError(f"it cannot be opened ({err.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("it is not a regular file")
        with os.fdopen(fd, "rb", closefd=True) as f:
            fd = -1
            data = f.read(MAX_PACKED + 1)
        if len(data) > MAX_PACKED:
            raise ValueError(f"it holds more than {MAX_PACKED >> 20} MiB")
        return data
    finally:
        if fd >= 0:
            os.close(fd)


def examine(lesson: Lesson, settings: Settings, *, hidden: bool) -> Examined:
    """The file of ``lesson``'s public (or hidden) checks' examples, judged for a run with
    ``settings``: its body is read only once its header says it is current."""
    path = path_of(lesson, hidden=hidden)
    try:
        data = _read(path)
        if data is None:
            return Examined(Verdict.NONE)
        said, body = _opened(data)
    except ValueError as err:
        return Examined(Verdict.REFUSED, str(err))
    try:
        wanted = header(lesson, settings, hidden=hidden)
    except (LessonError, OSError) as err:  # a file of the lesson too large to digest, say
        return Examined(Verdict.REFUSED, f"the lesson's files could not be digested: {err}")
    changed = tuple(name for name in sorted({*said, *wanted}) if said.get(name) != wanted.get(name))
    if changed:
        return Examined(Verdict.STALE, changed=changed)
    try:
        items, down = _body(body)  # unpacked once, above
        if not all(_ours(lesson, key[0], hidden=hidden) for key, _ in items):
            return Examined(Verdict.REFUSED, "a check not of that folder")
        replay.checked(tuple(((str(lesson.checks), *key), examples) for key, examples in items))
    except ValueError as err:
        return Examined(Verdict.REFUSED, str(err))
    return Examined(Verdict.CURRENT, items=items, down=down)


def load(lesson: Lesson, settings: Settings) -> int:
    """Keep in this process (:func:`grader.engine.replay.adopt_items`, as examples from disk) the
    examples ``lesson`` ships for the checks a run with ``settings`` (its level decided) runs,
    where they were made as this run would draw them; returns how many properties. Each file is
    read once per process; a property this process keeps already is left as it is. Not at the
    ``process`` level as an ordinary user (as the store): the student's code runs as the
    grader's own user there, and a file it left would be believed by every later process."""
    if not settings.replay or not replay.supported() or not _READING["on"]:
        return 0
    if settings.level is Isolation.PROCESS and getattr(os, "geteuid", lambda: 0)() != 0:
        return 0
    adopted = 0
    for hidden in (False, True) if settings.include_hidden else (False,):
        path = path_of(lesson, hidden=hidden)
        seen = (str(path), settings.examples, str(settings.profile))
        if seen not in _READ:
            found = examine(lesson, settings, hidden=hidden)
            if found.verdict is Verdict.REFUSED:
                print(f"grader: the examples in {path} were not used ({found.reason})", file=sys.stderr)
            _READ[seen] = (found.items, found.down)
        items, down = _READ[seen]
        folder = str(lesson.checks)
        fresh = tuple(
            ((folder, *key), examples) for key, examples in items if replay.kept((folder, *key)) is None
        )
        if fresh:
            written = {(folder, *key): one for key, one in down.items()}
            adopted += replay.adopt_items(fresh, shipped=True, down=written)
    return adopted


@contextlib.contextmanager
def unread():
    """While it lasts, no file is read: the examples are drawn under the engine."""
    before, _READING["on"] = _READING["on"], False
    try:
        yield
    finally:
        _READING["on"] = before


def forget() -> None:
    """Forget the files read and the headers taken (tests use it)."""
    _READ.clear()
    _HEADERS.clear()
