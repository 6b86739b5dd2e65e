"""Files made to break the grader rather than to pass: the compiler's own limits, a notebook
that is slow to inspect, folder names and links in a class. Each gets a clear line, never a
traceback, a hang, or another student's report."""

from __future__ import annotations

import hashlib
import json
import os
import shutil

from .support import ATTENTION, ON_TOY, TOY, grader_outside, python

#: Seconds after which a command that should take a few counts as hung.
HUNG = 180


def test_a_file_too_deep_for_the_compiler_is_the_files_problem(tmp_path):
    """An attribute chain a million long makes Python's compiler raise RecursionError (not a
    SyntaxError): sandboxed or not, the file scores 0 with a line saying why, and nothing
    blames the grader or prints a traceback."""
    folder = tmp_path / "deep"
    folder.mkdir()
    (folder / "attention.py").write_text(
        ATTENTION.solution.read_text() + "\n_deep = a" + ".b" * 1_000_000 + "\n"
    )
    for isolation in ("auto", "none"):
        done = grader_outside(
            "grade", str(folder), "--format", "json", "--isolation", isolation, cwd=tmp_path, timeout=HUNG
        )
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
        report = json.loads(done.stdout)
        assert report["score"] == 0 and "nested or chained too deeply" in report["problem"], report["problem"]
        assert "bug in the grader" not in done.stdout
    done = grader_outside("check", str(folder / "attention.py"), cwd=tmp_path, timeout=HUNG)
    assert done.returncode == 1 and "Traceback" not in done.stdout + done.stderr
    assert "nested or chained too deeply" in " ".join(done.stdout.split())  # wrapped to a width


def test_a_notebook_slow_to_inspect_holds_up_nobody(tmp_path):
    """A notebook whose JSON opens 64 brackets and then a string that never closes, full of
    escaped quotes: inspecting its nesting takes time in proportion to its size, so the batch
    grades everyone and lists the notebook as broken (once, a check took the square)."""
    klass = tmp_path / "class"
    (klass / "a-slow").mkdir(parents=True)
    (klass / "a-slow" / "attention.ipynb").write_text("[" * 64 + '"' + '\\"' * 200_000 + "{")
    (klass / "b-honest").mkdir()
    shutil.copy(ATTENTION.solution, klass / "b-honest" / "attention.py")
    done = grader_outside(
        "batch",
        "--lesson",
        "attention",
        "class",
        "--out",
        "grades/gradebook.csv",
        "--jobs",
        "1",
        cwd=tmp_path,
        timeout=HUNG,
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    reports = tmp_path / "grades" / "gradebook_reports"
    assert json.loads((reports / "b-honest.json").read_text())["score"] == 100
    assert "not a readable notebook" in (reports / "a-slow.txt").read_text()


def test_a_linked_student_folder_is_not_followed(tmp_path):
    """A student folder that is a symbolic link (to the reference's folder, here) is listed,
    never graded."""
    klass = tmp_path / "class"
    klass.mkdir()
    os.symlink(ATTENTION.solution.parent, klass / "mallory")
    done = python(
        "batch",
        "--lesson",
        "attention",
        str(klass),
        "--out",
        str(tmp_path / "gradebook.csv"),
        "--max-examples",
        "2",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = (tmp_path / "gradebook_reports" / "mallory.txt").read_text()
    assert "symbolic link" in report and "100" not in report


def test_two_ids_never_share_a_report(tmp_path):
    """An id that needed changing to become a file name ('a b' becomes 'a_b-<hash>') and a
    second id spelled exactly like that file name each keep a report of their own."""
    twin = "a_b-" + hashlib.sha256(b"a b").hexdigest()[:8]
    klass = tmp_path / "class"
    for student, source in (("a b", TOY.solution), (twin, TOY.stubs)):
        (klass / student).mkdir(parents=True)
        shutil.copy(source, klass / student / TOY.filename)
    done = python(
        "batch", *ON_TOY, str(klass), "--out", str(tmp_path / "gradebook.csv"), "--max-examples", "2"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    reports = sorted((tmp_path / "gradebook_reports").glob("*.json"))
    assert len(reports) == 2, reports
    scores = sorted(json.loads(p.read_text())["score"] for p in reports)
    assert scores == [0, 14]
