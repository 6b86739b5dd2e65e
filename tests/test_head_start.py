"""The sandbox started ahead (:func:`grader.sandbox.wardens.head_start`): ``grade`` and a sandboxed
``check`` start the sandbox of their one submission, and the probe of bubblewrap, while the
grader loads its engine. That changes when they start, nothing else: the level is decided as
before, a sandbox started for another level or memory than the run settles on is ended unused,
and a command that grades in no sandbox starts none."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from grader import cli
from grader.core.errors import IsolationRefused
from grader.core.settings import Isolation, Limits, Settings
from grader.engine.run import run_checks
from grader.sandbox import wardens

from .support import ON_TOY, TOY

pytestmark = pytest.mark.skipif(os.name != "posix", reason="sandboxes need POSIX")

namespaces = pytest.mark.skipif(
    wardens.best_level() is not Isolation.NAMESPACES, reason="bubblewrap is not usable here"
)


@pytest.fixture
def fresh(monkeypatch):
    """This process's sandboxes as a run starts: none (those of other tests are left alone),
    and the sandboxes started here are ended after."""
    monkeypatch.setattr(wardens, "_WARDENS", [])
    monkeypatch.setattr(wardens, "_HEAD_STARTS", [])
    yield wardens._WARDENS
    for warden in wardens._WARDENS:
        warden.close()


@pytest.fixture
def launches(monkeypatch):
    """Every sandbox started, in order (its level and memory)."""
    started = []
    launch = wardens.Warden._launch

    def recorded(warden):
        started.append((warden.level, warden.memory))
        launch(warden)

    monkeypatch.setattr(wardens.Warden, "_launch", recorded)
    return started


def test_the_probe_decides_as_bubblewrap_run_at_once_does():
    """The probe (started ahead, read when the level is decided) finds what running it and
    waiting for it finds."""
    if wardens.level_problem(Isolation.NAMESPACES):
        assert wardens.best_level() is not Isolation.NAMESPACES
        return
    with tempfile.TemporaryDirectory() as tmp:
        ran = subprocess.run(
            wardens._bwrap_prefix(Path(tmp)) + ["/bin/true"], capture_output=True, timeout=30
        )
    assert (wardens.best_level() is Isolation.NAMESPACES) == (ran.returncode == 0)
    assert wardens._probe().passed() == (ran.returncode == 0)


def test_a_probe_no_one_read_is_ended_with_its_folder():
    """A probe started for a run that ended before its level was decided (a missing file, say)
    is waited for as the grader exits, its folder removed, and nothing of it is left running."""
    if wardens.level_problem(Isolation.NAMESPACES):
        pytest.skip("bubblewrap is not installed here")
    probe = wardens._Probe()
    folder = Path(probe.folder.name)
    assert folder.is_dir()
    probe.end()
    assert probe.proc.returncode is not None and not folder.exists()
    assert probe.passed() == (wardens.best_level() is Isolation.NAMESPACES)


def test_commands_that_sandbox_nothing_start_no_sandbox(fresh, launches, capsys):
    """``--help``, ``check`` (in the checker's own process unless asked) and a ``grade`` sent to
    the grading service start no sandbox."""
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    with pytest.raises(SystemExit):
        cli.main(["grade", "--help"])
    assert cli.main(["check", str(TOY.solution), *ON_TOY]) == 0
    served = ["grade", str(TOY.solution), *ON_TOY, "--server", "http://127.0.0.1:9", "--token", "t"]
    assert cli.main(served) == 2  # nothing listens there
    assert "could not reach the grading service" in capsys.readouterr().err
    assert launches == []
    assert fresh == []


@namespaces
def test_the_sandbox_started_ahead_is_the_one_the_submission_grades_in(fresh, launches):
    """A sandbox started ahead for the settings the run grades with is its submission's, as
    new as one started when it is needed: one sandbox, one start, the same grade."""
    settings = Settings(isolation=Isolation.AUTO, store=None)
    wardens.head_start(settings)
    assert launches == [("namespaces", settings.limits.memory)]
    (ahead,) = fresh
    assert ahead.proc is not None and ahead.last_holder is None and not ahead.busy
    report = run_checks(TOY.solution, lesson=TOY, settings=settings)
    assert report.score == report.max_score and report.isolation is Isolation.NAMESPACES
    assert fresh == [ahead] and ahead.boots == 1 and ahead.last_holder is not None
    assert launches == [("namespaces", settings.limits.memory)]


@namespaces
@pytest.mark.parametrize(
    "asked",
    [
        Settings(isolation=Isolation.NONE),  # another level
        Settings(isolation=Isolation.NAMESPACES, limits=Limits(memory=1 << 30)),  # another memory
    ],
    ids=["level", "memory"],
)
def test_a_sandbox_started_for_other_settings_is_ended_unused(fresh, asked):
    """When the run settles on another level or memory than the sandbox started ahead, that
    sandbox is ended then, its processes and folder gone, and no submission can have it."""
    wardens.head_start(Settings(isolation=Isolation.NAMESPACES))
    (ahead,) = fresh
    pid, folder = ahead.proc.pid, ahead.folder
    settled = wardens.settle(asked, TOY.private)
    assert settled.level is asked.isolation
    assert ahead.proc is None and not folder.exists() and fresh == []
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    warden = wardens.acquire("namespaces", asked.limits.memory)
    assert warden is not ahead
    wardens.release(warden)


@namespaces
def test_a_refused_run_ends_the_sandbox_started_for_it(fresh, monkeypatch):
    """A level refused when it is decided ends the sandbox started ahead of it."""
    wardens.head_start(Settings(isolation=Isolation.NAMESPACES))
    (ahead,) = fresh

    def refused(requested, private):
        raise IsolationRefused("refused")

    monkeypatch.setattr(wardens, "choose_level", refused)
    with pytest.raises(IsolationRefused):
        wardens.settle(Settings(isolation=Isolation.NAMESPACES), TOY.private)
    assert ahead.proc is None and fresh == []


#: In a fresh interpreter: run ``grade`` of the toy lesson's reference through the command line,
#: noting whether Hypothesis was imported when the sandbox was started ahead.
_WHEN_STARTED = """
import json, sys
from grader import cli
from grader.sandbox import wardens

seen = []
start = wardens.head_start

def noted(settings):
    seen.append("hypothesis" in sys.modules)
    start(settings)

cli.head_start = noted
code = cli.main(sys.argv[1:])
print(json.dumps({"code": code, "seen": seen}))
"""


@namespaces
@pytest.mark.parametrize("command", ["grade", "gradescope-run"])
def test_one_submission_s_sandbox_starts_before_hypothesis_is_imported(tmp_path, command):
    """The sandbox's start (bubblewrap, Python, numpy: a tenth of a second) is hidden behind
    the grader's own loading only if it comes before Hypothesis's import, the largest part of
    it: the command line imports no Hypothesis before it has started the sandbox, for ``grade``
    and for Gradescope's run (one submission in a container of its own)."""
    if command == "grade":
        given = [str(TOY.solution)]
    else:  # Gradescope's folder: the upload in submission/, the results written to results/
        (tmp_path / "submission").mkdir()
        (tmp_path / "submission" / TOY.filename).write_bytes(TOY.solution.read_bytes())
        given = ["--root", str(tmp_path)]
    done = subprocess.run(
        [sys.executable, "-c", _WHEN_STARTED, command, *given, *ON_TOY],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"code": 0, "seen": [False]}, done.stderr
    if command == "gradescope-run":
        graded = json.loads((tmp_path / "results" / "results.json").read_text(encoding="utf-8"))
        assert graded["score"] == sum(test["max_score"] for test in graded["tests"]) > 0, graded


@pytest.mark.parametrize("command", ["grade", "gallery"])
def test_a_hypothesis_the_grader_does_not_know_is_refused_before_anything_is_graded(
    fresh, monkeypatch, capsys, command
):
    """One submission's grading asks after Hypothesis's release once its sandbox is on its way,
    the other commands first: either way nothing is graded, and the words and the exit status
    are the same."""
    import hypothesis

    monkeypatch.setattr(hypothesis, "__version__", "3.0.0")
    graded = []
    monkeypatch.setattr("grader.engine.run.run_checks", lambda *a, **k: graded.append(1))
    given = [str(TOY.solution)] if command == "grade" else []
    assert cli.main([command, *given, *ON_TOY]) == 2
    err = capsys.readouterr().err
    assert "this grader needs Hypothesis" in err and "Hypothesis 3.0.0 is installed" in err, err
    assert graded == []


@pytest.mark.parametrize("command", ["grade", "check"])
def test_the_command_s_end_leaves_nothing_and_says_everything(tmp_path, command):
    """``python -m grader`` ends without the interpreter's own teardown (grader/__main__.py):
    the exit handlers still run (the sandbox and the probe of bubblewrap ended, their folders and
    every temporary one removed) and every byte of the report is written."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    extra = (
        ["--isolation", "namespaces"]
        if command == "check" and not wardens.level_problem(Isolation.NAMESPACES)
        else []
    )
    done = subprocess.run(
        [sys.executable, "-m", "grader", command, str(TOY.solution), *ON_TOY, *extra, "--format", "json"]
        if command == "grade"
        else [sys.executable, "-m", "grader", command, str(TOY.solution), *ON_TOY, *extra],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    if command == "grade":
        report = json.loads(done.stdout)
        assert report["score"] == report["max_score"] > 0
    else:
        assert done.stdout.rstrip().endswith("Well done!"), done.stdout[-500:]
    assert list(scratch.iterdir()) == []


def test_a_probe_that_hangs_is_waited_for_once(tmp_path, monkeypatch):
    """A bubblewrap that hangs while a child of it holds the probe's pipes: the probe is given up
    after its time (TimeoutExpired, as before), and never waited for again, neither when the
    level is asked for again nor at the run's end (which waited the whole time a second time)."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "bwrap").write_text("#!/bin/sh\nsleep 5 &\nexec sleep 5\n", encoding="utf-8")
    (fake / "bwrap").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(wardens, "PROBE_SECONDS", 0.5)
    probe = wardens._Probe()
    with pytest.raises(subprocess.TimeoutExpired):
        probe.passed()
    folder = Path(probe.folder.name)

    def waited(*args, **kwargs):
        raise AssertionError("the probe was waited for again")

    monkeypatch.setattr(probe.proc, "communicate", waited)
    with pytest.raises(subprocess.TimeoutExpired):
        probe.passed()
    probe.end()
    assert not folder.exists()


#: A file of the toy lesson whose load takes seconds (in its sandbox's worker): its grading is
#: still going on when a test stops it.
SLOW_TO_LOAD = "\nimport time as _time\n_time.sleep(4)\n"


@namespaces
def test_sigterm_ends_a_grade_as_ctrl_c_does(tmp_path):
    """A grade's sandbox starts as its command line is read; SIGTERM (``timeout``, a CI runner's
    cancel) once it has started ends the grade as Ctrl-C does: the sandbox and every temporary
    folder go, and the exit status says which signal it was (143), with no traceback. With the
    signal's default action both folders were left behind."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    student = tmp_path / TOY.filename
    student.write_text(TOY.solution.read_text(encoding="utf-8") + SLOW_TO_LOAD, encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "grader", "grade", str(student), *ON_TOY, "--format", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(scratch)},
    )
    try:
        for _ in range(3000):  # until the sandbox's folder is there (a net, not a measure)
            if any(
                p.name.startswith("grader-") and not p.name.startswith("grader-probe")
                for p in scratch.iterdir()
            ):
                break
            if proc.poll() is not None:
                break
            time.sleep(0.01)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143, err
    assert "Traceback" not in err
    assert list(scratch.iterdir()) == []
