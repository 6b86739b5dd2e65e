"""``grader new-lesson NAME``: a scaffold that works as written.

In a copy of the toy course (and in an empty folder, a new course), the scaffolded lesson lints
clean, its stubs are in step with its reference, its reference gets full marks and its stubs 0,
and its catalog holds: the bug loses points in its exercise and is named by its DIAGNOSIS, the
correct alternative is full, the file that does no work gets 0. A taken or bad name is refused
with one line and nothing written.
"""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest

from .support import TOY_COURSE, grader_outside

NAME = "weights"


def files_under(folder: Path) -> set[Path]:
    return {p.relative_to(folder) for p in folder.rglob("*") if "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """A copy of the toy course with lesson NAME scaffolded in it."""
    course = tmp_path_factory.mktemp("course") / "toy"
    shutil.copytree(TOY_COURSE, course, ignore=shutil.ignore_patterns("__pycache__"))
    done = grader_outside("new-lesson", NAME, cwd=course)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return course


def test_the_scaffold_holds_every_file_of_a_lesson(course):
    for where in (
        f"solutions/{NAME}.py",
        f"exercises/{NAME}.py",
        f"tests/checks/{NAME}/__init__.py",
        f"tests/checks/{NAME}/strategies.py",
        f"tests/checks/{NAME}/diagnoses.py",
        f"tests/checks/{NAME}/pictures.py",
        f"tests/checks/{NAME}/work.py",
        f"tests/checks/{NAME}/hidden/__init__.py",
    ):
        assert (course / where).is_file(), where
    assert list((course / "tests" / "checks" / NAME).glob("test_*.py"))
    assert list((course / "tests" / "checks" / NAME / "hidden").glob("test_*.py"))
    for kind in ("bugs", "correct", "trivial"):
        assert len(list((course / "tests" / "catalog" / NAME / kind).glob("*.py"))) == 1, kind
    assert list((course / "examples" / "gallery" / NAME).glob(f"*/{NAME}.py"))
    # every file teaches: it opens with a docstring saying what it is
    for path in (course / "tests" / "checks" / NAME).rglob("*.py"):
        assert ast.get_docstring(ast.parse(path.read_text())), path
    assert NAME in (course / "solutions" / f"{NAME}.py").read_text().splitlines()[0]


def test_the_scaffold_lints_clean_and_the_toy_lesson_still_does(course):
    done = grader_outside("lint", cwd=course)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"lesson {NAME}:" in done.stdout and "lesson toy:" in done.stdout
    assert done.stdout.count("no problem found") == 2


def test_the_stubs_are_in_step_with_the_reference(course):
    assert grader_outside("exercises", "--lesson", NAME, "--check", cwd=course).returncode == 0
    done = grader_outside("exercises", "--lesson", NAME, cwd=course)
    assert done.returncode == 0, done.stderr


def test_the_reference_gets_full_marks_and_the_stubs_none(course):
    done = grader_outside("check", f"solutions/{NAME}.py", cwd=course)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Every check passes" in done.stdout
    stubs = grader_outside("grade", f"exercises/{NAME}.py", "--format", "json", cwd=course)
    report = json.loads(stubs.stdout)
    assert report["score"] == 0 and report["max_score"] > 0


def test_the_scaffolded_catalog_holds(course, tmp_path):
    """As the catalog is graded: each entry appended to the reference (it holds only what it
    changes), then graded."""
    catalog = course / "tests" / "catalog" / NAME
    reference = (course / "solutions" / f"{NAME}.py").read_text()
    folder = tmp_path / "entries"
    for entry in catalog.glob("*/*.py"):
        place = folder / f"{entry.parent.name}-{entry.stem}"
        place.mkdir(parents=True)
        (place / f"{NAME}.py").write_text(reference + "\n\n" + entry.read_text())
    done = grader_outside("gallery", str(folder), "--lesson", NAME, "--format", "json", cwd=course)
    assert done.returncode == 0, done.stderr
    reports = json.loads(done.stdout)
    assert len(reports) == 3
    for label, report in reports.items():
        exercises = report["exercises"]
        if label.startswith("bugs-"):
            entry = next(catalog.glob(f"bugs/{label.removeprefix('bugs-')}.py"))
            declared = {
                n.targets[0].id: ast.literal_eval(n.value)
                for n in ast.parse(entry.read_text()).body
                if isinstance(n, ast.Assign)
            }
            own = exercises[declared["EXERCISE"]]
            assert 0 < own["score"] < own["max_score"], report  # partial credit, not all lost
            assert own["diagnoses"][0]["code"] == declared["DIAGNOSIS"]
        elif label.startswith("correct-"):
            assert report["score"] == report["max_score"], report
            assert not any(e["diagnoses"] for e in exercises.values())
        else:
            assert report["score"] == 0 and not any(t["status"] == "passed" for t in report["tests"])


@pytest.mark.parametrize(
    "name, words",
    [
        ("toy", "lesson 'toy' exists already"),
        ("Weights", "cannot name a lesson"),
        ("2nd", "cannot name a lesson"),
        ("class", "cannot name a lesson"),
        ("test_weights", "pytest would take"),
        ("../escape", "cannot name a lesson"),
    ],
)
def test_a_taken_or_bad_name_is_refused_and_nothing_written(tmp_path, name, words):
    course = tmp_path / "toy"
    shutil.copytree(TOY_COURSE, course, ignore=shutil.ignore_patterns("__pycache__"))
    before = files_under(tmp_path)
    done = grader_outside("new-lesson", name, cwd=course)
    assert done.returncode == 2
    assert words in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert files_under(tmp_path) == before


def test_a_lesson_partly_there_is_refused(tmp_path):
    course = tmp_path / "toy"
    shutil.copytree(TOY_COURSE, course, ignore=shutil.ignore_patterns("__pycache__"))
    (course / "tests" / "catalog" / NAME).mkdir(parents=True)
    done = grader_outside("new-lesson", NAME, cwd=course)
    assert done.returncode == 2 and "exists already" in done.stderr
    assert not (course / "solutions" / f"{NAME}.py").exists()


def test_in_an_empty_folder_it_starts_a_course(tmp_path):
    done = grader_outside("new-lesson", "first", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "tests" / "checks" / "__init__.py").is_file()
    linted = grader_outside("lint", cwd=tmp_path)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    assert "no problem found" in linted.stdout
