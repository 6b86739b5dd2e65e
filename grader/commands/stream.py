"""``grade-stream``: grade the submission each line of stdin names, answer with one JSON line each.

What ``batch`` runs in each of its grading processes: a long-lived process
skips Python's and pytest's start-up for every submission but the first.
Student code still runs in a sandboxed worker of its own for each submission.

A request is ``{"path": ABSOLUTE_PATH, "sha256": HASH, "shown": PATH}``: the
file and the hash of the source the batch took in, and the file as the batch's
user named it (the report calls it so, as ``grade`` would). The file is taken
in again here (:func:`grader.core.intake.open_submission`) and graded only if
its source has that hash, so the grade recorded under a hash is the grade of
that source. An answer is the JSON report (lossless:
:mod:`grader.formats.json_report`), ``{"refused": MESSAGE}`` when the
submission could not be graded as it was found, or ``{"error": MESSAGE}`` when
the grader failed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..core.errors import GraderError
from ..core.intake import IntakeError, open_submission
from ..core.lesson import Lesson
from ..core.settings import Settings
from ..engine.run import run_checks
from ..formats.json_report import to_dict

#: The answer when a file is not what the batch took in.
CHANGED = "the file changed while the batch was running; run the batch again to grade it"


def main(*, lesson: Lesson, settings: Settings) -> int:
    """Answer until stdin closes, grading for ``lesson`` as ``settings`` say."""
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer = grade_request(json.loads(line), lesson=lesson, settings=settings)
        except (GraderError, ValueError) as err:
            answer = {"error": str(err)}
        out.write(json.dumps(answer) + "\n")
        out.flush()
    return 0


def grade_request(request: dict, *, lesson: Lesson, settings: Settings) -> dict:
    """The answer to one request: a JSON report, a refusal, or an error."""
    if not isinstance(request, dict) or not isinstance(request.get("path"), str):
        return {"error": "a request names a submission as {'path': ..., 'sha256': ...}"}
    path = Path(request["path"])
    if not path.is_absolute():
        return {"error": f"{path} is not an absolute path"}
    try:
        intake = open_submission(path, lesson.filename)
    except IntakeError as err:
        return {"refused": err.message}
    if intake.sha256 != request.get("sha256"):
        return {"refused": CHANGED}
    shown = request.get("shown")
    shown = shown if isinstance(shown, str) else None
    return to_dict(run_checks(intake, lesson=lesson, settings=settings, shown=shown))
