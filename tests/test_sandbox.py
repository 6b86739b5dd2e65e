"""What a sandboxed worker can and cannot do, seen from inside.

Each probe is a submission of the toy lesson (the sandbox is the grader's, not
a lesson's) whose center_tokens raises an exception carrying what it observed;
the grader quotes the message back in the feedback, which is how the
observation reaches the test.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from grader.core.settings import STORE_VARIABLE
from grader.sandbox.wardens import WORK_FILES, best_level

from .support import ON_TOY, ROOT, TOY, python

pytestmark = pytest.mark.skipif(best_level() != "namespaces", reason="bubblewrap is not usable here")

PROBE = """
import os, sys, json, socket, resource


def center_tokens(x):
    seen = {{}}
{body}
    raise RuntimeError("PROBE" + json.dumps(seen) + "END")
"""


def observe(tmp_path, body: str) -> dict:
    """Run ``body`` inside center_tokens in the sandbox; return its ``seen`` dict."""
    source = TOY.solution.read_text() + PROBE.format(body=textwrap.indent(textwrap.dedent(body), "    "))
    (tmp_path / TOY.filename).write_text(source)
    done = python(
        "grade", str(tmp_path), *ON_TOY, "--format", "json", "--only", "center_tokens", "--max-examples", "1"
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["isolation"] == "namespaces"
    text = next(t["feedback"] for t in report["tests"] if "PROBE" in t["feedback"])
    return json.loads(text[text.rindex("PROBE") + 5 : text.rindex("END")])


def test_the_worker_is_an_unprivileged_user_without_capabilities(tmp_path):
    seen = observe(
        tmp_path,
        """
        seen["uid"] = os.getuid(); seen["gid"] = os.getgid()
        status = open("/proc/self/status").read()
        seen["caps"] = [status.split(f"Cap{kind}:")[1].split()[0] for kind in ("Eff", "Prm", "Inh", "Amb")]
    """,
    )
    if os.geteuid() == 0:
        assert seen["uid"] == seen["gid"] >= 100_000  # a user of its own, not root, not shared
    assert [int(caps, 16) for caps in seen["caps"]] == [0, 0, 0, 0]


def test_the_repository_and_the_host_are_out_of_sight(tmp_path):
    seen = observe(
        tmp_path,
        f"""
        root = {str(ROOT)!r}
        seen["repo"] = sorted(os.listdir(root)) if os.path.isdir(root) else []
        seen["solution"] = os.path.exists({str(TOY.solution)!r})
        seen["root"] = sorted(os.listdir("/"))
        seen["home"] = os.path.exists("/root/.ssh") or os.path.exists("/home")
    """,
    )
    # numpy may live in a virtual environment inside the repository: only the folders on the
    # way to it exist there, empty but for that path
    numpy_dir = Path(np.__file__).resolve()
    on_the_way = {numpy_dir.relative_to(ROOT).parts[0]} if ROOT in numpy_dir.parents else set()
    assert set(seen["repo"]) <= on_the_way
    assert not seen["solution"] and not seen["home"]
    assert "etc" not in seen["root"]


def test_only_its_own_folder_is_writable(tmp_path):
    seen = observe(
        tmp_path,
        """
        def can_write(path):
            try:
                open(path, "w").write("x")
                return True
            except OSError:
                return False
        seen["here"] = can_write("mine.txt")
        seen["usr"] = can_write("/usr/evil.txt")
        seen["python"] = can_write(os.path.join(sys.prefix, "evil.txt"))
    """,
    )
    assert seen == {"here": True, "usr": False, "python": False}


def test_the_file_system_is_read_only_but_for_its_folder_and_tmp(tmp_path):
    """Every mount of the sandbox is read-only but its work folder, /tmp and /proc: its root and
    /dev too, which bubblewrap makes in memory, as the user it runs as (for a grader run as an
    ordinary user, the student's: tests/test_ordinary_user.py). And numpy's folder comes after
    the standard library on the worker's path: nothing there can stand in for a module of it."""
    seen = observe(
        tmp_path,
        """
        mounts = {}
        for line in open("/proc/self/mountinfo"):
            fields = line.split()
            mounts[fields[4]] = fields[5].split(",")[0]
        seen["root"], seen["dev"] = mounts["/"], mounts["/dev"]
        seen["rw"] = sorted(p for p, mode in mounts.items() if mode == "rw" and not p.startswith(("/proc/", "/dev/")))
        import numpy
        site = os.path.dirname(os.path.dirname(os.path.realpath(numpy.__file__)))
        seen["site"] = sys.path.index(site) if site in sys.path else -1
        seen["stdlib"] = sys.path.index(os.path.dirname(os.__file__))
    """,
    )
    assert seen["root"] == seen["dev"] == "ro"
    assert set(seen["rw"]) <= {"/sandbox", "/tmp", "/proc"}
    assert seen["site"] > seen["stdlib"] >= 0


def test_the_first_process_is_the_warden_and_no_process_can_be_traced(tmp_path):
    """The sandbox's first process, which no kill(-1) reaches, is the warden (not bubblewrap's
    own: run by an ordinary user, that one was the student's user's, and a submission traced it
    to run a program of its own there for every later classmate: tests/test_ordinary_user.py);
    and the filter refuses ptrace, whoever the tracer's target."""
    seen = observe(
        tmp_path,
        """
        import ctypes, errno
        seen["first"] = open("/proc/1/comm").read().strip()
        libc = ctypes.CDLL(None, use_errno=True)
        libc.ptrace.restype = ctypes.c_long
        libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
        done = libc.ptrace(0, 0, None, None)  # PTRACE_TRACEME: allowed to anyone, unless refused
        seen["traceme"] = errno.errorcode.get(ctypes.get_errno(), "") if done == -1 else "allowed"
    """,
    )
    assert seen["first"].startswith("python")  # bubblewrap's would be "bwrap"
    assert seen["traceme"] == "EPERM"


def test_no_file_can_be_locked_or_watched(tmp_path):
    """The sandbox's files are the machine's own (its Python, numpy, /dev/null): a lock on one,
    or an access to one watched, is seen from every other sandbox running at the same time, and
    a lock on the descriptor every process of a sandbox shared outlived the student who took it
    (a red team carried a hidden check's input to the next classmate's report in locks on
    /dev/null). The filter refuses every way to lock a file or read its locks, leases, and
    watches; fcntl's other commands work (flags), but for owning a descriptor, which a worker
    may not (the kernel would signal it: see test_a_worker_cannot_end_the_keepers_freeze)."""
    seen = observe(
        tmp_path,
        """
        import ctypes, errno, fcntl, struct

        def tried(action):
            try:
                action()
                return "allowed"
            except OSError as err:
                return errno.errorcode.get(err.errno, str(err.errno))

        fd = os.open("/dev/null", os.O_RDWR)
        ofd = struct.pack("hhxxxxqqixxxx", fcntl.F_RDLCK, 0, 0, 1, 0)
        posix = struct.pack("hhqqi", fcntl.F_RDLCK, 0, 0, 1, 0)
        seen["ofd-set"] = tried(lambda: fcntl.fcntl(fd, 37, ofd))
        seen["ofd-get"] = tried(lambda: fcntl.fcntl(fd, 36, ofd))
        seen["posix-set"] = tried(lambda: fcntl.fcntl(fd, fcntl.F_SETLK, posix))
        seen["posix-get"] = tried(lambda: fcntl.fcntl(fd, fcntl.F_GETLK, posix))
        seen["lockf"] = tried(lambda: fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB))
        seen["flock"] = tried(lambda: fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB))
        folder = os.open("/usr", os.O_RDONLY)
        seen["dnotify"] = tried(lambda: fcntl.fcntl(folder, 1026, 1))
        libc = ctypes.CDLL(None, use_errno=True)

        def watch():
            watcher = libc.inotify_init1(0)
            if watcher < 0 or libc.inotify_add_watch(watcher, b"/usr", 0xFFF) < 0:
                raise OSError(ctypes.get_errno(), "inotify")

        seen["inotify"] = tried(watch)
        seen["flags"] = tried(lambda: fcntl.fcntl(fd, fcntl.F_SETFL, os.O_NONBLOCK))
        seen["owner"] = tried(lambda: fcntl.fcntl(fd, fcntl.F_SETOWN, os.getpid()))
    """,
    )
    refused = ("ofd-set", "ofd-get", "posix-set", "posix-get", "lockf", "flock", "dnotify", "inotify")
    assert {name: seen[name] for name in refused} == dict.fromkeys(refused, "EPERM"), seen
    assert seen["flags"] == "allowed" and seen["owner"] == "EPERM", seen


def test_its_folder_lives_in_memory_and_is_capped(tmp_path):
    seen = observe(
        tmp_path,
        """
        import shutil
        seen["cwd"] = os.getcwd()
        seen["total"] = shutil.disk_usage(".").total
        seen["tmp"] = shutil.disk_usage("/tmp").total
    """,
    )
    assert seen["cwd"] == "/sandbox"
    assert seen["total"] <= 64 << 20 and seen["tmp"] <= 64 << 20


#: A probe's body: makes empty files in each writable folder until one cannot be made (or
#: 100,000 are there; a file made by an earlier call is kept: the check may call it again), and
#: notes how many, why it stopped and the folder's cap.
FILE_MAKER = """
import errno
for folder in ("/tmp", "."):
    many, why = os.path.join(folder, "many"), ""
    try:
        os.makedirs(many, exist_ok=True)
        for n in range(len(os.listdir(many)), 100_000):
            os.close(os.open(os.path.join(many, str(n)), os.O_CREAT | os.O_WRONLY, 0o600))
    except OSError as err:
        why = errno.errorcode.get(err.errno, str(err.errno))
    seen[folder] = [len(os.listdir(many)), why, os.statvfs(folder).f_files]
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="an ordinary user's bubblewrap may not remount them")
def test_its_folders_hold_a_capped_number_of_files(tmp_path):
    """An empty file costs the kernel about a kilobyte that no byte count sees: uncapped, one
    submission's processor time could hold gigabytes of the machine's memory (each of its
    in-memory folders took three million files here, a million in eight seconds)."""
    seen = observe(tmp_path, FILE_MAKER)
    for folder in ("/tmp", "."):
        made, why, files = seen[folder]
        assert files == WORK_FILES and why == "ENOSPC" and WORK_FILES - 10 <= made < WORK_FILES, seen


def test_no_network_and_a_minimal_environment(tmp_path):
    seen = observe(
        tmp_path,
        """
        try:
            socket.create_connection(("127.0.0.1", 22), timeout=1)
            seen["net"] = "connected"
        except OSError as err:
            seen["net"] = type(err).__name__
        seen["ifaces"] = [name for _, name in socket.if_nameindex()]
        # only what is not expected, and two that must be there: the whole list can be longer
        # than a failure's message keeps (OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, where set)
        seen["env"] = sorted(set(os.environ) - {
            "PATH", "HOME", "LANG", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE", "OPENBLAS_NUM_THREADS",
            "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "PWD", "LC_CTYPE",
        })  # set inside: bubblewrap's working folder, Python's locale
        seen["threads_and_home"] = "OPENBLAS_NUM_THREADS" in os.environ and "HOME" in os.environ
        seen["stdin"] = sys.stdin is None
        seen["as"] = resource.getrlimit(resource.RLIMIT_AS)[0]
        seen["fsize"] = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        seen["pid"] = os.getpid()
    """,
    )
    assert seen["net"] != "connected"
    assert seen["ifaces"] == ["lo"]
    assert seen["env"] == [] and seen["threads_and_home"], seen
    assert seen["stdin"] is True
    assert seen["as"] == 2 << 30 and seen["fsize"] == 16 << 20
    assert seen["pid"] < 10  # a PID namespace of its own


def test_memory_no_limit_counts_is_out_of_reach(tmp_path):
    """SysV shared memory, message queues and semaphores (they outlive their processes), memfd
    files (pages no address-space limit sees), io_uring and Linux AIO are refused; so are POSIX
    message queues and keyring keys (they would outlive a submission) and moving to another core."""
    seen = observe(
        tmp_path,
        """
        import ctypes, errno
        libc = ctypes.CDLL(None, use_errno=True)
        def refused(result):
            return result == -1 and ctypes.get_errno() == errno.EPERM
        seen["shm"] = refused(libc.shmget(0, 1 << 20, 0o1600))
        seen["msg"] = refused(libc.msgget(0, 0o1600))
        seen["sem"] = refused(libc.semget(0, 1, 0o1600))
        try:
            os.memfd_create("x")
            seen["memfd"] = False
        except OSError as err:
            seen["memfd"] = err.errno == errno.EPERM
        params = ctypes.create_string_buffer(120)
        seen["io_uring"] = refused(libc.syscall(425, 1, params))
        import platform
        context = ctypes.c_ulong(0)
        io_setup = {"x86_64": 206, "aarch64": 0}.get(platform.machine())
        seen["aio"] = io_setup is None or refused(libc.syscall(io_setup, 1, ctypes.byref(context)))
        seen["no_new_privs"] = open("/proc/self/status").read().split("NoNewPrivs:")[1].split()[0]
        # what would outlive the submission in a sandbox that is kept: POSIX message queues and
        # kernel keyring keys; and a move onto a core the grader did not give
        seen["mq"] = refused(libc.mq_open(b"/q", os.O_CREAT | os.O_RDWR, 0o600, None))
        seen["key"] = refused(libc.syscall({"x86_64": 248, "aarch64": 217}[platform.machine()],
                                           b"user", b"k", b"v", 1, -2))  # add_key to the user keyring
        try:
            os.sched_setaffinity(0, os.sched_getaffinity(0))
            seen["affinity"] = False
        except OSError as err:
            seen["affinity"] = err.errno == errno.EPERM
    """,
    )
    assert seen == {
        "mq": True,
        "key": True,
        "affinity": True,
        "shm": True,
        "msg": True,
        "sem": True,
        "memfd": True,
        "io_uring": True,
        "aio": True,
        "no_new_privs": "1",
    }


def test_no_process_of_the_sandbox_can_be_rescheduled_or_limited_from_inside(tmp_path):
    """The warden outlives each submission and every later keeper and worker is forked from it:
    a worker could otherwise lower its priority (nice 19, SCHED_IDLE) or its limits, and so the
    next students'. Changing the priority, scheduling or I/O class of any process (its own
    included) is refused, and so are the limits of any process but its own; reading them, and
    setting its own limits, still work."""
    seen = observe(
        tmp_path,
        """
        import ctypes, errno, platform
        libc = ctypes.CDLL(None, use_errno=True)
        def refused(call):
            try:
                call()
            except OSError as err:
                return err.errno == errno.EPERM
            return False
        keeper = os.getppid()
        with open(f"/proc/{keeper}/stat") as f:
            warden = int(f.read().rsplit(")", 1)[1].split()[1])
        ioprio_set = {"x86_64": 251, "aarch64": 30}[platform.machine()]
        def io_class(pid):  # the idle I/O class (ioprio_set has no Python function)
            if libc.syscall(ioprio_set, 1, pid, 3 << 13) == -1:
                raise OSError(ctypes.get_errno(), "ioprio_set")
        allowed = []  # the changes that were not refused, each as what/whose
        for who, pid in (("self", 0), ("keeper", keeper), ("warden", warden)):
            tried = {
                "nice": lambda: os.setpriority(os.PRIO_PROCESS, pid, 19),
                "idle": lambda: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0)),
                "param": lambda: os.sched_setparam(pid, os.sched_param(0)),
                "io": lambda: io_class(pid),
            }
            if pid:
                tried["limit"] = lambda: resource.prlimit(pid, resource.RLIMIT_SIGPENDING, (77, 77))
            allowed += [f"{what}/{who}" for what, call in tried.items() if not refused(call)]
        if not refused(lambda: os.setpriority(os.PRIO_USER, os.getuid(), 19)):
            allowed.append("nice/user")
        seen["allowed"] = allowed
        soft, hard = resource.getrlimit(resource.RLIMIT_SIGPENDING)
        resource.setrlimit(resource.RLIMIT_SIGPENDING, (min(soft, 77), min(hard, 77)))
        seen["own limit"] = resource.getrlimit(resource.RLIMIT_SIGPENDING)[1] == min(hard, 77)
        seen["read"] = os.getpriority(os.PRIO_PROCESS, 0) == 0 and os.sched_getscheduler(0) == os.SCHED_OTHER
    """,
    )
    assert seen == {"allowed": [], "own limit": True, "read": True}


def _warden_process(warden) -> int:
    """The number, as this side sees it, of the warden's own process in the sandbox ``warden``
    holds (bubblewrap's processes come first on the way to it)."""
    todo = [warden.proc.pid]
    while todo:
        pid = todo.pop()
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if b"warden.py" in f.read() and b"bwrap" not in Path(f"/proc/{pid}/exe").resolve().name.encode():
                return pid
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            todo += [int(n) for n in f.read().split()]
    raise AssertionError("no warden process found")


def _as_user_of(pid: int, act) -> None:
    """Do ``act`` in a child process of this one running as the user of process ``pid``."""
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
    _as_user(int(fields["Uid"].split()[0]), int(fields["Gid"].split()[0]), act)


def _as_user(uid: int, gid: int, act) -> None:
    """Do ``act`` in a child process of this one running as user ``uid`` (where this process
    may become another user: as root), and require that it return."""
    child = os.fork()
    if child == 0:
        try:
            if os.getuid() == 0 and uid != 0:
                os.setgroups([])
                os.setgid(gid)
                os.setuid(uid)
            act()
            os._exit(0)
        finally:
            os._exit(1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.mark.parametrize("change", ["none", "nice", "limit"])
def test_a_warden_whose_priority_or_limits_changed_serves_no_later_submission(change):
    """Should a process of the sandbox still change the warden's priority or its limits (some
    way the filter above does not know of), the reset that ends each submission finds the
    warden changed and the sandbox is replaced: every later keeper and worker would inherit them."""
    import resource

    from grader.sandbox import wardens

    warden = wardens.Warden("namespaces", 2 << 30)
    try:
        warden.request({"type": "reset", "wipe": True})  # started, and answering
        assert warden.proc is not None
        pid, boots = _warden_process(warden), warden.boots
        if change == "nice":
            os.setpriority(os.PRIO_PROCESS, pid, 19)
        elif change == "limit":  # by a process of the sandbox's user, as a worker would
            _as_user_of(pid, lambda: resource.prlimit(pid, resource.RLIMIT_SIGPENDING, (77, 77)))
        warden.reset()
        if change == "none":
            assert warden.proc is not None and _warden_process(warden) == pid
        else:
            assert warden.proc is None  # killed: the next request starts a new sandbox
            warden.reset()
            assert warden.boots == boots  # (a reset of no sandbox starts none)
            warden.request({"type": "reset", "wipe": True})
            assert warden.boots == boots + 1 and os.getpriority(os.PRIO_PROCESS, _warden_process(warden)) == 0
    finally:
        warden.close()


def test_another_submission_begins_only_after_a_reset_that_finds_the_warden_as_it_started():
    """The trusted side resets the sandbox at the end of each submission; should one begin
    without that (a submission that never closed), the warden first resets, wipes and checks
    itself: here its priority was changed meanwhile, so the next submission gets a new sandbox.
    The same submission beginning again (its worker replaced) keeps its sandbox."""
    import time as clock

    from grader.sandbox import wardens

    class Holder:
        pass

    first, second = Holder(), Holder()
    warden = wardens.Warden("namespaces", 2 << 30)
    source = TOY.solution.read_bytes()
    try:
        warden.begin(first, source, TOY, 2 << 30)
        warden.collect(clock.monotonic() + 60)
        boots, pid = warden.boots, _warden_process(warden)
        warden.begin(first, source, TOY, 2 << 30)  # the same submission again: nothing reset
        warden.collect(clock.monotonic() + 60)
        assert warden.boots == boots and warden.proc is not None
        os.setpriority(os.PRIO_PROCESS, pid, 19)
        warden.begin(second, source, TOY, 2 << 30)  # another one, with no reset in between
        warden.collect(clock.monotonic() + 60)
        assert warden.boots == boots + 1  # a new sandbox
        assert os.getpriority(os.PRIO_PROCESS, _warden_process(warden)) == 0
    finally:
        warden.close()


def test_the_wipe_removes_a_locked_tree_whose_path_is_too_long_to_use():
    """A student's tree of folders 20 deep with names of 250 characters (a path far longer than
    the system takes), its deepest folder locked (read and enter only), is removed whole by the
    wipe between two submissions, working as the sandbox's user would (never as root, whom no
    lock stops)."""
    import shutil
    import tempfile

    from grader.sandbox.inside.warden import _remove_tree

    folder = tempfile.mkdtemp(prefix="grader-wipe-")
    os.chmod(folder, 0o777)

    def leave_and_wipe() -> None:
        fd = os.open(folder, os.O_RDONLY)
        names = ["left", *(f"{level:02d}" + "x" * 248 for level in range(1, 21))]
        for name in names:
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(os.open("MARK", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
        os.fchmod(fd, 0o500)
        os.close(fd)
        _remove_tree(os.path.join(folder, "left"))
        assert os.listdir(folder) == []

    try:
        _as_user(65534, 65534, leave_and_wipe)  # nobody
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_worker_starts_no_process_and_no_thread(tmp_path):
    """A process of the worker's own would share the memory the keeper watches and could wake
    the worker while the keeper looks at it; a thread could put an argument back between the
    worker's answer and its freeze: fork, vfork, clone, subprocess and threads are refused."""
    seen = observe(
        tmp_path,
        """
        import errno, subprocess, threading
        def refused(start):
            try:
                start()
            except OSError as err:
                return err.errno == errno.EPERM
            return False
        seen["fork"] = refused(os.fork)
        seen["popen"] = refused(lambda: subprocess.Popen(["/bin/true"]))
        import ctypes, platform
        libc = ctypes.CDLL(None, use_errno=True)
        vfork = {"x86_64": 58}.get(platform.machine())
        if vfork is not None:
            seen["vfork"] = libc.syscall(vfork) == -1 and ctypes.get_errno() == errno.EPERM
        # a raw clone without CLONE_THREAD (flags SIGCHLD only), as fork makes it
        clone = {"x86_64": 56, "aarch64": 220}[platform.machine()]
        seen["clone"] = libc.syscall(clone, 17, 0, 0, 0, 0) == -1 and ctypes.get_errno() == errno.EPERM
        try:
            threading.Thread(target=print).start()
            seen["thread"] = False
        except RuntimeError:
            seen["thread"] = True
    """,
    )
    assert seen.pop("vfork", True) is True
    assert seen == {"fork": True, "popen": True, "clone": True, "thread": True}


LEAVER = """
import os, subprocess

if not os.path.exists("left-here"):
    for folder in (".", "/tmp"):
        open(os.path.join(folder, "left-here"), "w").write("{marker}")
    os.makedirs("locked/inner", exist_ok=True)
    open("locked/inner/file", "w").write("{marker}")
    os.chmod("locked", 0)
    try:  # a worker may start no process: this one is refused
        subprocess.Popen(["/bin/sh", "-c", "sleep 120", "{marker}"], start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        pass
"""


def test_a_submission_finds_nothing_of_the_one_graded_before(tmp_path):
    """Submissions graded one after the other by the same process share a sandbox's warden:
    whatever the first left behind (files, a process in a session of its own) is gone before
    the second starts."""
    marker = f"leftover-{os.getpid()}-{tmp_path.name}"
    first, second = tmp_path / "class" / "a_leaves", tmp_path / "class" / "b_looks"
    first.mkdir(parents=True)
    second.mkdir(parents=True)
    (first / TOY.filename).write_text(TOY.solution.read_text() + LEAVER.format(marker=marker))
    body = f"""
        seen["here"] = sorted(os.listdir("."))
        seen["tmp"] = sorted(os.listdir("/tmp"))
        seen["processes"], seen["marked"] = 0, 0
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    seen["marked"] += {marker!r} in open(f"/proc/{{pid}}/cmdline").read()
                    seen["processes"] += 1
                except OSError:
                    pass
    """  # the message quoted back is short: counts, not the processes themselves
    (second / TOY.filename).write_text(
        TOY.solution.read_text() + PROBE.format(body=textwrap.indent(textwrap.dedent(body), "    "))
    )
    done = python(
        "gallery",
        str(tmp_path / "class"),
        *ON_TOY,
        "--format",
        "json",
        "--only",
        "center_tokens",
        "--max-examples",
        "1",
    )
    assert done.returncode == 0, done.stderr
    reports = json.loads(done.stdout)
    assert reports["a_leaves"]["score"] == reports["a_leaves"]["max_score"]
    text = next(t["feedback"] for t in reports["b_looks"]["tests"] if "PROBE" in t["feedback"])
    seen = json.loads(text[text.rindex("PROBE") + 5 : text.rindex("END")])
    assert seen["here"] == [TOY.filename]
    # /tmp holds only what the sandbox was built with: the folders on the way to a Python or
    # numpy below /tmp (a project cloned there keeps its virtual environment inside)
    bound = [
        Path(np.__file__).resolve().parent,
        Path(os.path.realpath(sys.executable)),
        Path(sys.base_prefix).resolve(),
    ]
    on_the_way = {p.relative_to("/tmp").parts[0] for p in bound if Path("/tmp") in p.parents}
    assert set(seen["tmp"]) <= on_the_way and "left-here" not in seen["tmp"]
    assert seen["processes"] >= 2 and seen["marked"] == 0  # the probe sees itself and the warden


#: A file of the toy lesson whose center_tokens is off by a number that string hashing (which
#: decides the order of a set of strings), Python's generator and numpy's decide.
CHANCY = TOY.solution.read_text(encoding="utf-8").replace(
    "return x - token_mean(x)  #",
    "return x - token_mean(x) + CHANCE  #",
) + textwrap.dedent(
    """
    import random

    CHANCE = hash("chance") % 997 + round(random.random(), 4) + round(float(np.random.rand()), 4)
    """
)


def graded_again(student: Path, times: int) -> list[dict]:
    """The JSON reports of ``times`` sandboxed grades of the toy file ``student``, no store."""
    env = {**os.environ, STORE_VARIABLE: "off"}
    reports = []
    for _ in range(times):
        done = python("grade", str(student), *ON_TOY, "--format", "json", env=env)
        assert done.returncode in (0, 1), done.stderr[-2000:]
        reports.append(json.loads(done.stdout))
    return reports


def test_a_file_that_leaves_its_result_to_chance_gets_the_same_report_on_every_run(tmp_path):
    """Found by helper-35: sandboxed, a file drawing from Python's or numpy's global generator
    (each worker began from the state the keeper's import left, seeded from the system) or
    iterating over a set of strings (the sandbox's Python ran isolated, -I, which ignores the
    PYTHONHASHSEED the grader sets) scored differently from one ``grade`` to the next. Each of
    the three is now fixed: the worker seeds both generators, and its Python reads the hash seed."""
    assert "CHANCE" in CHANCY
    student = tmp_path / TOY.filename
    student.write_text(CHANCY, encoding="utf-8")
    reports = graded_again(student, 2)
    assert "got" in json.dumps(reports[0])  # it lost points, naming what it returned
    assert reports[0] == reports[1]


def test_the_working_folder_is_not_on_the_path_of_the_sandboxs_python(tmp_path):
    """The sandbox's Python is no longer started isolated (-I, which would ignore the hash seed):
    the working folder, where the student's code may write a ``json.py``, must still be off the
    path the keeper and the worker import from (as -I kept it), and no user site is read."""
    seen = observe(
        tmp_path,
        """
        seen["on_path"] = [p for p in sys.path if p in ("", ".") or os.path.abspath(p) == os.getcwd()]
        seen["user_site"] = sys.flags.no_user_site
        seen["hash_seed"] = hash("chance")
    """,
    )
    assert seen["on_path"] == []
    assert seen["user_site"] == 1
    assert seen["hash_seed"] == observe(tmp_path, 'seen["hash_seed"] = hash("chance")')["hash_seed"]


def test_a_file_that_draws_in_each_call_gets_the_report_it_gets_in_its_own_process(tmp_path):
    """In the grader's process (``check``) Hypothesis seeds the generators before every example;
    the worker was seeded once, at load, so a file drawing a random number in each call saw
    other numbers from the second example on, and ``check`` and ``grade`` disagreed. The worker
    now seeds them again before the first call of each example."""
    student = tmp_path / TOY.filename
    student.write_text(
        TOY.solution.read_text(encoding="utf-8").replace(
            "return x - token_mean(x)  #",
            "return x - token_mean(x) + round(random.random(), 4) + round(float(np.random.rand()), 4)  #",
        )
        + "\nimport random\n",
        encoding="utf-8",
    )
    env = {**os.environ, STORE_VARIABLE: "off"}
    reports = {}
    for isolation in ("namespaces", "none"):
        done = python("grade", str(student), *ON_TOY, "--format", "json", "--isolation", isolation, env=env)
        assert done.returncode in (0, 1), done.stderr[-2000:]
        reports[isolation] = {**json.loads(done.stdout), "isolation": ""}
    assert "got" in json.dumps(reports["none"])  # it lost points, naming what it returned
    assert reports["namespaces"] == reports["none"]


def test_a_grader_run_under_a_strict_umask_still_starts_its_sandbox():
    """Under ``umask 077`` the sandbox's own code files were made readable by the grader's user
    alone; as root, the sandbox (another user) could not read them and died at its start, and
    every file, the reference included, scored 0 as if it had stopped the sandbox itself."""
    done = python(
        "grade",
        str(TOY.solution),
        *ON_TOY,
        "--format",
        "json",
        env={**os.environ, STORE_VARIABLE: "off"},
        preexec_fn=lambda: os.umask(0o077),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["score"] == report["max_score"] and not report["problem"], report


def test_a_sandbox_that_never_started_leaves_the_grade_unfinished_not_the_students(monkeypatch):
    """A sandbox whose warden stops before its first answer ran none of the submission's code:
    the machine failed, and the grade is unfinished (never kept, never final), not a file that
    'stopped the sandbox it ran in'."""
    from grader.core.errors import Unfinished
    from grader.core.intake import open_submission
    from grader.engine.submission import reference_of
    from grader.sandbox import wardens
    from grader.sandbox.session import NOT_STARTED, Sandboxed

    launch = wardens.Warden._launch

    def stillborn(self):
        launch(self)
        os.killpg(self.proc.pid, 9)  # gone before it could answer anything

    monkeypatch.setattr(wardens.Warden, "_launch", stillborn)
    level = best_level()
    box = Sandboxed(
        open_submission(TOY.solution, TOY.filename), helpers=reference_of(TOY), level=level, lesson=TOY
    )
    try:
        assert box.problem == ""
        with pytest.raises(Unfinished) as stopped:
            _ = box.signatures
        assert str(stopped.value) == NOT_STARTED
    finally:
        box.close()


#: A file that signals its sandbox's warden (the keeper's parent) while it is being loaded.
SIGNALS_ITS_WARDEN = """
import os, signal
def _parent(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])
_warden = _parent(os.getppid())
for _sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    os.kill(_warden, _sig)
"""


def test_a_file_that_signals_its_warden_while_loading_gets_one_report(tmp_path):
    """The warden died as the file's load answered: whether that answer was relayed before it
    did, and the loss seen at the first call of whichever check came first, was left to chance
    (0 or 2 of 14 from run to run). A worker now signals no process but itself: the file's own
    line fails, the same way on every run (and the sandbox is still asked after every load
    whether it outlived it)."""
    student = tmp_path / TOY.filename
    student.write_text(SIGNALS_ITS_WARDEN + TOY.solution.read_text(encoding="utf-8"), encoding="utf-8")
    reports = graded_again(student, 3)
    assert reports[0]["score"] == 0 and "Operation not permitted" in reports[0]["problem"], reports[0]
    assert all(r == reports[0] for r in reports)


#: Each way a process reaches another with a signal, tried on the worker's keeper (its parent)
#: with signal 0 (which only asks whether it may), the same calls on the worker itself (which
#: may signal itself, but own no descriptor), and each way it could send itself SIGCONT.
SIGNALLING_PROBE = """
import ctypes, errno, fcntl, signal, struct, threading
libc = ctypes.CDLL(None, use_errno=True)
keeper, me = os.getppid(), os.getpid()
def tried(call):
    try:
        call()
        return "done"
    except OSError as err:
        return errno.errorcode.get(err.errno, str(err.errno))
def syscall(number, *args):
    if libc.syscall(number, *args) == -1:
        raise OSError(ctypes.get_errno(), "")
queued = ctypes.create_string_buffer(struct.pack("iii", 0, 0, -1), 128)  # si_code SI_QUEUE
r, w = os.pipe()
tries = {}
for name, pid, sig in (("keeper", keeper, 0), ("self", me, 0), ("go_on", me, signal.SIGCONT)):
    tries[name] = {
        "kill": tried(lambda: os.kill(pid, sig)),
        "tkill": tried(lambda: syscall(200, pid, sig)),
        "tgkill": tried(lambda: syscall(234, pid, pid, sig)),
        "rt_sigqueueinfo": tried(lambda: syscall(129, pid, sig, queued)),
        "rt_tgsigqueueinfo": tried(lambda: syscall(297, pid, pid, sig, queued)),
        "F_SETOWN": tried(lambda: fcntl.fcntl(r, fcntl.F_SETOWN, pid)),
        "FIOSETOWN": tried(lambda: fcntl.ioctl(r, 0x8901, struct.pack("i", pid))),
    }
tries["keeper"]["pidfd_send_signal"] = tried(lambda: signal.pidfd_send_signal(os.pidfd_open(keeper), 0))
tries["keeper"]["F_SETOWN_EX"] = tried(lambda: fcntl.fcntl(r, 15, struct.pack("ii", 1, keeper)))
tries["keeper"]["group"] = tried(lambda: os.kill(0, 0))
tries["keeper"]["everyone"] = tried(lambda: os.kill(-1, 0))
tries["go_on"]["F_SETSIG"] = tried(lambda: fcntl.fcntl(w, 10, signal.SIGCONT))
timer = ctypes.c_void_p()
tries["go_on"]["timer_create"] = tried(lambda: syscall(222, 1, ctypes.create_string_buffer(64), ctypes.byref(timer)))
tries["self"]["pthread_kill"] = tried(lambda: signal.pthread_kill(threading.get_ident(), 0))
# what went otherwise than expected, alone: the whole would be longer than a message keeps
allowed = {"kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pthread_kill"}
seen["keeper"] = {k: v for k, v in tries["keeper"].items() if v != "EPERM"}
seen["go_on"] = {k: v for k, v in tries["go_on"].items() if v != "EPERM"}
seen["self"] = {k: v for k, v in tries["self"].items() if v != ("done" if k in allowed else "EPERM")}
seen["tried"] = sum(len(t) for t in tries.values())
"""


@pytest.mark.skipif(__import__("platform").machine() != "x86_64", reason="system call numbers of x86_64")
def test_the_students_code_signals_no_process_but_its_own(tmp_path):
    """A worker that signals its keeper or its warden (directly, or as a descriptor's owner,
    which the kernel then signals on its input and output) ends or stops the sandbox at a
    moment it chose: whether the answer of the call that did it was relayed first was a race,
    and at the process level a stopped warden went unseen. Every way is refused but on itself."""
    seen = observe(tmp_path, SIGNALLING_PROBE)
    # the worker signals itself, but never to go on (SIGCONT: the keeper's freeze is the
    # keeper's alone), and owns no descriptor (the kernel would signal it at the keeper's reads)
    assert seen == {"keeper": {}, "go_on": {}, "self": {}, "tried": 28}, seen


def test_a_sandbox_lost_during_a_call_costs_that_function_alone(monkeypatch, tmp_path):
    """The sandbox can still go down (the machine's out-of-memory killer, say): the function
    whose call it was loses its points, with a message, and the others are graded in a new
    sandbox. No student's code can do this any more, so the sandbox is taken down from here,
    once, just before a call of layer_norm is sent: its keeper, then its worker (the worker talks
    to this side directly, so a keeper lost alone costs no call, and the worker outlives it)."""
    from grader.core.settings import Isolation, Settings
    from grader.engine.run import run_checks
    from grader.formats.json_report import to_dict
    from grader.sandbox import session

    send = session.Sandboxed._send
    killed = []

    def send_after_losing_the_sandbox(self, message, deadline, *, name):
        if message.get("type") == "call" and name == "layer_norm" and not killed:
            with open(f"/proc/{self.worker_pid}/stat") as f:
                keeper = int(f.read().rsplit(")", 1)[1].split()[1])
            os.kill(keeper, 9)
            os.kill(self.worker_pid, 9)
            killed.append(keeper)
        return send(self, message, deadline, name=name)

    monkeypatch.setattr(session.Sandboxed, "_send", send_after_losing_the_sandbox)
    report = to_dict(
        run_checks(TOY.solution, lesson=TOY, settings=Settings(isolation=Isolation(best_level()), store=None))
    )
    assert killed, "no call of layer_norm was sent"
    scores = {name: exercise["score"] for name, exercise in report["exercises"].items()}
    assert scores["layer_norm"] == 0 and scores["center_tokens"] == 6, report
    assert "`layer_norm` stopped the sandbox it ran in" in json.dumps(report["tests"]), report["tests"]


#: An honest file that answers a repeated question from memory: it keeps its last input (the
#: array it was given, not a copy) and its result.
REMEMBERS_ITS_LAST_INPUT = """

_computed = center_tokens
_last = None


def center_tokens(x):
    global _last
    if _last is not None and _last[0].shape == x.shape and np.array_equal(_last[0], x):
        return _last[1].copy()
    result = _computed(x)
    _last = (x, result)
    return result
"""


def test_an_input_kept_from_one_call_to_the_next_is_left_as_it_was(tmp_path):
    """A sandboxed call's arrays are laid out in memory the worker shares with its keeper; each
    call's went to the same place, so an array kept from the last call held the next call's
    input: this file, right when checked, always found its memory 'equal' and lost 3 of 6 points
    in every grade. Each call's arrays now go after the last call's."""
    from grader.core.settings import Isolation, Settings
    from grader.engine.run import run_checks
    from grader.formats.json_report import to_dict

    student = tmp_path / TOY.filename
    student.write_text(TOY.solution.read_text(encoding="utf-8") + REMEMBERS_ITS_LAST_INPUT, encoding="utf-8")
    reports = []
    for level in (Isolation.NONE, Isolation(best_level())):
        report = to_dict(run_checks(student, lesson=TOY, settings=Settings(isolation=level, store=None)))
        reports.append({**report, "isolation": "", "submission": ""})
    assert reports[0]["score"] == reports[0]["max_score"], reports[0]
    assert reports[1] == reports[0]


#: center_tokens changes x in place, and puts it back when woken by SIGCONT: it makes itself
#: the owner of its answers' pipe, with SIGCONT as the signal, so that the keeper's own read of
#: the answer woke it while the keeper was about to look (found by helper-38).
WAKES_ON_THE_KEEPERS_READ = """

import fcntl, os, signal, stat
_saved = []


def _put_back(*_):
    while _saved:
        array, data = _saved.pop()
        array[...] = data


def center_tokens(x):
    signal.signal(signal.SIGCONT, _put_back)
    for fd in range(3, 64):
        try:
            flags = fcntl.fcntl(fd, fcntl.F_GETFL)
            if flags & os.O_ACCMODE == os.O_WRONLY and stat.S_ISFIFO(os.fstat(fd).st_mode):
                fcntl.fcntl(fd, fcntl.F_SETOWN, os.getpid())
                fcntl.fcntl(fd, 10, signal.SIGCONT)  # F_SETSIG
                fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_ASYNC)
        except OSError:
            pass
    _saved.append((x, x.copy()))
    x -= np.mean(x, axis=-1, keepdims=True)
    return x.copy()
"""

#: layer_norm arms a timer that sends the worker SIGCONT every 100 µs: a freeze ended before
#: the keeper saw it, and the call waited out its time limit, on whichever check the timing
#: chose (found by helper-38: 14, 8, 6 and 6 of 14 in four grades).
GOES_ON_BY_ITSELF = """

import ctypes, struct
_libc = ctypes.CDLL(None, use_errno=True)
_right_layer_norm = layer_norm


def layer_norm(x, gamma, beta, eps=1e-5):
    signal_event = ctypes.create_string_buffer(64)
    struct.pack_into("<qii", signal_event, 0, 0, 18, 0)  # SIGCONT, SIGEV_SIGNAL
    timer = ctypes.c_void_p()
    if _libc.timer_create(1, signal_event, ctypes.byref(timer)) == 0:
        _libc.timer_settime(timer, 0, struct.pack("<qqqq", 0, 100_000, 0, 100_000), None)
    return _right_layer_norm(x, gamma, beta, eps)
"""


@pytest.mark.parametrize("trick", ["wakes_on_the_keepers_read", "goes_on_by_itself"])
def test_a_worker_cannot_end_the_keepers_freeze(trick, tmp_path):
    """Any SIGCONT ends a stop, whoever sends it: a worker that sent itself one (through a timer,
    or as the owner of its answers' pipe, which the keeper's read signals) ended the freeze the
    keeper looks at the arguments in. The change put back unseen, or the call's time limit
    waited out, fell by timing: the same file scored differently from grade to grade. The
    worker may send itself no SIGCONT, own no descriptor, and make no timer of its own."""
    code = WAKES_ON_THE_KEEPERS_READ if trick == "wakes_on_the_keepers_read" else GOES_ON_BY_ITSELF
    student = tmp_path / TOY.filename
    student.write_text(TOY.solution.read_text(encoding="utf-8") + code, encoding="utf-8")
    reports = graded_again(student, 3)
    assert all(r == reports[0] for r in reports), [r["score"] for r in reports]
    statuses = {t["name"]: t["status"] for t in reports[0]["tests"]}
    if trick == "wakes_on_the_keepers_read":  # only the check that x is left unchanged fails
        assert [n for n, s in statuses.items() if s != "passed"] == ["centering_leaves_x_unchanged"], statuses
    else:
        assert reports[0]["score"] == reports[0]["max_score"], statuses


def test_a_worker_stays_undumpable_and_cannot_lower_its_own_share_of_the_core(tmp_path):
    """Found by helper-39: a worker made itself dumpable again (prctl), which gave its /proc
    files to its own user, and wrote 19 to /proc/self/autogroup: it then ran at a sixtieth of its
    core whenever anything else ran there, its waits counted as the machine's, and its grade was
    unfinished (no grade, graded again, without end) at will. prctl(PR_SET_DUMPABLE) is refused,
    and so is execve (helper-40: a new program is dumpable again, and did the same)."""
    seen = observe(
        tmp_path,
        """
        import ctypes, errno
        libc = ctypes.CDLL(None, use_errno=True)
        seen["dumpable"] = libc.prctl(4, 1, 0, 0, 0) == -1 and ctypes.get_errno() == errno.EPERM
        seen["still"] = libc.prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE
        try:  # a new program is dumpable again (helper-40): refused before its path is looked up
            os.execv("/nonexistent/program", ["program"])
        except OSError as err:
            seen["exec"] = errno.errorcode.get(err.errno, str(err.errno))
        try:
            with open("/proc/self/autogroup", "w") as f:
                f.write("19")
            seen["autogroup"] = "written"
        except OSError as err:
            seen["autogroup"] = errno.errorcode.get(err.errno, str(err.errno))
    """,
    )
    assert seen["dumpable"] is True and seen["still"] == 0 and seen["exec"] == "EPERM", seen
    assert seen["autogroup"] in ("EACCES", "EPERM"), seen
