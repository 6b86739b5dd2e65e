"""One core for a submission's calls: the grading process and the sandbox processes it talks to.

A call into the sandbox is a hand-over: the grading process writes, the worker runs the student's
function and writes (the kernel stops it there), the grading process reads, looks and lets it go
on. Each one waits for the other, so only one of them runs at any moment. Where the system lets
them run on any core, each hand-over may wake a process on another core than the writer's; on a
virtual machine that wake-up is an interrupt between processors through the hypervisor, tens of
microseconds, against a few for a switch on the same core (a pipe's round trip between two
processes measured 42 to 83 µs across the two cores of the development machine, 9 µs with both
on one). So, once a submission's worker is running, :class:`Shared` keeps the grading process
and the sandbox's warden, keeper and worker on the one core the grading process is on, and gives
the grading process its cores back when the submission ends.

Nothing is pinned where the grading process may use only one core already (a batch pins each of
its grading jobs to a core of its own, :mod:`grader.commands.batch`, and everything it starts
inherits that), nor where the system cannot pin (no ``sched_setaffinity``: macOS, Windows).
Where each process runs changes no grade: limits are counted in processor time.
"""

from __future__ import annotations

import os


def _current_core() -> int | None:
    """The core this process last ran on (the ``processor`` field of /proc/self/stat)."""
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
        # fields after the command's name, which is in parentheses and may hold anything
        return int(stat[stat.rindex(b")") + 2 :].split()[36])
    except (OSError, ValueError, IndexError):
        return None


class Shared:
    """The core a submission's calls run on, once :meth:`pin` has put them there."""

    def __init__(self):
        self.core: int | None = None
        self.before: set[int] | None = None  # this process's cores before it was pinned
        self.pinned: tuple[int, ...] = ()  # the sandbox's processes pinned last

    def pin(self, pids: tuple[int, ...]) -> None:
        """Keep this process and ``pids`` (the sandbox's processes that answer its calls, as this
        side numbers them) on the core this process is on now; a process already gone is
        skipped. Done again for processes not pinned yet, on the same core."""
        if pids == self.pinned or not (hasattr(os, "sched_setaffinity") and hasattr(os, "sched_getaffinity")):
            return
        if self.core is None:
            try:
                allowed = os.sched_getaffinity(0)
            except OSError:
                return
            core = _current_core()
            if len(allowed) < 2 or core not in allowed:
                return  # one core already (a batch's job), or none known
            try:
                os.sched_setaffinity(0, {core})
            except OSError:
                return
            self.core, self.before = core, allowed
        for pid in pids:
            try:
                os.sched_setaffinity(pid, {self.core})
            except OSError:
                pass  # gone already: its end is heard where it is waited for
        self.pinned = pids

    def release(self) -> None:
        """Give this process back the cores it had (the sandbox's processes stay where they are
        until the next submission pins them again)."""
        if self.before is not None:
            try:
                os.sched_setaffinity(0, self.before)
            except OSError:
                pass
        self.core, self.before, self.pinned = None, None, ()
