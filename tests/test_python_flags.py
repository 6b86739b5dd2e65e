"""A grade does not depend on the flags of the Python that grades.

Python's optimizations (``-O``, ``-OO``, ``$PYTHONOPTIMIZE``) drop assert statements, and with
``-OO`` docstrings, from everything it compiles: the checks' descriptions came out empty, and a
student's file whose answer depends on an assert scored otherwise in ``check`` (the grader's own
process) than in ``grade`` (a sandbox, whose Python is started without them). ``python -m grader``
starts again without them, and a student's file is compiled as written wherever it runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from grader.core.settings import STORE_VARIABLE

from .support import ON_TOY, ROOT, TOY, TOY_BUGGY, python

#: The toy lesson's function, right only where assert statements run.
ASSERTING = """

def center_tokens(x):
    try:
        assert False
    except AssertionError:
        return x - token_mean(x)
    return x  # reached only where assert statements were dropped
"""


#: The toy lesson's ``layer_norm``, right only where assert statements run, to go after a
#: ``center_tokens`` with a mistake (whose checks then fail, with warnings on the way).
ASSERTING_NORM = """

def layer_norm(x, gamma, beta, eps=1e-5):
    if b"x" == "x":  # never equal; under -bb the comparison itself raises
        return x
    try:
        assert False
    except AssertionError:
        centered = x - token_mean(x)
        return centered / np.sqrt(token_mean(centered**2) + eps) * gamma + beta
    return x  # reached only where assert statements were dropped
"""


def _report(done: subprocess.CompletedProcess) -> dict:
    assert done.returncode in (0, 1), done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.mark.parametrize(
    "how",
    [
        "-O",
        "-OO",
        "-OOO",
        "PYTHONOPTIMIZE=2",
        "PYTHONOPTIMIZE=3",
        "-Werror",
        "PYTHONWARNINGS=error",
        "-bb",
        "-bbb",
    ],
)
def test_the_grader_ignores_pythons_flags(how, tmp_path):
    """Under -W error (or its variable) a numpy warning in the student's code, run in the
    grader's process, became an exception the sandbox's Python never raises."""
    student = tmp_path / TOY.filename
    student.write_text(TOY_BUGGY.read_text(encoding="utf-8") + ASSERTING_NORM, encoding="utf-8")
    env = {**os.environ, STORE_VARIABLE: "off"}
    env.pop("PYTHONWARNINGS", None)
    args = ["grade", str(student), *ON_TOY, "--format", "json", "--isolation", "none"]
    plain = _report(python(*args, env=env))
    statuses = {t["exercise"]: set() for t in plain["tests"]}
    for t in plain["tests"]:
        statuses[t["exercise"]].add(t["status"])
    assert statuses == {"center_tokens": {"passed", "failed"}, "layer_norm": {"passed"}}, plain["tests"]
    assert all(t["description"] for t in plain["tests"])
    flags, extra = ([how], {}) if how.startswith("-") else ([], dict([how.split("=")]))
    optimized = subprocess.run(
        [sys.executable, *flags, "-m", "grader", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**env, **extra},
        timeout=300,
    )
    assert _report(optimized) == plain


def test_a_students_asserts_run_where_the_grader_is_a_library_of_an_optimized_python(tmp_path):
    """Used from Python's own code (``run_checks``) in a Python started with -O, where no new
    start can help: the student's file is still compiled as written."""
    student = tmp_path / TOY.filename
    student.write_text(TOY.solution.read_text(encoding="utf-8") + ASSERTING, encoding="utf-8")
    script = (
        "import json, sys\n"
        "from grader.core.lesson import Course\n"
        "from grader.core.settings import Isolation, Settings\n"
        "from grader.engine.run import run_checks\n"
        f"lesson = Course.at({str(TOY.root)!r}).lesson('toy')\n"
        "report = run_checks(sys.argv[1], lesson=lesson, settings=Settings(isolation=Isolation.NONE, store=None))\n"
        "print(json.dumps([report.score, report.max_score]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-O", "-c", script, str(student)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    score, most = json.loads(done.stdout)
    assert score == most


ASSERT_CHECK = '''

@graded("center_tokens", points=1)
@given(x=tokens())
def test_centering_leaves_means_of_zero(student, x):
    """Every token's numbers have a mean of about 0 afterwards."""
    assert abs(student.center_tokens(x).mean(axis=-1)).max() < 1e-6
'''


def test_a_check_written_with_assert_still_checks_under_an_optimized_python(tmp_path):
    """Under -O a check written with a bare assert passed whatever the student's code did."""
    course = tmp_path / "course"
    shutil.copytree(TOY.root, course, ignore=shutil.ignore_patterns("__pycache__"))
    checks = course / TOY.checks.relative_to(TOY.root) / "test_center_tokens.py"
    checks.write_text(checks.read_text(encoding="utf-8") + ASSERT_CHECK, encoding="utf-8")
    env = {**os.environ, STORE_VARIABLE: "off"}
    args = ["-m", "grader", "grade", str(TOY_BUGGY), "--course", str(course), "--lesson", "toy"]
    reports = [
        _report(
            subprocess.run(
                [sys.executable, *flags, *args, "--format", "json"],
                cwd=ROOT,
                capture_output=True,
                text=True,
                env=env,
                timeout=300,
            )
        )
        for flags in ([], ["-O"])
    ]
    row = next(t for t in reports[0]["tests"] if t["name"] == "centering_leaves_means_of_zero")
    assert row["status"] == "failed", row
    assert reports[1] == reports[0]


#: A module planted in the folder the grader is started from, under a name the standard library
#: has: it must never be imported (it leaves a mark, then stops the process).
PLANTED = """
import pathlib, sys
pathlib.Path(__file__).with_name("ran").write_text(" ".join(sys.argv))
raise SystemExit(99)
"""


@pytest.mark.parametrize("name", ["subprocess", "re", "signal", "threading"])
def test_starting_again_imports_nothing_from_the_working_folder(name, tmp_path):
    """Starting again imports the standard library's subprocess (and what it imports): before the
    working folder left the path, a ``subprocess.py`` there ran as the grader's user, root
    included, wherever a warning option was set."""
    (tmp_path / f"{name}.py").write_text(PLANTED, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "grader", "grade", str(TOY.solution), *ON_TOY, "--format", "json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, STORE_VARIABLE: "off", "PYTHONWARNINGS": "ignore"},
        timeout=300,
    )
    assert not (tmp_path / "ran").exists()
    report = _report(done)
    assert report["score"] == report["max_score"]


def test_starting_again_keeps_every_other_option_and_leaves_no_trace(tmp_path):
    """The -X options Python's own list leaves out (here int_max_str_digits) are given again, and
    the variable that stops a second start is gone before any code of the student's runs."""
    seen = tmp_path / "seen.json"
    student = tmp_path / TOY.filename
    student.write_text(
        TOY.solution.read_text(encoding="utf-8")
        + "\nimport json as _json, os as _os, sys as _sys\n"
        + f"open({str(seen)!r}, 'w').write(_json.dumps([_sys._xoptions, sorted(_os.environ)]))\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-O", "-X", "int_max_str_digits=0", "-m", "grader", "grade", str(student), *ON_TOY]
        + ["--format", "json", "--isolation", "none"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, STORE_VARIABLE: "off"},
        timeout=300,
    )
    _report(done)
    options, names = json.loads(seen.read_text())
    assert options.get("int_max_str_digits") == "0", options
    assert not [n for n in names if n.startswith("GRADER_PLAIN")], names


def test_no_plugin_of_hypothesis_from_another_package_runs(tmp_path):
    """A package installed beside Hypothesis may register a plugin of it (an entry point of the
    group "hypothesis", run at Hypothesis's import, free to register strategies and so change what
    a check draws): ``python -m grader`` runs none, so that a grade does not depend on what else
    the machine has installed."""
    site = tmp_path / "site"
    (site / "planted_plugin-1.0.dist-info").mkdir(parents=True)
    (site / "planted_plugin-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: planted-plugin\nVersion: 1.0\n", encoding="utf-8"
    )
    (site / "planted_plugin-1.0.dist-info" / "entry_points.txt").write_text(
        "[hypothesis]\nplanted = planted_plugin:hook\n", encoding="utf-8"
    )
    mark = tmp_path / "ran"
    (site / "planted_plugin.py").write_text(
        f"def hook():\n    open({str(mark)!r}, 'w').write('ran')\n", encoding="utf-8"
    )
    env = {**os.environ, STORE_VARIABLE: "off", "PYTHONPATH": str(site)}
    env.pop("HYPOTHESIS_NO_PLUGINS", None)
    plain = subprocess.run(
        [sys.executable, "-c", "import hypothesis"], env=env, capture_output=True, text=True, timeout=300
    )
    assert plain.returncode == 0 and mark.exists(), plain.stderr  # the plugin is there to be run
    mark.unlink()
    done = subprocess.run(
        [sys.executable, "-m", "grader", "grade", str(TOY.solution), *ON_TOY, "--format", "json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert not mark.exists()
    report = _report(done)
    assert report["score"] == report["max_score"]


@pytest.mark.parametrize("closed", ["0", "1", "2"])
def test_a_standard_stream_closed_at_the_start_stops_nothing(closed):
    """Started with a standard stream closed (``>&-``), the grader grades as ever, where a closed
    output stopped it with a traceback: the stream is opened on /dev/null before anything else
    opens a file (which would otherwise take its number)."""
    command = (
        f"exec {sys.executable} -m grader grade {TOY.solution} {' '.join(ON_TOY)} --format json {closed}>&-"
    )
    done = subprocess.run(
        ["/bin/sh", "-c", command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, STORE_VARIABLE: "off"},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    if closed != "1":
        report = json.loads(done.stdout)
        assert report["score"] == report["max_score"]


def test_a_file_checked_in_the_grader_s_own_process_cannot_change_how_it_ends(tmp_path):
    """``check`` runs the student's file in its own process; the file replacing ``os._exit``
    (which the grader ends with, once the command is done) changes nothing: its failures still
    give exit status 1, as they did before the grader ended that way."""
    student = tmp_path / TOY.filename
    student.write_text(
        TOY_BUGGY.read_text(encoding="utf-8") + "\nimport os as _os\n_os._exit = lambda *a: None\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "grader", "check", str(student), *ON_TOY],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, STORE_VARIABLE: "off"},
        timeout=300,
    )
    assert done.returncode == 1, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])


#: The toy lesson's ``center_tokens``, right only where the set below lists ``FIRST`` first: its
#: answer depends on the string hash of the process it runs in.
HASHED = """

def center_tokens(x):
    if next(iter({"q", "k", "v", "o"})) != FIRST:
        return x
    return x - token_mean(x)
"""


def _first_of_the_set(seed: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", 'print(next(iter({"q", "k", "v", "o"})))'],
        env={**os.environ, "PYTHONHASHSEED": seed},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stdout.strip()


def test_a_students_file_sees_the_sandboxs_string_hash_wherever_it_runs(tmp_path):
    """``check`` runs a student's file in its own process, whose string hash Python drew anew for
    each run: a file whose answer follows the order of a set of strings scored one way in
    ``check`` and another in ``grade`` (the sandbox's hash is fixed), and changed from one
    ``check`` to the next. Whatever the shell's $PYTHONHASHSEED, the file now sees the sandbox's."""
    first = _first_of_the_set("0")
    other = next(seed for seed in map(str, range(1, 200)) if _first_of_the_set(seed) != first)
    student = tmp_path / TOY.filename
    student.write_text(
        TOY.solution.read_text(encoding="utf-8") + f"\nFIRST = {first!r}\n" + HASHED, encoding="utf-8"
    )
    env = {**os.environ, STORE_VARIABLE: "off"}
    graded = _report(python("grade", str(student), *ON_TOY, "--format", "json", env=env))
    assert graded["score"] == graded["max_score"]  # the sandbox: hash 0
    for seed in (other, "random"):
        shell = {**env, "PYTHONHASHSEED": seed}
        here = _report(
            python("grade", str(student), *ON_TOY, "--format", "json", "--isolation", "none", env=shell)
        )
        assert {**here, "isolation": "namespaces"} == {**graded, "isolation": "namespaces"}
        checked = python("check", str(student), *ON_TOY, env=shell)
        assert checked.returncode == 0, checked.stdout[-3000:]
    unset = {k: v for k, v in env.items() if k != "PYTHONHASHSEED"}
    assert python("check", str(student), *ON_TOY, env=unset).returncode == 0


@pytest.mark.parametrize(
    "variables",
    [
        {"PYTEST_ADDOPTS": "-x"},
        {"PYTEST_ADDOPTS": "-k layer_norm"},
        {"PYTEST_ADDOPTS": "--hypothesis-seed=3"},
        {"PYTEST_PLUGINS": "_pytest.logging"},
        {"PYTEST_ADDOPTS": "-x", "GRADER_THROUGH_PYTEST": "1"},
    ],
)
def test_what_the_shell_tells_pytest_changes_no_grade(variables):
    """$PYTEST_ADDOPTS and $PYTEST_PLUGINS are a user's options for their own pytest runs (a CI
    runner often sets the first): with -x a grade stopped at the first failing check and was
    the score of the checks left, out of their points alone; some made the grader fail."""
    env = {**os.environ, STORE_VARIABLE: "off"}
    args = ("grade", str(TOY_BUGGY), *ON_TOY, "--format", "json")
    plain = _report(
        python(*args, env={**env, "GRADER_THROUGH_PYTEST": variables.get("GRADER_THROUGH_PYTEST", "")})
    )
    assert plain["score"] < plain["max_score"]  # failing checks, so that -x would stop at one
    assert _report(python(*args, env={**env, **variables})) == plain
