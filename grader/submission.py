"""Load a student's file and call its functions on behalf of the checks.

The checks never touch the student's module directly: they call through a
:class:`StudentView`, which

* hands the student copies of the arguments and reports any argument the
  student changed in place,
* enforces the expected signature and a time limit per call,
* accepts only plain numeric numpy arrays (or tuples of them) as results and
  copies them, so nothing the student returns can lie to a comparison,
* turns every failure of the student's code into a :class:`StudentError`
  whose message a student understands.

Each exercise gets a namespace of its own in which the *other* graded
functions are the reference ones: a broken ``split_heads`` costs points in
``split_heads`` only, never in ``mha_forward`` that calls it.
"""

from __future__ import annotations

import inspect
import io
import signal
import threading
import tokenize
import traceback
import types
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import EXERCISES

#: Seconds one call of a student function may take before it is stopped.
DEFAULT_CALL_TIMEOUT = 5.0
#: Longest exception message quoted back to the student.
MAX_MESSAGE = 300


class StudentError(Exception):
    """The student's code failed in a way that is theirs to fix."""

    def __init__(self, message: str, *, kind: str = "raised", raised: tuple[str, ...] = ()):
        super().__init__(message)
        self.message = message
        self.kind = kind  # missing | not_implemented | signature | raised | return | load
        self.raised = raised  # for kind "raised": the exception's class and its bases, by name


class StudentTimeout(BaseException):
    """A call ran past its time limit.

    A ``BaseException`` on purpose: Hypothesis does not retry or shrink it, so a
    stuck function costs one time limit per check, not hundreds.
    """

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class _Alarm(BaseException):
    """Raised inside student code by the timer; never escapes this module."""


@dataclass(frozen=True)
class Source:
    """A submission's text, read and checked to be valid Python."""

    path: Path
    text: str
    code: types.CodeType


class LoadProblem(Exception):
    """The file as a whole cannot be used; the message says why, for a student."""


def find_file(path: Path) -> Path:
    """The ``attention.py`` a path names: the path itself or the one inside it.

    Raises FileNotFoundError with a one-line message when there is none.
    """
    if path.is_dir():
        inner = path / "attention.py"
        if not inner.is_file():
            raise FileNotFoundError(f"{path} is a folder without an attention.py in it")
        return inner
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist")
    if not path.is_file():
        raise FileNotFoundError(f"{path} is not a regular file")
    return path


def read_source(path: Path) -> Source:
    """Read and compile a submission, or raise LoadProblem saying what is wrong."""
    raw = path.read_bytes()
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
        code = compile(text, str(path), "exec", dont_inherit=True)
    except SyntaxError as err:
        where = f"line {err.lineno}" if err.lineno else "somewhere"
        shown = f": `{err.text.strip()}`" if err.text and err.text.strip() else ""
        raise LoadProblem(
            f"Python cannot read your file: {err.msg} at {where}{shown}. "
            "Nothing in it can be graded until this is fixed."
        ) from None
    except ValueError as err:  # source holding NUL bytes
        raise LoadProblem(f"Python cannot read your file: {err}.") from None
    return Source(path=path, text=text, code=code)


def _ring(signum, frame):
    raise _Alarm()


@contextmanager
def time_limit(seconds: float | None):
    """Interrupt the block with _Alarm after ``seconds`` (main thread, POSIX only)."""
    usable = (
        seconds is not None
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return
    previous = signal.getsignal(signal.SIGALRM)
    if previous is not _ring:
        signal.signal(signal.SIGALRM, _ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        if previous is not _ring:
            signal.signal(signal.SIGALRM, previous)


def student_line(source: Source, tb) -> str:
    """' at line N: `code`' for the deepest traceback frame in the student's file."""
    found = None
    for frame, lineno in traceback.walk_tb(tb):
        if frame.f_code.co_filename == str(source.path):
            found = lineno
    if found is None:
        return ""
    lines = source.text.splitlines()
    code = lines[found - 1].strip() if 0 < found <= len(lines) else ""
    return f" at line {found}" + (f": `{code}`" if code else "")


def describe_exception(err: BaseException, source: Source) -> str:
    """'raised IndexError at line 12: `...`: tuple index out of range'."""
    text = str(err)
    if len(text) > MAX_MESSAGE:
        text = text[:MAX_MESSAGE] + "..."
    where = student_line(source, err.__traceback__)
    return f"raised {type(err).__name__}{where}" + (f" ({text})" if text else "")


def execute(source: Source, *, timeout: float | None = DEFAULT_CALL_TIMEOUT) -> dict:
    """Run the file as a fresh module and return its namespace."""
    namespace = {"__name__": "attention", "__file__": str(source.path), "__builtins__": __builtins__}
    try:
        with time_limit(timeout):
            exec(source.code, namespace)
    except _Alarm:
        raise LoadProblem(f"Your file did not finish loading within {timeout:g} s.") from None
    except SystemExit:
        raise LoadProblem(
            "Your file exits the interpreter while it is loading (sys.exit or exit())."
        ) from None
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # noqa: BLE001 - any failure of student code is reported
        raise LoadProblem(
            f"Your file {describe_exception(err, source)} while it was loading, so none of its "
            "functions could be tried."
        ) from None
    return namespace


def signature_text(name: str, fn) -> str:
    return f"{name}{inspect.signature(fn)}"


def same_signature(mine, reference) -> bool:
    """Same parameter names, kinds and defaults, in the same order (annotations ignored)."""
    try:
        a = inspect.signature(mine).parameters.values()
    except (TypeError, ValueError):
        return False
    b = inspect.signature(reference).parameters.values()
    return [(p.name, p.kind, p.default) for p in a] == [(p.name, p.kind, p.default) for p in b]


def check_result(name: str, value):
    """Copy a student's return value, insisting on plain numeric arrays."""
    if isinstance(value, tuple):
        return tuple(check_result(name, v) for v in value)
    if type(value) is not np.ndarray:
        kind = type(value).__module__ + "." + type(value).__qualname__
        kind = kind.removeprefix("builtins.")
        raise StudentError(
            f"`{name}` returned a {kind}; it must return a plain numpy array (np.ndarray).",
            kind="return",
        )
    if value.dtype.kind not in "fiub":
        raise StudentError(
            f"`{name}` returned an array of dtype {value.dtype}; it must hold numbers.", kind="return"
        )
    return np.array(value, copy=True)


class StudentView:
    """The student's functions as one exercise's checks see them."""

    def __init__(self, namespace: dict, source: Source, reference: dict, timeout: float | None):
        self._namespace = namespace
        self._source = source
        self._reference = reference
        self._timeout = timeout
        self._signatures = {n: inspect.signature(f) for n, f in reference.items()}
        self._approved: dict[str, object] = {}  # name -> function whose signature was checked
        self.mutated: tuple[str, ...] = ()
        """Names of the arguments the last call changed in place."""

    def __getattr__(self, name: str):
        if name.startswith("_") or name not in self._reference:
            raise AttributeError(name)
        return lambda *args, **kwargs: self.call(name, *args, **kwargs)

    def call(self, name: str, *args, **kwargs):
        """Call the student's ``name`` on copies of the arguments; return a checked copy."""
        if name not in self._namespace:
            raise StudentError(f"`{name}` is not defined in your file.", kind="missing")
        fn = self._namespace[name]
        if not callable(fn):
            raise StudentError(
                f"`{name}` in your file is a {type(fn).__name__}, not a function.", kind="missing"
            )
        reference = self._reference[name]
        if self._approved.get(name) is not fn and not same_signature(fn, reference):
            try:
                yours = signature_text(name, fn)
            except (TypeError, ValueError):
                yours = "something without a signature"
            raise StudentError(
                f"`{name}` must be defined as `def {signature_text(name, reference)}`, "
                f"but yours is `{yours}`.",
                kind="signature",
            )
        self._approved[name] = fn
        bound = self._signatures[name].bind(*args, **kwargs)
        originals = {k: v for k, v in bound.arguments.items() if isinstance(v, np.ndarray)}
        given = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in bound.arguments.items()}
        try:
            with time_limit(self._timeout):
                value = fn(**given)
        except _Alarm:
            raise StudentTimeout(f"`{name}` did not finish within {self._timeout:g} s.") from None
        except NotImplementedError:
            raise StudentError(
                f"`{name}` is not written yet (it raises NotImplementedError).", kind="not_implemented"
            ) from None
        except SystemExit:
            raise StudentError(f"`{name}` exited the interpreter (sys.exit or exit()).") from None
        except KeyboardInterrupt:
            raise
        except BaseException as err:  # noqa: BLE001 - any failure of student code is reported
            raised = tuple(c.__name__ for c in type(err).__mro__)
            raise StudentError(f"`{name}` {describe_exception(err, self._source)}.", raised=raised) from None
        self.mutated = tuple(
            k for k, v in originals.items() if given[k].shape != v.shape or not _same(given[k], v)
        )
        return check_result(name, value)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.array_equal(a, b, equal_nan=True))


class Submission:
    """A student's file, read once, with one fresh namespace per exercise."""

    def __init__(self, path: Path, *, reference: Path, timeout: float | None = DEFAULT_CALL_TIMEOUT):
        self.path = Path(path)
        self.timeout = timeout
        ref_source = read_source(Path(reference))
        self._reference = {n: f for n, f in execute(ref_source, timeout=None).items() if n in EXERCISES}
        self._views: dict[str, StudentView] = {}
        self.problem = ""
        try:
            self._source = read_source(self.path)
            execute(self._source, timeout=timeout)  # find file-level problems once, up front
        except LoadProblem as err:
            self.problem = str(err)

    def view(self, exercise: str) -> StudentView:
        """The functions as seen by ``exercise``'s checks (others are the reference's)."""
        if self.problem:
            raise StudentError(self.problem, kind="load")
        if exercise not in self._views:
            namespace = execute(self._source, timeout=self.timeout)
            for other in EXERCISES:
                if other != exercise:
                    namespace[other] = self._reference[other]
            self._views[exercise] = StudentView(namespace, self._source, self._reference, self.timeout)
        return self._views[exercise]
