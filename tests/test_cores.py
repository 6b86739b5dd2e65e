"""One core for a submission's calls (grader/sandbox/cores.py): the grading process, the keeper
and the worker share the core the grading process is on while a submission's worker runs, and
the grading process gets its cores back when the submission ends; nothing moves where it may use
one core only (a batch's job), and no grade changes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from grader.core.intake import open_submission
from grader.core.settings import Isolation
from grader.engine.submission import reference_of
from grader.sandbox import cores
from grader.sandbox.session import Sandboxed
from grader.sandbox.wardens import best_level

from .support import ATTENTION, ROOT

PINNABLE = hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) >= 2
needs_cores = pytest.mark.skipif(
    not PINNABLE, reason="this system pins no process, or this process has one core"
)

#: A student's file whose apply_causal_mask answers with the cores its process may run on.
WHERE = """
import os
import numpy as np

def apply_causal_mask(scores):
    return np.array(sorted(os.sched_getaffinity(0)))

def split_heads(x, n_heads):
    raise NotImplementedError

def merge_heads(x):
    raise NotImplementedError

def mha_forward(x, W_q, W_k, W_v, W_o, n_heads):
    raise NotImplementedError
"""


def test_the_current_core_is_one_this_process_may_use():
    core = cores._current_core()
    if not os.path.exists("/proc/self/stat"):
        assert core is None
    else:
        assert core in os.sched_getaffinity(0)


@needs_cores
def test_pinning_keeps_this_process_and_the_others_on_one_core_and_release_gives_it_back():
    before = os.sched_getaffinity(0)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    shared = cores.Shared()
    try:
        shared.pin((other.pid,))
        assert shared.core is not None
        assert os.sched_getaffinity(0) == {shared.core} == os.sched_getaffinity(other.pid)
        shared.pin((other.pid, 2**22 + 1))  # a process already gone is skipped
        assert os.sched_getaffinity(0) == {shared.core}
    finally:
        shared.release()
        other.kill()
        other.wait()
    assert os.sched_getaffinity(0) == before


def test_a_process_with_one_core_is_not_moved(monkeypatch):
    """A batch's grading job is pinned to its core already: nothing is done (and nothing is
    given back)."""
    moved = []
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    monkeypatch.setattr(os, "sched_setaffinity", lambda pid, mask: moved.append((pid, mask)), raising=False)
    shared = cores.Shared()
    shared.pin((12345,))
    shared.release()
    assert moved == [] and shared.core is None


@needs_cores
@pytest.mark.skipif(best_level() is Isolation.NONE, reason="no sandbox on this machine")
def test_a_sandboxed_call_runs_on_the_core_of_the_grading_process(tmp_path):
    """The worker, asked where it may run, names one core: the grading process's own during the
    submission. Once the submission is closed, the grading process has its cores back."""
    before = os.sched_getaffinity(0)
    (tmp_path / ATTENTION.filename).write_text(WHERE)
    intake = open_submission(tmp_path / ATTENTION.filename, ATTENTION.filename)
    box = Sandboxed(intake, helpers=reference_of(ATTENTION), level=best_level(), lesson=ATTENTION)
    try:
        assert not box.problem, box.problem
        outcome = box.call("apply_causal_mask", "apply_causal_mask", {"scores": np.zeros((2, 2))})
        during = os.sched_getaffinity(0)
    finally:
        box.close()
    assert outcome.ok, outcome
    assert len(during) == 1
    assert outcome.value.tolist() == sorted(during)
    assert os.sched_getaffinity(0) == before


@pytest.mark.skipif(best_level() is Isolation.NONE, reason="no sandbox on this machine")
def test_the_grade_is_the_same_on_one_core_or_on_all(tmp_path):
    """``grade`` of the typical mistakes: the same report whether the machine lets it use every
    core (its calls then share one) or one core only (``taskset``, as a batch's job)."""
    typical = ATTENTION.gallery / "typical-mistakes" / ATTENTION.filename
    command = [
        sys.executable,
        "-m",
        "grader",
        "grade",
        str(typical),
        "--format",
        "json",
        "--lesson",
        "attention",
    ]
    reports = []
    for prefix in ([], ["taskset", "-c", str(min(os.sched_getaffinity(0)))] if PINNABLE else []):
        done = subprocess.run([*prefix, *command], cwd=ROOT, capture_output=True, text=True)
        assert done.returncode in (0, 1), done.stderr
        report = json.loads(done.stdout)
        report.pop("duration", None)
        reports.append(report)
    assert reports[0] == reports[-1]


def test_a_batch_pins_its_jobs_to_cores_only_when_they_fill_the_machine(monkeypatch):
    from grader.commands.batch import lane_cores

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {2, 5}, raising=False)
    assert lane_cores(2) == [2, 5]
    assert lane_cores(3) == [2, 5, 2]
    assert lane_cores(1) == [None]  # one job: its calls share whichever core it is on
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {4}, raising=False)
    assert lane_cores(2) == [None, None]
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    assert lane_cores(2) == [None, None]
