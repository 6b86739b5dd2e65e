"""Run the grader as on a system that lacks Linux's pieces: Windows (no ``SIGALRM``, no
``fork``, no ``resource`` or ``fcntl``, no ``/proc``) or macOS (POSIX, but no ``F_SETSIG``,
``prctl``, ``sched_setaffinity``, ``setresuid`` or ``/proc``).

CI runs on Linux only, so these tests take the pieces away before the grader is imported:
the modules become unimportable (a finder on ``sys.meta_path`` that raises ImportError), the
attributes are deleted, ``/proc`` cannot be opened and ``ctypes`` finds no ``prctl``. The
prelude is written as a ``sitecustomize.py`` on ``PYTHONPATH``, so every Python the grader
starts gets it too; a Python started isolated (``-I -S -c CODE``: the sandbox's warden) gets it
through ``subprocess.Popen``, which the prelude wraps to put itself before ``CODE``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .support import ROOT

#: What each system lacks: modules that cannot be imported, attributes of modules that do not
#: exist, and whether /proc and prctl exist.
LACKS = {
    "windows": {
        "modules": ("resource", "fcntl", "termios", "pty", "tty", "grp", "pwd", "syslog", "posix_ipc"),
        "attributes": {
            "signal": (
                "SIGALRM", "SIGKILL", "SIGCHLD", "SIGSTOP", "SIGCONT", "SIGXFSZ", "SIGHUP", "SIGQUIT",
                "SIGUSR1", "SIGUSR2", "setitimer", "getitimer", "alarm", "pause", "pthread_kill",
                "pthread_sigmask", "sigtimedwait", "sigwaitinfo", "siginterrupt", "ITIMER_REAL",
                "ITIMER_VIRTUAL", "ITIMER_PROF",
            ),
            "os": (
                "fork", "forkpty", "sched_setaffinity", "sched_getaffinity", "getuid", "geteuid",
                "getgid", "getegid", "setsid", "killpg", "setresuid", "setresgid", "getresuid",
                "setuid", "setgid", "setgroups", "getpgid", "setpgid", "WNOHANG", "WUNTRACED",
                "sysconf", "getloadavg",
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

_PRELUDE = '''
# ---- the grader's tests: this Python as on {system} (tests/elsewhere.py) ----
import builtins as _b, ctypes as _c, importlib.abc as _a, io as _io, os as _o, sys as _s
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
def _no_proc(_real):
    def _opened(path, *args, **kwargs):
        if isinstance(path, (str, bytes, _o.PathLike)) and _o.fsdecode(path).startswith("/proc"):
            raise FileNotFoundError(2, "No such file or directory (no /proc on {system})", _o.fsdecode(path))
        return _real(path, *args, **kwargs)
    return _opened
_b.open = _io.open = _no_proc(_io.open)
_o.open = _no_proc(_o.open)
_o.listdir = _no_proc(_o.listdir)
_o.scandir = _no_proc(_o.scandir)
class _NoPrctl(_c.CDLL):
    def __getattr__(self, name):
        if name in ("prctl", "syscall"):
            raise AttributeError(name)
        return super().__getattr__(name)
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
'''


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


def grader_on(
    system: str, *args: str, folder: Path, keep: tuple[str, ...] = (), timeout: float = 600, **kwargs
):
    """``python -m grader ARGS`` run (from the repository root, unless ``cwd`` says) as on
    ``system``; ``folder`` (a new folder of the test's) holds the prelude as ``sitecustomize.py``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(prelude(system, keep), encoding="utf-8")
    env = {**kwargs.pop("env", os.environ)}
    env["PYTHONPATH"] = os.pathsep.join([str(folder), str(ROOT)])
    return subprocess.run(
        [sys.executable, "-m", "grader", *args],
        cwd=kwargs.pop("cwd", ROOT),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        **kwargs,
    )
