"""How long a student's code has run, counted so that the machine's load does not change it.

A time limit counts the processor time of the process (or thread) that runs the student's
code, which the same code uses on a quiet machine and on a busy one. A second figure,
Linux's *run delay* (``/proc/PID/schedstat``: the time a task was ready to run but waited
for a processor), tells the two ways a call can take long in wall-clock time apart:

* **the student's code blocked** (``time.sleep``, a read that never ends): it neither ran nor
  waited for a processor. Its *idle* time, the wall time waited for it less its processor
  time and its run delay, is the student's own, as large on a quiet machine as on a busy one;
* **the machine was busy**: the code was ready to run and waited for a processor (run delay),
  or whatever serves it (the trusted side, which watches each call and answers its questions)
  was slow.

So one call is judged by :meth:`Stopwatch.verdict`, in this order:

1. processor time above the limit: a time-out (:data:`CPU`), the student's;
2. idle time above the limit: a time-out (:data:`IDLE`), the student's; only where the run
   delay can be read (Linux), since elsewhere idle and starved cannot be told apart;
3. wall time above :data:`WALL_FACTOR` times the limit, neither of the above: the machine did
   not give the code its time (:data:`WALL`); the grade is not final (``unfinished``).

A sandboxed submission also adds up its calls' idle time (:meth:`Stopwatch.idle`): sleeps each
under the call's limit are the student's once they pass the submission's total limit, as its
processor time is, before the submission's own wall-clock guard could make them ``unfinished``.

The processor time of a call is all the work done for it, which the machine's load does not
change: the student's task's, and that of the trusted side's thread that makes the call (it
watches the call's arguments at each of the worker's writes and runs the reference's functions
the call asks for). (Were the last left out, a function could make every call unfinished by
having it work for it.) Idle time is counted generously to the student: the time that thread
ran or waited to run is taken off it too, even when the two overlapped.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass

#: A wall-clock guard stands at this many times a limit of processor time: far above what a
#: busy machine takes from a student's call (load 10 on 2 cores leaves a task a fifth of a core).
WALL_FACTOR = 10.0
#: The verdicts of :meth:`Stopwatch.verdict`.
CPU, IDLE, WALL = "cpu", "idle", "wall"
#: Seconds a call's clocks go unread while it is waited for, at most, and at least
#: (:meth:`Stopwatch.next_look`).
TICK, MIN_TICK = 0.25, 0.01


@dataclass(frozen=True)
class Usage:
    """A task's processor time and run delay so far, in seconds (delay None: not known here)."""

    cpu: float
    delay: float | None


def read_usage(task: str) -> Usage | None:
    """The usage of ``task`` (a /proc path: ``/proc/123``, ``/proc/thread-self``), or None
    where /proc cannot say (not Linux, the task gone)."""
    try:
        with open(f"{task}/schedstat", "rb") as f:
            ran, waited = f.read().split()[:2]
        return Usage(int(ran) / 1e9, int(waited) / 1e9)
    except (OSError, ValueError):
        pass
    try:  # no scheduler statistics in this kernel: processor time alone, in clock ticks
        with open(f"{task}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return Usage((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), None)
    except (OSError, ValueError, IndexError, AttributeError):
        return None


class KeptUsage:
    """The usage of one process (``task``: its number) or task (a /proc path, as
    ``/proc/self/task/123``), read through its /proc file kept open: one read per look (where
    :func:`read_usage` opens two files). The open file names that very task: once it is gone,
    reading fails (None), even if its number has been given to another."""

    def __init__(self, task: int | str):
        self.fd: int | None = None
        self.ticks = False  # the file is ``stat`` (clock ticks), not ``schedstat``
        where = task if isinstance(task, str) else f"/proc/{task}"
        for name in ("schedstat", "stat"):
            try:
                self.fd = os.open(f"{where}/{name}", os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                continue
            self.ticks = name == "stat"
            if self.read() is not None:
                return
            self.close()
            self.fd = None

    def read(self) -> Usage | None:
        """The process's usage now, or None (gone, or /proc cannot say)."""
        if self.fd is None:
            return None
        try:
            data = os.pread(self.fd, 4096, 0)
            if self.ticks:
                fields = data.rsplit(b")", 1)[1].split()
                return Usage((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), None)
            ran, waited = data.split()[:2]
            return Usage(int(ran) / 1e9, int(waited) / 1e9)
        except (OSError, ValueError, IndexError, AttributeError):
            return None

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None


class Stopwatch:
    """One call's clocks: the student's task's usage, a helper task's (the trusted side's thread
    that makes the call: it watches the call and runs the reference's functions for it), and
    the wall time spent waiting for it.

    ``measure`` returns the student's Usage now (None: it cannot be read); ``helper`` the
    helping task's Usage (None: there is none, or it cannot be read); ``first`` the student's
    Usage when the call began (default: read now). The call's processor time is the sum of all
    the work done for it, which no load changes: the student's task's and the helper's."""

    def __init__(self, limit: float, measure, helper=None, *, first: Usage | None = None):
        self.limit, self.measure, self.helper = limit, measure, helper
        self.begun = time.monotonic()
        self.first = first if first is not None else measure()
        self.helper_first = helper() if helper else None
        self.waited = 0.0  # wall seconds spent waiting for the student's side
        self.last: Usage | None = self.first
        self.helper_last: Usage | None = self.helper_first
        # when the clocks were last read, and the processor seconds they said then
        self.read_at, self.seen = self.begun, 0.0
        self.busy: float | None = None  # seconds its tasks ran or waited to run, as last read
        self.read_waited = -1.0  # the wait that reading came after (stale once more is waited)
        # the student's idle time as of the last reading taken while the call had not answered
        self.pending_waited, self.pending_idle = 0.0, 0.0

    def _read(self) -> tuple[float, float | None] | None:
        """(processor seconds used for the call, seconds its tasks ran or waited for a
        processor: None where that cannot be known), or None where nothing can be read."""
        self.read_at = time.monotonic()
        now = self.measure()
        if now is None or self.first is None:
            return None
        self.last, self.read_waited = now, self.waited
        cpu = now.cpu - self.first.cpu
        busy = None
        if now.delay is not None and self.first.delay is not None:
            busy = now.cpu - self.first.cpu + now.delay - self.first.delay
        if self.helper is not None:
            helper_now = self.helper() if self.helper_first is not None else None
            if helper_now is None:
                self.seen, self.busy = cpu, None
                return cpu, None  # the helper cannot be read: no idle time is the student's
            self.helper_last = helper_now
            cpu += helper_now.cpu - self.helper_first.cpu
            if busy is not None and helper_now.delay is not None and self.helper_first.delay is not None:
                busy += helper_now.cpu - self.helper_first.cpu + helper_now.delay - self.helper_first.delay
            else:
                busy = None
        self.seen, self.busy = cpu, busy
        return max(cpu, 0.0), busy

    def next_look(self) -> float:
        """Seconds until the clocks are due to be read again (0: now): :data:`TICK` after the
        last reading, or sooner if the processor time that reading left the call runs out
        first, but never less than :data:`MIN_TICK`
        after it. So a call that answers quickly is read at its start and at its answer only,
        however many frames it exchanges, and a long one is looked at as often as when every
        wait began with a reading."""
        left = self.limit - self.seen
        return max(self.read_at + min(max(left, MIN_TICK), TICK) - time.monotonic(), 0.0)

    def due(self) -> bool:
        """Whether the clocks are due to be read again (:meth:`next_look`)."""
        return self.next_look() == 0.0

    def others(self, *, reread: bool = True) -> float:
        """Processor seconds done for the call by others than the student's task: the helper's,
        as last read (without ``reread``: the clocks were just
        read, at the call's answer)."""
        if not reread:
            helper_now = self.helper_last if self.helper_first is not None else None
        elif self.helper is not None and self.helper_first is not None:
            helper_now = self.helper()
        else:
            helper_now = None
        done = helper_now.cpu - self.helper_first.cpu if helper_now is not None else 0.0
        return max(done, 0.0)

    def pending(self) -> None:
        """The reading just taken found the call still unanswered (an empty look, a question for
        the reference): the student's idle time so far is certain."""
        if self.busy is not None and self.read_waited == self.waited:
            self.pending_waited, self.pending_idle = self.waited, max(self.waited - self.busy, 0.0)

    def idle(self) -> float:
        """Seconds of the call's wait that were the student's own: the wall time waited for it
        less the time its tasks ran or waited for a processor, as the clocks said at its end.
        Of the wait since the last reading that found it unanswered, at most :data:`TICK`
        counts: the grader looks at least that often, so a longer last wait was the grader's
        own (stopped, or paused) while the worker had answered, frozen at its write, neither
        running nor waiting. Where its end could not be read, the idle time as of that last
        reading alone; none where the run delay is unknown (then no wait is the student's)."""
        if self.busy is None or self.read_waited != self.waited:
            return self.pending_idle
        end = max(self.waited - self.busy, 0.0)
        last = min(self.waited - self.pending_waited, TICK)
        return max(self.pending_idle, min(end, self.pending_idle + last))

    def cpu(self) -> float | None:
        """Processor seconds used for the call since it began (None: unknown)."""
        read = self._read()
        return None if read is None else read[0]

    def verdict(self, *, waited: float | None = None) -> str:
        """:data:`CPU`, :data:`IDLE`, :data:`WALL` or '' (none of the limits is reached yet);
        ``waited`` (default: the wall time since the call began) is how long the call has
        been waited for."""
        wall = time.monotonic() - self.begun
        waited = wall if waited is None else waited
        read = self._read()
        if read is not None:
            self.pending()  # a verdict is asked for only while the call has not answered
            cpu, busy = read
            if cpu > self.limit:
                return CPU
            if busy is not None and waited - busy > self.limit:
                return IDLE
        if wall > WALL_FACTOR * self.limit:
            return WALL
        return ""


def lingered(wall: float, before: Usage | None, after: Usage | None) -> float:
    """Of ``wall`` seconds spent waiting for a task to end, whose usage went from ``before`` to
    ``after``, those it neither ran nor waited for a processor: all of them where it is gone
    (``after`` None: an honest end comes moments after the task let go of its pipes); none
    where its run delay cannot be read."""
    if before is None or before.delay is None:
        return 0.0
    if after is None:
        return max(wall, 0.0)
    if after.delay is None:
        return 0.0
    return max(wall - (after.cpu - before.cpu) - (after.delay - before.delay), 0.0)


def stopped_message(subject: str, verdict: str, limit: float) -> str:
    """What a student reads when a limit stopped their code (``subject``: "`name`" or "Your file")."""
    if verdict == CPU:
        return f"{subject} used more than {limit:g} s of processor time."
    if verdict == IDLE:
        return (
            f"{subject} waited more than {limit:g} s without running "
            "(a sleep, or waiting for something that never comes)."
        )
    return (
        f"{subject} could not finish: the machine was too busy to give it its {limit:g} s of "
        "processor time. This is not a mistake of yours: run it again later."
    )
