"""``python -m grader``: see grader.cli."""

import gc
import os
import sys

# The folder the grader was started from is no place to import from: ``python -m`` puts it first
# on the path, and a file there named as a module the grader or numpy imports (``resource.py``,
# ``ctypes.py``) would run as the grader's user, root included, where the folder is one a
# student's process can write to (a shared scratch folder, at the process level). It goes, as
# Python's -P does; the grader itself is imported already.
_here = os.getcwd()
sys.path[:] = [entry for entry in sys.path if entry not in ("", ".", _here)]

# The grader runs on a plain Python, whatever flags the one that started it was given: its
# optimizations (-O, -OO, $PYTHONOPTIMIZE) drop assert statements and docstrings from every module
# it compiles (a check written with assert would pass anything, every check's description would
# be empty), and warnings made errors (-W error, $PYTHONWARNINGS, -bb) would make a numpy warning in
# a check, or in a student's code run in this process, an exception that the sandbox's own Python
# never raises. It starts again without them (every other flag and -X option kept), after the
# working folder left the path and before it imports anything else; the variable below, read and
# removed at once, stops a Python that keeps them regardless from starting again and again.
_WARNED = [option for option in sys.warnoptions if not (sys.flags.dev_mode and option == "default")]


# A student's file run in this process (``check``, which does so by default, or any command at
# ``--isolation none``; every grading command where no sandbox can run) sees this process's
# string hash, which Python draws anew for every run unless $PYTHONHASHSEED fixes it: the order
# of a set of strings, and so a file's answer, changed from one run to the next, and differed from
# the sandbox's, whose hash is fixed at 0. Such a command starts again with the sandbox's hash.
def _runs_students_code_here(argv: list[str]) -> bool:
    words = [word for word in argv if not word.startswith("-")]
    command = words[0] if words else ""
    isolation = ""
    for number, word in enumerate(argv):  # --isolation X, --isolation=X, or a prefix argparse takes
        name, equals, value = word.partition("=")
        if len(name) > 4 and "--isolation".startswith(name):
            isolation = value if equals else (argv[number + 1] if number + 1 < len(argv) else "")
    if isolation == "none":
        return True
    grading = ("check", "grade", "gallery", "gradescope-run", "grade-stream", "catalog", "serve", "batch")
    if os.name == "nt":  # no sandbox runs there: every grading command runs the student's code here
        return command in grading
    return command == "check" and isolation not in ("auto", "namespaces", "process")


_HASHED = bool(sys.flags.hash_randomization) and _runs_students_code_here(sys.argv[1:])
if os.environ.pop("GRADER_PLAIN_PYTHON", None) is None and (sys.flags.optimize or _WARNED or _HASHED):
    import re
    import subprocess

    _env = {k: v for k, v in os.environ.items() if k not in ("PYTHONOPTIMIZE", "PYTHONWARNINGS")}
    _env["GRADER_PLAIN_PYTHON"] = "1"
    _env["PYTHONHASHSEED"] = "0"
    _given, _flags = subprocess._args_from_interpreter_flags(), []
    while _given:
        _flag = _given.pop(0)
        if _flag == "-X":  # each -X option is given again below, all of them
            _given.pop(0)
        elif not re.fullmatch(r"-(O+|b+|W.*)", _flag):  # -OOO and -bbb too
            _flags.append(_flag)
    for _name, _value in sys._xoptions.items():
        _flags += ["-X", _name if _value is True else f"{_name}={_value}"]
    _argv = [sys.executable, *_flags, "-m", "grader", *sys.argv[1:]]
    if os.name == "nt":  # no exec that keeps the console waiting: a child, and its exit status
        sys.exit(subprocess.call(_argv, env=_env))
    os.execve(sys.executable, _argv, _env)

# A standard stream closed where the grader was started (``>&-``) is opened on /dev/null: no file
# the grader opens later takes its number (what a child process writes to its output would land
# in that file), and a report has somewhere to go (nowhere, as Python's print writes to a closed
# output), where it stopped the grader with a traceback.
for _fd in (0, 1, 2):
    try:
        os.fstat(_fd)
    except OSError:
        os.open(os.devnull, os.O_RDWR)  # the lowest free number: this one
for _name, _fd, _mode in (("stdin", 0, "r"), ("stdout", 1, "w"), ("stderr", 2, "w")):
    if getattr(sys, _name) is None:
        setattr(sys, _name, open(_fd, _mode, encoding="utf-8", closefd=False))

# numpy's linear algebra on one thread, as in the sandbox (where the student's code may start no
# thread): the reference's numbers are then the same on every machine, whatever its number of
# processors, and a check pays neither for starting a pool of threads nor for their spinning (a
# sixth of its processor time). Set before numpy is first imported, which reads them once.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

# Hypothesis runs no plugin of another package installed beside it (its "hypothesis" entry points:
# each may register strategies, and so change the examples a check draws): a grade depends on the
# lesson and the submission, not on what else the machine has installed. Looking for them read
# every installed package's metadata at Hypothesis's import (about 10 ms of every command).
os.environ["HYPOTHESIS_NO_PLUGINS"] = "1"

# Nor does it depend on what the shell says to pytest, where the checks run through it: options in
# $PYTEST_ADDOPTS (-x stopped at the first failing check, -k chose some, and the grade was that of
# the checks left, out of their points alone) and plugins in $PYTEST_PLUGINS are the user's for
# their own pytest runs, never for a grade.
for _variable in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS"):
    os.environ.pop(_variable, None)

# Importing the grader (numpy, Hypothesis, pytest) allocates much and frees almost nothing: no
# collection while the command line's modules load, and what they built is set aside for good
# (frozen), so that the collections of the run itself do not walk it again and again (a tenth
# of a second of a grade); the command's own modules (Hypothesis's among them: a grade starts
# its sandbox before it imports them) are frozen once they are loaded.
gc.disable()
from .cli import main  # noqa: E402

gc.freeze()
gc.enable()

# How the process ends (_leave), taken before anything else runs in it: code run in this
# process later (a student's file, where ``check`` runs it here) cannot put another in its place.
_EXIT = os._exit

# A character the terminal's encoding cannot show (a student's message on a Windows console
# whose output is redirected, in cp1252) is printed as an escape, never a crash; on UTF-8
# output nothing changes.
for stream in (sys.stdout, sys.stderr):
    if hasattr(stream, "reconfigure"):
        stream.reconfigure(errors="backslashreplace")


def _leave(code) -> None:
    """End the process with the command's exit status, without the interpreter's own teardown:
    freeing every module and object one by one (numpy's, Hypothesis's, the grader's) took 40 to
    55 ms of a grade, for memory that goes with the process anyway. The exit handlers run first,
    as at any exit (the sandboxes ended, temporary folders removed, logging flushed), then the
    standard streams are flushed; every file the grader writes is closed where it is written.
    Where a thread other than this one still runs (none does once a command has returned), the
    ordinary exit, which waits for it."""
    import atexit  # here, as every import: the working folder has left the path (see the top)
    import threading

    status = code if isinstance(code, int) else (0 if code is None else 1)
    others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    if any(t.is_alive() for t in others):
        sys.exit(code)
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                if stream is not None and not stream.closed:  # none, or closed: nothing to write
                    stream.flush()
            except OSError:  # a reader that went away (| head): the status Python gives then
                status = 120
        _EXIT(status)


_leave(main(loaded=gc.freeze))
