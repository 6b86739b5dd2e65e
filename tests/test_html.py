"""The HTML report: one self-contained page, student text escaped, the lesson's pictures drawn,
rendered by a real headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import numpy as np
import pytest

from grader.core.diagnosis import Diagnosis
from grader.core.pictures import Heatmap
from grader.core.results import Report, Status, TestResult, Visibility
from grader.formats.html import _inputs, to_html
from grader.formats.json_report import from_dict, to_dict

from .support import ATTENTION, TOY_COURSE, compose, python

HOSTILE = "<script>alert('pwned')</script>\x1b[2J\x1b]0;title\x07 </pre><img src=x onerror=alert(1)>"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")


def _browser() -> str:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip(
        "no headless Chromium on this machine (Debian: apt-get install chromium; .ci/run installs it)"
    )


def _render(page, tmp_path) -> str:
    """The page as a real browser builds it: Chromium's DOM after loading the file."""
    browser = _browser()
    done = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",  # the tests may run as root, where Chromium's own sandbox refuses
            "--disable-gpu",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _hostile_report() -> Report:
    failed = TestResult(
        "a_check",
        "f",
        2,
        0,
        Status.ERROR,
        Visibility.VISIBLE,
        title="A property.",
        message=f"`f` raised ValueError ({HOSTILE}).",
        counterexample="x = np.array([1.0, 2.0])",
    )
    hidden = TestResult("secret", "f", 1, 0, Status.FAILED, Visibility.HIDDEN, message=f"{HOSTILE} y = 41")
    picture = Heatmap(
        "f", "weights", ("<b>", "cat"), ((((1.0, 0.0), (0.5, 0.5)),)), (((1.0, 0.0), (0.0, 1.0)),)
    )
    return Report(
        f"sub/{HOSTILE}/f.py",
        (failed, hidden),
        diagnoses={"f": (Diagnosis("code", f"hint {HOSTILE}"),)},
        pictures=(picture,),
    )


def test_student_text_is_shown_never_run():
    page = to_html(_hostile_report())
    assert "<script" not in page.lower() and "<img" not in page.lower() and "\x1b" not in page
    assert "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;" in page
    assert "\\x1b[2J\\x1b]0;title\\x07" in page  # the escape shown as text, as in the text report
    assert "&lt;b&gt;" in page  # a token is student-free, but escaped all the same
    assert "y = 41" not in page  # a hidden check's inputs stay hidden
    assert "y = 41" in to_html(_hostile_report(), details=True)


def test_hostile_text_renders_as_text_in_a_browser(tmp_path):
    page = tmp_path / "report.html"
    page.write_text(to_html(_hostile_report()), encoding="utf-8")
    dom = _render(page, tmp_path)
    assert "<script" not in dom.lower() and "<img" not in dom.lower()
    assert "&lt;script&gt;alert('pwned')&lt;/script&gt;" in dom


def test_the_page_fetches_nothing():
    page = to_html(_hostile_report())
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert not re.search(r"<[^>]*\s(src|href)\s*=", page)  # no tag loads anything
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in page


def test_pictures_survive_the_json_form():
    report = _hostile_report()
    assert from_dict(to_dict(report)) == report


@pytest.fixture(scope="module")
def graded_pages(tmp_path_factory):
    """`grade --format html` of a wrong scaling (through the sandbox) and `check --html` of the
    reference (in-process)."""
    folder = tmp_path_factory.mktemp("html")
    bug = compose(ATTENTION.catalog / "bugs" / "mha_scale_sqrt_D.py", folder / "bug")
    wrong = folder / "wrong.html"
    done = python("grade", str(bug), "--format", "html", "-o", str(wrong))
    assert done.returncode == 0, done.stderr
    right = folder / "right.html"
    done = python("check", str(ATTENTION.solution), "--html", str(right))
    assert done.returncode == 0, done.stderr
    return wrong, right


def _figures(dom: str, who: str) -> int:
    return len(re.findall(rf'<figure class="heatmap {who}"', dom))


def test_heatmaps_render_in_a_browser_with_the_differing_cells_marked(graded_pages, tmp_path):
    wrong, right = graded_pages
    dom = _render(wrong, tmp_path)
    # the mask's one table and mha_forward's two heads, the student's beside the reference's
    assert _figures(dom, "student") == _figures(dom, "reference") == 3
    assert len(re.findall(r'<rect class="cell"', dom)) == 6 * 36  # six 6x6 tables: the lesson's sentence
    assert len(re.findall(r'<rect class="differ"', dom)) > 0  # the wrong scale shows in mha_forward
    assert ">sat</text>" in dom and ">mat</text>" in dom
    assert 'data-exercise="mha_forward"' in dom and "Likely mistake" in dom
    assert "<table" in dom  # the smallest input as tables
    dom = _render(right, tmp_path)
    assert _figures(dom, "student") == 3 and '<rect class="differ"' not in dom


def test_the_staircase_of_the_reference():
    """The mask's picture: row t of the weights gives 0 to every later token, and "cat" (the
    lesson's row, scores [1, 2, 3]) puts about 0.27 and 0.73 on "the" and "cat"."""
    done = python("grade", str(ATTENTION.solution), "--only", "apply_causal_mask", "--format", "json")
    (picture,) = json.loads(done.stdout)["pictures"]
    weights = picture["reference"][0]
    assert picture["tokens"][:3] == ["the", "cat", "sat"]
    assert all(weights[i][j] == 0 for i in range(6) for j in range(i + 1, 6))
    assert round(weights[1][0], 2) == 0.27 and round(weights[1][1], 2) == 0.73
    assert picture["student"] == picture["reference"]


def test_a_lesson_without_pictures_gets_a_report_without_them(tmp_path):
    done = python(
        "grade", str(TOY_COURSE / "solutions" / "toy.py"), "--course", str(TOY_COURSE), "--format", "html"
    )
    assert done.returncode == 0, done.stderr
    assert "<svg" not in done.stdout and "Total: " in done.stdout


def test_inputs_are_read_as_numbers_never_run(tmp_path):
    """The page's tables come from the example's text read as plain numbers and the few numpy
    calls the grader writes; anything else is shown as text, never evaluated."""
    marker = tmp_path / "ran"
    code = f"x = __import__('pathlib').Path({str(marker)!r}).touch()"
    assert _inputs(code).startswith("<pre>") and not marker.exists()
    table = _inputs("x = 0.75 * np.array([[1,0], [0,-1]], dtype=float)\nn_heads = 2")
    assert "<td>0.75</td><td>0</td>" in table and "<td>-0.75</td>" in table and "n_heads = 2" in table


def test_weights_that_are_not_numbers_keep_to_plain_json_and_draw_grey():
    """A student's NaN or infinite weight is written as text in the JSON (which has no such
    number), read back as it was, and drawn grey."""
    nan = float("nan")
    picture = Heatmap("f", "w", ("a", "b"), (((1.0, 0.0), (0.5, 0.5)),), (((nan, float("inf")), (0.5, 0.5)),))
    passed = TestResult("a_check", "f", 1, 1, Status.PASSED, Visibility.VISIBLE)
    report = Report("f.py", (passed,), pictures=(picture,))
    text = json.dumps(to_dict(report), allow_nan=False)  # raises on a bare NaN
    again = from_dict(json.loads(text)).pictures[0]
    assert np.isnan(again.student[0][0][0]) and again.student[0][0][1] == float("inf")
    assert to_html(report).count('fill="#999999"') == 2


def test_inputs_written_as_a_table_or_a_seed_are_read_into_tables():
    """``np.arange`` tables and the seeded call that draws a large input become tables (or a
    line naming the shape); a call asking for more numbers than any example holds is refused."""
    table = _inputs("scores = (1.25 + 0.5 * np.arange(6.0)).reshape(2, 3)")
    assert "<td>1.25</td><td>1.75</td><td>2.25</td>" in table
    single = _inputs("x = (0.25 * np.arange(4.0)).astype(np.float32)")
    assert "<td>0.75</td>" in single
    seeded = _inputs("x = 1.25 + np.random.default_rng(7).integers(-2, 3, size=(2, 40, 40)) * 2.5")
    assert "shape (2, 40, 40)" in seeded
    for huge in (
        "x = np.arange(1e12)",
        "x = np.arange(0, 1e12)",
        "x = np.arange(0, 1, 1e-12)",
        "x = np.arange(np.inf)",
        "x = np.eye(100000)",
        "x = np.random.default_rng(1).integers(0, 2, size=(10**5, 10**5))",
    ):
        assert _inputs(huge).startswith("<pre>")
