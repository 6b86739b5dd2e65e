# Bad input: while loading, the file writes its own answer to the grader's "load" request on
# the worker's reply pipe, before the worker can: a well-formed "ready" frame whose list of
# the file's functions holds numbers where signatures belong.
import json
import os
import stat
import struct


def _reply_pipe():
    """The worker's end of the pipe its answers go back on: its only write-only pipe."""
    import fcntl

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


_names = ["apply_causal_mask", "split_heads", "merge_heads", "mha_forward"]
_header = json.dumps({"type": "ready", "signatures": {"__dict__": dict.fromkeys(_names, 5)}, "payloads": []})
os.write(_reply_pipe(), struct.pack(">I", len(_header)) + _header.encode())
