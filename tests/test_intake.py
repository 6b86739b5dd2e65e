"""Taking a submission in, with the commands started outside the project.

Whatever a student hands in, every command finds and reads it one way: a link
is refused (never followed to the reference or to a host file), a pipe never
blocks, a huge or sparse file is refused by its size, a notebook is capped and
never nested deep enough to break the parser. Paths mean what the user typed,
a batch grades exactly what it hashed, and it leaves no temporary file behind.
"""

from __future__ import annotations

import csv
import fcntl
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from grader.core.intake import IntakeError, Refusal, open_submission
from grader.core.results import ExerciseResult, Standing
from grader.formats.gradebook import Gradebook, Row

from .support import (
    ON_TOY,
    TOY,
    TOY_BATCH,
    TOY_BUGGY,
    TOY_COURSE,
    from_a_terminal,
    graded_count,
    grader_outside,
    live_processes,
)

# Taking a submission in is the grader's work, not a lesson's: every test here hands in files of
# the toy lesson (its grading costs about half the first lesson's).

#: The toy lesson's points, all of them.
FULL = 14
#: A line of a host file that must never reach an output (a shadow password entry).
SECRET = "root:$6$NEVERSHOWN4711$abcdefghijklmnop:19000:0:99999:7:::"


def calm(done: subprocess.CompletedProcess) -> str:
    """Everything the command printed, once checked to hold no traceback and no host secret."""
    printed = done.stdout + done.stderr
    assert "Traceback" not in printed, printed[-3000:]
    assert "NEVERSHOWN" not in printed
    return printed


def notebook(code: str, *, notes: str = "") -> bytes:
    """A plain notebook: one code cell, and a markdown cell holding ``notes`` if given."""
    cells = [{"cell_type": "code", "metadata": {}, "source": code, "outputs": [], "execution_count": None}]
    if notes:
        cells.append({"cell_type": "markdown", "metadata": {}, "source": notes})
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}).encode()


def _link_to_reference(folder: Path) -> None:
    os.symlink(TOY.solution, folder / TOY.filename)


def _link_to_host_file(folder: Path) -> None:
    host = folder.parent.parent / "host" / "shadow"
    host.parent.mkdir(exist_ok=True)
    host.write_text(SECRET + "\n")
    os.symlink(host, folder / TOY.filename)


def _fifo(folder: Path) -> None:
    os.mkfifo(folder / TOY.filename)


def _sparse_64_gib(folder: Path) -> None:
    (folder / TOY.filename).touch()
    os.truncate(folder / TOY.filename, 64 << 30)


def _notebook_over_the_cap(folder: Path) -> None:
    """17 MiB of notes beside a correct answer."""
    content = notebook(TOY.solution.read_text(), notes="x" * (17 << 20))
    (folder / "toy.ipynb").write_bytes(content)


def _notebook_code_over_the_cap(folder: Path) -> None:
    """A correct answer followed by 5 MiB of comment, in a 5 MiB notebook."""
    code = TOY.solution.read_text() + "\n# " + "x" * (5 << 20) + "\n"
    (folder / "toy.ipynb").write_bytes(notebook(code))


def _notebook_nested_100000_deep(folder: Path) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    (folder / "toy.ipynb").write_bytes(b'{"nbformat": 4, "metadata": {}, "cells": ' + deep + b"}")


#: name -> (how to hand it in, what the refusal says)
HOSTILE = {
    "link-to-reference": (_link_to_reference, "symbolic link"),
    "link-to-host-file": (_link_to_host_file, "symbolic link"),
    "fifo": (_fifo, "named pipe"),
    "sparse-64-GiB": (_sparse_64_gib, "at most 4 MiB"),
    "notebook-over-the-cap": (_notebook_over_the_cap, "at most 16 MiB"),
    "notebook-code-over-the-cap": (_notebook_code_over_the_cap, "at most 4 MiB"),
    "notebook-nested-100000-deep": (_notebook_nested_100000_deep, "nested more than 64 levels"),
}


def hand_in(klass: Path, student: str, how) -> Path:
    folder = klass / student
    folder.mkdir(parents=True)
    how(folder)
    return folder


def read_csv(path: Path) -> dict[str, dict]:
    with path.open(newline="") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


# ----------------------------------------------------------------------------- one submission


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_grade_refuses_with_a_clear_problem(tmp_path, case):
    """``grade`` on the hostile file: a report scoring 0 whose problem says why; it is never
    graded as the file it points to, and no host file reaches the output."""
    how, words = HOSTILE[case]
    hand_in(tmp_path / "class", case, how)
    done = grader_outside("grade", f"class/{case}", *ON_TOY, "--format", "json", cwd=tmp_path, timeout=600)
    calm(done)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["score"] == 0, report["problem"]
    assert words in report["problem"]
    assert "\n" not in report["problem"] and "Traceback" not in report["problem"]


def test_check_refuses_links_and_never_shows_what_they_point_to(tmp_path):
    for case in ("link-to-reference", "link-to-host-file"):
        hand_in(tmp_path / "class", case, HOSTILE[case][0])
        done = grader_outside("check", f"class/{case}/{TOY.filename}", *ON_TOY, cwd=tmp_path)
        calm(done)
        assert done.returncode == 1
        assert "is a symbolic link" in " ".join(done.stdout.split())
        assert "Every check passes" not in done.stdout


def test_a_missing_path_is_one_line_and_exit_2(tmp_path):
    done = grader_outside("grade", "class/nobody", *ON_TOY, cwd=tmp_path)
    calm(done)
    assert done.returncode == 2
    assert done.stderr.strip() == "grader: class/nobody does not exist"


# ----------------------------------------------------------------------------- a whole class


def test_batch_lists_every_hostile_submission_and_grades_the_others(tmp_path):
    """One batch over all of them: it finishes, the honest student is graded, each hostile one
    is listed with its reason (escape sequences in a name shown, not run), nothing of a host
    file is printed or stored, and no temporary file is left behind."""
    klass = tmp_path / "class"
    hand_in(klass, "ada", lambda f: shutil.copy(TOY.solution, f / TOY.filename))
    for case, (how, _) in HOSTILE.items():
        hand_in(klass, case, how)
    (klass / "red\x1b[31mname").mkdir()  # an escape sequence in a student id, no file in it
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    done = grader_outside(
        "batch",
        *ON_TOY,
        "class",
        "--out",
        "grades/gradebook.csv",
        "--jobs",
        "2",
        cwd=tmp_path,
        timeout=240,
        env={**os.environ, "TMPDIR": str(scratch)},
    )
    printed = calm(done)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = read_csv(tmp_path / "grades" / "gradebook.csv")
    assert rows["ada"]["score"] == str(FULL)
    for case, (_, words) in HOSTILE.items():
        assert rows[case]["score"] == "0", case
        line = next(line for line in done.stdout.splitlines() if line.startswith(f"  - '{case}': "))
        assert words in line, line
    assert "\x1b" not in printed and "'red\\x1b[31mname': " in done.stdout
    db = sqlite3.connect(tmp_path / "grades" / "gradebook.sqlite")
    status = dict(db.execute("SELECT student, status FROM grades"))
    assert status.pop("ada") == "graded"
    assert set(status.values()) == {"unreadable", "missing"}
    stored = [p.read_bytes() for p in (tmp_path / "grades" / "gradebook_reports").iterdir()]
    assert not any(b"NEVERSHOWN" in content for content in stored)
    assert os.listdir(scratch) == []


def test_batch_from_a_course_folder_grades_the_paths_typed_there(tmp_path):
    """Relative paths are those of the folder the batch was started in, even where the course
    holds a folder of the same relative name (the toy course's examples/gallery/toy/off-by-mean,
    which loses points)."""
    course = tmp_path / "course"
    gallery = course / "examples" / "gallery" / "toy"
    for student in ("off-by-mean", "newcomer"):
        (gallery / student).mkdir(parents=True)
        shutil.copy(TOY.solution, gallery / student / TOY.filename)
    assert TOY.gallery == TOY_COURSE / "examples" / "gallery" / "toy"
    assert (TOY.gallery / "off-by-mean" / TOY.filename).is_file()
    command = (
        "batch",
        *ON_TOY,
        "examples/gallery/toy/",
        "--out",
        "grades/gradebook.csv",
    )
    done = grader_outside(*command, cwd=course)
    calm(done)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = read_csv(course / "grades" / "gradebook.csv")
    assert {s: r["score"] for s, r in rows.items()} == {"off-by-mean": str(FULL), "newcomer": str(FULL)}
    again = grader_outside(*command, cwd=course)
    assert "0 to grade, 2 unchanged" in again.stderr


def test_a_file_changed_during_the_batch_is_not_graded_and_is_retried(tmp_path):
    """The batch grades the source it hashed or nothing: a file changed between the two is
    recorded as failed, and the next run grades it."""
    klass = tmp_path / "class"
    for student in ("ada", "bob"):
        hand_in(klass, student, lambda f: shutil.copy(TOY.solution, f / "toy.py"))
    proc = subprocess.Popen(
        [
            *TOY_BATCH,
            str(klass),
            "--out",
            "gradebook.csv",
            "--jobs",
            "1",
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # the first line comes once every file is hashed, before the grading processes have started
    assert "2 to grade" in proc.stderr.readline()
    shutil.copy(TOY_BUGGY, klass / "bob" / "toy.py")
    out, err = proc.communicate(timeout=240)
    assert "Traceback" not in out + err
    assert proc.returncode == 0, err[-3000:]
    db = tmp_path / "gradebook.sqlite"
    with sqlite3.connect(db) as conn:
        assert dict(conn.execute("SELECT student, status FROM grades")) == {"ada": "graded", "bob": "failed"}
    assert "'bob': the file changed while the batch was running" in out
    again = grader_outside(
        "batch",
        *ON_TOY,
        str(klass),
        "--out",
        "gradebook.csv",
        cwd=tmp_path,
    )
    assert "1 to grade, 1 unchanged" in again.stderr
    bob = read_csv(tmp_path / "gradebook.csv")["bob"]
    assert 0 < int(bob["score"]) < int(bob["max_score"])


def test_only_a_real_grade_is_kept_from_one_run_to_the_next(tmp_path):
    book = Gradebook(tmp_path / "gradebook.sqlite")
    zero = (ExerciseResult("split_heads", 0, 20),)
    for student in ("graded", "failed", "missing", "unreadable"):
        book.record(Row(student, Standing(student), "hash", "suite", 0, 100, zero))
    assert book.is_current("graded", "hash", "suite")
    assert not book.is_current("graded", "other", "suite")
    for student in ("failed", "missing", "unreadable"):
        assert not book.is_current(student, "hash", "suite"), student
    book.close()


def test_grade_stream_grades_only_the_source_it_was_told_the_hash_of(tmp_path):
    file = tmp_path / "ada" / TOY.filename
    file.parent.mkdir()
    shutil.copy(TOY.solution, file)
    right = hashlib.sha256(file.read_bytes()).hexdigest()
    requests = [{"path": str(file), "sha256": "0" * 64}, {"path": str(file), "sha256": right}]
    done = grader_outside(
        "grade-stream",
        *ON_TOY,
        "--only",
        "center_tokens",
        cwd=tmp_path,
        input="".join(json.dumps(r) + "\n" for r in requests),
    )
    calm(done)
    changed, graded = (json.loads(line) for line in done.stdout.splitlines())
    assert changed["verdict"] == "refused" and "report" not in changed
    assert "the file changed" in changed["message"]
    assert graded["verdict"] == "graded"
    assert graded["report"]["score"] == graded["report"]["max_score"] == 6  # center_tokens' points


@pytest.mark.parametrize("how", ["finished", "Ctrl-C"])
def test_a_batch_leaves_no_temporary_file(tmp_path, how):
    klass = tmp_path / "class"
    size = 6 if how == "Ctrl-C" else 2  # enough that the batch is still busy when interrupted
    for i in range(size):
        source = TOY_BUGGY if i % 2 else TOY.solution
        hand_in(klass, f"s{i}", lambda f, source=source: shutil.copy(source, f / "toy.py"))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = from_a_terminal(
        [*TOY_BATCH, str(klass), "--out", "gradebook.csv", "--jobs", "1"],
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(scratch)},
    )
    if how == "Ctrl-C":
        deadline = time.monotonic() + 120
        while not graded_count(tmp_path / "gradebook.sqlite") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert os.listdir(scratch), "the batch was interrupted before it made its temporary folder"
        os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=600)
    assert "Traceback" not in out + err
    assert proc.returncode == (130 if how == "Ctrl-C" else 0), err[-3000:]
    assert os.listdir(scratch) == []
    time.sleep(0.5)
    assert live_processes(pgid=proc.pid) == []


# ----------------------------------------------------------------------------- Gradescope


def test_gradescope_follows_no_link(tmp_path):
    submission = tmp_path / "submission"
    (submission / "hw").mkdir(parents=True)
    os.symlink(TOY.solution.parent, submission / "elsewhere")  # a folder link: not searched
    with pytest.raises(IntakeError, match="No toy.py") as missing:
        open_submission(submission, TOY.filename, nested=True)
    assert missing.value.kind is Refusal.MISSING
    os.symlink(TOY.solution, submission / "hw" / TOY.filename)
    with pytest.raises(IntakeError, match="symbolic link") as refused:
        open_submission(submission, TOY.filename, nested=True)
    assert refused.value.kind is Refusal.UNREADABLE


@pytest.mark.skipif(not hasattr(fcntl, "F_SETLEASE"), reason="leases are Linux's")
def test_a_file_its_owner_holds_a_lease_on_is_refused_not_left_unfinished(tmp_path):
    """Found by helper-39: opening a file without waiting says EAGAIN while another process
    holds a write lease on it, which the file's owner may take (and take again each time it is
    broken). Taken for the machine's trouble, it left the grade unfinished for as long as the
    owner liked; it is the file's doing: refused as unreadable, as before."""
    student = tmp_path / "toy.py"
    student.write_text("x = 1\n")
    ready, done = os.pipe()
    holder = os.fork()
    if holder == 0:  # takes a write lease, says so, holds it until told to stop
        try:
            fd = os.open(student, os.O_RDWR)
            fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
            os.write(done, b"x")
            time.sleep(60)  # ended by the test
        finally:
            os._exit(0)
    try:
        os.close(done)
        assert os.read(ready, 1) == b"x"
        with pytest.raises(IntakeError) as refused:
            open_submission(student, "toy.py")
        assert refused.value.kind is Refusal.UNREADABLE, refused.value.message
        assert "could not be read (Resource temporarily unavailable)" in refused.value.message
    finally:
        os.kill(holder, signal.SIGTERM)
        os.waitpid(holder, 0)
        os.close(ready)
