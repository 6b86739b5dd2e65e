"""Time limits that measure the student, not the machine (grader/sandbox/clock.py).

The same file gets the same score quiet and under a load this test makes itself; a function
that burns processor time is still stopped, and so is one that sleeps; a check that only a
wall-clock guard stopped is ``unfinished``, and an unfinished grade is no grade anywhere.
No assertion here compares times: the outcomes are statuses, messages and scores.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest

from grader.cli import main
from grader.commands import batch, check, grade
from grader.core.errors import StudentTimeout, Unfinished
from grader.core.results import UNFINISHED_EXIT, Report, Standing, Status, TestResult, Visibility
from grader.core.settings import Isolation, resolve
from grader.formats.github import to_github
from grader.formats.gradebook import Gradebook
from grader.formats.gradescope import to_gradescope
from grader.formats.json_report import from_dict, to_dict
from grader.formats.lms import Export, Layout, table
from grader.formats.text import to_text
from grader.sandbox import clock, wardens
from grader.sandbox.clock import CPU, IDLE, WALL, Stopwatch, Usage
from grader.sandbox.inprocess import Alarm, time_limit, timed_out
from grader.sandbox.session import Sandboxed
from grader.sandbox.wardens import best_level

from .support import ON_TOY, TOY, TOY_BUGGY, compose, python

#: Busy-looping processes the load test starts: with the suite's own work, a load far above the
#: two cores of the machine the suite runs on.
LOADERS = 6
#: A loader ends by itself after this long, should this test be killed before its ``finally``.
LOADER_LIFE = 1200


def _override(tmp_path: Path, name: str, body: str) -> Path:
    """The toy lesson's reference with ``center_tokens`` replaced by ``body`` (its lines,
    indented here): the limits are the grader's, not a lesson's."""
    override = tmp_path / f"{name}.py"
    override.write_text(
        "import time\n\n\ndef center_tokens(x):\n" + "".join(f"    {line}\n" for line in body.splitlines())
    )
    return compose(override, tmp_path / name, TOY)


def _graded(file: Path, *options: str) -> tuple[int, dict]:
    """``grade``'s exit code and JSON report of ``file``, a file of the toy lesson."""
    done = python("grade", str(file), *ON_TOY, "--format", "json", *options, timeout=3000)
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    return done.returncode, json.loads(done.stdout)


def _statuses(report: dict) -> dict[str, str]:
    return {t["name"]: t["status"] for t in report["tests"]}


class _Load:
    """``count`` processes that loop on the processor, at the same priority as this one."""

    def __init__(self, count: int):
        code = (
            f"import time\nend = time.monotonic() + {LOADER_LIFE}\nwhile time.monotonic() < end:\n    pass\n"
        )
        self.procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(count)]

    def running(self) -> int:
        return sum(p.poll() is None for p in self.procs)

    def close(self) -> None:
        for proc in self.procs:  # ours, by their ids
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            proc.wait()


# -- the promise: the same file, the same score, at any load


def test_the_same_file_scores_the_same_under_load():
    """Quiet (the two graded side by side), then with busy processes beside them (each file
    graded sandboxed and in-process at once), the toy gallery's buggy file and the reference
    get the same checks passed and failed (sandboxed, byte for byte the same report: a grade is
    deterministic), and nothing is unfinished. The limits are made tight
    (1 s a call, 20 s a submission) so that limits counted on the wall clock would fail checks
    here, as they did on a busy machine at a deadline (before processor time was counted, this
    test, then on the attention lesson, saw the reference score 61 and the typical mistakes 34
    instead of 65). Sandboxed and in-process grading give the same report quiet
    (tests/test_catalog.py), so the quiet one is graded once. The toy lesson: the limits are
    the grader's, not a lesson's."""
    limits = ("--call-timeout", "1", "--total-timeout", "20")
    files = (TOY_BUGGY, TOY.solution)
    with ThreadPoolExecutor(len(files)) as pool:
        quiet = dict(
            zip(files, pool.map(lambda f: _graded(f, "--isolation", "auto", *limits), files), strict=True)
        )
    runs = [(file, isolation) for file in files for isolation in ("auto", "none")]
    load = _Load(LOADERS)
    try:
        with ThreadPoolExecutor(len(runs)) as pool:
            graded = pool.map(lambda run: _graded(run[0], "--isolation", run[1], *limits), runs)
            loaded = dict(zip(runs, graded, strict=True))
        assert load.running() == LOADERS  # the load lasted the whole time
    finally:
        load.close()
    for (file, isolation), (code_loaded, report_loaded) in loaded.items():
        code, report = quiet[file]
        assert code == code_loaded == 0, (file.name, isolation, code, code_loaded)
        assert "unfinished" not in _statuses(report_loaded).values(), (isolation, _statuses(report_loaded))
        assert report_loaded["score"] == report["score"], (
            file,
            isolation,
            report["score"],
            report_loaded["score"],
        )
        assert _statuses(report_loaded) == _statuses(report), isolation
        assert report_loaded["isolation"] == ("none" if isolation == "none" else report["isolation"])
        if isolation == "auto":  # graded as the quiet one was: the very same report, byte for byte
            assert json.dumps(report_loaded, sort_keys=True) == json.dumps(report, sort_keys=True), file.name
    assert quiet[TOY.solution][1]["score"] == quiet[TOY.solution][1]["max_score"]
    assert 0 < quiet[TOY_BUGGY][1]["score"] < quiet[TOY_BUGGY][1]["max_score"]


# -- the limits still hold


@pytest.mark.parametrize("isolation", ["auto", "none"])
def test_a_function_that_burns_the_processor_is_stopped(tmp_path, isolation):
    file = _override(tmp_path, "loop", "while True:\n    pass")
    code, report = _graded(file, "--isolation", isolation, "--only", "center_tokens", "--call-timeout", "0.2")
    assert code == 0
    center = [t for t in report["tests"] if t["exercise"] == "center_tokens"]
    assert center and {t["status"] for t in center} == {"timeout"}
    assert any("used more than 0.2 s of processor time" in t["feedback"] for t in center)


def test_a_function_that_keeps_asking_the_reference_is_stopped(tmp_path):
    """Each of its questions is answered at once, but the call never ends: its clocks are read
    as its frames come, whenever they are due, not only while none comes (sandboxed: the
    reference stands in for center_tokens, and answers from the trusted side)."""
    override = tmp_path / "asking.py"
    override.write_text(
        "def layer_norm(x, gamma, beta, eps=1e-5):\n    while True:\n        center_tokens(x)\n"
    )
    file = compose(override, tmp_path / "asking", TOY)
    code, report = _graded(file, "--isolation", "auto", "--only", "layer_norm", "--call-timeout", "0.2")
    assert code == 0
    checks = [t for t in report["tests"] if t["exercise"] == "layer_norm"]
    assert checks and {t["status"] for t in checks} == {"timeout"}
    assert any("used more than 0.2 s of processor time" in t["feedback"] for t in checks)


@pytest.mark.parametrize("isolation", ["auto", "none"])
def test_a_sleeping_function_is_stopped_and_it_is_its_own_doing(tmp_path, isolation):
    """A sleep is not the machine's fault: the call is a time-out (the student's), found by
    its idle time, never an unfinished check."""
    file = _override(tmp_path, "sleep", "time.sleep(10_000)")
    code, report = _graded(file, "--isolation", isolation, "--only", "center_tokens", "--call-timeout", "0.5")
    assert code == 0
    center = [t for t in report["tests"] if t["exercise"] == "center_tokens"]
    assert center and {t["status"] for t in center} == {"timeout"}
    assert any("waited more than 0.5 s without running" in t["feedback"] for t in center)


#: ``center_tokens`` that each sleep under the call's limit, and whether every one of its checks
#: is then a time-out: sleeps in calls that answer; a call that lets go of its pipes and sleeps
#: on (waited for, two seconds, before its worker is ended); calls that end without an answer
#: (the worker exits, or lets go of its pipes and exits later); a file that sleeps each time a
#: new worker loads it again.
SLEEPERS = {
    "sleeps, then answers": (
        "def center_tokens(x):\n    time.sleep(0.4)\n    return x - x.mean(axis=-1, keepdims=True)\n",
        True,
    ),
    "hangs up and stays": (
        "def center_tokens(x):\n    os.closerange(3, 4096)\n    time.sleep(10_000)\n",
        False,
    ),
    "sleeps, then exits": ("def center_tokens(x):\n    time.sleep(0.4)\n    os._exit(0)\n", False),
    "hangs up, then exits": (
        "def center_tokens(x):\n    os.closerange(3, 4096)\n    time.sleep(0.4)\n    os._exit(0)\n",
        False,
    ),
    "sleeps as it loads": (
        "if not getattr(sys, '_loaded_once', False):\n    sys._loaded_once = True\n    time.sleep(0.4)\n\n\n"
        "def center_tokens(x):\n    os._exit(0)\n",
        False,
    ),
}


@pytest.mark.parametrize("how", sorted(SLEEPERS))
def test_sleeps_each_under_the_call_limit_add_up_to_the_students_own_time_out(tmp_path, how):
    """A file whose calls (or loads) each sleep a little under the call's limit is never stopped
    call by call; its sleeps add up, and past the submission's total limit it is stopped as a
    time-out of its own. Such a file used to run on, a new worker after each lost one, until the
    wall-clock guard of the whole submission (10 times its total) made every later check
    unfinished, "not a mistake of yours": a grade put off at will, and a batch's time spent twice
    on it (the last three: red team helper-46)."""
    source, every = SLEEPERS[how]
    override = tmp_path / "sleeper.py"
    override.write_text("import os\nimport sys\nimport time\n\n\n" + source, encoding="utf-8")
    file = compose(override, tmp_path / "sleeper", TOY)
    limits = ("--call-timeout", "0.5", "--total-timeout", "0.5")
    code, report = _graded(file, "--isolation", "auto", "--only", "center_tokens", *limits)
    assert code == 0
    assert report["unfinished"] is False
    center = [t for t in report["tests"] if t["exercise"] == "center_tokens"]
    told = ["waited more than 0.5 s in total without running" in t["feedback"] for t in center]
    assert center and "timeout" in {t["status"] for t in center} and any(told)
    if every:
        assert {t["status"] for t in center} == {"timeout"} and all(told)


def test_the_alarm_in_process_stops_a_loop_and_a_sleep():
    for block, verdict in ((lambda: [None for _ in iter(int, 1)], CPU), (lambda: time.sleep(10_000), IDLE)):
        with pytest.raises(Alarm) as stopped:
            with time_limit(0.2):
                block()
        assert stopped.value.verdict == verdict
        assert type(timed_out(stopped.value, "`f`", 0.2)) is StudentTimeout
    assert type(timed_out(Alarm(WALL), "`f`", 0.2)) is Unfinished


# -- telling the student's time from the machine's, on clocks the test sets


class _Clocks:
    """A task's usage and the wall clock, as the test says they are."""

    def __init__(self, monkeypatch):
        self.now, self.cpu, self.delay, self.helper_cpu, self.helper_delay = 0.0, 0.0, 0.0, 0.0, 0.0
        self.readable = True
        monkeypatch.setattr(clock.time, "monotonic", lambda: self.now)

    def task(self):
        return Usage(self.cpu, self.delay) if self.readable else None

    def helper(self):
        return Usage(self.helper_cpu, self.helper_delay)

    def watch(self, limit=1.0, **kwargs):
        return Stopwatch(limit, self.task, **kwargs)


def test_processor_time_past_the_limit_is_a_timeout(monkeypatch):
    c = _Clocks(monkeypatch)
    watch = c.watch()
    c.now, c.cpu, c.delay = 50.0, 1.01, 40.0  # slowly, on a busy machine: still the student's
    assert watch.verdict() == CPU


def test_a_task_that_neither_runs_nor_waits_for_a_processor_is_idle(monkeypatch):
    c = _Clocks(monkeypatch)
    watch = c.watch()
    c.now, c.cpu, c.delay = 1.3, 0.2, 0.2  # 0.9 s idle: within the limit
    assert watch.verdict() == ""
    c.now = 2.0  # 1.6 s idle
    assert watch.verdict() == IDLE


def test_a_task_kept_waiting_for_a_processor_is_unfinished(monkeypatch):
    c = _Clocks(monkeypatch)
    watch = c.watch()
    c.now, c.cpu, c.delay = 9.0, 0.5, 8.4  # runnable all along: the machine is busy
    assert watch.verdict() == ""
    c.now, c.cpu, c.delay = 10.5, 0.55, 9.8
    assert watch.verdict() == WALL


def test_the_keepers_time_is_not_the_students_idle_time(monkeypatch):
    c = _Clocks(monkeypatch)
    watch = c.watch(helper=c.helper)
    c.now, c.cpu, c.delay, c.helper_cpu, c.helper_delay = 3.0, 0.1, 0.1, 0.3, 2.0
    assert watch.verdict() == ""  # the keeper was slow to serve it
    c.helper_cpu = 1.0  # and the work the keeper did for the call is the call's
    assert watch.verdict() == CPU


def test_a_call_counts_the_waits_it_was_seen_to_leave_unanswered(monkeypatch):
    """A sleep is the student's as looks find the call still unanswered; a long last wait that
    ended with the answer there is the grader's own (stopped or paused, while the worker had
    answered and was frozen at its write), counted for a tick at most: pausing the grader 6 s
    made an honest file's grade a time-out (red team helper-46); a call whose end cannot be
    read counts what was seen before it."""
    c = _Clocks(monkeypatch)
    sleeper = c.watch(limit=3.0)
    for step in range(1, 9):  # looked at every tick, unanswered: asleep
        c.now = sleeper.waited = 0.25 * step
        assert sleeper.verdict() == ""
    c.now = sleeper.waited = 2.1  # its answer, read
    sleeper.cpu()
    assert sleeper.idle() == pytest.approx(2.1)

    c.now = 10.0
    paused = c.watch(limit=3.0)
    c.cpu += 0.01  # it answered at once; the grader read the answer 6 s later
    c.now, paused.waited = 16.0, 6.0
    paused.cpu()
    assert paused.idle() <= clock.TICK

    c.now = 20.0
    lost = c.watch(limit=3.0)
    for step in (1, 2):
        c.now, lost.waited = 20.0 + 0.25 * step, 0.25 * step
        assert lost.verdict() == ""
    c.readable = False  # its end: the worker is gone
    c.now, lost.waited = 20.7, 0.7
    lost.cpu()
    assert lost.idle() == pytest.approx(0.5)


def test_without_a_run_delay_a_sleep_is_never_blamed_on_the_student(monkeypatch):
    c = _Clocks(monkeypatch)
    watch = Stopwatch(1.0, lambda: Usage(c.cpu, None))
    c.now = 9.0
    assert watch.verdict() == ""
    c.now = 10.5
    assert watch.verdict() == WALL
    c.readable = False
    unreadable = c.watch()
    c.now = 21.0
    assert unreadable.verdict() == WALL


def test_the_clocks_are_due_a_tick_after_a_reading_or_sooner_when_the_limit_is_near(monkeypatch):
    c = _Clocks(monkeypatch)
    watch = c.watch(limit=1.0, helper=c.helper)
    assert watch.next_look() == clock.TICK and not watch.due()  # read at its start
    c.now, c.cpu = 0.2, 0.15
    assert not watch.due()  # not read since: a frame that comes now is taken as it is
    c.now = clock.TICK
    assert watch.due()
    assert watch.verdict() == "" and watch.next_look() == clock.TICK  # read: a tick from now
    c.cpu, c.helper_cpu = 0.8, 0.1  # 0.9 s used: 0.1 s left
    watch.verdict()
    assert abs(watch.next_look() - 0.1) < 1e-9
    c.helper_cpu = 0.195  # the trusted side's work for it (the reference's, watching it), read
    watch.verdict()
    assert abs(watch.next_look() - clock.MIN_TICK) < 1e-9


def test_a_question_for_the_reference_is_held_to_the_limit_once_the_clocks_are_due(monkeypatch):
    """A call's questions come and go without a reading of its clocks until a tick has passed:
    then the next question is one the call had no time left for."""
    c = _Clocks(monkeypatch)
    box = Sandboxed.__new__(Sandboxed)
    box.channel = SimpleNamespace(receive=lambda: {"type": "callback", "name": "f"})
    box.watch = c.watch(limit=1.0)
    box._timeout = lambda name, verdict: StudentTimeout(verdict)  # no worker to end here
    c.cpu = 5.0
    assert box._receive(10.0, name="f")["type"] == "callback"
    c.now = clock.TICK
    with pytest.raises(StudentTimeout, match=CPU):
        box._receive(10.0, name="f")


# -- an unfinished grade is no grade


def _unfinished_report() -> Report:
    """A report of the toy lesson whose layer_norm is unfinished (the reports are the grader's)."""
    tests = []
    for exercise in TOY.exercises:
        status = Status.UNFINISHED if exercise == "layer_norm" else Status.PASSED
        score = 0 if status is Status.UNFINISHED else 5
        tests.append(TestResult(f"{exercise}_check", exercise, 5, score, status, Visibility.VISIBLE))
    return Report(TOY.filename, tuple(tests))


def test_every_report_says_an_unfinished_score_is_not_final():
    report = _unfinished_report()
    assert report.unfinished and from_dict(json.loads(json.dumps(to_dict(report)))).unfinished
    text = to_text(report)
    assert "[UNFINISHED]" in text and "No grade yet" in text and "again later" in text
    gradescope = to_gradescope(report, execution_time=1.0)
    assert "score" not in gradescope and all("score" not in t for t in gradescope["tests"])
    assert to_github(report)["status"] == "error"


def test_no_export_writes_a_number_for_an_unfinished_grade(tmp_path):
    book = Gradebook(tmp_path / "book.sqlite")
    report = _unfinished_report()
    entry = batch.Entry("kim", tmp_path / TOY.filename, "f" * 64)
    points = {e: 20 for e in TOY.exercises}
    (tmp_path / "reports").mkdir()
    batch._store(book, tmp_path / "reports", entry, "suite", report, "", points)
    assert [r.standing for r in book.rows()] == [Standing.UNFINISHED]
    assert not book.is_current("kim", "f" * 64, "suite")  # graded again on the next run
    for layout in Layout:
        written = table(book.rows(), TOY.exercises, Export(layout=layout), lesson=TOY.name)
        numbers = [c for line in written.rows for c in line if c.strip().replace(".", "").isdigit()]
        if layout is Layout.PLAIN:
            assert numbers == [str(report.max_score)]  # the maximum only, never a score
        else:
            assert numbers == [], (layout, written.rows)
        assert any("unfinished" in note for note in written.notes)
    book.close()


def _fake_batch(tmp_path, monkeypatch, unfinished_times: dict[str, int]):
    """Run ``batch`` of the toy lesson on a class of three, each grading answered here: a student
    is unfinished the first ``unfinished_times[student]`` times, then graded."""
    klass = tmp_path / "class"
    for student in ("ada", "bob", "kim"):
        (klass / student).mkdir(parents=True)
        (klass / student / TOY.filename).write_bytes(TOY.solution.read_bytes())
    calls: list[tuple[str, int]] = []
    finished = Report(
        TOY.filename,
        tuple(TestResult(f"{e}_check", e, 5, 5, Status.PASSED, Visibility.VISIBLE) for e in TOY.exercises),
    )

    def grade(self, entry, limit, running):
        calls.append((entry.student, id(self)))
        left = unfinished_times.get(entry.student, 0)
        unfinished_times[entry.student] = left - 1
        return entry, (_unfinished_report() if left > 0 else finished), ""

    monkeypatch.setattr(batch.Grader, "grade", grade)
    settings = resolve("batch", lesson_exercises=TOY.exercises, isolation="auto")
    out = tmp_path / "gradebook.csv"
    code = batch.main(lesson=TOY, settings=settings, folder=klass, out=out, jobs=2)
    return code, calls, out


def test_batch_grades_an_unfinished_submission_again_at_the_end_one_at_a_time(tmp_path, monkeypatch):
    if best_level() == "none":
        pytest.skip("batch needs a sandbox")
    code, calls, out = _fake_batch(tmp_path, monkeypatch, {"bob": 1, "kim": 5})
    students = [s for s, _ in calls]
    assert sorted(students[:3]) == ["ada", "bob", "kim"]  # everyone once, then the unfinished again
    assert sorted(students[3:]) == ["bob", "kim"]
    assert len({g for _, g in calls[3:]}) == 1  # again: one grading process
    book = Gradebook(out.with_suffix(".sqlite"))
    standing = {r.student: r.standing for r in book.rows()}
    book.close()
    assert standing == {"ada": Standing.GRADED, "bob": Standing.GRADED, "kim": Standing.UNFINISHED}
    rows = out.read_text().splitlines()
    kim = next(line for line in rows if line.startswith("kim"))
    assert kim.split(",")[1] == ""  # no score written
    assert code == UNFINISHED_EXIT


@pytest.mark.parametrize("command", ["check", "grade"])
def test_check_and_grade_say_the_machine_was_busy_and_exit_with_their_own_code(command, monkeypatch, capsys):
    module = check if command == "check" else grade
    # both grade through check.graded (here, or on the course's service)
    monkeypatch.setattr(check, "run_checks", lambda *args, **kwargs: _unfinished_report())
    settings = resolve(command, lesson_exercises=TOY.exercises)
    code = module.main(lesson=TOY, settings=settings, path=TOY.solution)
    said = capsys.readouterr()
    assert code == UNFINISHED_EXIT == 75  # EX_TEMPFAIL: try again later; the README says so
    words = " ".join((said.out + said.err).split())
    assert "too busy to finish 1 check" in words and "Run the same command again later" in words
    assert "Traceback" not in said.out + said.err


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="no /proc here")
def test_a_kept_clock_reads_its_own_process_only():
    """The sandbox reads the worker's clock through its /proc file kept open: the process's
    time while it lives, and nothing at all once it is gone, so a process later given the
    same number is never read in its place (the grader would count its time as the student's)."""
    from grader.sandbox.clock import KeptUsage

    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        clock = KeptUsage(busy.pid)
        first = clock.read()
        assert first is not None
        deadline = time.monotonic() + 60
        while clock.read().cpu <= first.cpu and time.monotonic() < deadline:
            time.sleep(0.05)
        assert clock.read().cpu > first.cpu  # it follows the process's time
    finally:
        busy.kill()
        busy.wait()
    assert clock.read() is None  # gone: read as gone, whatever now holds its number
    clock.close()
    assert clock.read() is None


def test_a_threads_kept_clock_is_its_own_in_a_forked_child():
    """A block timed in this process reads its thread's clock through a file kept open
    (inprocess.thread_usage); a child forked from it (a batch's) reads its own thread, never
    the parent's: its processor time grows as it works."""
    from grader.sandbox.inprocess import thread_usage

    assert thread_usage()() is not None  # the parent's clock, kept before the fork
    if os.uname().sysname != "Linux":
        pytest.skip("scheduler statistics are Linux's")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: work for 0.1 s of its own processor time, read before and after
        os.close(read)
        clock = thread_usage()
        first, began = clock(), time.thread_time()
        while time.thread_time() - began < 0.1:
            pass
        os.write(write, json.dumps(clock().cpu - first.cpu).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as answer:
        grown = json.loads(answer.read() or "0")
    os.waitpid(pid, 0)
    assert grown >= 0.05  # the parent, waiting here, used next to nothing meanwhile


def test_a_long_file_waits_for_a_sandbox_slow_to_start(tmp_path, monkeypatch, capsys):
    """A file longer than a socket's buffer reaches the sandbox only as fast as the sandbox reads
    it, and a sandbox just launched reads once its Python and numpy have loaded: on a busy
    machine that took longer than the grader waits for an answer to a request, and a long file
    was "stopped the sandbox it ran in" (CI saw it). Here the sandbox's start is delayed past
    that wait: the long file is graded for what it is."""
    if best_level() == Isolation.NONE:
        pytest.skip("no sandbox on this machine")
    folder = tmp_path / "long"
    folder.mkdir()
    (folder / TOY.filename).write_text(TOY.solution.read_text() + ("\n# " + "x" * 1000) * 1000 + "\n")
    launch = wardens.subprocess.Popen
    delay = f'sleep {wardens.WARDEN_TIMEOUT + 1:g}; exec "$@"'

    def slow(command, **options):
        return launch(["sh", "-c", delay, "sh", *command], **options)

    monkeypatch.setattr(wardens, "_WARDENS", [])  # none already started: this one is launched late
    monkeypatch.setattr(wardens.subprocess, "Popen", slow)
    try:
        code = main(
            [
                "grade",
                str(folder),
                *ON_TOY,
                "--format",
                "json",
                "--isolation",
                "auto",
                "--only",
                "center_tokens",
            ]
        )
    finally:
        for warden in wardens._WARDENS:
            warden.kill()
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and not report["problem"], report["problem"]
    assert report["tests"] and {t["status"] for t in report["tests"]} == {"passed"}
