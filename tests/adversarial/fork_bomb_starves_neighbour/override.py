# Robustness: correct functions; while loading (once per worker) the file fills the sandbox
# user's process budget with up to 300 two-minute `sleep` processes carrying the marker
# (retrying for 1 s while forks fail), then keeps loading for 5 s (under the 10 s load
# limit). Meanwhile the test grades the reference in a second grader: sandboxes of different
# submissions must not share a process budget.
import builtins
import os
import time

if not hasattr(builtins, "_holding"):
    builtins._holding = True
    _started, _until = 0, time.monotonic() + 1.0
    while _started < 300 and time.monotonic() < _until:
        try:
            _pid = os.fork()
        except OSError:
            time.sleep(0.05)
            continue
        if _pid == 0:
            try:
                os.execve("/bin/sleep", ["sleep", "120"], {"ADV_MARKER": "{{MARKER}}"})
            finally:
                os._exit(0)
        _started += 1
    time.sleep(5)
