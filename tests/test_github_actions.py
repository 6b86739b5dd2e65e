"""The release's workflow, run step by step as GitHub's runner runs it: the job summary, one
annotation per exercise that lost points, a single total, a failing job only when asked for.

Only GitHub's runner is mocked, by its published behaviour: a ``run:`` step is a script run with
``bash -e`` in the checkout ($GITHUB_WORKSPACE), with $GITHUB_STEP_SUMMARY and $GITHUB_OUTPUT
naming files under $RUNNER_TEMP/_runner_file_commands/; lines of stdout of the form
``::command props::message`` are workflow commands, unescaped as GitHub's toolkit escapes them,
and none is read between ``::stop-commands::TOKEN`` and ``::TOKEN::``.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
import yaml

from grader.formats.github import escape_data, escape_property

from .support import ON_TOY, TOY, TOY_BUGGY, compose, python

#: A center_tokens whose error message holds workflow commands, on its first line and on lines of
#: their own.
HOSTILE = """
def center_tokens(x):
    raise ValueError(
        "no ::error title=forged,file=x::all passed\\n::error title=forged::you passed\\n::add-mask::secret"
    )
"""


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    """Two releases of the toy lesson (the workflow is the grader's, not a lesson's): the default
    one, and one whose instructor asked to fail below 10 points (of its 12 visible ones)."""
    made = {}
    for name, extra in (("plain", []), ("strict", ["--fail-under", "10"])):
        out = tmp_path_factory.mktemp(name) / "toy-exercises"
        done = python("release", *ON_TOY, str(out), *extra)
        assert done.returncode == 0, done.stderr
        made[name] = out
    return made


def _unescape(text: str, *, prop: bool = False) -> str:
    if prop:
        text = text.replace("%2C", ",").replace("%3A", ":")
    return text.replace("%0A", "\n").replace("%0D", "\r").replace("%25", "%")


def workflow_commands(stdout: str) -> list[tuple[str, dict, str]]:
    """(command, properties, message) of every workflow command in ``stdout``, as the runner reads
    them. Stricter than the runner on purpose: a line counts even with spaces before its ``::``."""
    found, stopped = [], None
    for line in stdout.splitlines():
        line = line.strip()
        if stopped is not None:
            if line == f"::{stopped}::":
                stopped = None
            continue
        match = re.fullmatch(r"::([a-z-]+)(?: ([^:]*))?::(.*)", line)
        if not match:
            continue
        command, props, message = match.groups()
        if command == "stop-commands":
            stopped = message
            continue
        properties = dict(p.split("=", 1) for p in props.split(",")) if props else {}
        properties = {k: _unescape(v, prop=True) for k, v in properties.items()}
        found.append((command, properties, _unescape(message)))
    return found


#: A step's ``env:`` value that reads a repository secret, as GitHub's expressions write it.
SECRET = re.compile(r"\$\{\{\s*secrets\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def step_env(step: dict, secrets: dict[str, str]) -> dict[str, str]:
    """The environment the step's ``env:`` gives it: a repository secret that is not set is the
    empty string, as on GitHub; any other expression is beyond this mock."""
    env = {}
    for name, value in (step.get("env") or {}).items():
        value = str(value)
        assert "${{" not in SECRET.sub("", value), f"an expression the mock does not evaluate: {value}"
        env[name] = SECRET.sub(lambda m: secrets.get(m.group(1), ""), value)
    return env


def run_step(
    release: Path,
    step_id: str,
    tmp_path: Path,
    submission: Path | None = None,
    secrets: dict[str, str] | None = None,
):
    """Run the workflow's step ``step_id`` in a fresh checkout of ``release``, as the runner
    would, with the repository's ``secrets``; returns (the finished process, the job summary,
    the step's outputs)."""
    workspace = tmp_path / "workspace"
    shutil.copytree(release, workspace)
    if submission is not None:
        shutil.copy(submission, workspace / "exercises" / TOY.filename)
    workflow = yaml.safe_load((release / ".github" / "workflows" / "classroom.yml").read_text())
    (job,) = workflow["jobs"].values()
    (step,) = [s for s in job["steps"] if s.get("id") == step_id]
    commands = workspace.parent / "runner_temp" / "_runner_file_commands"
    commands.mkdir(parents=True)
    summary = commands / f"step_summary_{uuid.uuid4()}"
    output = commands / f"set_output_{uuid.uuid4()}"
    summary.touch()
    output.touch()
    script = workspace.parent / "runner_temp" / f"{uuid.uuid4()}.sh"
    script.write_text(step["run"])
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("GRADER_SERVER", "GRADER_TOKEN")},
        **step_env(step, secrets or {}),
        "GITHUB_ACTIONS": "true",
        "CI": "true",
        "GITHUB_WORKSPACE": str(workspace),
        "RUNNER_TEMP": str(commands.parent),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(output),
    }
    done = subprocess.run(
        ["bash", "-e", str(script)], cwd=workspace, env=env, capture_output=True, text=True, timeout=600
    )
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if line)
    return done, summary.read_text(encoding="utf-8"), outputs


def test_the_workflow_no_longer_needs_github_classroom(releases):
    workflow = yaml.safe_load((releases["plain"] / ".github/workflows/classroom.yml").read_text())
    (job,) = workflow["jobs"].values()
    assert not any("autograding-grading-reporter" in str(s.get("uses", "")) for s in job["steps"])
    assert "Classroom is retired" in (releases["plain"] / ".github/workflows/classroom.yml").read_text()


def test_a_push_of_buggy_code_gets_annotations_a_summary_and_one_total(releases, tmp_path):
    done, summary, outputs = run_step(releases["plain"], "grade", tmp_path, TOY_BUGGY)
    assert done.returncode == 0, done.stderr[-3000:]
    # the version 3 result, for a reporter that still reads it
    result = json.loads(base64.b64decode(outputs["result"]))
    assert result["version"] == 3
    score, best = sum(t["score"] for t in result["tests"]), result["max_score"]
    assert 0 < score < best
    # one annotation per exercise that lost points, with its first reason
    per = {}
    for t in result["tests"]:
        got, most = per.get(t["test_code"].split("::")[0], (0, 0))
        per[t["test_code"].split("::")[0]] = (got + t["score"], most + t["max_score"])
    losing = {name for name, (got, most) in per.items() if got < most}
    notes = workflow_commands(done.stdout)
    assert sorted(p["title"].split(":")[0] for _, p, _ in notes) == sorted(losing)
    for command, props, message in notes:
        name = props["title"].split(":")[0]
        got, most = per[name]
        assert props["title"] == f"{name}: {got:g}/{most:g}"
        assert command == ("error" if got == 0 else "warning")
        assert props["file"] == "exercises/toy.py"
        first = next(t for t in result["tests"] if t["test_code"].startswith(name) and t["status"] != "pass")
        assert message.startswith(first["name"].split(": ", 1)[1] + ": ")
        assert message.split(": ", 1)[1].rstrip(".") in first["message"].splitlines()[0]
    # the job summary: the total once, a line per exercise, the readable report
    assert summary.startswith(f"## toy: {score:g}/{best:g}\n")
    for name, (got, most) in per.items():
        assert f"| `{name}` | {got:g}/{most:g} |" in summary
    assert "Smallest input found:" in summary
    assert "This is a practice score" in summary and "layer_norm uses your" in summary  # no secret
    # a single total: every total the log shows is the same
    log = done.stdout + done.stderr
    totals = set(re.findall(rf"(\d+(?:\.\d+)?)/{best:g}\b", log))
    assert totals == {f"{score:g}"}, totals
    assert '"version": 3' not in done.stdout  # no raw JSON in the log


def test_the_job_fails_only_when_the_instructor_asks(releases, tmp_path):
    stubs, _, _ = run_step(releases["plain"], "grade", tmp_path / "a")
    assert stubs.returncode == 0, stubs.stderr[-2000:]
    strict, summary, _ = run_step(releases["strict"], "grade", tmp_path / "b")
    assert strict.returncode == 1 and "below 10" in strict.stderr
    assert summary.startswith("## toy: 0/")  # the feedback is written all the same
    passing, _, _ = run_step(releases["strict"], "grade", tmp_path / "c", TOY.solution)
    assert passing.returncode == 0, passing.stderr[-2000:]
    assert workflow_commands(passing.stdout) == []


def test_a_students_message_cannot_pass_for_a_workflow_command(releases, tmp_path):
    """An exception message with ``::error::`` or ``::add-mask::`` lines is printed in the log
    between stop-commands markers, and annotations escape it; the summary shows it as code."""
    (tmp_path / "override.py").write_text(HOSTILE)
    hostile = compose(tmp_path / "override.py", tmp_path / "hostile", TOY)
    done, summary, _ = run_step(releases["plain"], "grade", tmp_path / "run", hostile)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "::error title=forged" in done.stdout  # the message is in the log ...
    notes = workflow_commands(done.stdout)
    assert [props.get("title", "") for _, props, _ in notes if "forged" in props.get("title", "")] == []
    assert not any(command == "add-mask" for command, _, _ in notes)  # ... but never run
    (center,) = [n for n in notes if n[1]["title"].startswith("center_tokens")]
    assert "::error title=forged" in center[2]  # inside an escaped message, on one line
    assert "::add-mask::secret" in summary.split("```text", 1)[1]  # shown as code in the summary


def test_escaping_follows_github_s_toolkit():
    assert escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert escape_property("a: b, c%\n") == "a%3A b%2C c%25%0A"


def test_summary_needs_the_variable():
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    done = python("grade", str(TOY.solution), *ON_TOY, "--github-summary", env=env)
    assert done.returncode == 2 and "--github-summary needs $GITHUB_STEP_SUMMARY" in done.stderr


def test_the_token_reaches_the_grade_step_from_the_secret_alone(releases):
    """The step reads the repository secret GRADER_TOKEN into its environment and never names
    the token elsewhere: not on a command line, not in an echo, in no other step."""
    workflow = yaml.safe_load((releases["plain"] / ".github/workflows/classroom.yml").read_text())
    (job,) = workflow["jobs"].values()
    (grade,) = [s for s in job["steps"] if s.get("id") == "grade"]
    assert grade["env"] == {"GRADER_TOKEN": "${{ secrets.GRADER_TOKEN }}"}
    assert "TOKEN" not in grade["run"] and "set -x" not in grade["run"]
    others = [s for s in job["steps"] if s is not grade]
    assert "secrets" not in json.dumps(others)
