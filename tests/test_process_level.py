"""The ``process`` isolation level: what a machine without bubblewrap gets (macOS, Windows' WSL
without it, a locked-down container). No namespaces, but the same warden, limits and clean-up."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from grader import paths

from .support import compose, live_processes, python

CATALOG = Path(__file__).parent / "catalog"

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the process level needs POSIX")


def grade(folder: Path, *extra: str, isolation: str = "process", tmp: Path | None = None) -> dict:
    env = {**os.environ, "TMPDIR": str(tmp)} if tmp is not None else None
    done = python("grade", str(folder), "--format", "json", "--isolation", isolation, *extra, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    return json.loads(done.stdout)


def test_scores_equal_those_graded_in_process(tmp_path):
    """The reference and two bugs (one caught only by an audited call) score the same with and without a worker."""
    entries = {
        "reference": paths.SOLUTION,
        "bug_mask": CATALOG / "bugs" / "mask_in_place.py",
        "bug_merge": CATALOG / "bugs" / "merge_reshape_no_transpose.py",
    }
    for name, source in entries.items():
        if source == paths.SOLUTION:
            folder = tmp_path / name
            folder.mkdir()
            (folder / "attention.py").write_text(source.read_text())
        else:
            assert source.is_file(), source
            folder = compose(source, tmp_path / name).parent
        apart, inside = grade(folder), grade(folder, isolation="none")
        assert apart["isolation"] == "process"
        assert [t["status"] for t in apart["tests"]] == [t["status"] for t in inside["tests"]], name
        assert apart["score"] == inside["score"], name
    assert grade(tmp_path / "reference")["score"] == 100


def test_everything_the_file_started_is_ended(tmp_path):
    """Processes in sessions of their own (a daemon that forked twice included) do not outlive
    grading, and the worker's folder is gone."""
    marker = f"process-level-{os.getpid()}-{time.monotonic_ns()}"
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "attention.py").write_text(
        paths.SOLUTION.read_text()
        + f"""
import os, subprocess, builtins

if not hasattr(builtins, "_started_once"):
    builtins._started_once = True
    subprocess.Popen(["/bin/sh", "-c", "sleep 120", "{marker}"], start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv("/bin/sh", ["/bin/sh", "-c", "sleep 120", "{marker}"])
        os._exit(0)
"""
    )
    work = tmp_path / "tmp"
    work.mkdir()
    report = grade(folder, "--only", "apply_causal_mask", tmp=work)
    assert report["score"] == report["max_score"]
    deadline = time.monotonic() + 5
    while live_processes(marker=marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert live_processes(marker=marker) == []
    assert list(work.iterdir()) == []


def test_a_failure_of_the_warden_is_the_graders_not_the_students():
    """A request the warden cannot carry out comes back as a WardenFault (reported as a grader
    bug), never as something the student's code did; the sandbox is replaced."""
    from grader.sandbox import Warden, WardenFault

    warden = Warden("process", 2 << 30)
    try:
        with pytest.raises(WardenFault, match="KeyError"):
            warden.request({"type": "audit"})  # a request without its fields
        assert warden.proc is None
        assert warden.request({"type": "reset"})["type"] == "clean"
        assert warden.boots == 2
    finally:
        warden.close()
