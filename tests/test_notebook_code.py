"""A notebook's code is what Jupyter runs, and a lesson's lines are Python's lines.

Python ends a line only at ``\\n``, ``\\r\\n`` or ``\\r``; ``str.splitlines`` also
ends one at U+2028, U+2029, form feed, vertical tab, ``\\x1c``-``\\x1e`` and
``\\x85``. Text after one of those inside a comment is still the comment for
Python and Jupyter, so the grader must never run it. The property below builds
cells whose meaning it knows piece by piece (code, comments and strings holding
the odd breaks, lines starting with ``%`` or ``!`` that are Python, and magics)
and holds the grader's code for the cell to the Python that cell means.
"""

from __future__ import annotations

import ast
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.core.ipynb import NotebookError, notebook_source
from grader.core.pylines import cell_code, physical_lines
from grader.core.solution import solution_lines, strip_solutions
from grader.formats.notebook import reference_parts
from grader.sandbox.inside import worker
from tests.support import ON_TOY, TOY, python

#: Every character str.splitlines ends a line at, but Python does not.
ODD_BREAKS = ["\u2028", "\u2029", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85"]
#: The line endings Python knows.
ENDINGS = ["\n", "\r\n", "\r"]


def _notebook(*sources: str) -> bytes:
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "source": s} for s in sources]
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}).encode()


def _hidden_behind_a_break(function: str, brk: str = "\u2028") -> str:
    """``function`` (a reference's source) made a stub whose body hides in one comment line:
    its lines joined by ``brk``, after a ``#``, then the stub's raise."""
    lines = function.split("\n")
    head = next(i for i, line in enumerate(lines) if line.strip() == "### BEGIN SOLUTION")
    body = [line for line in lines[head + 1 :] if line.strip() != "### END SOLUTION"]
    hidden = "    # the answer, some day:" + brk + brk.join(body)
    return "\n".join([*lines[:head], hidden, "    raise NotImplementedError()"]) + "\n"


@pytest.mark.parametrize("brk", ODD_BREAKS)
def test_code_after_an_odd_break_in_a_comment_stays_a_comment(brk):
    given_code, functions = reference_parts(TOY.solution.read_text(encoding="utf-8"), TOY.exercises)
    stub = _hidden_behind_a_break(functions["center_tokens"], brk)
    code = notebook_source(_notebook(given_code, stub)).decode()
    namespace: dict = {}
    exec(compile(code, "toy.ipynb", "exec"), namespace)
    with pytest.raises(NotImplementedError):  # Python and Jupyter never reach the hidden body
        namespace["center_tokens"](np.zeros((2, 2)))


def test_a_stub_hiding_its_answer_behind_u2028_earns_nothing(tmp_path):
    """The case found by hand (on the attention lesson: it scored apply_causal_mask 20/20), here
    in a notebook of the toy lesson: reading a notebook is the grader's work, not a lesson's."""
    source = TOY.stubs.read_text(encoding="utf-8")
    _, functions = reference_parts(TOY.solution.read_text(encoding="utf-8"), TOY.exercises)
    stubs = reference_parts(source, TOY.exercises)[1]
    hidden = _hidden_behind_a_break(functions["center_tokens"])
    path = tmp_path / "toy.ipynb"
    path.write_bytes(_notebook(source.replace(stubs["center_tokens"], hidden.rstrip("\n"))))
    assert "the answer, some day:\u2028" in notebook_source(path).decode()
    done = python(
        "grade", str(path), *ON_TOY, "--only", "center_tokens", "--format", "json", "--max-examples", "5"
    )
    report = json.loads(done.stdout)
    assert report["exercises"]["center_tokens"]["max_score"] == 6
    assert report["exercises"]["center_tokens"]["score"] == 0, done.stdout


# ----------------------------------------------------------------------------- the property

#: Text a comment or a string may hold: code-like words, quotes' neighbours, the odd breaks.
_FILLER = st.lists(
    st.sampled_from([*ODD_BREAKS, "x = 1", "import os", "%time", "!ls", " ", "#", "(", "pass"]),
    max_size=6,
).map("".join)
_NAME = st.sampled_from(["a", "b", "c", "total"])


@st.composite
def _piece(draw) -> tuple[str, str]:
    """(text in the cell, the Python it means): one or more whole lines, ending unsaid."""
    kinds = ["code", "comment", "string", "bracket", "backslash", "block", "magic", "magic\\"]
    kind = draw(st.sampled_from(kinds))
    name, filler = draw(_NAME), draw(_FILLER)
    end = draw(st.sampled_from(ENDINGS))
    if kind == "code":  # an assignment with a comment after it
        text = f"{name} = {draw(st.integers(0, 9))}  # {filler}"
        return text, text
    if kind == "comment":
        return f"# {filler}", ""
    if kind == "string":  # a triple-quoted string whose inner lines start like magics
        text = f'{name} = """{filler}{end}%notamagic {filler}{end}!notashell"""'
        return text, text
    if kind == "bracket":  # a line starting with % inside brackets is Python's modulo
        text = f"{name} = (7{end}   % 4)"
        return text, text
    if kind == "backslash":  # ... and so after a backslash that continues the line
        text = f"{name} = 7 \\{end}% 3"
        return text, text
    if kind == "block":  # a magic as a statement of a function's body
        return (
            f"def {name}():{end}    %time {filler}{end}    return 1",
            f"def {name}():\n    pass\n    return 1",
        )
    magic = draw(st.sampled_from(["%time {n} = 1", "!echo {n}", "%matplotlib inline", "%who"]))
    text = magic.format(n=name) + f" {filler.replace(chr(92), '')}"
    if kind == "magic\\":  # a magic continued on the next line by a backslash belongs together
        return f"{text} \\{end}{name} = 2", "pass"
    return text, "pass"


@st.composite
def _cells(draw) -> tuple[str, str]:
    """(a cell's text, the Python Jupyter runs for it, magics made pass)."""
    pieces = draw(st.lists(_piece(), min_size=1, max_size=6))
    endings = draw(st.lists(st.sampled_from(ENDINGS), min_size=len(pieces), max_size=len(pieces)))
    text = "".join(t + e for (t, _), e in zip(pieces, endings, strict=True))
    meant = "\n".join(p for _, p in pieces)
    return text, meant


def _tree(code: str) -> str:
    return ast.dump(ast.parse(code))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cells())
def test_the_code_of_a_cell_is_what_python_runs_for_it(cell):
    text, meant = cell
    code = cell_code(text)
    assert _tree(code) == _tree(meant)
    assert len(physical_lines(code)) == len(physical_lines(text))  # line numbers stay the cell's
    if "pass" not in meant:  # no magic: the cell is plain Python, and Python reads it as it is
        assert _tree(code) == _tree(text)
    # as a notebook: the same code, the cell's lines kept
    assert _tree(notebook_source(_notebook(text)).decode()) == _tree(meant)


# ----------------------------------------------------------------------------- examples


@pytest.mark.parametrize(
    ("cell", "meant"),
    [
        ("%%writefile helper.py\ndef f():\n    return 1\n", ""),  # the body is a file's, not run
        ("\n%%bash\nrm -rf /\n", ""),
        ("%%time\ndef f():\n    return 1\n", "def f():\n    return 1\n"),  # %%time runs its body
        ("@staticmethod\n%time x\ndef f():\n    return 1\n", None),  # a decorator does not jump a magic
        ("def f():\n    %time x\n", "def f():\n    pass\n"),
        ("%time x \\\n    %who\nx = 1\n", "pass\nx = 1\n"),  # a backslash takes the next line in
    ],
)
def test_cell_magics_and_magics_as_statements(cell, meant):
    if meant is None:
        with pytest.raises(SyntaxError):
            ast.parse(cell_code(cell))
    else:
        assert _tree(cell_code(cell)) == _tree(meant)


def test_a_cell_that_is_no_python_alone_is_refused_even_when_the_next_one_mends_it():
    with pytest.raises(NotebookError, match="Python cannot read cell 1 of"):
        notebook_source(_notebook('def f():\n    return """', '"""\n'))


def test_solution_markers_are_comments_not_text_in_a_string():
    source = 'def f():\n    """\n    ### BEGIN SOLUTION\n    """\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION\n'
    assert strip_solutions(source).count("### BEGIN SOLUTION") == 1  # the docstring's stays
    assert solution_lines(source) == ["return 1"]
    hidden = "def f():\n    # a note\u2028    ### BEGIN SOLUTION\n    return 1\n"
    assert strip_solutions(hidden) == hidden  # the marker is inside a comment line, so none


def test_the_line_an_error_names_is_pythons_line():
    """A .py file: the line quoted with an error is the one Python counted, after a U+2028."""
    text = "x = 1  # a note\u2028that goes on\nraise ValueError('v')\n"
    _, code = worker.compile_source(text.encode(), "attention.py")
    with pytest.raises(ValueError) as raised:
        exec(code, {})
    said = worker.describe_exception(raised.value, text, "attention.py")
    assert "at line 2: `raise ValueError('v')`" in said, said
