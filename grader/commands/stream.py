"""``grade-stream``: grade the submission each line of stdin names, answer with one JSON line each.

What ``batch`` runs in each of its grading processes. The process is a zygote
(:mod:`grader.commands.zygote`): it imports the grader, numpy, Hypothesis, pytest and the
lesson's checks and starts its sandbox once, before any submission, then forks a child that
grades one submission and exits, so that nothing the trusted side keeps of a submission
reaches the next one. Student code runs in the sandbox, in a worker of its own for each
submission.

A request is ``{"path": ABSOLUTE_PATH, "sha256": HASH, "shown": PATH}``: the
file and the hash of the source the batch took in, and the file as the batch's
user named it (the report calls it so, as ``grade`` would). The file is taken
in again here (:func:`grader.core.intake.open_submission`) and graded only if
its source has that hash, so the grade recorded under a hash is the grade of
that source. An answer is an :class:`Answer`, one JSON line
(:func:`answer_line`, read back by :func:`read_answer`): the report (lossless:
:mod:`grader.formats.json_report`), or why there is none.
"""

from __future__ import annotations

import gc
import json
import shutil
import sys
import tempfile
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from ..core.errors import GraderError
from ..core.inert import student_strings
from ..core.intake import IntakeError, Refusal, open_submission
from ..core.lesson import Lesson
from ..core.results import Report
from ..core.settings import Settings
from ..engine import replay
from ..engine.pytested import keep_on_disk, predraw, prepare, prepare_sandbox, unkept
from ..engine.run import run_checks
from ..formats.json_report import from_dict, to_dict
from ..sandbox.wardens import settle
from .zygote import run_forked

#: The answer when a file is not what the batch took in.
CHANGED = "the file changed while the batch was running; run the batch again to grade it"


class Verdict(StrEnum):
    """What became of a request."""

    GRADED = "graded"
    REFUSED = "refused"
    """The file is not the one the batch took in, or can no longer be read as it was."""
    FAILED = "failed"
    """The grader failed (not the student's fault)."""


@dataclass(frozen=True)
class Answer:
    """The answer to one request."""

    verdict: Verdict
    report: Report | None = None
    """The report, when graded."""
    message: str = ""
    """Why there is no report."""


def answer_line(answer: Answer) -> bytes:
    """``answer`` as one line of JSON."""
    body: dict = {"verdict": answer.verdict.value}
    if answer.report is not None:
        body["report"] = to_dict(answer.report)
    if answer.message:
        body["message"] = answer.message
    return (json.dumps(body) + "\n").encode()


def read_answer(line: bytes) -> Answer:
    """The Answer a line holds, its texts made safe to show (:func:`student_strings`); ValueError
    when it holds none."""
    body = student_strings(json.loads(line))
    if not isinstance(body, dict):
        raise ValueError("an answer is a JSON object")
    verdict = Verdict(body.get("verdict"))
    message = body.get("message", "")
    if not isinstance(message, str):
        raise ValueError("an answer's message is a text")
    if verdict is not Verdict.GRADED:
        return Answer(verdict, message=message)
    try:
        return Answer(verdict, from_dict(body["report"]))
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"its report could not be read ({type(err).__name__})") from None


def main(*, lesson: Lesson, settings: Settings) -> int:
    """Answer until stdin closes, grading for ``lesson`` as ``settings`` say, each submission in
    a child of its own."""
    settings = settle(settings, lesson.private)  # the level, decided once for every child
    prepare(lesson, settings)  # before any submission: what every child starts from
    scratch = Path(tempfile.mkdtemp(prefix="grader-children-"))
    out = sys.stdout.buffer
    try:
        prime(lesson, settings, scratch=scratch)
        # what every child starts from is set aside for good: a child's collections do not walk
        # it (nor write to its pages, which stay shared with this process)
        gc.freeze()
        for line in sys.stdin:
            if not line.strip():
                continue
            out.write(_apart(line, lesson=lesson, settings=settings, scratch=scratch))
            out.flush()
    except KeyboardInterrupt:
        return 130
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


def prime(lesson: Lesson, settings: Settings, *, scratch: Path) -> int:
    """Grade the lesson's reference once, sandboxed, in a child of its own, and keep the examples
    its properties drew (:func:`grader.engine.replay.handed`: choices, plain numbers), so that
    every later child replays them instead of running Hypothesis's engine. Only those choices
    come back: whatever else the reference's grading left (in the checks' modules, in pytest,
    in Hypothesis) dies with its child, and no submission is seen before. Not where this process
    keeps the examples of every property already (read from the store on disk, or shipped with
    the lesson): they are only drawn ahead. Returns how many properties were kept by grading the
    reference (0 with replay off, without a reference, unsandboxed, or with nothing to learn)."""
    if not settings.replay or lesson.reference is None:
        return 0
    if unkept(lesson, settings, else_predraw=True) == 0:  # the store's, or the lesson's own:
        return 0  # nothing to learn, and their arguments are drawn ahead already
    reference = lesson.reference

    def task() -> bytes:
        run_checks(open_submission(reference, lesson.filename), lesson=lesson, settings=settings)
        return replay.handed()

    ended = run_forked(task, scratch=scratch)
    if ended.how:
        return 0  # the children run the engine, as without replay
    try:
        adopted = replay.adopt(ended.output)
    except ValueError:
        return 0
    finally:
        prepare_sandbox(lesson, settings)  # the next child's, unless one is starting already
    predraw(lesson, settings)  # each child only calls the checks on the examples
    keep_on_disk(lesson, settings)  # with their arguments written down; no later child writes them
    return adopted


def _apart(line: str, *, lesson: Lesson, settings: Settings, scratch: Path) -> bytes:
    """The answer line to a request line, graded in a child of its own."""
    try:
        request = json.loads(line)
    except ValueError:
        return answer_line(Answer(Verdict.FAILED, message="a request is one JSON object on one line"))
    prepare_sandbox(lesson, settings)  # this child's, unless one is starting already
    ended = run_forked(
        lambda: answer_line(_answer(request, lesson=lesson, settings=settings)), scratch=scratch
    )
    if ended.how or ended.output.count(b"\n") != 1 or not ended.output.endswith(b"\n"):
        how = ended.how or "answered in a way that could not be read"
        return answer_line(
            Answer(
                Verdict.FAILED,
                message=f"its process for this submission {how}; run the batch again to grade it",
            )
        )
    return ended.output


def _answer(request, *, lesson: Lesson, settings: Settings) -> Answer:
    """The answer to one request (in the child)."""
    try:
        return grade_request(request, lesson=lesson, settings=settings)
    except (GraderError, ValueError) as err:
        return Answer(Verdict.FAILED, message=str(err))


def grade_request(request, *, lesson: Lesson, settings: Settings) -> Answer:
    """The answer to one request: a report, a refusal, or why the request is wrong."""
    if not isinstance(request, dict) or not isinstance(request.get("path"), str):
        return Answer(Verdict.FAILED, message="a request names a submission as {'path': ..., 'sha256': ...}")
    path = Path(request["path"])
    if not path.is_absolute():
        return Answer(Verdict.FAILED, message=f"{path} is not an absolute path")
    shown = request.get("shown")
    shown = shown if isinstance(shown, str) else None
    try:
        intake = open_submission(path, lesson.filename)
    except IntakeError as err:
        if err.kind is Refusal.UNFINISHED:  # the machine's, for a moment: an unfinished grade
            report = run_checks(err, lesson=lesson, settings=settings, shown=shown or str(path))
            return Answer(Verdict.GRADED, report)
        return Answer(Verdict.REFUSED, message=err.message)
    if intake.sha256 != request.get("sha256"):
        return Answer(Verdict.REFUSED, message=CHANGED)
    return Answer(Verdict.GRADED, run_checks(intake, lesson=lesson, settings=settings, shown=shown))
