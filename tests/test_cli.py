"""The command line as students, instructors and CI use it."""

from __future__ import annotations

import json
import os

import pytest

from .support import ATTENTION, ON_TOY, TOY, TOY_BUGGY, python

# The command line's workings are the grader's, not a lesson's: they are tested on the toy lesson.
TYPICAL = ATTENTION.gallery / "typical-mistakes" / "attention.py"
TEST_KEYS = {"name", "exercise", "score", "max_score", "status", "visibility", "feedback"}


def test_grade_json_is_the_only_thing_on_stdout():
    done = python("grade", str(TOY.solution), *ON_TOY, "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["score"] == report["max_score"] == 14  # the toy lesson's points, all of them
    assert set(report["exercises"]) == set(TOY.exercises)
    assert all(TEST_KEYS <= set(t) for t in report["tests"])
    assert {t["status"] for t in report["tests"]} == {"passed"}
    assert "score: 14/14" in done.stderr


def test_grade_the_untouched_stubs_gives_zero_and_exit_0():
    done = python("grade", str(TOY.stubs), *ON_TOY, "--format", "json")
    assert done.returncode == 0
    report = json.loads(done.stdout)
    assert report["score"] == 0
    assert all(t["status"] == "error" for t in report["tests"])
    assert all("not written yet" in t["feedback"] for t in report["tests"])


def test_grade_a_folder_and_write_a_file(tmp_path):
    out = tmp_path / "report.txt"
    done = python("grade", str(TOY_BUGGY.parent), *ON_TOY, "-o", str(out), "--only", "center_tokens")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    text = out.read_text()
    assert "center_tokens" in text and "layer_norm" not in text and "Total" in text


def test_missing_paths_get_one_line_and_no_traceback(tmp_path):
    for target, fragment in [
        (tmp_path / "nope.py", "does not exist"),
        (tmp_path, "folder without toy.py"),
    ]:
        done = python("grade", str(target), "--format", "json", *ON_TOY)
        assert done.returncode == 2
        assert done.stdout == ""
        assert fragment in done.stderr
        assert "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


def test_an_enormous_file_is_refused_with_its_size(tmp_path):
    """A file of megabytes (pasted data, a log) is not read in, compiled or run: score 0, and
    the problem says how large it is and what is allowed."""
    (tmp_path / TOY.filename).write_text(TOY.solution.read_text() + "# padding\n" * 500_000)
    for command in ("grade", "check"):
        done = (
            python(command, str(tmp_path), *ON_TOY, "--format", "json")
            if command == "grade"
            else python(command, str(tmp_path), *ON_TOY)
        )
        assert "Traceback" not in done.stderr
        if command == "grade":
            report = json.loads(done.stdout)
            assert report["score"] == 0
            assert "MiB" in report["problem"] and "at most 4 MiB" in report["problem"]
        else:
            assert done.returncode == 1
            assert "at most 4 MiB" in done.stdout


def test_check_passes_on_the_reference_and_explains_the_stubs():
    done = python("check", str(TOY.solution), *ON_TOY)
    assert done.returncode == 0, done.stdout
    assert "Every check passes" in done.stdout
    done = python("check", *ON_TOY)  # default: the course's exercises/toy.py
    assert done.returncode == 1
    assert "`center_tokens` is not written yet" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr
    assert "practice score" not in done.stdout  # the course holds the reference: no release's note


def test_check_names_the_smallest_input_and_the_students_line():
    # attention: a smallest input of several arguments (the toy lesson's visible checks draw one)
    done = python("check", str(TYPICAL), "--only", "split_heads")
    assert done.returncode == 1
    assert "Smallest input found:" in done.stdout
    assert "x = np." in done.stdout and "n_heads = " in done.stdout
    assert "Traceback" not in done.stdout


def test_bad_options_are_usage_errors():
    done = python("grade", str(TOY.solution), *ON_TOY, "--only", "center_token")
    assert done.returncode == 2
    assert "unknown exercise 'center_token'" in done.stderr
    done = python("grade", str(TOY.solution), *ON_TOY, "--call-timeout", "0")
    assert done.returncode == 2


def test_gallery_grades_the_bundled_submissions():
    # attention: its gallery holds a file Python cannot read (the toy gallery does not)
    done = python("gallery", "--lesson", "attention")
    assert done.returncode == 0, done.stderr
    rows = {line.split("  ")[0]: line for line in done.stdout.splitlines()}
    assert rows["reference solution"].rstrip().endswith("100/100")
    assert rows["untouched stubs"].rstrip().endswith("0/100")
    assert "syntax-error: Python cannot read your file" in done.stdout


def test_exercises_check_reports_up_to_date():
    done = python("exercises", "--check")
    assert done.returncode == 0, done.stderr


#: Appended to the toy reference: at load, it notes the process's threads and BLAS setting.
THREADS_PROBE = """
import os as _os

with open(_os.environ["GRADER_TEST_PROBE"], "w") as _probe:
    _probe.write(f"{len(_os.listdir('/proc/self/task'))} {_os.environ.get('OPENBLAS_NUM_THREADS')}")
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="threads are counted in Linux's /proc")
def test_the_grader_runs_numpy_on_one_thread(tmp_path):
    """``python -m grader`` sets numpy's linear algebra to one thread before numpy is imported, as
    in the sandbox: the same numbers on every machine, and no pool of threads spinning. A file
    checked in the grader's own process sees a process of one thread."""
    student = tmp_path / TOY.filename
    student.write_text(TOY.solution.read_text() + THREADS_PROBE)
    probe = tmp_path / "probe.txt"
    env = {**os.environ, "GRADER_TEST_PROBE": str(probe), "OPENBLAS_NUM_THREADS": "2"}
    done = python("check", str(student), *ON_TOY, env=env)
    assert done.returncode == 0, done.stderr
    assert probe.read_text() == "1 1"
