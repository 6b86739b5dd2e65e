"""One submission's time in a sandbox: its worker, its watched calls, its limits.

The trusted side (this module, in the process that holds the checks, the
reference and the scores) hands the student's file to a keeper the sandbox's
warden starts for it (:mod:`grader.sandbox.wardens`), which forks a worker for it.
Calls go to the worker one at a time through the keeper, which watches what
each one does to its arguments (:mod:`grader.relay`); answers come back in a
format that cannot execute code (:mod:`grader.worker`). When the student's code calls another graded
function, the worker asks back and the reference runs here.

Limits: a time limit per call, enforced from outside (the warden SIGKILLs every
process of the student's); a total time limit per submission; everything the
student started ended when the submission is done.
"""

from __future__ import annotations

import os
import signal
import time
from contextlib import contextmanager

import numpy as np

from .. import worker
from ..core.errors import Failure, StudentError, StudentTimeout
from ..core.intake import Intake
from ..core.results import CallOutcome
from ..core.settings import Isolation, Limits
from ..worker import Channel, WireError
from .inprocess import Alarm, time_limit
from .wardens import (
    START_TIMEOUT,
    Deadline,
    Deadlined,
    WardenLost,
    acquire,
    release,
)

#: Elements an array may hold, and the longest axis, when a student's function calls a
#: reference helper: far more than any check uses (T <= 6, D <= 16), far less than a risk.
HELPER_ELEMENTS = 1 << 16
HELPER_AXIS = 64
#: Arguments a reference helper may be given, at most.
HELPER_ARGUMENTS = 16
#: Seconds, and bytes of memory beyond what the grader already uses, one call of a reference
#: helper may take on the trusted side: far more than the largest call the bounds above allow.
HELPER_SECONDS = 2.0
HELPER_MEMORY = 1 << 30
#: Sandboxes a submission may bring down before its remaining checks are given up.
MAX_WARDEN_LOSSES = 3

_NOT_AGAIN = " (Not tried again on later checks.)"
#: Said when a file that loaded once cannot be loaded again in a new worker. Not what the file
#: said then: that load ran after the calls before it (hidden checks' among them) and could tell
#: what they sent, in the report's problem, which every student reads.
RELOAD_FAILED = (
    "Your file loaded at first, but not again when the grader started a new worker for it "
    "(after a crash or a time-out), so the remaining checks were not run."
)

#: The name used in messages while the file is being loaded.
LOADING = "your file"

#: The kinds of failure a worker may report.
OUTCOME_KINDS = (Failure.MISSING, Failure.NOT_IMPLEMENTED, Failure.RAISED, Failure.RETURN)


def _subject(name: str) -> str:
    """How messages name what failed: a function, or the file while it loads."""
    return "Your file" if name == LOADING else f"`{name}`"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class Sandboxed(Deadlined):
    """Runs one student's file in a sandbox: a worker for its calls, each one watched by the keeper."""

    def __init__(
        self,
        intake: Intake,
        *,
        helpers: dict | None,
        level: Isolation = Isolation.NAMESPACES,
        limits: Limits | None = None,
        lesson,
    ):
        self.isolation = level
        self.lesson = lesson  # its exercises and its file name go to the sandbox
        self.limits = limits = limits or Limits()
        self.helpers = helpers or {}
        self.started = time.monotonic()
        self._signatures: dict = {}
        self._problem = ""
        self._loading = False  # a worker spawned, its answer to "load" not read yet
        self.stuck: dict[str, Exception] = {}  # function -> what to raise: it timed out or broke the sandbox
        self.alive = False  # a worker is serving this submission
        self.losses = 0  # sandboxes this submission brought down
        self.reload_failed = False  # the file loaded once, then not in a new worker
        self.warden = None
        self.raw = intake.source
        self.warden = acquire(level, limits.memory)
        try:
            self._spawn()  # the worker loads the file while the checks are being collected
        except StudentError as err:
            self._problem = err.message

    @property
    def problem(self) -> str:
        self._loaded()
        return self._problem

    @property
    def signatures(self) -> dict:
        self._loaded()
        return self._signatures

    # -- the warden

    def _lost(self, name: str) -> str:
        """The sandbox went down while ``name`` ran: why, in words; ``name`` is not called again."""
        self.alive = False
        self.losses += 1
        message = f"{_subject(name)} stopped the sandbox it ran in."
        if name != LOADING:
            self.stuck[name] = StudentError(message + _NOT_AGAIN, kind=Failure.CRASHED)
        return message

    def _raise_stuck(self, name: str) -> None:
        """Fail a call of a function that timed out or broke the sandbox before.

        Always from this line, so that Hypothesis, replaying an example, sees the same failure."""
        stuck = self.stuck[name]
        if isinstance(stuck, StudentTimeout):
            raise StudentTimeout(stuck.message)
        raise StudentError(stuck.message, kind=stuck.kind)

    def _ensure_begun(self) -> None:
        """The warden holds this submission's source (again, if it is a new sandbox)."""
        if self.losses >= MAX_WARDEN_LOSSES:
            raise StudentError(
                f"Your code brought down the grader's sandbox {self.losses} times; "
                "the remaining checks were not run.",
                kind=Failure.CRASHED,
            )
        if self.warden.proc is None or self.warden.holder is not self:
            self.warden.begin(self, self.raw, self.lesson, self.limits.memory)

    # -- the worker's life

    def _spawn(self) -> None:
        """Have the warden fork a worker and ask it to load the file; _loaded reads the answer."""
        try:
            self._ensure_begun()
            requests_r, requests_w = os.pipe()
            replies_r, replies_w = os.pipe()
            try:
                self.warden.post({"type": "spawn"}, fds=(requests_r, replies_w), keeper=True)
            finally:
                os.close(requests_r)
                os.close(replies_w)
        except WardenLost:
            raise StudentError(self._lost(LOADING), kind=Failure.CRASHED) from None
        self.requests, self.replies = requests_w, replies_r
        os.set_blocking(requests_w, False)  # a worker that stops reading cannot hold the grader
        self.channel = Channel(replies_r, requests_w, wait=self._wait)
        self.alive = True
        load = {"type": "load", "exercises": list(self.lesson.exercises), "substitute": bool(self.helpers)}
        self.load_deadline = time.monotonic() + START_TIMEOUT
        self._loading = True
        try:
            self._send(load, self.load_deadline, name=LOADING)
        except StudentTimeout:
            self._loading = False
            self._problem = f"Your file did not finish loading within {START_TIMEOUT:g} s."

    def _loaded(self) -> None:
        """Read the warden's and the worker's answers to the spawn, once."""
        if not self._loading:
            return
        self._loading = False
        try:
            replies = self.warden.collect(self.load_deadline)
        except WardenLost:
            self._problem = self._lost(LOADING)
            self._end_worker(reset=False)
            return
        for reply in replies:
            if reply.get("problem"):
                self._problem = f"The grader could not start your code: {reply['problem']}."
                self._end_worker()
                return
        try:
            reply = self._receive(self.load_deadline, name=LOADING)
        except StudentError as err:
            self._problem = err.message
            return
        except StudentTimeout:
            self._problem = f"Your file did not finish loading within {START_TIMEOUT:g} s."
            return
        signatures = _plain_signatures(reply.get("signatures"))
        if reply.get("type") == "ready" and signatures is not None:
            self._signatures = signatures
        else:
            problem = reply.get("problem")
            self._problem = (
                problem if isinstance(problem, str) and problem else "Your file could not be loaded."
            )[:2000]
            self._end_worker()

    def _close_pipes(self) -> None:
        if self.alive:
            self.alive = False
            for fd in (self.requests, self.replies):
                try:
                    os.close(fd)
                except OSError:
                    pass

    def _end_worker(self, *, reset: bool = True) -> None:
        """SIGKILL the worker and everything the student started (the warden does it)."""
        self._close_pipes()
        if reset and self.warden is not None:
            self.warden.reset(wipe=False)

    def close(self) -> None:
        """The submission is done: nothing it started survives, nothing it wrote stays."""
        self._close_pipes()
        if self.warden is not None:
            self.warden.reset()
            release(self.warden)
            self.warden = None

    # -- the channel

    def _timeout(self, name: str) -> StudentTimeout:
        self._end_worker()
        return StudentTimeout(f"{_subject(name)} did not finish within {self.limits.call_timeout:g} s.")

    def _send(self, message: dict, deadline: float, *, name: str) -> None:
        self.deadline = deadline
        try:
            self.channel.send(message, wait_writable=self._wait_writable)
        except Deadline:
            raise self._timeout(name) from None
        except OSError:
            pass  # the worker is gone; receiving says how

    def _receive(self, deadline: float, *, name: str) -> dict:
        self.deadline = deadline
        try:
            message = self.channel.receive()
        except Deadline:
            raise self._timeout(name) from None
        except EOFError:
            message = None  # handled below: an error raised here would carry this one as context

        except WireError as err:
            self._end_worker()
            raise StudentError(
                f"{_subject(name)} sent back something the grader does not accept: {err}."
            ) from None
        if message is not None and not isinstance(message.get("type"), str):
            self._end_worker()  # every comparison below trusts the type to be a string
            raise StudentError(f"{_subject(name)} sent back a message of no known type.")
        if message is not None and message.get("type") == "unreadable":  # said by the keeper
            self._end_worker()
            raise StudentError(
                f"{_subject(name)} sent back something the grader does not accept: "
                f"{str(message.get('message'))[:300]}."
            )
        if message is None:
            why = self._death(name)
            if name in self.stuck:
                self._raise_stuck(name)
            raise StudentError(why, kind=Failure.CRASHED)
        if time.monotonic() > deadline:  # an answer that came too late counts as none
            raise self._timeout(name)
        return message

    def _death(self, name: str) -> str:
        """Why the worker is gone, in a student's words."""
        self._close_pipes()
        try:
            status = self.warden.request({"type": "status", "wait": 2.0}, keeper=True)
        except WardenLost:
            return self._lost(name)
        code = status.get("code")
        self._end_worker()
        if status.get("alive"):
            return f"{_subject(name)} closed its connection to the grader."
        if not isinstance(code, int):
            return f"{_subject(name)} stopped the worker that ran it."
        signum = -code if code < 0 else 0
        if signum == signal.SIGKILL:
            return f"{_subject(name)} was stopped: it probably used more than {self.limits.memory / 2**30:g} GiB of memory."
        if signum:
            return f"{_subject(name)} crashed (signal {signum}, {_signal_name(signum)})."
        return f"{_subject(name)} exited the interpreter (exit code {code})."

    # -- calls

    def _may_call(self, name: str) -> None:
        if name in self.stuck:
            self._raise_stuck(name)
        if self.reload_failed:
            raise StudentError(RELOAD_FAILED, kind=Failure.CRASHED)
        if time.monotonic() - self.started > self.limits.total_timeout:
            raise StudentTimeout(
                f"Grading of your file was stopped after {self.limits.total_timeout:g} s in total."
            )
        self._loaded()

    def call(self, exercise: str, name: str, arguments: dict, replace=None) -> CallOutcome:
        self._may_call(name)
        if not self.alive:
            loaded_before = bool(self._signatures)
            self._spawn()  # replace a worker that was ended or died
            self._loaded()
            if self._problem and loaded_before:
                self._problem, self.reload_failed = "", True
                self._end_worker()
                raise StudentError(RELOAD_FAILED, kind=Failure.CRASHED)
            if self._problem:
                raise StudentError(self._problem, kind=Failure.LOAD)
        deadline = time.monotonic() + self.limits.call_timeout
        try:
            places, scalars, image = worker.laid_out(arguments)  # the keeper puts it in shared memory
            request = {
                "type": "call",
                "exercise": exercise,
                "name": name,
                "scalars": scalars,
                "places": places,
                "memory": image,
            }
            if replace is not None:
                request["replace"] = tuple(replace)
            self._send(request, deadline, name=name)
            while True:
                reply = self._receive(deadline, name=name)
                if reply.get("type") == "callback":
                    self._send(self._help(exercise, reply, replace or ()), deadline, name=name)
                    continue
                if reply.get("type") != "outcome":
                    self._end_worker()
                    raise StudentError(f"`{name}` broke the conversation with the grader.")
                return self._checked(name, reply)
        except StudentTimeout as stop:
            self.stuck[name] = StudentTimeout(stop.message + _NOT_AGAIN)
            raise

    def audited_call(self, exercise: str, name: str, arguments: dict, replace=None) -> CallOutcome:
        """A call whose effect on its arguments is known for sure: every call of a worker is
        watched (:mod:`grader.relay`), so this is a call like any other."""
        return self.call(exercise, name, arguments, replace=replace)

    def _help(self, exercise: str, request: dict, replace: tuple[str, ...]) -> dict:
        """Run the reference for a graded function the student's code called, if it is one the
        reference stands in for in this call (``replace``: the worker was told so, but the
        worker runs the student's code and may ask for any).

        Everything in the request came from the student's side: each field is checked
        before use, the arguments must keep the reference's contract within small bounds,
        and the reference runs under a time and a memory limit, so a request can make the
        grader's own process neither fail nor slow nor large.
        """
        helper = request.get("name")
        if (
            not isinstance(helper, str)
            or helper not in replace
            or helper == exercise
            or helper not in self.helpers
        ):
            shown = helper if isinstance(helper, str) else "that function"
            return {"type": "raise", "exc": "RuntimeError", "message": f"{shown[:100]} is not available here"}
        args, kwargs = request.get("args", ()), request.get("kwargs", {})
        if not (
            isinstance(args, tuple)
            and isinstance(kwargs, dict)
            and all(isinstance(k, str) for k in kwargs)
            and len(args) + len(kwargs) <= HELPER_ARGUMENTS
        ):
            return {"type": "raise", "exc": "TypeError", "message": "bad arguments"}
        problem = _helper_arguments_problem(helper, [*args, *kwargs.values()])
        if problem:
            return {"type": "raise", "exc": "ValueError", "message": f"{helper}: {problem}"}
        try:
            with time_limit(HELPER_SECONDS), memory_limit(HELPER_MEMORY):
                value = self.helpers[helper](*args, **kwargs)
        except Alarm:
            return {
                "type": "raise",
                "exc": "RuntimeError",
                "message": f"{helper} took too long on these inputs",
            }
        except MemoryError:
            return {"type": "raise", "exc": "MemoryError", "message": f"{helper} needs too much memory here"}
        except (ValueError, TypeError) as err:
            return {"type": "raise", "exc": type(err).__name__, "message": str(err)[:300]}
        except Exception as err:  # noqa: BLE001 - bad input from the student's side
            return {"type": "raise", "exc": "ValueError", "message": f"{helper} failed: {str(err)[:300]}"}
        return {"type": "return", "value": value}

    @staticmethod
    def _checked(name: str, reply: dict) -> CallOutcome:
        """An outcome whose every field has the expected type; values only plain numeric arrays.

        Which arguments changed comes from the keeper, which sets it over anything the
        worker (the student's code) put in the frame."""
        if reply.get("ok") is True:
            problem = worker.check_value(name, reply.get("value"))
            if problem:
                return CallOutcome.failed(Failure.RETURN, problem)
            mutated = reply.get("mutated", ())
            if not isinstance(mutated, tuple) or not all(isinstance(m, str) for m in mutated):
                mutated = ()
            return CallOutcome(value=reply["value"], mutated=mutated)
        kind = reply.get("kind")
        raised = reply.get("raised", ())
        message = reply.get("message")
        return CallOutcome.failed(
            kind if isinstance(kind, str) and kind in OUTCOME_KINDS else Failure.RAISED,
            message[:2000] if isinstance(message, str) else f"`{name}` failed.",
            tuple(r for r in raised if isinstance(r, str)) if isinstance(raised, tuple) else (),
        )


def _plain_signatures(described) -> dict | None:
    """What a worker said its file defines, if it has the form :func:`grader.worker.describe_signature`
    gives (``{name: why-not-a-function or [[name, kind, default or None], ...]}``); else None.
    The worker runs the student's code, so it may say anything."""
    if not isinstance(described, dict) or not all(isinstance(k, str) for k in described):
        return None
    for value in described.values():
        if isinstance(value, str):
            continue
        if not isinstance(value, tuple) or not all(
            isinstance(p, tuple)
            and len(p) == 3
            and isinstance(p[0], str)
            and isinstance(p[1], str)
            and (p[2] is None or isinstance(p[2], str))
            for p in value
        ):
            return None
    return described


def _helper_arguments_problem(helper: str, values: list) -> str:
    """Why these arguments may not reach the reference ('' if they may).

    Each array is small, and arrays with batch axes (all but the last two) share them
    exactly: the reference's contract has one batch, and weights without one. Batch
    axes that broadcast against each other would multiply the work the reference does.
    """
    batches = set()
    for value in values:
        if isinstance(value, np.ndarray):
            if value.size > HELPER_ELEMENTS or max(value.shape, default=0) > HELPER_AXIS:
                return f"an array of shape {value.shape} is larger than the checks ever use"
            if value.ndim > 2:
                batches.add(value.shape[:-2])
        elif not isinstance(value, (bool, int, float)) or (isinstance(value, int) and abs(value) > 1 << 20):
            return f"an argument of type {type(value).__name__} is not accepted"
    if len(batches) > 1:
        return f"arrays whose batch axes differ ({', '.join(str(b) for b in sorted(batches))})"
    return ""


@contextmanager
def memory_limit(extra: int):
    """Let this process use at most ``extra`` more bytes of address space within the block
    (a MemoryError past it), where the system can say so (Linux); else no limit."""
    try:
        import resource

        with open("/proc/self/statm") as f:
            used = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = used + extra if hard == resource.RLIM_INFINITY else min(used + extra, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, OSError, ValueError):
        yield
        return
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
