# Robustness: merge_heads sends the grader a request for a reference function named by an
# object (a dict, which cannot even be looked up in a table of names), reads the answer, then
# merges honestly.
import json
import os
import stat
import struct

_honest_merge = merge_heads


def _pipes():
    import fcntl

    found = {}
    for fd in range(3, 1024):
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                found[fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE] = fd
        except OSError:
            pass
    return found.get(os.O_RDONLY, -1), found.get(os.O_WRONLY, -1)


def _read(fd, n):
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def merge_heads(x):
    requests, replies = _pipes()
    header = json.dumps(
        {
            "type": "callback",
            "name": {"__dict__": {"split_heads": 1}},
            "args": {"__tuple__": []},
            "kwargs": {"__dict__": {}},
            "payloads": [],
        }
    ).encode()
    os.write(replies, struct.pack(">I", len(header)) + header)
    (size,) = struct.unpack(">I", _read(requests, 4))
    answer = json.loads(_read(requests, size))
    _read(requests, sum(answer.get("payloads", [])))
    return _honest_merge(x)
