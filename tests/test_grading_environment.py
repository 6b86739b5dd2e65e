"""The grading machine's own settings never change a grade: a property-based search over them.

Hypothesis draws how the grader is started (the umask, the locale, the time zone, Python's flags
and hash seed, warnings turned into errors, options and plugins for pytest, the terminal's width, a missing or odd home and
temporary folder, the folder it is started from, the isolation level) and each ``grade`` of a
file with a mistake must give the report that file gets under plain settings. The cases behind it
were found by hand first: under ``umask 077`` every sandboxed file scored 0, and under
``PYTHONOPTIMIZE`` the checks lost their descriptions and ``check`` scored a file that relies on
assert statements otherwise than ``grade``. Each example is one ``grade`` in a fresh process,
so the search is short; the profile is fixed (derandomized, no database), the same in CI as on
a laptop.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.core.settings import STORE_VARIABLE

from .support import ON_TOY, ROOT, TOY, TOY_BUGGY


def _first_of_the_set() -> str:
    """The first of a set of strings where the string hash is the sandbox's (seed 0)."""
    done = subprocess.run(
        [sys.executable, "-c", 'print(next(iter({"q", "k", "v", "o"})))'],
        env={**os.environ, "PYTHONHASHSEED": "0"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


#: A file with a mistake that relies on its assert statements: its report holds failures,
#: counterexamples and descriptions, and would change if asserts were dropped; and whose
#: ``layer_norm`` is right only under the sandbox's string hash and file-creation mask, which a
#: file run in the grader's own process, or in a sandbox that inherits them, would otherwise see
#: as the machine has them.
SUBMISSION = (
    TOY_BUGGY.read_text(encoding="utf-8")
    + f"\nimport os\n\nFIRST = {_first_of_the_set()!r}\n"
    + """

def layer_norm(x, gamma, beta, eps=1e-5):
    try:
        assert eps > 0
    except AssertionError:
        return x
    if next(iter({"q", "k", "v", "o"})) != FIRST:  # the string hash it runs under
        return x
    if os.path.exists("/proc/self/status") and "Umask:\t0022" not in open("/proc/self/status").read():
        return x
    centered = x - token_mean(x)
    return centered / np.sqrt(token_mean(centered**2) + eps) * gamma + beta
"""
)

UNSET = None
#: The variables drawn (each set, or left out).
VARIABLES = (
    "LANG",
    "LC_ALL",
    "TZ",
    "PYTHONOPTIMIZE",
    "PYTHONHASHSEED",
    "PYTHONWARNINGS",
    "PYTHONIOENCODING",
    "PYTHONUTF8",
    "COLUMNS",
    "TERM",
    "PYTEST_ADDOPTS",
    "PYTEST_PLUGINS",
)

ENVIRONMENTS = st.fixed_dictionaries(
    {
        "umask": st.sampled_from([0o022, 0o077, 0o027, 0o002]),
        "LANG": st.sampled_from([UNSET, "C", "C.UTF-8", "tr_TR.UTF-8"]),
        "LC_ALL": st.sampled_from([UNSET, "C", "POSIX"]),
        "TZ": st.sampled_from([UNSET, "UTC", "Pacific/Kiritimati", "America/St_Johns"]),
        "PYTHONOPTIMIZE": st.sampled_from([UNSET, "1", "2"]),
        "PYTHONHASHSEED": st.sampled_from([UNSET, "random", "0", "4242"]),
        "PYTHONWARNINGS": st.sampled_from([UNSET, "error", "ignore"]),
        "PYTHONIOENCODING": st.sampled_from([UNSET, "ascii", "latin-1"]),
        "PYTHONUTF8": st.sampled_from([UNSET, "0", "1"]),
        "COLUMNS": st.sampled_from([UNSET, "20", "300"]),
        "TERM": st.sampled_from([UNSET, "dumb", "xterm-256color"]),
        "PYTEST_ADDOPTS": st.sampled_from([UNSET, "-x", "-k layer_norm", "--maxfail=1"]),
        "PYTEST_PLUGINS": st.sampled_from([UNSET, "_pytest.logging"]),
        "HOME": st.sampled_from(["as it is", UNSET, "a file", "a folder with a space é"]),
        "TMPDIR": st.sampled_from([UNSET, "a folder with a space é"]),
        "from": st.sampled_from(["the course", "elsewhere"]),
        "isolation": st.sampled_from(["none", "namespaces"]),
    }
)


def _grade(tmp: Path, isolation: str, env: dict[str, str], cwd: Path, umask: int = 0o022) -> dict:
    student = tmp / "submission" / TOY.filename
    student.parent.mkdir(exist_ok=True)
    student.write_text(SUBMISSION, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "grader", "grade", str(student), *ON_TOY, "--format", "json"]
        + ["--isolation", isolation],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=lambda: os.umask(umask),
    )
    assert done.returncode in (0, 1), done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return {**json.loads(done.stdout), "submission": ""}


def _plain_environment() -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k not in VARIABLES}, STORE_VARIABLE: "off"}


@cache
def plain(isolation: str) -> dict:
    """The report under plain settings (computed once per level)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return _grade(Path(tmp), isolation, _plain_environment(), ROOT)


@settings(
    max_examples=8,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
@given(drawn=ENVIRONMENTS)
def test_no_setting_of_the_grading_machine_changes_a_grade(drawn, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("machine")
    env = _plain_environment()
    for name in VARIABLES:
        if drawn[name] is not UNSET:
            env[name] = drawn[name]
    odd = tmp / "a folder with a space é"
    odd.mkdir()
    if drawn["HOME"] is UNSET:
        env.pop("HOME", None)
    elif drawn["HOME"] == "a file":
        (tmp / "home-file").write_text("not a folder")
        env["HOME"] = str(tmp / "home-file")
    elif drawn["HOME"] != "as it is":
        env["HOME"] = str(odd)
    if drawn["TMPDIR"] is not UNSET:
        env["TMPDIR"] = str(odd)
    cwd = ROOT if drawn["from"] == "the course" else tmp
    report = _grade(tmp, drawn["isolation"], env, cwd, drawn["umask"])
    assert report == plain(drawn["isolation"]), drawn
