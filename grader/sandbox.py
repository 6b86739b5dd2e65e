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
#: The unprivileged user a worker runs as when the grader is root.
NOBODY = 65534
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
        + (", user 65534)" if os.geteuid() == 0 else ")"),
        "process": "process (a separate process with resource limits; no filesystem or network isolation)",
        "none": "none (your code ran inside the checker's process)",
    }[level]


@functools.cache
def best_level() -> str:
    """The strongest isolation this machine offers."""
    if sys.platform.startswith("linux") and shutil.which("bwrap"):
        probe = subprocess.run(
            _bwrap_prefix(Path(tempfile.gettempdir())) + ["/bin/true"],
            capture_output=True,
            timeout=30,
            check=False,
        )
        if probe.returncode == 0:
            return "namespaces"
    return "process" if os.name == "posix" else "none"


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
    made: set[Path] = set()
    for path in readonly:
        for parent in _ancestors(path):
            if parent not in made and not any(parent == r or r in parent.parents for r in readonly):
                if not str(parent).startswith(("/usr", "/bin", "/lib")):
                    args += ["--perms", "0755", "--dir", str(parent)]
                    made.add(parent)
        args += ["--ro-bind", str(path), str(path)]
    args += ["--bind", str(workdir), "/sandbox", "--chdir", "/sandbox", "--proc", "/proc", "--dev", "/dev"]
    args += ["--tmpfs", "/tmp"]
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
            (resource.RLIMIT_NPROC, 256),
        ]:
            try:
                resource.setrlimit(which, (value, value))
            except (ValueError, OSError):
                pass

    return apply


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
        self, path: Path, *, helpers: dict | None, level: str = "namespaces", limits: Limits = Limits()
    ):
        if level not in ("namespaces", "process"):
            raise ValueError(f"unknown isolation level {level!r}")
        self.isolation = level
        self.limits = limits
        self.helpers = helpers or {}
        self.started = time.monotonic()
        self.signatures: dict = {}
        self.problem = ""
        self.stuck: dict[str, str] = {}  # function -> message, once it ran out of time
        self.proc: subprocess.Popen | None = None
        self.workdir: Path | None = None
        try:
            self.raw = read_submission(path)
        except LoadProblem as err:
            self.problem = str(err)
            return
        self._start()

    # -- the worker's life

    def _start(self) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix="grader-"))
        shutil.copyfile(worker.__file__, self.workdir / "worker.py")
        (self.workdir / "attention.py").write_bytes(self.raw)
        root = os.geteuid() == 0
        if root:
            os.chown(self.workdir, NOBODY, NOBODY)
        requests_r, requests_w = os.pipe()
        replies_r, replies_w = os.pipe()
        site = str(Path(np.__file__).resolve().parent.parent)
        inside = "/sandbox" if self.isolation == "namespaces" else str(self.workdir)
        bootstrap = (
            f"import sys; sys.path.insert(0, {site!r}); "
            f"sys.argv = ['worker', '{requests_r}', '{replies_w}', {inside + '/attention.py'!r}]; "
            f"import runpy; runpy.run_path({inside + '/worker.py'!r}, run_name='__main__')"
        )
        python = os.path.realpath(sys.executable)
        command = [python, "-I", "-S", "-c", bootstrap]
        if self.isolation == "namespaces":
            drop = []
            if root:
                drop = [
                    "setpriv",
                    f"--reuid={NOBODY}",
                    f"--regid={NOBODY}",
                    "--clear-groups",
                    "--no-new-privs",
                ]
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
        self.deadline = time.monotonic() + START_TIMEOUT
        self.channel = Channel(replies_r, requests_w, wait=self._wait)
        try:
            self._send(
                {
                    "type": "load",
                    "exercises": list(EXERCISES),
                    "memory": self.limits.memory,
                    "substitute": bool(self.helpers),
                }
            )
            reply = self._receive(time.monotonic() + START_TIMEOUT, name="your file")
        except StudentError as err:
            self.problem = err.message
            return
        except StudentTimeout:
            self.problem = f"Your file did not finish loading within {START_TIMEOUT:g} s."
            self._kill()
            return
        if reply.get("type") == "ready":
            self.signatures = reply["signatures"]
        else:
            self.problem = str(reply.get("problem", "Your file could not be loaded."))

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
        """End the worker; nothing it started survives."""
        self._kill()

    # -- the channel

    def _send(self, message: dict) -> None:
        try:
            self.channel.send(message)
        except OSError:
            pass  # the worker died; receiving will say how

    def _wait(self, fd: int) -> None:
        """Block until ``fd`` can be read, or raise _Deadline."""
        left = self.deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise _Deadline()

    def _receive(self, deadline: float, *, name: str) -> dict:
        self.deadline = deadline
        try:
            return self.channel.receive()
        except _Deadline:
            self._kill()
            raise StudentTimeout(f"`{name}` did not finish within {self.limits.call_timeout:g} s.") from None
        except EOFError:
            raise StudentError(self._death(name), kind="crashed") from None
        except WireError as err:
            self._kill()
            raise StudentError(f"`{name}` sent back something the grader does not accept: {err}.") from None

    def _death(self, name: str) -> str:
        """Why the worker is gone, in a student's words."""
        proc = self.proc
        code = proc.wait() if proc is not None else None
        self._kill()
        if code is None:
            return f"`{name}` stopped the worker that ran it."
        signum = -code if code < 0 else code - 128 if code > 128 else 0
        if signum == signal.SIGKILL:
            return f"`{name}` was stopped: it probably used more than {self.limits.memory / 2**30:g} GiB of memory."
        if signum:
            return f"`{name}` crashed (signal {signum}, {_signal_name(signum)})."
        return f"`{name}` exited the interpreter (exit code {code})."

    # -- calls

    def call(self, exercise: str, name: str, arguments: dict) -> dict:
        if name in self.stuck:
            raise StudentTimeout(self.stuck[name])
        if time.monotonic() - self.started > self.limits.total_timeout:
            raise StudentTimeout(
                f"Grading of your file was stopped after {self.limits.total_timeout:g} s in total."
            )
        if self.proc is None:
            self._start()  # replace a worker that was killed or died
            if self.problem:
                raise StudentError(self.problem, kind="load")
        self._send({"type": "call", "exercise": exercise, "name": name, "kwargs": arguments})
        deadline = time.monotonic() + self.limits.call_timeout
        try:
            while True:
                reply = self._receive(deadline, name=name)
                if reply.get("type") == "callback":
                    self._send(self._help(exercise, reply))
                    continue
                if reply.get("type") != "outcome":
                    self._kill()
                    raise StudentError(f"`{name}` broke the conversation with the grader.")
                return self._checked(name, reply)
        except StudentTimeout as stop:
            self.stuck[name] = stop.message + " (Not tried again on later checks.)"
            raise

    def _help(self, exercise: str, request: dict) -> dict:
        """Run the reference for a graded function the student's code called."""
        helper = request.get("name")
        if helper == exercise or helper not in self.helpers:
            return {"type": "raise", "exc": "RuntimeError", "message": f"{helper} is not available here"}
        args, kwargs = request.get("args", ()), request.get("kwargs", {})
        try:
            value = self.helpers[helper](*args, **kwargs)
        except (ValueError, TypeError) as err:
            return {"type": "raise", "exc": type(err).__name__, "message": str(err)}
        except Exception as err:  # noqa: BLE001 - bad input from the student's side
            return {"type": "raise", "exc": "ValueError", "message": f"{helper} failed: {err}"}
        return {"type": "return", "value": value}

    @staticmethod
    def _checked(name: str, reply: dict) -> dict:
        """An outcome whose value is made only of plain numeric arrays."""
        if reply.get("ok"):
            problem = worker.check_value(name, reply.get("value"))
            if problem:
                return {"ok": False, "kind": "return", "message": problem}
            mutated = reply.get("mutated", ())
            if not isinstance(mutated, tuple) or not all(isinstance(m, str) for m in mutated):
                mutated = ()
            return {"ok": True, "value": reply["value"], "mutated": mutated}
        return {
            "ok": False,
            "kind": str(reply.get("kind", "raised")),
            "message": str(reply.get("message", f"`{name}` failed.")),
            "raised": tuple(str(r) for r in reply.get("raised", ()) or ()),
        }
