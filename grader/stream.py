"""``grade-stream``: grade the submission named on each line of stdin (a JSON string),
answer with one JSON report per line of stdout.

What ``batch`` runs in each of its grading processes: a long-lived process
skips Python's and pytest's start-up for every submission but the first.
Student code still runs in a sandboxed worker of its own for each submission.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .reporters.json_report import to_dict
from .run import GraderError, run_checks
from .submission import find_file


def main(**options) -> int:
    """Answer until stdin closes; ``options`` go to :func:`grader.run.run_checks`."""
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer = to_dict(run_checks(find_file(Path(json.loads(line))), **options))
        except (FileNotFoundError, GraderError, ValueError) as err:
            answer = {"error": str(err)}
        out.write(json.dumps(answer) + "\n")
        out.flush()
    return 0
