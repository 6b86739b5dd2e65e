"""A keeper's watch over its worker: every call's arguments, seen as the worker answers.

Self-contained (standard library, numpy and :mod:`grader.sandbox.inside.worker`): it runs in the
sandbox's keeper. The keeper stands between the trusted side and the worker it
forked, and every frame passes through a :class:`Relay`:

* each call's arrays are laid out by the keeper in memory it shares with the
  worker (made before the worker was forked), and the keeper keeps their bytes;
* the keeper holds the read end of the worker's answers with ``O_ASYNC`` and
  ``F_SETSIG`` = SIGSTOP, with the worker as its owner: the kernel freezes the
  worker (one thread, see below) at every write. While it is frozen the keeper reads
  what it wrote and compares the arguments with its copy, then lets it go on: at once,
  or, when what it wrote was a question for the reference, once the answer has been
  written to it (it could only wait for it);
* an argument counts as changed if it differed from the keeper's copy at any
  freeze from the moment the call was placed until its answer was complete; the
  answer carries that verdict (``mutated``), set by the keeper over whatever the
  worker said. A file that begins its answer early, or answers in pieces, is
  seen at each piece;
* the worker speaks only in turn: the answer to "load" once, then, for each call,
  its requests for the reference's functions and one answer. A frame out of
  turn ends the worker.

So every call is watched the same way: no call of the student's can tell that it
is the one whose effect on its arguments counts. The worker may start no process
and no thread (:func:`grader.sandbox.inside.seccomp.refuse_new_tasks`): a process would share
the watched memory and could wake the worker while the keeper looks, and a
thread could put the arguments back between the write and the freeze.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import signal
import struct
import time
from dataclasses import dataclass

import numpy as np

try:
    from .worker import MAX_HEADER, MAX_PAYLOAD, WireError, decode_plain, encode
except ImportError:  # in the sandbox: the files side by side, no package
    from worker import MAX_HEADER, MAX_PAYLOAD, WireError, decode_plain, encode

#: How long the keeper waits for the worker to be frozen after it wrote. It takes microseconds;
#: on a machine too busy to give the worker that, the call's own time limit decides first.
FREEZE_SECONDS = 30.0

#: The longest the keeper waits for a SIGCHLD before it asks again whether the worker stopped.
WAIT_SLICE = 0.01


#: (what the worker may say now, what it said) -> what it may say next.
_IN_TURN = {
    ("load", "ready"): None,
    ("load", "load_failed"): None,
    ("call", "callback"): "call",
}


class Unwatched(Exception):
    """The worker wrote something without the kernel freezing it: its answer cannot be trusted."""


@dataclass
class Frame:
    """One frame as it came: its parsed header and its bytes."""

    header: dict
    raw: bytes

    def with_field(self, key: str, value) -> bytes:
        """The frame's bytes with ``key`` set in its header (a tuple of strings or a plain value).

        The field is written last in the header as it came, which is a JSON object (it was
        parsed as one): a reader keeps the last of repeated names (Python's ``json`` does, as
        its documentation says), so whatever the header said under ``key`` no longer counts."""
        (size,) = struct.unpack(">I", self.raw[:4])
        head = self.raw[4 : 4 + size].rstrip(b" \t\n\r")
        field = json.dumps({key: {"__tuple__": list(value)} if isinstance(value, tuple) else value})
        head = head[:-1] + b", " + field[1:].encode()
        return struct.pack(">I", len(head)) + head + self.raw[4 + size :]


class Frames:
    """Frames cut out of a byte stream as it arrives. Only headers are parsed: array bytes pass
    as they are."""

    def __init__(self):
        self.buffer = bytearray()
        self.head: tuple[dict, int] | None = None  # the header and whole length of the frame at the head

    def feed(self, data: bytes) -> list[Frame]:
        """The frames completed by ``data``. Raises WireError for a stream that breaks the format."""
        done = []
        if not self.buffer and self.head is None:  # most often: the data is one whole frame
            self.head = _head(data)
            if self.head is not None and self.head[1] == len(data):
                header, self.head = self.head[0], None
                return [Frame(header, bytes(data))]
        self.buffer += data
        while True:
            if self.head is None:
                self.head = _head(self.buffer)
                if self.head is None:
                    return done
            header, size = self.head
            if len(self.buffer) < size:
                return done
            done.append(Frame(header, bytes(self.buffer[:size])))
            del self.buffer[:size]
            self.head = None


def _head(buffer: bytes | bytearray) -> tuple[dict, int] | None:
    """The header of the frame at the start of ``buffer`` and the frame's whole length, once the
    header is all there."""
    if len(buffer) < 4:
        return None
    (size,) = struct.unpack(">I", buffer[:4])
    if size > MAX_HEADER:
        raise WireError(f"a message header of {size} bytes")
    if len(buffer) < 4 + size:
        return None
    try:
        header = json.loads(buffer[4 : 4 + size].decode())
        if not isinstance(header, dict) or not isinstance(header.get("payloads"), list):
            raise TypeError
        sizes = [int(n) for n in header["payloads"]]
        if sizes and min(sizes) < 0:
            raise ValueError
    except (ValueError, KeyError, TypeError, RecursionError, OverflowError):
        raise WireError("malformed message") from None
    total = sum(sizes)
    if total > MAX_PAYLOAD:
        raise WireError(f"an array of {total:,} bytes (at most {MAX_PAYLOAD:,} are accepted)")
    return header, 4 + size + total


#: Whether this system can freeze a writer at its write (Linux: F_SETSIG). Elsewhere (macOS, at
#: the process level) the keeper compares the arguments as soon as it has read the answer, so a
#: file that puts an argument back right after answering may go unseen (the README says so).
FREEZES = hasattr(fcntl, "F_SETSIG") and hasattr(signal, "sigtimedwait")


def watch(fd: int, pid: int) -> None:
    """Have the kernel stop process ``pid`` each time it writes to the pipe read by ``fd``
    (where it :data:`FREEZES`; the pipe is made non-blocking in any case)."""
    flags = fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK
    if FREEZES:
        fcntl.fcntl(fd, fcntl.F_SETOWN, pid)
        fcntl.fcntl(fd, fcntl.F_SETSIG, signal.SIGSTOP)
        flags |= os.O_ASYNC
    fcntl.fcntl(fd, fcntl.F_SETFL, flags)


class Relay:
    """Between the trusted side (``trusted_in``/``trusted_out``) and a worker (``pid``, written
    to on ``worker_in``, read on ``worker_out``, which :func:`watch` watches).

    The keeper calls :meth:`readable` for the descriptors to wait on and :meth:`ready` for each
    one that can be read; :attr:`ended` is the worker's wait status once it is gone (the keeper
    must not wait for that process itself: the relay does). Frames pass as they are, but for a
    call (its arrays go to shared memory) and an answer (it gets the keeper's verdict).
    """

    def __init__(self, trusted_in: int, trusted_out: int, worker_in: int, worker_out: int, pid: int, arena):
        self.trusted_in, self.trusted_out = trusted_in, trusted_out
        self.worker_in, self.worker_out, self.pid, self.arena = worker_in, worker_out, pid, arena
        os.set_blocking(trusted_in, False)
        os.set_blocking(worker_in, False)  # see _down
        self.requests, self.answers = Frames(), Frames()
        self.watched: dict = {}  # argument name -> (where it is in the arena, its bytes as placed)
        # where the next call's arrays go: after the last call's, so that arrays a student's code
        # kept from one call to the next (a memo of its last input) still hold what they held
        # (once they were overwritten by the next call, and a file graded otherwise than checked)
        self.base = 0
        self.changed: set[str] = set()  # the call's arguments seen changed at some freeze so far
        self.turn: str | None = None  # what the worker may say now: "load", "call" or nothing
        self.held = False  # the worker is kept frozen until the answer to its question goes down
        self.ended: int | None = None
        self.open_in, self.open_out = True, True  # the trusted side's requests, the worker's answers

    def readable(self) -> list[int]:
        """The descriptors to wait on, the worker's answers first."""
        return [
            fd
            for fd, is_open in ((self.worker_out, self.open_out), (self.trusted_in, self.open_in))
            if is_open
        ]

    def ready(self, fd: int) -> None:
        if fd == self.worker_out:
            self._from_worker()
        else:
            self._from_trusted()

    def close(self) -> None:
        self._close_down()
        self._close_up()

    # -- down: the trusted side's requests

    def _from_trusted(self) -> None:
        data, closed = _drain(self.trusted_in)
        try:
            for frame in self.requests.feed(data):
                kind = frame.header.get("type")
                if kind == "call":
                    self._call(frame)
                    continue
                if kind == "load":
                    self.turn = "load"
                self._down(frame.raw)
        except WireError:  # not from the grader: nothing more goes down
            closed = True
        if closed:  # the trusted side is done: so is the worker
            self._close_down()

    def _close_down(self) -> None:
        if self.open_in:
            self.open_in = False
            os.close(self.trusted_in)
            os.close(self.worker_in)
            self._release()  # it hears the end

    def _down(self, data: bytes) -> None:
        """Write ``data`` to the worker, then let it go on if it was held (see :meth:`_relay_up`):
        it finds what it waits for without sleeping on it. Should the pipe have no room for all
        of it, the worker is let go on first, to make room."""
        view = memoryview(data)
        try:
            while view:
                try:
                    view = view[os.write(self.worker_in, view) :]
                except BlockingIOError:
                    self._release()
                    select.select([], [self.worker_in], [])
        except OSError:
            pass  # a reader that is gone: its end says why
        self._release()

    def _release(self) -> None:
        """Let a worker held frozen since its question go on."""
        if self.held:
            self.held = False
            _continue(self.pid)

    def _call(self, frame: Frame) -> None:
        """Send a call down with its arrays' memory (the frame's one payload, laid out by the
        trusted side) copied into the shared arena: only where they are goes down."""
        if self.open_out and select.select([self.worker_out], [], [], 0)[0]:
            self._from_worker()  # what it wrote before this call was asked belongs to no call
        header = frame.header
        (size,) = header["payloads"]
        if size > len(self.arena):
            outcome = {"type": "outcome", "ok": False, "kind": "raised", "message": "arguments too large"}
            _write(self.trusted_out, encode(outcome))
            return
        image = frame.raw[len(frame.raw) - size :]
        if self.base + size > len(self.arena):
            self.base = 0  # the arena is used up: from its start again
        base = self.base
        self.base += size
        self.arena[base : base + size] = image
        places = decode_plain(header["places"])
        self.watched = {
            key: (base + offset, image[offset : offset + _nbytes(dtype, shape)])
            for key, (offset, dtype, shape) in places.items()
        }
        self.changed, self.turn = set(), "call"
        down = {k: v for k, v in header.items() if k != "memory"}
        down["payloads"], down["base"] = [], base
        head = json.dumps(down, allow_nan=True).encode()
        self._down(struct.pack(">I", len(head)) + head)

    # -- up: the worker's answers

    def _from_worker(self) -> None:
        try:
            frozen = self._frozen()
        except Unwatched:
            self._refuse("it wrote to the grader in a way the grader cannot watch")
            return
        data, closed = _drain(self.worker_out)
        if data and self.turn is None and not self.answers.buffer:
            self._refuse("it wrote to the grader out of turn")  # nothing was asked of it
            return
        self.changed.update(
            key
            for key, (offset, before) in self.watched.items()
            if self.arena[offset : offset + len(before)] != before
        )
        try:
            asked = self._relay_up(data)
        finally:  # the worker goes on once what it wrote is on its way up (unless it was refused)
            if frozen and self.open_out:
                if asked and self.open_in and not self.answers.buffer:
                    self.held = True
                else:
                    _continue(self.pid)
        if closed:
            self._close_up()

    def _relay_up(self, data: bytes) -> bool:
        """Send up the frames ``data`` completes, each in turn (or refuse the worker): whether
        the last was a question for the reference, which the worker can only wait for the
        answer to. Then it waits frozen, as it was when the question was read: it would
        otherwise run only to go back to waiting, at the price of a wake-up each way, and
        nothing it could write before the answer is in turn any sooner."""
        try:
            frames = self.answers.feed(data)
        except WireError as err:
            self._refuse(str(err))
            return False
        asked = False
        for frame in frames:
            kind = frame.header.get("type")
            kind = kind if isinstance(kind, str) else ""
            if self.turn == "call" and kind == "outcome":  # the keeper's word, over the worker's
                mutated = tuple(key for key in self.watched if key in self.changed)
                _write(self.trusted_out, frame.with_field("mutated", mutated))
                self.watched, self.changed, self.turn = {}, set(), None
            elif (self.turn, kind) in _IN_TURN:
                _write(self.trusted_out, frame.raw)
                self.turn = _IN_TURN[self.turn, kind]
            else:
                self._refuse("it wrote to the grader out of turn")
                return False
            asked = kind == "callback"
        return asked

    def _frozen(self) -> bool:
        """Wait until the write that woke the keeper has frozen the worker: True once it is
        stopped, False if it is gone. Raises Unwatched if it wrote and runs on."""
        if self.ended is not None or not FREEZES:
            return False
        deadline = time.monotonic() + FREEZE_SECONDS
        while True:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG | os.WUNTRACED)
            except ChildProcessError:
                return False
            if pid:
                if os.WIFSTOPPED(status):
                    return True
                self.ended = status
                return False
            left = deadline - time.monotonic()
            if left <= 0:
                raise Unwatched()
            # The keeper keeps SIGCHLD blocked and has one thread. In a process with others (the
            # tests run the relay under pytest-xdist's), one of them may take the signal of a
            # stop that came between waitpid and here: so the wait is cut into slices.
            signal.sigtimedwait([signal.SIGCHLD], min(left, WAIT_SLICE))

    def _refuse(self, why: str) -> None:
        """The worker broke the format or the watch: the trusted side hears why, then the end."""
        if self.open_out:
            _write(self.trusted_out, encode({"type": "unreadable", "message": why}))
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        self._close_up()

    def _close_up(self) -> None:
        if self.open_out:
            self.open_out = False
            os.close(self.worker_out)
            os.close(self.trusted_out)
        self.watched = {}


def _continue(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGCONT)
    except OSError:
        pass  # gone: its end is heard on its pipe


def _nbytes(dtype: str, shape) -> int:
    count = np.dtype(dtype).itemsize
    for n in shape:
        count *= n
    return count


#: Bytes the keeper asks for in one read of a pipe.
CHUNK = 1 << 16


def _drain(fd: int) -> tuple[bytes, bool]:
    """Everything that can be read from ``fd`` (a non-blocking pipe) now, and whether its writer
    is gone.

    A read of a pipe that gives less than was asked for has emptied it: no second read is made
    to hear so (EAGAIN). A writer that closes right after is heard at the next wake-up, since a
    pipe whose writers are gone is readable. (The worker's pipe cannot fill again meanwhile: it
    is read while the worker is frozen.)"""
    chunks = []
    while True:
        try:
            chunk = os.read(fd, CHUNK)
        except BlockingIOError:
            return b"".join(chunks), False
        if not chunk:
            return b"".join(chunks), True
        chunks.append(chunk)
        if len(chunk) < CHUNK:
            return b"".join(chunks), False


def _write(fd: int, data: bytes) -> None:
    """All of ``data`` to ``fd``; a reader that is gone is not an error here (its end says why)."""
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view) :]
    except OSError:
        pass
