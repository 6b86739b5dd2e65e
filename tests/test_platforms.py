"""Gradescope and GitHub Classroom, reproduced from their published formats and layouts."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import zipfile

import pytest

from grader import paths

from .support import compose, python

BUGGY = paths.GALLERY / "typical-mistakes" / "attention.py"


def grade_json(path) -> dict:
    done = python("grade", str(path), "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("gradescope") / "autograder.zip"
    done = python("gradescope-bundle", str(out))
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


def run_autograder(root) -> dict:
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), GRADER_PYTHON=sys.executable)
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
    assert "tests/checks/hidden/test_mha_forward_hidden.py" in names and "solutions/attention.py" in names
    assert "pip install -e /autograder/source" in setup


def test_run_autograder_writes_the_same_scores_as_grade(tmp_path, bundle):
    root = autograder_root(tmp_path, bundle, {"attention.py": BUGGY.read_bytes()})
    results = run_autograder(root)
    expected = grade_json(BUGGY)
    assert results["score"] == expected["score"]
    assert [t["score"] for t in results["tests"]] == [t["score"] for t in expected["tests"]]
    assert sum(t["score"] for t in results["tests"]) == results["score"]
    assert results["stdout_visibility"] == "hidden"
    assert {t["status"] for t in results["tests"]} <= {"passed", "failed"}
    visibility = {t["name"]: t["visibility"] for t in results["tests"]}
    assert visibility["mha_forward: matches a head by head computation"] == "after_published"
    assert visibility["split_heads: split shape"] == "visible"
    assert isinstance(results["execution_time"], (int, float))


@pytest.mark.parametrize(
    "files, fragment",
    [
        ({}, "No attention.py"),
        ({"notes/readme.txt": b"hello"}, "No attention.py"),
        ({"attention.py": b"def split_heads(x n_heads):\n"}, "Python cannot read your file"),
    ],
)
def test_run_autograder_always_writes_results(tmp_path, bundle, files, fragment):
    root = autograder_root(tmp_path, bundle, files)
    results = run_autograder(root)
    assert results["score"] == 0
    assert fragment in results["output"]


def test_run_autograder_finds_attention_py_in_a_subfolder(tmp_path, bundle):
    root = autograder_root(tmp_path, bundle, {"hw/attention.py": paths.SOLUTION.read_bytes()})
    assert run_autograder(root)["score"] == 100


def test_run_autograder_accepts_a_notebook(tmp_path, bundle):
    code = BUGGY.read_text()
    notebook = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": "My attention homework"},
            {"cell_type": "code", "metadata": {}, "source": code, "outputs": [], "execution_count": None},
        ],
    }
    root = autograder_root(tmp_path, bundle, {"homework.ipynb": json.dumps(notebook).encode()})
    assert run_autograder(root)["score"] == grade_json(BUGGY)["score"]


def test_github_classroom_result_matches_grade(tmp_path):
    output = tmp_path / "github_output"
    output.write_text("earlier=1\n")
    submission = compose(paths.ROOT / "tests" / "catalog" / "bugs" / "mha_no_scaling.py", tmp_path / "s")
    done = python(
        "grade",
        str(submission),
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
    done = python("grade", str(paths.SOLUTION), "--format", "github", "--github-output", env=env)
    assert done.returncode == 2 and "GITHUB_OUTPUT" in done.stderr
