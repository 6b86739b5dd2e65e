"""The HTML report: one self-contained page per submission, with the lesson's pictures.

A pure function of the :class:`Report`. The page needs nothing from outside: its style is inline,
its pictures are inline SVG, it holds no script, and its Content-Security-Policy forbids the
browser to fetch anything at all. Per exercise: the score, the likely mistake, the failed
checks (the first visible one open, with its inputs as small tables), and, where the lesson
declares pictures (:mod:`grader.core.pictures`), heatmaps of the student's weights beside the
reference's, one per head, the cells where they differ outlined.

Every text that came from a student (the path, exception messages, printed values) is escaped
for HTML (``<script>`` is shown, never run) after :func:`grader.core.inert.visible` has written
out its control characters (an ANSI escape is shown as ``\\x1b[2J``).
"""

from __future__ import annotations

import ast
import html
import math

import numpy as np

from ..core.inert import one_line, visible
from ..core.pictures import Heatmap
from ..core.results import Report, Status, TestResult, Visibility
from .text import first_failure, lesson_errors, not_final, parts, score_of

#: Entries of one input table at most; a larger input is given by its shape (the JSON holds it).
LARGEST_TABLE = 400
#: 2-D slices of an input of more than two axes shown at most.
MOST_SLICES = 4
#: Side of one heatmap cell, in pixels.
CELL = 30

_STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #1a1a1a; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin: 0; }
section.exercise { border: 1px solid #ccc; border-radius: 6px; padding: 0.8em 1.2em; margin: 1em 0; }
.score { float: right; font-weight: bold; } .full { color: #17692b; } .lost { color: #b3261e; }
.mistake { background: #fff6d6; padding: 0.4em 0.7em; border-radius: 4px; margin: 0.5em 0; }
.check { margin: 0.6em 0; } .check summary { cursor: pointer; }
.status { font-weight: bold; color: #b3261e; } .hidden { color: #666; font-size: 0.9em; }
.meaning { color: #444; font-style: italic; } pre { background: #f5f5f5; padding: 0.5em; overflow-x: auto; }
table.input { border-collapse: collapse; margin: 0.3em 0 0.8em; font: 13px ui-monospace, monospace; }
table.input td { border: 1px solid #ddd; padding: 1px 6px; text-align: right; }
table.input caption { text-align: left; font-weight: bold; }
.pictures { display: flex; flex-wrap: wrap; gap: 2.5em; } .head { display: flex; gap: 0.8em; }
figure { margin: 0.4em 0; } table.input caption { white-space: nowrap; }
figcaption { font-size: 0.9em; color: #444; } svg text { font: 11px system-ui, sans-serif; }
.total { font-size: 1.2em; font-weight: bold; }
"""
#: Nothing may be fetched: no script, no image, no font, no connection; inline style only.
_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def _e(text: str) -> str:
    """Student text for HTML: control characters written out, then escaped."""
    return html.escape(visible(str(text)), quote=True)


def _points(x) -> str:
    return f"{x:g}"


def to_html(report: Report, *, heading: str = "", details: bool = False) -> str:
    """The whole report as one HTML page (every failed check's inputs, hidden ones included,
    with ``details``)."""
    title = one_line(heading or f"Report for {report.submission}")
    body = [f"<h1>{html.escape(title)}</h1>"]
    if report.problem:
        body.append(f'<p class="lost">{_e(report.problem)}</p>')
    for exercise in report.exercises:
        tests = [t for t in report.tests if t.exercise == exercise.name]
        failed = [t for t in tests if t.status is not Status.PASSED]
        full = "full" if not failed else "lost"
        parts_ = [
            f'<section class="exercise" id="{_e(exercise.name)}">',
            f'<h2>{_e(exercise.name)} <span class="score {full}">{score_of(exercise)}</span></h2>',
            f"<p>{len(tests) - len(failed)} of {len(tests)} checks pass</p>",
        ]
        for number, diagnosis in enumerate(exercise.diagnoses):
            lead = "Likely mistake" if number == 0 else "Or perhaps"
            parts_.append(
                f'<p class="mistake"><b>{lead}:</b> {_e(diagnosis.hint)} <code>[{_e(diagnosis.code)}]</code></p>'
            )
        first = first_failure(failed, exercise.diagnoses)  # the one the text report shows in full
        ordered = ([first] if first else []) + [t for t in failed if t is not first]
        parts_ += [_check(t, open_=t is first, details=details) for t in ordered]
        pictures = [p for p in report.pictures if p.exercise == exercise.name]
        parts_ += [_pictures(p) for p in pictures]
        parts_.append("</section>")
        body += parts_
    body.append(
        f'<p class="total">Total: {score_of(report)}</p>'
        + (f'<p class="lost">{html.escape(not_final(report))}</p>' if report.unfinished else "")
        + "".join(
            f'<p class="lost">{_e(line)}</p>' for line in lesson_errors(report.lesson_errors).splitlines()
        )
        + (f"<p>Isolation: {html.escape(report.isolation.describe())}</p>" if report.isolation else "")
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_POLICY}">\n'
        f"<title>{html.escape(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


def _check(t: TestResult, *, open_: bool, details: bool) -> str:
    """One failed check: its name, meaning, what went wrong and, when the student may see it,
    its inputs as tables."""
    hidden = t.visibility is Visibility.HIDDEN
    reason, detail, example = parts(t)
    head = (
        f'<span class="status">{"NOT RUN" if t.status is Status.LESSON_ERROR else t.status.value.upper()}</span> <b>{_e(t.name)}</b> '
        f"({_points(t.max_score)} pt{'s' if t.max_score != 1 else ''})"
        + (' <span class="hidden">hidden check</span>' if hidden else "")
    )
    inner = [f'<p class="meaning">{_e(t.title)}</p>'] if t.title else []
    if hidden and not details:
        inner.append("<p>The inputs of hidden checks are not shown.</p>")
    else:
        inner.append(f"<p>{_e(reason)}</p>")
        if detail:
            inner.append(f"<pre>{_e(detail)}</pre>")
        if example:
            inner.append("<p>Smallest input found:</p>" + _inputs(example))
    return f'<details class="check"{" open" if open_ else ""}><summary>{head}</summary>{"".join(inner)}</details>'


# -- inputs as tables


def _inputs(example: str) -> str:
    """The smallest input as tables, one per argument (the code itself where it cannot be read
    as plain numbers); the code that rebuilds it below."""
    shown = []
    try:
        statements = _read(example)
    except (ValueError, SyntaxError, TypeError, KeyError, IndexError, OverflowError):  # not show()'s forms
        statements = None
    for name, value in statements or ():
        shown.append(_table(name, value))
    code = f"<details><summary>as Python</summary><pre>{_e(example)}</pre></details>"
    return "".join(shown) + code if statements else f"<pre>{_e(example)}</pre>"


def _read(example: str) -> list[tuple[str, object]]:
    """(name, value) of each ``name = ...`` line of an example, read without running anything:
    only numbers, lists and the few numpy calls :func:`grader.engine.expect.show` writes."""
    found = []
    for node in ast.parse(example).body:
        if not (
            isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
        ):
            raise ValueError("not an assignment")
        found.append((node.targets[0].id, _value(node.value)))
    return found


_NUMPY = {
    "array": np.array,
    "zeros": np.zeros,
    "full": np.full,
    "eye": np.eye,
    "float32": np.float32,
    "arange": np.arange,
}
_DTYPES = {"float": np.float64, "np.float32": np.float32, "np.float64": np.float64}
_OPERATORS = {ast.Mult: np.multiply, ast.Add: np.add}
#: The most numbers an example may ask to be built here.
LARGEST_BUILT = 10**6


def _size(shape) -> int:
    if np.prod(np.atleast_1d(np.asarray(shape, dtype=float))) > LARGEST_BUILT:
        raise ValueError("too large")
    return shape


def _value(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_value(node.operand)
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_value(n) for n in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_value(node.left), _value(node.right))
    if isinstance(node, ast.Attribute) and ast.unparse(node) in ("np.inf", "np.nan"):
        return float(node.attr)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        name = ast.unparse(node.func)
        dtypes = {k.arg: _DTYPES[ast.unparse(k.value)] for k in node.keywords if k.arg == "dtype"}
        if node.func.attr == "reshape" and name != "np.reshape":
            shape = _size([_value(a) for a in node.args])
            return np.asarray(_value(node.func.value)).reshape(shape)
        if node.func.attr == "astype" and len(node.args) == 1:
            return np.asarray(_value(node.func.value)).astype(_DTYPES[ast.unparse(node.args[0])])
        if _seeded(node):  # np.random.default_rng(SEED).integers(LOW, HIGH, size=SHAPE)
            (seed,) = [_value(a) for a in node.func.value.args]
            low, high = [_value(a) for a in node.args]
            shape = _size(_value(node.keywords[0].value))
            return np.random.default_rng(seed).integers(low, high, size=shape)
        if name.startswith("np.") and node.func.attr in _NUMPY:
            args = [_value(a) for a in node.args]
            if node.func.attr in ("zeros", "full") and args:
                _size(args[0])
            if node.func.attr == "eye" and args:
                _size((args[0], args[0]))
            if node.func.attr == "arange":  # np.arange(stop), (start, stop) or (start, stop, step)
                start, stop, step = ([0, *args, 1] if len(args) == 1 else [*args, 1])[:3]
                _size(_steps(start, stop, step))
            return _NUMPY[node.func.attr](*args, **dtypes)
    raise ValueError(f"cannot read {ast.unparse(node)!r}")


def _steps(start, stop, step) -> int:
    """How many numbers ``np.arange(start, stop, step)`` gives (OverflowError: infinitely many)."""
    if not step:
        raise ValueError("a step of 0")
    return max(0, math.ceil((float(stop) - float(start)) / float(step)))


def _seeded(node: ast.Call) -> bool:
    """Whether ``node`` is the seeded call :func:`grader.engine.draw.rebuilt` writes."""
    inner = node.func.value
    return (
        node.func.attr == "integers"
        and isinstance(inner, ast.Call)
        and ast.unparse(inner.func) == "np.random.default_rng"
        and len(inner.args) == 1
        and not inner.keywords
        and len(node.args) == 2
        and [k.arg for k in node.keywords] == ["size"]
    )


def _cells(row) -> str:
    return "".join(f"<td>{html.escape(_number(v))}</td>" for v in row)


def _number(v) -> str:
    v = float(v)
    if v == 0:
        return "0"
    return f"{v:.6g}" if np.isfinite(v) else str(v)


def _table(name: str, value) -> str:
    if not isinstance(value, np.ndarray):
        return f"<p><code>{_e(name)} = {_e(repr(value))}</code></p>"
    if value.size > LARGEST_TABLE:
        return (
            f"<p><code>{_e(name)}</code>: an array of shape {value.shape} (every value: the JSON report)</p>"
        )
    if value.ndim <= 2:
        return _grid(f"{name}, shape {value.shape}", np.atleast_2d(value))
    slices, leading = [], list(np.ndindex(value.shape[:-2]))
    for index in leading[:MOST_SLICES]:
        where = ", ".join(str(i) for i in index)
        slices.append(_grid(f"{name}[{where}, :, :] of shape {value.shape}", value[index]))
    if len(leading) > MOST_SLICES:
        slices.append(f"<p>... and {len(leading) - MOST_SLICES} more tables of {_e(name)}</p>")
    return "".join(slices)


def _grid(caption: str, rows: np.ndarray) -> str:
    body = "".join(f"<tr>{_cells(row)}</tr>" for row in rows)
    return f'<table class="input"><caption>{_e(caption)}</caption>{body}</table>'


# -- pictures


def _pictures(picture: Heatmap) -> str:
    """The student's weights beside the reference's, one pair of heatmaps per head."""
    reference = np.asarray(picture.reference, dtype=float)  # (heads, T, T)
    student = np.asarray(picture.student, dtype=float) if picture.student else None
    differ = picture.differ()
    figures = []
    for head in range(reference.shape[0]):
        label = f"head {head}" if reference.shape[0] > 1 else "weights"
        pair = []
        if student is not None:
            pair.append(_svg(student[head], differ[head], picture.tokens, f"yours, {label}", "student"))
        pair.append(_svg(reference[head], None, picture.tokens, f"expected, {label}", "reference"))
        figures.append('<div class="head">' + "".join(pair) + "</div>")
    count = int(differ.sum())
    said = (
        f"<p>{count} of {differ.size} weights differ (outlined in red).</p>"
        if student is not None and count
        else "<p>Your weights match.</p>"
        if student is not None
        else f"<p>No picture of yours: {_e(picture.problem)}</p>"
    )
    return (
        f'<div class="picture" data-exercise="{_e(picture.exercise)}"><h3>{_e(picture.title)}</h3>{said}'
        f'<div class="pictures">{"".join(figures)}</div></div>'
    )


def _colour(weight: float) -> str:
    """White for 0, deep blue for 1 (NaN and values out of [0, 1]: grey)."""
    if not np.isfinite(weight) or weight < -1e-9 or weight > 1 + 1e-9:
        return "#999999"
    low, high = np.array([255, 255, 255]), np.array([23, 78, 166])
    r, g, b = (low + (high - low) * min(max(weight, 0.0), 1.0)).round().astype(int)
    return f"#{r:02x}{g:02x}{b:02x}"


def _svg(
    table: np.ndarray, differ: np.ndarray | None, tokens: tuple[str, ...], caption: str, who: str
) -> str:
    """One (T, T) table of weights as an SVG heatmap: rows look, columns are looked at."""
    T = table.shape[0]
    names = [tokens[i] if i < len(tokens) else str(i) for i in range(T)]
    left, top = 44, 22
    size = (left + T * CELL + 4, top + T * CELL + 4)
    shapes = []
    for j, word in enumerate(names):
        x = left + j * CELL + CELL / 2
        shapes.append(f'<text x="{x}" y="{top - 6}" text-anchor="middle">{_e(word)}</text>')
    outlines = []
    for i, word in enumerate(names):
        shapes.append(
            f'<text x="{left - 4}" y="{top + i * CELL + CELL / 2 + 4}" text-anchor="end">{_e(word)}</text>'
        )
        for j in range(T):
            x, y = left + j * CELL, top + i * CELL
            shapes.append(
                f'<rect class="cell" x="{x}" y="{y}" width="{CELL}" height="{CELL}" '
                f'fill="{_colour(table[i, j])}" stroke="#dddddd"><title>{_e(names[i])} to {_e(names[j])}: '
                f"{_number(table[i, j])}</title></rect>"
            )
            if differ is not None and bool(differ[i, j]):  # drawn last, over the neighbours
                outlines.append(
                    f'<rect class="differ" x="{x + 1.5}" y="{y + 1.5}" width="{CELL - 3}" height="{CELL - 3}" '
                    'fill="none" stroke="#d00000" stroke-width="3"/>'
                )
    shapes += outlines
    return (
        f'<figure class="heatmap {who}"><svg xmlns="http://www.w3.org/2000/svg" width="{size[0]}" '
        f'height="{size[1]}" role="img" aria-label="{_e(caption)}">{"".join(shapes)}</svg>'
        f"<figcaption>{_e(caption)}</figcaption></figure>"
    )
