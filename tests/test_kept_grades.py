"""A kept grade is the grade this grader would give: batch keeps a grade from an earlier run
only while everything that decides it is unchanged (grader.core.fingerprint)."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader import cli
from grader.commands.batch import suite_hash
from grader.core import fingerprint
from grader.core.installed import PACKAGE
from grader.core.lesson import Course
from grader.core.settings import Isolation, Limits, Settings
from grader.engine import upkeep

from .support import ROOT, TOY_COURSE


def _course(tmp_path: Path) -> Path:
    """A copy of the toy course, with a check that imports a course module and a link, as
    kv_cache's hidden checks link to the first lesson's solution, to another lesson's file."""
    root = tmp_path / "course"
    shutil.copytree(TOY_COURSE, root, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "shared_numbers.py").write_text("EPS = 1e-5\n")
    (root / "solutions" / "other.py").write_text("def helper():\n    return 1\n")
    hidden = root / "tests" / "checks" / "toy" / "hidden"
    os.symlink("../../../../solutions/other.py", hidden / "other_lesson.py")
    check = root / "tests" / "checks" / "toy" / "test_center_tokens.py"
    check.write_text("from course import shared_numbers  # noqa: F401\n" + check.read_text())
    return root


def _digest(root: Path, settings: Settings | None = None, isolation: Isolation = Isolation.PROCESS) -> str:
    return suite_hash(Course.at(root).lesson("toy"), settings or Settings(), isolation=isolation)


def _append(path: Path, text: str = "\n# edited\n") -> None:
    path.write_text(path.read_text() + text)


#: Each way a course can change what its lesson grades, and the file it edits.
COURSE_CHANGES = {
    "a check": "tests/checks/toy/test_layer_norm.py",
    "a hidden check": "tests/checks/toy/hidden/test_layer_norm_hidden.py",
    "a helper of the checks": "tests/checks/toy/strategies.py",
    "the reference": "solutions/toy.py",
    "a file a link in the checks points at": "solutions/other.py",
    "a course module a check imports": "shared_numbers.py",
    "a package pytest imports on the way": "tests/checks/__init__.py",
}


def test_an_unchanged_course_keeps_its_digest(tmp_path):
    root = _course(tmp_path)
    assert _digest(root) == _digest(root)


@pytest.mark.parametrize("change", sorted(COURSE_CHANGES))
def test_a_changed_course_file_changes_the_digest(tmp_path, change):
    root = _course(tmp_path)
    before = _digest(root)
    _append(root / COURSE_CHANGES[change])
    assert _digest(root) != before, change


def test_a_new_data_file_beside_the_checks_changes_the_digest(tmp_path):
    root = _course(tmp_path)
    before = _digest(root)
    (root / "tests" / "checks" / "toy" / "table.json").write_text("[1, 2]\n")
    assert _digest(root) != before


def test_a_fifo_or_a_link_loop_in_the_checks_is_not_waited_on(tmp_path):
    root = _course(tmp_path)
    checks = root / "tests" / "checks" / "toy"
    os.mkfifo(checks / "pipe")  # opening it to read would wait for a writer forever
    os.symlink(".", checks / "loop")  # a folder that holds itself
    assert _digest(root) == _digest(root)


@pytest.fixture
def new_process():
    """What a new process would read of the grader's files: the digest of the installed grader
    is taken once per process (fingerprint._installed_digest), so each call forgets it first."""
    forget = fingerprint._installed_digest.cache_clear
    forget()
    yield lambda root: (forget(), _digest(root))[1]
    forget()  # nothing of the copy's is left for the tests after this one


def test_an_edited_grader_file_changes_the_digest(tmp_path, monkeypatch, new_process):
    copy = tmp_path / "grader"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    root = _course(tmp_path)
    monkeypatch.setattr(fingerprint, "PACKAGE", copy)
    before = new_process(root)
    assert new_process(root) == before
    _append(copy / "formats" / "text.py")
    assert new_process(root) != before
    edited = new_process(root)
    _append(copy / "commands" / "release_files" / "classroom.yml", "# a data file\n")
    assert new_process(root) != edited


def test_the_installed_graders_digest_is_read_once_per_process(tmp_path, monkeypatch, new_process):
    """Within one process the grader's code is what it imported: its digest is read once."""
    copy = tmp_path / "grader"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(fingerprint, "PACKAGE", copy)
    before = fingerprint.grader_digest()
    _append(copy / "formats" / "text.py")
    assert fingerprint.grader_digest() == before
    assert fingerprint.grader_digest(copy) != before  # a package named is read each time


@pytest.mark.parametrize("package", [*upkeep.DECIDING_PACKAGES, "python"])
def test_another_version_changes_the_digest(tmp_path, monkeypatch, package):
    root = _course(tmp_path)
    before = _digest(root)
    if package == "python":
        monkeypatch.setattr(sys, "version", sys.version + " (another build)")
    else:
        real = fingerprint.version
        monkeypatch.setattr(fingerprint, "version", lambda name: "0.0.1" if name == package else real(name))
    assert _digest(root) != before, package


@pytest.mark.parametrize(
    "settings",
    [
        *(
            Settings(limits=dataclasses.replace(Limits(), **{f.name: getattr(Limits(), f.name) * 2}))
            for f in dataclasses.fields(Limits)
        ),
        Settings(max_examples=7),
    ],
    ids=[*(f.name for f in dataclasses.fields(Limits)), "max_examples"],
)
def test_every_setting_that_decides_a_grade_changes_the_digest(tmp_path, settings):
    root = _course(tmp_path)
    assert _digest(root, settings) != _digest(root, Settings())


def test_the_isolation_level_changes_the_digest(tmp_path):
    """In the checker's own process numpy's generator is seeded for each example and no memory
    limit holds; in a sandbox neither: the same file may grade differently."""
    root = _course(tmp_path)
    levels = {
        _digest(root, isolation=level) for level in (Isolation.NAMESPACES, Isolation.PROCESS, Isolation.NONE)
    }
    assert len(levels) == 3


# ----------------------------------------------------------------------------- batch, end to end


def _class(tmp_path: Path) -> Path:
    klass = tmp_path / "class"
    (klass / "ada").mkdir(parents=True)
    shutil.copy(TOY_COURSE / "solutions" / "toy.py", klass / "ada" / "toy.py")
    return klass


def _batch(tmp_path: Path, root: Path, klass: Path, *, installed: Path | None = None) -> str:
    """Run batch from outside the project, with this checkout's grader or the one in ``installed``."""
    env = {**os.environ, "PYTHONPATH": str(installed or ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "grader", "batch", str(klass), "--course", str(root), "--lesson", "toy",
         "--isolation", "process", "--out", str(tmp_path / "grades" / "gradebook.csv")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stderr


def test_batch_regrades_after_a_check_changes_and_keeps_the_grade_otherwise(tmp_path):
    root, klass = _course(tmp_path), _class(tmp_path)
    assert "1 to grade" in _batch(tmp_path, root, klass)
    assert "0 to grade, 1 unchanged" in _batch(tmp_path, root, klass)
    _append(root / "tests" / "checks" / "toy" / "test_layer_norm.py")
    assert "1 to grade" in _batch(tmp_path, root, klass)
    _append(root / "solutions" / "other.py")  # reached only through a link in the checks
    assert "1 to grade" in _batch(tmp_path, root, klass)


def test_batch_regrades_after_the_grader_changes(tmp_path):
    """The grader itself, copied and edited: a kept grade was given by other code."""
    installed = tmp_path / "installed"
    shutil.copytree(PACKAGE, installed / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    root, klass = _course(tmp_path), _class(tmp_path)
    (installed / "grader" / "formats" / "marker.py").write_text(
        "import sys\nprint('copy', file=sys.stderr)\n"
    )
    _append(installed / "grader" / "formats" / "__init__.py", "\nfrom . import marker  # noqa: F401\n")
    said = _batch(tmp_path, root, klass, installed=installed)
    assert "1 to grade" in said and said.startswith("copy")  # the copy is the grader that ran
    assert "0 to grade, 1 unchanged" in _batch(tmp_path, root, klass, installed=installed)
    _append(installed / "grader" / "formats" / "text.py")
    assert "1 to grade" in _batch(tmp_path, root, klass, installed=installed)


# ----------------------------------------------------------------------------- Hypothesis


@pytest.mark.parametrize("release", ["6.100.0", "6.131.8", "6.171.0", "7.0.0"])
def test_a_hypothesis_release_outside_the_range_is_refused_at_start(monkeypatch, capsys, release):
    monkeypatch.setattr(upkeep.hypothesis, "__version__", release)
    assert cli.main(["exercises", "--check"]) == 2
    said = capsys.readouterr().err
    assert f"Hypothesis {release} is installed" in said and "pip install 'hypothesis>=6.131.9,<6.171'" in said


@pytest.mark.parametrize("release", ["6.131.9", "6.155.2", "6.170.17"])
def test_a_hypothesis_release_inside_the_range_is_taken(release):
    assert upkeep.unsupported_hypothesis(release) is None


def test_the_installed_hypothesis_is_in_the_range_pyproject_pins():
    assert upkeep.unsupported_hypothesis() is None
    pinned = (PACKAGE.parent / "pyproject.toml").read_text()
    low, high = upkeep.HYPOTHESIS_RANGE
    assert f'"hypothesis>={".".join(map(str, low))},<{".".join(map(str, high))}"' in pinned
