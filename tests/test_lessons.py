"""A lesson is its files: the grader learns each lesson from its course and names none.

The toy lesson (tests/courses/toy) is a course of its own that no line of
``grader/`` knows; it goes through every command here. The project's own
lesson goes through them in the other test files.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grader.core.intake import IntakeError
from grader.core.lesson import Course, LessonError, find_course
from grader.formats.notebook import fill_solutions, reference_parts, write_notebook

from .support import ATTENTION, ROOT, TOY_COURSE
from .test_platforms import autograder_root, run_autograder

TOY = Course.at(TOY_COURSE).lesson("toy")
FORGETS_EPS = TOY.gallery / "forgets-eps" / "toy.py"  # loses the 2 points of the hidden check


def grader_in(cwd: Path, *args: str, timeout: float = 600, **kwargs) -> subprocess.CompletedProcess:
    """``python -m grader ARGS`` started in ``cwd``."""
    return subprocess.run(
        [sys.executable, "-m", "grader", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,
    )


def run_in(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def one_line_error(done: subprocess.CompletedProcess, fragment: str) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert fragment in done.stderr, done.stderr


# ----------------------------------------------------------------------------- the lesson model


def test_a_lesson_is_learnt_from_its_files():
    # every reference with a folder of checks is a lesson, and nothing else is (found, not listed)
    found = tuple(
        sorted(
            p.stem for p in (ROOT / "solutions").glob("*.py") if (ROOT / "tests" / "checks" / p.stem).is_dir()
        )
    )
    assert Course.at(ROOT).names == found and {"attention", "kv_cache"} <= set(found)
    assert ATTENTION.exercises == ("apply_causal_mask", "split_heads", "merge_heads", "mha_forward")
    assert Course.at(TOY_COURSE).names == ("toy",)
    # token_mean is given (it holds no solution block): no exercise
    assert TOY.exercises == ("center_tokens", "layer_norm")
    assert TOY.filename == "toy.py" and TOY.stubs == TOY_COURSE.resolve() / "exercises" / "toy.py"
    assert TOY.hidden == TOY.checks / "hidden" and TOY.hidden.is_dir()
    assert not TOY.catalog.exists() and TOY.gallery.is_dir()  # both optional


def test_no_file_of_the_grader_names_a_lesson_one_of_its_functions_or_its_file():
    lessons = [*Course.at(ROOT).lessons, *Course.at(TOY_COURSE).lessons]
    names = sorted({name for lesson in lessons for name in (lesson.name, *lesson.exercises)})
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b", re.IGNORECASE)
    for lesson in lessons:  # the search finds the names where they are
        assert pattern.search(lesson.solution.read_text(encoding="utf-8"))
    hits = []
    for file in sorted((ROOT / "grader").rglob("*")):
        if file.is_file() and "__pycache__" not in file.parts:
            for number, line in enumerate(file.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                if pattern.search(line):
                    hits.append(f"{file.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not hits, "grader/ names a lesson:\n" + "\n".join(hits)


@pytest.fixture
def two_lessons(tmp_path) -> Path:
    """A course with the toy lesson and a twin of it that has no hidden check (12 points, not 14)."""
    course = tmp_path / "course"
    shutil.copytree(TOY_COURSE, course, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(course / "solutions" / "toy.py", course / "solutions" / "twin.py")
    shutil.copy(course / "exercises" / "toy.py", course / "exercises" / "twin.py")
    shutil.copytree(course / "tests" / "checks" / "toy", course / "tests" / "checks" / "twin")
    shutil.rmtree(course / "tests" / "checks" / "twin" / "hidden")
    return course


def test_the_lesson_of_a_submission_is_the_one_it_is_named_after(two_lessons, tmp_path):
    course = Course.at(two_lessons)
    assert course.names == ("toy", "twin")
    (tmp_path / "ann").mkdir()
    (tmp_path / "ann" / "twin.py").write_text("")
    (tmp_path / "bob").mkdir()
    (tmp_path / "bob" / "toy.ipynb").write_text("")
    assert course.choose(None, two_lessons / "solutions" / "twin.py").name == "twin"
    assert course.choose(None, tmp_path / "ann").name == "twin"
    assert course.choose(None, tmp_path / "bob").name == "toy"
    assert course.choose(None, tmp_path / "bob" / "toy.ipynb").name == "toy"
    assert course.choose("toy", tmp_path / "ann").name == "toy"  # --lesson wins
    (tmp_path / "elsewhere.py").write_text("def unrelated():\n    pass\n")
    with pytest.raises(LessonError, match="which lesson.*--lesson NAME; its lessons: toy, twin"):
        course.choose(None, tmp_path / "elsewhere.py")
    with pytest.raises(LessonError, match="no lesson 'nope'.*its lessons: toy, twin"):
        course.choose("nope")
    assert Course.at(TOY_COURSE).choose(None, tmp_path / "elsewhere.py") is not None  # the only one
    # the twin's functions are the toy's: a file of another name that defines them is either's
    (tmp_path / "mine.py").write_text((two_lessons / "solutions" / "toy.py").read_text())
    with pytest.raises(LessonError, match="mine.py defines functions of toy and twin alike"):
        course.choose(None, tmp_path / "mine.py")


def test_a_missing_submission_is_called_missing_before_any_question_of_lesson(two_lessons, tmp_path):
    course = Course.at(two_lessons)
    with pytest.raises(IntakeError, match="nowhere.py does not exist$"):
        course.choose(None, tmp_path / "nowhere.py")
    (tmp_path / "twin.py").write_text("")
    with pytest.raises(
        IntakeError, match=r"Twin.py does not exist \(there is .*twin.py: the name must match"
    ):
        course.choose(None, tmp_path / "Twin.py")
    done = grader_in(two_lessons, "check", str(tmp_path / "nowhere.py"))
    one_line_error(done, "nowhere.py does not exist")
    assert "which lesson" not in done.stderr


def test_the_course_can_name_its_default_lesson(two_lessons, tmp_path):
    """``[tool.grader] lesson`` in the course's pyproject.toml answers when nothing else does;
    a file's own name, or its functions, still come first."""
    course = Course.at(two_lessons)
    assert course.default() is None
    (two_lessons / "pyproject.toml").write_text('[project]\nname = "c"\n\n[tool.grader]\nlesson = "twin"\n')
    course = Course.at(two_lessons)
    assert course.default().name == "twin" and course.choose().name == "twin"
    assert course.choose(None, two_lessons / "solutions" / "toy.py").name == "toy"
    done = grader_in(two_lessons, "grade", "--format", "json", "exercises/twin.py")
    assert done.returncode == 0, done.stderr
    (two_lessons / "pyproject.toml").write_text('[tool.grader]\nlesson = "nope"\n')
    with pytest.raises(LessonError, match="names 'nope' as the default lesson.*its lessons: toy, twin"):
        Course.at(two_lessons).choose()
    (two_lessons / "pyproject.toml").write_text("[tool.grader\nlesson = ")
    with pytest.raises(LessonError, match="pyproject.toml could not be read"):
        Course.at(two_lessons).choose()
    (two_lessons / "pyproject.toml").write_text("[tool.grader]\nlesson = 3\n")
    one_line_error(grader_in(two_lessons, "gallery"), "lesson must be a lesson's name in quotes")


def test_commands_take_the_lesson_from_the_file_name_or_say_which_there_are(two_lessons, tmp_path):
    for name, points in (("twin", 12), ("toy", 14)):
        done = grader_in(two_lessons, "grade", f"solutions/{name}.py", "--format", "json")
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["score"] == report["max_score"] == points
    done = grader_in(two_lessons, "grade", "solutions/twin.py", "--lesson", "toy", "--format", "json")
    assert json.loads(done.stdout)["max_score"] == 14  # the hidden check of toy ran
    one_line_error(grader_in(two_lessons, "gallery"), "pass --lesson NAME; its lessons: toy, twin")
    one_line_error(grader_in(two_lessons, "check", "--lesson", "nope"), "no lesson 'nope'")
    one_line_error(grader_in(tmp_path, "check", "--course", str(tmp_path)), "is not a course")
    one_line_error(
        grader_in(two_lessons, "check", "--lesson", "toy", "--only", "split_heads"),
        "unknown exercise 'split_heads' in lesson toy; choose from center_tokens, layer_norm",
    )


def test_the_course_is_found_from_the_working_folder_upwards(tmp_path, monkeypatch):
    deep = TOY_COURSE / "tests" / "checks" / "toy"
    monkeypatch.chdir(deep)
    monkeypatch.delenv("GRADER_COURSE", raising=False)
    assert find_course().root == TOY_COURSE.resolve()
    assert find_course(ROOT).root == ROOT  # --course wins
    monkeypatch.setenv("GRADER_COURSE", str(ROOT))
    assert find_course().root == ROOT  # then the environment
    with pytest.raises(LessonError, match="is not a course"):
        find_course(tmp_path)


# ----------------------------------------------------------------------------- every command


def test_check_and_grade():
    stubs = grader_in(TOY_COURSE, "check")
    assert stubs.returncode == 1 and "`center_tokens` is not written yet" in stubs.stdout
    done = grader_in(TOY_COURSE, "check", "solutions/toy.py")
    assert done.returncode == 0 and "Every check passes" in done.stdout, done.stdout
    done = grader_in(TOY_COURSE, "grade", str(FORGETS_EPS), "--format", "json")
    report = json.loads(done.stdout)
    assert [e for e in report["exercises"]] == ["center_tokens", "layer_norm"]
    assert report["score"] == 12 and report["max_score"] == 14
    hidden = [t for t in report["tests"] if t["visibility"] == "hidden"]
    assert [(t["name"], t["status"]) for t in hidden] == [("layer_norm_uses_the_eps_given", "failed")]


def test_gallery():
    done = grader_in(TOY_COURSE, "gallery")
    assert done.returncode == 0, done.stderr
    header, _, *rows = done.stdout.splitlines()
    assert header.split() == ["submission", "center_tokens", "layer_norm", "total"]
    table = {row[:18].strip(): row.split()[-1] for row in rows if row.strip()}
    assert table == {
        "reference solution": "14/14",
        "untouched stubs": "0/14",
        "forgets-eps": "12/14",
        "off-by-mean": "11/14",
    }


def test_batch_gradebook_has_the_lessons_columns(tmp_path):
    klass = tmp_path / "class"
    for student, source in (("ada", TOY.solution), ("bob", FORGETS_EPS), ("cy", TOY.stubs)):
        (klass / student).mkdir(parents=True)
        shutil.copy(source, klass / student / "toy.py")
    out = tmp_path / "grades" / "gradebook.csv"
    out.parent.mkdir()
    done = grader_in(
        tmp_path, "batch", str(klass), "--out", str(out), "--course", str(TOY_COURSE), "--jobs", "2"
    )
    assert done.returncode == 0, done.stderr
    with out.open(newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["student", "score", "max_score", "center_tokens", "layer_norm", "status"]
    assert rows[1:] == [
        ["ada", "14", "14", "6", "8", "graded"],
        ["bob", "12", "14", "6", "6", "graded"],
        ["cy", "0", "14", "0", "0", "graded"],
    ]
    text = (out.parent / "gradebook_reports" / "bob.txt").read_text()
    assert re.search(r"layer_norm +6/8", text), text


def test_release_public_checks_fail_on_the_stubs_and_pass_on_the_reference(tmp_path):
    out = tmp_path / "release"
    done = grader_in(TOY_COURSE, "release", str(out))
    assert done.returncode == 0, done.stderr
    files = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert {
        "exercises/toy.py",
        "tests/checks/toy/test_layer_norm.py",
        "tests/checks/toy/lesson.json",
    } <= files
    assert not any(f.startswith(("solutions/", "tests/checks/toy/hidden/", "examples/")) for f in files)
    assert "exercises/toy.py" in (out / "README.md").read_text()
    assert "--lesson toy" in (out / ".github" / "workflows" / "classroom.yml").read_text()
    stubs = run_in(out, "-m", "grader", "check")
    assert stubs.returncode == 1 and "not written yet" in stubs.stdout, stubs.stdout + stubs.stderr
    assert run_in(out, "-m", "pytest", "-q", "-p", "no:cacheprovider").returncode == 1
    shutil.copy(TOY.solution, out / "exercises" / "toy.py")
    done = run_in(out, "-m", "grader", "check")
    assert done.returncode == 0 and "Every check passes" in done.stdout, done.stdout + done.stderr
    assert "12/12" in done.stdout and "hidden" not in done.stdout  # the public checks' points only
    tests = run_in(out, "-m", "pytest", "-q", "-p", "no:cacheprovider")
    assert tests.returncode == 0, tests.stdout[-2000:]


def test_gradescope_bundle_grades_as_grade_does(tmp_path):
    bundle = tmp_path / "autograder.zip"
    done = grader_in(TOY_COURSE, "gradescope-bundle", str(bundle))
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(bundle) as z:
        names = set(z.namelist())
    assert {"solutions/toy.py", "tests/checks/toy/hidden/test_layer_norm_hidden.py", "grader/cli.py"} <= names
    root = autograder_root(tmp_path, bundle, {"toy.py": FORGETS_EPS.read_bytes()})
    results = run_autograder(root)
    assert results["score"] == 12
    assert "layer_norm: 6/6 on the checks you can see" in results["output"].splitlines()
    missing = autograder_root(tmp_path / "none", bundle, {"attention.py": TOY.solution.read_bytes()})
    assert "No toy.py" in run_autograder(missing)["output"]


def nbgrader(course: Path, *args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=course,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{done.stderr[-4000:]}"


def test_nbgrader_course_autogrades_like_grade(tmp_path):
    pytest.importorskip("nbgrader")
    root = tmp_path / "nbgrader"
    done = grader_in(tmp_path, "nbgrader-course", str(root), "--course", str(TOY_COURSE))
    assert done.returncode == 0, done.stderr
    source = json.loads((root / "source" / "toy" / "toy.ipynb").read_text())
    assert source["cells"][0]["source"].startswith("# Layer normalisation, written with numpy")
    nbgrader(root, "generate_assignment", "toy")
    release = json.loads((root / "release" / "toy" / "toy.ipynb").read_text())
    reference = reference_parts(TOY.solution.read_text(), TOY.exercises)[1]
    forgets = {"layer_norm": reference_parts(FORGETS_EPS.read_text(), TOY.exercises)[1]["layer_norm"]}
    for student, notebook in (
        ("ada", fill_solutions(release, reference)),
        ("bob", fill_solutions(fill_solutions(release, reference), forgets)),
        ("cy", release),
    ):
        write_notebook(notebook, root / "submitted" / student / "toy" / "toy.ipynb")
    nbgrader(root, "autograde", "toy")
    nbgrader(root, "export", "--to", str(root / "grades.csv"))
    with (root / "grades.csv").open(newline="") as f:
        exported = {row["student_id"]: float(row["score"]) for row in csv.DictReader(f)}
    copies = tmp_path / "collected"
    done = grader_in(tmp_path, "nbgrader-collect", str(root), str(copies), "--course", str(TOY_COURSE))
    assert done.returncode == 0, done.stderr
    graded = {}
    for student in exported:
        done = grader_in(TOY_COURSE, "grade", str(copies / student), "--format", "json")
        graded[student] = json.loads(done.stdout)["score"]
    assert exported == graded == {"ada": 14, "bob": 12, "cy": 0}


def test_installed_with_a_plain_pip_install_it_grades_in_any_course(tmp_path):
    """Not from this checkout: the grader installed from its files, run inside a copy of the
    toy course, and refusing with one line where there is no course."""
    source, site = tmp_path / "src", tmp_path / "site"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "grader", source / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"]
    done = subprocess.run(
        [*pip, "--target", str(site), str(source)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    course = tmp_path / "course"
    shutil.copytree(TOY_COURSE, course, ignore=shutil.ignore_patterns("__pycache__"))
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site), "HOME": str(tmp_path)}
    where = run_env(course, env, "-c", "import grader; print(grader.__file__)")
    assert where.stdout.strip() == str(site / "grader" / "__init__.py"), where.stderr
    done = grader_in(course / "examples", "grade", str(FORGETS_EPS), "--format", "json", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["score"] == 12
    (tmp_path / "elsewhere").mkdir()
    one_line_error(grader_in(tmp_path / "elsewhere", "check", env=env), "no course found")


def run_env(cwd: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def test_a_class_folder_names_its_lesson(tmp_path):
    """In a course of several lessons, a class whose student folders hold one lesson's file is
    graded for that lesson; a missing file is called missing, not a question of lesson."""
    from grader.core.lesson import find_course

    course = find_course()
    assert len(course.lessons) > 1
    klass = tmp_path / "class"
    (klass / "ada").mkdir(parents=True)
    (klass / "ada" / "kv_cache.py").write_text("")
    (klass / "bob").mkdir()
    assert course.choose(klass=klass).name == "kv_cache"
    (klass / "bob" / "attention.py").write_text("")
    with pytest.raises(LessonError, match="which lesson"):
        course.choose(klass=klass)  # both lessons' files: the instructor says which
    with pytest.raises(IntakeError, match="missing.py does not exist"):
        course.choose(submission=tmp_path / "missing.py")
    (tmp_path / "Attention.py").write_text("")
    assert course.choose(submission=tmp_path / "Attention.py").name == "attention"  # its command says why


def test_a_file_of_any_name_is_the_lesson_whose_functions_it_defines(tmp_path):
    """``my_attention.py`` needs no --lesson in a course of several lessons: it defines the first
    lesson's functions (even as a notebook), and ``check`` grades it as that lesson."""
    from grader.core.lesson import find_course

    course = find_course()
    for lesson in course.lessons:
        mine = tmp_path / f"my_{lesson.name}.py"
        mine.write_text(lesson.solution.read_text(encoding="utf-8"), encoding="utf-8")
        assert course.choose(submission=mine) == lesson
    half = tmp_path / "half.py"  # one function of a lesson is enough when no other lesson's is there
    half.write_text(f"def {course.lessons[-1].exercises[-1]}(x):\n    return x\n")
    assert course.choose(submission=half) == course.lessons[-1]
    broken = tmp_path / "broken.py"
    broken.write_text("def (:\n")
    with pytest.raises(LessonError, match="which lesson.*defines none of their functions"):
        course.choose(submission=broken)
    fifo = tmp_path / "fifo.py"
    os.mkfifo(fifo)
    with pytest.raises(IntakeError, match="not a regular file|FIFO|pipe"):  # never read: no hang
        course.choose(submission=fifo)
    first = course.lessons[0]
    done = run_env(
        tmp_path, {**os.environ}, "-m", "grader", "check", f"my_{first.name}.py", "--course", str(ROOT)
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"Checking my_{first.name}.py" in done.stdout and re.search(r"^Total +100/100$", done.stdout, re.M)


def test_the_next_step_keeps_the_course_and_lesson_it_was_run_with(two_lessons, tmp_path):
    """The "Next:" line of ``check`` is a command that runs as written from where it was typed."""
    done = grader_in(tmp_path, "check", "--course", str(two_lessons), "--lesson", "twin", "--public")
    assert done.returncode == 1, done.stderr
    wanted = f"python -m grader check --course {two_lessons} --lesson twin --public --only "
    assert wanted in done.stdout, done.stdout[-1500:]


def test_nbgrader_collect_finds_the_lesson_its_notebooks_are_of(tmp_path):
    """In a course of several lessons, the nbgrader course's notebooks name the lesson."""
    course = find_course()
    assert len(course.lessons) > 1
    last = course.lessons[-1]
    notebook = tmp_path / "nb" / "submitted" / "ada" / last.name / f"{last.name}.ipynb"
    notebook.parent.mkdir(parents=True)
    notebook.write_text("{}")
    done = grader_in(tmp_path, "nbgrader-collect", "nb", "class", "--course", str(ROOT))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "class" / "ada" / f"{last.name}.ipynb").is_file()
    (tmp_path / "nb" / "submitted" / "bob" / course.lessons[0].name).mkdir(parents=True)
    (
        tmp_path / "nb" / "submitted" / "bob" / course.lessons[0].name / f"{course.lessons[0].name}.ipynb"
    ).write_text("{}")
    one_line_error(
        grader_in(tmp_path, "nbgrader-collect", "nb", "class2", "--course", str(ROOT)), "which lesson?"
    )


def test_nbgrader_collect_takes_the_lesson_collected_over_the_course_s_sources(tmp_path):
    """``nbgrader-course course/`` writes every lesson's source; the notebooks collected name the
    one to lay out."""
    course = find_course()
    for lesson in course.lessons:
        source = tmp_path / "nb" / "source" / lesson.name / f"{lesson.name}.ipynb"
        source.parent.mkdir(parents=True)
        source.write_text("{}")
    first = course.lessons[0]
    notebook = tmp_path / "nb" / "submitted" / "ada" / first.name / f"{first.name}.ipynb"
    notebook.parent.mkdir(parents=True)
    notebook.write_text("{}")
    done = grader_in(tmp_path, "nbgrader-collect", "nb", "class", "--course", str(ROOT))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "class" / "ada" / f"{first.name}.ipynb").is_file()
