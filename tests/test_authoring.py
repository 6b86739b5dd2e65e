"""The authoring guide (docs/authoring.md) says what the grader does.

Its Python blocks marked ``<!-- file: PATH -->`` are put together into a course holding the
lesson ``demo``, which must lint clean, give its reference full marks and its stubs none, and
whose catalog must hold; its ``pycon`` sessions run as doctests; every name a lesson may import
from the grader's faces is in it; and what it says changes a check's examples is what changes
its seed.
"""

from __future__ import annotations

import ast
import doctest
import importlib.util
import json
import re
import textwrap
from pathlib import Path

import pytest

import grader.arrays
import grader.diagnosis
import grader.draw
import grader.expect
import grader.marks
import grader.pictures
from grader.engine.upkeep import fix_seed, give_seed

from .support import ROOT, grader_outside

GUIDE = ROOT / "docs" / "authoring.md"
TEXT = GUIDE.read_text(encoding="utf-8")
FILE_BLOCK = re.compile(r"<!-- file: (?P<path>\S+) -->\n```python\n(?P<code>.*?)```", re.S)
SESSION = re.compile(r"```pycon\n(?P<code>.*?)```", re.S)


def write_course(root: Path) -> Path:
    """The course the guide's file blocks make (blocks of one file joined in page order)."""
    files: dict[str, str] = {}
    for block in FILE_BLOCK.finditer(TEXT):
        files[block["path"]] = files.get(block["path"], "") + block["code"]
    assert files, "the guide holds no file block"
    for path, code in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(code, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    root = write_course(tmp_path_factory.mktemp("guide") / "course")
    done = grader_outside("exercises", "--lesson", "demo", cwd=root)
    assert done.returncode == 0, done.stderr
    return root


def test_the_guide_builds_a_whole_lesson(course):
    for path in (
        "solutions/demo.py",
        "tests/checks/demo/diagnoses.py",
        "tests/checks/demo/pictures.py",
        "tests/checks/demo/work.py",
        "tests/checks/demo/hidden/test_mix_hidden.py",
    ):
        assert (course / path).is_file(), path
    for kind in ("bugs", "correct", "trivial"):
        assert list((course / "tests" / "catalog" / "demo" / kind).glob("*.py")), kind


def test_the_guide_lesson_lints_clean(course):
    done = grader_outside("lint", "--lesson", "demo", cwd=course)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no problem found" in done.stdout
    assert "mix: 11 points from 5 checks (1 hidden)" in done.stdout


def test_its_reference_gets_full_marks_and_its_stubs_none(course):
    done = grader_outside("check", "solutions/demo.py", cwd=course)
    assert done.returncode == 0, done.stdout + done.stderr
    stubs = grader_outside("grade", "exercises/demo.py", "--format", "json", cwd=course)
    assert json.loads(stubs.stdout)["score"] == 0


def test_its_catalog_holds(course, tmp_path):
    """Each entry appended to the reference, as the catalog is graded: the bug loses points in
    its exercise and is named by its DIAGNOSIS, the correct file is full, the trivial one 0."""
    reference = (course / "solutions" / "demo.py").read_text()
    catalog = course / "tests" / "catalog" / "demo"
    for entry in catalog.glob("*/*.py"):
        place = tmp_path / f"{entry.parent.name}-{entry.stem}"
        place.mkdir()
        (place / "demo.py").write_text(reference + "\n\n" + entry.read_text())
    done = grader_outside("gallery", str(tmp_path), "--lesson", "demo", "--format", "json", cwd=course)
    assert done.returncode == 0, done.stderr
    reports = json.loads(done.stdout)
    (bug,) = (r for label, r in reports.items() if label.startswith("bugs-"))
    assert bug["exercises"]["mix"]["score"] < bug["exercises"]["mix"]["max_score"]
    assert bug["exercises"]["mix"]["diagnoses"][0]["code"] == "W-transposed"
    (correct,) = (r for label, r in reports.items() if label.startswith("correct-"))
    assert correct["score"] == correct["max_score"] and not correct["exercises"]["mix"]["diagnoses"]
    (trivial,) = (r for label, r in reports.items() if label.startswith("trivial-"))
    assert trivial["score"] == 0


def test_the_guide_sessions_run_as_shown():
    sessions = [block["code"] for block in SESSION.finditer(TEXT)]
    assert len(sessions) >= 3
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for number, code in enumerate(sessions):
        test = parser.get_doctest(code, {}, f"authoring.md session {number}", str(GUIDE), 0)
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


@pytest.mark.parametrize(
    "face",
    [grader.marks, grader.expect, grader.draw, grader.diagnosis, grader.pictures, grader.arrays],
    ids=lambda m: m.__name__,
)
def test_every_name_a_lesson_may_import_is_in_the_guide(face):
    missing = [name for name in face.__all__ if f"`{name}" not in TEXT]
    assert not missing, f"docs/authoring.md says nothing of {face.__name__}.{missing}"


def test_every_field_a_diagnosis_sees_is_in_the_guide():
    fields = [f"seen.call.{name}" for name in grader.diagnosis.Call.__dataclass_fields__]
    fields += [f"seen.{name}" for name in grader.diagnosis.Seen.__dataclass_fields__ if name != "call"]
    missing = [field for field in fields if f"`{field}" not in TEXT]
    assert not missing, missing


# ----------------------------------------------------------------------------- a check's seed

BASE = '''
import pytest
from hypothesis import given, strategies as st


@pytest.mark.graded(exercise="mix", points=2)
@given(n=st.integers(0, 3))
def test_check(student, n):
    """A check."""
    assert n >= 0, "never"
'''

#: How the guide says each change acts on the seed: True when the seed stays.
CHANGES = {
    "a comment and a blank line": (
        ('    """A check."""\n', '    """A check."""\n\n    # why: n is never negative\n'),
        True,
    ),
    "the points of the mark": (("points=2", "points=5"), True),
    "the arguments of @given": (("st.integers(0, 3)", "st.integers(0, 9)"), True),
    "the check renamed": (("def test_check(", "def test_the_check("), False),
    "a parameter renamed": (
        (
            "n=st.integers(0, 3))\ndef test_check(student, n):\n",
            "m=st.integers(0, 3))\ndef test_check(student, m):\n    n = m\n",
        ),
        False,
    ),
    "a line reformatted": (('assert n >= 0, "never"', 'assert n >= 0, (\n        "never"\n    )'), False),
    "quotes changed": (('"never"', "'never'"), False),
}


def seed_of(source: str, folder: Path, name: str) -> int:
    """The seed grading gives the one check of ``source``, written as a file and imported."""
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"guide_seed_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    check = next(v for k, v in vars(module).items() if k.startswith("test_"))
    fix_seed(check, derandomize=True)
    give_seed(check)
    return check._hypothesis_internal_use_seed


@pytest.mark.parametrize("change", CHANGES, ids=lambda c: c.replace(" ", "_"))
def test_what_the_guide_says_changes_a_checks_examples(tmp_path, change):
    (old, new), keeps = CHANGES[change]
    assert old in BASE
    changed = BASE.replace(old, new, 1)
    ast.parse(changed)
    before, after = seed_of(BASE, tmp_path, "before"), seed_of(changed, tmp_path, "after")
    assert before is not None
    assert (before == after) is keeps
    words = {True: "keeps the seed", False: "gives it another seed"}[keeps]
    assert words in TEXT
