"""Feedback a student reads to the end: short reports, examples that paste, plain numbers,
colour only on a terminal."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from grader.core.results import Report, Status, TestResult, Visibility
from grader.core.settings import use_colour
from grader.engine.expect import PropertyFailure, close, fmt, number, pair, pretty, show
from grader.formats.html import _inputs
from grader.formats.terminal import Style
from grader.formats.text import flow, parts, to_text

from .support import ATTENTION, ROOT, compose, python

ESCAPE = re.compile("\x1b\\[")


# -- numbers


def test_zero_is_written_0_and_rounding_noise_beside_it_too():
    assert number(0.0) == "0" and number(-0.0) == "0"
    assert fmt(np.array([4.5622e-77, 0.5])) == "[  0, 0.5]"
    assert fmt(np.array([-3.4694e-18, 1.0])) == "[0, 1]"
    assert "e-" not in fmt(np.array([[0.314063, -3.4694e-18], [1.0, 2.0]]))
    assert number(-np.inf) == "-inf" and number(0.3140625) == "0.3141"


def test_a_tiny_value_where_the_arrays_differ_is_shown():
    """0 against 4.6e-77 is a real difference in an exact check: it is not written 0."""
    assert pair(0.0, 4.5622e-77) == ("0", "4.562e-77")
    expected, got = pair(np.array([0.0, 1.0]), np.array([4.5622e-77, 1.0]))
    assert expected != got


@settings(max_examples=200)
@given(st.floats(allow_nan=False, allow_infinity=False), st.floats(allow_nan=False, allow_infinity=False))
def test_two_numbers_that_differ_never_print_alike(a, b):
    one, other = pair(a, b)
    assert (one != other) == (a != b)


@settings(max_examples=100)
@given(
    hnp.arrays(np.float64, hnp.array_shapes(max_dims=3, max_side=4), elements=st.floats(-10, 10)),
    st.data(),
)
def test_two_arrays_that_differ_never_print_alike(a, data):
    b = a.copy()
    index = tuple(data.draw(st.integers(0, n - 1)) for n in a.shape)
    b[index] = np.nextafter(a[index], np.inf)  # the smallest change a float64 can make
    one, other = pair(a, b)
    assert one != other
    assert pair(a, a.copy())[0] == pair(a, a.copy())[1]


def test_the_four_digits_a_reader_takes_in_when_they_suffice():
    assert pair(0.314063, 0.319652) == ("0.3141", "0.3197")
    assert pair(1.0, 1.0000001) == ("1", "1.0000001")


# -- examples that paste


GRID = st.integers(-4, 4).map(lambda k: 0.25 * k)
ANY = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)


@settings(max_examples=150)
@given(
    st.sampled_from([np.float64, np.float32]),
    hnp.array_shapes(min_dims=1, max_dims=4, max_side=6),
    st.sampled_from([GRID, ANY, st.sampled_from([0.0, 1.0, -np.inf, np.inf, 1.25, -8.75])]),
    st.data(),
)
def test_an_example_rebuilds_its_input_exactly(dtype, shape, values, data):
    """Pasted into Python, the example gives back the very array: values, shape and dtype; so
    does its flowed form in the short report (unless it names a large array by its shape)."""
    a = data.draw(hnp.arrays(dtype, shape, elements=values))
    n_heads = data.draw(st.integers(1, 4))
    text = pretty(x=a, n_heads=n_heads)
    for form in (text, flow(text, 60)):
        space = {"np": np}
        exec(form, space)
        if space["x"] is Ellipsis:
            assert form is not text and f"of shape {a.shape}" in form
            continue
        assert space["x"].dtype == a.dtype and space["x"].shape == a.shape, form
        assert np.array_equal(space["x"], a), form
        assert space["n_heads"] == n_heads


@settings(max_examples=100)
@given(
    st.sampled_from([np.int64, np.int32, np.int8, np.uint8, np.uint16, np.bool_]),
    hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=6),
    st.data(),
)
def test_an_example_of_whole_numbers_rebuilds_exactly_and_is_written_whole(dtype, shape, data):
    """Positions, indices, masks: written as the integers (or booleans) they are, never as
    floats (``positions = np.array([1])``, not ``np.array([1.0])``), and read back with their dtype."""
    a = data.draw(hnp.arrays(dtype, shape))
    text = pretty(positions=a)
    space = {"np": np}
    exec(text, space)
    assert space["positions"].dtype == a.dtype and space["positions"].shape == a.shape, text
    assert np.array_equal(space["positions"], a), text
    assert ".0" not in text and "e+" not in text, text


def test_values_on_a_grid_are_written_as_small_whole_numbers():
    text = show(np.array([[0.75, 0.0], [0.0, -0.75], [-0.75, -0.75]]))
    assert text.startswith("0.75 * np.array([[ 1,  0],")
    assert show(np.full((2, 2), -0.25, dtype=np.float32)) == "np.full((2, 2), -0.25, dtype=np.float32)"
    assert show(np.eye(3, dtype=np.float32)) == "np.eye(3, dtype=np.float32)"
    column = show((np.arange(20.0) % 3).reshape(2, 10, 1))
    assert len(column.splitlines()) == 2 and column.endswith(".reshape(2, 10, 1)")  # not 20 rows


def test_a_large_table_is_one_line_that_rebuilds_it():
    table = (1.25 + 0.5 * np.arange(2000.0)).reshape(1, 40, 50)
    text = pretty(x=table, n_heads=2)
    assert text.splitlines()[0] == "x = (1.25 + 0.5 * np.arange(2000.0)).reshape(1, 40, 50)"
    assert flow(text, 60) == text  # nothing to shorten in the short report
    space = {"np": np}
    exec(text, space)
    assert np.array_equal(space["x"], table) and space["x"].dtype == table.dtype


def test_a_large_input_of_no_known_making_is_named_with_its_shape_in_the_short_report():
    text = pretty(x=(np.arange(2000.0) % 7).reshape(1, 40, 50), n_heads=2)
    short = flow(text, 60)
    assert short.splitlines()[0].startswith("x = ...") and "(1, 40, 50)" in short
    assert short.splitlines()[-1] == "n_heads = 2"  # every argument is still there


def test_a_pasted_example_reproduces_the_failure(tmp_path):
    """The example `check` prints for a wrong split_heads, pasted into Python, rebuilds the
    input on which the student's function and the reference disagree."""
    bug = ATTENTION.catalog / "bugs" / "split_interleaved_heads.py"
    path = compose(bug, tmp_path / "student")
    done = python("check", str(path), "--only", "split_heads", "--color", "never")
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    start = lines.index("      Smallest input found:") + 1
    block = []
    for line in lines[start:]:
        if not line.startswith("          "):
            break
        block.append(line[10:])
    space = {"np": np}
    exec("\n".join(block), space)
    student, reference = {}, {}
    exec(path.read_text(), student)
    exec(ATTENTION.solution.read_text(), reference)
    arguments = {k: space[k] for k in ("x", "n_heads")}
    assert not np.array_equal(student["split_heads"](**arguments), reference["split_heads"](**arguments))


# -- the short report


def _failed(
    name,
    visibility=Visibility.VISIBLE,
    message="it is wrong: expected 1, got 2.\nexpected:\n[1]\ngot:\n[2]",
    example="",
):
    """A failed check; with an ``example``, its feedback ends with it, as the grader writes it."""
    return TestResult(
        name,
        "f",
        2,
        0,
        Status.FAILED,
        Visibility(visibility),
        title=f"{name} holds.",
        message=message,
        counterexample=example,
    )


def test_the_short_report_tells_one_visible_failure_in_full_and_the_rest_in_a_line():
    example = "x = np.array([1.0])"
    tests = (
        _failed("hidden_one", Visibility.HIDDEN, "secret: expected 1, got 2.", example="y = 3"),
        _failed("first_visible", message="first: expected 1, got 2.", example=example),
        _failed("second_visible", message="second reason.", example="x = np.array([1.0, 2.0])\nn = 3"),
        TestResult("fine", "f", 1, 1, Status.PASSED, Visibility.VISIBLE),
    )
    short = to_text(Report("f.py", tests))
    assert short.index("first_visible") < short.index("second_visible") < short.index("hidden_one")
    assert "second reason." in short and "secret" not in short and "y = 3" not in short
    assert "          x = np.array([1.0])" in short
    full = to_text(Report("f.py", tests), details=True)
    assert "secret" in full and "y = 3" in full


def test_the_check_the_likely_mistake_explains_is_told_in_full_and_opened_first_in_html():
    from grader.core.diagnosis import Diagnosis
    from grader.formats.html import to_html
    from grader.formats.json_report import from_dict, to_dict

    tests = (
        _failed("smallest", message="smallest: wrong.", example="x = np.array([1.0])"),
        _failed("explained_too", message="too: wrong.", example="x = np.array([5.0])\nn = 7\nm = 8"),
        _failed("explained", message="explained: expected 1, got 2.", example="x = np.array([5.0])\nn = 7"),
    )
    plain = Report("f.py", tests, diagnoses={"f": (Diagnosis("code", "a hint"),)})
    # of the checks the mistake explains, the one with the smallest input
    named = Report(
        "f.py", tests, diagnoses={"f": (Diagnosis("code", "a hint", ("explained_too", "explained")),)}
    )
    assert from_dict(to_dict(named)) == named
    for report, full, short in ((plain, "smallest", "explained"), (named, "explained", "smallest")):
        text = to_text(report)
        assert f"[FAILED] {full} (2 pts)\n" in text  # its head alone on its line: in full below
        assert text.index(full + " ") < text.index(short + " ") and f"[FAILED] {short} (2 pts): " in text
        page = to_html(report)
        opened = page[page.index('<details class="check" open>') :]
        assert opened.index(f"<b>{full}</b>") < opened.index("</summary>")  # the page opens the same check
    assert "          n = 7" in to_text(named) and "          n = 7" not in to_text(plain)


def test_hidden_checks_failing_beside_a_visible_failure_take_one_line_together():
    hidden = (
        _failed("hidden_a", Visibility.HIDDEN, "secret a.", example="y = 1"),
        _failed("hidden_b", Visibility.HIDDEN, "secret b.", example="y = 2"),
        TestResult("hidden_c", "f", 3, 0, Status.ERROR, Visibility.HIDDEN, message="it raised"),
    )
    beside = to_text(Report("f.py", (_failed("seen", example="x = np.array([1.0])"), *hidden)))
    assert "  [FAILED] 3 hidden checks (7 pts): likely the same mistake as above\n" in beside
    narrow = to_text(Report("f.py", (_failed("seen"), *hidden)), width=40)
    assert "  [FAILED] 3 hidden checks (7 pts)\n" in narrow  # what fits of it: no line too wide
    assert "hidden_" not in beside and "secret" not in beside
    assert all(
        name in to_text(Report("f.py", (_failed("seen"), *hidden)), details=True)
        for name in ("hidden_a", "hidden_c")
    )
    alone = to_text(Report("f.py", hidden))  # no visible failure: each hidden check is all there is
    assert all(f"{name} (" in alone for name in ("hidden_a", "hidden_b", "hidden_c"))
    assert "hidden checks (" not in alone
    stopped = replace(hidden[1], status=Status.LESSON_ERROR)  # another story: told on its own
    apart = to_text(Report("f.py", (_failed("seen"), hidden[0], stopped, hidden[2])))
    assert "[NOT RUN] hidden_b" in apart and "2 hidden checks (5 pts)" in apart


def test_a_bug_seen_at_the_lessons_sizes_is_shown_on_them_not_on_a_large_example(tmp_path):
    """Hypothesis shrinks a large failing example only to the smallest large one (here 10 tokens,
    one head); the grader looks again among lesson-sized examples and shows the smallest: 3
    tokens, two heads (with two heads, 2 tokens is never drawn: T and H always differ)."""
    import json

    path = compose(ATTENTION.catalog / "bugs" / "mha_causal_never_on.py", tmp_path)
    done = python("grade", str(path), "--lesson", "attention", "--format", "json")
    report = json.loads(done.stdout)
    check = next(t for t in report["tests"] if t["name"] == "first_token_only_sees_itself")
    assert check["status"] == "failed" and report["score"] == 71  # the score is the catalog's
    given = {"np": np}
    exec(check["counterexample"], given)
    assert given["x"].shape == (3, 2) and given["n_heads"] == 2, check["counterexample"]


def test_the_next_step_names_the_first_exercise_to_fix():
    report = Report("f.py", (_failed("a_check"),))
    text = to_text(report, recheck="python -m grader check f.py")
    assert text.rstrip().endswith("python -m grader check f.py --only f")
    assert "Next: fix f (1 check failing)" in text
    assert "Next" not in to_text(report)


def test_a_file_that_could_not_be_graded_is_what_to_fix_next():
    """An unreadable file (a pipe) or one that is not Python fails every check; the next step
    named the first exercise, as if its code were to blame."""
    report = Report(
        "f.py", (_failed("a_check"),), problem="attention.py could not be read: it is a named pipe."
    )
    text = to_text(report, recheck="python -m grader check f.py")
    assert "Next: fix f" not in text and "--only" not in text
    assert "Next: fix what is said at the top, then check again:" in text
    assert text.rstrip().endswith("python -m grader check f.py")


# -- colour


@pytest.mark.parametrize(
    "asked, terminal, no_color, wanted",
    [
        (None, True, "", True),
        (None, False, "", False),
        ("auto", True, "1", False),
        ("always", False, "1", True),
        ("never", True, "", False),
    ],
)
def test_colour_only_on_a_terminal_unless_asked(asked, terminal, no_color, wanted):
    environ = {"NO_COLOR": no_color} if no_color else {}
    assert use_colour(asked, terminal=terminal, environ=environ) is wanted


def test_unknown_colour_choice_is_refused():
    with pytest.raises(ValueError, match="auto, always or never"):
        use_colour("sometimes", terminal=True, environ={})


def test_colour_goes_around_the_reporters_words_never_into_student_text():
    report = Report("f.py", (_failed("a_check", message="raised \x1b[2J boom"),))
    plain = to_text(report)
    assert not ESCAPE.search(plain) and "\\x1b[2J" in plain
    coloured = to_text(report, style=Style(colour=True))
    assert ESCAPE.search(coloured) and "\\x1b[2J boom" in coloured
    assert ESCAPE.sub("", re.sub("\x1b\\[[0-9;]*m", "", coloured)) == plain


def _on_a_terminal(*args: str, environ: dict) -> str:
    """``python -m grader ARGS`` with its stdout on a pseudo-terminal, as a student runs it."""
    leader, follower = pty.openpty()
    env = {**{k: v for k, v in os.environ.items() if k != "NO_COLOR"}, **environ, "COLUMNS": "100"}
    with subprocess.Popen(
        [sys.executable, "-m", "grader", *args], cwd=ROOT, stdout=follower, stderr=subprocess.DEVNULL, env=env
    ) as process:
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the other end closed
                break
            if not chunk:
                break
            chunks.append(chunk)
        process.wait(timeout=300)
    os.close(leader)
    return b"".join(chunks).decode()


def test_check_is_coloured_on_a_terminal_and_plain_in_a_pipe_or_with_no_color(tmp_path):
    path = compose(ATTENTION.catalog / "bugs" / "split_interleaved_heads.py", tmp_path / "s")
    args = ("check", str(path), "--only", "split_heads")
    environ = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    assert ESCAPE.search(_on_a_terminal(*args, environ={}))
    assert not ESCAPE.search(_on_a_terminal(*args, environ={"NO_COLOR": "1"}))
    piped = python(*args, env=environ)
    assert not ESCAPE.search(piped.stdout) and "split_heads" in piped.stdout
    forced = python(*args, "--color", "always", env=environ)
    assert ESCAPE.search(forced.stdout)
    as_json = python("grade", str(path), "--only", "split_heads", "--format", "json", "--color", "always")
    assert not ESCAPE.search(as_json.stdout)


def test_both_sides_are_named_by_what_they_are_when_both_are_the_students():
    """The prefix check compares the student's output on the prefix with the student's own
    full run: neither side is "expected"."""
    prefix, whole = np.array([[0.25, 0.0]]), np.array([[0.5, 0.0]])
    with pytest.raises(PropertyFailure) as failed:
        close(
            prefix,
            whole,
            name="mha_forward(x[..., :1, :])",
            what="differs from the first 1 rows of mha_forward(x)",
            rtol=0,
            atol=0,
        )
    message = str(failed.value)
    assert "the first 1 rows of mha_forward(x): 0.5, mha_forward(x[..., :1, :]): 0.25" in message
    assert "expected" not in message and "got" not in message
    with pytest.raises(PropertyFailure) as failed:
        close(
            prefix,
            whole,
            name="the outputs of tokens 0..0",
            what="changed when only later tokens changed",
            rtol=0,
            atol=0,
        )
    assert "before: 0.5, after: 0.25" in str(failed.value)
    with pytest.raises(PropertyFailure) as failed:
        close(prefix, whole, name="mha_forward(x)", rtol=0, atol=0)
    assert "expected 0.5, got 0.25" in str(failed.value)


def test_the_readme_shows_the_real_check_screen():
    """The README's example screen is what `check` prints today, line for line."""
    command = ["check", "examples/gallery/attention/typical-mistakes/attention.py", "--only", "mha_forward"]
    done = python(*command, "--color", "never")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("```\nChecking examples/gallery/attention/typical-mistakes/attention.py") + 4
    assert done.stdout == readme[start : readme.index("```\n", start)]


def test_every_place_a_student_reads_feedback_uses_the_same_words():
    """The text report, nbgrader's test cell, Gradescope's summary and GitHub's message tell a
    failed check with the same lines: its reason and its smallest input, pasteable."""
    import json

    from grader.commands.cell import _feedback
    from grader.formats.github import to_github
    from grader.formats.gradescope import to_gradescope
    from grader.formats.json_report import from_dict
    from grader.formats.text import exercise_lines

    done = python("grade", "examples/gallery/attention/typical-mistakes/attention.py", "--format", "json")
    report = from_dict(json.loads(done.stdout))
    block = exercise_lines(report, "mha_forward")
    example = block[block.index("      Smallest input found:") :][:3]
    assert example[1].startswith("          x = ")
    words = "\n".join(example)
    assert words in to_text(report)
    assert words in _feedback(report, "mha_forward", hidden=False)
    assert words in to_gradescope(report, execution_time=1.0)["output"]
    github = "\n".join(t["message"] for t in to_github(report)["tests"])
    name = next(line for line in block if line.startswith("  [FAILED]")).split()[1]  # told in full
    first = next(t for t in report.tests if t.name == name)
    assert first.feedback in github and "likely mistake" in github
    assert name in report.diagnoses["mha_forward"][0].checks  # a check the mistake explains
    assert "likely mistake" in _feedback(report, "mha_forward", hidden=False)


def test_a_students_message_cannot_pass_for_the_smallest_input():
    """An exception message that holds the words the grader puts before an input stays part of
    the message: the input shown (in the text report, and read into tables on the HTML page) is
    the check's own, written last."""
    message = "`f` raised ValueError (boom\nSmallest input found:\n    x = np.eye(40000))."
    report = Report("f.py", (_failed("a_check", message=message, example="x = np.zeros((1, 6))"),))
    reason, detail, example = parts(report.tests[0])
    assert example == "x = np.zeros((1, 6))" and "np.eye(40000)" in detail
    text = to_text(report)
    assert text.index("np.eye(40000)") < text.index(
        "      Smallest input found:\n          x = np.zeros((1, 6))"
    )
    assert "40000" not in _inputs(example)


def test_feedback_is_a_record_of_its_parts_and_a_report_of_the_first_schema_reads_the_same():
    """A failed check's message and smallest input travel apart (JSON ``message`` and
    ``counterexample``); ``feedback`` is the paragraph made of them. A report written before
    ``message`` existed (schema 1: the paragraph only) reads back into the same parts."""
    from grader.formats.json_report import from_dict, to_dict

    message = "`f` raised ValueError (boom\nSmallest input found:\n    x = np.eye(40000))."
    report = Report("f.py", (_failed("a_check", message=message, example="x = np.zeros((1, 6))\nn = 2"),))
    written = to_dict(report)
    (check,) = written["tests"]
    assert check["message"] == message and check["counterexample"] == "x = np.zeros((1, 6))\nn = 2"
    assert check["feedback"] == message + "\nSmallest input found:\n    x = np.zeros((1, 6))\n    n = 2"
    assert from_dict(written) == report
    first = {**written, "schema_version": 1, "tests": [{k: v for k, v in check.items() if k != "message"}]}
    assert from_dict(first) == report
    assert to_text(from_dict(first)) == to_text(report)
