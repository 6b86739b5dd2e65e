"""``python -m grader``: see grader.cli."""

import sys

from .cli import main

# A character the terminal's encoding cannot show (a student's message on a Windows console
# whose output is redirected, in cp1252) is printed as an escape, never a crash; on UTF-8
# output nothing changes.
for stream in (sys.stdout, sys.stderr):
    if hasattr(stream, "reconfigure"):
        stream.reconfigure(errors="backslashreplace")

sys.exit(main())
