"""Run the grader as on a system that lacks Linux's pieces: Windows (no ``SIGALRM``, no
``fork``, no ``resource`` or ``fcntl``, no ``/proc``) or macOS (POSIX, but no ``F_SETSIG``,
``prctl``, ``sched_setaffinity``, ``setresuid`` or ``/proc``).

CI runs on Linux only, so these tests take the pieces away before the grader is imported:
the modules become unimportable (a finder on ``sys.meta_path`` that raises ImportError), the
attributes are deleted and ``ctypes`` finds no ``prctl``; ``/proc`` is really gone (an empty
folder is mounted over it, in a mount namespace of the run's own: the tests run as root). The
prelude is written as a ``sitecustomize.py`` on ``PYTHONPATH``, so every Python the grader
starts gets it too; a Python started isolated (``-I -S -c CODE``: the sandbox's warden) gets it
through ``subprocess.Popen``, which the prelude wraps to put itself before ``CODE``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .support import ROOT

#: What each system lacks: modules that cannot be imported and attributes of modules that do not
#: exist. Every system but Linux also lacks prctl and /proc.
LACKS = {
    "linux": {"modules": (), "attributes": {}},  # nothing: the same run, for comparison
    "windows": {
        "modules": ("resource", "fcntl", "termios", "pty", "tty", "grp", "pwd", "syslog", "posix_ipc"),
        "attributes": {
            "signal": tuple(
                "SIGALRM SIGKILL SIGCHLD SIGSTOP SIGCONT SIGXFSZ SIGHUP SIGQUIT SIGUSR1 SIGUSR2 setitimer "
                "getitimer alarm pause pthread_kill pthread_sigmask sigtimedwait sigwaitinfo siginterrupt "
                "ITIMER_REAL ITIMER_VIRTUAL ITIMER_PROF".split()
            ),
            # (getuid and geteuid stay: libraries that see sys.platform == "linux" read them at
            # import, as they read nothing of the kind on Windows)
            "os": tuple(
                "fork forkpty sched_setaffinity sched_getaffinity setsid killpg setresuid setresgid "
                "getresuid setuid setgid setgroups getpgid setpgid WNOHANG WUNTRACED sysconf "
                "getloadavg O_DIRECTORY O_NOFOLLOW O_NONBLOCK O_CLOEXEC O_NOCTTY".split()
            ),
            "socket": ("send_fds", "recv_fds", "AF_UNIX"),
        },
    },
    "macos": {
        "modules": (),
        "attributes": {
            "fcntl": ("F_SETSIG",),
            "signal": ("sigtimedwait", "sigwaitinfo"),
            "os": ("sched_setaffinity", "sched_getaffinity", "setresuid", "setresgid", "getresuid"),
        },
    },
}

_PRELUDE = """
# ---- the grader's tests: this Python as on {system} (tests/elsewhere.py) ----
import ctypes as _c, importlib.abc as _a, sys as _s
# the standard library of this (Linux) Python reads these at import: it works as it would elsewhere
import subprocess as _sp, selectors, tempfile, shutil, getpass  # noqa: F401
_LACKS = {lacks!r}
class _Missing(_a.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in _LACKS["modules"]:
            raise ImportError(f"No module named {{name!r}} on {system}", name=name)
        return None
for _name in _LACKS["modules"]:
    _s.modules.pop(_name, None)
_s.meta_path.insert(0, _Missing())
for _module, _names in _LACKS["attributes"].items():
    _m = __import__(_module)
    for _n in _names:
        if hasattr(_m, _n):
            delattr(_m, _n)
if {system!r} == "windows":  # no function takes a folder's descriptor (dir_fd)
    import os as _o
    def _no_dir_fd(_real):
        def _called(*args, dir_fd=None, **kwargs):
            if dir_fd is not None:
                raise NotImplementedError(f"dir_fd unavailable on this platform")
            return _real(*args, **kwargs)
        return _called
    for _n in ("open", "stat", "unlink", "rmdir", "mkdir", "rename", "chmod", "utime", "readlink"):
        setattr(_o, _n, _no_dir_fd(getattr(_o, _n)))
    _o.supports_dir_fd = set()
    shutil._use_fd_functions = False  # as shutil decides at import, where there is no dir_fd
class _NoPrctl(_c.CDLL):
    def __getattr__(self, name):
        if name in ("prctl", "syscall"):
            raise AttributeError(name)
        return super().__getattr__(name)
if {system!r} != "linux":
    _c.CDLL = _NoPrctl
class _Popen(_sp.Popen):
    def __init__(self, args, *rest, **kwargs):
        if isinstance(args, list) and "-c" in args[:-1] and "-S" in args:  # an isolated Python
            args = list(args)
            at = args.index("-c") + 1
            args[at] = _PRELUDE + "\\n" + args[at]
        super().__init__(args, *rest, **kwargs)
_sp.Popen = _Popen
# ---- end of the prelude ----
"""


def prelude(system: str, keep: tuple[str, ...] = ()) -> str:
    """Python that takes away what ``system`` lacks (but the attributes named in ``keep``, as
    ``os.setresuid``), in the Python that runs it."""
    lacks = LACKS[system]
    lacks = {
        "modules": lacks["modules"],
        "attributes": {
            module: tuple(n for n in names if f"{module}.{n}" not in keep)
            for module, names in lacks["attributes"].items()
        },
    }
    text = _PRELUDE.format(system=system, lacks=lacks)
    return f"_PRELUDE = {text!r}\n{text}"


#: Mount an empty folder over /proc (in the mount namespace of the run alone), then run "$@".
_NO_PROC = 'mount -t tmpfs -o size=4k,mode=0555 none /proc && exec "$@"'


def _hides_proc() -> bool:
    """Whether this machine lets the tests hide /proc (root, unshare, and mounts allowed)."""
    if os.name != "posix" or os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        _NO_PROC,
        "sh",
        "test",
        "!",
        "-e",
        "/proc/self",
    ]
    return subprocess.run(probe, capture_output=True, timeout=60, check=False).returncode == 0


HIDES_PROC = _hides_proc()


def python_on(
    system: str, *args: str, folder: Path, keep: tuple[str, ...] = (), timeout: float = 600, **kwargs
) -> subprocess.CompletedProcess:
    """``python ARGS`` run (from the repository root, unless ``cwd`` says) as on ``system``;
    ``folder`` (a new folder of the test's) holds the prelude as ``sitecustomize.py``."""
    if system != "linux" and not HIDES_PROC:
        pytest.skip("hiding /proc needs root, unshare and mounts (as in CI)")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(prelude(system, keep), encoding="utf-8")
    env = {**kwargs.pop("env", os.environ)}
    env["PYTHONPATH"] = str(folder)
    if system == "windows":  # what Windows writes to a pipe or a file: its ANSI code page
        env["PYTHONIOENCODING"] = "cp1252"
    command = [sys.executable, *args]
    if system != "linux":  # /proc is really gone: an empty folder mounted over it, for this run only
        command = ["unshare", "--mount", "--propagation", "private", "sh", "-c", _NO_PROC, "sh", *command]
    return subprocess.run(
        command,
        cwd=kwargs.pop("cwd", ROOT),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        **kwargs,
    )


def grader_on(system: str, *args: str, folder: Path, **kwargs) -> subprocess.CompletedProcess:
    """``python -m grader ARGS`` as on ``system`` (see :func:`python_on`)."""
    return python_on(system, "-m", "grader", *args, folder=folder, **kwargs)
