"""The checks run without pytest where a lesson allows it (grader.engine.direct), with the very
report pytest's run gives: the same checks, names, order, scores, feedback and smallest inputs.

Each lesson's reference, stubs and a sample of its catalog are graded both ways and compared
whole. Every shape of a course that would make pytest's run differ (a conftest.py, a setting of
pytest, a check that asks for another fixture, parametrized checks, a class of checks, a
module's set-up, PYTEST_ADDOPTS) is shown to go to pytest: each case is built so that a run
that ignored it would give another report.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from grader.core.catalog import Kind, entries
from grader.core.lesson import Course, Lesson
from grader.core.settings import THROUGH_PYTEST_VARIABLE, Isolation, Settings, resolve
from grader.engine import direct
from grader.engine.run import run_checks
from grader.formats.json_report import to_dict

from .support import ATTENTION, KV_CACHE, ROOT, ROPE, TOY, TOY_COURSE

HERE = Settings(isolation=Isolation.NONE, store=None)


def both_ways(path: Path, lesson: Lesson, settings: Settings = HERE) -> tuple[dict, dict]:
    """The report of ``path`` without pytest where the lesson allows it, and through pytest."""
    mine = to_dict(run_checks(path, lesson=lesson, settings=settings))
    theirs = to_dict(run_checks(path, lesson=lesson, settings=replace(settings, through_pytest=True)))
    return mine, theirs


def sample(lesson: Lesson) -> list[Path]:
    """The reference, the stubs and, of the catalog, the first bug of each exercise, the first
    correct alternative and the first file that does no work."""
    chosen, seen = [lesson.source, lesson.stubs], set()
    for entry in entries(lesson):
        key = (entry.kind, entry.exercise if entry.kind is Kind.BUGS else None)
        if key not in seen:
            seen.add(key)
            chosen.append(entry.path)
    return chosen


@pytest.mark.parametrize("lesson", [ATTENTION, KV_CACHE, ROPE], ids=lambda lesson: lesson.name)
def test_each_lesson_of_the_course_runs_without_pytest_and_reports_the_same(lesson):
    assert direct.why_not(lesson) == ""
    for path in sample(lesson):
        mine, theirs = both_ways(path, lesson)
        assert mine == theirs, path
        assert mine["tests"], path


def test_a_sandboxed_grading_reports_the_same_both_ways(tmp_path):
    """Sandboxed, each property's examples kept and replayed (the store in a folder of its own)."""
    settings = Settings(isolation=Isolation.AUTO, store=str(tmp_path / "store"))
    for path in sample(ATTENTION)[:4]:
        mine, theirs = both_ways(path, ATTENTION, settings)
        assert mine == theirs, path


def test_the_setting_is_read_once_from_the_environment():
    assert not resolve("grade", environ={}).through_pytest
    assert resolve("grade", environ={THROUGH_PYTEST_VARIABLE: "1"}).through_pytest
    with pytest.raises(ValueError, match=THROUGH_PYTEST_VARIABLE):
        resolve("grade", environ={THROUGH_PYTEST_VARIABLE: "maybe"})


def test_a_check_of_the_reference_loads_no_pytest():
    """A student's ``check`` (in their own process) imports neither pytest nor pluggy."""
    script = textwrap.dedent(
        f"""
        import contextlib, io, sys
        from grader.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(["check", {str(ATTENTION.source)!r}, "--lesson", "attention", "--course", {str(ROOT)!r}])
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("pytest", "pluggy", "_pytest"))
        print(code, loaded)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # _pytest itself is its version alone (the store's key names the release)
    assert done.stdout.split() == ["0", "['_pytest',", "'_pytest._version']"], done.stdout


# ----------------------------------------------------------------------------- what goes to pytest

#: A submission of the toy lesson that answers right for its first 15 calls, then wrongly: the
#: same calls in the same order both ways, or the reports differ.
STATEFUL = textwrap.dedent(
    """
    import numpy as np
    CALLS = [0]

    def token_mean(x):
        return np.mean(x, axis=-1, keepdims=True)

    def center_tokens(x):
        CALLS[0] += 1
        return x - token_mean(x) + (1.0 if CALLS[0] > 15 else 0.0)

    def layer_norm(x, gamma, beta, eps=1e-5):
        c = x - x.mean(axis=-1, keepdims=True)
        return c / np.sqrt((c**2).mean(axis=-1, keepdims=True) + eps) * gamma + beta
    """
)


@pytest.fixture
def toy(tmp_path) -> Lesson:
    """A copy of the toy course, in a folder whose name no other test's copy takes (its modules
    are imported under that name)."""
    root = tmp_path / f"toy_{uuid.uuid4().hex[:12]}"
    shutil.copytree(TOY_COURSE, root, ignore=shutil.ignore_patterns("__pycache__"))
    return Course.at(root).lesson("toy")


def names(report: dict) -> list[tuple[str, str]]:
    return [(t["name"], t["status"]) for t in report["tests"]]


def test_the_toy_lesson_runs_without_pytest_and_a_stateful_file_gets_the_same_report(toy, tmp_path):
    assert direct.why_not(toy) == ""
    stateful = tmp_path / "stateful" / TOY.filename
    stateful.parent.mkdir()
    stateful.write_text(STATEFUL)
    for path in (toy.source, toy.stubs, stateful):
        mine, theirs = both_ways(path, toy)
        assert mine == theirs, path
    assert any(status != "passed" for _, status in names(mine))  # the 16th call on fails


def _flag_check(name: str, flag: str = "", *, holds: str = "") -> str:
    """A graded check of center_tokens that passes only where ``flag`` is in os.environ (or
    where the expression ``holds`` is true)."""
    return textwrap.dedent(
        f"""
        import os
        from hypothesis import given
        from grader import expect
        from grader.marks import graded
        from .strategies import tokens

        @graded("center_tokens", points=1)
        @given(x=tokens())
        def {name}(student, x):
            expect.that({holds or f"os.environ.get({flag!r}) == '1'"}, "the course's pytest set-up did not run")
        """
    )


def _goes_to_pytest(toy: Lesson, expected) -> None:
    """The lesson's checks are left to pytest, and the report (graded first the default way)
    holds what only pytest's run gives (``expected``, of the checks' names and statuses)."""
    assert direct.why_not(toy) != ""
    mine, theirs = both_ways(toy.source, toy)
    assert mine == theirs
    expected(names(mine))


def test_a_conftest_goes_to_pytest(toy, monkeypatch):
    flag = f"TOY_CONFTEST_{uuid.uuid4().hex}"
    monkeypatch.delenv(flag, raising=False)
    (toy.checks / "test_flagged.py").write_text(_flag_check("test_conftest_ran", flag))
    (toy.checks / "conftest.py").write_text(
        textwrap.dedent(
            f"""
            import os
            import pytest

            @pytest.fixture(autouse=True)
            def _flag(monkeypatch):
                monkeypatch.setenv({flag!r}, "1")
            """
        )
    )
    _goes_to_pytest(toy, lambda got: ("conftest_ran", "passed") in got)


def test_a_module_s_set_up_goes_to_pytest(toy, monkeypatch):
    flag = f"TOY_SETUP_{uuid.uuid4().hex}"
    monkeypatch.delenv(flag, raising=False)
    text = _flag_check("test_set_up_ran", flag) + f"\n\ndef setup_module():\n    os.environ[{flag!r}] = '1'\n"
    (toy.checks / "test_flagged.py").write_text(text)
    _goes_to_pytest(toy, lambda got: ("set_up_ran", "passed") in got)


def test_a_setting_of_pytest_goes_to_pytest(toy):
    (toy.root / "pytest.ini").write_text("[pytest]\npython_functions = test_centering_* check_*\n")
    text = _flag_check("check_named_otherwise", holds="True")
    (toy.checks / "test_named.py").write_text(text)

    def expected(got):
        assert ("check_named_otherwise", "passed") in got
        assert not any(name.startswith("layer_norm") for name, _ in got)  # not test_centering_*

    _goes_to_pytest(toy, expected)


def test_pytest_addopts_goes_to_pytest(toy, monkeypatch):
    monkeypatch.setenv("PYTEST_ADDOPTS", "-k 'not keeps_the_shape'")
    _goes_to_pytest(toy, lambda got: not any("keeps_the_shape" in name for name, _ in got))


def test_a_check_asking_for_another_fixture_goes_to_pytest(toy):
    text = _flag_check("test_with_a_folder", holds="tmp_path.is_dir()").replace(
        "(student, x)", "(student, x, tmp_path)"
    )
    (toy.checks / "test_folder.py").write_text(text)
    _goes_to_pytest(toy, lambda got: ("with_a_folder", "passed") in got)


def test_parametrized_checks_go_to_pytest(toy):
    text = _flag_check("test_each_k", holds="k in (1, 2)")
    text = text.replace("(student, x)", "(student, x, k)").replace(
        "@graded(", "import pytest\n\n@pytest.mark.parametrize('k', [1, 2])\n@graded("
    )
    (toy.checks / "test_params.py").write_text(text)
    _goes_to_pytest(
        toy, lambda got: [name for name, _ in got if name.startswith("each_k")] == ["each_k[1]", "each_k[2]"]
    )


def test_a_class_of_checks_goes_to_pytest(toy):
    text = textwrap.dedent(
        """
        from hypothesis import given
        from grader.marks import graded
        from .strategies import tokens

        class TestGrouped:
            @graded("center_tokens", points=1)
            @given(x=tokens())
            def test_in_a_class(self, student, x):
                student.center_tokens(x)
        """
    )
    (toy.checks / "test_grouped.py").write_text(text)
    _goes_to_pytest(toy, lambda got: ("in_a_class", "passed") in got)
