"""Gradescope and GitHub Classroom, reproduced from their published formats and layouts."""

from __future__ import annotations

import base64
import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile

import pytest

from grader.commands import gradescope
from grader.core.results import Report, Status, TestResult, Visibility
from grader.formats.gradescope import to_gradescope

from .support import ON_TOY, TOY, TOY_BUGGY, python

#: The platforms' workings are the grader's, not a lesson's: they are tested on the toy lesson,
#: whose buggy file loses a visible check, and whose forgets-eps file the hidden one only.
BUGGY = TOY_BUGGY
HIDDEN_BUG = TOY.gallery / "forgets-eps" / TOY.filename
#: The toy lesson's points, all of them.
FULL = 14


def grade_json(path) -> dict:
    done = python("grade", str(path), *ON_TOY, "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def buggy_graded() -> dict:
    """``grade``'s report of BUGGY, once for the module: what Gradescope's run must agree with."""
    return grade_json(BUGGY)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("gradescope") / "autograder.zip"
    done = python("gradescope-bundle", str(out), *ON_TOY)
    assert done.returncode == 0, done.stderr
    return out


def autograder_root(tmp_path, bundle, files: dict) -> tuple:
    """A folder laid out like Gradescope's /autograder, with ``files`` as the submission."""
    root = tmp_path / "autograder"
    with zipfile.ZipFile(bundle) as z:
        z.extractall(root / "source")
        for info in z.infolist():  # zipfile drops permissions; restore the executable bits
            if info.external_attr >> 16 & 0o111:
                os.chmod(root / "source" / info.filename, 0o755)
    (root / "submission").mkdir()
    for name, content in files.items():
        target = root / "submission" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    return root


def run_autograder(root, python: str = sys.executable) -> dict:
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), GRADER_PYTHON=python)
    done = subprocess.run(
        ["bash", str(root / "source" / "run_autograder")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return json.loads((root / "results" / "results.json").read_text())


def test_the_bundle_has_both_scripts_at_its_root_and_the_hidden_checks(bundle):
    with zipfile.ZipFile(bundle) as z:
        names = set(z.namelist())
        modes = {i.filename: i.external_attr >> 16 for i in z.infolist()}
        setup = z.read("setup.sh").decode()
    assert {"setup.sh", "run_autograder"} <= names
    assert modes["setup.sh"] & 0o111 and modes["run_autograder"] & 0o111
    assert "tests/checks/toy/hidden/test_layer_norm_hidden.py" in names and "solutions/toy.py" in names
    assert "pip install -e /autograder/source" in setup


def test_the_same_course_gives_the_same_bundle_byte_for_byte(tmp_path, bundle):
    """Built again later, from files touched since (their times changed, not their bytes), the
    bundle is the very same zip: an instructor can tell whether anything changed."""
    course = tmp_path / "toy"
    shutil.copytree(TOY.root, course, ignore=shutil.ignore_patterns("__pycache__"))
    for path in course.rglob("*"):
        os.utime(path, (1_000_000_000, 1_000_000_000))
    again = tmp_path / "again.zip"
    done = python("gradescope-bundle", str(again), "--course", str(course), "--lesson", "toy")
    assert done.returncode == 0, done.stderr
    assert again.read_bytes() == bundle.read_bytes()


def test_run_autograder_writes_the_same_scores_as_grade(tmp_path, bundle, buggy_graded):
    root = autograder_root(tmp_path, bundle, {TOY.filename: BUGGY.read_bytes()})
    (root / "submission_metadata.json").write_text('{"previous_submissions": []}')
    os.chmod(root / "source", 0o755)  # as unzipped by Gradescope: readable by all, until the script runs
    (root / "results").mkdir(mode=0o755)
    (root / "results" / "results.json").write_text('{"score": 100, "tests": []}')  # planted
    results = run_autograder(root)
    expected = buggy_graded
    assert results["score"] == expected["score"]
    assert [t["score"] for t in results["tests"]] == [t["score"] for t in expected["tests"]]
    assert sum(t["score"] for t in results["tests"]) == results["score"]
    assert results["stdout_visibility"] == "hidden"
    assert {t["status"] for t in results["tests"]} <= {"passed", "failed"}
    visibility = {t["name"]: t["visibility"] for t in results["tests"]}
    assert visibility["layer_norm: layer norm uses the eps given"] == "after_published"
    assert visibility["center_tokens: centering keeps the shape"] == "visible"
    assert isinstance(results["execution_time"], (int, float))
    # the summary students see at once counts the checks they can see, nothing hidden
    for name in expected["exercises"]:
        seen = [t for t in expected["tests"] if t["exercise"] == name and t["visibility"] == "visible"]
        score, max_score = sum(t["score"] for t in seen), sum(t["max_score"] for t in seen)
        assert f"{name}: {score:g}/{max_score:g} on the checks you can see" in results["output"].splitlines()
    # written by the grader, complete, after grading; nothing of root's is open to other users
    assert results["tests"] and results["output"]
    assert not (root / "results" / "results.json.partial").exists()
    private = [root / "source", root / "results", root / "submission_metadata.json"]
    with zipfile.ZipFile(bundle) as z:
        private += [root / "source" / name for name in z.namelist()]
    assert all(stat.S_IMODE(path.stat().st_mode) & 0o077 == 0 for path in private), [
        (str(path), oct(path.stat().st_mode)) for path in private if path.stat().st_mode & 0o077
    ]


@pytest.mark.parametrize(
    "files, fragment",
    [
        ({}, "No toy.py"),
        ({"notes/readme.txt": b"hello"}, "No toy.py"),
        ({"toy.py": b"def layer_norm(x gamma):\n"}, "Python cannot read your file"),
    ],
)
def test_run_autograder_always_writes_results(tmp_path, bundle, files, fragment):
    root = autograder_root(tmp_path, bundle, files)
    results = run_autograder(root)
    assert results["score"] == 0
    assert fragment in results["output"]


def test_setup_leaves_the_venv_to_all_and_the_source_to_root(tmp_path, bundle):
    """The permission lines of setup.sh, run on a stand-in /autograder (the rest needs apt)."""
    with zipfile.ZipFile(bundle) as z:
        setup = z.read("setup.sh").decode()
    root = tmp_path / "autograder"
    for folder in ("source/solutions", "venv/lib/site-packages/numpy", "venv/bin"):
        (root / folder).mkdir(parents=True)
    (root / "source" / "solutions" / TOY.filename).write_text("reference")
    (root / "venv" / "lib" / "site-packages" / "numpy" / "__init__.py").write_text("")
    (root / "venv" / "bin" / "python").write_text("")
    os.chmod(root / "venv" / "lib", 0o700)
    os.chmod(root / "venv" / "bin" / "python", 0o700)
    os.chmod(root / "venv" / "lib" / "site-packages" / "numpy" / "__init__.py", 0o666)
    lines = [line for line in setup.splitlines() if line.startswith("chmod ")]
    assert lines, setup
    done = subprocess.run(
        ["bash", "-euc", "\n".join(lines).replace("/autograder", str(root))], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    mode = {p: stat.S_IMODE(p.stat().st_mode) for p in [root, *root.rglob("*")]}
    assert mode[root] & 0o077 == 0o011  # others may pass through, not list
    for path, bits in mode.items():
        if root / "source" in [path, *path.parents]:
            assert bits & 0o077 == 0, (path, oct(bits))
        elif root / "venv" in [path, *path.parents]:
            wanted = 0o055 if path.is_dir() else 0o044  # folders listed and passed, files read
            assert bits & wanted == wanted and bits & 0o022 == 0, (path, oct(bits))
    assert mode[root / "venv" / "bin" / "python"] & 0o011 == 0o011  # executable by all


@pytest.mark.parametrize("best, chosen", [("namespaces", "auto"), ("process", "process")])
def test_gradescope_run_names_the_process_level_when_bubblewrap_cannot_run(
    tmp_path, monkeypatch, best, chosen
):
    """As root without bubblewrap, ``auto`` refuses to grade: ``process`` must be asked for."""
    asked = []

    def fake_run_checks(file, **options):
        asked.append(options["settings"].isolation)
        return Report(submission=str(file), tests=())

    monkeypatch.setattr(gradescope, "best_level", lambda: best)
    monkeypatch.setattr(gradescope, "run_checks", fake_run_checks)
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / TOY.filename).write_text("")
    assert gradescope.run(lesson=TOY, root=tmp_path) == 0
    assert asked == [chosen]
    assert json.loads((tmp_path / "results" / "results.json").read_text())["score"] == 0
    assert stat.S_IMODE((tmp_path / "results").stat().st_mode) == 0o700


def _check(name: str, score: float, max_score: float, visibility: Visibility) -> TestResult:
    status = Status.PASSED if score == max_score else Status.FAILED
    return TestResult(name, "split_heads", max_score, score, status, visibility)


def test_gradescope_summary_counts_only_the_checks_students_can_see():
    """A hidden check that failed must not show in the visible summary before grades are published."""
    report = Report(
        submission="attention.py",
        tests=(
            _check("split_shape", 3, 3, Visibility.VISIBLE),
            _check("head_h_holds_column_block_h", 8, 11, Visibility.VISIBLE),
            _check("secret", 0, 6, Visibility.HIDDEN),
        ),
    )
    results = to_gradescope(report, execution_time=1.0)
    lines = results["output"].splitlines()
    assert lines[0] == "split_heads: 11/14 on the checks you can see"
    assert "head_h_holds_column_block_h" in lines[1] and "secret" not in results["output"]
    assert results["score"] == 11  # the real total: Gradescope hides it while a test is hidden
    assert [t["visibility"] for t in results["tests"]] == ["visible", "visible", "after_published"]


def test_run_autograder_never_leaves_an_earlier_results_json(tmp_path, bundle):
    """The grader cannot start: the fallback is written, not a results.json found on disk."""
    root = autograder_root(tmp_path, bundle, {TOY.filename: TOY.solution.read_bytes()})
    (root / "results").mkdir()
    (root / "results" / "results.json").write_text('{"score": 100, "tests": []}')
    results = run_autograder(root, python="/bin/false")
    assert results["score"] == 0 and "could not start" in results["output"]


def test_run_autograder_finds_the_file_in_a_subfolder(tmp_path, bundle):
    root = autograder_root(tmp_path, bundle, {f"hw/{TOY.filename}": TOY.solution.read_bytes()})
    assert run_autograder(root)["score"] == FULL


def test_run_autograder_accepts_a_notebook(tmp_path, bundle, buggy_graded):
    code = BUGGY.read_text()
    notebook = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": "My layer norm homework"},
            {"cell_type": "code", "metadata": {}, "source": code, "outputs": [], "execution_count": None},
        ],
    }
    root = autograder_root(tmp_path, bundle, {"homework.ipynb": json.dumps(notebook).encode()})
    assert run_autograder(root)["score"] == buggy_graded["score"]


def test_github_classroom_result_matches_grade(tmp_path):
    output = tmp_path / "github_output"
    output.write_text("earlier=1\n")
    submission = HIDDEN_BUG  # it fails a hidden check
    done = python(
        "grade",
        str(submission),
        *ON_TOY,
        "--format",
        "github",
        "--github-output",
        env=dict(os.environ, GITHUB_OUTPUT=str(output)),
    )
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    lines = output.read_text().splitlines()
    assert lines[0] == "earlier=1" and lines[1].startswith("result=")
    result = json.loads(base64.b64decode(lines[1].removeprefix("result=")))
    assert result == printed
    assert result["version"] == 3 and result["status"] == "fail"
    expected = grade_json(submission)
    # what the Classroom reporter adds up: the tests' scores against max_score
    assert sum(t["score"] for t in result["tests"]) == expected["score"]
    assert result["max_score"] == expected["max_score"]
    assert {t["status"] for t in result["tests"]} <= {"pass", "fail", "error"}
    hidden_failures = [t for t in result["tests"] if t["message"] == "failed (details are hidden)"]
    assert hidden_failures, "a failing hidden check shows no details"


def test_github_output_needs_the_variable():
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_OUTPUT"}
    done = python("grade", str(TOY.solution), *ON_TOY, "--format", "github", "--github-output", env=env)
    assert done.returncode == 2 and "GITHUB_OUTPUT" in done.stderr
