# Robustness: while loading, the file kills its parent process, which in the sandbox is the
# warden that starts and ends the student's processes. The whole sandbox goes down with it.
import os
import signal

os.kill(os.getppid(), signal.SIGKILL)
