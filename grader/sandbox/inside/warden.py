"""A sandbox's first process and its keepers: they start the student's processes and end them all.

Run as a script inside the sandbox (with :mod:`grader.sandbox.inside.worker` beside it). The
*warden* answers the trusted side (:class:`grader.sandbox.Warden`) over the
sandbox's control socket:

``begin``
    a new submission: end everything of the last one, then fork a *keeper*
    for the new one on the socket that came with the request;
``reset``
    end every process of the student's, the keeper included (and empty the
    work folders).

The warden never sees a submission: its source goes to the keeper, over the
keeper's own socket. So every keeper, and every process a keeper forks, is a
copy of a process that never held any student's text, and a submission can
find nothing of another one in its memory. The keeper answers the trusted side
on its socket:

``source``
    the submission's source (the first message);
``spawn``
    fork a worker (:func:`grader.sandbox.inside.worker.serve`) on the pipes and the memory that
    came with the request, all made by the trusted side, which talks to the worker directly
    and watches every call's effect on its arguments (:mod:`grader.sandbox.watching`);
``status``
    how the worker ended.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import select
import shutil
import signal
import socket
import stat
import sys
import time

import numpy as np

try:
    from .seccomp import refuse_new_tasks, refuse_system_calls
    from .worker import (
        CONFINED,
        MAX_ARGUMENTS,
        MEMORY_LIMIT,
        Channel,
        WireError,
        compile_or_problem,
        serve,
        watch,
    )
except ImportError:  # in the sandbox: the files side by side, no package
    from seccomp import refuse_new_tasks, refuse_system_calls
    from worker import (
        CONFINED,
        MAX_ARGUMENTS,
        MEMORY_LIMIT,
        Channel,
        WireError,
        compile_or_problem,
        serve,
        watch,
    )

#: Seconds the warden waits for the processes it killed to be gone.
REAP_SECONDS = 5.0
#: The machine's shared scratch folders, swept at the process level (see Warden.sweep).
SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")
#: Where the process level also looks for folders any user may write in (each folder found there
#: is swept as the ones above are): /run/lock, /var/crash, /dev/mqueue and the like.
SCRATCH_PARENTS = ("/", "/var", "/run", "/dev", "/var/lib", "/var/spool", "/var/cache")
#: The size of the pipes between a keeper and its worker (F_SETPIPE_SZ; Linux's default is 64 KiB).
PIPE_SIZE = 1 << 20
F_SETPIPE_SZ = 1031
#: What a keeper accepts as a submission's source (the trusted side sends at most 4 MiB).
MAX_SOURCE = 8 << 20


class _Control(Channel):
    """One end of a socket to the trusted side: frames, plus the descriptors that came with them."""

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

    def take_fds(self, n: int) -> list[int]:
        """The next ``n`` descriptors received (fewer if fewer came)."""
        taken, self.fds = self.fds[:n], self.fds[n:]
        return taken


def _serve_requests(channel: _Control, handlers: dict, on_end) -> None:
    """Answer requests until the trusted side closes the channel."""
    while _answer_pending(channel, handlers):
        pass
    on_end()


def _answer_pending(channel: _Control, handlers: dict) -> bool:
    """Answer the next request and every other one already received (one reply each); False
    once the trusted side has closed the channel."""
    while True:
        try:
            request = channel.receive()
        except (EOFError, WireError):
            return False
        channel.send(_handled(handlers, request))
        if not channel.buffer:
            return True


def _handled(handlers: dict, request: dict) -> dict:
    """The reply to a request; a handler that raises is a bug of the grader's, said as a
    ``fault`` (never blamed on the student)."""
    handler = handlers.get(request.get("type"))
    try:
        return handler(request) if handler else {"type": "fault", "message": "unknown request"}
    except Exception as err:  # noqa: BLE001 - a bug of the grader's: say so, never blame the student
        return {"type": "fault", "message": f"{type(err).__name__}: {err}"[:500]}


def _become_child(keep: list[int]) -> None:
    """In a fresh child: a session of its own, and no descriptor but ``keep``."""
    os.setsid()
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 16)


def inherited() -> tuple:
    """What every process this one forks inherits of its scheduling and resource limits, as it
    is now. A process of the same user may change another's from outside (the sandbox's filter
    refuses the calls that do, :mod:`grader.sandbox.inside.seccomp`; this notices any other way)."""
    readings = (
        ("nice", lambda: os.getpriority(os.PRIO_PROCESS, 0)),
        ("policy", lambda: os.sched_getscheduler(0)),
        ("priority", lambda: os.sched_getparam(0).sched_priority),
    )
    state: list = []
    for name, read in readings:
        try:
            state.append((name, read()))
        except (AttributeError, OSError):  # a system that has no such call (macOS)
            state.append((name, None))
    try:
        import resource
    except ImportError:
        return tuple(state)
    for name in sorted(n for n in dir(resource) if n.startswith("RLIMIT_")):
        try:
            state.append((name, resource.getrlimit(getattr(resource, name))))
        except (OSError, ValueError):
            state.append((name, None))
    return tuple(state)


class Warden:
    """A sandbox's first process: it starts each submission's keeper and ends all the student's
    processes.

    It never runs student code and never holds a student's source. It loads
    numpy once; each keeper is a child forked from it, so every submission
    starts from the same untouched interpreter, for the cost of a fork. It
    talks only to the trusted side, over a socket no child keeps, and it cannot
    be traced or read by its children (it is not dumpable).

    ``scope`` says how to end the student's processes: ``namespace`` (the warden
    is alone in a PID namespace with them: one ``kill(-1)`` ends every one,
    atomically, however they forked) or ``process`` (no namespace: each child
    leads a session of its own, and orphans come back to the warden, which
    kills them as they arrive).
    """

    def __init__(self, sock_fd: int, scope: str, workdir: str, sweep: bool = False):
        self.channel = _Control(socket.socket(fileno=sock_fd))
        self.scope = scope
        self.workdir = workdir
        # with no namespace but a user of its own: what that user left in the machine's shared
        # scratch folders is the student's, and goes too
        # (never as root: there everything would be "its")
        own_user = sweep and scope == "process" and os.getuid() != 0
        self.sweep = scratch_folders() if own_user else []
        self.children: set[int] = set()
        # the folders emptied at each wipe, and what the sandbox was built with in them (in
        # /tmp: the folders on the way to a Python or numpy that lives below /tmp, and their
        # read-only contents), every level of it: what the student adds at any level goes,
        # what was there stays (the student's user may own those folders: a grader run as an
        # ordinary user builds its sandbox as that user)
        self.wiped = [workdir] + (["/tmp"] if scope == "namespace" else [])
        self.built_in = {path: seen for folder in self.wiped for path, seen in _tree(folder).items()}
        # and the folders themselves (the student's user may own them too): their mode, owner
        # and extended attributes (a note, a default ACL) as they were
        self.roots = {folder: _state(folder) for folder in self.wiped}
        # what each keeper and worker inherits from this process: a reset finds it unchanged, or
        # this sandbox serves no later submission
        self.inherited = inherited()

    def run(self) -> None:
        _serve_requests(
            self.channel, {"begin": self.begin, "reset": self.reset, "alive": self.alive}, self.end_all
        )

    # -- requests

    def alive(self, request: dict) -> dict:
        """Nothing to do: that it answers is the answer (a signal sent to it before, by the
        student's code, is handled before a request is read)."""
        return {"type": "alive"}

    def begin(self, request: dict) -> dict:
        """A new submission: nothing of the last one is left, then a keeper for this one."""
        fds = self.channel.take_fds(8)
        self.end_all()
        self.wipe()
        if len(fds) != 1:
            for fd in fds:
                os.close(fd)
            return {"type": "fault", "message": "no socket for the keeper"}
        pid = os.fork()
        if pid == 0:
            try:
                _become_child(fds)
                Keeper(fds[0], self.workdir, int(request.get("memory", 0))).run()
            finally:
                os._exit(0)
        os.close(fds[0])
        self.children.add(pid)
        return {"type": "begun"}

    def reset(self, request: dict) -> dict:
        self.end_all()
        if request.get("wipe", True) and not self.wipe():  # the trusted side replaces the sandbox
            return {"type": "fault", "message": "what the student left in the sandbox could not be removed"}
        if inherited() != self.inherited:  # its priority or limits were changed from outside
            return {"type": "fault", "message": "the sandbox's scheduling or limits were changed"}
        return {"type": "clean"}

    # -- the student's processes

    def end_all(self) -> None:
        """SIGKILL every process of the student's (the keeper too) and wait until they are gone."""
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

    def wipe(self) -> bool:
        """Empty the work folder (and, in a namespace, /tmp) of anything the student left;
        whether nothing of it is left (a sandbox that cannot be emptied serves no one else)."""
        for path in self._students():
            if path is None:
                continue  # a folder that could not be looked into: not clean, said below
            try:
                if stat.S_ISDIR(os.lstat(path).st_mode):
                    _remove_tree(path)
                else:
                    os.unlink(path)
            except OSError:
                pass
        changed = any(_state(folder) != seen for folder, seen in self.roots.items())
        return not changed and not any(True for _ in self._students())

    def _students(self):
        """The path of each thing in the folders wiped that the student left there, or changed
        (None for a folder that cannot be looked into: it may hold anything)."""
        for folder in self.wiped:
            yield from _strays(folder, self.built_in)
        # what the student's user owns, there and in every folder below that is another user's
        # but open to all (/tmp/.X11-unix)
        mine = os.getuid()
        for path, seen in _walk(self.sweep, lambda seen: seen.st_uid != mine and seen.st_mode & stat.S_IWOTH):
            if seen.st_uid == mine:
                yield path


class Keeper:
    """One submission's process inside the sandbox: it holds the source and forks the worker,
    which the trusted side then talks to directly. It never runs student code either; the
    warden ends it with the rest of the submission."""

    def __init__(self, sock_fd: int, workdir: str, memory: int):
        self.channel = _Control(socket.socket(fileno=sock_fd))
        self.workdir, self.filename = workdir, ""
        self.raw, self.exercises, self.compiled = b"", (), None
        self.worker: int | None = None  # the worker's number, while it is this keeper's child
        self.ended: int | None = None  # its wait status, once collected
        self.handlers = {"source": self.source, "spawn": self.spawn, "status": self.status}
        MEMORY_LIMIT[0] = memory

    def run(self) -> None:
        """Answer the trusted side until it is gone."""
        while _answer_pending(self.channel, self.handlers):
            pass

    def source(self, request: dict) -> dict:
        """The submission: keep it, compile it (which runs nothing of it), write it as its file."""
        source = request["source"]
        if not isinstance(source, np.ndarray) or source.nbytes > MAX_SOURCE:
            return {"type": "fault", "message": "no source"}
        self.raw = source.tobytes()
        self.exercises = tuple(str(e) for e in request["exercises"])
        self.filename = os.path.join(self.workdir, os.path.basename(str(request["filename"])))
        self.compiled = compile_or_problem(self.raw, self.filename)
        try:
            with open(self.filename, "wb") as f:  # its own __file__ exists, as at home
                f.write(self.raw)
        except OSError:
            pass
        return {"type": "held"}

    def spawn(self, request: dict) -> dict:
        """Fork a worker on what came with the request: the read end of its requests, the write
        end of its answers, the read end of its answers (only to set the watch on it: see
        :func:`grader.sandbox.inside.worker.watch`) and the memory its calls' arrays are in."""
        fds = self.channel.take_fds(4)
        if len(fds) != 4:
            for fd in fds:
                os.close(fd)
            return {"type": "spawned", "problem": "no channel for the worker"}
        self._end_worker()
        requests_r, replies_w, replies_r, memory = fds
        for fd in (requests_r, replies_w):  # a large call or answer in fewer writes, so fewer freezes
            try:
                fcntl.fcntl(fd, F_SETPIPE_SZ, PIPE_SIZE)
            except OSError:
                pass
        try:
            arena = mmap.mmap(memory, MAX_ARGUMENTS)
            pid = os.fork()
        except (OSError, ValueError) as err:
            for fd in fds:
                os.close(fd)
            return {"type": "spawned", "problem": f"could not start a process ({err})"}
        if pid == 0:
            try:
                # before anything else: from its first write on, the worker is stopped at each
                watch(replies_r, os.getpid())
                _become_child([requests_r, replies_w])
                _limit_cpu(request.get("cpu"))
                CONFINED[0] = refuse_new_tasks(os.getpid())
                sys.argv = [self.filename]
                serve(Channel(requests_r, replies_w), self.raw, self.filename, arena, self.compiled)
            finally:
                os._exit(0)
        for fd in fds:
            os.close(fd)
        arena.close()  # the worker has it; nothing here reads it
        self.worker, self.ended = pid, None
        return {"type": "spawned", "pid": pid}  # the trusted side reads its clocks

    def status(self, request: dict) -> dict:
        """How the worker ended (its exit code, negative for a signal), waiting a little for it."""
        deadline = time.monotonic() + float(request.get("wait", 2.0))
        while self.worker is not None:
            if self.ended is not None:
                code = os.waitstatus_to_exitcode(self.ended)
                self._end_worker()
                return {"type": "status", "code": code}
            try:
                done, status = os.waitpid(self.worker, os.WNOHANG)
            except ChildProcessError:
                break
            if done:
                self.ended = status
                continue
            if time.monotonic() > deadline:
                return {"type": "status", "alive": True}
            time.sleep(0.01)
        return {"type": "status", "code": None}

    def _end_worker(self) -> None:
        """SIGKILL the worker and collect it, with any other child."""
        pid, self.worker = self.worker, None
        if pid is not None and self.ended is None:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (OSError, ChildProcessError):
                pass
        self.ended = None
        _reap()


def _limit_cpu(seconds) -> None:
    """A hard cap on the processor time of this process (the worker), only a backstop: the
    trusted side ends a worker long before, when it passes its limits, reading its clock from
    outside. Soft and hard alike, so the student's code cannot raise it."""
    if not isinstance(seconds, int) or seconds <= 0:
        return
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds))
    except (ImportError, ValueError, OSError):
        pass


def _reap() -> None:
    """Collect every child that has ended (never waits)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if not pid:
            return


def _xattrs(path: str) -> tuple:
    """The extended attributes of ``path`` (a link itself, not what it points at), names and
    values: ACLs among them ('()' where the system has none, or they cannot be read)."""
    if not hasattr(os, "listxattr"):
        return ()
    try:
        names = os.listxattr(path, follow_symlinks=False)
        return tuple(sorted((n, os.getxattr(path, n, follow_symlinks=False)) for n in names))
    except OSError:
        return (("unreadable", b""),)


def _state(folder: str) -> tuple:
    """What a wiped folder itself is: mode, owner, extended attributes (None: gone)."""
    try:
        seen = os.lstat(folder)
    except OSError:
        return None
    return (seen.st_mode, seen.st_uid, seen.st_gid, _xattrs(folder))


def _seen(path: str, seen: os.stat_result, device: int) -> tuple:
    """How :func:`_tree` and :func:`_strays` see one thing: device, inode, mode, and (on the
    wiped folder's own file system) its extended attributes."""
    return (seen.st_dev, seen.st_ino, seen.st_mode, _xattrs(path) if seen.st_dev == device else ())


def _tree(top: str) -> dict[str, tuple]:
    """Everything below ``top``, by path (:func:`_seen`), seen without following links and
    without entering another file system (a read-only folder bound into the sandbox is a mount
    of its own: nothing in it can change)."""
    try:
        device = os.lstat(top).st_dev
    except OSError:
        return {}
    return {
        path: _seen(path, seen, device) for path, seen in _walk([top], lambda seen: seen.st_dev == device)
    }


def _walk(tops, enter):
    """(path, lstat) of everything below the folders ``tops``, links not followed; a folder is
    entered only where ``enter(its lstat)`` says so. What cannot be read is passed over."""
    todo = list(tops)
    while todo:
        try:
            entries = list(os.scandir(todo.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                seen = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            yield entry.path, seen
            if stat.S_ISDIR(seen.st_mode) and enter(seen):
                todo.append(entry.path)


def _strays(top: str, built_in: dict[str, tuple]):
    """The path of each thing below ``top`` that is not in ``built_in`` (:func:`_tree` of the
    same folder, as the sandbox was built), or is there changed (another inode, another mode,
    other extended attributes); None for a folder of ``built_in`` that cannot be looked into.
    Mounts are not entered; what the student made is known for the student's without reading
    its attributes."""
    try:
        device = os.lstat(top).st_dev
    except OSError:
        return
    todo = [top]
    while todo:
        folder = todo.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            yield None
            continue
        for entry in entries:
            try:
                seen = entry.stat(follow_symlinks=False)
            except OSError:
                yield entry.path
                continue
            was = built_in.get(entry.path)
            if was is None or was != _seen(entry.path, seen, device):
                yield entry.path
            elif stat.S_ISDIR(seen.st_mode) and seen.st_dev == device:
                todo.append(entry.path)


def scratch_folders() -> list[str]:
    """The folders of this machine any user may write in: :data:`SCRATCH`, and every such folder
    found in :data:`SCRATCH_PARENTS` (links are not followed)."""
    found = [f for f in SCRATCH if os.path.isdir(f)]
    for parent in SCRATCH_PARENTS:
        try:
            entries = list(os.scandir(parent))
        except OSError:
            continue
        for entry in entries:
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode) and mode & stat.S_IWOTH and entry.path not in found:
                found.append(entry.path)
    return found


def _remove_tree(top: str) -> None:
    """Remove a folder the student may have locked (chmod 0) at any level: each folder is opened
    up (0700) before it is entered, reached from its parent's descriptor (a path to a deep one
    would be too long to use), and the whole is then removed through descriptors. Only the
    student's processes could change it meanwhile, and they are all ended. What cannot be
    removed (a tree too deep to walk) is left: the wipe sees it and the sandbox is replaced."""
    try:
        if stat.S_ISDIR(os.lstat(top).st_mode):
            os.chmod(top, 0o700)
        for _, dirs, _, parent in os.fwalk(top):  # top-down, links not followed
            for name in dirs:
                try:
                    if stat.S_ISDIR(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
                        os.chmod(name, 0o700, dir_fd=parent)
                except OSError:
                    pass
    except (OSError, RecursionError):
        pass
    try:
        shutil.rmtree(top, ignore_errors=True)
    except RecursionError:
        pass


def _children_of(pid: int) -> list[int]:
    """Live children of ``pid`` (empty where /proc cannot tell)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(n) for n in f.read().split()]
    except (OSError, ValueError):
        return []


def _prctl(option: int, value: int) -> None:
    try:
        import ctypes

        ctypes.CDLL(None).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


class _Output:
    """Stands in for sys.stdout and sys.stderr: counts what the student prints, keeps nothing."""

    def __init__(self):
        self.kept = 0

    def write(self, text):
        self.kept += len(text)
        return len(text)

    def flush(self):
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
    Warden(int(sys.argv[1]), sys.argv[2], sys.argv[3], sweep=sys.argv[4:5] == ["sweep"]).run()
