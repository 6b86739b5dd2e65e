"""Run a student's file and call its functions: in the grader's process, or as a worker.

This module is self-contained on purpose (standard library and numpy only):
for sandboxed grading it is copied into the sandbox with :mod:`grader.sandbox.inside.warden`,
where neither can see the repository or the rest of the grader. The
trusted side imports the same module, so the wire format, the loading rules
and the messages exist once.

The wire format cannot execute code: a frame is a 4-byte length, a JSON
header, then raw array bytes whose dtype and shape the header declares.

In a sandbox, :mod:`grader.sandbox.inside.warden` forks the workers; this module is what
they run (:func:`serve`).
"""

from __future__ import annotations

import _signal
import inspect
import io
import json
import mmap
import os
import random
import select
import signal
import struct
import tokenize
import traceback

import numpy as np

try:
    import fcntl
except ImportError:  # Windows: no sandbox runs there, but this module's wire format does
    fcntl = None

#: Longest exception message quoted back to the student.
MAX_MESSAGE = 300
#: Largest JSON header accepted in a frame.
MAX_HEADER = 1 << 20
#: Largest total of array bytes accepted in a frame (the checks use a few KiB).
MAX_PAYLOAD = 64 << 20
#: The only dtypes that may cross the boundary.
ALLOWED_KINDS = "biuf"
MAX_DIMS = 32


class WireError(Exception):
    """A frame that breaks the format or its limits."""


# ----------------------------------------------------------------------------- wire format


#: Values that stand for themselves in a header.
_PLAIN = (str, int, float, bool, type(None))


def _encode(value, payloads: list[bytes]):
    if type(value) in _PLAIN:
        return value
    if isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value)
        payloads.append(data.tobytes())
        return {"__array__": len(payloads) - 1, "dtype": data.dtype.str, "shape": list(data.shape)}
    if isinstance(value, (tuple, list)):  # (plain items are written as they are, without a call)
        return {"__tuple__": [v if type(v) in _PLAIN else _encode(v, payloads) for v in value]}
    if isinstance(value, dict):
        return {
            "__dict__": {str(k): v if type(v) in _PLAIN else _encode(v, payloads) for k, v in value.items()}
        }
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


#: The longest dtype name accepted (``"<f8"``, ``"|b1"``): anything longer is not a number type.
MAX_DTYPE_NAME = 4


def _dtype(name) -> np.dtype:
    """The dtype a header names, parsed afresh each time: nothing a message says is remembered."""
    if not isinstance(name, str) or len(name) > MAX_DTYPE_NAME:
        raise WireError("bad dtype name")
    return np.dtype(name)


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
    if type(value) in _PLAIN:
        return value
    if isinstance(value, dict):
        if "__array__" in value:
            return _array(value, payloads)
        if "__tuple__" in value:  # (plain items are read as they are, without a call)
            return tuple([v if type(v) in _PLAIN else _decode(v, payloads) for v in value["__tuple__"]])
        if "__dict__" in value:
            return {k: v if type(v) in _PLAIN else _decode(v, payloads) for k, v in value["__dict__"].items()}
        raise WireError("unknown object in a frame")
    if isinstance(value, list):
        raise WireError("bare lists are not part of the format")
    return value


def decode_plain(value):
    """A header's value that holds no array (tuples and dicts as the format writes them)."""
    return _decode(value, [])


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
        header = json.loads(_read_exactly(read, size).decode())
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


#: Whether this system can stop a writer at its write (Linux: F_SETSIG). Elsewhere (macOS, at the
#: process level) the trusted side compares the arguments as soon as it has read the answer, so a
#: file that puts an argument back right after answering may go unseen (the README says so).
FREEZES = fcntl is not None and hasattr(fcntl, "F_SETSIG")


def watch(fd: int, pid: int) -> None:
    """Have the kernel stop process ``pid`` each time it writes to the pipe read by ``fd`` (where
    it :data:`FREEZES`; the pipe is made non-blocking in any case). Owner and flags belong to the
    open pipe, not to the descriptor: a process that sets them on its copy and closes it leaves
    them to every other holder of the same read end (the trusted side)."""
    flags = fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK
    if FREEZES:
        fcntl.fcntl(fd, fcntl.F_SETOWN, pid)
        fcntl.fcntl(fd, fcntl.F_SETSIG, signal.SIGSTOP)
        flags |= os.O_ASYNC
    fcntl.fcntl(fd, fcntl.F_SETFL, flags)


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
        self.write(encode(message), wait_writable=wait_writable)

    def write(self, frame: bytes, *, wait_writable=None) -> None:
        """Write one frame already encoded (:func:`encode`), as :meth:`send` does."""
        view = memoryview(frame)
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
        # optimize=0: the file as written, its assert statements kept, whatever the flags of
        # the Python compiling it (-O in the grader's process would drop them, not the sandbox's)
        code = compile(text, filename, "exec", dont_inherit=True, optimize=0)
    except (SyntaxError, ValueError) as err:  # ValueError: a NUL byte, before Python 3.12
        if "\0" in text:
            line = text[: text.index("\0")].count("\n") + 1
            raise LoadProblem(
                f"Python cannot read your file: it holds a zero byte (NUL) on line {line}, which "
                "no Python text may hold. Save it again as plain text in your editor."
            ) from None
        if not isinstance(err, SyntaxError):
            raise LoadProblem(f"Python cannot read your file: {err}.") from None
        where = f" at line {err.lineno}" if err.lineno else ""
        shown = f": `{err.text.strip()}`" if err.text and err.text.strip() else ""
        raise LoadProblem(
            f"Python cannot read your file: {err.msg}{where}{shown}. "
            "Nothing in it can be graded until this is fixed."
        ) from None
    except (RecursionError, MemoryError, OverflowError):  # the compiler's own limits
        raise LoadProblem(
            "Python cannot compile your file: some expression in it is nested or chained too "
            "deeply (thousands of levels). Write it in smaller steps."
        ) from None
    except Exception as err:  # noqa: BLE001 - whatever else the compiler says of the file is the file's
        raise LoadProblem(f"Python cannot compile your file ({type(err).__name__}).") from None
    return text, code


#: The file-creation mask a student's code runs under, in a sandbox (set as it starts) and in the
#: grader's own process (around each load and call): the same whatever the grader's, which a
#: file could read (/proc/self/status) and answer otherwise under an instructor's umask 077.
UMASK = 0o022

#: What a worker may allocate, for messages (the trusted side sets it).
MEMORY_LIMIT = [0]
#: Whether this process is a sandbox's worker whose filter refuses what reaches past it (a
#: signal to another process, a new thread or process): set by the warden, as the limit above.
CONFINED = [False]


def compile_or_problem(raw: bytes, filename: str):
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
        # Python's own lines (a traceback counts them so), not str.splitlines's
        lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        code = lines[found - 1].strip() if 0 < found <= len(lines) else ""
        where = f" at line {found}" + (f": `{code}`" if code else "")
    if isinstance(err, RuntimeError) and "can't start new thread" in message:
        message += "; the grader runs your code as one thread of one process"
    elif CONFINED[0] and isinstance(err, PermissionError) and err.errno == 1 and err.filename is None:
        # EPERM of no file (a file's own permissions name it): one of the sandbox's refusals
        message += "; the grader's sandbox refuses it: your code may signal no process but its own"
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
            compiled = compile_or_problem(raw, filename)
        if isinstance(compiled, LoadProblem):
            raise compiled
        self.text, self.code = compiled
        self.namespaces: dict[str, dict] = {}

    def execute(self) -> dict:
        """Run the file as a fresh module and return its namespace."""
        module = os.path.splitext(os.path.basename(self.filename))[0]  # named after its file, as on import
        namespace = {"__name__": module, "__file__": self.filename, "__builtins__": __builtins__}
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


def answer_of(reply: dict):
    """What a call of a stand-in gives the student's code for the reference's ``reply``: its
    value, or the exception it raises (ValueError and TypeError as the reference raised them,
    anything else a RuntimeError)."""
    if reply.get("type") == "return":
        return reply["value"]
    raise {"ValueError": ValueError, "TypeError": TypeError}.get(reply.get("exc"), RuntimeError)(
        reply.get("message", "")
    )


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


# ----------------------------------------------------------------------------- a call's memory

#: Where each array argument starts in a call's memory: aligned as numpy aligns its own.
ALIGNMENT = 64
#: The most memory a call's array arguments may take (the checks use a few KiB).
MAX_ARGUMENTS = 16 << 20


def layout(kwargs: dict) -> tuple[dict, int]:
    """Where a call's array arguments go in its memory: ``{name: [offset, dtype, shape]}`` and the
    size of that memory (whole pages)."""
    places, offset = {}, 0
    for key, value in kwargs.items():
        if isinstance(value, np.ndarray):
            places[key] = [offset, value.dtype.str, list(value.shape)]
            offset += -(-value.nbytes // ALIGNMENT) * ALIGNMENT
    return places, max(mmap.PAGESIZE, -(-offset // mmap.PAGESIZE) * mmap.PAGESIZE)


def laid_out(kwargs: dict) -> tuple[dict, dict, np.ndarray]:
    """A call's arguments as they travel to a sandbox: where each array goes, the other
    arguments, and the image of the arrays' memory (bytes, laid out by :func:`layout`)."""
    places, size = layout(kwargs)
    image = np.zeros(size, dtype=np.uint8)
    for key, (offset, _, _) in places.items():
        value = np.ascontiguousarray(kwargs[key])
        image[offset : offset + value.nbytes] = value.reshape(-1).view(np.uint8)
    return places, {k: v for k, v in kwargs.items() if k not in places}, image


def place(memory, kwargs: dict, places: dict, base: int = 0) -> dict:
    """The call's arguments with each array a view of ``memory`` at its place from ``base``
    (scalars as given)."""
    given = dict(kwargs)
    for key, (offset, dtype, shape) in places.items():
        given[key] = np.ndarray(tuple(shape), dtype=np.dtype(dtype), buffer=memory, offset=base + offset)
    return given


# ----------------------------------------------------------------------------- the worker


class _CpuSpent(BaseException):
    """Raised in the worker once the student's code used the processor time it was given."""


class _cpu_limit:
    """Raise _CpuSpent in the block once this process used ``seconds`` of processor time
    (``ITIMER_PROF``); no limit for None or where the timer does not exist.

    Where the trusted side cannot read this process's clock (a system with no /proc) this is
    what stops a loop at its limit of processor time. The student's code could turn it off:
    then only the trusted side's wall-clock guard stops it, and the check is unfinished,
    which gains the student nothing."""

    def __init__(self, seconds):
        usable = hasattr(signal, "setitimer") and hasattr(signal, "SIGPROF")
        self.seconds = seconds if usable and isinstance(seconds, (int, float)) and seconds > 0 else None

    def __enter__(self):
        if self.seconds is not None:
            # _signal's own function: signal.signal would look each handler up among the named
            # ones (by raising and catching an error), twice per call of the student's code
            self.previous = _signal.signal(signal.SIGPROF, _spent)
            signal.setitimer(signal.ITIMER_PROF, self.seconds)

    def __exit__(self, *exc):
        if self.seconds is not None:
            signal.setitimer(signal.ITIMER_PROF, 0)
            _signal.signal(signal.SIGPROF, self.previous)


def _spent(signum, frame):
    raise _CpuSpent()


#: The reference's answers a worker keeps, at most, and the bytes they may hold with their
#: questions (:class:`Answers`).
KEPT_ANSWERS = 4096
KEPT_BYTES = 16 << 20
#: The reference's answers that depend on the question alone, as (type, exception): a value, or
#: arguments refused. Only these are kept, here and on the trusted side
#: (:meth:`grader.sandbox.session.Sandboxed._help`); "took too long" or "not available here"
#: depend on more.
KEPT_KINDS = (("return", None), ("raise", "ValueError"), ("raise", "TypeError"))


class Answers:
    """The reference's answers to the questions this worker asked, kept to answer the same
    question (byte for byte) again without the trip to the trusted side and back, which is most
    of a question's cost. The answer is a function of the question alone; it is given again only
    in a call that has the reference stand in for that function (:meth:`serves`) and says the
    trusted side keeps its own answers (``keep``: it does unless replay is off), and each time
    as fresh arrays.

    They are kept in the student's own process, which received each of them already: changing
    them would only change what the student's own code is given, which that code decides anyway
    (it may as well not call the stand-in). Nothing of them reaches another worker."""

    def __init__(self):
        self.kept: dict[bytes, dict] = {}
        self.size = 0
        self.keep, self.replaced, self.exercise = False, (), None

    def serves(self, request: dict) -> None:
        """The call about to run: whether it keeps answers, and which functions it replaces."""
        replace = request.get("replace")
        self.keep = request.get("keep") is True
        self.replaced = replace if isinstance(replace, tuple) else ()
        self.exercise = request.get("exercise")

    def _answers(self, name: str) -> bool:
        return self.keep and name in self.replaced and name != self.exercise

    def get(self, name: str, question: bytes) -> dict | None:
        reply = self.kept.get(question) if self._answers(name) else None
        return None if reply is None else {**reply, "value": _fresh(reply.get("value"))}

    def put(self, name: str, question: bytes, reply: dict) -> None:
        if not self._answers(name) or (reply.get("type"), reply.get("exc")) not in KEPT_KINDS:
            return
        size = len(question) + _size(reply.get("value"))
        if len(self.kept) < KEPT_ANSWERS and self.size + size <= KEPT_BYTES:
            self.kept[question] = {**reply, "value": _fresh(reply.get("value"))}
            self.size += size


def _fresh(value):
    """``value`` with every array copied: what a stand-in returns is the student's to change."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, tuple):
        return tuple(_fresh(v) for v in value)
    return value


def _size(value) -> int:
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, tuple):
        return sum(_size(v) for v in value)
    return 64


def serve(channel: Channel, raw: bytes, filename: str, arena, compiled=None) -> None:
    """Answer the trusted side's calls on ``channel`` until it closes it. Each call's arrays
    are in ``arena``, memory the trusted side writes them into (:mod:`grader.sandbox.watching`)."""
    answers = Answers()

    def helper(name):
        def stand_in(*args, **kwargs):
            question = encode({"type": "callback", "name": name, "args": list(args), "kwargs": kwargs})
            reply = answers.get(name, question)
            if reply is None:
                channel.write(question)
                reply = channel.receive()
                answers.put(name, question, reply)
            return answer_of(reply)

        stand_in.__name__ = name
        return stand_in

    request = channel.receive()  # {"type": "load", "exercises": [...], "substitute": bool, "cpu": s}
    # A file that draws from Python's or numpy's global generator (at import or in a call) draws
    # the same numbers on every run: forked from the keeper, the worker would otherwise start
    # from whatever state the keeper's import of them left (seeded from the system's entropy).
    # They are seeded again before the first call of each example (_answer), as Hypothesis
    # seeds them where the student's code runs in the grader's process.
    _seed()
    limit = _cpu_limit(request.get("cpu"))
    try:
        helping = helper if request.get("substitute") else None
        with limit:
            program = Program(
                raw, filename, request["exercises"], helping, passthrough=(_CpuSpent,), compiled=compiled
            )
            signatures = program.signatures()
        channel.send({"type": "ready", "signatures": signatures})
    except LoadProblem as err:
        channel.send({"type": "load_failed", "problem": str(err)})
        return
    except _CpuSpent:
        problem = f"Your file used more than {limit.seconds:g} s of processor time while it was loading."
        channel.send({"type": "load_failed", "problem": problem})
        return
    while True:
        try:
            request = channel.receive()
        except EOFError:
            return
        answers.serves(request)
        channel.send(_answer(program, request, arena))  # of the call, only answers are kept


def _seed() -> None:
    random.seed(0)
    np.random.seed(0)


def _answer(program: Program, request: dict, arena) -> dict:
    """The outcome of one requested call, as the frame that answers it."""
    if request.get("fresh") is True:  # the first call of an example
        _seed()
    replace = request.get("replace")
    if replace is not None and not (isinstance(replace, tuple) and all(isinstance(n, str) for n in replace)):
        replace = None
    kwargs = place(arena, request["scalars"], request["places"], request.get("base", 0))
    try:
        with _cpu_limit(request.get("cpu")):
            outcome = program.call(request["exercise"], request["name"], kwargs, copy=False, replace=replace)
    except _CpuSpent:
        outcome = {"ok": False, "kind": "cpu", "message": ""}  # the trusted side words it
    return {**outcome, "type": "outcome"}
