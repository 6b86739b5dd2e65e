"""Taking a submission in: the one way every command finds and reads a student's file.

A student's file is hostile input long before any of its code runs. A symbolic
link can point at the reference or at a host file, a named pipe blocks whoever
opens it, a sparse file claims 64 GiB, a notebook can be nested deep enough to
break a JSON parser. :func:`open_submission` refuses each of these with one line
a student understands, and reads what it accepts once, through one descriptor
and with a bounded read: the bytes it hands back are the bytes graded, and
their hash is the one the gradebook keeps.

Paths mean what the user typed: a relative path is taken from the directory the
command was started in, and the :class:`Intake` carries the absolute path for
any process that runs elsewhere.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from .enums import StrEnum
from .inert import one_line, student_text
from .ipynb import MAX_NOTEBOOK, NotebookError, notebook_source, too_large

#: Largest Python source accepted, in bytes: far above any honest answer, far below a risk.
MAX_SOURCE = 4 << 20


class Refusal(StrEnum):
    """Why a submission was not taken in, as the gradebook records it."""

    MISSING = "missing"  # nothing to grade was found
    UNREADABLE = "unreadable"  # something was found that cannot be graded
    UNFINISHED = "unfinished"  # the machine could not read it just now: no grade, try again later


#: What the system says when the machine, not the file, kept it from being read: out of file
#: descriptors or memory, an input/output error, a network file system gone stale or slow. A
#: file refused for one of these would have been graded 0 for a moment of the machine's. Not
#: EAGAIN: opening a file (without waiting) says it when another process holds a lease on it,
#: which the file's owner may take, and keep taking (a red team kept its grade unfinished so).
MACHINE_ERRNOS = frozenset(
    getattr(errno, name)
    for name in ("EMFILE", "ENFILE", "ENOMEM", "ENOBUFS", "EIO", "ESTALE", "ETIMEDOUT", "EINTR")
    if hasattr(errno, name)
)


class Form(StrEnum):
    """What kind of file a submission was handed in as."""

    PYTHON = "python"
    NOTEBOOK = "notebook"


#: What each kind of file that is not a regular one is called in a message.
_NOT_REGULAR = (
    (stat.S_ISLNK, "a symbolic link, and the grader follows no links"),
    (stat.S_ISDIR, "a folder, not a file"),
    (stat.S_ISFIFO, "a named pipe (FIFO), not a file"),
    (stat.S_ISSOCK, "a socket, not a file"),
    (stat.S_ISCHR, "a device, not a file"),
    (stat.S_ISBLK, "a device, not a file"),
)


class IntakeError(Exception):
    """A submission that cannot be taken in; the message says what is wrong and what to do."""

    def __init__(self, message: str, *, kind: Refusal = Refusal.UNREADABLE):
        message = student_text(message)  # it names the student's files and folders
        super().__init__(message)
        self.message = message
        self.kind = kind


@dataclass(frozen=True)
class Intake:
    """A submission taken in: where it was found and the exact bytes that will be graded."""

    shown: str
    """The file as the user named it: what they typed, plus the file found in a folder (on one
    line, control characters written out: :func:`grader.core.inert.one_line`)."""
    path: Path
    """The same file as an absolute path, for processes that run in another directory."""
    source: bytes
    """The Python source graded: the file itself, or the code of a notebook's cells."""
    sha256: str
    """Hex SHA-256 of :attr:`source`."""
    form: Form


def open_submission(path: Path | str, filename: str, *, nested: bool = False) -> Intake:
    """Find and read the submission ``path`` names: a file, or a folder holding ``filename``
    (the lesson's file; else a single notebook), with ``nested`` anywhere below it (an upload
    that kept the student's folders). Raises :class:`IntakeError` for anything it refuses."""
    typed = Path(path)
    absolute = Path.cwd() / typed
    folder, name = _locate(typed, absolute, filename, nested)
    shown = (
        str(typed / folder.relative_to(absolute) / name)
        if absolute in (folder, *folder.parents)
        else str(typed)
    )
    raw = _read(folder, name, shown)
    if name.endswith(".ipynb"):
        source, form = _notebook_code(raw, name), Form.NOTEBOOK
    else:
        source, form = raw, Form.PYTHON
    return Intake(one_line(shown), folder / name, source, hashlib.sha256(source).hexdigest(), form)


def take_in(path: Path | str, filename: str, *, nested: bool = False) -> tuple[Intake | IntakeError, Path]:
    """For a command that grades one submission: (what :func:`open_submission` took in, or why
    it refused what it found; the path as it is shown).

    A file that was found but refused is graded as its refusal: the report
    gives it as the submission's problem, with a score of 0. When nothing was
    found (``MISSING``), IntakeError is raised: there is nothing to report on.
    """
    try:
        intake = open_submission(path, filename, nested=nested)
    except IntakeError as err:
        if err.kind is Refusal.MISSING:
            raise
        return err, Path(path)
    return intake, Path(intake.shown)


def _locate(typed: Path, absolute: Path, filename: str, nested: bool) -> tuple[Path, str]:
    """(folder, file name) of the submission: the path itself, or the file chosen in a folder."""
    try:
        found = os.stat(absolute)
    except FileNotFoundError:
        if os.path.islink(absolute):  # a link to nothing: refused as a link when opened
            return absolute.parent, absolute.name
        other = _other_case(absolute.parent, absolute.name)
        hint = f" (there is {typed.with_name(other)}: the name must match exactly)" if other else ""
        raise IntakeError(f"{typed} does not exist{hint}", kind=Refusal.MISSING) from None
    except OSError as err:
        raise unreadable(str(typed), err) from None
    if not stat.S_ISDIR(found.st_mode):
        return absolute.parent, absolute.name
    if nested:
        return _search(typed, absolute, filename)
    return absolute, _choose(typed, absolute, filename)


def _choose(typed: Path, folder: Path, filename: str) -> str:
    """The file of a submission folder: ``filename``, whatever it is, else its one notebook."""
    try:
        names = sorted(entry.name for entry in os.scandir(folder))
    except OSError as err:
        raise unreadable(str(typed), err) from None
    if filename in names:
        return filename
    same = [n for n in names if n.casefold() == filename.casefold()]
    if len(same) == 1:  # NAME.py written with other capitals: the student's file all the same
        return same[0]
    notebooks = [n for n in names if n.endswith(".ipynb")]
    if len(notebooks) == 1:
        return notebooks[0]
    if notebooks:
        raise IntakeError(
            f"{typed} holds several notebooks ({', '.join(notebooks)}) and no {filename}: "
            "keep only the one to grade",
            kind=Refusal.MISSING,
        )
    raise IntakeError(f"{typed} is a folder without {filename} in it", kind=Refusal.MISSING)


def _other_case(folder: Path, name: str) -> str:
    """The one entry of ``folder`` named ``name`` with other capitals ('' when none, or several)."""
    try:
        same = [e.name for e in os.scandir(folder) if e.name != name and e.name.casefold() == name.casefold()]
    except OSError:
        return ""
    return same[0] if len(same) == 1 else ""


def _search(typed: Path, top: Path, filename: str) -> tuple[Path, str]:
    """(folder, file name) of the submission anywhere in ``top``: ``filename`` at the top, else
    the first one below, else its one notebook. Links to folders are not followed; a link where
    the file is is refused when it is read."""
    scripts, notebooks = [], []
    for here, folders, files in os.walk(top, followlinks=False):
        folders[:] = sorted(f for f in folders if f != ".ipynb_checkpoints")
        scripts += [Path(here, name) for name in files if name.casefold() == filename.casefold()]
        notebooks += [Path(here, name) for name in files if name.endswith(".ipynb")]
    if scripts:  # the exact name first, at the top first; else one named with other capitals
        exact = [p for p in scripts if p.name == filename]
        chosen = top / filename if top / filename in scripts else sorted(exact or scripts)[0]
    elif len(notebooks) == 1:
        chosen = notebooks[0]
    elif notebooks:
        raise IntakeError(
            f"Several notebooks were handed in ({', '.join(p.name for p in sorted(notebooks))}) and "
            f"no {filename}; hand in one.",
            kind=Refusal.MISSING,
        )
    else:
        raise IntakeError(f"No {filename} (or notebook) was found in your submission.", kind=Refusal.MISSING)
    return chosen.parent, chosen.name


def _read(folder: Path, name: str, shown: str) -> bytes:
    """The bytes of the regular file ``name`` in ``folder``, read once through one descriptor.

    Links are not followed, a pipe or a device is never read (nor waited for),
    and the size is checked before reading: no more than the cap plus one byte
    is ever read, so a file that grows meanwhile is refused too.
    """
    cap = MAX_NOTEBOOK if name.endswith(".ipynb") else MAX_SOURCE
    fd = _open_at(folder, name, shown) if _OPENS_AT else _open_checked(folder / name, name, shown)
    try:
        found = os.fstat(fd)
        _refuse_odd(found.st_mode, name)  # it may have been swapped since it was looked at
        _refuse_size(name, found.st_size, cap)
        raw = bounded_read(fd, cap)
    except OSError as err:
        raise unreadable(name, err) from None
    finally:
        os.close(fd)
    _refuse_size(name, len(raw), cap)
    return raw


#: Whether this system opens a file by its name in a folder held open (POSIX; not Windows).
_OPENS_AT = {os.open, os.stat} <= os.supports_dir_fd and all(
    hasattr(os, flag) for flag in ("O_DIRECTORY", "O_NOFOLLOW", "O_NONBLOCK", "O_CLOEXEC")
)


def _open_at(folder: Path, name: str, shown: str) -> int:
    """A descriptor of the regular file ``name`` in ``folder``: the folder is held open while the
    file is looked at (links not followed) and opened (without following a link, without waiting
    on a pipe)."""
    try:
        directory = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as err:
        raise unreadable(shown, err) from None
    try:
        _refuse_odd(os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode, name)
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        return os.open(name, flags, dir_fd=directory)
    except FileNotFoundError:
        raise IntakeError(f"{shown} does not exist", kind=Refusal.MISSING) from None
    except OSError as err:
        raise _unopenable(name, err) from None
    finally:
        os.close(directory)


def _open_checked(path: Path, name: str, shown: str) -> int:
    """A descriptor of the regular file at ``path``, where no folder can be held open (Windows):
    the file is looked at without following a link, opened, and must still be the file looked at."""
    try:
        seen = os.lstat(path)
        _refuse_odd(seen.st_mode, name)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOINHERIT", 0))
    except FileNotFoundError:
        raise IntakeError(f"{shown} does not exist", kind=Refusal.MISSING) from None
    except OSError as err:
        raise _unopenable(name, err) from None
    found = os.fstat(fd)
    if (found.st_dev, found.st_ino) != (seen.st_dev, seen.st_ino):
        os.close(fd)
        raise IntakeError(f"{name} was replaced while it was being read; hand it in again.")
    return fd


def _refuse_odd(mode: int, name: str) -> None:
    """Raise IntakeError unless ``mode`` is that of a regular file."""
    if stat.S_ISREG(mode):
        return
    what = next((words for test, words in _NOT_REGULAR if test(mode)), "not a regular file")
    raise IntakeError(f"{name} could not be read: it is {what}. Hand in your code itself, as a plain file.")


def _unopenable(name: str, err: OSError) -> IntakeError:
    """Why ``name`` could not be opened, for a student."""
    if err.errno in (errno.ELOOP, errno.EMLINK):  # O_NOFOLLOW met a link (EMLINK on BSDs)
        return IntakeError(
            f"{name} could not be read: it is a symbolic link, and the grader follows no links. "
            "Hand in your code itself, as a plain file."
        )
    return unreadable(name, err)


def unreadable(name: str, err: OSError) -> IntakeError:
    """Why ``name`` could not be read: the file's doing (a refusal: it is graded as unreadable),
    or the machine's, for a moment (:data:`MACHINE_ERRNOS`: no grade now, and it says so)."""
    why = err.strerror or str(err)
    if err.errno in MACHINE_ERRNOS:
        return IntakeError(
            f"{name} could not be read just now ({why}): the grading machine's trouble, not the "
            "student's; it is not graded until it is read again",
            kind=Refusal.UNFINISHED,
        )
    return IntakeError(f"{name} could not be read ({why}).")


def _refuse_size(name: str, size: int, cap: int) -> None:
    """Raise IntakeError when ``size`` bytes are more than ``cap`` allows."""
    if size <= cap:
        return
    if name.endswith(".ipynb"):
        raise IntakeError(str(too_large(name, size)))
    raise IntakeError(
        f"Your file holds {size / 2**20:.1f} MiB; a submission may hold at most "
        f"{MAX_SOURCE >> 20} MiB of Python (the exercises need a few KiB). Hand in only your code."
    )


def bounded_read(fd: int, cap: int) -> bytes:
    """At most ``cap + 1`` bytes from ``fd``: enough to tell that a file is over ``cap``."""
    chunks, left = [], cap + 1
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _notebook_code(raw: bytes, name: str) -> bytes:
    """The code of the notebook ``raw``, within the cap on Python source."""
    try:
        code = notebook_source(raw, name=name)
    except NotebookError as err:
        raise IntakeError(str(err)) from None
    if len(code) > MAX_SOURCE:
        raise IntakeError(
            f"The code cells of {name} hold {len(code) / 2**20:.1f} MiB of Python; a submission may "
            f"hold at most {MAX_SOURCE >> 20} MiB (the exercises need a few KiB). Keep only your "
            "code in the notebook's cells and hand it in again."
        )
    return code
