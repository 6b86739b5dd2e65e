"""The grader run by an ordinary user (an instructor's account, a CI runner that is not root).

bubblewrap then builds the sandbox as that user, and inside it that user is the student's too:
the folders it makes on the way to each read-only bind (the file system's root, the folders
leading to Python and numpy, below /tmp where a project lives there) and /dev are the student's
to write in, unless the grader closes them. Nothing a submission writes there may reach the
next submission graded by the same process (a batch's job, the service).

The tests become an ordinary user of their own (as root: ``setpriv``), in a private mount
namespace where this Python is reachable by such a user (``unshare``: a Python installed below
root's home, which others cannot enter, is bound again below a folder they can).
"""

from __future__ import annotations

import csv
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from grader.sandbox.wardens import best_level

from .support import ROOT, TOY, TOY_COURSE

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap and setpriv: Linux"),
    pytest.mark.skipif(os.name == "posix" and os.geteuid() != 0, reason="becoming another user needs root"),
    pytest.mark.skipif(
        not (shutil.which("unshare") and shutil.which("setpriv")), reason="needs unshare and setpriv"
    ),
    pytest.mark.skipif(best_level() != "namespaces", reason="bubblewrap is not usable here"),
]

#: The folders a submission is asked to leave something in: the file system's root, /dev's
#: shared memory, and every folder on the way to numpy (its ``site-packages`` included).
PLANTER = """
# plants a module that would stand in for the standard library's, and a note, wherever it can
import os as _os, numpy as _np

def _places():
    site = _os.path.dirname(_os.path.dirname(_os.path.realpath(_np.__file__)))
    folders = ["/", "/dev", "/dev/shm", "/tmp"]
    here = site
    while here not in ("/", ""):
        folders.append(here)
        here = _os.path.dirname(here)
    return folders

for _folder in _places():
    for _name, _text in (("statistics.py", "raise ImportError('planted')\\n"), ("note-from-a1.txt", "a1")):
        try:
            with open(_os.path.join(_folder, _name), "w") as _f:
                _f.write(_text)
        except OSError:
            pass
"""

#: Looks for what the planter left (its own ``import statistics`` fails if the plant is found
#: before the standard library's module) and says so in a failing check.
CANARY = """
import statistics  # an honest import of the standard library's
import os as _os, numpy as _np

_site = _os.path.dirname(_os.path.dirname(_os.path.realpath(_np.__file__)))
_found = []
_here = _site
for _folder in ["/", "/dev", "/dev/shm", "/tmp"]:
    _found += [_os.path.join(_folder, n) for n in _os.listdir(_folder) if n.startswith("note-from")]
while _here not in ("/", ""):
    _found += [_os.path.join(_here, n) for n in _os.listdir(_here) if n.startswith("note-from")]
    _here = _os.path.dirname(_here)

if _found:
    def center_tokens(x):
        raise ValueError("FOUND " + " ".join(_found))
"""

#: Takes over the sandbox's first process (found by a red-team review: as an ordinary user
#: bubblewrap's own first process was the student's user's, which ``kill(-1)`` never reaches):
#: it traces it and has it run a program that kills every later classmate's worker.
INJECTOR = r"""
# a1-attacker: makes the sandbox's PID 1 (bubblewrap's init, spared by every kill(-1)) its own
import ctypes as _ct, os as _os, sys as _sys

_SPY = r'''
import os, time, signal
while True:
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                ppid = int(open("/proc/%s/stat" % p).read().rsplit(")", 1)[1].split()[1])
                gp = int(open("/proc/%d/stat" % ppid).read().rsplit(")", 1)[1].split()[1])
                if gp == 2:
                    os.kill(int(p), signal.SIGKILL)
            except (OSError, ValueError, IndexError):
                pass
    time.sleep(0.002)
'''


def _inject(spy, pid=1):
    libc = _ct.CDLL(None, use_errno=True)
    libc.ptrace.restype = _ct.c_long
    libc.ptrace.argtypes = [_ct.c_long, _ct.c_long, _ct.c_void_p, _ct.c_void_p]

    def pt(req, data=None):
        if libc.ptrace(req, pid, None, data) == -1:
            raise OSError(_ct.get_errno(), "ptrace")

    pt(0x4206)  # PTRACE_SEIZE
    pt(0x4207)  # PTRACE_INTERRUPT
    _os.waitpid(pid, 0x40000000)  # __WALL
    regs = (_ct.c_ulong * 27)()
    pt(12, _ct.addressof(regs))  # PTRACE_GETREGS
    rip = regs[16]
    strings = [_os.path.realpath(_sys.executable).encode(), b"-I", b"-S", b"-c", spy.encode()]
    base, blob, ptrs = rip + 16, b"", []
    for s in strings:
        ptrs.append(base + len(blob))
        blob += s + b"\0"
    blob += b"\0" * (-len(blob) % 8)
    argv = base + len(blob)
    blob += b"".join(p.to_bytes(8, "little") for p in ptrs) + b"\0" * 8
    envp = base + len(blob)
    blob += b"\0" * 8
    fd = _os.open("/proc/%d/mem" % pid, _os.O_RDWR)
    _os.pwrite(fd, b"\x0f\x05", rip)  # a syscall instruction where it stands
    _os.pwrite(fd, blob, base)
    _os.close(fd)
    # execve(python, [python, -I, -S, -c, SPY], []), and no restart of the interrupted call
    regs[10], regs[14], regs[13], regs[12], regs[15] = 59, ptrs[0], argv, envp, (1 << 64) - 1
    pt(13, _ct.addressof(regs))  # PTRACE_SETREGS
    pt(17)  # PTRACE_DETACH


try:
    _inject(_SPY)
except Exception:
    pass
# --- end of the attacker's part; the reference follows
"""


def _closed_ancestor(path: Path) -> Path | None:
    """The first folder on the way to ``path`` that users other than its owner cannot enter."""
    for folder in [*reversed(path.parents), path]:
        if folder != Path("/") and not folder.stat().st_mode & 0o001:
            return folder
    return None


def _as_ordinary_user(
    uid: int, command: list[str], *, home: Path, hold: Path, numpy_in: Path | None = None
) -> subprocess.CompletedProcess:
    """Run ``command`` as ``uid`` (no groups, no capabilities) in a private mount namespace in
    which each folder on the way to this Python, its standard library and numpy can be entered
    (with ``numpy_in``, a folder holding a copy of numpy that the command imports instead)."""
    needed = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), Path(np.__file__).resolve().parent}
    needed |= {Path(sys.executable).resolve().parent, ROOT.resolve()}
    script = ["set -e"]
    closed = sorted({c for p in needed if (c := _closed_ancestor(p)) is not None})
    for number, folder in enumerate(closed):
        held = hold / str(number)
        held.mkdir()
        script.append(f"mount --bind {shlex.quote(str(folder))} {shlex.quote(str(held))}")
        script.append(f"mount -t tmpfs -o mode=755 tmpfs {shlex.quote(str(folder))}")
        below = sorted(p for p in needed if folder == p or folder in p.parents)
        for path in [p for p in below if not any(q in p.parents for q in below)]:
            inside = held / path.relative_to(folder)
            script.append(f"mkdir -p {shlex.quote(str(path))}")
            script.append(f"mount --bind {shlex.quote(str(inside))} {shlex.quote(str(path))}")
    environment = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "TMPDIR": str(home),
        "LANG": "C.UTF-8",
        "GRADER_REPLAY_STORE": "off",
        **({"PYTHONPATH": str(numpy_in)} if numpy_in is not None else {}),
    }
    user = [
        "setpriv",
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "--inh-caps=-all",
        "env",
        "-i",
        *(f"{k}={v}" for k, v in environment.items()),
        *command,
    ]
    script.append("exec " + shlex.join(user))
    return subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "bash", "-c", "\n".join(script)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _batch_as_ordinary_user(shared: Path, files: dict[str, str], *, numpy_in: Path | None = None):
    """Grade ``files`` (student -> source of the toy lesson's file) in one ``--jobs 1`` batch run
    by an ordinary user of the test's own: (each student's gradebook row, the reports' folder)."""
    uid = 61_000 + os.getpid() % 1_000
    klass, home, hold, course = shared / "class", shared / "home", shared / "hold", shared / "course"
    # a copy of the toy course that the user may read (another test makes parts of the course
    # private while it runs, maybe at the same time)
    shutil.copytree(TOY_COURSE, course, ignore=shutil.ignore_patterns("__pycache__"))
    for path in (course, *course.rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)
    for folder in (home, hold, *(klass / student for student in files)):
        folder.mkdir(parents=True)
    for student, source in files.items():
        (klass / student / TOY.filename).write_text(source)
    for path in (klass, *klass.rglob("*"), home):
        os.chown(path, uid, uid)
    out = home / "grades" / "gradebook.csv"
    done = _as_ordinary_user(
        uid,
        [sys.executable, "-m", "grader", "batch", str(klass), "--out", str(out), "--jobs", "1"]
        + ["--course", str(course), "--lesson", TOY.name],
        home=home,
        hold=hold,
        numpy_in=numpy_in,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    with out.open(newline="") as f:
        return {row["student"]: row for row in csv.DictReader(f)}, out.with_name("gradebook_reports")


@pytest.fixture
def shared():
    """A folder below /tmp that another user can enter (pytest's own are root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="grader-ordinary-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("numpy_below_tmp", [False, True], ids=["numpy-where-it-is", "numpy-below-tmp"])
def test_nothing_a_submission_leaves_in_the_sandbox_reaches_the_next_one(shared, numpy_below_tmp):
    """A submission plants a module named after one of the standard library's, and a note, in
    every folder of the sandbox it can reach (the root, /dev, the folders on the way to numpy);
    the classmate graded right after it by the same grading job imports that module and looks
    for the note. It gets full marks, as it does alone: the sandbox's own folders are read-only,
    and the wipe between submissions looks into every folder of /tmp the sandbox was built with
    (numpy, or a project's virtual environment, may live below /tmp: a CI runner's clone; here
    a copy of numpy there stands for it)."""
    numpy_in = None
    if numpy_below_tmp:
        numpy_in = shared / "venv" / "lib" / "site-packages"
        installed = Path(np.__file__).resolve().parent
        for name in ("numpy", "numpy.libs"):
            if installed.with_name(name).is_dir():
                shutil.copytree(installed.with_name(name), numpy_in / name)
    reference = TOY.solution.read_text()
    rows, reports = _batch_as_ordinary_user(
        shared, {"a1-planter": PLANTER + reference, "a2-canary": reference + CANARY}, numpy_in=numpy_in
    )
    canary = (reports / "a2-canary.txt").read_text()
    assert rows["a2-canary"]["score"] == rows["a2-canary"]["max_score"], canary
    assert "FOUND" not in canary and "planted" not in canary
    assert rows["a1-planter"]["score"] == rows["a1-planter"]["max_score"]


#: Changes the sandbox's own folders, which as an ordinary user are the student's: a note in an
#: extended attribute, a default ACL that gives every new file no permission at all, and the
#: work folder's mode (found by a red-team review).
FOLDER_CHANGER = """
import os as _o, struct as _s
_acl = _s.pack("<I", 2) + b"".join(_s.pack("<HHI", _t, 0, 0xFFFFFFFF) for _t in (1, 4, 0x20))
for _d in ("/tmp", "/sandbox"):
    for _name, _value in (("user.note", b"a1 was here"), ("system.posix_acl_default", _acl)):
        try:
            _o.setxattr(_d, _name, _value)
        except OSError:
            pass
try:
    _o.chmod("/tmp", 0o555)
except OSError:
    pass
"""

#: Writes a file of its own in /tmp and reads it back, and looks for a note on the folder.
SCRATCH_USER = """
import os as _o, tempfile as _tf
with _tf.TemporaryFile() as _scratch:
    _scratch.write(b"cache")
with open("/tmp/scratch.txt", "w") as _f:
    _f.write("mine")
_note = [n for n in _o.listxattr("/tmp") if n.startswith("user.")]
if open("/tmp/scratch.txt").read() != "mine" or _note:
    def center_tokens(x):
        raise ValueError("FOUND " + " ".join(_note))
"""


@pytest.mark.parametrize("attack", ["first-process", "own-folders"])
def test_a_submission_cannot_take_the_sandbox_over_for_the_next_one(shared, attack):
    """As an ordinary user, the sandbox's first process and its folders /tmp and /sandbox are
    the student's user's. A submission that traces the first process to run its own program
    there, or that changes those folders (their mode, an extended attribute, a default ACL),
    leaves the classmate graded right after it by the same grading job untouched: the warden is
    the first process (it cannot be traced, and the sandbox's filter refuses ptrace), and a
    sandbox whose folders changed is replaced."""
    reference = TOY.solution.read_text()
    attacker = INJECTOR if attack == "first-process" else FOLDER_CHANGER
    rows, reports = _batch_as_ordinary_user(
        shared, {"a1-attacker": attacker + reference, "a2-canary": reference + SCRATCH_USER}
    )
    canary = (reports / "a2-canary.txt").read_text()
    assert rows["a2-canary"]["score"] == rows["a2-canary"]["max_score"], canary
