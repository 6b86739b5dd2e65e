"""The checks run without pytest where a lesson allows it (grader.engine.direct), with the very
report pytest's run gives: the same checks, names, order, scores, feedback and smallest inputs.

Each lesson's reference, stubs and a sample of its catalog are graded both ways and compared
whole. Every shape of a course that would make pytest's run differ (a conftest.py, a setting of
pytest, a check that asks for another fixture, parametrized checks, a class of checks, a
module's set-up, PYTEST_ADDOPTS) is shown to go to pytest: each case is built so that a run
that ignored it would give another report.
"""

from __future__ import annotations

import json
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
    (toy.root / "tests" / "conftest.py").write_text(  # between the course and its checks
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
    text = _flag_check("test_set_up_ran", flag)  # named so that no reading of the text sees it:
    text += f"\n\ndef _set_up():\n    os.environ[{flag!r}] = '1'\n\nglobals()['setup_module'] = _set_up\n"
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

        @graded("center_tokens", points=1)
        @given(x=tokens())
        def _in_a_class(self, student, x):
            student.center_tokens(x)

        TestGrouped = type("TestGrouped", (), {"test_in_a_class": _in_a_class})  # no class statement
        """
    )
    (toy.checks / "test_grouped.py").write_text(text)
    _goes_to_pytest(toy, lambda got: ("in_a_class", "passed") in got)


# ----------------------------------------------------------------------------- found by a red team
# Each shape below once gave a report without pytest that pytest's run did not give (or a crash).


def _same_both_ways(toy: Lesson, *, declined: bool, path: Path | None = None) -> dict:
    """Graded both ways (the default way first: nothing of the lesson imported before), the same
    report; the lesson's checks left to pytest or not, as ``declined`` says."""
    try:
        mine, theirs = both_ways(path or toy.source, toy)
    except BaseException as err:  # a skip raised as a file is imported must not skip this test
        pytest.fail(f"the grading stopped: {type(err).__name__}: {err}")
    assert mine == theirs
    assert (direct.why_not(toy) != "") is declined, direct.why_not(toy)
    return mine


def test_a_warnings_filter_set_as_a_check_file_is_imported_lasts_no_longer_than_under_pytest(toy):
    """pytest imports the checks inside its own catching of warnings: a filter set at import is
    gone before any check runs (here it would turn a warning of the check's own into a failure)."""
    text = _flag_check("test_divides", holds="np.float64(1.0) / np.float64(0.0) > 0")
    text = "import warnings\nimport numpy as np\nwarnings.simplefilter('error', RuntimeWarning)\n" + text
    (toy.checks / "test_warned.py").write_text(text)
    report = _same_both_ways(toy, declined=False)
    assert ("divides", "passed") in names(report), report["lesson_errors"]


def test_a_check_raising_skiptest_reads_as_pytest_reads_it(toy):
    text = _flag_check("test_skipped", holds="True").replace(
        "expect.that(",
        "raise __import__('unittest').SkipTest('not today')\n    expect.that(",
    )
    (toy.checks / "test_skipping.py").write_text(text)
    report = _same_both_ways(toy, declined=False)
    assert ("skipped", "error") in names(report)


def _reference_that_first(toy: Lesson, tmp_path: Path, name: str, lines: str) -> Path:
    """A submission: the toy reference whose center_tokens runs ``lines`` first."""
    path = tmp_path / name / TOY.filename
    path.parent.mkdir()
    marker = '    """Move each token'
    path.write_text(toy.source.read_text().replace(marker, lines + marker, 1))
    return path


def test_a_submission_reading_standard_input_reads_as_under_pytest(toy, tmp_path):
    reader = _reference_that_first(toy, tmp_path, "reader", "    input()\n")
    report = _same_both_ways(toy, declined=False, path=reader)
    assert any(status != "passed" for _, status in names(report))


@pytest.mark.parametrize(
    "shape",
    [
        "module_test_false",
        "testcase",
        "plain_function",
        "skip_at_import",
        "package_set_up",
        "getattr",
        "pytest_mark",
        "conftest_deep",
        "module_test_false_made",
        "testcase_made",
        "plain_function_made",
        "skip_at_import_made",
        "package_set_up_made",
        "getattr_made",
    ],
)
def test_shapes_that_pytest_treats_otherwise_go_to_pytest(toy, shape):
    """Each would give another report (or a crash) were it run without pytest."""
    checks = toy.checks / "test_shape.py"
    if shape == "module_test_false":  # pytest collects none of this file's checks
        checks.write_text("__test__ = False\n" + _flag_check("test_never_collected", holds="False"))
    elif shape == "testcase":  # pytest collects a TestCase whatever its name (without a mark: set aside)
        checks.write_text(
            "import unittest\n\nclass Grouped(unittest.TestCase):\n    def test_x(self):\n        pass\n"
        )
    elif shape == "plain_function":  # pytest calls it itself (and reads what it returns)
        checks.write_text(
            "from grader.marks import graded\n\n@graded('center_tokens', points=1)\n"
            "def test_plain(student):\n    return 1\n"
        )
    elif shape == "skip_at_import":  # pytest skips the file; an import without it would stop the run
        checks.write_text("import pytest\npytest.importorskip('no_such_package_anywhere')\n")
    elif shape == "package_set_up":  # pytest calls a package's setup_module, however it got there
        (toy.checks / "common.py").write_text("def setup_module():\n    raise RuntimeError('set-up ran')\n")
        init = toy.checks / "__init__.py"
        init.write_text(init.read_text() + "\nfrom .common import *  # noqa\n")
    elif shape == "getattr":  # pytest's questions to the module reach its __getattr__
        checks.write_text(
            _flag_check("test_fine", holds="True") + "\n\ndef __getattr__(name):\n    raise KeyError(name)\n"
        )
    # the same, written so that no reading of the text sees it: the imported module is asked
    elif shape == "module_test_false_made":
        checks.write_text(
            "globals()['__test__'] = False\n" + _flag_check("test_never_collected", holds="False")
        )
    elif shape == "testcase_made":
        checks.write_text(
            "import unittest\nGrouped = type('Grouped', (unittest.TestCase,), {'test_x': lambda self: None})\n"
        )
    elif shape == "plain_function_made":
        checks.write_text(
            "from grader.marks import graded\n\ntest_plain = graded('center_tokens', points=1)(lambda student: 1)\n"
        )
    elif shape == "skip_at_import_made":
        checks.write_text("__import__('pytest').importorskip('no_such_package_anywhere')\n")
    elif shape == "package_set_up_made":
        init = toy.checks / "__init__.py"
        init.write_text(init.read_text() + "\nglobals()['setup_module'] = lambda: 1 / 0\n")
    elif shape == "getattr_made":
        checks.write_text(
            _flag_check("test_fine", holds="True") + "\n\nglobals()['__getattr__'] = lambda name: {}[name]\n"
        )
    elif shape == "conftest_deep":  # pytest loads it though it collects nothing there
        (toy.checks / "testing.egg").mkdir()
        (toy.checks / "testing.egg" / "conftest.py").write_text(
            "def pytest_collection_modifyitems(items):\n    items[:] = [i for i in items if 'layer_norm' not in i.name]\n"
        )
    elif shape == "pytest_mark":  # pytest skips it (pytest reached with no import statement)
        text = _flag_check("test_not_yet", holds="True")
        checks.write_text(
            text.replace("@graded(", "@__import__('pytest').mark.skip(reason='not yet')\n@graded(", 1)
        )
    _same_both_ways(toy, declined=True)


def test_settings_searched_past_an_empty_tool_pytest_table_go_to_pytest(toy):
    """pytest 9 reads an empty ``[tool.pytest]`` as no settings, and looks further up."""
    (toy.root / "pyproject.toml").write_text("[tool.pytest]\n")
    (toy.root.parent / "tox.ini").write_text("[pytest]\npython_functions = test_centering_*\n")
    report = _same_both_ways(toy, declined=True)
    assert not any(name.startswith("layer_norm") for name, _ in names(report))


def test_a_check_file_writing_to_its_standard_output_as_it_is_imported_leaves_json_whole(toy):
    (toy.checks / "test_noisy.py").write_text(
        "import os, sys\nos.write(1, b'noise on 1\\n')\nos.write(2, b'noise on 2\\n')\nprint('noise')\n"
        + _flag_check("test_quiet", holds="True")
    )
    assert direct.why_not(toy) == ""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "grader",
            "grade",
            str(toy.source),
            "--format",
            "json",
            "--lesson",
            "toy",
            "--course",
            str(toy.root),
            "--isolation",
            "none",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=toy.root.parent,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["score"] == json.loads(done.stdout)["max_score"]
    assert "noise" not in done.stderr


def test_a_course_whose_tests_folder_is_a_link_elsewhere_is_graded(toy, tmp_path):
    """Its checks were once taken for no lesson's (their path read with the link resolved): every
    check of the reference then failed, through pytest as without it."""
    elsewhere = tmp_path / "elsewhere"
    shutil.move(toy.root / "tests", elsewhere)
    (toy.root / "tests").symlink_to(elsewhere, target_is_directory=True)
    lesson = Course.at(toy.root).lesson("toy")
    report = _same_both_ways(lesson, declined=False)
    assert report["score"] == report["max_score"] and report["tests"]


def test_a_file_sent_to_pytest_is_never_imported_first(toy):
    """A file that pytest would treat otherwise is known from its text, before anything is
    imported: a file imported here and then left to pytest would run twice (here, a helper's
    count of imports would read 2)."""
    (toy.checks / "strategies.py").write_text(
        (toy.checks / "strategies.py").read_text() + "\nIMPORTED = []\n"
    )
    (toy.checks / "test_a_skipped.py").write_text(
        "from .strategies import IMPORTED\nIMPORTED.append(1)\nimport pytest\npytest.importorskip('no_such_package_anywhere')\n"
    )
    text = _flag_check("test_b_imported_once", holds="len(IMPORTED) == 1")
    (toy.checks / "test_b_counts.py").write_text(
        text.replace("from .strategies import tokens", "from .strategies import IMPORTED, tokens")
    )
    report = to_dict(run_checks(toy.source, lesson=toy, settings=HERE))  # once: a second run imports it again
    assert ("b_imported_once", "passed") in names(report)
    assert direct.why_not(toy) != ""


def test_a_stream_a_check_file_took_as_it_was_imported_still_takes_writes(toy):
    text = _flag_check("test_writes_on", holds="stderr.write('still open') > 0")
    (toy.checks / "test_streams.py").write_text("from sys import stderr\n" + text)
    report = _same_both_ways(toy, declined=False)
    assert ("writes_on", "passed") in names(report)


def test_a_submission_s_odd_use_of_the_streams_reads_as_under_pytest(toy, tmp_path):
    """Printed characters that are no characters, stdin's encoding, its flush: as pytest's capture."""
    odd = _reference_that_first(
        toy,
        tmp_path,
        "odd",
        "    import io, sys\n"
        "    print('\\udcff'); sys.stderr.write('\\udcff')\n"
        "    assert sys.stdin.encoding is not None\n"
        "    try:\n        sys.stdin.flush()\n    except io.UnsupportedOperation:\n        pass\n"
        "    else:\n        raise RuntimeError('flushed')\n",
    )
    report = _same_both_ways(toy, declined=False, path=odd)
    assert all(status == "passed" for _, status in names(report))
