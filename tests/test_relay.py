"""The keeper's relay cuts the worker's byte stream into frames, each with the verdict of the
write that brought its first byte (grader.relay.Frames)."""

import struct

import numpy as np
import pytest

from grader.relay import Frames
from grader.worker import MAX_HEADER, WireError, encode


def test_a_frame_keeps_the_verdict_of_its_first_byte():
    """A frame written in pieces counts what the arguments were when it began: putting them
    back before the rest is written changes nothing."""
    frame = encode({"type": "outcome", "ok": True, "value": np.arange(3.0)})
    frames = Frames()
    assert frames.feed(frame[:1], ("scores",)) == []
    assert frames.feed(frame[1:7], ()) == []
    (done,) = frames.feed(frame[7:], ())
    message, verdict = done
    assert verdict == ("scores",)
    assert message["type"] == "outcome" and message["value"].tolist() == [0.0, 1.0, 2.0]


def test_frames_begun_in_one_write_share_its_verdict():
    """The end of one frame and the start of the next in the same write: the next one's verdict
    is that write's."""
    first = encode({"type": "callback", "name": "split_heads", "args": (), "kwargs": {}})
    second = encode({"type": "outcome", "ok": True, "value": np.zeros(2)})
    frames = Frames()
    assert frames.feed(first[:3], ()) == []
    done = frames.feed(first[3:] + second[:5], ("x",))
    assert [(m["type"], v) for m, v in done] == [("callback", ())]
    done = frames.feed(second[5:], ())
    assert [(m["type"], v) for m, v in done] == [("outcome", ("x",))]


def test_a_stream_that_breaks_the_format_is_refused_before_it_is_read():
    with pytest.raises(WireError, match="header"):
        Frames().feed(struct.pack(">I", MAX_HEADER + 1), ())
    header = b'{"payloads": [1099511627776]}'
    with pytest.raises(WireError, match="at most"):
        Frames().feed(struct.pack(">I", len(header)) + header, ())
    header = b'{"payloads": "no"}'
    with pytest.raises(WireError):
        Frames().feed(struct.pack(">I", len(header)) + header, ())
    header = b"[" * 5000
    with pytest.raises(WireError):
        Frames().feed(struct.pack(">I", len(header)) + header, ())
