"""The trusted side's watch over a worker: every call's arguments, seen while the worker is frozen.

A call goes straight from the grading process to the worker and back (the keeper that forked
the worker is not on the way):

* the call's arrays are written by this side into the :class:`Arena`, memory the worker maps
  (made here for each worker, sealed at its size, never mapped here: this side writes and reads
  it with ``pwrite`` and ``pread``, so nothing the worker does to it can fault this process),
  and this side keeps their bytes;
* the read end of the worker's answers is set, before any of the student's code runs, to have
  the kernel stop the worker at each write (``O_ASYNC``, with SIGSTOP as the signal and the
  worker as owner: :func:`grader.sandbox.inside.worker.watch`). The worker runs no thread and
  may send no SIGCONT (:func:`grader.sandbox.inside.seccomp.refuse_new_tasks`), so once stopped
  it stays so until this side lets it go on;
* each time the answers' pipe can be read, :class:`Watched` waits until the worker is stopped
  (read from its ``/proc/PID/stat``, through a descriptor kept open that names that very
  process), reads all it wrote, compares the arguments with the bytes kept here, then lets it go
  on (through a pidfd where the system has them, which no other process can inherit the number
  of). An argument counts as changed if it differed at any freeze from the moment the call was
  placed until its answer was read whole: the answer's ``mutated`` is this side's verdict, over
  whatever the worker said;
* what this side does at each freeze is the call's work: the session reads the clock of the
  thread that makes the calls with the worker's (``Sandboxed._trusted_usage``), so a file that
  answers in many small pieces pays for the looks it causes, and cannot make a call run past
  its wall-clock guard on this side's time.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import tempfile
import time

import numpy as np

try:
    import fcntl
except ImportError:  # Windows: no sandbox runs there
    fcntl = None

from .inside.worker import FREEZES, MAX_ARGUMENTS, MAX_HEADER, MAX_PAYLOAD, Channel, WireError

#: How long this side waits for the worker to be stopped after it wrote. It takes microseconds;
#: on a machine too busy to give the worker that, the call's own time limit decides first.
FREEZE_SECONDS = 30.0

#: Bytes asked for in one read of the answers' pipe.
CHUNK = 1 << 16


class Unwatched(WireError):
    """The worker wrote without the kernel stopping it: its answer cannot be trusted."""

    def __init__(self):
        super().__init__("it wrote to the grader in a way the grader cannot watch")


class Arena:
    """The memory a worker reads its calls' arrays from: a file in memory (``memfd``, sealed at
    its size; elsewhere an unlinked temporary file) of :data:`MAX_ARGUMENTS` bytes. Each call's
    arrays go after the last call's, from the start again once it is used up, so that arrays a
    student's code kept from one call to the next (a memo of its last input) keep what they held."""

    def __init__(self, size: int = MAX_ARGUMENTS):
        self.size = size
        if hasattr(os, "memfd_create"):
            self.fd = os.memfd_create("grader-arguments", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            os.ftruncate(self.fd, size)
            fcntl.fcntl(
                self.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
            )
        else:  # macOS: a file no one else can open (unlinked), read and written the same way
            with tempfile.TemporaryFile() as f:
                self.fd = os.dup(f.fileno())
            os.ftruncate(self.fd, size)
        self.base = 0  # where the next call's arrays go
        self.watched: dict[str, tuple[int, bytes]] = {}  # argument -> (where it is, its bytes)
        self.changed: set[str] = set()

    def place(self, image: np.ndarray, places: dict) -> int | None:
        """Write a call's arrays (``image``, laid out as ``places`` says) and watch them from now
        on: where they start, or None if they cannot fit."""
        size = image.nbytes
        if size > self.size:
            return None
        if self.base + size > self.size:
            self.base = 0  # used up: from its start again
        base, data = self.base, image.tobytes()
        self.base += size
        os.pwrite(self.fd, data, base)
        self.watched = {
            key: (base + offset, data[offset : offset + _nbytes(dtype, shape)])
            for key, (offset, dtype, shape) in places.items()
        }
        self.changed = set()
        return base

    def look(self) -> None:
        """Compare the watched arguments with their bytes as placed (the worker is frozen)."""
        for key, (offset, before) in self.watched.items():
            if key not in self.changed and os.pread(self.fd, len(before), offset) != before:
                self.changed.add(key)

    def verdict(self) -> tuple[str, ...]:
        """The arguments seen changed since they were placed (in their order); the watch ends."""
        mutated = tuple(key for key in self.watched if key in self.changed)
        self.watched, self.changed = {}, set()
        return mutated

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


def _nbytes(dtype: str, shape) -> int:
    count = np.dtype(dtype).itemsize
    for n in shape:
        count *= n
    return count


class Frozen:
    """Whether one process (``pid``, as this side numbers it) is stopped, and letting it go on.

    Its state is read from ``/proc/PID/stat`` through a descriptor opened now, which names that
    very process (once it is gone, the read fails, even if its number names another); it is let
    go on through a pidfd where the system has them. ``parent``: the process it must be a child
    of, checked once both are open (a number reused in between would name another process)."""

    def __init__(self, pid: int, parent: int | None = None):
        self.pid = pid
        self.stat: int | None = None
        self.pidfd: int | None = None
        try:
            self.stat = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
            if hasattr(os, "pidfd_open"):
                self.pidfd = os.pidfd_open(pid)
        except OSError:
            self.close()
            return
        fields = self._fields()
        if fields is None or (parent is not None and fields[1] != str(parent).encode()):
            self.close()

    @property
    def known(self) -> bool:
        return self.stat is not None

    def _fields(self) -> list[bytes] | None:
        """The stat fields after the command's name (state first), or None: gone."""
        if self.stat is None:
            return None
        try:
            data = os.pread(self.stat, 1024, 0)
            return data[data.rindex(b")") + 2 :].split()
        except (OSError, ValueError):
            return None

    def stopped(self) -> bool:
        """Wait until the process is stopped: True once it is, False if it is gone (or a zombie).
        Raises Unwatched if it is still running after :data:`FREEZE_SECONDS`."""
        deadline, spins = time.monotonic() + FREEZE_SECONDS, 0
        while True:
            fields = self._fields()
            if not fields or fields[0] in (b"Z", b"X", b"x"):
                return False
            if fields[0] in (b"T", b"t"):
                return True
            if time.monotonic() > deadline:
                raise Unwatched()
            # it wrote and is on its way to the stop (on this core, most often, by now)
            spins += 1
            if spins < 16:
                os.sched_yield()
            else:
                time.sleep(min(0.0001 * spins, 0.01))

    def resume(self) -> None:
        try:
            if self.pidfd is not None:
                signal.pidfd_send_signal(self.pidfd, signal.SIGCONT)
            else:
                os.kill(self.pid, signal.SIGCONT)
        except OSError:
            pass  # gone: its end is heard on its pipe

    def close(self) -> None:
        for fd in (self.stat, self.pidfd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.stat = self.pidfd = None


class Watched(Channel):
    """Frames to and from a worker whose writes stop it (see the module): each read of its
    answers waits for the stop, reads all there is, compares the arguments in ``arena``, then
    lets it go on. Until :attr:`frozen` is set (the worker found), or where the system cannot
    freeze a writer (not :data:`FREEZES`), the arguments are compared as soon as they are read."""

    def __init__(self, fd_in: int, fd_out: int, *, wait, arena: Arena):
        super().__init__(fd_in, fd_out, wait=wait)
        self.arena = arena
        self.frozen: Frozen | None = None

    def _fill(self) -> None:
        while True:
            self.wait(self.fd_in)
            if self._take():
                return

    def _take(self) -> bool:
        """Read what the worker wrote (it is frozen first), look at the arguments, let it go on:
        whether anything was read. Raises EOFError once the worker's end is closed and read."""
        frozen = self.frozen
        stopped = frozen is not None and FREEZES and frozen.stopped()
        data, closed = _drain(self.fd_in)
        self.arena.look()
        if stopped:
            frozen.resume()
        self.buffer += data
        if not data and closed:
            raise EOFError("the other side closed the channel")
        return bool(data)

    def spoke(self) -> bool:
        """Whether the worker has written something not asked for (read now, if so); its end
        (the pipe closed) is not: the next read says how it ended."""
        if not self.buffer and select.select([self.fd_in], [], [], 0)[0]:
            try:
                self._take()
            except EOFError:
                pass
            except WireError:  # it wrote and was not stopped: said, and not in turn
                return True
        return bool(self.buffer)


#: The most one look reads: a whole frame of the largest the wire accepts (the rest is the next
#: look's). It bounds a look where nothing stops the writer (:data:`FREEZES` false).
DRAIN_LIMIT = 4 + MAX_HEADER + MAX_PAYLOAD


def _drain(fd: int) -> tuple[bytes, bool]:
    """Everything that can be read from ``fd`` (non-blocking) now, and whether its writer is gone.

    Read until the pipe says it is empty: a short read does not say so, since a writer may have
    put its end in packet mode (``O_DIRECT``), where each read gives one packet (a red team's
    file left a packet behind that way, and the next look waited for a stop that never came)."""
    chunks, size = [], 0
    while size < DRAIN_LIMIT:
        try:
            chunk = os.read(fd, CHUNK)
        except BlockingIOError:
            break
        if not chunk:
            return b"".join(chunks), True
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), False
