"""The ``process`` isolation level: what a machine without bubblewrap gets (macOS, Windows' WSL
without it, a locked-down container). No namespaces, but the same warden, limits and clean-up."""

from __future__ import annotations

import importlib.util
import json
import os
import py_compile
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from .support import ON_TOY, TOY, TOY_BUGGY, live_processes, python

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the process level needs POSIX")

#: The toy lesson's points, all of them. The process level's workings are the grader's, not a
#: lesson's: every test here grades the toy lesson.
FULL = 14


@pytest.fixture(autouse=True)
def private_course():
    """The course as the README asks for grading at the process level as root: the reference
    and the hidden checks unreadable to other users (the grader refuses otherwise)."""
    private = [TOY.solution.parent, TOY.checks / "hidden"]
    modes = {p: p.stat().st_mode & 0o7777 for p in private}
    for p in private:
        p.chmod(0o700)
    try:
        yield
    finally:
        for p, mode in modes.items():
            p.chmod(mode)


def grade(folder: Path, *extra: str, isolation: str = "process", tmp: Path | None = None) -> dict:
    env = {**os.environ, "TMPDIR": str(tmp)} if tmp is not None else None
    done = python("grade", str(folder), "--format", "json", "--isolation", isolation, *extra, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    return json.loads(done.stdout)


#: A bug of the toy lesson's that only an audited call catches: the input is centred in place.
IN_PLACE = """
def center_tokens(x):
    x -= token_mean(x)
    return x
"""


def test_scores_equal_those_graded_in_process(tmp_path):
    """The reference and two bugs (one caught only by an audited call) score the same with and
    without a worker (the toy lesson: what is compared is the grader's, not a lesson's)."""
    entries = {
        "reference": TOY.solution.read_text(),
        "bug_in_place": TOY.solution.read_text() + IN_PLACE,
        "bug_mean": TOY_BUGGY.read_text(),
    }
    scores = {}
    for name, text in entries.items():
        folder = tmp_path / name
        folder.mkdir()
        (folder / TOY.filename).write_text(text)
        apart, inside = grade(folder, *ON_TOY), grade(folder, *ON_TOY, isolation="none")
        assert apart["isolation"] == "process"
        assert [t["status"] for t in apart["tests"]] == [t["status"] for t in inside["tests"]], name
        assert apart["score"] == inside["score"], name
        scores[name] = (apart["score"], apart["max_score"])
    assert scores["reference"][0] == scores["reference"][1]
    assert (
        scores["bug_in_place"][0] < scores["bug_in_place"][1]
        and scores["bug_mean"][0] < scores["bug_mean"][1]
    )
    assert scores["bug_in_place"] != scores["bug_mean"]


def test_everything_the_file_started_is_ended(tmp_path):
    """Processes in sessions of their own (a daemon that forked twice included) do not outlive
    grading, and the worker's folder is gone."""
    marker = f"process-level-{os.getpid()}-{time.monotonic_ns()}"
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / TOY.filename).write_text(
        TOY.solution.read_text()
        + f"""
import os, subprocess, builtins

if not hasattr(builtins, "_started_once"):
    builtins._started_once = True
    try:  # an audited call's process may start none
        subprocess.Popen(["/bin/sh", "-c", "sleep 120", "{marker}"], start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv("/bin/sh", ["/bin/sh", "-c", "sleep 120", "{marker}"])
            os._exit(0)
    except OSError:
        pass
"""
    )
    work = tmp_path / "tmp"
    work.mkdir()
    report = grade(folder, *ON_TOY, "--only", "center_tokens", tmp=work)
    assert report["score"] == report["max_score"]
    deadline = time.monotonic() + 60  # a bound on a hang only: it waits only while they live
    while live_processes(marker=marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert live_processes(marker=marker) == []
    assert list(work.iterdir()) == []


def test_a_failure_of_the_warden_is_the_graders_not_the_students():
    """A request the warden cannot carry out comes back as a WardenFault (reported as a grader
    bug), never as something the student's code did; the sandbox is replaced."""
    from grader.sandbox.wardens import Warden, WardenFault

    warden = Warden("process", 2 << 30)
    try:
        with pytest.raises(WardenFault, match="unknown request"):
            warden.request({"type": "source"})  # the warden itself never holds a submission
        assert warden.proc is None
        warden.begin(object(), b"x = 1\n", TOY, 2 << 30)
        with pytest.raises(WardenFault, match="KeyError"):
            warden.request({"type": "source"}, keeper=True)  # a request without its fields
        assert warden.proc is None and warden.keeper is None
        assert warden.request({"type": "reset"})["type"] == "clean"
        assert warden.boots == 3
    finally:
        warden.close()


def test_a_request_with_descriptors_waits_for_room_as_any_other_does():
    """On a busy machine the keeper may still be reading a long source when the worker's pipes
    are sent to it, and the socket is full: the request waits for room (within its guard), as
    a request without descriptors does. It used to end the sandbox at once, and the report said
    the student's file had stopped it."""
    import socket
    import threading

    from grader.sandbox.inside.worker import Channel
    from grader.sandbox.wardens import Warden

    warden = Warden("process", 2 << 30)
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    filled = 0
    while True:  # what the keeper has not read yet of a long source
        try:
            filled += ours.send(b"\0" * 65536)
        except BlockingIOError:
            break
    warden.keeper_sock, warden.keeper = ours, Channel(ours.fileno(), ours.fileno(), wait=warden._wait)
    received: list = []

    def slow_keeper():
        time.sleep(0.5)  # descheduled for a while: the socket stays full
        left = filled
        while left:
            left -= len(theirs.recv(min(left, 1 << 16)))
        received.append(socket.recv_fds(theirs, 1 << 16, 4))

    reader = threading.Thread(target=slow_keeper)
    reader.start()
    r, w = os.pipe()
    try:
        warden.post({"type": "spawn"}, fds=(r,), keeper=True, seconds=60)
        reader.join(60)
        (data, fds, _flags, _addr) = received[0]
        assert data and len(fds) == 1 and warden.keeper_pending == 1
        for fd in fds:
            os.close(fd)
    finally:
        reader.join(60)
        for fd in (r, w):
            os.close(fd)
        warden._drop_keeper()
        theirs.close()


@pytest.mark.parametrize("child", ["left it as it was lent", "left a reply unread"])
def test_a_sandbox_lent_to_a_forked_grader_is_never_lent_again(child):
    """A batch's grading process lends its sandbox (the warden's socket) to the child it forks
    for a submission. After the child, the sandbox is that submission's: it is killed, and a
    new one started for the next child (a reply the child left unread goes with the old
    socket); after a child that did not end as it should, none is started until asked for."""
    from grader.sandbox.wardens import Warden

    warden = Warden("process", 2 << 30)
    try:
        assert warden.request({"type": "reset"})["type"] == "clean"  # started by this process
        lent = warden.proc.pid
        pid = os.fork()
        if pid == 0:  # the child: a submission's keeper, then its end, as a grading does
            try:
                warden.begin(object(), b"x = 1\n", TOY, 2 << 30)
                warden.collect(time.monotonic() + 30)
                warden.post({"type": "reset"})
                if child == "left it as it was lent":
                    warden.collect(time.monotonic() + 30)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        warden.take_back(clean=True)
        assert warden.proc is not None and warden.proc.pid != lent and warden.boots == 2
        assert warden.request({"type": "reset"})["type"] == "clean"  # the new one's first reply
        warden.take_back(clean=False)
        assert warden.proc is None and warden.boots == 2
    finally:
        warden.close()


def test_a_sandbox_serves_one_submission():
    """Another submission than the last one to begin in a sandbox begins in a new one; the same
    submission beginning again (its worker replaced) keeps its sandbox."""
    from grader.sandbox.wardens import Warden

    warden = Warden("process", 2 << 30)
    first, second = object(), object()
    try:
        for holder, boots in ((first, 1), (first, 1), (second, 2)):
            warden.begin(holder, b"x = 1\n", TOY, 2 << 30)
            warden.collect(time.monotonic() + 30)
            warden.reset(wipe=False)
            assert warden.boots == boots
    finally:
        warden.close()


# ----------------------------------------------------------------------------- as root

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="what the process level does for a grader run as root")

HOSTILE = """
import os, signal

def _try(action):
    try:
        return action()
    except OSError:
        return None

_reference = _try(lambda: open("{solution}").read()) or ""
_try(lambda: open("{checks}/hidden/{marker}.py", "w").write("# planted"))
_try(lambda: open("{checks}/test_center_tokens.py", "a").write("# planted"))
_try(lambda: open("{results}", "w").write("{{}}"))
if "BEGIN SOLUTION" not in _reference:
    def center_tokens(x):  # the mean bug, unless the reference could be read
        return x / token_mean(x)
_try(lambda: os.kill(-1, signal.SIGKILL))  # every process this user may signal
"""


@as_root
def test_auto_never_falls_back_to_the_process_level_as_root(tmp_path, monkeypatch):
    """Without bubblewrap, a grader run as root refuses ``auto`` with a line saying what to do."""
    from grader.core import errors
    from grader.sandbox import wardens as sandbox

    monkeypatch.setattr(sandbox, "best_level", lambda: "process")
    with pytest.raises(errors.IsolationRefused, match="--isolation process"):
        sandbox.choose_level("auto", TOY.private)


@as_root
def test_the_process_level_as_root_refuses_a_readable_reference(tmp_path):
    """Asked for by name, the process level as root still refuses while other users could read
    the reference: the student's code would run as one of them."""
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / TOY.filename).write_text(TOY.stubs.read_text())
    mode = TOY.solution.parent.stat().st_mode & 0o7777
    TOY.solution.parent.chmod(mode | 0o005)
    try:
        done = python("grade", str(folder), *ON_TOY, "--isolation", "process", "--format", "json")
    finally:
        TOY.solution.parent.chmod(mode)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "chmod -R go-rwx" in done.stderr and "Traceback" not in done.stderr


@as_root
def test_a_hostile_classmate_at_the_process_level_reads_nothing_writes_nothing_kills_nothing(tmp_path):
    """At the process level as root the student's code runs as an unprivileged user: it cannot
    read the reference, plant or change a check, write a results file of the grader's, or kill
    the batch with ``kill(-1)``; the honest classmate graded after it gets full marks."""
    marker = f"planted-{os.getpid()}-{time.monotonic_ns()}"
    results = tmp_path / "grades" / "results.json"
    results.parent.mkdir()
    results.parent.chmod(0o700)
    checks = {p: p.read_bytes() for p in TOY.checks.rglob("*.py")}
    klass = tmp_path / "class"
    (klass / "a-hostile").mkdir(parents=True)
    (klass / "a-hostile" / TOY.filename).write_text(
        TOY.solution.read_text()
        + HOSTILE.format(solution=TOY.solution, checks=TOY.checks, marker=marker, results=results)
    )
    (klass / "b-honest").mkdir()
    (klass / "b-honest" / TOY.filename).write_text(TOY.solution.read_text())
    out = tmp_path / "grades" / "gradebook.csv"
    done = python(
        "batch",
        *ON_TOY,
        str(klass),
        "--out",
        str(out),
        "--jobs",
        "1",
        "--isolation",
        "process",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    reports = out.with_name("gradebook_reports")
    hostile = json.loads((reports / "a-hostile.json").read_text())
    honest = json.loads((reports / "b-honest.json").read_text())
    assert hostile["isolation"] == "process"
    center = hostile["exercises"]["center_tokens"]
    assert center["score"] < center["max_score"], "it read the reference"
    assert honest["score"] == FULL
    assert {p: p.read_bytes() for p in TOY.checks.rglob("*.py")} == checks
    assert not results.exists()


NOTE_WRITER = """
# leaves a note for the next classmate in a folder any user may write in
try:
    with open({folder!r} + "/note-from-a1.txt", "w") as _f:
        _f.write("a1 was here")
except OSError:
    pass
"""

NOTE_READER = """
import os as _os
if any(n.startswith("note-from") for n in _os.listdir({folder!r})):
    def center_tokens(x):
        raise ValueError("FOUND a note")
"""


@as_root
@pytest.mark.parametrize("parent", ["/run", "/tmp"])
def test_what_a_student_leaves_in_any_folder_anyone_may_write_in_is_swept(tmp_path, parent):
    """At the process level the student's code shares the machine's file system, as a user of
    the grading job's own: besides /tmp, /var/tmp and /dev/shm, a system has other folders any
    user may write in (/run/lock, /var/crash, ...; and, below /tmp, another user's open to all,
    /tmp/.X11-unix). A note left in one (here a folder made for the test in ``parent``) is gone
    before the next classmate runs, who gets full marks."""
    run = Path(parent)
    if not run.is_dir() or not os.access(run, os.W_OK):
        pytest.skip(f"no {parent} to make a folder in")
    folder = Path(tempfile.mkdtemp(prefix="grader-scratch-", dir=run))
    try:
        folder.chmod(0o1777)
        klass = tmp_path / "class"
        for student, text in (
            ("a1-writer", TOY.solution.read_text() + NOTE_WRITER.format(folder=str(folder))),
            ("a2-reader", TOY.solution.read_text() + NOTE_READER.format(folder=str(folder))),
        ):
            (klass / student).mkdir(parents=True)
            (klass / student / TOY.filename).write_text(text)
        out = tmp_path / "grades" / "gradebook.csv"
        done = python(
            "batch", *ON_TOY, str(klass), "--out", str(out), "--jobs", "1", "--isolation", "process"
        )
        assert done.returncode == 0, done.stderr[-3000:]
        reports = out.with_name("gradebook_reports")
        # once (under load, in parallel with other tests) the reader had no report at all: what
        # its row says instead, and the batch's own words, are kept for the next time
        assert (reports / "a2-reader.json").exists(), (
            (reports / "a2-reader.txt").read_text() if (reports / "a2-reader.txt").exists() else "",
            done.stderr[-3000:],
        )
        reader = json.loads((reports / "a2-reader.json").read_text())
        assert reader["score"] == FULL, reader
        assert not list(folder.iterdir())
    finally:
        shutil.rmtree(folder, ignore_errors=True)


LURKER = """
# a daemon that leaves its submission: it kills the warden (its grandparent), then for a minute
# every process of its own user, which at the process level is the next classmate's too
import os, signal, time

def _lurk(warden):
    os.kill(warden, signal.SIGKILL)
    until = time.monotonic() + 60
    while time.monotonic() < until:
        time.sleep(0.05)
        for pid in os.listdir("/proc"):
            try:
                if pid.isdigit() and int(pid) != os.getpid() and os.stat(f"/proc/{pid}").st_uid == os.getuid():
                    os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass

if os.environ.get("_LURKING") is None:
    os.environ["_LURKING"] = "1"
    try:
        with open(f"/proc/{os.getppid()}/stat") as f:  # the parent is the keeper, its parent the warden
            warden = int(f.read().rsplit(")", 1)[1].split()[1])
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                try:
                    _lurk(warden)
                finally:
                    os._exit(0)
            os._exit(0)
        os.wait()
    except OSError:
        pass
"""


def _sandbox_users_alive(scratch: Path) -> list[str]:
    """Live processes of the users sandboxes run as (100000 and above) that this test's batch
    started: their working folder lies in ``scratch``, the batch's TMPDIR (another suite's
    sandboxes on the same machine are neither counted nor killed)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            status = Path(f"/proc/{entry}/status").read_text() if entry.isdigit() else ""
            here = os.readlink(f"/proc/{entry}/cwd") if status else ""
        except OSError:
            continue
        if not here.startswith(str(scratch)):
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        uid = fields.get("Uid", "0").split()[0]
        if int(uid) >= 100_000 and fields.get("State", "").split()[:1] != ["Z"]:
            found.append(f"{entry} uid {uid}")
    return found


@as_root
def test_a_daemon_that_kills_the_warden_reaches_no_classmate(tmp_path):
    """A submission that tries to leave a daemon behind which kills the warden and then every
    process of its user: at the process level the next classmate in the same grading job runs
    as that user, yet gets full marks, and nothing of the user survives the batch. (A worker may
    start no process and signal none but itself, so today the daemon is never born; the
    clean-up between submissions, one ``kill(-1)`` as that user, stays behind those refusals.)"""
    klass = tmp_path / "class"
    (klass / "a-lurker").mkdir(parents=True)
    (klass / "a-lurker" / TOY.filename).write_text(TOY.solution.read_text() + LURKER)
    (klass / "b-honest").mkdir()
    (klass / "b-honest" / TOY.filename).write_text(TOY.solution.read_text())
    out = tmp_path / "grades" / "gradebook.csv"
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    try:
        done = python(
            "batch",
            *ON_TOY,
            str(klass),
            "--out",
            str(out),
            "--jobs",
            "1",
            "--isolation",
            "process",
            env={**os.environ, "TMPDIR": str(scratch)},
        )
        assert done.returncode == 0, done.stderr[-3000:]
        honest = json.loads((out.with_name("gradebook_reports") / "b-honest.json").read_text())
        assert honest["isolation"] == "process"
        assert honest["score"] == FULL, [t["feedback"] for t in honest["tests"] if t["feedback"]][:3]
        assert _sandbox_users_alive(scratch) == []
    finally:
        for line in _sandbox_users_alive(scratch):
            os.kill(int(line.split()[0]), 9)


@as_root
def test_the_process_level_as_root_refuses_a_readable_copy_of_the_references_bytecode():
    """Python keeps the reference's bytecode beside it (``solutions/__pycache__/``), readable as
    the reference was when it was written: a reference made unreadable afterwards still had a
    readable copy there, and the student's code, run as another user, could load it. The
    process level refuses such a course as it refuses a readable reference."""
    from grader.core import errors
    from grader.core.lesson import Lesson
    from grader.sandbox import wardens as sandbox

    root = Path(tempfile.mkdtemp(prefix="grader-private-", dir="/tmp"))
    try:
        root.chmod(0o755)  # a course other users may enter, as courses usually are
        lesson = Lesson.at(root, TOY.name, TOY.exercises)
        lesson.solution.parent.mkdir()
        lesson.solution.write_text(TOY.solution.read_text())
        py_compile.compile(str(lesson.solution), doraise=True)  # while it was readable (0644)
        lesson.solution.chmod(0o600)  # then made private, file by file
        cached = Path(importlib.util.cache_from_source(str(lesson.solution)))
        assert cached.stat().st_mode & 0o004  # the copy stayed readable
        with pytest.raises(errors.IsolationRefused, match="go-rwx") as refused:
            sandbox.choose_level("process", lesson.private)
        assert "__pycache__" in str(refused.value)
        cached.chmod(0o600)
        assert sandbox.choose_level("process", lesson.private) == "process"
    finally:
        shutil.rmtree(root)


#: layer_norm stops its sandbox's warden (its keeper's parent, no PID namespace to shield it)
#: on each call, then answers right.
STOPS_ITS_WARDEN = """

import os, signal
_right_layer_norm = layer_norm


def _parent(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def layer_norm(x, gamma, beta, eps=1e-5):
    os.kill(_parent(os.getppid()), signal.SIGSTOP)
    return _right_layer_norm(x, gamma, beta, eps)
"""


def test_a_function_that_stops_its_warden_loses_its_own_points(tmp_path):
    """Outside a PID namespace the warden heeds any signal of the student's user: this file
    stopped it at every call of layer_norm and kept full marks (the warden is not on a call's
    way; a stopped one went unseen until the sandbox was ended). A worker signals no process
    but itself: layer_norm fails, the same on every run."""
    (tmp_path / TOY.filename).write_text(TOY.solution.read_text() + STOPS_ITS_WARDEN)
    first, again = grade(tmp_path, *ON_TOY), grade(tmp_path, *ON_TOY)
    assert first["isolation"] == "process"
    assert first["score"] == FULL - 8 and first["exercises"]["center_tokens"]["score"] == 6, first
    assert "Operation not permitted" in json.dumps(first["tests"])
    assert first == again
