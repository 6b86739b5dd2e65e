"""Helpers for the project's own tests: build submissions and grade many at once."""

from __future__ import annotations

import compileall
import json
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from grader.core.lesson import Course, Lesson
from grader.core.settings import STORE_VARIABLE

#: The project's own course, and its lesson.
ROOT = Path(__file__).resolve().parent.parent
ATTENTION = Course.at(ROOT).lesson("attention")
#: The second lesson of the course: the KV cache and grouped-query attention.
KV_CACHE = Course.at(ROOT).lesson("kv_cache")
#: The third: rotary position embeddings.
ROPE = Course.at(ROOT).lesson("rope")
#: A second, small lesson in a course of its own, that the grader knows nothing of.
TOY_COURSE = ROOT / "tests" / "courses" / "toy"
#: Its lesson: where a test is of the grader's own workings (resuming, interrupting, reports),
#: not of a lesson, it grades this one, whose grading costs about half the first lesson's.
TOY = Course.at(TOY_COURSE).lesson("toy")
#: A student's file of it that loses points: center_tokens divides by the mean (the gallery's).
TOY_BUGGY = TOY.gallery / "off-by-mean" / TOY.filename
#: The options that point a command at it.
ON_TOY = ("--course", str(TOY_COURSE), "--lesson", "toy")
#: ``python -m grader batch`` of the toy lesson, for a test that starts it itself (to stop it).
TOY_BATCH = [sys.executable, "-m", "grader", "batch", *ON_TOY]

#: Parallel grading processes (the machine has two cores).
PROCESSES = max(1, min(2, os.cpu_count() or 1))


def _compiled_ahead() -> None:
    """Write the bytecode of the grader, the lessons' checks and the references once, for the
    hundreds of grader processes the suite starts.

    Python writes it itself on a first import, except where ``PYTHONDONTWRITEBYTECODE`` is set
    (the development machine's containers set it): there every process compiled the grader's
    source again, a third of a second of processor time each. Files written atomically (two
    test workers may do this at once), ignored by git (``__pycache__/``), by the release, and by
    the fingerprint that decides when a batch grades again."""
    if not sys.dont_write_bytecode:
        return  # the processes write it themselves
    for folder in (ROOT / "grader", ROOT / "tests" / "checks", ROOT / "solutions", TOY_COURSE):
        compileall.compile_dir(folder, quiet=2, workers=1)


_compiled_ahead()


#: Seconds after its last change that a suite's folder of examples is taken for one of a run
#: that has ended (a run lasts minutes; CI stops one long before this).
STALE_STORE_SECONDS = 6 * 3600


def sweep_stores(top: Path, prefix: str, keep: str, now: float) -> list[str]:
    """Remove the folders in ``top`` named ``prefix...`` (but ``keep``), this user's own, left
    unchanged for :data:`STALE_STORE_SECONDS`: each run of the suite left one behind (15 MB),
    and a shared machine's temporary folder filled run after run. A link, a file or another
    user's folder of that name stays, untouched and unfollowed. The names removed."""
    removed = []
    try:
        entries = list(os.scandir(top))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(prefix) or entry.name == keep:
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if (
            stat.S_ISDIR(info.st_mode)
            and info.st_uid == os.geteuid()
            and now - info.st_mtime > STALE_STORE_SECONDS
        ):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.name)
    return removed


def _suite_store() -> None:
    """Every grader the suite starts keeps its examples (:mod:`grader.engine.store`) in one
    folder of this run's, shared by the test workers and never the user's own: a run starts
    with nothing kept, whatever the machine ran before, and later grades replay what earlier
    ones drew (a test of the store itself chooses its own folder). Earlier runs' folders go
    once they are stale (:func:`sweep_stores`)."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID") or f"{os.getpid()}"
    prefix = f"grader-suite-store-{os.geteuid()}-"
    folder = Path(tempfile.gettempdir()) / f"{prefix}{run}"
    sweep_stores(folder.parent, prefix, folder.name, time.time())
    os.environ.setdefault(STORE_VARIABLE, str(folder))


_suite_store()


def composed(override: Path, lesson: Lesson = ATTENTION) -> str:
    """The text of ``lesson``'s reference followed by ``override``'s definitions."""
    text = lesson.solution.read_text(encoding="utf-8")
    return text + "\n\n# ---- entry: " + override.stem + " ----\n" + override.read_text(encoding="utf-8")


def compose(override: Path, dest: Path, lesson: Lesson = ATTENTION) -> Path:
    """Write dest/NAME.py for ``lesson``: :func:`composed`."""
    dest.mkdir(parents=True, exist_ok=True)
    (dest / lesson.filename).write_text(composed(override, lesson), encoding="utf-8")
    return dest / lesson.filename


#: A net under a command that grades many submissions in turn: seconds for the command plus
#: seconds per submission, far above what each takes at load 10 on 2 cores. Only a grader that
#: hangs for good reaches it; no assertion compares times.
NET_SECONDS, NET_PER_SUBMISSION = 600.0, 90.0


def net(submissions: int) -> float:
    """The net under a command grading ``submissions`` submissions."""
    return NET_SECONDS + NET_PER_SUBMISSION * submissions


def python(*args: str, timeout: float = NET_SECONDS, **kwargs) -> subprocess.CompletedProcess:
    """Run ``python -m grader ARGS`` from the repository root, capturing text output."""
    return subprocess.run(
        [sys.executable, "-m", "grader", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,
    )


def from_a_terminal(command: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    """``command`` started as from a terminal, in a session of its own (a test signals its whole
    group), with text pipes: Ctrl-C (SIGINT) reaches it, where a shell's background job (a CI
    script run with ``&``) would ignore it, and a Python started that way would too."""
    return subprocess.Popen(
        command,
        cwd=cwd,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def grader_outside(*args: str, cwd: Path, timeout: float = 300, **kwargs) -> subprocess.CompletedProcess:
    """``python -m grader ARGS`` started in ``cwd``, a folder outside the project, as a user
    would run it there; this checkout's grader is the one imported."""
    assert ROOT not in Path(cwd).resolve().parents
    env = {**kwargs.pop("env", os.environ), "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "grader", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        **kwargs,
    )


def script_report(script: str, *args: str, env: dict) -> dict:
    """Run ``python -c script ARGS`` (a grading in a process of its own) and read the JSON object
    its last line prints, with its stderr added as ``"stderr"``."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["stderr"] = done.stderr
    return out


def grade_folders(
    folders: dict[str, Path],
    tmp: Path,
    *,
    call_timeout: float | None = None,
    max_examples: int | None = None,
    isolation: str = "auto",
    lesson: Lesson = ATTENTION,
    env: dict[str, str] | None = None,
) -> dict[str, dict]:
    """Grade many submissions of ``lesson`` with the ``gallery`` command, split over PROCESSES
    processes.

    ``folders`` maps a label to a folder holding the lesson's file; returns label -> JSON report.
    ``env``: the processes' environment (default: this one's).
    """
    labels = sorted(folders)
    chunks = [labels[i::PROCESSES] for i in range(PROCESSES)]

    def run(index: int) -> dict:
        root = tmp / f"chunk{index}"
        root.mkdir(parents=True)
        for label in chunks[index]:
            os.symlink(folders[label].resolve(), root / label)
        extra = [] if call_timeout is None else ["--call-timeout", str(call_timeout)]
        extra += [] if max_examples is None else ["--max-examples", str(max_examples)]
        extra += ["--isolation", isolation, "--lesson", lesson.name]
        done = python(
            "gallery", str(root), "--format", "json", *extra, timeout=net(len(chunks[index])), env=env
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout)

    results: dict[str, dict] = {}
    with ThreadPoolExecutor(PROCESSES) as pool:
        for part in pool.map(run, [i for i in range(PROCESSES) if chunks[i]]):
            results.update(part)
    return results


def live_processes(*, pgid: int | None = None, marker: str | None = None) -> list[str]:
    """Running (not zombie) processes in a process group, or whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        state, group = fields[0], int(fields[2])
        if state == "Z":
            continue
        if (pgid is not None and group == pgid) or (marker is not None and marker in cmdline):
            found.append(f"{entry.name} {state} {cmdline[:120]}")
    return found


def graded_count(db: Path) -> int:
    """How many students a batch's gradebook holds as graded so far (0 before it exists); never
    waits long for the database, which the batch may be writing meanwhile."""
    try:
        with sqlite3.connect(db, timeout=0.2) as conn:
            return conn.execute("SELECT count(*) FROM grades WHERE status = 'graded'").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
