"""The command line as students, instructors and CI use it."""

from __future__ import annotations

import json

from .support import ATTENTION, python

TYPICAL = ATTENTION.gallery / "typical-mistakes" / "attention.py"
TEST_KEYS = {"name", "exercise", "score", "max_score", "status", "visibility", "feedback"}


def test_grade_json_is_the_only_thing_on_stdout():
    done = python("grade", str(ATTENTION.solution), "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["score"] == report["max_score"] == 100
    assert set(report["exercises"]) == set(ATTENTION.exercises)
    assert all(TEST_KEYS <= set(t) for t in report["tests"])
    assert {t["status"] for t in report["tests"]} == {"passed"}
    assert "score: 100/100" in done.stderr


def test_grade_the_untouched_stubs_gives_zero_and_exit_0():
    done = python("grade", str(ATTENTION.stubs), "--format", "json")
    assert done.returncode == 0
    report = json.loads(done.stdout)
    assert report["score"] == 0
    assert all(t["status"] == "error" for t in report["tests"])
    assert all("not written yet" in t["feedback"] for t in report["tests"])


def test_grade_a_folder_and_write_a_file(tmp_path):
    out = tmp_path / "report.txt"
    done = python("grade", str(TYPICAL.parent), "-o", str(out), "--only", "split_heads")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    text = out.read_text()
    assert "split_heads" in text and "mha_forward" not in text and "Total" in text


def test_missing_paths_get_one_line_and_no_traceback(tmp_path):
    for target, fragment in [
        (tmp_path / "nope.py", "does not exist"),
        (tmp_path, "folder without attention.py"),
    ]:
        done = python("grade", str(target), "--format", "json", "--lesson", "attention")
        assert done.returncode == 2
        assert done.stdout == ""
        assert fragment in done.stderr
        assert "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


def test_an_enormous_file_is_refused_with_its_size(tmp_path):
    """A file of megabytes (pasted data, a log) is not read in, compiled or run: score 0, and
    the problem says how large it is and what is allowed."""
    (tmp_path / "attention.py").write_text(ATTENTION.solution.read_text() + "# padding\n" * 500_000)
    for command in ("grade", "check"):
        done = (
            python(command, str(tmp_path), "--format", "json")
            if command == "grade"
            else python(command, str(tmp_path))
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
    done = python("check", str(ATTENTION.solution))
    assert done.returncode == 0, done.stdout
    assert "Every check passes" in done.stdout
    done = python("check", "--lesson", "attention")  # default: exercises/attention.py
    assert done.returncode == 1
    assert "`split_heads` is not written yet" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr
    assert "practice score" not in done.stdout  # the course holds the reference: no release's note


def test_check_names_the_smallest_input_and_the_students_line():
    done = python("check", str(TYPICAL), "--only", "split_heads")
    assert done.returncode == 1
    assert "Smallest input found:" in done.stdout
    assert "x = np." in done.stdout and "n_heads = " in done.stdout
    assert "Traceback" not in done.stdout


def test_bad_options_are_usage_errors():
    done = python("grade", str(ATTENTION.solution), "--only", "split_head")
    assert done.returncode == 2
    assert "unknown exercise 'split_head'" in done.stderr
    done = python("grade", str(ATTENTION.solution), "--call-timeout", "0")
    assert done.returncode == 2


def test_gallery_grades_the_bundled_submissions():
    done = python("gallery", "--lesson", "attention")
    assert done.returncode == 0, done.stderr
    rows = {line.split("  ")[0]: line for line in done.stdout.splitlines()}
    assert rows["reference solution"].rstrip().endswith("100/100")
    assert rows["untouched stubs"].rstrip().endswith("0/100")
    assert "syntax-error: Python cannot read your file" in done.stdout


def test_exercises_check_reports_up_to_date():
    done = python("exercises", "--check")
    assert done.returncode == 0, done.stderr
