"""What the student's code already answered, within one submission: a call asked again with the
very same arguments, in a later example, is answered as it was the first time.

Hypothesis assumes that a check given the same choices does the same thing, and never runs an
example twice; the grader goes one step further and treats each graded function as what the
lesson says it is, a function of its arguments. Different examples often make the same call:
the smallest inputs come first in every property of an exercise, a shrinking example keeps
most of its calls while one of its choices changes, and a function the checks see through the
reference's stand-ins (:meth:`grader.engine.submission.Submission.replace_for`) asks the
trusted side the same question again and again. Each of those calls costs a round trip to the
sandbox; answering it here costs a lookup.

The rules, which keep every verdict a function of the submission alone:

* The key is exact: the exercise, the functions the reference stands in for, the function,
  whether the call is audited, and every argument compared whole (an array by its kind, shape
  and bytes; a number, a string or None by its type and ``repr``; a tuple or list item by
  item). A call with any other argument is never answered here.
* Within one example, a key is answered here at most once: a check that calls a function twice
  on the same input (to see that it gives the same answer, say) reaches the student's code the
  second time.
* Only answers are kept: a call that ran out of time, crashed the sandbox or was refused is not,
  and a function that once ended so is never answered here again (the sandbox's own rule, "not
  tried again", stands as it did).
* It lives in the trusted process, for one submission: nothing of one student's answers reaches
  another's grading. Its size is bounded; past the bound, nothing more is kept (no eviction, so
  which calls are answered here does not depend on anything but the submission).
* Every answer given from here is a fresh copy: a check may change what it was given.

For code that is a function of its arguments (every correct file, and every file whose
mistakes are mistakes of computation), the reports are the very ones it would have without
this. Code that answers differently when asked the same thing again is held to its first
answer, within a submission, whichever check asks.
"""

from __future__ import annotations

from dataclasses import replace

from ..core.exact import arguments_digest, copied, nbytes

__all__ = ["MAX_BYTES", "MAX_KEPT", "Answers"]

#: Answers kept per submission, at most, and the bytes of arrays they may hold together.
MAX_KEPT = 8192
MAX_BYTES = 64 << 20


class Answers:
    """The answers of one submission's code, by call (see the module's text)."""

    def __init__(self, *, max_kept: int = MAX_KEPT, max_bytes: int = MAX_BYTES):
        self._kept: dict[tuple, object] = {}
        self._bytes = 0
        self._max_kept, self._max_bytes = max_kept, max_bytes
        self._closed: set[str] = set()  # functions that once ended without an answer
        self.given = 0  # calls answered here (for tests and measurements)

    def key(self, exercise: str, replace_: tuple, name: str, audit: bool, arguments: dict) -> tuple | None:
        """The key of a call, or None if it may not be answered here."""
        if name in self._closed:
            return None
        digest = arguments_digest(arguments)
        return None if digest is None else (exercise, tuple(replace_), name, bool(audit), digest)

    def get(self, key: tuple):
        """A fresh copy of the kept answer to ``key``, or None."""
        if key[2] in self._closed:
            return None
        kept = self._kept.get(key)
        if kept is None:
            return None
        self.given += 1
        return replace(kept, value=copied(kept.value))

    def keep(self, key: tuple, outcome) -> None:
        """Keep ``outcome`` (a CallOutcome) as the answer to ``key``, while there is room."""
        if key in self._kept or len(self._kept) >= self._max_kept:
            return
        size = nbytes(outcome.value) + 64
        if self._bytes + size > self._max_bytes:
            return
        self._bytes += size
        self._kept[key] = replace(outcome, value=copied(outcome.value))

    def close(self, name: str) -> None:
        """``name`` ended without an answer once: none of its calls is answered here again."""
        self._closed.add(name)
