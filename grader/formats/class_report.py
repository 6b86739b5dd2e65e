"""The class report: what a whole class got right and wrong, on one self-contained page.

Two pure functions: :func:`summarise` reads the gradebook's rows (nothing else: no course, no
submission, nothing graded) into a :class:`ClassSummary`, and :func:`to_class_html` draws it.
The page shows a histogram of the scores, each exercise's and each check's failure rate, the
likely mistakes the class made most (with counts and the students who made them) and the
students whose grade is unfinished or who got none, and why.

The rate of a check counts the graded students whose report holds it and who did not pass it;
a row without a readable report (a gradebook written before reports were kept, a report that
no longer reads) counts in the histogram only, and the page says how many there are.

The plots are inline SVG drawn here; the page holds no script, and its Content-Security-Policy
forbids the browser to fetch anything. Every text that came from a student's side (ids, the
reasons for no grade, a hint naming a student's inputs) is escaped after
:func:`grader.core.inert.visible` has written out its control characters.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass

from ..core.inert import one_line, visible
from ..core.results import Standing, Status

#: Bars of the histogram of scores (each a tenth of the maximum).
BINS = 10
#: Checks and mistakes listed at most (the rest are counted in a line).
MOST = 40
#: Students named at most beside one mistake (the rest are counted).
NAMED = 30

_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
_STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #1a1a1a; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; } td, th { border: 1px solid #ddd; padding: 2px 8px; text-align: left; }
td.n { text-align: right; } .muted { color: #666; } code { font-size: 0.92em; }
svg text { font: 12px system-ui, sans-serif; fill: #1a1a1a; }
rect.bar { fill: #2b6cb0; } rect.fail { fill: #c0392b; } rect.track { fill: #eeeeee; }
"""


@dataclass(frozen=True)
class Rate:
    """How many of the students who took a check (or an exercise) lost points on it."""

    name: str
    exercise: str
    failed: int
    of: int
    hidden: bool = False

    @property
    def rate(self) -> float:
        return self.failed / self.of if self.of else 0.0


@dataclass(frozen=True)
class ClassMistake:
    """One likely mistake of the lesson's, and the students whose function it fits."""

    exercise: str
    code: str
    hint: str
    students: tuple[str, ...]


@dataclass(frozen=True)
class NoGrade:
    """A student without a final grade, and why."""

    student: str
    standing: Standing
    why: str


@dataclass(frozen=True)
class ClassSummary:
    """Everything the class report shows, read from the gradebook alone."""

    lesson: str
    students: int
    max_score: float
    scores: tuple[float, ...]
    """The graded students' scores."""
    exercises: tuple[Rate, ...]
    checks: tuple[Rate, ...]
    """Most failed first."""
    mistakes: tuple[ClassMistake, ...]
    """Made by most students first."""
    no_grade: tuple[NoGrade, ...]
    unread: int = 0
    """Graded rows whose report could not be read (counted in the histogram only)."""


def summarise(rows, *, lesson: str = "", exercises: tuple[str, ...] = ()) -> ClassSummary:
    """The class as the gradebook's rows (:class:`grader.formats.gradebook.Row`) hold it."""
    graded = [row for row in rows if row.standing is Standing.GRADED]
    max_score = max((row.max_score for row in rows), default=0)
    order = list(exercises) or list(dict.fromkeys(e.name for row in rows for e in row.exercises))
    lost: dict[str, list[int]] = {name: [0, 0] for name in order}
    checks: dict[tuple[str, str], list] = {}
    mistakes: dict[tuple[str, str], list] = {}
    unread = 0
    for row in graded:
        for exercise in row.exercises:
            counts = lost.setdefault(exercise.name, [0, 0])
            counts[1] += 1
            counts[0] += exercise.score < exercise.max_score
        tests, diagnoses = _outcomes(row.report)
        if tests is None:
            unread += 1
            continue
        for name, exercise, status, hidden in tests:
            counts = checks.setdefault((exercise, name), [0, 0, hidden])
            counts[1] += 1
            counts[0] += status is not Status.PASSED
        for exercise, code, hint in diagnoses:
            entry = mistakes.setdefault((exercise, code), [hint, []])
            if row.student not in entry[1]:
                entry[1].append(row.student)
    check_rates = sorted(
        (Rate(name, exercise, f, n, hidden) for (exercise, name), (f, n, hidden) in checks.items()),
        key=lambda r: (-r.rate, -r.failed, r.exercise, r.name),
    )
    found = sorted(
        (
            ClassMistake(exercise, code, hint, tuple(sorted(students)))
            for (exercise, code), (hint, students) in mistakes.items()
        ),
        key=lambda m: (-len(m.students), m.exercise, m.code),
    )
    missing = tuple(
        NoGrade(row.student, row.standing, row.message) for row in rows if row.standing is not Standing.GRADED
    )
    return ClassSummary(
        lesson=lesson,
        students=len(rows),
        max_score=max_score,
        scores=tuple(row.score for row in graded),
        exercises=tuple(Rate(name, name, f, n) for name, (f, n) in lost.items()),
        checks=tuple(check_rates),
        mistakes=tuple(found),
        no_grade=missing,
        unread=unread,
    )


def _outcomes(report: str):
    """(each check's (name, exercise, status, hidden), each diagnosis's (exercise, code, hint)) of
    a JSON report; (None, ()) when there is none or it cannot be read."""
    try:
        data = json.loads(report) if report else None
        tests = [
            (str(t["name"]), str(t["exercise"]), Status(t["status"]), t.get("visibility") == "hidden")
            for t in data["tests"]
        ]
        diagnoses = [
            (str(name), str(d["code"]), str(d["hint"]))
            for name, exercise in data.get("exercises", {}).items()
            for d in exercise.get("diagnoses", ())
        ]
    except (TypeError, ValueError, KeyError, AttributeError):
        return None, ()
    return tests, diagnoses


def _e(text) -> str:
    """Text for HTML: control characters written out, then escaped."""
    return html.escape(visible(str(text)), quote=True)


def _n(x) -> str:
    return f"{x:g}"


def histogram(scores, max_score: float) -> list[int]:
    """How many scores fall in each tenth of ``max_score`` (the last tenth holds the maximum)."""
    counts = [0] * BINS
    for score in scores:
        share = score / max_score if max_score else 0.0
        counts[min(max(int(share * BINS), 0), BINS - 1)] += 1
    return counts


def _histogram_svg(summary: ClassSummary) -> str:
    counts = histogram(summary.scores, summary.max_score)
    width, height, left, bottom, bar = 640, 240, 40, 40, 56
    top = max(counts) or 1
    parts = [
        f'<svg class="plot histogram" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'xmlns="http://www.w3.org/2000/svg" role="img" aria-label="histogram of scores">'
    ]
    plot = height - bottom - 24  # room above the tallest bar for its count
    for i, count in enumerate(counts):
        low, high = summary.max_score * i / BINS, summary.max_score * (i + 1) / BINS
        h = round(plot * count / top)
        x = left + i * (bar + 4)
        parts.append(
            f'<rect class="bar" x="{x}" y="{height - bottom - h}" width="{bar}" height="{h}">'
            f"<title>{count} student(s) with {_n(low)} to {_n(high)} points</title></rect>"
        )
        if count:
            parts.append(
                f'<text x="{x + bar / 2}" y="{height - bottom - h - 3}" text-anchor="middle">{count}</text>'
            )
        parts.append(
            f'<text x="{x + bar / 2}" y="{height - bottom + 15}" text-anchor="middle">{_n(round(low, 1))}</text>'
        )
    parts.append(f'<text x="{left}" y="{height - 5}">points, out of {_n(summary.max_score)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _rates_svg(rates, kind: str) -> str:
    """Horizontal bars, one per rate, with its name and 'k of n'."""
    row, label, track = 24, 400, 260
    height = row * len(rates) + 8
    parts = [
        f'<svg class="plot {kind}" width="{label + track + 90}" height="{height}" '
        f'viewBox="0 0 {label + track + 90} {height}" xmlns="http://www.w3.org/2000/svg" role="img" '
        f'aria-label="failure rate of each {kind}">'
    ]
    for i, r in enumerate(rates):
        y = 4 + i * row
        name = r.name if kind == "exercise" else f"{r.exercise}: {r.name}"
        parts.append(f'<text x="0" y="{y + 15}">{_e(one_line(name)[:56])}</text>')
        parts.append(f'<rect class="track" x="{label}" y="{y + 3}" width="{track}" height="{row - 8}"/>')
        w = round(track * r.rate)
        parts.append(
            f'<rect class="fail" x="{label}" y="{y + 3}" width="{w}" height="{row - 8}">'
            f"<title>{_e(one_line(name))}: {r.failed} of {r.of} failed</title></rect>"
        )
        parts.append(f'<text x="{label + track + 6}" y="{y + 15}">{r.failed} of {r.of}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _students(names: tuple[str, ...]) -> str:
    shown = ", ".join(_e(one_line(n)) for n in names[:NAMED])
    more = len(names) - NAMED
    return shown + (f" and {more} more" if more > 0 else "")


def to_class_html(summary: ClassSummary) -> str:
    """The class report as one HTML page."""
    title = f"Class report: {one_line(summary.lesson)}" if summary.lesson else "Class report"
    graded = len(summary.scores)
    body = [f"<h1>{_e(title)}</h1>"]
    mean = sum(summary.scores) / graded if graded else 0
    body.append(
        f"<p>{summary.students} students in the gradebook, {graded} graded"
        + (f"; mean score {_n(round(mean, 2))} of {_n(summary.max_score)}" if graded else "")
        + ".</p>"
    )
    if summary.unread:
        body.append(
            f'<p class="muted">{summary.unread} graded student(s) have no readable report in the '
            "gradebook: they count in the histogram, not in the rates of checks and mistakes.</p>"
        )
    body.append('<h2 id="scores">Scores</h2>')
    body.append(_histogram_svg(summary) if graded else "<p>No student has a grade yet.</p>")
    body.append('<h2 id="exercises">Exercises: students who lost points</h2>')
    shown = [r for r in summary.exercises if r.of]
    body.append(_rates_svg(shown, "exercise") if shown else "<p>No graded exercise.</p>")
    body.append('<h2 id="checks">Checks failed most</h2>')
    failing = [r for r in summary.checks if r.failed]
    if failing:
        top = failing[:MOST]
        body.append('<ol class="most-failed">')
        for r in top[:5]:
            hidden = ' <span class="muted">(hidden)</span>' if r.hidden else ""
            body.append(
                f"<li><code>{_e(r.name)}</code> of <code>{_e(r.exercise)}</code>{hidden}: "
                f"failed by {r.failed} of {r.of}</li>"
            )
        body.append("</ol>")
        body.append(_rates_svg(top, "check"))
        if len(failing) > MOST:
            body.append(f'<p class="muted">and {len(failing) - MOST} more failed check(s).</p>')
    else:
        body.append("<p>Every graded student passed every check.</p>" if graded else "<p>No check ran.</p>")
    body.append('<h2 id="mistakes">Likely mistakes made most</h2>')
    if summary.mistakes:
        body.append(
            '<table class="mistakes"><tr><th>exercise</th><th>likely mistake</th><th>students</th><th>who</th></tr>'
        )
        for m in summary.mistakes[:MOST]:
            body.append(
                f"<tr><td><code>{_e(m.exercise)}</code></td><td>{_e(m.hint)} <code>[{_e(m.code)}]</code></td>"
                f'<td class="n">{len(m.students)}</td><td>{_students(m.students)}</td></tr>'
            )
        body.append("</table>")
    else:
        body.append("<p>No known mistake was recognised.</p>")
    body.append('<h2 id="no-grade">Students without a grade</h2>')
    if summary.no_grade:
        body.append('<table class="no-grade"><tr><th>student</th><th>status</th><th>why</th></tr>')
        for one in summary.no_grade:
            body.append(
                f"<tr><td>{_e(one_line(one.student))}</td><td>{_e(one.standing.value)}</td>"
                f"<td>{_e(one.why)}</td></tr>"
            )
        body.append("</table>")
    else:
        body.append("<p>Every student has a grade.</p>")
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_POLICY}">\n'
        f"<title>{_e(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
