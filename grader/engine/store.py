"""Keep each property's examples between runs, on disk: a single ``grade`` replays them too.

:mod:`grader.engine.replay` keeps, in memory, the choices Hypothesis's engine drew for every
property that passed in a run where the student's code did not run in the grading process (a
few numbers per example, from which the checks' strategies rebuild every array). This module
writes them, after such a run, to a file of the store (:attr:`Settings.store`) and reads them
back at the start of the next run that grades the same lesson in the same way, so that the
next process replays instead of drawing: examples drawn once per lesson, checks and versions.

The file is named by a key that changes whenever anything that decides the examples changes
(:func:`store_key`, taken once the checks are collected): the lesson's checks and every course
file they import (the reference too, as a batch's fingerprint takes it), every module the run
loaded from outside Python's installation (a folder a pytest setting put on the path, say), the
grader's own files, the Python, Hypothesis, numpy and pytest releases, the number of examples,
the profile and the isolation level. Reading those files for every run would cost more than
replay saves, so the key is remembered beside the store with the size, time and inode of every
file it read (and the paths it looked at and found nothing), and only if computing it twice gives
it twice: as long as none of them changed, the key is the one they gave, as ``make`` and Python's
own bytecode cache decide. Examples read back are believed only while they fit (see
:func:`grader.engine.replay.run`): one that cannot be drawn from its choices, or that fails where
the engine's own run passes, leaves the verdict to the engine.

What it is, and why that is safe:

* The grading side's own state, as trusted as the grader's installed files and the course's
  checks: written only by the grading process (replay's rule: never after a run whose student
  code ran in this process), and used only where the student's code cannot reach it: at the
  ``namespaces`` level (a sandbox's filesystem does not hold it) and at the ``process`` level
  as root (the student's code runs as a user of its own, who can neither read nor write it).
  At the ``process`` level as an ordinary user, the student's code runs as the grader's own
  user, so no store is read or written there.
* Read only where this user made it: the folder reached from ``/`` one name at a time without
  following a link, through folders only root or this user can change, and then used through
  that descriptor alone; the folder and each file owned by the grader's user, readable and
  writable by nobody else (hidden checks' examples are in it), a regular file with one name of at
  most :data:`MAX_FILE` bytes; its text is JSON of a fixed shape (numbers, strings and lists,
  every property with an example that ran), checked whole by
  :func:`grader.engine.replay.adopt_items` before anything is used. Anything else is ignored (a word on stderr), and the run draws its
  examples under the engine, as without a store: a store can make a grade faster, never
  different.
* Outside every course (by default the user's cache folder): a release, a Gradescope bundle or
  an nbgrader course never holds it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import stat
import struct
import sys
import time
from pathlib import Path

import hypothesis
import numpy
from _pytest import __version__ as pytest_version  # pytest's release, without loading pytest

from ..core.fingerprint import files_under, grader_digest, lesson_digest
from ..core.installed import PACKAGE
from ..core.intake import bounded_read
from ..core.lesson import Lesson
from ..core.settings import Isolation, Settings
from . import replay

__all__ = ["MAX_FILE", "Store", "dumped", "forget_opened", "loaded", "open_store", "store_key"]

#: The format of the files (a change of it is a new key).
FORMAT = 2
#: Largest file of the store read (a lesson's examples take about a fifth of a MiB).
MAX_FILE = 16 << 20
#: Files kept in the store folder; past it, the oldest are removed.
MAX_FILES = 64
#: Digests remembered (the grader's, and one per lesson folder); past it, the oldest go.
MAX_REMEMBERED = 16
#: The file remembering which files gave which key.
_MEMO = "keys.json"


# ----------------------------------------------------------------------------- the folder

#: How each folder on the way is opened (the flags Windows lacks are 0 there: no store is used
#: there, where nothing is sandboxed, but this module is imported all the same).
_DIRECTORY = (
    os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
)
#: The name of a file of kept examples (a key, :func:`store_key`), and of one being written
#: (:func:`_write`); nothing else is ever removed.
_KEPT_NAME = re.compile(r"[0-9a-f]{40}\.json")
_WRITING_NAME = re.compile(r"\.writing-[0-9a-f]{16}")
#: Seconds after which a file being written is taken for one a killed writer left.
ABANDONED_SECONDS = 3600


def _safe_on_the_way(info: os.stat_result) -> bool:
    """Whether a folder on the way to the store can be changed by no one but root and this user
    (a folder others may write to must be sticky, as /tmp is: none can move what is not theirs)."""
    if info.st_uid not in (0, os.geteuid()):
        return False
    return not info.st_mode & 0o022 or bool(info.st_mode & stat.S_ISVTX)


def _private_folder(folder: Path, *, create: bool) -> int | None:
    """A descriptor of ``folder`` if it is a folder of this user's that nobody else may enter
    (made so, with the folders on the way, if ``create``), reached from ``/`` one name at a time,
    never through a link, every folder on the way safe (:func:`_safe_on_the_way`); else None.
    Every later use of the store goes through this descriptor, so that nothing renamed or linked
    on the way afterwards (by a student's process at the ``process`` level, say) can move it."""
    names = Path(os.path.abspath(folder)).parts[1:]
    try:
        fd = os.open("/", _DIRECTORY)
    except OSError:
        return None
    try:
        for name in names:
            if not _safe_on_the_way(os.fstat(fd)):
                return None
            try:
                inner = os.open(name, _DIRECTORY, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    return None
                try:
                    os.mkdir(name, 0o700, dir_fd=fd)
                except FileExistsError:
                    pass  # made meanwhile by another process: opened below as any other
                inner = os.open(name, _DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        info = os.fstat(fd)
        if info.st_uid != os.geteuid() or info.st_mode & 0o077:
            return None  # never made private here: it may be a folder others use (/tmp, say)
        kept, fd = fd, -1
        return kept
    except OSError:
        return None
    finally:
        if fd >= 0:
            os.close(fd)


def _read(folder: int, name: str) -> bytes | None:
    """The bytes of the file ``name`` of the folder ``folder`` (a descriptor) if it is a private
    regular file of this user's, with no other name, of at most :data:`MAX_FILE` bytes; else None."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if (
            not stat.S_ISREG(info.st_mode)
            or info.st_uid != os.geteuid()
            or info.st_mode & 0o077
            or info.st_nlink != 1
            or info.st_size > MAX_FILE
        ):
            return None
        data = bounded_read(fd, MAX_FILE)  # the size may have grown since fstat
        return data if len(data) <= MAX_FILE else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _write(folder: int, name: str, data: bytes) -> None:
    """Write the file ``name`` of the folder ``folder`` (a descriptor) whole or not at all
    (another process may read it meanwhile); private to this user."""
    temporary = f".writing-{secrets.token_hex(8)}"
    fd = os.open(
        temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder
    )
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        try:
            os.unlink(temporary, dir_fd=folder)
        except OSError:
            pass
        raise


def _prune(folder: int) -> None:
    """Keep the :data:`MAX_FILES` newest files of examples (old keys are never read again), and
    remove what a writer killed midway left (:func:`_write`'s temporaries, once older than
    :data:`ABANDONED_SECONDS`); only files of this user's named so are ever removed."""
    try:
        files, abandoned = [], []
        for entry in os.scandir(folder):
            ours = _KEPT_NAME.fullmatch(entry.name) or _WRITING_NAME.fullmatch(entry.name)
            if not ours:
                continue
            info = entry.stat(follow_symlinks=False)
            if not (stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid()):
                continue
            if _KEPT_NAME.fullmatch(entry.name):
                files.append((info.st_mtime_ns, entry.name))
            elif time.time() - info.st_mtime > ABANDONED_SECONDS:
                abandoned.append(entry.name)
        files.sort()
        for name in [*abandoned, *(name for _, name in files[: max(0, len(files) - MAX_FILES)])]:
            os.unlink(name, dir_fd=folder)
    except OSError:
        pass


# ----------------------------------------------------------------------------- the key


def _stat(path: str) -> list | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    # the change time too: ``touch -r`` or ``cp -p`` can put the others back, never this
    return [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev]


def _remembered(memo: dict, name: str, listed: list[str], compute) -> tuple[str, set[str]]:
    """The digest ``compute(probed)`` gives, remembered in ``memo[name]`` with the state of every
    path it looked at: reused while each is as it was and every path of ``listed`` (what a
    walk finds now) is among them; else computed again. A digest is remembered only if a second
    computation, after the states were taken, gives it again: a file saved while the first read
    it is not paired with what it held before. Returns the digest and the paths it took in."""
    entry = memo.get(name)
    if (
        isinstance(entry, dict)
        and isinstance(entry.get("paths"), dict)
        and isinstance(entry.get("digest"), str)
    ):
        paths = entry["paths"]
        if all(path in paths for path in listed) and all(_stat(path) == then for path, then in paths.items()):
            return entry["digest"], set(paths)
    probed: dict[str, bool] = {}
    digest = compute(probed)
    states = {path: _stat(path) for path in sorted(probed)}
    again: dict[str, bool] = {}
    if compute(again) == digest and set(again) == set(probed):
        memo.pop(name, None)
        memo[name] = {"paths": states, "digest": digest}
        while len(memo) > MAX_REMEMBERED:
            del memo[next(iter(memo))]  # the one computed longest ago
    return digest, set(probed)


def _outside_python() -> list[str]:
    """The files of the modules this process has loaded from outside Python's installation and
    the grader's own package (a lesson's checks, and whatever they imported: a course file, a
    folder a pytest setting or a conftest put on the path), in a fixed order."""
    installed = tuple(
        os.path.join(os.path.normpath(p), "") for p in {sys.prefix, sys.base_prefix, sys.exec_prefix}
    )
    grader = os.path.join(os.path.normpath(PACKAGE), "")
    found = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and path.endswith(".py"):
            path = os.path.normpath(os.path.abspath(path))
            if not path.startswith(installed) and not path.startswith(grader):
                found.add(path)
    return sorted(found)


def _grader_digest(probed: dict) -> str:
    for path in files_under(PACKAGE):
        probed[os.path.normpath(path)] = True
    return grader_digest()


def store_key(lesson: Lesson, settings: Settings, memo: dict) -> tuple[str, set[str]]:
    """The name of the file ``lesson``'s examples are kept in, for a run with ``settings`` (its
    level decided), once the checks are collected: every input of the examples, digested (see
    the module's text), and the files of the course it took in. ``memo``: the remembered
    digests of files, updated where they changed."""
    run = {
        "format": FORMAT,
        "python": sys.version,
        "implementation": sys.implementation.cache_tag or "",
        "hypothesis": hypothesis.__version__,
        "numpy": numpy.__version__,
        "pytest": pytest_version,
        "examples": settings.examples,
        "profile": str(settings.profile),
        "level": str(settings.level),
        "checks": str(lesson.checks),
    }
    grader, _ = _remembered(
        memo, "grader", [os.path.normpath(p) for p in files_under(PACKAGE)], _grader_digest
    )
    loaded = [Path(p) for p in _outside_python()]
    listed = [os.path.normpath(p) for p in [lesson.source, *files_under(lesson.checks), *loaded]]
    files, taken = _remembered(
        memo, f"lesson {lesson.checks}", listed, lambda probed: lesson_digest(lesson, probed, extra=loaded)
    )
    digest = hashlib.sha256(json.dumps(run, sort_keys=True).encode())
    digest.update(f"\0{grader}\0{files}".encode())
    return digest.hexdigest()[:40], taken


# ----------------------------------------------------------------------------- the choices

#: How a choice that JSON cannot carry exactly is written: [tag, hexadecimal].
_FLOAT, _BYTES = "f", "b"


def _encoded(choice):
    if isinstance(choice, float):
        return [_FLOAT, struct.pack(">d", choice).hex()]  # every bit: -0.0, NaN's payload
    if isinstance(choice, bytes):
        return [_BYTES, choice.hex()]
    return choice  # bool, int, str


def _decoded(choice):
    if isinstance(choice, list):
        if len(choice) != 2 or not all(isinstance(part, str) for part in choice):
            raise ValueError("a choice of an unknown shape")
        tag, text = choice
        if tag == _FLOAT and len(text) == 16:
            return struct.unpack(">d", bytes.fromhex(text))[0]
        if tag == _BYTES:
            return bytes.fromhex(text)
        raise ValueError("a choice of an unknown kind")
    return choice  # replay.adopt checks the rest


def dumped(items, down: dict) -> bytes:
    """A file's bytes: each property's examples, each with its arguments written down
    (:mod:`grader.engine.written`) where ``down`` has them."""
    properties = []
    for key, examples in items:
        written = down.get(key) or (None,) * len(examples)
        properties.append(
            [
                list(key),
                [
                    [[_encoded(c) for c in choices], stop, one]
                    for (choices, stop), one in zip(examples, written, strict=True)
                ],
            ]
        )
    return json.dumps({"format": FORMAT, "properties": properties}, separators=(",", ":")).encode()


def loaded(data: bytes) -> tuple[tuple, dict]:
    """The kept items of a file's bytes, in :func:`grader.engine.replay.handed`'s shape, and the
    arguments written down for them (key -> one per example, a JSON object or None, read and
    checked only when replayed); ValueError for anything else (replay.adopt checks the rest)."""
    try:
        whole = json.loads(data)
    except (ValueError, RecursionError) as err:  # UnicodeDecodeError is a ValueError
        raise ValueError(f"not JSON ({err})") from None
    if (
        not isinstance(whole, dict)
        or whole.get("format") != FORMAT
        or not isinstance(whole.get("properties"), list)
    ):
        raise ValueError("not a file of kept examples")
    items, down = [], {}
    for prop in whole["properties"]:
        if not (
            isinstance(prop, list)
            and len(prop) == 2
            and isinstance(prop[0], list)
            and isinstance(prop[1], list)
        ):
            raise ValueError("a kept property of an unknown shape")
        if not all(isinstance(part, (str, int)) and not isinstance(part, bool) for part in prop[0]):
            raise ValueError("a kept property's key of an unknown shape")
        examples, written = [], []
        for example in prop[1]:
            if not (
                isinstance(example, list)
                and len(example) == 3
                and isinstance(example[0], list)
                and (example[2] is None or isinstance(example[2], dict))
            ):
                raise ValueError("a kept example of an unknown shape")
            examples.append((tuple(_decoded(c) for c in example[0]), example[1]))
            written.append(example[2])
        if not any(stop is None for _, stop in examples):
            raise ValueError("a kept property with no example that ran")  # it would pass unrun
        items.append((tuple(prop[0]), tuple(examples)))
        down[tuple(prop[0])] = tuple(written)  # None for each: none could be written down
    return tuple(items), down


# ----------------------------------------------------------------------------- what a run read

#: The files opened in this process since :func:`_record` began (None: not recording), read by
#: an audit hook (:func:`sys.addaudithook`, installed once, with the first store opened).
_OPENED_FILES: set[str] | None = None
_HOOKED = False


def _audit(event: str, args: tuple) -> None:
    if event == "open" and _OPENED_FILES is not None and args:
        path = args[0]
        if isinstance(path, (str, bytes)):
            _OPENED_FILES.add(os.fsdecode(path))


def _record() -> None:
    """Note from now on every file this process opens (what a run's checks read besides the
    files the key took in: a data file, a module imported while drawing)."""
    global _OPENED_FILES, _HOOKED
    if not _HOOKED:
        sys.addaudithook(_audit)
        _HOOKED = True
    _OPENED_FILES = set()


def _stop_recording() -> frozenset[str]:
    """Note nothing more (a run is over: what the process opens after it is no run's); returns
    what was noted."""
    global _OPENED_FILES
    noted, _OPENED_FILES = frozenset(_OPENED_FILES or ()), None
    return noted


@contextlib.contextmanager
def _unrecorded():
    """The store's own reads and writes are not the run's."""
    global _OPENED_FILES
    kept, _OPENED_FILES = _OPENED_FILES, None
    try:
        yield
    finally:
        _OPENED_FILES = kept


# ----------------------------------------------------------------------------- a run's store


class Store:
    """The kept examples of one lesson, graded one way, in the store folder (``folder``: its
    descriptor, held for the process's life)."""

    def __init__(self, folder: int, where: Path, name: str, lesson: Lesson, taken: set[str] = frozenset()):
        self.folder = folder
        self.where = where
        self.name = name
        self.lesson = lesson
        self.taken = set(taken)  # the course's files the key took in
        self.known: dict[tuple, tuple] = {}  # the examples read from the file (or written to it)
        self.known_down: set[tuple] = set()  # the properties whose arguments it holds written down
        self.checks: dict[tuple, object] = {}  # key -> the check that draws its examples (this run's)
        self.loaded = False
        self.opened: frozenset[str] | None = None  # what the run opened, once it ended (:meth:`end`)

    def begin(self) -> None:
        """A run starts (its checks collected): what it opens from now on is noted (:meth:`untaken`)."""
        self.opened = None
        _record()

    def end(self) -> None:
        """The run is over (saved or not): nothing the process opens from now on is noted; what
        the run opened is kept for :meth:`untaken`."""
        self.opened = _stop_recording()

    @property
    def file(self) -> str:
        return f"{self.name}.json"

    def _mine(self, key: tuple) -> bool:
        return bool(key) and key[0] == str(self.lesson.checks)

    def load(self) -> int:
        """Keep in this process (:func:`grader.engine.replay.adopt_items`) the examples of the
        store's file; returns how many properties. A file that is not a private one of the
        right shape is ignored whole (the engine draws, as without it). Read once per process."""
        if self.loaded:
            return 0
        self.loaded = True
        with _unrecorded():
            data = _read(self.folder, self.file)
        if data is None:
            return 0
        try:
            everything, down = loaded(data)
            items = tuple(item for item in everything if self._mine(item[0]))
            adopted = replay.adopt_items(items, from_disk=True, down=down)
        except ValueError as err:
            print(f"grader: the kept examples in {self.where} were not used ({err})", file=sys.stderr)
            return 0
        self.known = dict(items)
        self.known_down = {key for key, _ in items if key in down}
        return adopted

    def save(self) -> int:
        """Write the examples of the lesson this process keeps that the file lacks or holds
        otherwise (merged with what the file holds now: another process may have written it);
        returns how many properties were written anew. Never fails a grade: a store that cannot
        be written is skipped."""
        # (what a file of the lesson ships is read again by every run: no copy of it is kept)
        mine = {
            key: examples for key, examples in replay.items() if self._mine(key) and not replay.shipped(key)
        }
        new = {key for key, examples in mine.items() if self.known.get(key) != examples}
        if self.untaken():
            return 0
        for key in mine:  # written down once, for the next run (drawn again here, after this one)
            if key in self.checks and replay.written_down(key) is None:
                replay.write_down(self.checks[key], key)
        new |= {key for key in mine if key not in self.known_down and replay.written_down(key) is not None}
        # (a key whose examples none could be written down is written once all the same, with
        # None for each: the next run does not try again)
        if not new:
            return 0
        with _unrecorded():
            return self._write(mine, new)

    def untaken(self) -> list[str]:
        """The files of the course this run read that the key did not take in (a data file the
        checks open, a module a strategy imports while drawing), what Python wrote itself apart
        (the submission was read before the run began, :meth:`begin`): while there is any,
        nothing is written, since a change to one would not change the key."""
        root = os.path.join(os.path.normpath(os.path.abspath(self.lesson.root)), "")
        loaded = {p for p in _outside_python() if p.startswith(root)}
        noted = self.opened if self.opened is not None else (_OPENED_FILES or ())
        opened = {os.path.normpath(os.path.abspath(p)) for p in noted}
        return sorted(
            path
            for path in (loaded | opened)
            if path.startswith(root)
            and path not in self.taken
            and "__pycache__" not in path
            and os.path.isfile(path)
        )

    def _write(self, mine: dict, new: set) -> int:
        down = {key: replay.written_down(key) for key in mine}
        down = {key: written for key, written in down.items() if written is not None}
        data = _read(self.folder, self.file)
        if data is not None:
            try:
                everything, theirs = loaded(data)
                for key, examples in everything:
                    if self._mine(key) and key not in mine:
                        mine[key] = examples
                        if key in theirs:
                            down[key] = theirs[key]
            except ValueError:
                pass  # rewritten whole from what this process knows
        try:
            _write(self.folder, self.file, dumped(sorted(mine.items(), key=lambda kv: repr(kv[0])), down))
            _prune(self.folder)
        except OSError:
            return 0
        self.known = mine
        self.known_down = set(down)
        return len(new)


#: The stores this process opened: (folder, lesson's checks, key of the settings) -> Store.
_OPENED: dict[tuple, Store | None] = {}


def open_store(lesson: Lesson, settings: Settings) -> Store | None:
    """The store of ``lesson`` graded with ``settings`` (its level decided), or None where none
    is used: replay off, no store folder, grading in the checker's own process (``none``), at
    the ``process`` level as an ordinary user, or a folder that is not this user's private one
    (:func:`_private_folder`). Opened once per process, after the checks are collected (the
    key takes in the modules they loaded)."""
    if not settings.replay or settings.store is None or settings.level in (None, Isolation.NONE):
        return None
    if settings.level is Isolation.PROCESS and os.geteuid() != 0:
        return None  # the student's code runs as this very user there: it could write the store
    where = Path(settings.store)
    opened = (str(where), str(lesson.checks), settings.examples, str(settings.profile), str(settings.level))
    if opened in _OPENED:
        return _OPENED[opened]
    store = None
    folder = _private_folder(where, create=True)
    if folder is not None:
        try:
            raw = _read(folder, _MEMO)
            memo = json.loads(raw) if raw is not None else {}
            memo = memo if isinstance(memo, dict) else {}
        except (ValueError, RecursionError):
            memo = {}
        before = json.dumps(memo)
        try:
            name, taken = store_key(lesson, settings, memo)
        except Exception:  # noqa: BLE001 - a lesson's file that cannot be read: the run says so itself
            name = None
        if name is None:
            os.close(folder)
        else:
            store = Store(folder, where, name, lesson, taken)
            if json.dumps(memo) != before:
                try:
                    _write(folder, _MEMO, json.dumps(memo).encode())
                except OSError:
                    pass
    _OPENED[opened] = store
    return store


def forget_opened(where: str) -> None:
    """Close the stores this process opened in the folder ``where`` (a temporary one, removed)."""
    for opened, store in list(_OPENED.items()):
        if opened[0] == str(Path(where)):
            del _OPENED[opened]
            if store is not None:
                os.close(store.folder)
