"""Red-team findings on examples a lesson ships (grader.engine.shipped), each pinned (each test
failed on the code before its fix).

* A course file the checks import from outside their folder decides their examples, but is not
  in the header: a stale file is believed, and a grade differs from the engine's.
* A file of the right gzip/JSON framing whose contents are of a wrong shape crashes the whole
  grade (pytest INTERNALERROR, exit 3) instead of being ignored in words, and lint either
  crashes on it or calls it fine.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.core.settings import STORE_VARIABLE
from grader.sandbox.wardens import best_level

from .support import TOY_COURSE
from .test_shipped import contents, graded, grader, public

pytestmark = pytest.mark.skipif(
    best_level() == "none", reason="examples are drawn with the reference sandboxed"
)


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "toy"
    shutil.copytree(TOY_COURSE, root, ignore=shutil.ignore_patterns("__pycache__", "examples.json.gz"))
    return root


def _rewrite_body(path: Path, change) -> None:
    """The file at ``path`` with its header kept and its body's properties changed by ``change``."""
    header, _, body = gzip.decompress(path.read_bytes()).partition(b"\n")
    whole = json.loads(body)
    change(whole["properties"])
    path.write_bytes(gzip.compress(header + b"\n" + json.dumps(whole).encode()))


def test_a_course_file_the_strategies_import_from_outside_the_checks_decides_the_examples(tmp_path):
    """tests/checks/shared.py (a module several lessons' strategies share) is imported by the
    checks, is not under tests/checks/toy/, and is not in the header: after a change to it the
    old file is still believed, and a submission wrong on the new, longer inputs passes."""
    root = _copy(tmp_path)
    (root / "tests" / "checks" / "shared.py").write_text("MAX_T = 4\n")
    strategies = root / "tests" / "checks" / "toy" / "strategies.py"
    text = strategies.read_text()
    text = text.replace(
        "from hypothesis.extra import numpy as hnp\n",
        "from hypothesis.extra import numpy as hnp\n\nfrom ..shared import MAX_T\n",
    )
    strategies.write_text(text.replace("draw(st.integers(1, 4))", "draw(st.integers(1, MAX_T))"))
    assert grader("examples", "--lesson", "toy", cwd=root).returncode == 0
    (root / "tests" / "checks" / "shared.py").write_text("MAX_T = 7\n")  # the author widens the inputs
    solution = (root / "solutions" / "toy.py").read_text()
    wrong = tmp_path / "sub" / "toy.py"
    wrong.parent.mkdir()
    wrong.write_text(
        solution.replace(
            "    return x - token_mean(x)  #", "    return x - token_mean(x) if x.shape[-2] <= 4 else x  #"
        )
    )
    assert "shape[-2] <= 4" in wrong.read_text()
    used = graded(root, wrong)
    engine = graded(root, wrong, replay=False)
    assert engine["report"]["score"] < engine["report"]["max_score"]  # the engine catches it
    assert used["report"] == engine["report"]  # fails: the stale file says every check passes


@pytest.fixture
def course(tmp_path) -> Path:
    root = _copy(tmp_path)
    assert grader("examples", "--lesson", "toy", cwd=root).returncode == 0
    return root


def _grade(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "grader", "grade", "--format", "json", str(root / "solutions" / "toy.py")],
        capture_output=True,
        text=True,
        cwd=root,
        env={**os.environ, STORE_VARIABLE: "off"},
        timeout=600,
    )


def test_a_key_that_cannot_be_hashed_is_ignored_in_words(course):
    """A key holding a list: store.loaded's ``down[tuple(prop[0])]`` raises TypeError, which
    shipped.load does not catch (ValueError only): the grade stops with INTERNALERROR."""

    def change(props):
        props[0][0] = [props[0][0][0], [1], 20]

    _rewrite_body(public(course), change)
    done = _grade(course)
    assert "INTERNALERROR" not in done.stderr, done.stderr[-800:]
    assert done.returncode == 0 and "were not used" in done.stderr


def test_an_example_of_an_unknown_shape_under_a_current_header_is_ignored_in_words(course):
    """The header is current and every node is the file's own, but an example's stop is of an
    unknown kind: replay.adopt_items raises ValueError outside shipped.load's try: the grade
    stops with INTERNALERROR."""

    def change(props):
        props[0][1][0][1] = "Bogus"

    _rewrite_body(public(course), change)
    assert contents(public(course))[0]["hidden"] is False
    done = _grade(course)
    assert "INTERNALERROR" not in done.stderr, done.stderr[-800:]
    assert done.returncode == 0 and "were not used" in done.stderr


def test_lint_says_a_file_no_grade_can_use_in_words(course):
    """lint reads the header only: a file that stops every grade (above) is 'no problem found',
    and one whose key cannot be hashed is a traceback."""

    def bogus(props):
        props[0][1][0][1] = "Bogus"

    _rewrite_body(public(course), bogus)
    done = grader("lint", "--lesson", "toy", cwd=course)
    assert "examples.json.gz" in done.stdout + done.stderr, done.stdout[-500:]

    def unhashable(props):
        props[0][0] = [props[0][0][0], [1], 20]

    _rewrite_body(public(course), unhashable)
    done = grader("lint", "--lesson", "toy", cwd=course)
    assert "Traceback" not in done.stderr, done.stderr[-800:]


def test_a_large_data_file_beside_the_checks_does_not_stop_a_check_that_ships_no_examples(tmp_path):
    """shipped.load takes the header (a digest of every check file) on every run, a file shipped or
    not; a data file over fingerprint.MAX_FILE (64 MiB) beside the hidden checks makes that a
    LessonError inside pytest_collection_finish: INTERNALERROR, where GRADER_REPLAY=0 grades."""
    root = _copy(tmp_path)
    with open(root / "tests" / "checks" / "toy" / "hidden" / "weights.npy", "wb") as f:
        f.truncate(65 << 20)  # sparse: no disk used
    engine = graded(root, replay=False)
    assert engine["report"]["score"] == engine["report"]["max_score"]
    used = graded(root)  # fails: the GRADE script's process ends with INTERNALERROR
    assert used["report"] == engine["report"]
