"""Grading a whole class: the gradebook, the CSV, the reports, resuming, interruptions."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from grader.core.settings import STORE_VARIABLE

from .support import (
    ATTENTION,
    ON_TOY,
    ROOT,
    TOY,
    TOY_BATCH,
    TOY_BUGGY,
    TOY_COURSE,
    compose,
    from_a_terminal,
    graded_count,
    live_processes,
    python,
)

BUGGY = ATTENTION.gallery / "typical-mistakes" / "attention.py"
#: The toy lesson's likely mistake: for tests of the batch's own workings, where any lesson does.
LOOP = Path(__file__).parent / "scenarios" / "infinite_loop" / "override.py"


def make_class(root: Path) -> Path:
    """A small class with the situations a real one has."""
    klass = root / "class"
    for student, source in [("ada", ATTENTION.solution), ("bob", BUGGY), ("carl smith", ATTENTION.stubs)]:
        (klass / student).mkdir(parents=True)
        shutil.copy(source, klass / student / "attention.py")
    compose(LOOP, klass / "mallory")  # a function that never returns
    (klass / "Ada").mkdir()  # same student as ada?
    shutil.copy(ATTENTION.solution, klass / "Ada" / "attention.py")
    (klass / "eve").mkdir()  # handed in nothing
    (klass / "frank" / "attention.py").mkdir(parents=True)  # a folder where the file should be
    (klass / "notes.txt").write_text("not a student\n")
    return klass


def batch(klass: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return python(
        "batch", "--lesson", "attention", str(klass), "--out", str(out), "--call-timeout", "1", *extra
    )


def toy_batch(klass: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    """``batch`` of a class of the toy lesson."""
    return python("batch", *ON_TOY, str(klass), "--out", str(out), *extra)


def full_marks(row: dict) -> bool:
    return row["score"] == row["max_score"] != ""


def read_csv(path: Path) -> dict[str, dict]:
    with path.open(newline="") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


def test_batch_writes_gradebook_csv_and_reports(tmp_path):
    klass = make_class(tmp_path)
    out = tmp_path / "grades" / "gradebook.csv"
    done = batch(klass, out)
    assert done.returncode == 0, done.stderr
    rows = read_csv(out)
    assert list(next(iter(rows.values()))) == [
        "student",
        "score",
        "max_score",
        *ATTENTION.exercises,
        "status",
    ]
    assert set(rows) == {"ada", "Ada", "bob", "carl smith", "mallory", "eve", "frank"}
    assert rows["ada"]["score"] == rows["ada"]["max_score"] == "100"
    assert rows["carl smith"]["score"] == "0"
    assert 0 < int(rows["bob"]["score"]) < 100
    assert rows["mallory"]["merge_heads"] == "0" and rows["mallory"]["split_heads"] == "20"
    assert rows["eve"]["score"] == "0" and rows["eve"]["max_score"] == "100"
    assert rows["eve"]["status"] == "missing" and rows["frank"]["status"] == "unreadable"
    assert rows["bob"]["status"] == "graded"
    # the database is the source of truth
    db = sqlite3.connect(out.with_suffix(".sqlite"))
    status = dict(db.execute("SELECT student, status FROM grades"))
    assert status == {
        "ada": "graded",
        "Ada": "graded",
        "bob": "graded",
        "carl smith": "graded",
        "mallory": "graded",
        "eve": "missing",
        "frank": "unreadable",
    }
    report = json.loads(db.execute("SELECT report FROM grades WHERE student = 'bob'").fetchone()[0])
    assert report["isolation"] in ("namespaces", "process")
    # one JSON and one text report per student
    reports = out.with_name("gradebook_reports")
    assert json.loads((reports / "bob.json").read_text())["score"] == int(rows["bob"]["score"])
    assert "split_heads" in (reports / "bob.txt").read_text()
    assert any(p.name.startswith("carl_smith-") for p in reports.iterdir())
    assert "used more than 1 s of processor time" in (reports / "mallory.json").read_text()
    # odd things are listed, not fatal
    for fragment in [
        "/eve is a folder without attention.py in it",
        "'frank': attention.py could not be read",
        "'notes.txt': not a folder",
        "'Ada' and 'ada' look like the same student",
        "'carl smith': an unusual student id",
    ]:
        assert fragment in done.stdout, fragment


def test_a_second_run_grades_only_what_changed(tmp_path):
    klass = tmp_path / "class"
    for student in ("ada", "bob"):
        (klass / student).mkdir(parents=True)
        shutil.copy(TOY.solution, klass / student / "toy.py")
    out = tmp_path / "gradebook.csv"
    assert toy_batch(klass, out).returncode == 0
    again = toy_batch(klass, out)
    assert "0 to grade, 2 unchanged" in again.stderr
    shutil.copy(TOY_BUGGY, klass / "bob" / "toy.py")
    third = toy_batch(klass, out)
    assert "1 to grade, 1 unchanged" in third.stderr
    rows = read_csv(out)
    assert full_marks(rows["ada"]) and not full_marks(rows["bob"])


@pytest.mark.parametrize("how", ["SIGKILL to the process group", "Ctrl-C"])
def test_an_interrupted_batch_loses_no_finished_grade(tmp_path, how):
    klass = tmp_path / "class"
    size = 6  # enough that the batch is still busy when it is interrupted after two grades
    for i in range(size):
        (klass / f"s{i}").mkdir(parents=True)
        shutil.copy(TOY.solution if i % 2 else TOY_BUGGY, klass / f"s{i}" / "toy.py")
    out = tmp_path / "gradebook.csv"
    db = out.with_suffix(".sqlite")
    scratch = tmp_path / "tmp"  # the batch's temporary folders: none left after Ctrl-C
    scratch.mkdir()
    command = [
        *TOY_BATCH,
        str(klass),
        "--out",
        str(out),
        "--jobs",
        "1",
    ]
    # a SIGKILL leaves its folders in scratch, not in /tmp
    proc = from_a_terminal(command, cwd=ROOT, env={**os.environ, "TMPDIR": str(scratch)})
    while graded_count(db) < 2 and proc.poll() is None:  # a count, however long the machine takes
        time.sleep(0.05)
    if how == "Ctrl-C":
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 130
        assert os.listdir(scratch) == []
    else:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=600)
    kept = graded_count(db)
    assert 2 <= kept < size
    # nothing of the batch survives it (zombies waiting for init to reap them do not run)
    time.sleep(0.5)
    assert live_processes(pgid=proc.pid) == []
    # the same command finishes the job, grading only what is missing
    done = toy_batch(klass, out)
    assert done.returncode == 0, done.stderr
    assert f"{size - kept} to grade, {kept} unchanged" in done.stderr
    rows = read_csv(out)
    assert [full_marks(rows[f"s{i}"]) for i in range(size)] == [bool(i % 2) for i in range(size)]


def test_a_students_reports_are_the_ones_grade_writes(tmp_path):
    """The JSON form of a report is lossless: the batch's text report of a buggy submission is
    the very text ``grade`` prints for it (smallest failing inputs included), and its JSON
    report the very JSON ``grade --format json`` writes."""
    klass = tmp_path / "class"
    (klass / "bob").mkdir(parents=True)
    shutil.copy(TOY_BUGGY, klass / "bob" / "toy.py")
    out = tmp_path / "grades" / "gradebook.csv"
    done = toy_batch(klass, out, "--jobs", "1")
    assert done.returncode == 0, done.stderr
    course = ("--course", str(TOY_COURSE))
    text = python("grade", str(klass / "bob"), *course)
    assert text.returncode == 0, text.stderr
    reports = out.with_name("gradebook_reports")
    assert "Smallest input found:" in text.stdout
    assert (reports / "bob.txt").read_text(encoding="utf-8") == text.stdout
    as_json = python("grade", str(klass / "bob"), *course, "--format", "json")
    assert json.loads((reports / "bob.json").read_text(encoding="utf-8")) == json.loads(as_json.stdout)
    as_html = python("grade", str(klass / "bob"), *course, "--format", "html")
    assert (reports / "bob.html").read_text(encoding="utf-8") == as_html.stdout


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text() if entry.name.isdigit() else ""
        except OSError:
            continue
        if stat and int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def _grading(pid: int) -> bool:
    try:
        return b"grade-stream" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def test_a_grading_child_killed_mid_grade_costs_its_student_a_row_and_nothing_more(tmp_path):
    """Each submission is graded in a child forked from the lane's grading process; one killed
    (SIGKILL) in the middle of a grade gives its student a row that says so, and the lane
    grades the next students as ``grade`` does alone, on a sandbox that was handed back clean.
    The next run grades that student again."""
    klass = tmp_path / "class"
    (klass / "a-loops").mkdir(parents=True)  # graded first, and slowly: its center_tokens never returns
    loops = "\n\ndef center_tokens(x):\n    while True:\n        pass\n"
    (klass / "a-loops" / "toy.py").write_text(TOY.solution.read_text() + loops)
    for student, source in (("b-reference", TOY.solution), ("c-buggy", TOY_BUGGY)):
        (klass / student).mkdir(parents=True)
        shutil.copy(source, klass / student / "toy.py")
    out = tmp_path / "gradebook.csv"
    command = [*TOY_BATCH, str(klass), "--out", str(out), "--jobs", "1", "--call-timeout", "1"]
    # no store on disk: the lane learns the examples by grading the reference in its first child
    # (with every property's examples on disk it would grade none, and the first child would be
    # a student's)
    proc = subprocess.Popen(
        command,
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, STORE_VARIABLE: "off"},
    )
    killed, primer = None, None
    while killed is None and proc.poll() is None:  # the lane's first child that grades a student
        for lane in filter(_grading, _children(proc.pid)):
            children = _children(lane)
            sandbox = [child for child in children if not _grading(child)]
            # once its sandbox runs (a process started for it is a copy of the lane's until it
            # becomes the sandbox), a child of the lane that is still a copy is a grading child;
            # the first grades the reference, before any student (the examples replayed after)
            for child in filter(_grading, children if sandbox else ()):
                if primer is None or child == primer:
                    primer = child
                    continue
                os.kill(child, signal.SIGKILL)
                killed = child
        time.sleep(0.01)
    summary, err = proc.communicate(timeout=600)
    assert killed is not None and proc.returncode == 0, err[-3000:]
    reports = out.with_name("gradebook_reports")
    said = (reports / "a-loops.txt").read_text(encoding="utf-8")
    assert "killed by signal 9 (SIGKILL)" in said and "run the batch again" in said, said
    assert "'a-loops': the grader failed: its process for this submission was killed" in summary
    rows = read_csv(out)
    assert rows["a-loops"]["score"] in ("", "0")
    assert full_marks(rows["b-reference"])
    for student in ("b-reference", "c-buggy"):
        alone = python("grade", str(klass / student), "--course", str(TOY_COURSE), "--format", "json")
        assert alone.returncode == 0, alone.stderr[-2000:]
        graded = json.loads((reports / f"{student}.json").read_text(encoding="utf-8"))
        assert graded == json.loads(alone.stdout), student
    again = toy_batch(klass, out, "--jobs", "1", "--call-timeout", "1")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "1 to grade, 2 unchanged" in again.stderr
    assert "signal 9" not in (reports / "a-loops.txt").read_text(encoding="utf-8")


#: Right on the toy lesson's first, smallest example of center_tokens, wrong on any larger one.
SMALL_ONLY = TOY.solution.read_text(encoding="utf-8").replace(
    "return x - token_mean(x)  #", "return x - token_mean(x) if x.size < 2 else x * 0  #"
)


def _toy_course_with(tmp_path: Path, name: str, text: str) -> tuple[str, ...]:
    """A copy of the toy course with the check file ``name`` added; the options that point a
    command at its lesson."""
    course = tmp_path / "course"
    shutil.copytree(TOY_COURSE, course, ignore=shutil.ignore_patterns("__pycache__"))
    (course / "tests" / "checks" / "toy" / name).write_text(text, encoding="utf-8")
    return ("--course", str(course), "--lesson", "toy")


def _batch_and_grade(
    tmp_path: Path, source: str, *options: str, through_pytest: bool = False
) -> tuple[dict, dict, dict]:
    """One student's ``source`` graded by a batch (``--jobs 1``) and by ``grade``, with the same
    ``options`` (the lesson's among them) and a store of their own (examples another test kept
    would be replayed whatever the checks' own settings, and could hide a difference): (the
    batch's JSON report, grade's, the environment both ran in)."""
    klass = tmp_path / "class"
    (klass / "kim").mkdir(parents=True)
    (klass / "kim" / TOY.filename).write_text(source, encoding="utf-8")
    env = {**os.environ, STORE_VARIABLE: str(tmp_path / "store")}
    if through_pytest:
        env["GRADER_THROUGH_PYTEST"] = "1"
    out = tmp_path / "grades" / "gradebook.csv"
    done = python("batch", str(klass), "--out", str(out), "--jobs", "1", *options, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    alone = python("grade", str(klass / "kim"), "--format", "json", *options, env=env)
    assert alone.returncode == 0, alone.stderr[-2000:]
    graded = json.loads((out.with_name("gradebook_reports") / "kim.json").read_text(encoding="utf-8"))
    return graded, json.loads(alone.stdout), env


@pytest.mark.parametrize("through_pytest", [False, True], ids=["without-pytest", "through-pytest"])
def test_a_batch_grades_with_the_number_of_examples_it_is_given(tmp_path, through_pytest):
    """A check's Hypothesis settings are fixed as it is decorated, and every grading child of a
    batch grades with the checks its zygote imported: imported before the batch's own profile
    was loaded, they kept Hypothesis's or the plugin's defaults, and ``--max-examples 1`` graded
    with a hundred examples (the file below lost points that ``grade --max-examples 1`` gives)."""
    assert SMALL_ONLY != TOY.solution.read_text(encoding="utf-8")
    options = (*ON_TOY, "--max-examples", "1")
    graded, alone, env = _batch_and_grade(tmp_path, SMALL_ONLY, *options, through_pytest=through_pytest)
    assert graded == alone
    assert graded["score"] == graded["max_score"]  # one example each: the smallest, answered right
    many = python("grade", str(tmp_path / "class" / "kim"), *ON_TOY, "--format", "json", env=env)
    assert json.loads(many.stdout)["score"] < graded["score"]  # the file is wrong on larger ones


#: A check file that takes ``sys.stderr`` as it is imported, and writes to it in its check.
STDERR_CHECK = """
from sys import stderr

from hypothesis import given

from grader import expect
from grader.marks import graded

from .strategies import tokens


@graded("center_tokens", points=1)
@given(x=tokens())
def test_logs(student, x):
    stderr.write("checking")
    expect.shape(student.center_tokens(x), x.shape, name="center_tokens(x)")
"""


def test_a_batch_grades_a_lesson_whose_check_file_took_stderr_as_it_was_imported(tmp_path):
    """A batch's zygote imports the checks once for every child: imported under pytest's
    capture, a check file that took ``sys.stderr`` held a stream pytest closes after its
    collection, and every child's check failed on it (a lesson error for every student, where
    a single ``grade`` gives full marks)."""
    on_copy = _toy_course_with(tmp_path, "test_logging.py", STDERR_CHECK)
    graded, alone, _ = _batch_and_grade(tmp_path, TOY.solution.read_text(encoding="utf-8"), *on_copy)
    assert graded["lesson_errors"] == [] and graded["score"] == graded["max_score"], graded["lesson_errors"]
    assert graded == alone


#: A check file that draws from Python's generator as it is imported, and names what it drew.
SHIFTED_CHECK = """
import random

from hypothesis import given

from grader import expect
from grader.marks import graded

from .strategies import tokens

SHIFT = round(random.uniform(-5, 5), 4)


@graded("center_tokens", points=1)
@given(x=tokens())
def test_centering_ignores_a_shift(student, x):
    expect.close(
        student.center_tokens(x + SHIFT), student.center_tokens(x),
        name=f"center_tokens(x + {SHIFT})", rtol=1e-9, atol=1e-9,
    )
"""


@pytest.mark.parametrize("through_pytest", [False, True], ids=["without-pytest", "through-pytest"])
def test_a_batch_imports_the_checks_as_grade_does(tmp_path, through_pytest):
    """A check file that draws from Python's generator as it is imported (found by helper-34):
    ``grade`` imports the checks with the generators seeded as for a grading, and the batch's
    zygote, which imports them once for every child, drew from an unseeded one, so the shift a
    failure names changed with every batch."""
    on_copy = _toy_course_with(tmp_path, "test_shifted.py", SHIFTED_CHECK)
    wrong = TOY.solution.read_text(encoding="utf-8").replace(
        "return x - token_mean(x)  #", "return x + 0.0  #"
    )
    assert wrong != TOY.solution.read_text(encoding="utf-8")
    graded, alone, _ = _batch_and_grade(tmp_path, wrong, *on_copy, through_pytest=through_pytest)
    assert "center_tokens(x + " in json.dumps(graded)  # the check failed, naming its shift
    assert graded == alone


#: A check file that loads a Hypothesis profile of its own as it is imported (not derandomized),
#: and a check that reports the first example it finds wrong, unshrunk: what it names depends on
#: the seed the check runs with.
PROFILED_CHECK = """
from hypothesis import Phase, given, settings

from grader import expect
from grader.marks import graded

from .strategies import tokens

settings.register_profile("lesson", max_examples=30, deadline=None, derandomize=False)
settings.load_profile("lesson")


@graded("center_tokens", points=1)
@settings(phases=(Phase.generate,))
@given(x=tokens())
def test_centering_unshrunk(student, x):
    got, want = student.center_tokens(x), x - x.mean(axis=-1, keepdims=True)
    expect.close(got, want, name="center_tokens(x)", rtol=1e-9, atol=1e-9)
"""


@pytest.mark.parametrize("through_pytest", [False, True], ids=["without-pytest", "through-pytest"])
def test_a_lesson_that_loads_a_profile_of_its_own_is_still_graded_with_fixed_seeds(tmp_path, through_pytest):
    """Found by helper-34: the grader decided whether to fix each check's seed from Hypothesis's
    default profile, which a check file may replace as it is imported. ``grade`` then ran the
    checks unseeded (a file's score could change from one run to the next), while a batch's
    children, which load the grader's profile again after the import, seeded them. The decision
    is now the grader's own (``Settings.derandomized``)."""
    on_copy = _toy_course_with(tmp_path, "test_profiled.py", PROFILED_CHECK)
    wrong = TOY.solution.read_text(encoding="utf-8").replace(
        "return x - token_mean(x)  #", "return x - token_mean(x) + (x.size > 1)  #"
    )
    assert wrong != TOY.solution.read_text(encoding="utf-8")
    graded, alone, env = _batch_and_grade(tmp_path, wrong, *on_copy, through_pytest=through_pytest)
    assert "center_tokens(x)" in json.dumps(alone)  # the check failed, naming the example it found
    assert graded == alone
    again = python("grade", str(tmp_path / "class" / "kim"), "--format", "json", *on_copy, env=env)
    assert json.loads(again.stdout) == alone


#: A check file that draws from numpy's global generator as it is imported (unseeded), and a
#: check that draws from it in its body (once per example) and names what it drew.
DRAWING_CHECK = """
import numpy as np
from hypothesis import given

from grader import expect
from grader.marks import graded

from .strategies import tokens

BASE = round(float(np.random.uniform(-5, 5)), 4)


@graded("center_tokens", points=1)
@given(x=tokens())
def test_centering_ignores_a_random_shift(student, x):
    shift = BASE + round(float(np.random.uniform(-5, 5)), 4)
    expect.close(
        student.center_tokens(x + shift), student.center_tokens(x),
        name=f"center_tokens(x + {shift})", rtol=1e-9, atol=1e-9,
    )
"""


def test_a_check_that_draws_from_numpys_generator_names_the_same_draw_everywhere(tmp_path):
    """Found by helper-34: where the student's code ran in a sandbox, Hypothesis was made to
    leave numpy's global generator alone (to save seeding it), so a check drawing from it in its
    body advanced it at every example. A failing property whose examples were replayed was then
    run again by the engine (to shrink) from where the replay left the generator: a batch
    (which always replays) named another draw than ``grade`` with no store, and both another
    than the student's own ``check`` (in its process, the generator seeded before each example).
    A derandomized run now seeds it before each example wherever the student's code runs (and
    before the checks are imported: a draw at import, unseeded, was another on every run)."""
    on_copy = _toy_course_with(tmp_path, "test_drawing.py", DRAWING_CHECK)
    wrong = TOY.solution.read_text(encoding="utf-8").replace(
        "return x - token_mean(x)  #", "return x + 0.0  #"
    )
    graded, alone, env = _batch_and_grade(tmp_path, wrong, *on_copy)
    assert "center_tokens(x + " in json.dumps(graded)  # the check failed, naming its draw
    assert graded == alone
    unstored = python(
        "grade",
        str(tmp_path / "class" / "kim"),
        "--format",
        "json",
        *on_copy,
        env={**env, STORE_VARIABLE: "off"},
    )
    assert json.loads(unstored.stdout) == graded
    here = python(
        "grade", str(tmp_path / "class" / "kim"), "--format", "json", "--isolation", "none", *on_copy, env=env
    )
    in_process = {**json.loads(here.stdout), "isolation": graded["isolation"]}
    assert in_process == graded  # as the student's check, in its own process
