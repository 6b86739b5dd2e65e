# Robustness: while loading, the file tries to kill its parent process, which in the sandbox is
# the keeper that relays every call to the worker running this file.
import os
import signal

os.kill(os.getppid(), signal.SIGKILL)
