"""Ending a command on a signal as on Ctrl-C (:class:`Stopped`): ``batch`` while it grades, and one
submission's ``grade``, ``check`` or Gradescope run, whose sandbox starts as the command line is
read (:mod:`grader.cli`). Only the standard library: the command line imports it before any
command's own modules."""

from __future__ import annotations

import signal
import threading


class Stopped:
    """SIGTERM taken as Ctrl-C (a KeyboardInterrupt) while a command grades, and which signal it
    was: the exit code is 128 plus its number (130 for Ctrl-C, 143 for SIGTERM), as a shell says.

    After the first signal, and from :meth:`hold` on, a signal is only noted: a second Ctrl-C,
    or the SIGTERM that follows another signal (``timeout`` and CI runners send them to the whole
    process group), never cuts the clean-up short (a batch's temporary folder, CSV and class
    report; one submission's sandbox and temporary folders)."""

    def __init__(self):
        self.number = signal.SIGINT
        self.previous: dict = {}
        self.holding = False
        self.caught = False

    def catch(self) -> None:
        if threading.current_thread() is not threading.main_thread():  # where Python runs handlers
            return
        for number in (signal.SIGTERM, signal.SIGINT):
            if number == signal.SIGINT and signal.getsignal(number) is not signal.default_int_handler:
                continue  # Ctrl-C ignored where the command was started (a background job): kept so
            self.previous[number] = signal.signal(number, self._stop)

    def _stop(self, signum, frame):
        if not self.caught:
            self.number = signum
        self.caught = True
        if not self.holding:
            self.holding = True  # the first one interrupts; any later one is only noted
            raise KeyboardInterrupt

    def hold(self) -> None:
        """From now on a signal is noted, not raised."""
        self.holding = True

    def release(self) -> None:
        for number, previous in self.previous.items():
            signal.signal(number, previous)
        self.previous = {}
