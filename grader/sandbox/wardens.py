"""Sandboxes for students' code, and the trusted side's hold on them.

Each submission is graded in a sandbox of its own (:meth:`Warden.begin`): a grading process
keeps one per isolation level (more only if it grades several submissions at once), and
replaces it when another submission begins. Inside runs a *warden*
(:class:`grader.sandbox.inside.warden.Warden`): a pristine Python with numpy loaded that never
holds a student's source. It forks the submission's *keeper*
(:class:`grader.sandbox.inside.warden.Keeper`), which alone receives the source and forks the
worker, which this side then talks to directly (:mod:`.watching`); a worker replaced (after a
time-out, say) is forked again from the same warden. A batch's zygote starts the next submission's sandbox as
soon as the last one is done (:func:`take_back`), so that its Python and numpy load while the
next child starts.

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
    machine's filesystem and network. Run as root, it runs as an unprivileged
    user of its own, and only when asked for by name (:func:`choose_level`).

Both get: a cap on address space, file size, open files and processes; stdin
closed; output dropped.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
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
from pathlib import Path

import numpy as np

try:  # imported here, never in a child about to drop its privileges (which could find another)
    import resource
except ImportError:  # no such module (Windows): no sandbox there, and no limit to set
    resource = None

from ..core.errors import IsolationRefused
from ..core.settings import Isolation, Settings
from .clock import WALL_FACTOR
from .inside import FILES, worker
from .inside.worker import Channel, WireError, encode

#: Largest file a worker may write.
FILE_SIZE_LIMIT = 16 << 20
#: Bytes a worker may write in its folder and in /tmp (each in memory, namespaces only).
WORK_SPACE = 64 << 20
#: Files and folders a worker may make in its folder, and again in /tmp (namespaces, run as root).
#: Each costs the kernel about a kilobyte that no byte count sees: left at the kernel's default
#: (half the machine's pages), at a few microseconds an empty file, one submission's processor
#: time could hold gigabytes of the memory every other grading needs. (Run by an ordinary user,
#: bubblewrap runs the sandbox in a user namespace of its own that may not remount them: there
#: the kernel's default stays.)
WORK_FILES = 4096
#: Seconds to start a worker and load the student's file.
START_TIMEOUT = 10.0
#: Seconds the warden may take to end the student's processes or say how one ended.
WARDEN_TIMEOUT = 10.0
#: A wall-clock guard on what waits for a warden to start (bubblewrap, Python, numpy's import:
#: seconds of its own on a loaded machine), as on a worker's start: never a student's limit.
STARTING_GUARD = WALL_FACTOR * START_TIMEOUT


@functools.cache
def best_level() -> Isolation:
    """The strongest isolation this machine offers."""
    if not level_problem(Isolation.NAMESPACES) and _probe().passed():
        return Isolation.NAMESPACES
    # a root grader that cannot change user is refused by choose_level, never given ``none``
    return Isolation.NONE if processes_missing() else Isolation.PROCESS


#: Seconds the probe of bubblewrap may take (it runs /bin/true: a few milliseconds).
PROBE_SECONDS = 30


class _Probe:
    """bubblewrap started on ``/bin/true``, in a folder of its own: whether it runs here is read
    once it has, by :func:`best_level` (:func:`head_start` starts it while the grader loads)."""

    def __init__(self) -> None:
        self.folder = tempfile.TemporaryDirectory(prefix="grader-probe-")
        try:
            self.proc = subprocess.Popen(
                _bwrap_prefix(Path(self.folder.name)) + ["/bin/true"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except BaseException:
            self.folder.cleanup()
            raise
        self.result: bool | None = None
        self.timed_out: subprocess.TimeoutExpired | None = None  # raised again, never waited again

    def passed(self) -> bool:
        """Whether it ran, waited for (within :data:`PROBE_SECONDS`) and its folder removed. One that did not
        end in time raises TimeoutExpired, now and at every later call, without waiting again:
        killed, its child (waiting for it for ever) may still hold its pipes."""
        if self.timed_out is not None:
            raise self.timed_out
        if self.result is None:
            with self.folder:
                try:
                    self.proc.communicate(timeout=PROBE_SECONDS)
                except subprocess.TimeoutExpired as late:
                    self.proc.kill()
                    self.proc.wait()
                    for pipe in (self.proc.stdout, self.proc.stderr):
                        with contextlib.suppress(OSError):
                            pipe.close()
                    self.timed_out = late
                    raise
            self.result = self.proc.returncode == 0
        return self.result

    def end(self) -> None:
        """Wait for it if no one has (the run ended before its level was decided), and remove
        its folder. Never killed here: bubblewrap killed while it sets the sandbox up leaves its
        child waiting for it, for ever, holding the probe's pipes (only :meth:`passed` kills one
        that took too long, and then this waits no more)."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.passed()


@functools.cache
def _probe() -> _Probe:
    """This process's probe of bubblewrap, started on the first call."""
    return _Probe()


def level_problem(level: Isolation) -> str:
    """Why ``level`` cannot run on this system, in one line ('' where it can).

    ``namespaces`` needs Linux and bubblewrap; ``process`` needs a POSIX system with
    processes forked and limited and descriptors passed over sockets (Linux, macOS), and,
    for a grader run as root, a way to run the student's code as another user (Linux's
    ``setresuid`` and ``setpriv``); ``none`` runs everywhere. The checks look for the
    pieces themselves, not for the system's name.
    """
    if level not in (Isolation.NAMESPACES, Isolation.PROCESS):
        return ""
    missing = processes_missing()
    if missing:
        return (
            f"the {level.value} level needs {'Linux' if level is Isolation.NAMESPACES else 'Linux or macOS'} "
            f"({missing} is missing here); on this system only --isolation none runs: the student's "
            "code inside the grader, for checking one's own work, never for grades of code you do not trust"
        )
    if level is Isolation.NAMESPACES:
        if not sys.platform.startswith("linux"):
            return "the namespaces level needs Linux with bubblewrap; on this system use --isolation process"
        if not shutil.which("bwrap"):
            return (
                "the namespaces level needs bubblewrap (apt-get install bubblewrap), which is not installed"
            )
    if level is Isolation.PROCESS and os.geteuid() == 0 and not _can_change_user():
        return (
            "the process level as root must run the student's code as another user, which this "
            "system does not allow the grader (it needs setresuid and setpriv, from Linux): "
            "run the grader as an ordinary user"
        )
    return ""


def processes_missing() -> str:
    """The first piece the sandboxes need that this Python lacks ('' if none is missing)."""
    for module, names in ((os, ("fork", "killpg", "setsid")), (socket, ("send_fds", "recv_fds"))):
        for name in names:
            if not hasattr(module, name):
                return f"{module.__name__}.{name}"
    for module in ("resource", "fcntl"):
        try:
            __import__(module)
        except ImportError:
            return f"the module {module}"
    return ""


def _can_change_user() -> bool:
    return all(hasattr(os, name) for name in ("setresuid", "setresgid", "getresuid")) and bool(
        shutil.which("setpriv")
    )


def settle(settings: Settings, private: tuple[Path, ...]) -> Settings:
    """``settings`` with the level to grade at decided from what was asked for
    (:func:`choose_level`; IsolationRefused where it may not run); settings already settled come
    back as they are. Every part of a run reads its level through here: it is decided once, by
    the first, and never again."""
    if settings.level is not None:
        return settings
    try:
        level = choose_level(settings.isolation, private)
    except IsolationRefused:
        _end_head_starts(keep=None)
        raise
    _end_head_starts(keep=(level.value, settings.limits.memory))
    return dataclasses.replace(settings, level=level)


def choose_level(requested: Isolation, private: tuple[Path, ...]) -> Isolation:
    """The isolation level to grade at, for ``requested`` (``auto`` or a level); refused
    (IsolationRefused) where it would let the student's code act as root or read the course.

    ``auto`` takes the best level the machine offers but never falls back to ``process`` for
    a grader running as root: that must be asked for by name. At ``process`` level as root,
    the student's code runs as an unprivileged user, and the reference and hidden checks
    (``private``, the lesson's) must be unreadable to such a user (checked before grading)."""
    requested = Isolation(requested)
    level = Isolation(best_level() if requested is Isolation.AUTO else requested)
    problem = level_problem(level)
    if problem:
        raise IsolationRefused(problem)
    if requested is Isolation.AUTO and level is Isolation.NONE:
        _warn_once(
            "no sandbox can run on this system: the student's code runs inside the grader (fine for "
            "checking your own work; grade code you do not trust on Linux or macOS)"
        )
    if requested is Isolation.AUTO and level is Isolation.PROCESS:
        if os.geteuid() == 0:
            raise IsolationRefused(
                "bubblewrap cannot run here, and grading as root without it is refused unless asked "
                "for: pass --isolation process (the student's code then runs as an unprivileged user; "
                "make the course unreadable to other users first: chmod -R go-rwx COURSE)"
            )
        _warn_once(
            "bubblewrap cannot run here: grading at the process level, where the student's code "
            "can read what you can read and use the network"
        )
    if level is Isolation.PROCESS and os.geteuid() == 0:
        readable = [p for p in private if p.exists() and _readable_by_others(p)]
        if readable:
            raise IsolationRefused(
                f"at the process level the student's code could read {readable[0]}; make the "
                f"course unreadable to other users first (chmod -R go-rwx {readable[0].parent})"
            )
    return level


@functools.cache
def _warn_once(message: str) -> None:
    print(f"grader: {message}", file=sys.stderr)


def _readable_by_others(path: Path) -> bool:
    """Whether a user who is neither the owner nor in the group can reach ``path`` and read it
    (or, for a folder, list or enter it)."""
    path = path.resolve()
    for folder in _ancestors(path):
        if not folder.stat().st_mode & 0o001:
            return False
    mode = path.stat().st_mode
    return bool(mode & (0o005 if path.is_dir() else 0o004))


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
#: Run as root, the sandbox's first process (which bubblewrap leaves root's rights): its two
#: writable folders get their cap on files, then setpriv (the arguments) drops every right and
#: becomes the sandbox's user. A folder that cannot be capped starts no sandbox.
_CAPPED_FILES = (
    f"mount -o remount,nosuid,nodev,nr_inodes={WORK_FILES} /tmp && "
    f"mount -o remount,nosuid,nodev,nr_inodes={WORK_FILES} {WORK} && "
    'exec "$@"'
)


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
    # the warden is the sandbox's first process, not bubblewrap's own: a process of the sandbox's
    # user that no kill(-1) reaches would outlive every submission (run as an ordinary user,
    # bubblewrap's is the student's user, and a student's code could trace it and run in it)
    args.append("--as-pid-1")
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
    # the file system's own folders (its root, the folders made on the way to each bind, /dev)
    # live in memory too, and as an ordinary user bubblewrap makes them that user's, which is the
    # student's: read-only, as the rest, so that only the work folder and /tmp can be written
    args += ["--remount-ro", "/dev", "--remount-ro", "/"]
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
    """Resource limits and the file-creation mask, applied in the child before it executes
    anything."""

    def apply():
        os.umask(worker.UMASK)
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
    """The warden stopped answering (it was killed, or it took too long); it is gone now.
    ``started``: it had answered once since it was launched (False: the sandbox never started)."""

    def __init__(self, message: str = "", *, started: bool = True):
        super().__init__(message)
        self.started = started


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
        self.pending = 0  # replies owed for requests posted to the warden
        self.boots = 0  # sandboxes started so far
        self.busy = False
        # the keeper of the submission being graded: its socket, the replies it owes, and the
        # session whose submission it holds (None: no keeper; the next submission needs one)
        self.keeper: Channel | None = None
        self.keeper_sock: socket.socket | None = None
        self.keeper_pending = 0
        self.holder: object | None = None
        self.uid: int | None = None  # the user the sandbox runs as, when it is not this process's
        self.owner: int | None = None  # the process that started the sandbox (its parent)
        self.heard = False  # the warden answered since it was launched: the sandbox started
        # whose submission began last in this sandbox (None: it is new): a sandbox serves one
        # submission (:meth:`begin`)
        self.last_holder: object | None = None

    def _launch(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="grader-"))
        code, work = self.folder / "code", self.folder / "work"
        code.mkdir()
        work.mkdir()
        for name in FILES:  # warden and seccomp are never imported on this side
            shutil.copyfile(Path(worker.__file__).with_name(name), code / name)
            # readable by the sandbox's own user whatever this process's umask (077 made them
            # root's alone: the sandbox died at its start, and every file scored 0)
            os.chmod(code / name, 0o644)
        for path in (code, self.folder):
            os.chmod(path, 0o755)
        ours, theirs = socket.socketpair()
        keep = [theirs.fileno()]
        if self.level == "namespaces":
            inside_code, inside_work = CODE, WORK
        elif os.path.isdir("/proc/self/fd"):  # the way to this folder may be closed to the
            # unprivileged user the warden runs as (a private TMPDIR), the folders themselves are
            # not: the code is reached through a descriptor opened here, the work folder is the
            # warden's working directory
            code_fd = os.open(code, os.O_RDONLY | os.O_DIRECTORY)
            keep.append(code_fd)
            inside_code, inside_work = f"/proc/self/fd/{code_fd}", os.curdir
        else:  # no /proc (macOS): the warden runs as this user (level_problem), who can reach it
            inside_code, inside_work = str(code), os.curdir
        site = str(Path(np.__file__).resolve().parent.parent)
        scope = "namespace" if self.level == "namespaces" else "process"
        # at the process level as root, the warden also sweeps the machine's shared scratch
        # folders of what its user (the student's) left there
        sweep = "sweep" if self.level == "process" and os.geteuid() == 0 else ""
        # numpy's folder comes after the standard library: nothing found there can stand in for
        # a module of it
        # Python is not started isolated (-I): it would ignore PYTHONHASHSEED, and a file whose
        # result depends on the order of a set of strings would score differently on each run.
        # The environment is the grader's own (_environment): no other PYTHON variable is set.
        # What -I also did is done here: no user site (-s), and the working folder (the
        # student's, '' for -c) taken off the path before anything is imported.
        bootstrap = (
            "import sys; sys.path[:] = [p for p in sys.path if p]; "
            f"sys.path[:0] = [{inside_code!r}]; sys.path.append({site!r}); "
            f"sys.argv = ['warden', '{theirs.fileno()}', '{scope}', {inside_work!r}, {sweep!r}]; "
            f"import runpy; runpy.run_path({inside_code + '/warden.py'!r}, run_name='__main__')"
        )
        command = [os.path.realpath(sys.executable), "-s", "-S", "-c", bootstrap]
        if os.geteuid() == 0:  # never the student's code as root: a user of this grading process's own
            self.uid = uid = worker_uid()
            if self.level == "process":
                _end_user(uid)  # nothing an earlier sandbox of this user left behind lives on
            os.chown(work, uid, uid)
            command = [
                "setpriv",
                f"--reuid={uid}",
                f"--regid={uid}",
                "--clear-groups",
                "--no-new-privs",
                "--bounding-set=-all",
                "--inh-caps=-all",
                *command,
            ]
        if self.level == "namespaces":
            if os.geteuid() == 0:
                command = ["/bin/sh", "-c", _CAPPED_FILES, "capped-files", *command]
            command = _bwrap_prefix(code) + ["--"] + command
        try:
            self.proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd=work,
                env=_environment(inside_work),
                pass_fds=tuple(keep),
                start_new_session=True,
                preexec_fn=_limit(self.memory),
            )
        finally:
            theirs.close()
            for fd in keep[1:]:
                os.close(fd)
        ours.setblocking(False)
        self.sock = ours
        self.channel = Channel(ours.fileno(), ours.fileno(), wait=self._wait)
        self.pending = 0
        self.heard = False
        self.boots += 1
        self.owner = os.getpid()
        self.last_holder = None
        self._drop_keeper()

    # -- requests

    def begin(self, holder: object, source: bytes, lesson, memory: int) -> None:
        """Post: start a keeper for ``holder``'s submission.

        The warden only forks the keeper; the source goes to the keeper alone, over a socket
        of its own, so the process every submission is forked from never holds a student's text.
        A sandbox serves one submission: another submission than the last one to begin here
        begins in a new sandbox (this one is killed, the next request starts one). A wipe
        cannot give the next student what a new sandbox gives: a heap of the warden's that
        the last student's files did not grow (every keeper and worker is forked from it, under
        the same limit of memory), file numbers in ``/tmp`` and the work folder and process
        numbers that start again, and a ``/dev/null`` whose flags no one changed: each of those
        would tell the next student something of the last. The same submission beginning again
        (its worker replaced) keeps its sandbox and its files.
        """
        if self.proc is not None and self.last_holder is not None and self.last_holder is not holder:
            self.kill()
        self._drop_keeper()
        if self.proc is not None and self.owner == os.getpid() and self.proc.poll() is not None:
            self.kill()  # it died between submissions: a new one, and nobody is blamed
        # (a process forked from the sandbox's parent (:func:`take_back`) cannot wait for it: it
        # learns that it is gone from its socket, and the parent replaces it after)
        ours, theirs = socket.socketpair()
        try:
            self.post({"type": "begin", "memory": memory}, fds=(theirs.fileno(),))
        finally:
            theirs.close()
        ours.setblocking(False)
        self.keeper_sock, self.holder = ours, holder
        self.keeper = Channel(ours.fileno(), ours.fileno(), wait=self._wait)
        # a source larger than the socket's buffer is written only as the keeper reads it, and
        # the keeper reads once a warden just launched has started and forked it: the start's
        # guard, or a long file on a busy machine would be blamed for the warden's slow start
        self.post(
            {
                "type": "source",
                "source": np.frombuffer(source, dtype=np.uint8),
                "exercises": list(lesson.exercises),
                "filename": lesson.filename,
            },
            keeper=True,
            seconds=STARTING_GUARD,
        )
        self.last_holder = holder

    def post(
        self,
        message: dict,
        fds: tuple[int, ...] = (),
        *,
        keeper: bool = False,
        seconds: float = WARDEN_TIMEOUT,
    ) -> None:
        """Send a request to the warden (or, with ``keeper``, to the submission's keeper), within
        ``seconds`` of the wall clock; its reply is read by :meth:`collect`."""
        if keeper:
            if self.keeper is None:
                raise WardenFault("a request for a keeper, but no submission has begun")
            sock, channel = self.keeper_sock, self.keeper
        else:
            if self.proc is None:
                self._launch()
            sock, channel = self.sock, self.channel
        self.deadline = time.monotonic() + seconds
        try:
            if fds:
                frame = encode(message)
                sent = self._send_fds(sock, frame, fds)
                if sent < len(frame):
                    self._write(sock, frame[sent:])
            else:
                channel.send(message, wait_writable=self._wait_writable)
        except (Deadline, OSError) as err:
            started = self.heard
            self.kill()
            raise WardenLost(str(err), started=started) from None
        if keeper:
            self.keeper_pending += 1
        else:
            self.pending += 1

    def collect(self, deadline: float) -> list[dict]:
        """The replies owed, the warden's first, then the keeper's, each in order."""
        replies = []
        self.deadline = deadline
        try:
            while self.pending:
                replies.append(self.channel.receive())
                self.pending -= 1
                self.heard = True
            while self.keeper_pending:
                replies.append(self.keeper.receive())
                self.keeper_pending -= 1
        except (Deadline, EOFError, WireError, OSError) as err:
            started = self.heard
            self.kill()
            raise WardenLost(type(err).__name__, started=started) from None
        faults = [r for r in replies if r.get("type") == "fault"]
        if faults:
            self.kill()
            raise WardenFault(f"the sandbox's warden failed: {str(faults[0].get('message'))[:500]}")
        return replies

    def request(self, message: dict, seconds: float = WARDEN_TIMEOUT, *, keeper: bool = False) -> dict:
        """Send a request and return its reply; replies still owed for posted requests are read
        (and checked for faults) on the way, within the same ``seconds``."""
        self.post(message, keeper=keeper)
        return self.collect(time.monotonic() + seconds)[-1]

    def reset(self, *, wipe: bool = True) -> None:
        """End every process of the student's, the keeper included (and their files, with
        ``wipe``); a sandbox that is already gone needs nothing, and one that does not answer
        is killed."""
        if self.proc is None:
            return
        try:
            self.request({"type": "reset", "wipe": wipe})
        except (WardenLost, WardenFault):
            self.kill()  # whatever it held goes with it (or it was changed from inside)
        self._drop_keeper()
        if self._unconfined() and _strays(self.uid, self.proc.pid if self.proc else -1):
            self.kill()  # a process of the student's escaped the warden (it may have killed it)

    def _unconfined(self) -> bool:
        """Whether the student's processes run outside a PID namespace, as a user of their own:
        then the warden alone cannot vouch that all of them are gone."""
        return self.level == "process" and self.uid is not None

    def _drop_keeper(self) -> None:
        """Forget the keeper (the warden ends it, or has): the next submission needs a new one."""
        if self.keeper_sock is not None:
            self.keeper_sock.close()
        self.keeper = self.keeper_sock = self.holder = None
        self.keeper_pending = 0

    def _send_fds(self, sock: socket.socket, frame: bytes, fds: tuple[int, ...]) -> int:
        """Send the start of ``frame`` with ``fds``, once the socket has room: the bytes sent.

        The keeper may still be reading a long source (a busy machine keeps it waiting): a full
        socket is waited on, within the request's guard, never taken for a dead sandbox."""
        while True:
            self._wait_writable(sock.fileno())
            try:
                return socket.send_fds(sock, [frame], list(fds))
            except BlockingIOError:
                continue

    def _write(self, sock: socket.socket, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(sock.fileno(), view) :]
            except BlockingIOError:
                self._wait_writable(sock.fileno())

    def take_back(self, *, clean: bool) -> None:
        """After a process forked from this one used the sandbox (for one submission) and ended:
        the sandbox is that submission's, so it is killed; with ``clean`` (the forked process
        ended as it should: more are likely to come), a new one is started at once, whose
        Python and numpy load while the next forked process starts."""
        self.kill()
        if clean:
            try:
                self._launch()
            except OSError:
                self.kill()  # the next request starts one, and says why if it cannot

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
        if self._unconfined():
            _end_user(self.uid)  # the sandbox's processes that left the warden's group, too
        self._drop_keeper()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
        self.pending = 0

    def close(self) -> None:
        """End the sandbox: first politely (the warden ends the student's processes), then for sure."""
        if self.level == "process":
            self.reset()
        self.kill()


def _end_user(uid: int) -> None:
    """SIGKILL every process of ``uid`` (an unprivileged user; this process is root): one
    ``kill(-1)`` made as that user, which reaches all its processes and which no fork can race."""
    if uid == 0 or os.geteuid() != 0:
        return
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            if os.getresuid() == (uid, uid, uid):  # never as anyone else
                os.kill(-1, signal.SIGKILL)
        except BaseException:  # noqa: BLE001 - the child only ever exits
            pass
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def _strays(uid: int, warden: int) -> bool:
    """Whether a live process of ``uid`` other than ``warden`` exists (Linux; False elsewhere)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return False
    for entry in entries:
        if not entry.isdigit() or int(entry) == warden:
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                status = f.read()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("State", "").split()[:1] != ["Z"] and fields.get("Uid", "").split()[:1] == [str(uid)]:
            return True
    return False


_WARDENS: list[Warden] = []
#: The sandboxes :func:`head_start` started that no level was settled for yet.
_HEAD_STARTS: list[Warden] = []


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


def warm(level: str, memory: int) -> None:
    """Start a sandbox of ``level`` now, before any submission: the next process forked from
    this one (:func:`take_back`) finds it running, its Python and numpy loaded. One started
    already (by :func:`take_back`) is left to finish starting."""
    warden = acquire(level, memory)
    try:
        if warden.proc is None:
            warden.request({"type": "reset", "wipe": True})  # starts it, and waits until it answers
    finally:
        release(warden)


def head_start(settings: Settings) -> None:
    """Start the sandbox a run of ``settings`` is likely to grade its one submission in, now,
    without waiting: its bubblewrap, Python and numpy load on another core while the grader
    loads its engine and the checks. Nothing is decided or said here: the level is settled as
    ever (:func:`settle`), where a sandbox started for another level or memory is ended, never
    used; one of the same level and memory is the run's first (:func:`acquire`), as new as one
    started when needed. Where the level may be refused or warned about (no bubblewrap, the
    process level as root), none is started."""
    level = _likely_level(settings)
    if level is None:
        return
    warden = acquire(level.value, settings.limits.memory)
    try:
        if warden.proc is None:
            warden._launch()
    except OSError:
        warden.kill()  # the sandbox's first request starts one, and says why if it cannot
    finally:
        release(warden)
    if warden not in _HEAD_STARTS:
        _HEAD_STARTS.append(warden)


def _likely_level(settings: Settings) -> Isolation | None:
    """The level :func:`choose_level` is about to give ``settings`` (None: no sandbox, or one
    it might refuse or warn about): for ``auto``, namespaces where bubblewrap is installed,
    whose probe (:func:`best_level`) is started alongside."""
    if settings.level is not None:
        return settings.level if settings.level in (Isolation.NAMESPACES, Isolation.PROCESS) else None
    requested = Isolation(settings.isolation)
    if requested is Isolation.AUTO and not level_problem(Isolation.NAMESPACES):
        try:
            _probe()
        except OSError:
            return None  # best_level starts it again, where it did, and fails as it did
        return Isolation.NAMESPACES
    if requested is Isolation.NAMESPACES and not level_problem(requested):
        return requested
    if requested is Isolation.PROCESS and not level_problem(requested) and os.geteuid() != 0:
        return requested
    return None


def _end_head_starts(*, keep: tuple[str, int] | None) -> None:
    """End each sandbox :func:`head_start` started but for the level and memory ``keep`` (the
    run's, once settled; None: the run was refused, and grades nothing)."""
    for warden in _HEAD_STARTS:
        if (warden.level, warden.memory) != keep:
            warden.kill()
            _WARDENS.remove(warden)
    _HEAD_STARTS.clear()


def take_back(*, clean: bool) -> None:
    """The sandboxes of this process, after a process forked from it (which used them for one
    submission, one at a time) has ended: each is that submission's and is killed, and, if the
    forked process ended as it should (``clean``), a new one started in its place
    (:meth:`Warden.take_back`). A process killed in the middle of a request leaves its socket
    where no one can tell: then the next :func:`warm` starts the new one."""
    for warden in _WARDENS:
        warden.busy = False
        warden.take_back(clean=clean)


@atexit.register
def close_all() -> None:
    """End every sandbox of this process (and the probe of bubblewrap, if it was started)."""
    for warden in _WARDENS:
        warden.close()
    if _probe.cache_info().currsize:
        _probe().end()
