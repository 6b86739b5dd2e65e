# Bad input: while loading, the file writes its own frame on the worker's reply pipe (its
# descriptor is sys.argv[2]): a well-formed length prefix followed by a JSON string instead of
# a JSON object. The trusted side must refuse it like any other malformed reply.
import json
import os
import struct
import sys

_header = json.dumps("{{MARKER}}").encode()
os.write(int(sys.argv[2]), struct.pack(">I", len(_header)) + _header)
