# Robustness: merge_heads answers the grader itself with a forged "outcome" frame whose
# "raised" field is a number instead of a list of names, then ends the worker; the other
# functions are correct.
import json
import os
import struct


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


def merge_heads(x):
    header = json.dumps(
        {"type": "outcome", "ok": False, "kind": "raised", "message": "forged", "raised": 5, "payloads": []}
    ).encode()
    os.write(_reply_pipe(), struct.pack(">I", len(header)) + header)
    os._exit(0)
