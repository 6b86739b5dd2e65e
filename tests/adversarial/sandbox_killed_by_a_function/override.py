# Robustness: merge_heads tries to kill its parent process (the sandbox's keeper, which relays
# every call) on every call; the rest of the file is correct.
import os
import signal

_reference_merge_heads = merge_heads


def merge_heads(x):
    os.kill(os.getppid(), signal.SIGKILL)
    return _reference_merge_heads(x)
