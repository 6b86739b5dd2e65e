"""Every command the README shows runs as written.

Which commands: every line of a fenced ```` ```bash ```` block of README.md (a line ending in
``\\`` goes on on the next; ``&&`` separates commands) that starts with ``python -m grader``. The
other commands of those blocks (making a virtual environment, ``pip install``, the project's own
``pytest``) are not the grader's and are not run here. A block whose last non-blank line before
its fence is ``<!-- readme-commands: skip: REASON -->`` is not run, for that reason (a command
that needs an outside service, or a placeholder such as ``NAME``). :func:`test_what_is_not_run_is_said`
lists what is left out and why.

How: once, in README order, in a copy of the project's course in a temporary folder, as the
README implies (the course's root is the working folder), with the files its commands name
beside it (:func:`course`): a class with one student ``submissions/ada/`` (the reference with
one mistake of the catalog), a Canvas roster ``canvas_export.csv``, a kv_cache submission
``ada/kv_cache.py`` and class ``kv_class/``, and nbgrader's collected notebook
``course/submitted/ada/attention/attention.ipynb``. Each command must exit with a code the
README documents for it (``check``: 0, 1 or 75; every other: 0 or 75) and print no traceback.
The commands that need output of earlier ones (``export`` and ``report`` read the gradebook
``batch`` wrote) get it from them, as a reader following the README would.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from .support import ATTENTION, KV_CACHE, ROOT, composed, grader_outside, net

README = ROOT / "README.md"
FENCE = re.compile(r"^\s*```(\S*)\s*$")
SKIP = re.compile(r"^\s*<!--\s*readme-commands:\s*skip:\s*(?P<reason>.+?)\s*-->\s*$")
GRADER = ("python", "-m", "grader")
#: The exit codes the README documents ("For CI", "For students"): check 0 all pass, 1 some fail;
#: 75 a grade the machine was too busy to finish; every other command 0 once it did its work.
DOCUMENTED = {"check": {0, 1, 75}}
OTHERWISE = {0, 75}
#: What a copy of the course holds: the lessons' files, and what the release and the notebooks
#: are made from.
COURSE_FILES = ("solutions", "exercises", "examples", "tests/__init__.py", "tests/checks", "pyproject.toml")


@dataclass(frozen=True)
class Command:
    line: int
    """Where it is written in README.md (from 1)."""
    text: str
    reason: str = ""
    """Why it is not run (empty: it is run)."""

    @property
    def words(self) -> list[str]:
        return shlex.split(self.text, comments=True)


def readme_commands(text: str) -> list[Command]:
    """Every command of the README's bash blocks, run or not (with why not)."""
    found: list[Command] = []
    lines = text.splitlines()
    inside, language, skip = False, "", ""
    pending: list[tuple[int, str]] = []
    for number, line in enumerate(lines, 1):
        fence = FENCE.match(line)
        if fence and not inside:
            inside, language = True, fence.group(1)
            before = next((lines[i] for i in range(number - 2, -1, -1) if lines[i].strip()), "")
            marked = SKIP.match(before)
            skip = marked.group("reason") if marked else ""
            continue
        if fence and inside:
            inside = False
            continue
        if not inside or language != "bash":
            continue
        pending.append((number, line.strip()))
        if line.rstrip().endswith("\\"):
            continue
        start = pending[0][0]
        joined = " ".join(part.rstrip("\\").strip() for _, part in pending)
        pending = []
        for part in joined.split(" && "):
            part = part.strip()
            if not part or part.startswith("#"):
                continue
            if skip:
                found.append(Command(start, part, skip))
            elif tuple(shlex.split(part, comments=True)[:3]) != GRADER:
                found.append(
                    Command(start, part, "not a command of the grader (an install, the project's tests)")
                )
            else:
                found.append(Command(start, part))
    return found


COMMANDS = readme_commands(README.read_text(encoding="utf-8"))
RUN = [c for c in COMMANDS if not c.reason]


def test_what_is_not_run_is_said(capsys):
    """Each command left out has its reason; the list is printed (``pytest -s``), with its count."""
    left = [c for c in COMMANDS if c.reason]
    with capsys.disabled():
        print(f"\nREADME: {len(RUN)} commands run, {len(left)} not run:")
        for c in left:
            print(f"  README.md:{c.line}: {c.text!r}: {c.reason}")
    assert all(c.reason.strip() for c in left)
    assert len(RUN) >= 20  # the README's commands are found (a broken extractor finds none)
    assert {c.words[3] for c in RUN} >= {"check", "grade", "gallery", "batch", "export", "release"}


def test_the_extractor_reads_blocks_as_the_module_says():
    text = textwrap_block()
    got = [(c.line, " ".join(c.words), bool(c.reason)) for c in readme_commands(text)]
    assert got == [
        (2, "python3 -m venv .venv", True),
        (2, "python -m grader gallery --lesson attention", False),
        (5, "python -m grader batch a/ --out b.csv --roster r.csv", False),
        (10, "python -m grader check NAME.py", True),
    ]


def textwrap_block() -> str:
    return "\n".join(
        [
            "```bash",
            "python3 -m venv .venv && python -m grader gallery --lesson attention",
            "```",
            "```bash",
            "python -m grader batch a/ --out b.csv \\",
            "    --roster r.csv   # a comment",
            "```",
            "<!-- readme-commands: skip: a placeholder -->",
            "```bash",
            "python -m grader check NAME.py",
            "```",
            "```python",
            "python -m grader check not-shell.py",
            "```",
        ]
    )


def _notebook(code: str) -> str:
    """A notebook of one code cell (no nbgrader metadata: every code cell is the submission)."""
    cell = {"cell_type": "code", "metadata": {}, "source": code, "outputs": [], "execution_count": None}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    return make_course(tmp_path_factory.mktemp("readme") / "project")


def make_course(root: Path) -> Path:
    """A copy of the project's course at ``root``, with the files the README's commands name."""
    for name in COURSE_FILES:
        source, target = ROOT / name, root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copyfile(source, target)
    # students who made one mistake each (the catalog's): every report has a failure to show, and
    # each of the many gradings below costs less than a file of several mistakes would
    attention = composed(ATTENTION.catalog / "bugs" / "mha_scale_sqrt_D.py", ATTENTION)
    kv_cache = composed(KV_CACHE.catalog / "bugs" / "decode_scale_sqrt_D.py", KV_CACHE)
    for path, text in (
        ("submissions/ada/attention.py", attention),
        ("ada/kv_cache.py", kv_cache),
        ("kv_class/bea/kv_cache.py", kv_cache),
        ("course/submitted/ada/attention/attention.ipynb", _notebook(attention)),
        ("canvas_export.csv", "Student,ID,SIS User ID,SIS Login ID,Section\nAda Lovelace,1,1001,ada,A\n"),
    ):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    return root


def test_every_command_of_the_readme_runs_as_written(course):
    failures = []
    for command in RUN:
        words = command.words
        done = grader_outside(*words[3:], cwd=course, timeout=net(5))
        allowed = DOCUMENTED.get(words[3], OTHERWISE)
        said = done.stdout + done.stderr
        if done.returncode not in allowed or "Traceback" in said:
            failures.append(
                f"README.md:{command.line}: {command.text}\n  exit {done.returncode} (documented: "
                f"{sorted(allowed)})\n  {said[-1500:]}"
            )
    assert not failures, "\n".join(failures)
