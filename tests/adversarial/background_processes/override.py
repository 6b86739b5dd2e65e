# Robustness: correct functions, but the file leaves processes behind, once per worker:
# a subprocess.Popen in a new session, an os.fork + os.setsid child, and a classic double-fork
# daemon. Each one waits, then tries to write a marker file on the host (into /tmp, the
# repository and the test's temporary folder) and stays alive for two minutes. Every
# process carries {{MARKER}} in its argv and its environment so the test can look for it.
import builtins
import os
import subprocess

_MARK = "{{MARKER}}"
_SCRIPT = (
    "sleep 1; for f in /tmp/$0-$1 {{ROOT}}/$0-$1 {{HOST_TMP}}/$0-$1 {{HOME}}/$0-$1; do"
    " echo alive > $f 2>/dev/null; done; sleep 120"
)
_ENV = {"ADV_MARKER": _MARK, "PATH": "/usr/bin:/bin"}


def _popen():
    subprocess.Popen(
        ["/bin/sh", "-c", _SCRIPT, _MARK, "popen"],
        env=_ENV,
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _fork_setsid():
    if os.fork() == 0:
        try:
            os.setsid()
            os.execve("/bin/sh", ["/bin/sh", "-c", _SCRIPT, _MARK, "setsid"], _ENV)
        finally:
            os._exit(0)


def _double_fork():
    child = os.fork()
    if child == 0:
        try:
            os.setsid()
            if os.fork() == 0:
                os.chdir("/")
                os.umask(0)
                os.execve("/bin/sh", ["/bin/sh", "-c", _SCRIPT, _MARK, "daemon"], _ENV)
        finally:
            os._exit(0)
    os.waitpid(child, 0)


if not hasattr(builtins, "_background_started"):
    builtins._background_started = True
    for _start in (_popen, _fork_setsid, _double_fork):
        try:
            _start()
        except OSError:
            pass
