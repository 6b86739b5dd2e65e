"""Run a student's file in a separate, limited worker process.

The trusted side (this module, in the process that holds the checks, the
reference and the scores) starts one worker per submission and sends it one
call at a time over a pipe. The worker answers with arrays in a format that
cannot execute code (:mod:`grader.worker`); when the student's code calls
another graded function, the worker asks back and the reference runs here.

Isolation levels, best first:

``namespaces``
    bubblewrap: no network, private PID/IPC/UTS namespaces, a filesystem that
    holds only the Python interpreter, numpy and the worker's own temporary
    folder (read-only except that folder); as root, the worker runs as user
    65534 with no capabilities.
``process``
    a plain subprocess (no bubblewrap here): the same resource limits, a
    temporary working folder and a minimal environment, but it shares the
    machine's filesystem and network.

Both get: a time limit per call, enforced from outside with SIGKILL; a total
time limit per submission; a cap on address space, file size, open files and
processes; stdin closed; output dropped; everything the worker started killed
when the submission is done.
"""

from __future__ import annotations

import functools
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import EXERCISES, worker
from .submission import DEFAULT_CALL_TIMEOUT, StudentError, StudentTimeout, read_submission
from .worker import Channel, LoadProblem, WireError

#: Address space a worker may use.
DEFAULT_MEMORY = 2 << 30
#: Seconds a whole submission may take.
DEFAULT_TOTAL_TIMEOUT = 60.0
#: Largest file a worker may write.
FILE_SIZE_LIMIT = 16 << 20
#: Bytes a worker may write in its folder and in /tmp (each in memory, namespaces only).
WORK_SPACE = 64 << 20
#: Elements an array may hold, and the longest axis, when a student's function calls a
#: reference helper: far more than any check uses (T <= 6, D <= 16), far less than a risk.
HELPER_ELEMENTS = 1 << 16
HELPER_AXIS = 64
#: Seconds to start a worker and load the student's file.
START_TIMEOUT = 10.0

LEVELS = ("namespaces", "process", "none")


@dataclass(frozen=True)
class Limits:
    """What a worker may use."""

    call_timeout: float = DEFAULT_CALL_TIMEOUT
    total_timeout: float = DEFAULT_TOTAL_TIMEOUT
    memory: int = DEFAULT_MEMORY


def describe_level(level: str) -> str:
    """One line for reports."""
    return {
        "namespaces": "namespaces (bubblewrap: no network, private filesystem"
        + (", an unprivileged user)" if os.geteuid() == 0 else ")"),
        "process": "process (a separate process with resource limits; no filesystem or network isolation)",
        "none": "none (your code ran inside the checker's process)",
    }[level]


@functools.cache
def best_level() -> str:
    """The strongest isolation this machine offers."""
    if sys.platform.startswith("linux") and shutil.which("bwrap"):
        with tempfile.TemporaryDirectory(prefix="grader-probe-") as tmp:
            for name in ("worker.py", "attention.py"):
                (Path(tmp) / name).write_text("")
            probe = subprocess.run(
                _bwrap_prefix(Path(tmp)) + ["/bin/true"], capture_output=True, timeout=30, check=False
            )
        if probe.returncode == 0:
            return "namespaces"
    return "process" if os.name == "posix" else "none"


def worker_uid(*, audit: bool = False) -> int:
    """An unprivileged user id of this grading process's own (and one for its auditor).

    Workers of different grading processes get different ids, so a fork bomb
    in one sandbox exhausts its own process limit, not its neighbours'.
    """
    return 100_000 + (os.getpid() % 30_000) * 2 + int(audit)


def _ancestors(path: Path) -> list[Path]:
    return [p for p in reversed(path.parents) if str(p) != "/"]


def _bwrap_prefix(workdir: Path) -> list[str]:
    """bubblewrap options: read-only system and Python, a writable work folder, nothing else."""
    python = Path(os.path.realpath(sys.executable))
    prefix = Path(sys.base_prefix).resolve()
    numpy_dir = Path(np.__file__).resolve().parent
    readonly = [prefix, numpy_dir]
    libs = numpy_dir.with_name("numpy.libs")
    if libs.is_dir():
        readonly.append(libs)
    if prefix not in python.parents:
        readonly.append(python.parent)
    args = [
        "bwrap",
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
    ]
    if os.geteuid() != 0:
        args.append("--unshare-user")
    args += ["--die-with-parent", "--new-session"]  # the environment is the minimal one given to bwrap
    for system in ("/usr", "/bin", "/lib", "/lib64", "/lib32", "/libx32"):
        if Path(system).exists():
            args += ["--ro-bind", system, system]
    # /tmp and the work folder live in memory, capped: nothing the worker writes reaches the disk.
    # /tmp comes before the Python binds, which may lie below it (a project cloned in /tmp).
    size = str(WORK_SPACE)
    args += ["--perms", "1777", "--size", size, "--tmpfs", "/tmp"]
    made: set[Path] = {Path("/tmp")}
    for path in readonly:
        for parent in _ancestors(path):
            if parent not in made and not any(parent == r or r in parent.parents for r in readonly):
                if not str(parent).startswith(("/usr", "/bin", "/lib")):
                    args += ["--perms", "0755", "--dir", str(parent)]
                    made.add(parent)
        args += ["--ro-bind", str(path), str(path)]
    args += ["--perms", "0777", "--size", size, "--tmpfs", "/sandbox"]
    for name in ("worker.py", "attention.py"):
        args += ["--ro-bind", str(workdir / name), f"/sandbox/{name}"]
    args += ["--chdir", "/sandbox", "--proc", "/proc", "--dev", "/dev"]
    return args


def _environment(home: str) -> dict[str, str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": home,
        "LANG": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    for keep in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # some CPUs need these for OpenBLAS to work
        if keep in os.environ:
            env[keep] = os.environ[keep]
    return env


def _limit(memory: int):
    """Resource limits, applied in the child before it executes anything."""

    def apply():
        import resource

        for which, value in [
            (resource.RLIMIT_AS, memory),
            (resource.RLIMIT_FSIZE, FILE_SIZE_LIMIT),
            (resource.RLIMIT_CORE, 0),
            (resource.RLIMIT_NOFILE, 256),
            (resource.RLIMIT_NPROC, 128),
        ]:
            try:
                resource.setrlimit(which, (value, value))
            except (ValueError, OSError):
                pass

    return apply


def _subject(name: str) -> str:
    """How messages name what failed: a function, or the file while it loads."""
    return "Your file" if name == LOADING else f"`{name}`"


#: The name used in messages while the file is being loaded.
LOADING = "your file"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class _Deadline(Exception):
    pass


class Sandboxed:
    """Runs the student's file in a worker process; one worker per submission."""

    def __init__(
        self,
        path: Path,
        *,
        helpers: dict | None,
        level: str = "namespaces",
        limits: Limits = Limits(),
        audit: bool = False,
    ):
        if level not in ("namespaces", "process"):
            raise ValueError(f"unknown isolation level {level!r}")
        self.path = Path(path)
        self.audit = audit  # this worker is an auditor (see worker.audit)
        self.auditor: Sandboxed | None = None
        self.isolation = level
        self.limits = limits
        self.helpers = helpers or {}
        self.started = time.monotonic()
        self._signatures: dict = {}
        self._problem = ""
        self._loading = False  # launched, its answer to "load" not read yet
        self.stuck: dict[str, str] = {}  # function -> message, once it ran out of time
        self.proc: subprocess.Popen | None = None
        self.workdir: Path | None = None
        try:
            self.raw = read_submission(path)
        except LoadProblem as err:
            self._problem = str(err)
            return
        self._launch()  # the worker boots while the checks are being collected

    @property
    def problem(self) -> str:
        self._loaded()
        return self._problem

    @property
    def signatures(self) -> dict:
        self._loaded()
        return self._signatures

    # -- the worker's life

    def _start(self) -> None:
        self._launch()
        self._loaded()

    def _launch(self) -> None:
        """Start a worker and ask it to load the file; its answer is read by _loaded."""
        self.workdir = Path(tempfile.mkdtemp(prefix="grader-"))
        shutil.copyfile(worker.__file__, self.workdir / "worker.py")
        (self.workdir / "attention.py").write_bytes(self.raw)
        os.chmod(self.workdir, 0o755)
        requests_r, requests_w = os.pipe()
        replies_r, replies_w = os.pipe()
        site = str(Path(np.__file__).resolve().parent.parent)
        inside = "/sandbox" if self.isolation == "namespaces" else str(self.workdir)
        bootstrap = (
            f"import sys; sys.path.insert(0, {site!r}); "
            f"sys.argv = ['worker', '{requests_r}', '{replies_w}', {inside + '/attention.py'!r}]; "
            f"import runpy; runpy.run_path({inside + '/worker.py'!r}, run_name='__main__')"
        )
        command = [os.path.realpath(sys.executable), "-I", "-S", "-c", bootstrap]
        if self.isolation == "namespaces":
            drop = []
            if os.geteuid() == 0:
                uid = worker_uid(audit=self.audit)
                drop = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs"]
                drop += ["--bounding-set=-all", "--inh-caps=-all"]
            command = _bwrap_prefix(self.workdir) + ["--"] + drop + command
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=self.workdir,
            env=_environment(inside),
            pass_fds=(requests_r, replies_w),
            start_new_session=True,
            preexec_fn=_limit(self.limits.memory),
        )
        os.close(requests_r)
        os.close(replies_w)
        self.requests, self.replies = requests_w, replies_r
        os.set_blocking(requests_w, False)  # a worker that stops reading cannot hold the grader
        self.channel = Channel(replies_r, requests_w, wait=self._wait)
        load = {"type": "load", "exercises": list(EXERCISES), "memory": self.limits.memory}
        load["substitute"] = bool(self.helpers)
        load["audit"] = self.audit
        self.load_deadline = time.monotonic() + START_TIMEOUT
        self._loading = True
        try:
            self._send(load, self.load_deadline, name=LOADING)
        except StudentTimeout:
            self._loading = False
            self._problem = f"Your file did not finish loading within {START_TIMEOUT:g} s."

    def _loaded(self) -> None:
        """Read the worker's answer to "load", once."""
        if not self._loading:
            return
        self._loading = False
        try:
            reply = self._receive(self.load_deadline, name=LOADING)
        except StudentError as err:
            self._problem = err.message
            self._kill()
            return
        except StudentTimeout:
            self._problem = f"Your file did not finish loading within {START_TIMEOUT:g} s."
            self._kill()
            return
        signatures = reply.get("signatures")
        if reply.get("type") == "ready" and isinstance(signatures, dict):
            self._signatures = signatures
        else:
            self._problem = str(reply.get("problem") or "Your file could not be loaded.")[:2000]
            self._kill()

    def _kill(self) -> None:
        """SIGKILL the worker and everything it started; the pid namespace goes with it."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait()
            self.proc = None
            for fd in (self.requests, self.replies):
                try:
                    os.close(fd)
                except OSError:
                    pass
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def close(self) -> None:
        """End the worker (and its auditor); nothing they started survives."""
        self._kill()
        if self.auditor is not None:
            self.auditor.close()

    # -- the channel

    def _wait(self, fd: int) -> None:
        """Block until ``fd`` can be read, or raise _Deadline."""
        left = self.deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise _Deadline()

    def _wait_writable(self, fd: int) -> None:
        left = self.deadline - time.monotonic()
        if left <= 0 or not select.select([], [fd], [], left)[1]:
            raise _Deadline()

    def _timeout(self, name: str) -> StudentTimeout:
        self._kill()
        return StudentTimeout(f"{_subject(name)} did not finish within {self.limits.call_timeout:g} s.")

    def _send(self, message: dict, deadline: float, *, name: str) -> None:
        self.deadline = deadline
        try:
            self.channel.send(message, wait_writable=self._wait_writable)
        except _Deadline:
            raise self._timeout(name) from None
        except OSError:
            pass  # the worker is gone; receiving says how

    def _receive(self, deadline: float, *, name: str) -> dict:
        self.deadline = deadline
        try:
            message = self.channel.receive()
        except _Deadline:
            raise self._timeout(name) from None
        except EOFError:
            raise StudentError(self._death(name), kind="crashed") from None
        except WireError as err:
            self._kill()
            raise StudentError(
                f"{_subject(name)} sent back something the grader does not accept: {err}."
            ) from None
        if time.monotonic() > deadline:  # an answer that came too late counts as none
            raise self._timeout(name)
        return message

    def _death(self, name: str) -> str:
        """Why the worker is gone, in a student's words."""
        proc = self.proc
        try:
            code = proc.wait(timeout=2) if proc is not None else None
        except subprocess.TimeoutExpired:
            self._kill()
            return f"{_subject(name)} closed its connection to the grader."
        self._kill()
        if code is None:
            return f"{_subject(name)} stopped the worker that ran it."
        signum = -code if code < 0 else code - 128 if code > 128 else 0
        if signum == signal.SIGKILL:
            return f"{_subject(name)} was stopped: it probably used more than {self.limits.memory / 2**30:g} GiB of memory."
        if signum:
            return f"{_subject(name)} crashed (signal {signum}, {_signal_name(signum)})."
        return f"{_subject(name)} exited the interpreter (exit code {code})."

    # -- calls

    def call(self, exercise: str, name: str, arguments: dict, replace=None) -> dict:
        if name in self.stuck:
            raise StudentTimeout(self.stuck[name])
        if time.monotonic() - self.started > self.limits.total_timeout:
            raise StudentTimeout(
                f"Grading of your file was stopped after {self.limits.total_timeout:g} s in total."
            )
        self._loaded()
        if self.proc is None:
            self._start()  # replace a worker that was killed or died
            if self._problem:
                raise StudentError(self._problem, kind="load")
        deadline = time.monotonic() + self.limits.call_timeout
        try:
            request = {"type": "call", "exercise": exercise, "name": name, "kwargs": arguments}
            if replace is not None:
                request["replace"] = tuple(replace)
            self._send(request, deadline, name=name)
            while True:
                reply = self._receive(deadline, name=name)
                if reply.get("type") == "callback":
                    self._send(self._help(exercise, reply), deadline, name=name)
                    continue
                if reply.get("type") != "outcome":
                    self._kill()
                    raise StudentError(f"`{name}` broke the conversation with the grader.")
                return self._checked(name, reply, trusted_mutation=self.audit)
        except StudentTimeout as stop:
            self.stuck[name] = stop.message + " (Not tried again on later checks.)"
            raise

    def audited_call(self, exercise: str, name: str, arguments: dict) -> dict:
        """A call whose effect on its arguments is observed where the student cannot forge it."""
        if self.auditor is None or self.auditor.proc is None:  # none yet, or killed by a time limit
            if self.auditor is not None:
                self.auditor.close()
            self.auditor = Sandboxed(
                self.path, helpers=None, level=self.isolation, limits=self.limits, audit=True
            )
        if self.auditor.problem:
            raise StudentError(self.auditor.problem, kind="load")
        self.auditor.prepare()
        return self.auditor.call(exercise, name, arguments)

    def start_auditor(self) -> None:
        """Launch the auditor now, so that it boots while other work goes on."""
        if self.auditor is not None:
            self.auditor.close()
        self.auditor = Sandboxed(
            self.path, helpers=None, level=self.isolation, limits=self.limits, audit=True
        )

    def prepare(self) -> None:
        """Have an auditor load the file for the next call, within the loading time limit."""
        deadline = time.monotonic() + START_TIMEOUT
        try:
            self._send({"type": "prepare"}, deadline, name=LOADING)
            self._receive(deadline, name=LOADING)
        except StudentTimeout:
            raise StudentTimeout(f"Your file did not finish loading within {START_TIMEOUT:g} s.") from None

    def _help(self, exercise: str, request: dict) -> dict:
        """Run the reference for a graded function the student's code called.

        Only plain numbers and small arrays are accepted, so a request cannot make
        the grader's own process slow or large.
        """
        helper = request.get("name")
        if helper == exercise or helper not in self.helpers:
            return {"type": "raise", "exc": "RuntimeError", "message": f"{helper} is not available here"}
        args, kwargs = request.get("args", ()), request.get("kwargs", {})
        if not isinstance(args, tuple) or not isinstance(kwargs, dict):
            return {"type": "raise", "exc": "TypeError", "message": "bad arguments"}
        problem = _helper_arguments_problem(helper, [*args, *kwargs.values()])
        if problem:
            return {"type": "raise", "exc": "ValueError", "message": f"{helper}: {problem}"}
        try:
            value = self.helpers[helper](*args, **kwargs)
        except (ValueError, TypeError) as err:
            return {"type": "raise", "exc": type(err).__name__, "message": str(err)}
        except Exception as err:  # noqa: BLE001 - bad input from the student's side
            return {"type": "raise", "exc": "ValueError", "message": f"{helper} failed: {err}"}
        return {"type": "return", "value": value}

    @staticmethod
    def _checked(name: str, reply: dict, *, trusted_mutation: bool) -> dict:
        """An outcome whose every field has the expected type; values only plain numeric arrays.

        Which arguments changed is taken only from an auditor, never from the worker
        that runs the student's code (that one could say anything)."""
        if reply.get("ok") is True:
            problem = worker.check_value(name, reply.get("value"))
            if problem:
                return {"ok": False, "kind": "return", "message": problem}
            mutated = reply.get("mutated", ()) if trusted_mutation else ()
            if not isinstance(mutated, tuple) or not all(isinstance(m, str) for m in mutated):
                mutated = ()
            return {"ok": True, "value": reply["value"], "mutated": mutated}
        kind = reply.get("kind")
        raised = reply.get("raised", ())
        message = reply.get("message")
        return {
            "ok": False,
            "kind": kind if kind in OUTCOME_KINDS else "raised",
            "message": message[:2000] if isinstance(message, str) else f"`{name}` failed.",
            "raised": tuple(r for r in raised if isinstance(r, str)) if isinstance(raised, tuple) else (),
        }


#: The kinds of failure a worker may report.
OUTCOME_KINDS = ("missing", "not_implemented", "raised", "return")


def _helper_arguments_problem(helper: str, values: list) -> str:
    """Why these arguments may not reach the reference ('' if they may)."""
    for value in values:
        if isinstance(value, np.ndarray):
            if value.size > HELPER_ELEMENTS or max(value.shape, default=0) > HELPER_AXIS:
                return f"an array of shape {value.shape} is larger than the checks ever use"
            if helper == "apply_causal_mask" and (value.ndim < 2 or value.shape[-1] != value.shape[-2]):
                return "scores must be square in their last two axes"
        elif not isinstance(value, (bool, int, float)) or (isinstance(value, int) and abs(value) > 1 << 20):
            return f"an argument of type {type(value).__name__} is not accepted"
    return ""
