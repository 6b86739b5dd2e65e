# Robustness: merge_heads ends the worker process with os._exit (no clean-up, no exception);
# the other functions are correct.
import os


def merge_heads(x):
    os._exit(0)
