# Bad input: while loading, the file writes its own frame on the worker's reply pipe (found by
# looking at its descriptors): a well-formed length prefix followed by a JSON string instead of
# a JSON object. The trusted side must refuse it like any other malformed reply.
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


_header = json.dumps("{{MARKER}}").encode()
os.write(_reply_pipe(), struct.pack(">I", len(_header)) + _header)
