"""The keeper's relay cuts the worker's byte stream into frames, each with the verdict of the
write that brought its first byte (grader.relay.Frames)."""

import mmap
import os
import select
import signal
import struct

import numpy as np
import pytest

from grader.relay import Frames, Relay, watch
from grader.worker import MAX_HEADER, Channel, WireError, encode


def test_a_frame_keeps_the_verdict_of_its_first_byte():
    """A frame written in pieces counts what the arguments were when it began: putting them
    back before the rest is written changes nothing."""
    frame = encode({"type": "outcome", "ok": True, "value": np.arange(3.0)})
    frames = Frames()
    assert frames.feed(frame[:1], ("scores",)) == []
    assert frames.feed(frame[1:7], ()) == []
    (done,) = frames.feed(frame[7:], ())
    assert done.verdict == ("scores",) and done.raw == frame
    message = done.decoded()
    assert message["type"] == "outcome" and message["value"].tolist() == [0.0, 1.0, 2.0]


def test_frames_begun_in_one_write_share_its_verdict():
    """The end of one frame and the start of the next in the same write: the next one's verdict
    is that write's."""
    first = encode({"type": "callback", "name": "split_heads", "args": (), "kwargs": {}})
    second = encode({"type": "outcome", "ok": True, "value": np.zeros(2)})
    frames = Frames()
    assert frames.feed(first[:3], ()) == []
    done = frames.feed(first[3:] + second[:5], ("x",))
    assert [(f.header["type"], f.verdict) for f in done] == [("callback", ())]
    done = frames.feed(second[5:], ())
    assert [(f.header["type"], f.verdict) for f in done] == [("outcome", ("x",))]


def test_the_keepers_verdict_replaces_whatever_the_worker_said():
    forged = encode({"type": "outcome", "ok": True, "value": np.ones(2), "mutated": ()})
    (frame,) = Frames().feed(forged, ("scores",))
    (relayed,) = Frames().feed(frame.with_field("mutated", frame.verdict))
    message = relayed.decoded()
    assert message["mutated"] == ("scores",) and message["value"].tolist() == [1.0, 1.0]


def test_a_stream_that_breaks_the_format_is_refused_before_it_is_read():
    with pytest.raises(WireError, match="header"):
        Frames().feed(struct.pack(">I", MAX_HEADER + 1), ())
    header = b'{"payloads": [1099511627776]}'
    with pytest.raises(WireError, match="at most"):
        Frames().feed(struct.pack(">I", len(header)) + header, ())
    for header in (b'{"payloads": "no"}', b'"a string"', b'{"payloads": [-1]}'):
        with pytest.raises(WireError):
            Frames().feed(struct.pack(">I", len(header)) + header, ())
    header = b"[" * 5000
    with pytest.raises(WireError):
        Frames().feed(struct.pack(">I", len(header)) + header, ())


def test_an_argument_put_back_as_soon_as_the_answer_is_written_still_counts():
    """With the real kernel: a worker that changes its argument in place, writes its answer and
    at once puts the argument back is frozen by its write before it can, every time."""
    arena = mmap.mmap(-1, 1 << 16)
    pipes = [os.pipe() for _ in range(4)]  # trusted->relay, relay->trusted, relay->worker, worker->relay
    (t_in_r, t_in_w), (t_out_r, t_out_w), (w_in_r, w_in_w), (w_out_r, w_out_w) = pipes
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})  # as in a keeper
    pid = os.fork()
    if pid == 0:  # the worker: changes, answers, puts back
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
            channel = Channel(w_in_r, w_out_w)
            while True:
                request = channel.receive()
                offset, dtype, shape = request["places"]["scores"]
                view = np.ndarray(tuple(shape), dtype=np.dtype(dtype), buffer=arena, offset=offset)
                saved = view.copy()
                view[...] = -1.0
                channel.send({"type": "outcome", "ok": True, "value": saved})
                view[...] = saved
        finally:
            os._exit(0)
    for fd in (w_in_r, w_out_w):
        os.close(fd)
    watch(w_out_r, pid)
    relay = Relay(t_in_r, t_out_w, w_in_w, w_out_r, pid, arena)
    trusted = Channel(t_out_r, t_in_w)
    verdicts = []
    try:
        for _ in range(200):
            trusted.send(
                {"type": "call", "exercise": "f", "name": "f", "kwargs": {"scores": np.arange(16.0)}}
            )
            relay.ready(t_in_r)
            while not select.select([t_out_r], [], [], 0)[0]:
                select.select([w_out_r], [], [], 5)
                relay.ready(w_out_r)
            answer = trusted.receive()
            assert answer["value"].tolist() == list(range(16))
            verdicts.append(answer["mutated"])
    finally:
        relay.close()
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        for fd in (t_in_w, t_out_r):
            os.close(fd)
    assert verdicts == [("scores",)] * 200
