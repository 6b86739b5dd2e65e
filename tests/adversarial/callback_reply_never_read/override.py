# Robustness: merge_heads forges a request for the reference split_heads on a 1000 x 1000
# array (the 8 MB answer is far larger than a pipe's buffer), then does not read the answer
# for 20 s; after that it drains it and answers correctly. Its call must still be cut at the
# 3 s limit (with an endless sleep the grader would wait forever). The other functions are
# correct.
import json
import os
import select
import struct
import time


def _reply_pipe():
    """The worker's end of the pipe its answers go back on: its only write-only pipe."""
    import fcntl
    import stat

    for fd in range(3, 1024):
        try:
            if (
                stat.S_ISFIFO(os.fstat(fd).st_mode)
                and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY
            ):
                return fd
        except OSError:
            pass
    return -1


def _request_pipe():
    """The worker's end of the pipe the grader's requests come on: its only read-only pipe."""
    import fcntl
    import stat

    for fd in range(3, 1024):
        try:
            if (
                stat.S_ISFIFO(os.fstat(fd).st_mode)
                and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY
            ):
                return fd
        except OSError:
            pass
    return -1


_honest_merge = merge_heads


def _drain(fd):
    def read(n):
        data = b""
        while len(data) < n:
            select.select([fd], [], [], 1.0)
            try:
                data += os.read(fd, n - len(data))
            except BlockingIOError:
                pass
        return data

    (size,) = struct.unpack(">I", read(4))
    header = json.loads(read(size))
    read(sum(header.get("payloads", [])))


def merge_heads(x):
    data = np.zeros((1000, 1000)).tobytes()
    header = json.dumps(
        {
            "type": "callback",
            "name": "split_heads",
            "args": {"__tuple__": [{"__array__": 0, "dtype": "<f8", "shape": [1000, 1000]}, 1]},
            "kwargs": {"__dict__": {}},
            "payloads": [len(data)],
        }
    ).encode()
    os.write(_reply_pipe(), struct.pack(">I", len(header)) + header + data)
    time.sleep(20)
    _drain(_request_pipe())
    time.sleep(0.5)  # answer only once the grader waits again: one overdue call, not a race
    return _honest_merge(x)
