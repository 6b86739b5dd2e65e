"""Sandboxes for students' code, and the trusted side's hold on them.

Each grading process keeps one sandbox per isolation level (more only if it
grades several submissions at once). Inside runs a *warden*
(:class:`grader.worker.Warden`): a pristine Python with numpy loaded that forks
a worker for each submission and a child for each audited call, and ends every
process of the student's between submissions. Loading Python and numpy happens
once per grading process instead of once per submission.

Isolation levels, best first:

``namespaces``
    bubblewrap: no network, private PID/IPC/UTS namespaces, a filesystem that
    holds only the Python interpreter, numpy and an in-memory work folder
    (read-only except that folder and /tmp); as root, a user id of this grading
    process's own, with no capabilities. Ending the student's processes is
    one ``kill(-1)`` in the PID namespace: nothing escapes it.
``process``
    a plain process tree (no bubblewrap here): the same resource limits, a
    temporary working folder and a minimal environment, but it shares the
    machine's filesystem and network.

Both get: a cap on address space, file size, open files and processes; stdin
closed; output dropped.
"""

from __future__ import annotations

import atexit
import functools
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import worker
from .submission import DEFAULT_CALL_TIMEOUT
from .worker import Channel, WireError, encode

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
#: Seconds the warden may take to end the student's processes or say how one ended.
WARDEN_TIMEOUT = 10.0

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
            probe = subprocess.run(
                _bwrap_prefix(Path(tmp)) + ["/bin/true"], capture_output=True, timeout=30, check=False
            )
        if probe.returncode == 0:
            return "namespaces"
    return "process" if os.name == "posix" else "none"


def worker_uid() -> int:
    """An unprivileged user id of this grading process's own.

    Sandboxes of different grading processes get different ids, so a fork bomb
    in one exhausts its own process limit, not its neighbours'.
    """
    return 100_000 + os.getpid() % 60_000


def _ancestors(path: Path) -> list[Path]:
    return [p for p in reversed(path.parents) if str(p) != "/"]


#: Where the sandbox sees the warden's and the worker's code (read-only), and its work folder.
CODE, WORK = "/grader", "/sandbox"


def _bwrap_prefix(code: Path) -> list[str]:
    """bubblewrap options: read-only system, Python and ``code``, writable work folder and /tmp
    in memory, nothing else."""
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
    args += ["--perms", "0777", "--size", size, "--tmpfs", WORK]
    args += ["--ro-bind", str(code), CODE]
    args += ["--chdir", WORK, "--proc", "/proc", "--dev", "/dev"]
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


class Deadline(Exception):
    """A channel could not be read or written before its deadline."""


class Deadlined:
    """A ``deadline`` (on time.monotonic's clock) and the Channel hooks that wait until it."""

    deadline = 0.0

    def _wait(self, fd: int) -> None:
        """Block until ``fd`` can be read, or raise Deadline."""
        left = self.deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise Deadline()

    def _wait_writable(self, fd: int) -> None:
        """Block until ``fd`` can be written, or raise Deadline."""
        left = self.deadline - time.monotonic()
        if left <= 0 or not select.select([], [fd], [], left)[1]:
            raise Deadline()


class WardenLost(Exception):
    """The warden stopped answering (it was killed, or it took too long); it is gone now."""


class WardenFault(RuntimeError):
    """The warden failed to carry out a request: a bug of the grader's, not the student's.
    The sandbox is ended; the next request starts a new one."""


class Warden(Deadlined):
    """The trusted side's hold on one sandbox and the warden inside it.

    Requests are posted (sent now, answered later, in order) or made (sent
    and answered). Any failure kills the whole sandbox and raises WardenLost;
    the next request starts a new one.
    """

    def __init__(self, level: str, memory: int):
        if level not in ("namespaces", "process"):
            raise ValueError(f"unknown isolation level {level!r}")
        self.level, self.memory = level, memory
        self.proc: subprocess.Popen | None = None
        self.folder: Path | None = None  # on the host: code/ (the sandbox's code) and work/
        self.pending = 0  # replies owed for posted requests
        self.boots = 0  # sandboxes started so far: a session notices when its warden is new
        self.busy = False

    def _launch(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="grader-"))
        code, work = self.folder / "code", self.folder / "work"
        code.mkdir()
        work.mkdir()
        for name in ("worker.py", "warden.py"):  # the warden is never imported on this side
            shutil.copyfile(Path(worker.__file__).with_name(name), code / name)
        for path in (code, self.folder):
            os.chmod(path, 0o755)
        if self.level == "namespaces":
            inside_code, inside_work = CODE, WORK
        else:
            inside_code, inside_work = str(code), str(work)
        ours, theirs = socket.socketpair()
        site = str(Path(np.__file__).resolve().parent.parent)
        scope = "namespace" if self.level == "namespaces" else "process"
        bootstrap = (
            f"import sys; sys.path[:0] = [{inside_code!r}, {site!r}]; "
            f"sys.argv = ['warden', '{theirs.fileno()}', '{scope}', {inside_work!r}]; "
            f"import runpy; runpy.run_path({inside_code + '/warden.py'!r}, run_name='__main__')"
        )
        command = [os.path.realpath(sys.executable), "-I", "-S", "-c", bootstrap]
        if self.level == "namespaces":
            drop = []
            if os.geteuid() == 0:
                uid = worker_uid()
                drop = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs"]
                drop += ["--bounding-set=-all", "--inh-caps=-all"]
            command = _bwrap_prefix(code) + ["--"] + drop + command
        try:
            self.proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd=work,
                env=_environment(inside_work),
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
                preexec_fn=_limit(self.memory),
            )
        finally:
            theirs.close()
        ours.setblocking(False)
        self.sock = ours
        self.channel = Channel(ours.fileno(), ours.fileno(), wait=self._wait)
        self.pending = 0
        self.boots += 1

    # -- requests

    def post(self, message: dict, fds: tuple[int, ...] = ()) -> None:
        """Send a request; its reply is read by :meth:`collect`."""
        if self.proc is None:
            self._launch()
        self.deadline = time.monotonic() + WARDEN_TIMEOUT
        try:
            if fds:
                frame = encode(message)
                sent = socket.send_fds(self.sock, [frame], list(fds))
                if sent < len(frame):
                    self._write(frame[sent:])
            else:
                self.channel.send(message, wait_writable=self._wait_writable)
        except (Deadline, OSError) as err:
            self.kill()
            raise WardenLost(str(err)) from None
        self.pending += 1

    def collect(self, deadline: float) -> list[dict]:
        """The replies owed, in order."""
        replies = []
        self.deadline = deadline
        try:
            while self.pending:
                replies.append(self.channel.receive())
                self.pending -= 1
        except (Deadline, EOFError, WireError, OSError) as err:
            self.kill()
            raise WardenLost(type(err).__name__) from None
        faults = [r for r in replies if r.get("type") == "fault"]
        if faults:
            self.kill()
            raise WardenFault(f"the sandbox's warden failed: {faults[0].get('message')}")
        return replies

    def request(self, message: dict, seconds: float = WARDEN_TIMEOUT) -> dict:
        """Send a request and return its reply; replies still owed for posted requests are read
        (and checked for faults) on the way, within the same ``seconds``."""
        self.post(message)
        return self.collect(time.monotonic() + seconds)[-1]

    def reset(self, *, wipe: bool = True) -> None:
        """End every process of the student's (and their files, with ``wipe``); a sandbox that
        is already gone needs nothing, and one that does not answer is killed."""
        if self.proc is None:
            return
        try:
            self.request({"type": "reset", "wipe": wipe})
        except (WardenLost, WardenFault):
            self.kill()  # whatever it held goes with it

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.sock.fileno(), view) :]
            except BlockingIOError:
                self._wait_writable(self.sock.fileno())

    # -- the end

    def kill(self) -> None:
        """SIGKILL the sandbox; in a namespace, everything in it goes along."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait()
            self.proc = None
            self.sock.close()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
        self.pending = 0

    def close(self) -> None:
        """End the sandbox: first politely (the warden ends the student's processes), then for sure."""
        if self.level == "process":
            self.reset()
        self.kill()


_WARDENS: list[Warden] = []


def acquire(level: str, memory: int) -> Warden:
    """A warden of this process that no submission is using (a new one if needed)."""
    for warden in _WARDENS:
        if not warden.busy and warden.level == level and warden.memory == memory:
            break
    else:
        warden = Warden(level, memory)
        _WARDENS.append(warden)
    warden.busy = True
    return warden


def release(warden: Warden) -> None:
    warden.busy = False


@atexit.register
def close_all() -> None:
    """End every sandbox of this process."""
    for warden in _WARDENS:
        warden.close()
