"""The trusted side's watch over a worker (grader.sandbox.watching), with the real kernel: a worker
stopped at each of its writes while this side compares the call's arguments, and the memory
they are in, which this side writes and the worker maps."""

import mmap
import os
import select
import signal
import time

import numpy as np
import pytest

from grader.sandbox import watching
from grader.sandbox.inside import worker as worker_module
from grader.sandbox.inside.worker import Channel, encode, laid_out, watch
from grader.sandbox.watching import Arena, Frozen, Unwatched, Watched

freezing = pytest.mark.skipif(not worker_module.FREEZES, reason="no F_SETSIG here")


class _Pair:
    """This process as the trusted side, and ``worker(channel, arena)`` run in a forked child as
    a keeper forks one: the watch set on its answers' read end before anything else runs in it
    (unless ``watched`` is False), the arena mapped from this side's memory."""

    def __init__(self, worker, *, watched: bool = True, arena_size: int = 1 << 16):
        self.arena = Arena(arena_size)
        requests_r, requests_w = os.pipe()
        replies_r, replies_w = os.pipe()
        self.channel = Watched(replies_r, requests_w, wait=self._wait, arena=self.arena)
        memory = mmap.mmap(self.arena.fd, arena_size)
        self.pid = os.fork()
        if self.pid == 0:
            try:
                if watched:
                    watch(replies_r, os.getpid())
                for fd in (replies_r, requests_w, self.arena.fd):
                    os.close(fd)
                worker(Channel(requests_r, replies_w), memory)
            finally:
                os._exit(0)
        memory.close()
        for fd in (requests_r, replies_w):
            os.close(fd)
        self.frozen = Frozen(self.pid, parent=os.getpid())
        assert self.frozen.known
        self.channel.frozen = self.frozen

    @staticmethod
    def _wait(fd: int) -> None:
        assert select.select([fd], [], [], 10)[0], "the worker says nothing"

    def call(self, scores: np.ndarray) -> int:
        places, scalars, image = laid_out({"scores": scores})
        base = self.arena.place(image, places)
        self.channel.send(
            {"type": "call", "exercise": "f", "name": "f", "scalars": scalars, "places": places, "base": base}
        )
        return base

    def answer(self) -> dict:
        """The next outcome, with this side's verdict (questions are answered with zeros)."""
        while True:
            heard = self.channel.receive()
            if heard["type"] != "callback":
                heard["mutated"] = self.arena.verdict()
                return heard
            self.channel.send({"type": "return", "value": np.zeros(4)})

    def state(self) -> str:
        with open(f"/proc/{self.pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]

    def close(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        for fd in (self.channel.fd_in, self.channel.fd_out):
            os.close(fd)
        self.frozen.close()
        self.arena.close()


def _answers(worker, calls: int, **kwargs) -> list[dict]:
    pair = _Pair(worker, **kwargs)
    try:
        heard = []
        for _ in range(calls):
            pair.call(np.arange(16.0))
            heard.append(pair.answer())
        return heard
    finally:
        pair.close()


def _scores(request, arena):
    offset, dtype, shape = request["places"]["scores"]
    return np.ndarray(tuple(shape), dtype=np.dtype(dtype), buffer=arena, offset=request["base"] + offset)


def test_each_call_gets_memory_after_the_last_ones_until_the_arena_is_used_up():
    """Arrays a worker kept from a call keep their bytes through the next calls (an honest memo
    of the last input once held the next call's), until the arena is used up and laid out from
    its start again (a 64 KiB arena, a page a call: 16 calls a round)."""

    def worker(channel, arena):
        while True:
            request = channel.receive()
            channel.send({"type": "outcome", "ok": True, "value": np.array([request["base"]])})

    bases = [int(a["value"][0]) for a in _answers(worker, 40)]
    page = mmap.PAGESIZE
    assert bases == [(n % (65536 // page)) * page for n in range(40)], bases


def test_the_worker_reads_what_this_side_wrote_and_its_verdict_is_this_sides():
    """The arguments arrive as placed; an unchanged argument is reported unchanged whatever the
    worker says."""

    def worker(channel, arena):
        while True:
            view = _scores(channel.receive(), arena)
            channel.send({"type": "outcome", "ok": True, "value": view.copy(), "mutated": ("scores",)})

    heard = _answers(worker, 3)
    assert [a["mutated"] for a in heard] == [()] * 3
    assert heard[0]["value"].tolist() == list(range(16))


@freezing
def test_an_argument_put_back_as_soon_as_the_answer_is_written_still_counts():
    """A worker that changes its argument in place, writes its answer and at once puts the
    argument back is stopped by its write before it can, every time."""

    def worker(channel, arena):
        while True:
            view = _scores(channel.receive(), arena)
            saved = view.copy()
            view[...] = -1.0
            channel.send({"type": "outcome", "ok": True, "value": saved})
            view[...] = saved

    heard = _answers(worker, 200)
    assert [a["mutated"] for a in heard] == [("scores",)] * 200
    assert heard[0]["value"].tolist() == list(range(16))


@freezing
def test_an_answer_begun_before_the_change_still_counts_it():
    """The first byte of the answer written before the argument is changed, the rest after (or
    the change put back between the two): seen either way."""

    def worker(channel, arena):
        for undo in (False, True):
            view = _scores(channel.receive(), arena)
            frame = encode({"type": "outcome", "ok": True, "value": view.copy()})
            saved = view.copy()
            os.write(channel.fd_out, frame[:1])
            view[...] = -1.0
            if undo:
                os.write(channel.fd_out, frame[1:2])
                view[...] = saved
            os.write(channel.fd_out, frame[1 + undo :])
        channel.receive()

    assert [a["mutated"] for a in _answers(worker, 2)] == [("scores",), ("scores",)]


@freezing
def test_a_change_made_after_a_question_and_put_back_before_the_answer_is_seen():
    """A question for the reference is a write like any other: a change made before it and put
    back after the reference's answer came is seen at the question's freeze."""

    def worker(channel, arena):
        while True:
            view = _scores(channel.receive(), arena)
            saved = view.copy()
            view[...] = -1.0
            channel.send({"type": "callback", "name": "g", "args": (), "kwargs": {}})
            channel.receive()
            view[...] = saved
            channel.send({"type": "outcome", "ok": True, "value": saved})

    assert [a["mutated"] for a in _answers(worker, 5)] == [("scores",)] * 5


@freezing
def test_a_worker_stays_stopped_after_a_write_until_this_side_has_read_it():
    """What a worker writes when nothing was asked (between calls) stops it there, and the next
    call finds it said: out of turn."""

    def worker(channel, arena):
        channel.receive()
        channel.send({"type": "outcome", "ok": True, "value": np.zeros(1)})
        channel.send({"type": "outcome", "ok": True, "value": np.ones(1)})  # not asked for
        channel.receive()

    pair = _Pair(worker)
    try:
        pair.call(np.arange(16.0))
        assert pair.answer()["value"].tolist() == [0.0]
        deadline = time.monotonic() + 10
        while pair.state() != "T" and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)
        assert pair.state() == "T"  # stopped by its second write, which no one has read
        assert pair.channel.spoke()
    finally:
        pair.close()


@freezing
def test_an_answer_written_in_packets_is_read_whole_at_its_stop(monkeypatch):
    """Found by helper-43: a worker that put its end of the pipe in packet mode (O_DIRECT) had
    only one packet read at each stop (a short read was taken for an empty pipe); the rest
    waited for a stop that never came, 30 s a call, then ended the grading in an internal error."""
    monkeypatch.setattr(watching, "FREEZE_SECONDS", 2.0)

    def worker(channel, arena):
        import fcntl

        fcntl.fcntl(channel.fd_out, fcntl.F_SETFL, fcntl.fcntl(channel.fd_out, fcntl.F_GETFL) | os.O_DIRECT)
        while True:
            channel.receive()
            channel.send({"type": "outcome", "ok": True, "value": np.arange(4096.0)})  # 8 pages

    heard = _answers(worker, 3)
    assert [a["value"].shape for a in heard] == [(4096,)] * 3


def test_a_worker_that_said_nothing_out_of_turn_is_not_taken_for_one_that_did():
    def worker(channel, arena):
        while True:
            channel.receive()
            channel.send({"type": "outcome", "ok": True, "value": np.zeros(1)})

    pair = _Pair(worker)
    try:
        for _ in range(3):
            assert not pair.channel.spoke()
            pair.call(np.arange(16.0))
            pair.answer()
    finally:
        pair.close()


@freezing
def test_a_write_that_does_not_stop_the_worker_is_refused(monkeypatch):
    """Should a worker's write ever not stop it, its answer is refused, not read while it runs
    (here: a worker on which the watch was never set)."""
    monkeypatch.setattr(watching, "FREEZE_SECONDS", 0.5)

    def worker(channel, arena):
        channel.receive()
        channel.send({"type": "outcome", "ok": True, "value": np.zeros(1)})
        time.sleep(30)

    pair = _Pair(worker, watched=False)
    try:
        pair.call(np.arange(16.0))
        with pytest.raises(Unwatched):
            pair.answer()
    finally:
        pair.close()


def test_where_no_write_can_be_stopped_the_calls_are_answered_and_a_lasting_change_seen(monkeypatch):
    """macOS has no F_SETSIG: the arguments are compared once the answer is read. Calls are
    answered as before, and a change the file leaves in place is still seen."""
    monkeypatch.setattr(watching, "FREEZES", False)
    monkeypatch.setattr(worker_module, "FREEZES", False)

    def worker(channel, arena):
        while True:
            view = _scores(channel.receive(), arena)
            view[...] = -1.0
            channel.send({"type": "outcome", "ok": True, "value": view.copy()})

    heard = _answers(worker, 20)
    assert [a["mutated"] for a in heard] == [("scores",)] * 20


def test_an_answer_larger_than_the_pipe_goes_down_whole_while_the_worker_reads():
    """A reference's answer of more than the worker's pipe holds reaches it whole."""

    def worker(channel, arena):
        while True:
            view = _scores(channel.receive(), arena)
            channel.send({"type": "callback", "name": "g", "args": (), "kwargs": {}})
            answer = channel.receive()
            channel.send({"type": "outcome", "ok": True, "value": answer["value"][-3:] + view[:3]})

    pair = _Pair(worker)
    big = np.arange(1 << 19, dtype=np.float64)  # 4 MiB
    try:
        pair.call(np.arange(16.0))
        assert pair.channel.receive()["type"] == "callback"
        pair.channel.send({"type": "return", "value": big})  # blocking: the worker reads as it goes
        outcome = pair.answer()
        assert outcome["value"].tolist() == (big[-3:] + np.arange(3.0)).tolist()
    finally:
        pair.close()


def test_the_worker_hears_the_end_when_this_side_closes():
    def worker(channel, arena):
        try:
            channel.receive()
        except EOFError:
            os._exit(7)

    pair = _Pair(worker)
    os.close(pair.channel.fd_out)
    _, status = os.waitpid(pair.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 7
    os.close(pair.channel.fd_in)
    pair.frozen.close()
    pair.arena.close()


# ----------------------------------------------------------------------------- the arena


@pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="no memfd here")
def test_the_arena_cannot_be_shrunk_or_grown_by_anyone():
    """The worker maps the arena: were it shrunk under the keeper's or the worker's mapping, a
    read there would fault. Sealed at its size, it cannot be, even by a holder of the file."""
    arena = Arena(1 << 16)
    try:
        for size in (0, 1 << 17):
            with pytest.raises(PermissionError):
                os.ftruncate(arena.fd, size)
        assert os.fstat(arena.fd).st_size == 1 << 16
    finally:
        arena.close()


def test_arguments_larger_than_the_arena_are_not_placed():
    arena = Arena(1 << 16)
    try:
        places, _, image = laid_out({"scores": np.zeros(1 << 14)})  # 128 KiB
        assert arena.place(image, places) is None
    finally:
        arena.close()


def test_a_process_is_watched_only_as_the_child_it_should_be():
    """A number that names another process than the keeper's child (reused in between) is not
    taken for the worker."""
    assert Frozen(os.getpid(), parent=os.getppid()).known
    assert not Frozen(os.getpid(), parent=1 if os.getppid() != 1 else 2).known


# ----------------------------------------------------------------------------- in a real sandbox

#: center_tokens writes an answer itself, a byte at a time, on the pipe its worker answers on,
#: then waits: each byte is a freeze, and a look here at the call's (large) arguments.
ANSWERS_A_BYTE_AT_A_TIME = """

import fcntl, json, os, stat, struct, time


def center_tokens(x):
    value = b"\\0" * 8192
    head = json.dumps({"type": "outcome", "ok": True, "payloads": [len(value)],
                       "value": {"__array__": 0, "dtype": "<u1", "shape": [len(value)]}}).encode()
    frame = struct.pack(">I", len(head)) + head + value
    for fd in range(3, 64):
        try:
            writes = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY
            if writes and stat.S_ISFIFO(os.fstat(fd).st_mode):
                for i in range(len(frame)):
                    os.write(fd, frame[i : i + 1])
                time.sleep(60)
        except OSError:
            pass
    return x
"""


@freezing
def test_a_file_that_answers_a_byte_at_a_time_pays_for_the_looks_it_causes(tmp_path):
    """The keeper's work for a call was counted as the call's (its clock was read with the
    worker's); the grading process now does that work. Watching an answer written a byte at a
    time over 2 MiB of arguments costs this side far more than it costs the worker: counted as
    the call's processor time, it stops the call as the student's (uncounted, the call answered,
    and a file could make this side work for it at will). Nor is this side's wait for a
    processor, while the worker is stopped for it, taken for the worker's idle time (on a loaded
    machine the call was once stopped as 'waited ... without running')."""
    from grader.core.errors import StudentTimeout
    from grader.core.intake import open_submission
    from grader.core.settings import Isolation, Limits
    from grader.engine.submission import reference_of
    from grader.sandbox.session import Sandboxed
    from grader.sandbox.wardens import best_level

    from .support import TOY

    if best_level() is Isolation.NONE:
        pytest.skip("no sandbox here")
    student = tmp_path / TOY.filename
    student.write_text(TOY.solution.read_text(encoding="utf-8") + ANSWERS_A_BYTE_AT_A_TIME, encoding="utf-8")
    box = Sandboxed(
        open_submission(student, TOY.filename),
        helpers=reference_of(TOY),
        level=best_level(),
        limits=Limits(call_timeout=0.5),
        lesson=TOY,
    )
    try:
        assert box.problem == ""
        with pytest.raises(StudentTimeout, match="processor time"):
            box.call("center_tokens", "center_tokens", {"x": np.zeros((512, 512))})
    finally:
        box.close()
