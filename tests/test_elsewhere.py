"""The grader on Windows and macOS, reproduced on Linux (tests/elsewhere.py takes away what
those systems lack): the student side gives the report it gives on Linux, the time limit still
fires, the ``process`` level runs without Linux's pieces, and a level that cannot run says so
in one line.

What is tested is the grader's own workings on each system, not a lesson: the tests grade the
toy lesson (tests/courses/toy), whose grading costs about half the first lesson's."""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time

import pytest

from grader.core.settings import Isolation
from grader.sandbox import wardens
from grader.sandbox.inprocess import Alarm, _watchdog, time_limit

from .elsewhere import grader_on, python_on
from .support import ON_TOY, ROOT, TOY, TOY_BUGGY, TOY_COURSE, compose, python

#: An override of the toy lesson's reference whose center_tokens never returns.
LOOP = "def center_tokens(x):\n    while True:\n        pass\n"
#: A short limit keeps the loop's test to seconds.
LOOPING = ("--only", "center_tokens", "--call-timeout", "1")
#: macOS without what the tests cannot give it here: they run as root, and the only Python lies
#: in root's home, so the process level runs as root, switching to a user of its own as on Linux.
AS_ROOT = ("os.setresuid", "os.setresgid", "os.getresuid")


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict:
    built = tmp_path_factory.mktemp("elsewhere")
    (built / "loop.py").write_text(LOOP, encoding="utf-8")
    return {
        "reference": TOY.solution,
        "bug": TOY_BUGGY,
        "loop": compose(built / "loop.py", built / "loop", TOY),
    }


def _no_traceback(done) -> None:
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout, done.stderr[-3000:]


# -- the student side on Windows: no SIGALRM, fork, resource, fcntl, termios or /proc


@pytest.mark.parametrize("name", ["reference", "bug", "loop"])
def test_check_gives_the_linux_report_on_windows(files, tmp_path, name):
    extra = LOOPING if name == "loop" else ()
    here = python("check", str(files[name]), *ON_TOY, *extra)
    # (without a time limit the loop would run until this timeout)
    there = grader_on(
        "windows", "check", str(files[name]), *ON_TOY, *extra, folder=tmp_path / "windows", timeout=300
    )
    _no_traceback(there)
    assert there.returncode == here.returncode
    assert there.stdout == here.stdout
    if name == "loop":  # the watchdog stopped each call, as the alarm does on Linux
        assert "[TIMEOUT]" in there.stdout and "used more than 1 s of processor time" in there.stdout
    if name == "bug":
        assert "[FAILED]" in there.stdout and "Smallest input found" in there.stdout


def test_every_option_of_check_runs_on_windows(tmp_path):
    bug = str(TOY_BUGGY)
    for options in (("--public",), ("--only", "center_tokens,layer_norm"), ("--max-examples", "3")):
        here = python("check", bug, *ON_TOY, *options)
        there = grader_on("windows", "check", bug, *ON_TOY, *options, folder=tmp_path / "windows")
        _no_traceback(there)
        assert (there.returncode, there.stdout) == (here.returncode, here.stdout), options
    explored = grader_on(
        # random inputs: 40 of them all but never miss this bug (5 sometimes do)
        "windows",
        "check",
        bug,
        *ON_TOY,
        "--explore",
        "--max-examples",
        "40",
        folder=tmp_path / "windows",
    )
    _no_traceback(explored)
    assert explored.returncode == 1 and "with fresh random inputs" in explored.stdout
    stubs = grader_on("windows", "check", *ON_TOY, folder=tmp_path / "windows")
    _no_traceback(stubs)
    assert stubs.returncode == 1 and "not written yet" in stubs.stdout
    # asked for a sandbox: none runs here, so auto says so and runs the code in-process
    auto = grader_on("windows", "check", bug, *ON_TOY, "--isolation", "auto", folder=tmp_path / "windows")
    _no_traceback(auto)
    assert auto.stdout == python("check", bug, *ON_TOY).stdout
    assert "no sandbox can run on this system" in auto.stderr


def test_check_takes_a_file_in_as_on_linux_on_windows(tmp_path):
    """Without descriptors of folders (dir_fd) or O_NOFOLLOW, a link is still refused and a
    missing file still named, in the same words."""
    (tmp_path / "link").mkdir()
    (tmp_path / "link" / TOY.filename).symlink_to(TOY.solution)
    (tmp_path / "plain").mkdir()
    shutil.copy(TOY.solution, tmp_path / "plain" / TOY.filename)
    said = {}
    for target in ("link", "missing", "plain"):
        args = ("check", str(tmp_path / target / TOY.filename), *ON_TOY, "--only", "center_tokens")
        here, there = python(*args), grader_on("windows", *args, folder=tmp_path / "windows")
        _no_traceback(there)
        assert (there.returncode, there.stdout, there.stderr) == (here.returncode, here.stdout, here.stderr)
        said[target] = there.stdout + there.stderr
    assert "symbolic link" in said["link"] and "does not exist" in said["missing"]
    assert "Every check passes" in said["plain"]


def test_a_character_the_console_cannot_show_is_escaped_on_windows(tmp_path):
    """A student's message in characters outside Windows' code page (its output redirected)."""
    override = tmp_path / "override.py"
    override.write_text(
        'def center_tokens(x):\n    raise ValueError("\u2713 \u03b1\u03b2")\n', encoding="utf-8"
    )
    file = compose(override, tmp_path / "sub", TOY)
    args = ("check", str(file), *ON_TOY, "--only", "center_tokens")
    there = grader_on("windows", *args, folder=tmp_path / "windows")
    _no_traceback(there)
    assert there.returncode == 1 and "\\u2713 \\u03b1\\u03b2" in there.stdout
    assert "\u2713 \u03b1\u03b2" in python(*args).stdout  # on Linux, as written


def test_the_student_side_imports_nothing_unix_only_on_windows(tmp_path):
    """The modules a student's command and a notebook's test cells import, on a Python where
    resource, fcntl and termios cannot be imported."""
    done = python_on(
        "windows",
        "-c",
        "import sys; import grader.cli, grader.notebook, grader.plugin, grader.marks, grader.expect; "
        "import grader.commands.cell, grader.commands.check, grader.commands.release; "
        "print(sorted(m for m in ('resource', 'fcntl', 'termios') if m in sys.modules))",
        folder=tmp_path / "windows",
    )
    _no_traceback(done)
    assert done.returncode == 0 and done.stdout.strip() == "[]"
    # and the emulation does take them away
    assert python_on("windows", "-c", "import fcntl", folder=tmp_path / "windows").returncode == 1


#: What an nbgrader test cell does, for every exercise of the file named first.
_CELLS = """
import json, sys
import grader.core.settings
from grader.notebook import grade_here
grader.core.settings.DEFAULT_CALL_TIMEOUT = 1.0  # a loop's test takes seconds, not a minute
namespace = {}
exec(compile(open(sys.argv[1]).read(), sys.argv[1], "exec"), namespace)
points = {e: grade_here(e, namespace, lesson="toy", show=False) for e in sys.argv[2].split(",")}
print(json.dumps(points))
"""


@pytest.mark.parametrize("name, exercises", [("bug", "center_tokens,layer_norm"), ("loop", "center_tokens")])
def test_the_notebook_test_cells_give_the_linux_points_on_windows(files, tmp_path, name, exercises):
    """The cells find their course as a notebook in it does: from the working folder."""
    cells = ("-c", _CELLS, str(files[name]), exercises)
    here = python_on("linux", *cells, folder=tmp_path / "linux", cwd=TOY_COURSE)
    there = python_on("windows", *cells, folder=tmp_path / "windows", cwd=TOY_COURSE)
    _no_traceback(there)
    assert here.returncode == there.returncode == 0, there.stderr[-2000:]
    assert json.loads(there.stdout) == json.loads(here.stdout)
    if name == "loop":
        assert json.loads(there.stdout) == {"center_tokens": 0}  # stopped by the time limit, not hung
    else:
        points = json.loads(there.stdout)
        assert 0 < points["center_tokens"] < 6 and points["layer_norm"] > 0  # off by the mean


def test_the_release_and_its_readme_commands_work_on_windows(tmp_path):
    release = tmp_path / "release"
    assert python("release", *ON_TOY, str(release)).returncode == 0
    readme = (release / "README.md").read_text(encoding="utf-8")
    assert r".venv\Scripts\activate" in readme  # how to set up on Windows
    shutil.copy(TOY_BUGGY, release / "exercises" / TOY.filename)
    for options in ((), ("--only", "center_tokens"), ("--explore", "--max-examples", "5")):
        here = python_on("linux", "-m", "grader", "check", *options, folder=tmp_path / "linux", cwd=release)
        there = grader_on("windows", "check", *options, folder=tmp_path / "windows", cwd=release)
        _no_traceback(there)
        if "--explore" in options:  # random inputs: 5 of them may miss the bug, on either system
            assert there.returncode in (0, 1) and "Total" in there.stdout, there.stderr[-2000:]
            continue
        assert there.returncode == here.returncode == 1
        assert there.stdout == here.stdout
    tests = python_on(
        "windows", "-m", "pytest", "-q", "-p", "no:cacheprovider", folder=tmp_path / "windows", cwd=release
    )
    assert tests.returncode == 1 and " failed" in tests.stdout and " passed" in tests.stdout


def test_the_commands_that_run_no_student_code_work_on_windows(tmp_path):
    windows = tmp_path / "windows"
    for args in (
        ("release", *ON_TOY, str(tmp_path / "release")),
        ("gradescope-bundle", *ON_TOY, str(tmp_path / "autograder.zip")),
        ("nbgrader-course", *ON_TOY, str(tmp_path / "course")),
        ("exercises", *ON_TOY, "--check"),
    ):
        done = grader_on("windows", *args, folder=windows)
        _no_traceback(done)
        assert done.returncode == 0, (args, done.stderr[-2000:])
    assert (tmp_path / "autograder.zip").is_file()
    assert (tmp_path / "course" / "source" / "toy" / "toy.ipynb").is_file()


def test_the_release_workflow_runs_on_the_three_systems(tmp_path):
    workflow = (ROOT / "grader/commands/release_files/classroom.yml").read_text(encoding="utf-8")
    assert "runs-on: ${{ matrix.os }}" in workflow
    assert "os: [ubuntu-latest, windows-latest, macos-latest]" in workflow
    assert "shell: bash" in workflow  # the install line reads the same in the three shells


# -- the instructor side: where a level cannot run, one line


def _one_line_refusal(done) -> str:
    _no_traceback(done)
    lines = [line for line in done.stderr.splitlines() if line.startswith("grader: ")]
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-2000:]
    return lines[0]


def test_windows_refuses_the_sandboxes_and_batch_in_one_line(tmp_path):
    windows = tmp_path / "windows"
    for level in ("process", "namespaces"):
        line = _one_line_refusal(
            grader_on("windows", "grade", str(TOY.solution), *ON_TOY, "--isolation", level, folder=windows)
        )
        assert f"the {level} level needs" in line and "--isolation none" in line
    line = _one_line_refusal(
        grader_on(
            "windows", "batch", str(TOY.gallery), *ON_TOY, "--out", str(tmp_path / "g.csv"), folder=windows
        )
    )
    assert "batch runs on Linux and macOS" in line
    assert not (tmp_path / "g.sqlite").exists()
    graded = grader_on("windows", "grade", str(TOY.solution), *ON_TOY, "--format", "json", folder=windows)
    _no_traceback(graded)
    inside = python("grade", str(TOY.solution), *ON_TOY, "--format", "json", "--isolation", "none")
    assert json.loads(graded.stdout) == json.loads(inside.stdout)  # as on Linux at the none level
    assert json.loads(graded.stdout)["isolation"] == "none"
    assert "no sandbox can run on this system" in graded.stderr


def test_macos_as_root_refuses_the_process_level_in_one_line(tmp_path):
    line = _one_line_refusal(
        grader_on(
            "macos", "grade", str(TOY.solution), *ON_TOY, "--isolation", "process", folder=tmp_path / "macos"
        )
    )
    assert "run the grader as an ordinary user" in line
    # nor does auto fall back to running the student's code as root in the grader
    tools = tmp_path / "bin"  # the tools the emulation needs, and no bubblewrap or setpriv
    tools.mkdir()
    for tool in ("sh", "unshare", "mount"):
        (tools / tool).symlink_to(shutil.which(tool))
    auto = grader_on(
        "macos",
        "grade",
        str(TOY.solution),
        *ON_TOY,
        folder=tmp_path / "macos",
        env={**os.environ, "PATH": str(tools)},
    )
    assert "run the grader as an ordinary user" in _one_line_refusal(auto)


def test_the_namespaces_level_needs_linux(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    assert "needs Linux with bubblewrap" in wardens.level_problem(Isolation.NAMESPACES)
    assert wardens.level_problem(Isolation.NONE) == ""


@pytest.fixture()
def private_course():
    """The reference and the hidden checks unreadable to other users, as the process level as
    root requires."""
    private = [TOY.solution.parent, TOY.checks / "hidden"]
    modes = {p: p.stat().st_mode & 0o7777 for p in private}
    for p in private:
        p.chmod(0o700)
    try:
        yield
    finally:
        for p, mode in modes.items():
            p.chmod(mode)


@pytest.mark.parametrize("name", ["reference", "bug", "loop"])
def test_the_process_level_gives_the_linux_report_on_macos(files, tmp_path, private_course, name):
    extra = LOOPING if name == "loop" else ()
    args = ("grade", str(files[name]), *ON_TOY, "--isolation", "process", "--format", "json", *extra)
    here = python(*args)
    there = grader_on("macos", *args, folder=tmp_path / "macos", keep=AS_ROOT)
    _no_traceback(there)
    assert here.returncode == there.returncode == 0, there.stderr[-2000:]
    assert json.loads(there.stdout) == json.loads(here.stdout)
    if name == "loop":
        assert {t["status"] for t in json.loads(there.stdout)["tests"]} == {"timeout"}


_PROBE = """
def center_tokens(x):
    import ctypes, fcntl, os, signal
    seen = [hasattr(fcntl, "F_SETSIG"), hasattr(signal, "sigtimedwait"),
            hasattr(os, "sched_setaffinity"), hasattr(ctypes.CDLL(None), "prctl"), _opens()]
    raise ValueError(f"seen {sum(seen)} of 5")


def _opens():
    try:
        open("/proc/self/status").close()
        return True
    except OSError:
        return False
"""


def test_the_macos_emulation_reaches_the_sandbox(tmp_path, private_course):
    """The sandbox's warden, keeper and worker run without F_SETSIG, prctl, sched_setaffinity
    and /proc too (the keeper then compares the arguments once it has read each answer)."""
    probe = tmp_path / "probe.py"
    probe.write_text(_PROBE, encoding="utf-8")
    file = compose(probe, tmp_path / "probe", TOY)
    args = ("grade", str(file), *ON_TOY, "--isolation", "process", "--only", "center_tokens")
    assert "seen 5 of 5" in python(*args).stdout
    there = grader_on("macos", *args, folder=tmp_path / "macos", keep=AS_ROOT)
    _no_traceback(there)
    assert "seen 0 of 5" in there.stdout


# -- the watchdog itself, in this process


def test_the_watchdog_stops_a_loop_in_any_thread():
    stopped = []

    def loop():
        try:
            with _watchdog(0.2):
                while True:
                    pass
        except Alarm:
            stopped.append(threading.current_thread().name)

    loop()
    worker = threading.Thread(target=loop, name="not-main")
    worker.start()
    worker.join(30)
    assert stopped == ["MainThread", "not-main"]


def test_no_alarm_outlives_its_block():
    """Blocks that end just as their time is up: no Alarm arrives after the block."""
    for _ in range(300):
        try:
            with _watchdog(0.0005):
                sum(range(2000))
        except Alarm:
            pass
    end = time.monotonic() + 0.2
    while time.monotonic() < end:  # an Alarm still pending would be raised here
        pass


def test_time_limit_takes_the_watchdog_outside_the_main_thread():
    """Where no signal can reach the block (a thread of its own), the watchdog does."""
    stopped = []

    def loop():
        try:
            with time_limit(0.2):
                while True:
                    pass
        except Alarm:
            stopped.append(True)

    worker = threading.Thread(target=loop)
    worker.start()
    worker.join(30)
    assert stopped == [True]
