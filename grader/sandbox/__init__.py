"""Where a student's code runs: the executors that call its functions, one call at a time.

* :mod:`.inprocess`: in the checker's own process (isolation ``none``), or not at all
  (a submission that was refused);
* :mod:`.session`: in a sandbox, one worker per submission, each call watched from the grading
  process (:mod:`.watching`);
* :mod:`.wardens`: the sandboxes themselves and the isolation levels.

The code that runs inside a sandbox (``grader/sandbox/inside/``: ``worker.py``, ``seccomp.py``
and ``warden.py``) is copied into it as loose files: it imports
only itself, the standard library and numpy, never this package.

Every executor has the same face, :class:`Executor`: ``problem`` (why the file cannot be
used), ``isolation``, ``signatures``, ``call`` and ``audited_call`` (each a
:class:`grader.core.results.CallOutcome`), and ``close``.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..core.results import CallOutcome
from ..core.settings import Isolation


@runtime_checkable
class Executor(Protocol):
    """One submission's way of running the student's calls: in this process
    (:class:`.inprocess.InProcess`), in a sandbox (:class:`.session.Sandboxed`) or not at all
    (:class:`.inprocess.Refused`). Every outcome of a call is a CallOutcome; what stops a call
    (a time limit, a lost sandbox) is raised as the student's error or as unfinished."""

    isolation: Isolation

    @property
    def problem(self) -> str:
        """Why the file cannot be used ('' when it can): every check then says it."""
        ...

    @property
    def signatures(self) -> dict:
        """name -> the signature of each function the file defines, as plain text."""
        ...

    def call(self, exercise: str, name: str, arguments: dict, replace=None) -> CallOutcome:
        """Call the student's ``name`` while ``exercise`` is checked."""
        ...

    def audited_call(self, exercise: str, name: str, arguments: dict, replace=None) -> CallOutcome:
        """As :meth:`call`, and say which of the arguments the call changed."""
        ...

    def begin_example(self) -> None:
        """A new example of a check begins. Where the student's code runs in this process,
        Hypothesis seeds the global generators (Python's, numpy's) before each example; where
        it runs apart, its own are seeded again before its next call, so a file that draws
        random numbers sees the same ones either way."""
        ...

    def close(self) -> None:
        """End whatever runs for the submission."""
        ...
