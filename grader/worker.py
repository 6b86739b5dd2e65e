"""Run a student's file and call its functions: in the grader's process, or as a worker.

This module is self-contained on purpose (standard library and numpy only):
for sandboxed grading it is copied alone into the sandbox and run as a script,
where it can see neither the repository nor the rest of the grader. The
trusted side imports the same module, so the wire format, the loading rules
and the messages exist once.

The wire format cannot execute code: a frame is a 4-byte length, a JSON
header, then raw array bytes whose dtype and shape the header declares.

Run as a script, it becomes a sandbox's *warden* (see :class:`Warden`): a
pristine process that forks one worker per submission and one child per
audited call, and ends every process of the student's between them.
"""

from __future__ import annotations

import inspect
import io
import json
import mmap
import os
import select
import shutil
import signal
import socket
import struct
import sys
import time
import tokenize
import traceback

import numpy as np

try:  # POSIX only; elsewhere there is no sandbox, only checks in the checker's own process
    import fcntl
    import resource
except ImportError:
    fcntl = resource = None

#: Longest exception message quoted back to the student.
MAX_MESSAGE = 300
#: Student output kept per worker (the rest is dropped).
MAX_OUTPUT = 64 * 1024
#: Largest JSON header accepted in a frame.
MAX_HEADER = 1 << 20
#: Largest total of array bytes accepted in a frame (the checks use a few KiB).
MAX_PAYLOAD = 64 << 20
#: The only dtypes that may cross the boundary.
ALLOWED_KINDS = "biuf"
MAX_DIMS = 32


class WireError(Exception):
    """A frame that breaks the format or its limits."""


class Raised(Exception):
    """An error to re-raise inside student code (the reference refused a helper call)."""


# ----------------------------------------------------------------------------- wire format


def _encode(value, payloads: list[bytes]):
    if isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value)
        payloads.append(data.tobytes())
        return {"__array__": len(payloads) - 1, "dtype": data.dtype.str, "shape": list(data.shape)}
    if isinstance(value, (tuple, list)):
        return {"__tuple__": [_encode(v, payloads) for v in value]}
    if isinstance(value, dict):
        return {"__dict__": {str(k): _encode(v, payloads) for k, v in value.items()}}
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    return value


def encode(message: dict) -> bytes:
    """One frame: length, JSON header, array bytes."""
    payloads: list[bytes] = []
    body = {k: _encode(v, payloads) for k, v in message.items()}
    body["payloads"] = [len(p) for p in payloads]
    header = json.dumps(body, allow_nan=True).encode()
    return struct.pack(">I", len(header)) + header + b"".join(payloads)


_DTYPES: dict[str, np.dtype] = {}


def _dtype(name) -> np.dtype:
    if name not in _DTYPES:
        if len(_DTYPES) > 64:
            raise WireError("too many different dtypes")
        _DTYPES[name] = np.dtype(name)
    return _DTYPES[name]


def _array(desc: dict, payloads: list[bytes]) -> np.ndarray:
    try:
        dtype = _dtype(desc["dtype"])
        shape = tuple(int(n) for n in desc["shape"])
        data = payloads[int(desc["__array__"])]
    except (KeyError, TypeError, ValueError, IndexError) as err:
        raise WireError(f"bad array description: {err}") from None
    if dtype.kind not in ALLOWED_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise WireError(f"arrays of dtype {dtype} are not accepted")
    if len(shape) > MAX_DIMS or any(n < 0 for n in shape):
        raise WireError(f"bad shape {shape}")
    count = 1
    for n in shape:
        count *= n
    if count * dtype.itemsize != len(data):
        raise WireError("array bytes do not match its shape")
    return np.frombuffer(data, dtype=dtype).reshape(shape).copy()


def _decode(value, payloads: list[bytes]):
    if isinstance(value, dict):
        if "__array__" in value:
            return _array(value, payloads)
        if "__tuple__" in value:
            return tuple(_decode(v, payloads) for v in value["__tuple__"])
        if "__dict__" in value:
            return {k: _decode(v, payloads) for k, v in value["__dict__"].items()}
        raise WireError("unknown object in a frame")
    if isinstance(value, list):
        raise WireError("bare lists are not part of the format")
    return value


def _read_exactly(read, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = read(left)
        if not chunk:
            raise EOFError("the other side closed the channel")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_frame(read, *, max_payload: int = MAX_PAYLOAD) -> dict:
    """Read and decode one frame with ``read(n) -> bytes``; limits are checked before reading.

    Anything malformed raises WireError, never another exception.
    """
    (size,) = struct.unpack(">I", _read_exactly(read, 4))
    if size > MAX_HEADER:
        raise WireError(f"a message header of {size} bytes")
    try:
        header = json.loads(_read_exactly(read, size))
        if not isinstance(header, dict) or not isinstance(header.get("payloads"), list):
            raise WireError("malformed message")
        sizes = [int(n) for n in header.pop("payloads")]
        if any(n < 0 for n in sizes):
            raise WireError("malformed message")
        if sum(sizes) > max_payload:
            raise WireError(f"an array of {sum(sizes):,} bytes (at most {max_payload:,} are accepted)")
        payloads = [_read_exactly(read, n) for n in sizes]
        return {k: _decode(v, payloads) for k, v in header.items()}
    except (WireError, EOFError):
        raise
    except (
        ValueError,
        KeyError,
        TypeError,
        AttributeError,
        IndexError,
        RecursionError,
        OverflowError,
    ) as err:
        raise WireError(f"unreadable message ({type(err).__name__})") from None


class Channel:
    """Frames over a pair of file descriptors, read through a buffer (a system call per frame)."""

    def __init__(self, fd_in: int, fd_out: int, wait=None):
        self.fd_in, self.fd_out = fd_in, fd_out
        self.wait = wait  # blocks until fd_in is readable; may raise to give up
        self.buffer = bytearray()
        os.set_blocking(fd_in, wait is None)  # with a hook, reads never block past it

    def _fill(self) -> None:
        while True:
            if self.wait is not None:
                self.wait(self.fd_in)
            try:
                chunk = os.read(self.fd_in, 1 << 16)
                break
            except BlockingIOError:
                if self.wait is None:
                    select.select([self.fd_in], [], [])
        if not chunk:
            raise EOFError("the other side closed the channel")
        self.buffer += chunk

    def _read(self, n: int) -> bytes:
        while len(self.buffer) < n:
            self._fill()
        data = bytes(self.buffer[:n])
        del self.buffer[:n]
        return data

    def receive(self, *, max_payload: int = MAX_PAYLOAD) -> dict:
        return read_frame(self._read, max_payload=max_payload)

    def send(self, message: dict, *, wait_writable=None) -> None:
        """Write one frame; with ``wait_writable(fd)`` the descriptor is non-blocking and
        the hook may give up when the reader never reads."""
        view = memoryview(encode(message))
        while view:
            try:
                view = view[os.write(self.fd_out, view) :]
            except BlockingIOError:
                if wait_writable is not None:
                    wait_writable(self.fd_out)
                else:
                    select.select([], [self.fd_out], [])


# ----------------------------------------------------------------------------- student files


class LoadProblem(Exception):
    """The file as a whole cannot be used; the message says why, for a student."""


def compile_source(raw: bytes, filename: str):
    """(text, code) of a submission, or LoadProblem saying what is wrong."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        text = raw.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError) as err:
        line = raw[: getattr(err, "start", 0)].count(b"\n") + 1
        raise LoadProblem(
            f"Your file is not readable as Python text: it holds bytes that are not UTF-8 "
            f"(near line {line}). Save it again as UTF-8 in your editor."
        ) from None
    try:
        code = compile(text, filename, "exec", dont_inherit=True)
    except SyntaxError as err:
        where = f"line {err.lineno}" if err.lineno else "somewhere"
        shown = f": `{err.text.strip()}`" if err.text and err.text.strip() else ""
        raise LoadProblem(
            f"Python cannot read your file: {err.msg} at {where}{shown}. "
            "Nothing in it can be graded until this is fixed."
        ) from None
    except ValueError as err:  # source holding NUL bytes
        raise LoadProblem(f"Python cannot read your file: {err}.") from None
    return text, code


#: What a worker may allocate, for messages (the trusted side sets it).
MEMORY_LIMIT = [0]


def _compiled(raw: bytes, filename: str):
    """compile_source's result, or the LoadProblem it raised."""
    try:
        return compile_source(raw, filename)
    except LoadProblem as err:
        return err


def describe_exception(err: BaseException, text: str, filename: str) -> str:
    """'raised IndexError at line 12: `...` (tuple index out of range)'."""
    if isinstance(err, MemoryError):
        if MEMORY_LIMIT[0]:
            return f"used more than {MEMORY_LIMIT[0] / 2**30:g} GiB of memory (MemoryError)"
        return "ran out of memory (MemoryError)"
    message = str(err)
    if len(message) > MAX_MESSAGE:
        message = message[:MAX_MESSAGE] + "..."
    found = None
    for frame, lineno in traceback.walk_tb(err.__traceback__):
        if frame.f_code.co_filename == filename:
            found = lineno
    where = ""
    if found is not None:
        lines = text.splitlines()
        code = lines[found - 1].strip() if 0 < found <= len(lines) else ""
        where = f" at line {found}" + (f": `{code}`" if code else "")
    return f"raised {type(err).__name__}{where}" + (f" ({message})" if message else "")


def describe_signature(fn) -> list | str:
    """[[name, kind, default repr], ...] of a function, or why there is none."""
    if not callable(fn):
        return f"a {type(fn).__name__}, not a function"
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return "something without a signature"
    return [
        [p.name, p.kind.name, None if p.default is inspect.Parameter.empty else repr(p.default)]
        for p in params
    ]


def signature_text(name: str, described: list) -> str:
    parts = [n if default is None else f"{n}={default}" for n, _, default in described]
    return f"{name}({', '.join(parts)})"


class Program:
    """A student's compiled file, with one fresh namespace per exercise.

    In the namespace of exercise E, every *other* graded function is replaced
    by ``helper(name)``: the reference itself in the grader's process, a
    stand-in that asks the trusted side to run the reference in a worker.
    With no helper, the student's own functions stay.
    """

    def __init__(self, raw: bytes, filename: str, exercises, helper, *, passthrough=(), compiled=None):
        """``compiled``: what :func:`compile_source` gave for ``raw`` (or raised), if known."""
        self.filename = filename
        self.exercises = tuple(exercises)
        self.helper = helper
        self.passthrough = (KeyboardInterrupt, *passthrough)
        if compiled is None:
            compiled = _compiled(raw, filename)
        if isinstance(compiled, LoadProblem):
            raise compiled
        self.text, self.code = compiled
        self.namespaces: dict[str, dict] = {}

    def execute(self) -> dict:
        """Run the file as a fresh module and return its namespace."""
        namespace = {"__name__": "attention", "__file__": self.filename, "__builtins__": __builtins__}
        try:
            exec(self.code, namespace)
        except self.passthrough:
            raise
        except SystemExit:
            raise LoadProblem(
                "Your file exits the interpreter while it is loading (sys.exit or exit())."
            ) from None
        except BaseException as err:  # noqa: BLE001 - any failure of student code is reported
            raise LoadProblem(
                f"Your file {describe_exception(err, self.text, self.filename)} while it was loading, "
                "so none of its functions could be tried."
            ) from None
        return namespace

    def signatures(self) -> dict:
        """What the file defines under each exercise's name (absent names are left out)."""
        namespace = self.execute()
        return {n: describe_signature(namespace[n]) for n in self.exercises if n in namespace}

    def namespace(self, exercise: str, replace=None) -> dict:
        """The module as ``exercise`` sees it: the graded functions named in ``replace``
        (default: all the others) stand in for the student's own."""
        if self.helper is None:
            replace = ()
        elif replace is None:
            replace = [other for other in self.exercises if other != exercise]
        key = (exercise, frozenset(n for n in replace if n != exercise))
        if key not in self.namespaces:
            namespace = self.execute()
            for other in key[1]:
                namespace[other] = self.helper(other)
            self.namespaces[key] = namespace
        return self.namespaces[key]

    def call(self, exercise: str, name: str, kwargs: dict, *, copy: bool = True, replace=None) -> dict:
        """Call ``name`` as ``exercise`` sees it; an outcome dict, never an exception of the student's.

        With ``copy`` the student gets copies of the arrays; an auditor passes its
        shared ones instead, to see what the call does to them. ``replace`` as for
        :meth:`namespace`.
        """
        namespace = self.namespace(exercise, replace)
        if name not in namespace:
            return {"ok": False, "kind": "missing", "message": f"`{name}` is not defined in your file."}
        given = {k: (v.copy() if copy and isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
        try:
            value = namespace[name](**given)
        except self.passthrough:
            raise
        except NotImplementedError:
            message = f"`{name}` is not written yet (it raises NotImplementedError)."
            return {"ok": False, "kind": "not_implemented", "message": message}
        except SystemExit:
            return {
                "ok": False,
                "kind": "raised",
                "message": f"`{name}` exited the interpreter (sys.exit or exit()).",
            }
        except BaseException as err:  # noqa: BLE001 - any failure of student code is reported
            return {
                "ok": False,
                "kind": "raised",
                "message": f"`{name}` {describe_exception(err, self.text, self.filename)}.",
                "raised": [c.__name__ for c in type(err).__mro__],
            }
        problem = check_value(name, value)
        if problem:
            return {"ok": False, "kind": "return", "message": problem}
        return {"ok": True, "value": value}


def check_value(name: str, value) -> str:
    """Why ``value`` may not be returned ('' if it may): plain numeric arrays or tuples of them."""
    if type(value) is tuple:
        return next((p for p in (check_value(name, v) for v in value) if p), "")
    if type(value) is not np.ndarray:
        kind = (type(value).__module__ + "." + type(value).__qualname__).removeprefix("builtins.")
        return f"`{name}` returned a {kind}; it must return a plain numpy array (np.ndarray)."
    if value.dtype.kind not in ALLOWED_KINDS or value.dtype.fields is not None:
        return f"`{name}` returned an array of dtype {value.dtype}; it must hold numbers."
    return ""


# ----------------------------------------------------------------------------- the worker


class _Output:
    """Stands in for sys.stdout and sys.stderr: counts what the student prints, keeps nothing."""

    def __init__(self):
        self.kept = 0

    def write(self, text):
        self.kept += len(text)
        return len(text)

    def flush(self):
        pass


def serve(channel: Channel, raw: bytes, filename: str, compiled=None) -> None:
    """Answer the trusted side's calls on ``channel`` until it closes it."""

    def helper(name):
        def stand_in(*args, **kwargs):
            channel.send({"type": "callback", "name": name, "args": list(args), "kwargs": kwargs})
            reply = channel.receive()
            if reply.get("type") == "return":
                return reply["value"]
            raise {"ValueError": ValueError, "TypeError": TypeError}.get(reply.get("exc"), RuntimeError)(
                reply.get("message", "")
            )

        stand_in.__name__ = name
        return stand_in

    request = channel.receive()  # {"type": "load", "exercises": [...], "substitute": bool}
    try:
        helping = helper if request.get("substitute") else None
        program = Program(raw, filename, request["exercises"], helping, compiled=compiled)
        channel.send({"type": "ready", "signatures": program.signatures()})
    except LoadProblem as err:
        channel.send({"type": "load_failed", "problem": str(err)})
        return
    while True:
        try:
            request = channel.receive()
        except EOFError:
            return
        replace = request.get("replace")
        if replace is not None and not (
            isinstance(replace, tuple) and all(isinstance(n, str) for n in replace)
        ):
            replace = None
        outcome = program.call(request["exercise"], request["name"], request["kwargs"], replace=replace)
        channel.send({"type": "outcome", **outcome})


# ----------------------------------------------------------------------------- the warden

#: Bytes of memory shared with an audited call for its array arguments.
ARENA = 16 << 20
#: Seconds the warden waits for the processes it killed to be gone.
REAP_SECONDS = 5.0


class _Expired(Exception):
    """A child did not answer in time."""


def _until(deadline: float):
    """A Channel ``wait`` hook that gives up at ``deadline`` (time.monotonic)."""

    def wait(fd: int) -> None:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise _Expired()

    return wait


class _Control(Channel):
    """The warden's end of its socket: frames, plus the descriptors that came with them."""

    def __init__(self, sock: socket.socket):
        super().__init__(sock.fileno(), sock.fileno())
        self.sock = sock
        self.fds: list[int] = []

    def _fill(self) -> None:
        while True:
            try:
                data, fds, _, _ = socket.recv_fds(self.sock, 1 << 16, 8)
                break
            except BlockingIOError:
                select.select([self.fd_in], [], [])
        self.fds.extend(fds)
        if not data:
            raise EOFError("the trusted side closed the channel")
        self.buffer += data


class Warden:
    """A sandbox's first process: it starts the student's processes and ends them all.

    It never runs student code. It loads numpy once; each worker and each
    audited call is a child forked from it, so every submission starts from
    the same untouched interpreter, for the cost of a fork. It talks only to
    the trusted side, over a socket no child keeps, and it cannot be traced or
    read by its children (it is not dumpable).

    ``scope`` says how to end the student's processes: ``namespace`` (the warden
    is alone in a PID namespace with them: one ``kill(-1)`` ends every one,
    atomically, however they forked) or ``process`` (no namespace: each child
    leads a session of its own, and orphans come back to the warden, which
    kills them as they arrive).
    """

    def __init__(self, sock_fd: int, scope: str, workdir: str):
        self.channel = _Control(socket.socket(fileno=sock_fd))
        self.scope = scope
        self.workdir = workdir
        self.raw, self.filename, self.exercises = b"", os.path.join(workdir, "attention.py"), ()
        self.compiled = None
        self.worker: int | None = None
        self.children: set[int] = set()

    def run(self) -> None:
        handlers = {
            "begin": self.begin,
            "spawn": self.spawn,
            "audit": self.audit,
            "reset": self.reset,
            "status": self.status,
        }
        while True:
            try:
                request = self.channel.receive()
            except (EOFError, WireError):
                self.end_all()
                return
            handler = handlers.get(request.get("type"))
            reply = handler(request) if handler else {"type": "error", "message": "unknown request"}
            self.channel.send(reply)

    # -- requests

    def begin(self, request: dict) -> dict:
        """A new submission: nothing of the last one is left, then keep its source."""
        self.end_all()
        self.wipe()
        self.raw = request["source"].tobytes()
        self.compiled = _compiled(self.raw, self.filename)  # compiling runs nothing of the file
        self.exercises = tuple(request["exercises"])
        MEMORY_LIMIT[0] = int(request.get("memory", 0))
        try:
            with open(self.filename, "wb") as f:  # its own __file__ exists, as at home
                f.write(self.raw)
        except OSError:
            pass
        return {"type": "begun"}

    def spawn(self, request: dict) -> dict:
        """Fork a worker that serves the trusted side on the two descriptors just received."""
        fds, self.channel.fds = self.channel.fds[:2], self.channel.fds[2:]
        if len(fds) != 2:
            for fd in fds:
                os.close(fd)
            return {"type": "spawned", "problem": "no channel for the worker"}
        try:
            pid = os.fork()
        except OSError as err:
            for fd in fds:
                os.close(fd)
            return {"type": "spawned", "problem": f"could not start a process ({err.strerror})"}
        if pid == 0:
            try:
                self._become_child(fds)
                sys.argv = ["worker", str(fds[0]), str(fds[1]), self.filename]
                serve(Channel(fds[0], fds[1]), self.raw, self.filename, self.compiled)
            finally:
                os._exit(0)
        for fd in fds:
            os.close(fd)
        self.worker = pid
        self.children.add(pid)
        return {"type": "spawned"}

    def status(self, request: dict) -> dict:
        """How the worker ended (its exit code, negative for a signal), waiting a little for it."""
        pid, deadline = self.worker, time.monotonic() + float(request.get("wait", 2.0))
        while pid is not None:
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                break
            if done:
                self.worker = None
                self.children.discard(pid)
                return {"type": "status", "code": os.waitstatus_to_exitcode(status)}
            if time.monotonic() > deadline:
                return {"type": "status", "alive": True}
            time.sleep(0.01)
        return {"type": "status", "code": None}

    def reset(self, request: dict) -> dict:
        self.end_all()
        if request.get("wipe", True):
            self.wipe()
        return {"type": "clean"}

    def audit(self, request: dict) -> dict:
        """One call whose effect on its arguments is known for sure.

        A fresh child loads the file and runs the call on arguments placed in
        memory that only it and the warden share (created after every other
        process of the student's was ended). Once the call is over, every
        process of the student's is ended again, so nothing can put the
        arguments back before the warden compares them with its snapshot.
        """
        self.end_all()
        arena = mmap.mmap(-1, ARENA)
        try:
            outcome, snapshots = self._audited(request, arena)
        finally:
            self.end_all()
        outcome["mutated"] = [
            key for key, (start, before) in snapshots.items() if arena[start : start + len(before)] != before
        ]
        arena.close()
        return {"type": "outcome", **outcome}

    def _audited(self, request: dict, arena) -> tuple[dict, dict]:
        name = request["name"]
        arrays, scalars, snapshots, offset = {}, {}, {}, 0
        for key, value in request["kwargs"].items():
            if isinstance(value, np.ndarray):
                if offset + value.nbytes > ARENA:
                    return {"ok": False, "kind": "raised", "message": "arguments too large to audit"}, {}
                view = np.frombuffer(arena, dtype=value.dtype, count=value.size, offset=offset)
                view.reshape(value.shape)[...] = value
                arrays[key] = [offset, value.dtype.str, list(value.shape)]
                snapshots[key] = (offset, value.tobytes())
                offset += value.nbytes
            else:
                scalars[key] = value
        down_r, down_w = os.pipe()
        up_r, up_w = os.pipe()
        answer_r, answer_w = os.pipe()  # the call's outcome, and nothing else, comes this way
        try:
            pid = os.fork()
        except OSError as err:
            for fd in (down_r, down_w, up_r, up_w, answer_r, answer_w):
                os.close(fd)
            message = f"`{name}` could not be started ({err.strerror})."
            return {"ok": False, "kind": "raised", "message": message}, {}
        if pid == 0:
            try:
                self._become_child([down_r, up_w, answer_w])
                _audit_child(self, arena, Channel(down_r, up_w), answer_w)
            finally:
                os._exit(0)
        self.children.add(pid)
        for fd in (down_r, up_w, answer_w):
            os.close(fd)
        phase = "load"
        try:
            link = Channel(up_r, down_w, wait=_until(time.monotonic() + float(request["load_seconds"])))
            answer = Channel(answer_r, down_w)
            _kill_on_answer(answer_r, pid)
            link.send({"type": "load"})  # the child loads the file only once its answer is watched
            loaded = link.receive()
            if loaded.get("problem"):
                return {"ok": False, "kind": "raised", "message": str(loaded["problem"])}, {}
            phase = "call"
            answer.wait = _until(time.monotonic() + float(request["call_seconds"]))
            go = {"type": "go", "exercise": request["exercise"], "name": name}
            link.send({**go, "scalars": scalars, "arrays": arrays})
            outcome = answer.receive()
            if not isinstance(outcome, dict):
                raise WireError("not an outcome")
        except _Expired:
            return {"ok": False, "kind": "timeout", "phase": phase, "message": ""}, {}
        except (EOFError, WireError, OSError):
            outcome = {"ok": False, "kind": "raised", "message": f"`{name}` stopped before it answered."}
        finally:
            for fd in (up_r, down_w, answer_r):
                os.close(fd)
        return outcome, snapshots

    # -- the student's processes

    def _become_child(self, keep: list[int]) -> None:
        """In a fresh child: a session of its own, and no descriptor but ``keep``."""
        os.setsid()
        self.channel.sock.close()
        low = 3
        for fd in sorted(keep):
            os.closerange(low, fd)
            low = fd + 1
        os.closerange(low, 1 << 16)

    def end_all(self) -> None:
        """SIGKILL every process of the student's and wait until they are gone."""
        if self.scope == "namespace":
            try:
                os.kill(-1, signal.SIGKILL)  # all but this process, in one step the forks cannot race
            except OSError:
                pass
        for pid in list(self.children):
            for kill in (os.killpg, os.kill):
                try:
                    kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        deadline = time.monotonic() + REAP_SECONDS
        # in a namespace every process was just killed: waiting for each one cannot hang
        flags = 0 if self.scope == "namespace" else os.WNOHANG
        while True:
            try:
                pid, _ = os.waitpid(-1, flags)
            except ChildProcessError:
                break  # none left
            if pid:
                self.children.discard(pid)
                continue
            if time.monotonic() > deadline:
                break
            for orphan in _children_of(os.getpid()):  # came back to this subreaper
                try:
                    os.kill(orphan, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.001)
        self.children.clear()
        self.worker = None

    def wipe(self) -> None:
        """Empty the work folder (and, in a namespace, /tmp) of anything the student left."""
        folders = [self.workdir] + (["/tmp"] if self.scope == "namespace" else [])
        for folder in folders:
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                if folder == self.workdir and entry.name == "worker.py":
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False):
                        _remove_tree(entry.path)
                    else:
                        os.unlink(entry.path)
                except OSError:
                    pass


def _remove_tree(top: str) -> None:
    """Remove a folder the student may have locked (chmod 0): open each level up first."""
    try:
        os.chmod(top, 0o700)
    except OSError:
        pass
    for root, dirs, _ in os.walk(top):  # top-down: a folder is opened before it is entered
        for name in dirs:
            try:
                os.chmod(os.path.join(root, name), 0o700, follow_symlinks=False)
            except (OSError, NotImplementedError):
                pass
    shutil.rmtree(top, ignore_errors=True)


def _children_of(pid: int) -> list[int]:
    """Live children of ``pid`` (empty where /proc cannot tell)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(n) for n in f.read().split()]
    except (OSError, ValueError):
        return []


def _kill_on_answer(fd: int, pid: int) -> None:
    """Have the kernel SIGKILL process ``pid`` as soon as it writes anything to the pipe read by
    ``fd``: the signal is pending before its write returns, so not one more of its instructions
    runs (it has no thread or process beside it to run any either)."""
    fcntl.fcntl(fd, fcntl.F_SETOWN, pid)
    fcntl.fcntl(fd, fcntl.F_SETSIG, signal.SIGKILL)
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_ASYNC)


def _audit_child(warden: Warden, arena, link: Channel, answer: int) -> None:
    """An audited call's process: load the file, wait for "go", call on the shared arrays,
    write the outcome (without the returned array: one small write) and be killed for it."""
    try:
        resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))  # no thread, no process beside this one
    except (ValueError, OSError):
        pass
    link.receive()  # "load": the answer pipe is watched from now on
    try:
        program = Program(warden.raw, warden.filename, warden.exercises, None, compiled=warden.compiled)
        program.namespace("")  # load now: loading is not the call's time
        link.send({"type": "loaded"})
    except LoadProblem as err:
        link.send({"type": "loaded", "problem": str(err)})
        return
    go = link.receive()
    kwargs = dict(go["scalars"])
    for key, (offset, dtype, shape) in go["arrays"].items():
        count = 1
        for n in shape:
            count *= n
        kwargs[key] = np.frombuffer(arena, dtype=np.dtype(dtype), count=count, offset=offset).reshape(shape)
    outcome = program.call(go["exercise"], go["name"], kwargs, copy=False)
    outcome.pop("value", None)
    os.write(answer, encode(outcome))


#: Per machine: the audit architecture seccomp reports, and the system calls refused in a
#: sandbox. Each reaches memory that no resource limit counts (SysV shared memory, message
#: queues and semaphores outlive their processes; memfd files hold pages no address-space
#: limit sees), or does work behind the process's back (io_uring).
_REFUSED = {
    "x86_64": (0xC000003E, {"shmget": 29, "semget": 64, "msgget": 68, "memfd_create": 319}),
    "aarch64": (0xC00000B7, {"shmget": 194, "semget": 190, "msgget": 186, "memfd_create": 279}),
}
_REFUSED_EVERYWHERE = {"io_uring_setup": 425, "memfd_secret": 447}


def refuse_system_calls() -> bool:
    """Install a seccomp filter (inherited by every child) under which the calls in _REFUSED
    fail with EPERM, as do all calls of another architecture's ABI. False where it cannot be."""
    import ctypes
    import platform

    known = _REFUSED.get(platform.machine())
    if known is None or not sys.platform.startswith("linux"):
        return False
    arch, numbers = known
    refused = sorted({*numbers.values(), *_REFUSED_EVERYWHERE.values()})
    load, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    allow, deny = 0x7FFF0000, 0x00050000 | 1  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EPERM
    checks = [(jge, 0x40000000)] if arch == 0xC000003E else []  # the x32 ABI's numbers
    checks += [(jeq, n) for n in refused]
    program = [(load, 0, 0, 4), (jeq, 0, len(checks) + 2, arch), (load, 0, 0, 0)]
    for i, (op, number) in enumerate(checks):
        program.append((op, len(checks) - i, 0, number))  # a match jumps to "deny"
    program += [(ret, 0, 0, allow), (ret, 0, 0, deny)]

    class Filter(ctypes.Structure):
        _fields_ = [
            ("code", ctypes.c_ushort),
            ("jt", ctypes.c_ubyte),
            ("jf", ctypes.c_ubyte),
            ("k", ctypes.c_uint),
        ]

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Filter))]

    filters = (Filter * len(program))(*[Filter(*instruction) for instruction in program])
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS: required to install a filter
        return False
    fprog = Fprog(len(program), filters)
    return libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) == 0  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER


def _prctl(option: int, value: int) -> None:
    try:
        import ctypes

        ctypes.CDLL(None).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _isolate_output() -> None:
    """Student prints go nowhere the grader reads; fd-level writes go to /dev/null."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    sys.stdout = sys.stderr = _Output()
    sys.stdin = None


if __name__ == "__main__":
    _prctl(4, 0)  # PR_SET_DUMPABLE 0: children of the same user cannot attach to it or read its memory
    _prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: orphans of the student's come back here to be ended
    try:
        refuse_system_calls()
    except (OSError, AttributeError, ValueError):
        pass  # no seccomp here: the other limits still hold
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a file past the size cap fails to write, not kills
    _isolate_output()
    Warden(int(sys.argv[1]), sys.argv[2], sys.argv[3]).run()
