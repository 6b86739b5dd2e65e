"""The format that carries arrays out of the worker accepts plain numbers only."""

import io
import json
import struct

import numpy as np
import pytest

from grader.sandbox.inside.worker import WireError, encode, read_frame


def frame(header: dict, *payloads: bytes) -> io.BytesIO:
    header = dict(header, payloads=[len(p) for p in payloads])
    data = json.dumps(header).encode()
    return io.BytesIO(struct.pack(">I", len(data)) + data + b"".join(payloads))


def test_round_trip_of_arrays_tuples_and_numbers():
    value = (np.arange(6.0).reshape(2, 3), np.array([True, False]), np.float32(1.5))
    message = read_frame(io.BytesIO(encode({"type": "outcome", "value": value, "n": 3})).read)
    got = message["value"]
    assert isinstance(got, tuple) and got[0].dtype == np.float64 and np.array_equal(got[0], value[0])
    assert got[1].dtype == np.bool_ and got[2] == 1.5 and message["n"] == 3
    assert got[0].flags.writeable and type(got[0]) is np.ndarray


@pytest.mark.parametrize(
    "header, payloads, fragment",
    [
        ({"v": {"__array__": 0, "dtype": "|O", "shape": [1]}}, [b"\0" * 8], "dtype object"),
        ({"v": {"__array__": 0, "dtype": "<f8", "shape": [3]}}, [b"\0" * 8], "do not match"),
        ({"v": {"__array__": 0, "dtype": "[('a', '<f8')]", "shape": [1]}}, [b"\0" * 8], "bad array|dtype"),
        ({"v": {"__array__": 0, "dtype": "<f8", "shape": [-1]}}, [b""], "bad shape"),
        ({"v": {"__array__": 5, "dtype": "<f8", "shape": [1]}}, [b"\0" * 8], "bad array"),
        ({"v": {"__pickle__": "x"}}, [], "unknown object"),
        ({"v": [1, 2]}, [], "bare lists"),
    ],
)
def test_bad_frames_are_refused(header, payloads, fragment):
    with pytest.raises(WireError, match=fragment):
        read_frame(frame(header, *payloads).read)


def test_limits_are_checked_before_anything_is_read():
    huge = struct.pack(">I", 1 << 30)
    with pytest.raises(WireError, match="header"):
        read_frame(io.BytesIO(huge).read)
    data = json.dumps(
        {"v": {"__array__": 0, "dtype": "<f8", "shape": [1 << 27]}, "payloads": [1 << 30]}
    ).encode()
    stream = io.BytesIO(struct.pack(">I", len(data)) + data)  # the gigabyte itself never comes
    with pytest.raises(WireError, match="at most"):
        read_frame(stream.read)
