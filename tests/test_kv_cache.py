"""The second lesson, kv_cache: it works from outside the project, every command takes it, and
its student release holds no line of either lesson's solution. Its catalog is graded with the
first lesson's, by tests/test_catalog.py, which finds every lesson's catalog.

No line of grader/ knows this lesson: it is only its files (tests/test_lessons.py)."""

from __future__ import annotations

import json
import shutil
import zipfile

from grader.core import solution
from grader.formats.notebook import fill_solutions, reference_parts, write_notebook

from .support import ATTENTION, KV_CACHE, compose, grader_outside, python
from .test_platforms import autograder_root, run_autograder

CATALOG = KV_CACHE.catalog


def test_the_lesson_is_the_second_of_the_course():
    assert KV_CACHE.exercises == ("causal_mask", "extend_cache", "decode_step", "repeat_kv", "gqa_forward")
    assert KV_CACHE.root == ATTENTION.root
    # the hidden oracle is the first lesson's reference itself, not a copy of it
    link = KV_CACHE.hidden / "first_lesson.py"
    assert link.is_symlink() and link.resolve() == ATTENTION.solution.resolve()


def test_check_and_grade_work_from_outside_the_project(tmp_path):
    """A student's kv_cache.py in a folder of its own: `check` (in the course the grader comes
    from) and `grade` (the course named by --course) find the lesson by the file's name, and the
    hidden checks use the first lesson's reference on the trusted side."""
    mine = tmp_path / "ada"
    mine.mkdir()
    shutil.copy(CATALOG / "correct" / "gqa_loop_over_groups.py", tmp_path / "entry.py")
    compose(tmp_path / "entry.py", mine, KV_CACHE)
    course = str(KV_CACHE.root)
    checked = grader_outside("check", "kv_cache.py", cwd=mine)  # the course the grader comes from
    assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]
    assert "gqa_forward" in checked.stdout and "Every check passes" in checked.stdout
    graded = grader_outside("grade", str(mine), "--course", course, "--format", "json", cwd=tmp_path)
    assert graded.returncode == 0, graded.stderr[-2000:]
    report = json.loads(graded.stdout)
    assert report["score"] == report["max_score"] == 100
    hidden = [t for t in report["tests"] if t["visibility"] == "hidden"]
    assert {t["exercise"] for t in hidden} == {"decode_step", "gqa_forward"}
    shutil.copy(KV_CACHE.stubs, mine / "kv_cache.py")
    stubs = grader_outside("grade", "kv_cache.py", "--course", course, "--format", "json", cwd=mine)
    assert json.loads(stubs.stdout)["score"] == 0


def test_the_release_holds_no_line_of_either_solution(tmp_path):
    """The stubs give the first lesson's split_heads and merge_heads in words of their own."""
    out = tmp_path / "kv-release"
    done = python("release", str(out), "--lesson", "kv_cache")
    assert done.returncode == 0, done.stderr
    assert (out / "exercises" / "kv_cache.py").is_file()
    assert not (out / "tests" / "checks" / "kv_cache" / "hidden").exists()
    secret = set(solution.solution_lines(KV_CACHE.solution.read_text()))
    secret |= set(solution.solution_lines(ATTENTION.solution.read_text()))
    for file in (p for p in out.rglob("*") if p.is_file()):
        lines = {line.strip() for line in file.read_text(errors="replace").splitlines()}
        assert not (secret & lines), f"{file.relative_to(out)} holds {sorted(secret & lines)}"
    # inside the release: the public checks fail on the stubs and pass on the reference
    stubs = grader_outside("check", cwd=out)
    assert stubs.returncode == 1 and "not written yet" in stubs.stdout, stubs.stdout[-2000:] + stubs.stderr
    shutil.copy(KV_CACHE.solution, out / "exercises" / "kv_cache.py")
    done = grader_outside("check", cwd=out)
    assert done.returncode == 0 and "Every check passes" in done.stdout, done.stdout[-2000:] + done.stderr


TYPICAL = KV_CACHE.gallery / "typical-mistakes" / "kv_cache.py"


def test_every_command_takes_the_lesson(tmp_path):
    """batch, a Gradescope bundle (whose hidden oracle is the first lesson's reference, copied
    from the link), GitHub Classroom's format and an nbgrader assignment of its own, each giving
    the scores `grade` gives."""
    graded = python("grade", str(TYPICAL), "--format", "json")
    assert graded.returncode == 0, graded.stderr[-2000:]
    expected = json.loads(graded.stdout)
    assert 0 < expected["score"] < 100

    klass = tmp_path / "class"
    for student, source in (("ada", KV_CACHE.solution), ("bob", TYPICAL), ("cy", KV_CACHE.stubs)):
        (klass / student).mkdir(parents=True)
        shutil.copy(source, klass / student / "kv_cache.py")
    out = tmp_path / "grades" / "gradebook.csv"
    done = python("batch", str(klass), "--lesson", "kv_cache", "--out", str(out), "--jobs", "1")
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line.split(",") for line in out.read_text().splitlines()]
    assert rows[0] == ["student", "score", "max_score", *KV_CACHE.exercises, "status"]
    assert [r[:3] for r in rows[1:]] == [
        ["ada", "100", "100"],
        ["bob", str(expected["score"]), "100"],
        ["cy", "0", "100"],
    ]

    bundle = tmp_path / "kv_cache.zip"
    done = python("gradescope-bundle", str(bundle), "--lesson", "kv_cache")
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(bundle) as z:
        oracle = z.read("tests/checks/kv_cache/hidden/first_lesson.py")
        names = set(z.namelist())
    assert oracle == ATTENTION.solution.read_bytes()  # the file itself, not a link
    assert "solutions/kv_cache.py" in names and "tests/checks/kv_cache/diagnoses.py" in names
    root = autograder_root(tmp_path, bundle, {"kv_cache.py": TYPICAL.read_bytes()})
    assert run_autograder(root)["score"] == expected["score"]

    github = python("grade", str(TYPICAL), "--format", "github")
    assert github.returncode == 0, github.stderr
    assert sum(t["score"] for t in json.loads(github.stdout)["tests"]) == expected["score"]

    course = tmp_path / "nbgrader"
    done = python("nbgrader-course", str(course), "--lesson", "kv_cache")
    assert done.returncode == 0, done.stderr
    notebook = json.loads((course / "source" / "kv_cache" / "kv_cache.ipynb").read_text())
    ids = [c["metadata"].get("nbgrader", {}).get("grade_id") for c in notebook["cells"]]
    assert set(KV_CACHE.exercises) <= set(ids)
    filled = fill_solutions(notebook, reference_parts(TYPICAL.read_text(), KV_CACHE.exercises)[1])
    write_notebook(filled, tmp_path / "nb" / "kv_cache.ipynb")
    as_notebook = python("grade", str(tmp_path / "nb" / "kv_cache.ipynb"), "--format", "json")
    assert json.loads(as_notebook.stdout)["score"] == expected["score"], as_notebook.stderr[-2000:]
