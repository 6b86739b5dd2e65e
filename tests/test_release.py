"""The student release: everything a student needs, nothing of the solution."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from grader.core import solution

from .support import ATTENTION, python


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    out = tmp_path_factory.mktemp("release") / "attention-exercises"
    done = python("release", str(out), "--lesson", "attention")
    assert done.returncode == 0, done.stderr
    return out


def run_in(folder, *args):
    return subprocess.run([sys.executable, *args], cwd=folder, capture_output=True, text=True, timeout=600)


def test_the_release_holds_no_line_of_the_solution(release):
    secret = set(solution.solution_lines(ATTENTION.solution.read_text()))
    assert len(secret) > 15
    for file in (p for p in release.rglob("*") if p.is_file()):
        lines = {line.strip() for line in file.read_text(errors="replace").splitlines()}
        assert not (secret & lines), f"{file.relative_to(release)} holds {sorted(secret & lines)}"


def test_the_release_holds_what_students_need_and_no_more(release):
    files = {p.relative_to(release).as_posix() for p in release.rglob("*") if p.is_file()}
    for needed in [
        "exercises/attention.py",
        "README.md",
        ".github/workflows/classroom.yml",
        "pyproject.toml",
        "grader/__main__.py",
        "tests/checks/attention/test_mha_forward.py",
    ]:
        assert needed in files
    assert not any(
        f.startswith(("solutions/", "tests/checks/attention/hidden/", "tests/catalog/", "examples/"))
        for f in files
    )
    # what needs the reference to mean anything stays with it: the known mistakes and the pictures
    assert not {"tests/checks/attention/diagnoses.py", "tests/checks/attention/pictures.py"} & files
    assert "reporters/github" not in files  # sanity: paths are relative
    workflow = (release / ".github/workflows/classroom.yml").read_text()
    assert "--github-summary --github-output" in workflow and "--fail-under" not in workflow


def test_public_checks_fail_on_the_stubs_and_pass_with_the_reference(release, tmp_path):
    copy = tmp_path / "student"
    shutil.copytree(release, copy)
    stubs = run_in(copy, "-m", "grader", "check")
    assert stubs.returncode == 1 and "not written yet" in stubs.stdout
    assert run_in(copy, "-m", "pytest", "-q", "-p", "no:cacheprovider").returncode == 1
    shutil.copy(ATTENTION.solution, copy / "exercises" / "attention.py")
    done = run_in(copy, "-m", "grader", "check")
    assert done.returncode == 0, done.stdout[-2000:]
    assert "Every check passes" in done.stdout
    tests = run_in(copy, "-m", "pytest", "-q", "-p", "no:cacheprovider")
    assert tests.returncode == 0, tests.stdout[-2000:]


def test_release_refuses_a_folder_that_is_not_empty(tmp_path):
    (tmp_path / "x").write_text("keep me")
    done = python("release", str(tmp_path), "--lesson", "attention")
    assert done.returncode == 2 and "not empty" in done.stderr
