# Bad input: while loading, the file closes its end of the reply pipe and stays alive for 11 s
# (the load limit is 10 s) before exiting. With an endless sleep instead, a grader that waits
# for the worker to exit would wait forever.
import os
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


os.close(_reply_pipe())
time.sleep(11)
os._exit(0)
