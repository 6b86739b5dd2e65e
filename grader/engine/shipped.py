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
from pathlib import Path

import hypothesis
import numpy

from ..core.fingerprint import files_digest, files_under, grader_digest
from ..core.lesson import OUTLINE, SHIPPED, Lesson
from ..core.settings import Settings
from . import replay
from .store import MAX_FILE, dumped, loaded

__all__ = ["MAX_PACKED", "forget", "header", "load", "packed", "path_of", "unpacked", "unread"]

#: The format of the files (a change of it makes every file stale).
FORMAT = 1
#: Largest file read, packed (a lesson's examples take about 60 KiB).
MAX_PACKED = 4 << 20
#: What each file this process read held: (file, its header) -> (items, written), adopted again
#: wherever this process has lost them (:func:`grader.engine.replay.forget`), never read twice.
_READ: dict[tuple[str, str], tuple[tuple, dict]] = {}
#: The headers this process took: (checks folder, hidden, examples, profile) -> header.
_HEADERS: dict[tuple, dict] = {}
#: Whether the files are read (off while they are made anew: :func:`unread`).
_READING = {"on": True}


def path_of(lesson: Lesson, *, hidden: bool) -> Path:
    """Where ``lesson`` ships the examples of its public checks, or (``hidden``) its hidden ones."""
    return (lesson.hidden if hidden else lesson.checks) / SHIPPED


def _deciding(lesson: Lesson, *, hidden: bool) -> list[Path]:
    """The course's files that decide the examples of the public checks (those a release holds,
    its outline apart) or, with ``hidden``, of every check (and the reference)."""
    above = [lesson.root / "tests" / "__init__.py", lesson.root / "tests" / "checks" / "__init__.py"]
    files = [p for p in above if p.is_file()]
    if hidden:
        files += [p for p in files_under(lesson.checks) if p.name != SHIPPED]
        if lesson.reference is not None:
            files.append(lesson.reference)
    else:
        files += [p for p in lesson.public_files() if p.name != OUTLINE or p.parent != lesson.checks]
    return files


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


def unpacked(data: bytes) -> tuple[dict, tuple, dict]:
    """The header, items and written arguments of a file's bytes (keys without the checks
    folder); ValueError for anything not of their shape or larger than the store's files."""
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
    items, down = loaded(body)
    for key, _ in items:
        if len(key) != 3 or not isinstance(key[0], str):
            raise ValueError("a property's key of an unknown shape")
    return said, items, down


def _read(path: Path) -> bytes | None:
    """The bytes of ``path`` if it is a regular file, reached without a link at its last step, of
    at most :data:`MAX_PACKED` bytes; None if there is none; ValueError for anything else."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
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


def load(lesson: Lesson, settings: Settings) -> int:
    """Keep in this process (:func:`grader.engine.replay.adopt_items`, as examples from disk) the
    examples ``lesson`` ships for the checks a run with ``settings`` runs, where they were made
    as this run would draw them; returns how many properties. Each file is read once per
    process; a property this process keeps already is left as it is."""
    if not settings.replay or not replay.supported() or not _READING["on"]:
        return 0
    adopted = 0
    for hidden in (False, True) if settings.include_hidden else (False,):
        path = path_of(lesson, hidden=hidden)
        wanted = header(lesson, settings, hidden=hidden)
        seen = (str(path), json.dumps(wanted, sort_keys=True))
        if seen not in _READ:
            _READ[seen] = ((), {})
            try:
                data = _read(path)
                if data is None:
                    continue
                said, items, down = unpacked(data)
            except ValueError as err:
                print(f"grader: the examples in {path} were not used ({err})", file=sys.stderr)
                continue
            if said != wanted:
                continue  # made by other files or releases: the engine draws them here
            if not all(_ours(lesson, key[0], hidden=hidden) for key, _ in items):
                print(
                    f"grader: the examples in {path} were not used (a check not of that folder)",
                    file=sys.stderr,
                )
                continue
            _READ[seen] = (items, down)
        items, down = _READ[seen]
        folder = str(lesson.checks)
        fresh = tuple(
            ((folder, *key), examples) for key, examples in items if replay.kept((folder, *key)) is None
        )
        if fresh:
            written = {(folder, *key): one for key, one in down.items()}
            adopted += replay.adopt_items(fresh, from_disk=True, down=written)
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
