# Robustness: merge_heads answers the grader itself with a forged "outcome" frame whose
# "raised" field is a number instead of a list of names, then ends the worker; the other
# functions are correct.
import json
import os
import struct
import sys


def merge_heads(x):
    header = json.dumps(
        {"type": "outcome", "ok": False, "kind": "raised", "message": "forged", "raised": 5, "payloads": []}
    ).encode()
    os.write(int(sys.argv[2]), struct.pack(">I", len(header)) + header)
    os._exit(0)
