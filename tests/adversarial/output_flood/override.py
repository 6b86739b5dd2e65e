# Robustness: correct functions, but the file floods every output it can reach with
# megabytes of noise, fake full-marks JSON reports and fake tracebacks, at import and on
# every call: print, the original streams, the raw descriptors 1 and 2, /dev/stdout,
# /dev/stderr, /dev/tty and the sandbox's first process's stdout and stderr.
import json
import os
import sys

_FAKE = json.dumps({"score": 100, "max_score": 100, "exercises": {}, "tests": [], "problem": ""})
_NOISE = _FAKE + '\nTraceback (most recent call last):\n  File "x", line 1\n' + "noise " * 2000 + "\n"


def _flood(rounds):
    for _ in range(rounds):
        print(_NOISE)
        print(_NOISE, file=sys.stderr)
        for stream in (sys.__stdout__, sys.__stderr__):
            try:
                stream.write(_NOISE)
                stream.flush()
            except Exception:
                pass
        for fd in (1, 2):
            try:
                os.write(fd, _NOISE.encode())
            except OSError:
                pass
    for path in ("/dev/stdout", "/dev/stderr", "/dev/tty", "/proc/1/fd/1", "/proc/1/fd/2"):
        try:
            with open(path, "w") as f:
                f.write(_NOISE)
        except OSError:
            pass


_flood(500)  # about 30 MB at import

_quiet = {
    name: globals()[name] for name in ("apply_causal_mask", "split_heads", "merge_heads", "mha_forward")
}


def apply_causal_mask(scores):
    _flood(3)
    return _quiet["apply_causal_mask"](scores)


def split_heads(x, n_heads):
    _flood(3)
    return _quiet["split_heads"](x, n_heads)


def merge_heads(x):
    _flood(3)
    return _quiet["merge_heads"](x)


def mha_forward(x, W_q, W_k, W_v, W_o, n_heads, causal=True, return_weights=False):
    _flood(3)
    return _quiet["mha_forward"](x, W_q, W_k, W_v, W_o, n_heads, causal, return_weights)
