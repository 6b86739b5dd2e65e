"""The readable report: per exercise a score, the likely mistake, and what fails.

Two layouts, both pure functions of a :class:`Report`:

* the short one (the default), a report a student reads to the end: per exercise its score,
  the diagnosis when there is one, the first failing *visible* check in full (its meaning,
  what went wrong, the smallest input), every further failure on one line (its name and
  reason), hidden checks on one line with no inputs (beside a visible failure, one line for
  them all: they most often fail only through it). A failing exercise takes about
  :data:`EXERCISE_LINES` lines at most;
* the detailed one (``details=True``, ``--details`` on the command line): every failed check
  in full, hidden ones included, as the JSON report holds them.

Everything a student chose (the file's path, why it could not be loaded, the feedback quoting
their exception messages and values) is shown through :mod:`grader.core.inert`: an escape
sequence in an exception message is printed as ``\\x1b[2J``, never run by the terminal that
shows the report. Colour (:mod:`grader.formats.terminal`) is added around the reporter's own
words only, after that.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence

from ..core.diagnosis import Diagnosis
from ..core.inert import one_line, visible
from ..core.results import ExerciseResult, LessonFault, Report, Status, TestResult, Visibility
from ..core.settings import Isolation
from .terminal import Style

#: Width of the report when nothing says otherwise (a file, a pipe).
WIDTH = 72
#: The width of the exercises' names before their scores, at least (a longer name widens it).
NAME_COLUMN = 20
#: Lines a failing exercise takes at most in the short layout, when its smallest input allows:
#: the full account of one check is shortened (its arrays of expected and got values left to
#: ``--details``) to stay within it; the input itself is never cut.
EXERCISE_LINES = 25
#: Lines one input may take in the short layout when it has many rows (it is written flat, with
#: ``.reshape``: :func:`grader.engine.expect.show`); a larger one is named with its shape there.
LONGEST_INPUT = 8

_MARK = {
    Status.PASSED: "ok",
    Status.FAILED: "FAILED",
    Status.ERROR: "ERROR",
    Status.TIMEOUT: "TIMEOUT",
    Status.UNFINISHED: "UNFINISHED",
    Status.LESSON_ERROR: "NOT RUN",
}
_ROLE = {Status.FAILED: "bad", Status.ERROR: "bad", Status.TIMEOUT: "bad", Status.UNFINISHED: "bad"}


def not_final(report: Report) -> str:
    """What a student reads when the score is no grade: a mistake in the lesson kept checks
    from running, or a wall-clock guard stopped some (empty when neither)."""
    said = []
    if any(f.graded for f in report.lesson_errors):
        said.append(
            "No grade yet: a mistake in the lesson (not in your code) kept some checks from running "
            "(marked NOT RUN where they are known). Your instructor has been told; no point is taken "
            "or given for them until it is mended."
        )
    count = sum(t.status is Status.UNFINISHED for t in report.tests)
    if count:
        checks = f"{count} check{'s' if count != 1 else ''}"
        said.append(
            f"No grade yet: the computer was too busy to finish {checks} (marked UNFINISHED). "
            "That is not a mistake in your code. Run the same command again later, when the computer "
            "is less busy."
        )
    return " ".join(said)


def lesson_errors(faults: Sequence[LessonFault | str]) -> str:
    """The lesson's mistakes met while grading (or ``FILE:LINE: what`` lines that stopped it),
    in one paragraph for whoever mends the lesson: each at its file and line (empty when none)."""
    if not faults:
        return ""
    lead = (
        "The lesson has a mistake, in its own files (neither the student's code nor the grader): "
        "mend it there (`python -m grader lint` checks a lesson without a student)."
    )
    if all(isinstance(f, LessonFault) and not f.graded for f in faults):
        lead += " The grade stands; the report leaves out what could not be drawn."
    return "\n".join([lead, *(f"  {one_line(f if isinstance(f, str) else f.text())}" for f in faults)])


def _points(x) -> str:
    return f"{x:g}"


#: What every format writes where a score would stand when a wall-clock guard stopped a check of
#: it (the check, its exercise, the total): the number would be no grade.
UNFINISHED = "unfinished"


def score_of(item: Report | ExerciseResult | TestResult) -> str:
    """``score/max_score`` of a report, an exercise or a check, or :data:`UNFINISHED` when a
    wall-clock guard stopped it (or one of its checks): never a number that is no grade."""
    if item.unfinished:
        return UNFINISHED
    return f"{_points(item.score)}/{_points(item.max_score)}"


def _pts(t: TestResult) -> str:
    return f"{_points(t.max_score)} pt{'s' if t.max_score != 1 else ''}"


def parts(t: TestResult) -> tuple[str, str, str]:
    """(reason, detail, example) of a failed check's feedback: its message's first line, the
    lines after it (arrays of expected and got values, the student's line), and the smallest
    input, each a part of the record (:class:`TestResult`), never cut out of a paragraph."""
    reason, _, detail = t.message.partition("\n")
    return reason, detail, textwrap.dedent(t.counterexample)


def _head(t: TestResult, style: Style) -> str:
    head = f"  [{style(_MARK[t.status], _ROLE.get(t.status, 'good'))}] {style(t.name, 'name')} ({_pts(t)})"
    return head + (" [hidden]" if t.visibility is Visibility.HIDDEN else "")


def _fill(text: str, width: int, indent: str) -> list[str]:
    """``text`` wrapped to ``width`` with ``indent``, each of its own lines kept apart."""
    lines = []
    for line in text.splitlines() or [""]:
        lines += textwrap.wrap(line, width, initial_indent=indent, subsequent_indent=indent) or [indent]
    return lines


def _in_full(t: TestResult, style: Style, width: int, *, budget: int | None = None) -> list[str]:
    """A failed check in full: its meaning, what went wrong, the smallest input (never cut).
    With a ``budget`` of lines it is shortened to fit where it can, the input never cut."""
    reason, detail, example = parts(t)
    indent = "      "
    meaning = [style(line, "dim") for line in _fill(t.title, width, indent)] if t.title else []
    said = _fill(visible(reason), width, indent)
    more = [indent + line for line in visible(detail).splitlines()] if detail else []
    code = visible(example).splitlines()
    if budget is not None:

        def over() -> bool:
            return 1 + len(meaning) + len(said) + len(more) + 1 + len(code) > budget

        flowed = flow(example, width - len(indent) - 4).splitlines()
        if any(len(indent) + 4 + len(line) > width for line in code):
            code = flowed  # too wide for the screen: run on to its width
        # over budget, shortened in this order: the arrays of values (to a line saying where
        # they are), the input's layout, the meaning, that line
        if over() and more:
            more = [style(indent + "(every value: --details)", "dim")]
        if over():
            code = flowed
        if over():
            meaning = []
        if over():
            more = []
    shown = [indent + "Smallest input found:"] + [indent + "    " + line for line in code] if example else []
    return [_head(t, style), *meaning, *said, *more, *shown]


def flow(example: str, width: int) -> str:
    """The same Python, each statement's arrays run on from line to line (broken only after a
    comma, inside brackets, where a line may break) to fill ``width``: fewer lines for the same
    values. Made inert as :func:`grader.core.inert.visible` does."""
    statements: list[str] = []
    for line in visible(example).splitlines():
        if line[:1].isspace() and statements:
            statements[-1] += " " + line.strip()
        else:
            statements.append(line.strip())
    out = []
    for statement in statements:
        statement = re.sub(r"\[\s+", "[", re.sub(r",\s+", ", ", statement))
        # the numbers of a row close together, the rows apart: more rows to a line, still read
        statement = re.sub(r"\[[^\[\]]*\]", lambda row: row.group().replace(", ", ","), statement)
        pieces = []  # (text, what joins it to the one before)
        for number, row in enumerate(re.split(r"(?<=\]), ", statement)):  # whole rows where they fit
            parts_ = row.split(",") if len(row) > width else [row]
            pieces += [(part, ", " if i == 0 and number else ",") for i, part in enumerate(parts_)]
        lines, line = [], ""
        for piece, joint in pieces:
            if not line:
                line = piece
            elif len(line) + len(joint) + len(piece) + 1 > width:  # 1: the comma that ends it
                lines.append(line + ",")
                line = "    " + piece
            else:
                line += joint + piece
        lines.append(line)
        shape = re.search(r"\.reshape(\([\d, ]*\))$", statement)
        if len(lines) > LONGEST_INPUT and shape:
            name = statement.split(" = ", 1)[0]
            lines = [
                f"{name} = ...  # an array of shape {shape.group(1)}, too large to print here: --details shows it whole"
            ]
        out += lines
    return "\n".join(out)


def _one_line(t: TestResult, style: Style, width: int, said: set[str]) -> list[str]:
    """A failed check on one line: its name, and as much of its reason as the line holds (none
    when a check above gave the same; a hidden check: its name alone, as the student sees no
    more of it)."""
    head = _head(t, style)
    if t.visibility is Visibility.HIDDEN:
        return [head]
    reason = visible(" ".join(parts(t)[0].split()))
    if reason in said:
        return [head + ": the same"]
    said.add(reason)
    room = width - len(_head(t, Style())) - 2
    if room < 16 or not reason:
        return [head]
    return [f"{head}: {reason if len(reason) <= room else reason[: room - 3].rstrip() + '...'}"]


def _hidden_together(alike: list[TestResult], style: Style, width: int) -> str:
    """Hidden checks that failed beside a visible failure, on one line: how many, their points,
    and (where the line holds it) why they are told together."""
    mark = _MARK[Status.FAILED if any(t.status is Status.FAILED for t in alike) else Status.ERROR]
    points = sum(t.max_score for t in alike)
    said = f"{len(alike)} hidden checks ({_points(points)} pt{'s' if points != 1 else ''})"
    why = ": likely the same mistake as above"
    plain = f"  [{mark}] {said}{why}"
    return f"  [{style(mark, 'bad')}] {said}{why if len(plain) <= width else ''}"


def _shared_reason(failed: list[TestResult]) -> str:
    """The one message every failed check of an exercise gives, if they all give the same
    and none has an example (a missing or unwritten function, a wrong signature)."""
    reasons = {t.feedback for t in failed}
    if any(t.status is Status.LESSON_ERROR for t in failed):
        return ""  # a check the lesson kept from running is named, whatever the others say
    if len(reasons) == 1 and not failed[0].counterexample:
        return visible(reasons.pop())
    return ""


def first_failure(failed: Sequence[TestResult], diagnoses: Sequence[Diagnosis] = ()) -> TestResult | None:
    """The failed check a report shows first, in full (every format the same one): of the visible
    failures whose smallest inputs the first likely mistake explains (of all visible failures,
    when it explains none), the one with the smallest input (ties: the lesson's order); None when
    no visible check failed."""
    visible_ones = [t for t in failed if t.visibility is Visibility.VISIBLE]
    named = set(diagnoses[0].checks) if diagnoses else set()
    matching = [t for t in visible_ones if t.name in named]
    return min(
        matching or visible_ones,
        key=lambda t: (len(t.counterexample.splitlines()), len(t.feedback.splitlines())),
        default=None,
    )


def _failures(
    failed: list[TestResult],
    style: Style,
    width: int,
    *,
    details: bool,
    used: int,
    diagnoses: Sequence[Diagnosis] = (),
) -> list[str]:
    """The failed checks of one exercise, in full (``details``) or the short way."""
    if details:
        return [line for t in failed for line in _in_full(t, style, width)]
    # the visible failure the likely mistake explains (else the one with the smallest input)
    # first, then the other visible ones, then the hidden ones
    visible_ones = [t for t in failed if t.visibility is Visibility.VISIBLE]
    first = first_failure(failed, diagnoses)
    hidden = [t for t in failed if t not in visible_ones]
    # hidden checks that fail beside a visible failure most often fail only through it: one line
    # for them all (a hidden check the lesson kept from running, or one a guard stopped, is told
    # on its own: it says something else)
    alike = [t for t in hidden if t.status in (Status.FAILED, Status.ERROR)] if visible_ones else []
    if len(alike) < 2:
        alike = []
    rest = [t for t in visible_ones if t is not first] + [t for t in hidden if t not in alike]
    said = {visible(" ".join(parts(first)[0].split()))} if first is not None else set()
    others = [line for t in rest for line in _one_line(t, style, width, said)]
    if alike:
        others.append(_hidden_together(alike, style, width))
    lines = []
    if first is not None:
        lines += _in_full(first, style, width, budget=EXERCISE_LINES - used - len(others))
    return lines + others


def to_text(
    report: Report,
    *,
    heading: str = "",
    details: bool = False,
    style: Style | None = None,
    width: int = WIDTH,
    recheck: str = "",
) -> str:
    """The whole report as text for a terminal or a file: short, or every failure in full
    (``details``); coloured by ``style`` (default: plain) and wrapped to ``width``. With
    ``recheck`` (the command that checks again, e.g. ``python -m grader check FILE``), a closing
    line names the first exercise to fix and how to check just it."""
    style = style or Style()
    rule = "-" * width
    lines = [style(one_line(heading or f"Report for {report.submission}"), "title"), rule]
    if report.problem:
        lines += _fill(visible(report.problem), width, "") + [rule]
    column = max([NAME_COLUMN, *(len(e.name) for e in report.exercises)])  # scores line up
    for exercise in report.exercises:
        tests = [t for t in report.tests if t.exercise == exercise.name]
        failed = [t for t in tests if t.status is not Status.PASSED]
        score = score_of(exercise)
        summary = (
            f"all {len(tests)} checks pass"
            if not failed
            else f"{len(tests) - len(failed)} of {len(tests)} checks pass"
        )
        role = "good" if not failed else "bad"
        lines.append(
            f"{style(f'{exercise.name:<{column}}', 'name')} {style(f'{score:>7}', role)}   {summary}"
        )
        lines += exercise_lines(report, exercise.name, style=style, width=width, details=details, used=1)
        lines.append("")
    lines += [rule, f"{'Total':<{column}} {score_of(report)}"]
    if report.unfinished:
        lines[-1] += f" (out of {_points(report.max_score)}: not final)"
        lines += _fill(not_final(report), width, "")
    if report.lesson_errors:
        lead, *faults = lesson_errors(report.lesson_errors).splitlines()
        lines += ["", *_fill(lead, width, ""), *faults]
    if report.isolation and report.isolation is not Isolation.NONE:  # `check`'s own: nothing to say
        lines.append(f"Isolation: {report.isolation.describe()}")
    if recheck:
        lines += _next_step(report, style, recheck)
    return "\n".join(lines) + "\n"


def exercise_lines(
    report: Report,
    exercise: str,
    *,
    style: Style | None = None,
    width: int = WIDTH,
    details: bool = False,
    used: int = 1,
) -> list[str]:
    """What one exercise's score line is followed by, in every place a student reads feedback
    (this report, nbgrader's test cells, Gradescope's summary): the likely mistakes, then the
    failures, short or in full (``details``); ``used``: lines the exercise took already."""
    style = style or Style()
    tests = [t for t in report.tests if t.exercise == exercise]
    failed = [t for t in tests if t.status is not Status.PASSED]
    lines: list[str] = []
    for number, diagnosis in enumerate(report.diagnoses.get(exercise, ())):
        lead = "  likely mistake: " if number == 0 else "  or perhaps:     "
        said = f"{diagnosis.hint} [{diagnosis.code}]"
        wrapped = textwrap.wrap(said, width, initial_indent=lead, subsequent_indent=" " * len(lead))
        lines += [style(line, "hint") for line in wrapped]
    shared = _shared_reason(failed)
    if shared and not report.problem:
        lines += _fill(shared, width, "      ")
    elif not shared:
        lines += _failures(
            failed,
            style,
            width,
            details=details,
            used=len(lines) + used,
            diagnoses=report.diagnoses.get(exercise, ()),
        )
    return lines


def _next_step(report: Report, style: Style, recheck: str) -> list[str]:
    """What to do next: the first exercise to fix and the command that checks just it; where the
    file itself could not be graded (unreadable, not Python), the command that checks it again."""
    if report.problem:  # no exercise is the one to fix: the file, as its problem says above
        return [
            "",
            style("Next: fix what is said at the top, then check again:", "next"),
            style(f"    {one_line(recheck)}", "next"),
        ]
    for exercise in report.exercises:
        failing = sum(
            1
            for t in report.tests
            if t.exercise == exercise.name and t.status is not Status.PASSED and not t.unfinished
        )
        if failing:  # an unfinished check is nothing to fix: the report says to run it again
            checks = f"{failing} check{'s' if failing != 1 else ''}"
            return [
                "",
                style(f"Next: fix {exercise.name} ({checks} failing), then check just it:", "next"),
                style(f"    {one_line(recheck)} --only {exercise.name}", "next"),
            ]
    return []
