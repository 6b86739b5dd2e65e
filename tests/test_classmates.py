"""One hostile classmate changes nothing: submissions graded one after another by the same
grading process (``batch --jobs 1``), the hostile ones first, and every honest classmate after
them gets exactly the grade it gets alone.

The hostile submissions attack what lives from one submission to the next in a grading
process and its sandbox:

* ``a1-dtype-poisoner`` sends the grader frames in 70 different dtypes and answers in
  big-endian itself (a cache of dtype names in the grading process, once full, refused every
  later student's ordinary float64 results);
* ``a2-secret-holder`` is honest, with a line no one else may read;
* ``a3-heap-reader`` scans its own process's memory for that line (a worker forked from a
  process that had held the last submission would carry it in freed memory) and reports
  whatever it finds through its feedback;
* ``a4-fault-forger`` has its audited calls say "the warden failed" (once reported as the
  grader's bug, with its sandbox replaced);
* ``a5-rescheduler`` gives the sandbox's warden (which forks every later keeper and worker)
  and its keeper the lowest priority and scheduling, and a lower limit, as it loads; the
  honest ``b4-canary`` answers right only where its own are as a fresh sandbox gives them;
* ``a6-deep-folders`` leaves in the sandbox's work folder a tree of folders whose path is longer
  than any path the system takes, its deepest folder locked (the wipe once skipped paths that
  long, and said the sandbox was clean), and ``a8-deeper-folders`` one deeper than the wipe can
  walk; the honest ``a7-clean-sandbox`` and ``b5-clean-sandbox``, graded right after each,
  answer right only in an empty work folder;
* ``a9-counter-writer`` moves on the numbers of the files made in ``/tmp`` by thousands and
  sets the flags of (and tries to lock) the ``/dev/null`` every process of its sandbox was
  given; the honest ``b6-counter-reader`` answers right only where its first file in ``/tmp``
  has a small number and its ``/dev/null`` is as a new one (a red team passed a hidden
  check's input to the next classmate so, when a sandbox served one submission after another).
"""

from __future__ import annotations

import functools
import json
import secrets
import shutil
import tempfile
from pathlib import Path

import pytest

from grader.core.lesson import Lesson
from grader.sandbox.wardens import best_level

from .support import ATTENTION, ROOT, TOY, TOY_BUGGY, TOY_COURSE, compose, python

ADVERSARIAL = Path(__file__).parent / "adversarial"
BUG = ATTENTION.catalog / "bugs" / "merge_reshape_no_transpose.py"
#: The toy lesson's points, all of them.
FULL = 14

HEAP_READER = """
# reads its own memory for a classmate's line and tells it through an exception message
import builtins, ctypes, re

def _scan():
    found = set()
    with open("/proc/self/maps") as maps:
        regions = [line.split() for line in maps]
    for fields in regions:
        start, end = (int(x, 16) for x in fields[0].split("-"))
        anonymous = len(fields) == 5 or fields[5] == "[heap]"
        if "r" not in fields[1] or not anonymous or end - start > 256 << 20:
            continue
        try:
            data = ctypes.string_at(start, end - start)
        except Exception:
            continue
        found |= set(re.findall(rb"CLASSMATE-SECRET-[0-9a-f]{24}", data))
    return sorted(found)

_honest_center = center_tokens

def center_tokens(x):
    if not hasattr(builtins, "_scanned"):
        builtins._scanned = _scan()
    if builtins._scanned:
        raise ValueError("found " + b" ".join(builtins._scanned).decode())
    return _honest_center(x)
"""

DTYPE_POISONER = """
# fills the grading process's table of dtype names, then answers in big-endian
import builtins, json, os, stat, struct

def _reply_pipe():
    import fcntl
    for fd in range(3, 1024):
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode) and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY:
                return fd
        except OSError:
            pass
    return -1

def _names():
    codes = list("bhilqBHILQefdg?") + [k + n for k in "iu" for n in "1248"] + ["f2", "f4", "f8"]
    names = [order + code for order in ("<", ">", "=", "") for code in codes]
    return [n for n in names if n != "<f8"][:70]

_honest_layer_norm = layer_norm

def layer_norm(x, gamma, beta, eps=1e-5):
    if not hasattr(builtins, "_poisoned"):
        builtins._poisoned = True
        names = _names()
        arrays = [{"__array__": i, "dtype": n, "shape": [0]} for i, n in enumerate(names)]
        header = json.dumps({"type": "outcome", "ok": True, "value": {"__tuple__": arrays},
                             "payloads": [0] * len(arrays)}).encode()
        os.write(_reply_pipe(), struct.pack(">I", len(header)) + header)
        os._exit(0)
    return _honest_layer_norm(x, gamma, beta, eps).astype(">f8")
"""

RESCHEDULER = """
# lowers the priority, the scheduling and a limit of the warden and the keeper, as it loads
import os, resource

def _lower():
    keeper = os.getppid()
    with open(f"/proc/{keeper}/stat") as f:
        warden = int(f.read().rsplit(")", 1)[1].split()[1])
    for pid in (warden, keeper):
        for change in (
            lambda: os.setpriority(os.PRIO_PROCESS, pid, 19),
            lambda: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0)),
            lambda: resource.prlimit(pid, resource.RLIMIT_SIGPENDING, (77, 77)),
        ):
            try:
                change()
            except OSError:
                pass

_lower()
"""

CANARY = """
# honest, as long as its process is scheduled and limited as a fresh sandbox's
import os, resource

_honest_center = center_tokens

def center_tokens(x):
    untouched = (
        os.getpriority(os.PRIO_PROCESS, 0) == 0
        and os.sched_getscheduler(0) == os.SCHED_OTHER
        and resource.getrlimit(resource.RLIMIT_SIGPENDING)[1] != 77
    )
    return _honest_center(x) if untouched else x
"""

#: Leaves a tree of folders ``LEVELS`` deep named ``NAME`` in the sandbox's work folder, its
#: deepest one locked (read and enter only), made through descriptors (its path is too long).
DEEP_FOLDERS = """
import os

def _leave(levels, name):
    fd = os.open(".", os.O_RDONLY)
    for level in range(levels):
        os.mkdir(name % level, dir_fd=fd)
        inner = os.open(name % level, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(os.open("MARK", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    os.fchmod(fd, 0o500)
    os.close(fd)

_leave(LEVELS, NAME)
"""

CLEAN_SANDBOX = """
# honest, in a work folder that holds nothing but this file (/tmp is not looked at: where the
# grader's Python lives below /tmp, a fresh sandbox shows the folders on the way to it there)
import os

_honest_center = center_tokens

def center_tokens(x):
    left = [n for n in os.listdir(".") if n != "toy.py"]
    return x if left else _honest_center(x)
"""

COUNTER_WRITER = """
# leaves what a sandbox reused for the next student would carry to it: the numbers of the files
# made in /tmp moved on by thousands, and the flags (and a lock) of the /dev/null it was given
import fcntl, os, struct

def _leave():
    for _ in range(3000):
        os.close(os.open("/tmp/f", os.O_CREAT | os.O_WRONLY, 0o600))
        os.unlink("/tmp/f")
    fcntl.fcntl(0, fcntl.F_SETFL, fcntl.fcntl(0, fcntl.F_GETFL) | os.O_APPEND | os.O_NONBLOCK)
    for lock in (
        lambda: fcntl.fcntl(0, 37, struct.pack("hhxxxxqqixxxx", fcntl.F_RDLCK, 0, 7, 1, 0)),
        lambda: fcntl.flock(0, fcntl.LOCK_SH),
    ):
        try:
            lock()
        except OSError:
            pass

_leave()
"""

COUNTER_READER = """
# honest, as long as its sandbox is a new one: the first file it makes in /tmp has a small
# number, and its /dev/null has the flags and no lock of a new one
import fcntl, os, struct

def _as_new():
    fd = os.open("/tmp/probe", os.O_CREAT | os.O_WRONLY, 0o600)
    number = os.fstat(fd).st_ino
    os.close(fd)
    os.unlink("/tmp/probe")
    flags = fcntl.fcntl(0, fcntl.F_GETFL) & (os.O_APPEND | os.O_NONBLOCK)
    asked = struct.pack("hhxxxxqqixxxx", fcntl.F_WRLCK, 0, 7, 1, 0)
    try:
        held = struct.unpack("hhxxxxqqixxxx", fcntl.fcntl(0, 36, asked))[0] != fcntl.F_UNLCK
    except OSError:
        held = False  # the sandbox refuses locks
    return number < 1000 and not flags and not held

_NEW = _as_new()
_honest_center = center_tokens

def center_tokens(x):
    return _honest_center(x) if _NEW else x
"""

#: The adversarial case ``fault_forged_by_a_call`` (a frame saying "the warden failed", written on
#: every pipe an audited call holds), its attack made by the toy lesson's center_tokens.
FAULT_FORGER = (ADVERSARIAL / "fault_forged_by_a_call" / "override.py").read_text(encoding="utf-8")
assert FAULT_FORGER.count("def apply_causal_mask(scores):") == 1
FAULT_FORGER = FAULT_FORGER.replace("def apply_causal_mask(scores):", "def center_tokens(x):")


def _report(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _solo(folder: Path, lesson: Lesson) -> dict:
    """The report ``grade`` gives the folder's file of ``lesson`` alone (graded once for each
    text: the classmates of both tests below are the reference or the same bug)."""
    return _graded_alone((folder / lesson.filename).read_bytes(), lesson)


@functools.cache
def _graded_alone(text: bytes, lesson: Lesson) -> dict:
    with tempfile.TemporaryDirectory(prefix="solo-") as tmp:
        (Path(tmp) / lesson.filename).write_bytes(text)
        done = python("grade", tmp, "--course", str(lesson.root), "--lesson", lesson.name, "--format", "json")
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def _grades(report: dict) -> tuple:
    return report["score"], [(t["name"], t["status"], t["score"], t["feedback"]) for t in report["tests"]]


@pytest.mark.skipif(best_level() != "namespaces", reason="needs the namespaces sandbox")
def test_hostile_classmates_change_no_later_grade(tmp_path):
    """On the toy lesson: what the hostile files attack is the batch's, not a lesson's."""
    secret = "CLASSMATE-SECRET-" + secrets.token_hex(12)
    klass = tmp_path / "class"
    holder = klass / "a2-secret-holder"
    holder.mkdir(parents=True)
    (holder / TOY.filename).write_text(TOY.solution.read_text() + f"\n# {secret}\nSECRET = '{secret}'\n")
    hostile = (("a3-heap-reader", HEAP_READER), ("a1-dtype-poisoner", DTYPE_POISONER))
    hostile += (("a4-fault-forger", FAULT_FORGER), ("a5-rescheduler", RESCHEDULER), ("b4-canary", CANARY))
    hostile += (
        ("a6-deep-folders", DEEP_FOLDERS.replace("LEVELS, NAME", "20, 'd%02d' + 'x' * 247")),
        ("a7-clean-sandbox", CLEAN_SANDBOX),
        ("a8-deeper-folders", DEEP_FOLDERS.replace("LEVELS, NAME", "3000, '%d'")),
        ("b5-clean-sandbox", CLEAN_SANDBOX),
        ("a9-counter-writer", COUNTER_WRITER),
        ("b6-counter-reader", COUNTER_READER),
    )
    for name, text in hostile:
        override = tmp_path / f"{name}.py"
        override.write_text(text)
        compose(override, klass / name, TOY)
    honest = {"b1-reference": TOY.solution, "b2-reference": TOY.solution, "b3-bug": TOY_BUGGY}
    for name, source in honest.items():
        (klass / name).mkdir()
        shutil.copy(source, klass / name / TOY.filename)

    out = tmp_path / "grades" / "gradebook.csv"
    done = python(
        "batch",
        "--course",
        str(TOY_COURSE),
        "--lesson",
        TOY.name,
        str(klass),
        "--out",
        str(out),
        "--jobs",
        "1",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    reports = out.with_name("gradebook_reports")

    everything = done.stdout + done.stderr
    everything += "".join(p.read_text(errors="replace") for p in reports.iterdir())
    reader = _report(reports / "a3-heap-reader.json")
    assert secret not in everything
    assert reader["score"] == FULL, [t["feedback"] for t in reader["tests"] if t["feedback"]][:3]
    forger = _report(reports / "a4-fault-forger.json")
    assert "bug in the grader" not in json.dumps(forger)
    assert forger["exercises"]["center_tokens"]["score"] == 0  # the forged frame was sent: its own doing

    canaries = ("b4-canary", "a7-clean-sandbox", "b5-clean-sandbox", "b6-counter-reader")
    for name in (*honest, *canaries):
        batch_report = _report(reports / f"{name}.json")
        assert _grades(batch_report) == _grades(_solo(klass / name, TOY)), name
    assert _report(reports / "b1-reference.json")["score"] == FULL
    for canary in canaries:  # alone, each in a fresh sandbox
        assert _report(reports / f"{canary}.json")["score"] == FULL, canary


#: Adversarial cases graded first, one after another, by the grading process that then grades
#: honest classmates: those that leave something behind if anything can (state in the grading
#: process, processes, files, a broken sandbox), not those that mostly wait.
FIRST = (
    "background_processes",
    "exit_at_import",
    "fake_array_interface",
    "fault_forged_by_a_call",
    "helper_batch_axes_broadcast",
    "helper_name_not_a_string",
    "host_files_tampering",
    "lying_ndarray_subclass",
    "memory_bomb",
    "mutation_report_forged",
    "numpy_comparisons_patched",
    "os_exit_in_function",
    "output_flood",
    "reference_from_disk",
    "reference_helper_bomb",
    "sandbox_killed_at_import",
    "sandbox_killed_by_a_function",
    "signatures_forged",
    "stack_and_gc_snooping",
    "test_frameworks_patched",
    "wire_bad_outcome",
    "wire_header_not_object",
)


def _case_file(name: str, dest: Path, tmp: Path) -> None:
    """dest/attention.py for an adversarial case, its placeholders filled in."""
    source = ADVERSARIAL / name
    if (source / "override.py").is_file():
        compose(source / "override.py", dest)
    else:
        dest.mkdir(parents=True)
        shutil.copy(source / "attention.py", dest / "attention.py")
    victim = tmp / "victims" / "victim.txt"
    victim.parent.mkdir(exist_ok=True)
    victim.write_text("a host file\n")
    values = {
        "MARKER": f"classmates-{name}-{secrets.token_hex(4)}",
        "ROOT": ROOT,
        "HOME": tmp / "home",
        "HOST_TMP": tmp,
        "SUBMISSION_DIR": dest,
        "VICTIM": victim,
        "VICTIM_DIR": victim.parent,
        "PORT": 9,
    }
    file = dest / "attention.py"
    text = file.read_text(encoding="utf-8")
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", str(value))
    file.write_text(text, encoding="utf-8")


@pytest.mark.skipif(best_level() != "namespaces", reason="needs the namespaces sandbox")
def test_after_the_adversarial_catalog_classmates_get_their_solo_grades(tmp_path):
    """Every case of the adversarial catalog above is graded first, in one grading process;
    honest classmates graded by that same process afterwards get exactly their solo grades.
    The attention lesson: the adversarial catalog's cases are files of it."""
    klass = tmp_path / "class"
    for i, name in enumerate(FIRST):
        _case_file(name, klass / f"a{i:02d}-{name}", tmp_path)
    honest = {"z1-reference": None, "z2-bug": BUG}
    for name, bug in honest.items():
        if bug is None:
            (klass / name).mkdir()
            shutil.copy(ATTENTION.solution, klass / name / "attention.py")
        else:
            compose(bug, klass / name)
    out = tmp_path / "grades" / "gradebook.csv"
    done = python(
        "batch", "--lesson", "attention", str(klass), "--out", str(out), "--jobs", "1", timeout=1200
    )
    assert done.returncode == 0, done.stderr[-3000:]
    reports = out.with_name("gradebook_reports")
    for name in honest:
        assert _grades(_report(reports / f"{name}.json")) == _grades(_solo(klass / name, ATTENTION)), name
    assert _report(reports / "z1-reference.json")["score"] == 100


#: A check that keeps what the student's function returned in a module-level list, as a check
#: with a careless cache would: within one grading it is harmless, but a grading process that
#: goes on to the next student would show it the last one's value.
KEEPING_CHECK = '''
import numpy as np

from grader import expect
from grader.marks import graded

SEEN = []  # what center_tokens returned on the probe, in every grading this process has done


@graded("center_tokens", points=1)
def test_centering_a_probe(student):
    """The probe's first number is centred."""
    got = student.center_tokens(np.array([[1.0, 3.0]]))
    SEEN.append(float(np.asarray(got).ravel()[0]))
    expect.that(SEEN == [-1.0], f"center_tokens gave {SEEN[0]} on the probe, not -1.0")
'''

#: A classmate whose value the check above would keep: graded first, with a number no honest
#: submission returns.
MARKED = """

def center_tokens(x):
    return np.full_like(x, 4242.0)
"""


@pytest.mark.skipif(best_level() == "none", reason="batch needs a sandbox")
def test_what_the_trusted_side_kept_of_a_classmate_reaches_no_later_one(tmp_path):
    """The checks, the reference and pytest live in the grading process, not in the sandbox:
    whatever they keep of a submission (here a check's module-level list of what the student's
    function returned) must be gone when the next submission is graded. With one grading process
    per lane reused from student to student, the honest student graded second failed with the
    first one's number in their feedback; each submission is now graded by a process of its own,
    forked from one that has seen no submission."""
    course = tmp_path / "toy"
    shutil.copytree(TOY_COURSE, course)
    (course / "tests" / "checks" / "toy" / "test_kept.py").write_text(KEEPING_CHECK, encoding="utf-8")
    klass = tmp_path / "class"
    for name, extra in (("a-marked", MARKED), ("b-honest", "")):
        (klass / name).mkdir(parents=True)
        text = (course / "solutions" / "toy.py").read_text(encoding="utf-8") + extra
        (klass / name / "toy.py").write_text(text, encoding="utf-8")
    out = tmp_path / "grades" / "gradebook.csv"
    done = python(
        "batch", "--course", str(course), "--lesson", "toy", str(klass), "--out", str(out), "--jobs", "1"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    reports = out.with_name("gradebook_reports")
    honest = _report(reports / "b-honest.json")
    assert "4242" not in json.dumps(honest), [t["feedback"] for t in honest["tests"] if t["feedback"]]
    assert honest["score"] == honest["max_score"]
    solo = python(
        "grade", "--course", str(course), "--lesson", "toy", str(klass / "b-honest"), "--format", "json"
    )
    assert solo.returncode == 0, solo.stderr[-2000:]
    assert _grades(honest) == _grades(json.loads(solo.stdout))
    marked = _report(reports / "a-marked.json")
    assert "center_tokens gave 4242.0" in json.dumps(marked)  # the check does see what it keeps
