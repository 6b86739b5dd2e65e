"""A fresh process for every submission, without paying for the imports again: a zygote.

The grading process of a batch (``grade-stream``) imports numpy, Hypothesis, pytest, the
grader and the lesson's checks, and starts its sandbox, once
(:func:`grader.engine.pytested.prepare`), before it has seen any submission. Then, for each
submission, it forks a *child* (:func:`run_forked`) that grades that one submission and
exits. A child is a copy of the zygote as it was before any student: whatever the checks,
the reference, pytest or Hypothesis keep of a submission (a cache, a module-level list, a
seed, a temporary file) lives in that child only and ends with it; the zygote itself never
runs a check.

The sandbox is the zygote's (it is its parent, and dies with it); a child borrows it, alone
(one child at a time), for its one submission, and the zygote kills it when the child has
ended (:func:`grader.sandbox.wardens.take_back`): a sandbox serves one submission. A new one
starts at once after a child that ended as it should (its Python and numpy load while the next
child starts), else before the next child.

A child answers over a pipe of its own; its standard input and output are /dev/null, so
nothing it prints reaches the batch. Its temporary files go to a folder the zygote makes for
it and removes after it, however it ended.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..sandbox.wardens import take_back

#: Bytes a child's answer may have (a report, its pictures included, is far smaller).
MAX_ANSWER = 64 << 20
#: Seconds between two looks at whether a child has ended while its pipe stays open (a process
#: it started may hold the pipe after it).
LOOK_EVERY = 0.2
#: The exit code of a child that failed (the zygote's message says the grader failed).
CHILD_FAILED = 70


@dataclass(frozen=True)
class Ended:
    """How a child ended, and what it wrote on its pipe."""

    output: bytes
    how: str = ""
    """'' when it exited with code 0 and its answer was read whole; else what happened, in words."""


def run_forked(task: Callable[[], bytes], *, scratch: Path) -> Ended:
    """Run ``task`` in a child forked from this process; what it returned, and how it ended.

    The sandboxes of this process are the child's while it lives, and taken back after it
    (:func:`take_back`). A KeyboardInterrupt here (Ctrl-C, the batch's SIGINT) kills the
    child, and the sandbox with it, before it goes on."""
    folder = Path(tempfile.mkdtemp(prefix="child-", dir=scratch))
    theirs_r, theirs_w = os.pipe()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()  # nothing buffered here is written twice
    pid = os.fork()
    if pid == 0:
        _child(task, theirs_r, theirs_w, folder)  # never returns
    clean = False
    try:
        os.close(theirs_w)
        output, status, overflow = _collect(pid, theirs_r)
        how = _how(status, overflow)
        clean = not how
        return Ended(output if clean else b"", how)
    except BaseException:
        _end_child(pid)
        raise
    finally:
        os.close(theirs_r)
        shutil.rmtree(folder, ignore_errors=True)
        take_back(clean=clean)


def _end_child(pid: int) -> None:
    """Kill the child ``pid`` and reap it, unless it was reaped already (its number may then be
    another process's)."""
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if not done:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def _child(task: Callable[[], bytes], theirs_r: int, theirs_w: int, folder: Path) -> None:
    """In the child: run the task, write its bytes on the pipe, exit (never returns; nothing
    registered to run at exit runs here: the zygote's sandboxes are not this process's to end)."""
    code = CHILD_FAILED
    try:
        os.close(theirs_r)
        nowhere = os.open(os.devnull, os.O_RDWR)
        os.dup2(nowhere, 0)  # the batch's requests are the zygote's
        os.dup2(nowhere, 1)  # the answer goes on the pipe, nothing else to the batch
        os.close(nowhere)
        tempfile.tempdir = str(folder)
        os.environ["TMPDIR"] = str(folder)
        data = task()
        view = memoryview(data)
        while view:
            view = view[os.write(theirs_w, view) :]
        code = 0
    except BaseException:  # noqa: BLE001 - the zygote says the grader failed
        code = CHILD_FAILED
    finally:
        os._exit(code)


def _collect(pid: int, fd: int) -> tuple[bytes, int, bool]:
    """(what the child wrote, its wait status, whether it wrote more than MAX_ANSWER)."""
    chunks, size, status = [], 0, None
    while True:
        if select.select([fd], [], [], LOOK_EVERY)[0]:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break  # the child closed its end: it is ending
            size += len(chunk)
            if size > MAX_ANSWER:
                os.kill(pid, signal.SIGKILL)
                _, status = os.waitpid(pid, 0)
                return b"", status, True
            chunks.append(chunk)
            continue
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:  # ended, and something it started holds the pipe: what it wrote is there
            while select.select([fd], [], [], 0)[0]:
                chunk = os.read(fd, 1 << 16)
                if not chunk or size + len(chunk) > MAX_ANSWER:
                    break
                size += len(chunk)
                chunks.append(chunk)
            return b"".join(chunks), status, False
    _, status = os.waitpid(pid, 0)
    return b"".join(chunks), status, False


def _how(status: int, overflow: bool) -> str:
    """How a child ended, in words ('' for an exit with code 0)."""
    if overflow:
        return f"wrote more than {MAX_ANSWER >> 20} MiB as its answer and was stopped"
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = "an unknown signal"
        return f"was killed by signal {number} ({name})"
    code = os.waitstatus_to_exitcode(status)
    return "" if code == 0 else f"ended with exit code {code}"
