"""The keeper's relay (grader.sandbox.inside.relay): frames cut out of a byte stream, and, with the real kernel,
a worker frozen at each write while the keeper compares its arguments."""

import io
import mmap
import os
import select
import signal
import struct
import threading
import time

import numpy as np
import pytest

from grader.sandbox.inside import relay
from grader.sandbox.inside.relay import Frames, Relay, watch
from grader.sandbox.inside.worker import MAX_HEADER, Channel, WireError, encode, laid_out, read_frame


def test_frames_come_whole_however_the_bytes_are_cut():
    first = encode({"type": "callback", "name": "split_heads", "args": (), "kwargs": {}})
    second = encode({"type": "outcome", "ok": True, "value": np.arange(3.0)})
    frames = Frames()
    assert frames.feed(first[:3]) == []
    done = frames.feed(first[3:] + second[:5])
    assert [f.header["type"] for f in done] == ["callback"] and done[0].raw == first
    (done,) = frames.feed(second[5:])
    assert done.raw == second and read_frame(io.BytesIO(done.raw).read)["value"].tolist() == [0.0, 1.0, 2.0]
    cut = len(second) - 3  # the header whole, the array's bytes not yet
    assert frames.feed(second[:cut]) == [] and frames.head is not None
    (done,) = frames.feed(second[cut:])
    assert done.raw == second and frames.head is None and not frames.buffer


def test_the_keepers_verdict_replaces_whatever_the_worker_said():
    forged = encode({"type": "outcome", "ok": True, "value": np.ones(2), "mutated": ()})
    (frame,) = Frames().feed(forged)
    (relayed,) = Frames().feed(frame.with_field("mutated", ("scores",)))
    message = read_frame(io.BytesIO(relayed.raw).read)
    assert message["mutated"] == ("scores",) and message["value"].tolist() == [1.0, 1.0]


def test_the_verdict_holds_whatever_the_worker_put_around_its_header():
    """The verdict is written at the end of the header as it came: spacing after the header's
    last brace, or "mutated" written last, or twice, by the worker changes nothing."""
    value = np.ones(2).tobytes()
    for head in (
        b'{"type": "outcome", "ok": true, "mutated": {"__tuple__": []}, '
        b'"value": {"__array__": 0, "dtype": "<f8", "shape": [2]}, "payloads": [16]}\n\t \r',
        b'{"type": "outcome", "ok": true, "value": {"__array__": 0, "dtype": "<f8", "shape": [2]}, '
        b'"payloads": [16], "mutated": {"__tuple__": []}, "mutated": {"__tuple__": []}}',
    ):
        (frame,) = Frames().feed(struct.pack(">I", len(head)) + head + value)
        (relayed,) = Frames().feed(frame.with_field("mutated", ("scores",)))
        message = read_frame(io.BytesIO(relayed.raw).read)
        assert message["mutated"] == ("scores",) and message["value"].tolist() == [1.0, 1.0]


def test_a_stream_that_breaks_the_format_is_refused_before_it_is_read():
    with pytest.raises(WireError, match="header"):
        Frames().feed(struct.pack(">I", MAX_HEADER + 1))
    header = b'{"payloads": [1099511627776]}'
    with pytest.raises(WireError, match="at most"):
        Frames().feed(struct.pack(">I", len(header)) + header)
    for header in (b'{"payloads": "no"}', b'"a string"', b'{"payloads": [-1]}', b"[" * 5000):
        with pytest.raises(WireError):
            Frames().feed(struct.pack(">I", len(header)) + header)


# ----------------------------------------------------------------------------- with a worker


def _answers(worker, calls: int, settle: float = 0.0) -> list[dict]:
    """What the trusted side hears when a relay stands between it and ``worker(channel, arena)``
    (run in a forked child) for ``calls`` calls on one array argument ``scores``; with ``settle``,
    the worker has that long to write before each call."""
    arena = mmap.mmap(-1, 1 << 16)
    (t_in_r, t_in_w), (t_out_r, t_out_w), (w_in_r, w_in_w), (w_out_r, w_out_w) = [os.pipe() for _ in range(4)]
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})  # as in a keeper
    pid = os.fork()
    if pid == 0:
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
            worker(Channel(w_in_r, w_out_w), arena)
        finally:
            os._exit(0)
    for fd in (w_in_r, w_out_w):
        os.close(fd)
    watch(w_out_r, pid)
    relay = Relay(t_in_r, t_out_w, w_in_w, w_out_r, pid, arena)
    trusted = Channel(t_out_r, t_in_w)
    heard = []
    try:
        for _ in range(calls):
            select.select([w_out_r], [], [], settle)
            places, scalars, image = laid_out({"scores": np.arange(16.0)})
            call = {"type": "call", "exercise": "f", "name": "f", "scalars": scalars, "places": places}
            trusted.send({**call, "memory": image})
            relay.ready(t_in_r)
            while not select.select([t_out_r], [], [], 0)[0]:
                select.select([w_out_r], [], [], 5)
                relay.ready(w_out_r)
            heard.append(trusted.receive())
            if heard[-1]["type"] != "outcome":
                break
    finally:
        relay.close()
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        for fd in (t_in_w, t_out_r):
            os.close(fd)
    return heard


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


def test_an_argument_put_back_as_soon_as_the_answer_is_written_still_counts():
    """A worker that changes its argument in place, writes its answer and at once puts the
    argument back is frozen by its write before it can, every time."""

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


def test_a_worker_that_speaks_out_of_turn_is_refused():
    """An answer with no call waiting for it (here: a second answer to one call, written before
    the next call) ends the worker."""

    def worker(channel, arena):
        channel.receive()
        for _ in range(2):
            channel.send({"type": "outcome", "ok": True, "value": np.zeros(1)})
        channel.receive()

    first, second = _answers(worker, 2, settle=1.0)
    assert first["type"] == "outcome" and first["mutated"] == ()
    assert second == {"type": "unreadable", "message": "it wrote to the grader out of turn"}


def test_where_no_write_can_be_frozen_the_relay_still_answers_and_sees_a_lasting_change(monkeypatch):
    """macOS has no F_SETSIG: the relay compares once it has read the answer. Calls are answered
    as before, and a change the file leaves in place is still seen."""
    monkeypatch.setattr(relay, "FREEZES", False)

    def worker(channel, arena):
        while True:
            view = _scores(channel.receive(), arena)
            view[...] = -1.0
            channel.send({"type": "outcome", "ok": True, "value": view.copy()})

    heard = _answers(worker, 20)
    assert [a["mutated"] for a in heard] == [("scores",)] * 20


@pytest.mark.skipif(not relay.FREEZES, reason="no F_SETSIG here")
def test_a_stop_whose_signal_another_thread_took_is_still_seen(monkeypatch):
    """The keeper has one thread, but the relay must not depend on it: where another thread
    leaves SIGCHLD unblocked (pytest-xdist's, when these tests run), the signal of a stop that
    comes after the relay last asked and before it waits may go to that thread and be lost. The
    relay asks again after a short wait instead of sitting out FREEZE_SECONDS (then 30 s per
    freeze: what made a test below fail in CI on a loaded machine)."""
    monkeypatch.setattr(relay, "FREEZE_SECONDS", 1.0)
    asks, waits = os.waitpid, signal.sigtimedwait
    fooled, unheard = [False], []

    def not_yet(pid, options):  # the first ask of each freeze comes before the worker stopped
        if options & os.WUNTRACED and not fooled[0]:
            fooled[0] = True
            return 0, 0
        seen = asks(pid, options)
        fooled[0] = not seen[0]  # the next freeze's first ask is fooled again
        return seen

    def late(signals, timeout):
        time.sleep(0.05)  # the stop's signal comes and goes to the other thread meanwhile
        got = waits(signals, timeout)
        if got is None:
            unheard.append(timeout)
        return got

    taker = threading.Thread(target=time.sleep, args=(60,), daemon=True)  # SIGCHLD unblocked
    taker.start()
    monkeypatch.setattr(relay.os, "waitpid", not_yet)
    monkeypatch.setattr(relay.signal, "sigtimedwait", late)

    def worker(channel, arena):
        while True:
            channel.receive()
            channel.send({"type": "outcome", "ok": True, "value": np.zeros(1)})

    heard = _answers(worker, 5)
    assert [a["type"] for a in heard] == ["outcome"] * 5
    assert unheard and max(unheard) < 0.5  # no wait on a lost signal lasts the whole FREEZE_SECONDS


# ----------------------------------------------------------------------------- a question's wait


class _Relayed:
    """A relay between this process (the trusted side, stepping the keeper's relay by hand) and
    ``worker(channel, arena)`` run in a forked child."""

    def __init__(self, worker):
        self.arena = mmap.mmap(-1, 1 << 16)
        (t_in_r, self.t_in_w), (self.t_out_r, t_out_w), (w_in_r, w_in_w), (w_out_r, w_out_w) = [
            os.pipe() for _ in range(4)
        ]
        self.blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})  # as in a keeper
        self.pid = os.fork()
        if self.pid == 0:
            try:
                signal.pthread_sigmask(signal.SIG_SETMASK, self.blocked)
                for fd in (t_in_r, self.t_in_w, self.t_out_r, t_out_w, w_in_w, w_out_r):
                    os.close(fd)
                worker(Channel(w_in_r, w_out_w), self.arena)
            finally:
                os._exit(0)
        for fd in (w_in_r, w_out_w):
            os.close(fd)
        watch(w_out_r, self.pid)
        self.relay = Relay(t_in_r, t_out_w, w_in_w, w_out_r, self.pid, self.arena)
        self.trusted = Channel(self.t_out_r, self.t_in_w)

    def call(self, scores: np.ndarray) -> None:
        places, scalars, image = laid_out({"scores": scores})
        call = {"type": "call", "exercise": "f", "name": "f", "scalars": scalars, "places": places}
        self.send({**call, "memory": image})

    def send(self, message: dict) -> None:
        """Send a frame down and have the relay pass it on."""
        self.trusted.send(message)
        while select.select([self.relay.trusted_in], [], [], 0)[0]:
            self.relay.ready(self.relay.trusted_in)

    def heard(self) -> dict:
        """The next frame the relay sends up."""
        while not select.select([self.t_out_r], [], [], 0)[0]:
            assert select.select([self.relay.worker_out], [], [], 5)[0], "the worker says nothing"
            self.relay.ready(self.relay.worker_out)
        return self.trusted.receive()

    def state(self) -> str:
        """The worker's state as /proc says it: "T" while it is stopped."""
        with open(f"/proc/{self.pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]

    def close(self) -> None:
        self.relay.close()
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass  # the test waited for it
        signal.pthread_sigmask(signal.SIG_SETMASK, self.blocked)
        for fd in (self.t_in_w, self.t_out_r):
            os.close(fd)


def _asking(channel, arena):
    """A worker that asks the reference once per call, changes its argument after the answer
    came, then answers with what it heard."""
    while True:
        view = _scores(channel.receive(), arena)
        channel.send({"type": "callback", "name": "g", "args": (), "kwargs": {}})
        answer = channel.receive()
        view[...] = -1.0
        channel.send({"type": "outcome", "ok": True, "value": answer["value"]})


freezing = pytest.mark.skipif(not relay.FREEZES, reason="no F_SETSIG here")


@freezing
def test_a_worker_that_asked_the_reference_waits_frozen_until_the_answer_is_written():
    """Its question read, the worker is not let go on only to wait for the answer: it stays
    frozen until the answer is in its pipe, then finds it there; what it does after is watched
    as ever."""
    pipes = _Relayed(_asking)
    try:
        for _ in range(3):
            pipes.call(np.arange(16.0))
            assert pipes.heard()["type"] == "callback"
            time.sleep(0.05)  # time enough for a worker let go on to reach its read
            assert pipes.state() == "T" and pipes.relay.held
            pipes.send({"type": "return", "value": np.arange(4.0)})
            assert not pipes.relay.held
            outcome = pipes.heard()
            assert outcome["value"].tolist() == [0.0, 1.0, 2.0, 3.0] and outcome["mutated"] == ("scores",)
            time.sleep(0.05)
            assert pipes.state() != "T"  # after an answer it goes on at once, to wait for the next call
    finally:
        pipes.close()


@freezing
def test_a_held_worker_gets_an_answer_larger_than_its_pipe_and_hears_the_end():
    """An answer more than the worker's pipe holds still goes down whole (the worker is let go
    on to make room: the keeper never waits on a worker it holds), and a worker held when the
    trusted side is done hears the end and ends."""
    pipes = _Relayed(_asking)
    try:
        pipes.call(np.arange(16.0))
        assert pipes.heard()["type"] == "callback" and pipes.relay.held
        big = np.arange(1 << 19, dtype=np.float64)  # 4 MiB
        heard = []

        def trusted():  # the trusted side's own pipes are smaller still: it runs beside the relay
            pipes.trusted.send({"type": "return", "value": big})
            heard.append(pipes.trusted.receive())

        side = threading.Thread(target=trusted, daemon=True)
        side.start()
        deadline = time.monotonic() + 30
        while side.is_alive() and time.monotonic() < deadline:
            for fd in select.select(pipes.relay.readable(), [], [], 0.1)[0]:
                pipes.relay.ready(fd)
        side.join(1)
        assert np.array_equal(heard[0]["value"], big)
        pipes.call(np.arange(16.0))
        assert pipes.heard()["type"] == "callback" and pipes.relay.held
        pipes.relay.close()  # the trusted side is done
        _, status = os.waitpid(pipes.pid, 0)
        assert os.WIFEXITED(status)  # it read the end of its requests and returned
    finally:
        pipes.close()
