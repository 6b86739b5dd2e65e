"""Examples a lesson ships (grader.engine.shipped): ``grader examples`` writes the reference's
examples beside the checks; a first run anywhere (``check`` in the student's own process, a
release, a Gradescope container) replays them with the very report the engine gives; a file made
under other files or releases is not believed; and a file that is not a plain one of the right
shape and size (a link, a FIFO, a huge or unpacking-to-huge file, a public file holding a hidden
check) is ignored whole: the run draws under the engine, as without it.

Each grading is a process of its own (the file is read once per process), on a copy of the toy
course (it has public and hidden checks).
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import shutil
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest

from grader.core.lesson import SHIPPED
from grader.core.settings import STORE_VARIABLE
from grader.engine import shipped
from grader.sandbox.wardens import best_level

from .support import TOY_COURSE, script_report

pytestmark = pytest.mark.skipif(
    best_level() == "none", reason="examples are drawn with the reference sandboxed"
)

#: Grades one file of the toy lesson in a process of its own, at the level asked (``none``: as
#: ``check`` does, in the process), and prints what replay did and the report.
GRADE = """
import json, resource, sys
from pathlib import Path
from grader.core.lesson import Course
from grader.core.settings import resolve
from grader.engine import replay
from grader.engine.run import run_checks
from grader.formats.json_report import to_dict
course, path, isolation = sys.argv[1:4]
lesson = Course.at(Path(course)).lesson("toy")
settings = resolve("grade", lesson_exercises=lesson.exercises, lesson_name="toy", isolation=isolation)
report = to_dict(run_checks(Path(path), lesson=lesson, settings=settings))
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
print(json.dumps({"counts": replay.COUNTS, "report": report, "peak": peak}, sort_keys=True))
"""


def graded(course: Path, path: Path | None = None, *, isolation: str = "none", replay: bool = True) -> dict:
    env = {**os.environ, STORE_VARIABLE: "off", "GRADER_REPLAY": "1" if replay else "0"}
    path = path or course / "solutions" / "toy.py"
    return script_report(GRADE, str(course), str(path), isolation, env=env)


def grader(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "grader", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, STORE_VARIABLE: "off"},
        timeout=600,
    )


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """A copy of the toy course with its examples written by ``grader examples``."""
    root = tmp_path_factory.mktemp("shipped") / "toy"
    shutil.copytree(TOY_COURSE, root, ignore=shutil.ignore_patterns("__pycache__"))
    done = grader("examples", "--lesson", "toy", cwd=root)
    assert done.returncode == 0, done.stderr
    return root


@pytest.fixture
def fresh(course, tmp_path) -> Path:
    """A copy of that course a test may change."""
    root = tmp_path / "toy"
    shutil.copytree(course, root)
    return root


def public(root: Path) -> Path:
    return root / "tests" / "checks" / "toy" / SHIPPED


def hidden(root: Path) -> Path:
    return root / "tests" / "checks" / "toy" / "hidden" / SHIPPED


def contents(path: Path) -> tuple[dict, list]:
    header, _, body = gzip.decompress(path.read_bytes()).partition(b"\n")
    return json.loads(header), json.loads(body)["properties"]


def rewritten(path: Path, header: dict | None = None, properties: list | None = None) -> None:
    said, props = contents(path)
    body = json.dumps({"format": 2, "properties": props if properties is None else properties})
    path.write_bytes(gzip.compress(json.dumps(header or said).encode() + b"\n" + body.encode()))


# ----------------------------------------------------------------------------- made and used


def test_the_command_writes_both_files_and_says_they_are_current(course):
    for path, is_hidden in ((public(course), False), (hidden(course), True)):
        header, properties = contents(path)
        assert header["hidden"] is is_hidden and properties
        nodes = [prop[0][0] for prop in properties]
        assert all(("/hidden/" in node) is is_hidden for node in nodes), nodes
        assert all(str(course) not in json.dumps(prop[0]) for prop in properties)  # keys hold no path
    done = grader("examples", "--lesson", "toy", "--check", cwd=course)
    assert done.returncode == 0 and "up to date" in done.stderr


def test_the_files_are_the_same_bytes_each_time_they_are_made(fresh):
    before = public(fresh).read_bytes(), hidden(fresh).read_bytes()
    public(fresh).unlink()
    hidden(fresh).unlink()
    assert grader("examples", "--lesson", "toy", cwd=fresh).returncode == 0
    assert (public(fresh).read_bytes(), hidden(fresh).read_bytes()) == before


@pytest.mark.parametrize("isolation", ["none", "auto"])
def test_a_first_run_replays_them_with_the_engines_report(course, isolation):
    for path in (course / "solutions" / "toy.py", *sorted((course / "examples" / "gallery").rglob("toy.py"))):
        used = graded(course, path, isolation=isolation)
        engine = graded(course, path, isolation=isolation, replay=False)
        assert used["report"] == engine["report"], path
        if path.parent.name == "solutions":
            assert used["counts"]["engine"] == 0 and used["counts"]["replayed"] > 0
            assert used["counts"]["read"] > 0  # the arguments were read as written, not drawn


def test_the_store_keeps_no_copy_of_what_the_lesson_ships(fresh, tmp_path):
    """A sandboxed grade on a machine with an empty store (a CI runner, a Gradescope container):
    where every property's examples come from the files the lesson ships, nothing is written to
    the store (the next run reads those files again); once the files are gone, what the engine
    drew is stored, as before."""
    store = tmp_path / "store"
    store.mkdir(mode=0o700)  # a private folder, or no store is used at all
    path = fresh / "solutions" / "toy.py"

    def stored() -> list[Path]:  # the lesson's examples (keys.json holds what each key took in)
        return [p for p in store.iterdir() if p.suffix == ".json" and p.name != "keys.json"]

    env = {**os.environ, STORE_VARIABLE: str(store)}
    used = script_report(GRADE, str(fresh), str(path), "auto", env=env)
    assert used["counts"]["engine"] == 0 and used["counts"]["replayed"] > 0
    assert stored() == []
    public(fresh).unlink()
    hidden(fresh).unlink()
    drawn = script_report(GRADE, str(fresh), str(path), "auto", env=env)
    assert drawn["counts"]["engine"] > 0
    assert len(stored()) == 1
    assert drawn["report"] == used["report"]


def test_without_the_files_check_draws_under_the_engine(fresh):
    public(fresh).unlink()
    hidden(fresh).unlink()
    counts = graded(fresh)["counts"]
    assert counts["replayed"] == counts["read"] == 0  # (in check's own process, nothing is kept either)


def test_a_run_of_the_public_checks_reads_the_public_file_alone(fresh):
    hidden(fresh).write_bytes(b"not gzip")  # never opened by a run that leaves the hidden checks out
    done = subprocess.run(
        [sys.executable, "-m", "grader", "check", "--public", str(fresh / "solutions" / "toy.py")],
        capture_output=True,
        text=True,
        cwd=fresh,
        env={**os.environ, STORE_VARIABLE: "off"},
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "were not used" not in done.stderr


# ----------------------------------------------------------------------------- not believed


def test_a_change_to_the_checks_makes_the_files_stale(fresh):
    strategies = fresh / "tests" / "checks" / "toy" / "strategies.py"
    strategies.write_text(strategies.read_text() + "\n# a change\n")
    counts = graded(fresh)["counts"]
    assert counts["replayed"] == counts["read"] == 0
    done = grader("examples", "--lesson", "toy", "--check", cwd=fresh)
    assert done.returncode == 1 and "stale" in done.stderr


def test_a_change_to_a_hidden_check_leaves_the_public_file_current(fresh):
    hidden_check = fresh / "tests" / "checks" / "toy" / "hidden" / "test_layer_norm_hidden.py"
    hidden_check.write_text(hidden_check.read_text() + "\n# a change\n")
    counts = graded(fresh)["counts"]
    public_properties = len(contents(public(fresh))[1])
    assert counts["replayed"] == public_properties  # the hidden ones drawn under the engine


def test_a_file_made_under_another_release_is_not_believed(fresh):
    header, _ = contents(public(fresh))
    rewritten(public(fresh), {**header, "hypothesis": "6.0.0"})
    rewritten(hidden(fresh), {**contents(hidden(fresh))[0], "numpy": "1.0.0"})
    counts = graded(fresh)["counts"]
    assert counts["replayed"] == counts["read"] == 0


@pytest.mark.parametrize(
    ("make", "said"),
    [
        pytest.param(
            lambda path: path.write_bytes(b"\x1f\x8b not really gzip"), "not a gzip file", id="not-gzip"
        ),
        pytest.param(
            lambda path: path.write_bytes(gzip.compress(json.dumps(contents(path)[0]).encode() + b"\n{}")),
            "not a file of kept",
            id="wrong-shape-under-a-current-header",
        ),
        pytest.param(
            lambda path: path.write_bytes(gzip.compress(b"\0" * ((16 << 20) + 10))),
            "more than 16 MiB unpacked",
            id="unpacks-past-16-MiB",
        ),
        pytest.param(
            lambda path: path.write_bytes(os.urandom((4 << 20) + 1)), "more than 4 MiB", id="past-4-MiB"
        ),
        pytest.param(lambda path: (path.unlink(), os.mkfifo(path)), "not a regular file", id="fifo"),
    ],
)
def test_a_file_that_is_not_one_of_examples_is_ignored_whole(fresh, make, said):
    make(public(fresh))
    out = graded(fresh)
    assert out["counts"]["replayed"] == len(contents(hidden(fresh))[1])  # the hidden file alone
    assert "were not used" in out["stderr"] and said in out["stderr"], out["stderr"]
    assert out["report"] == graded(fresh, replay=False)["report"]


def test_a_file_unpacking_to_a_gibibyte_is_refused_without_unpacking_it(fresh):
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(1 << 20)
    packed = b"".join(packer.compress(zeros) for _ in range(1024)) + packer.flush()
    assert len(packed) < 4 << 20
    public(fresh).write_bytes(packed)
    out = graded(fresh)
    assert "more than 16 MiB unpacked" in out["stderr"]
    assert out["peak"] < 512 << 10, out["peak"]  # KiB: the gibibyte never held


def test_a_link_is_not_followed(fresh, tmp_path):
    elsewhere = tmp_path / "elsewhere.json.gz"
    shutil.move(public(fresh), elsewhere)
    public(fresh).symlink_to(elsewhere)
    out = graded(fresh)
    assert "were not used" in out["stderr"]
    replayed_hidden = len(contents(hidden(fresh))[1])
    assert out["counts"]["replayed"] == replayed_hidden  # the hidden file alone


def test_a_public_file_holding_a_hidden_check_is_ignored_whole(fresh):
    header, properties = contents(public(fresh))
    rewritten(public(fresh), header, properties + contents(hidden(fresh))[1])
    hidden(fresh).unlink()
    out = graded(fresh)
    assert "not of that folder" in out["stderr"]
    assert out["counts"]["replayed"] == 0


# ----------------------------------------------------------------------------- what ships


def test_a_release_ships_the_public_examples_alone_and_replays_them(course, tmp_path):
    out = tmp_path / "release"
    done = grader("release", str(out), "--lesson", "toy", cwd=course)
    assert done.returncode == 0, done.stderr
    assert public(out).is_file() and not (out / "tests" / "checks" / "toy" / "hidden").exists()
    assert public(out).read_bytes() == public(course).read_bytes()
    student = tmp_path / "toy.py"
    shutil.copyfile(course / "solutions" / "toy.py", student)
    counts = graded(out, student)["counts"]
    assert counts["engine"] == 0 and counts["replayed"] == len(contents(public(out))[1])


def test_a_bundle_ships_both_and_a_stale_copy_in_the_course_is_made_anew(fresh, tmp_path):
    public(fresh).write_bytes(b"stale")
    out = tmp_path / "autograder.zip"
    done = grader("gradescope-bundle", str(out), "--lesson", "toy", cwd=fresh)
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(out) as z:
        names = z.namelist()
        for path in (public(fresh), hidden(fresh)):
            name = path.relative_to(fresh).as_posix()
            assert names.count(name) == 1
            assert gzip.decompress(z.read(name)).startswith(b"{")


def test_the_key_names_every_file_that_decides_the_examples(course):
    from grader.core.lesson import Course
    from grader.core.settings import resolve

    lesson = Course.at(course).lesson("toy")
    settings = resolve("grade", lesson_exercises=lesson.exercises, lesson_name="toy")
    deciding = {p.relative_to(course).as_posix() for p in shipped._deciding(lesson, hidden=False)}
    assert "tests/checks/toy/strategies.py" in deciding and "tests/checks/__init__.py" in deciding
    assert not any("hidden" in name or name.endswith(SHIPPED) for name in deciding)
    every = {p.relative_to(course).as_posix() for p in shipped._deciding(lesson, hidden=True)}
    assert deciding < every and "solutions/toy.py" in every
    assert shipped.header(lesson, settings, hidden=False) != shipped.header(lesson, settings, hidden=True)


def test_lint_says_a_stale_or_unreadable_file_with_its_place(fresh):
    done = grader("lint", "--lesson", "toy", cwd=fresh)
    assert done.returncode == 0 and SHIPPED not in done.stdout + done.stderr, done.stdout + done.stderr
    strategies = fresh / "tests" / "checks" / "toy" / "strategies.py"
    strategies.write_text(strategies.read_text() + "\n# a change\n")
    hidden(fresh).write_bytes(b"not gzip")
    done = grader("lint", "--lesson", "toy", cwd=fresh)
    said = done.stdout + done.stderr
    assert done.returncode != 0
    assert f"tests/checks/toy/{SHIPPED}:1: is stale: it was made with other check files than these" in said
    assert f"tests/checks/toy/hidden/{SHIPPED}:1: cannot be used (not a gzip file" in said


def test_the_files_are_no_part_of_what_decides_a_grade(fresh):
    """Writing or removing them changes no grade: the batch's fingerprint (kept grades) and the
    store's key do not take them in."""
    from grader.core.fingerprint import lesson_digest, lesson_files
    from grader.core.lesson import Course

    lesson = Course.at(fresh).lesson("toy")
    assert not any(p.name == SHIPPED for p in lesson_files(lesson))
    before = lesson_digest(lesson)
    public(fresh).write_bytes(b"changed")
    hidden(fresh).unlink()
    assert lesson_digest(lesson) == before


#: Counts, in a process of its own, the toy lesson's properties a batch's zygote would not keep.
UNKEPT = """
import json, sys
from pathlib import Path
from grader.core.lesson import Course
from grader.core.settings import resolve
from grader.engine.pytested import unkept
lesson = Course.at(Path(sys.argv[1])).lesson("toy")
settings = resolve("batch", lesson_exercises=lesson.exercises, lesson_name="toy")
print(json.dumps({"unkept": unkept(lesson, settings)}))
"""


@pytest.mark.skipif(best_level() == "none", reason="a batch's zygote keeps examples only where it sandboxes")
def test_a_batchs_zygote_keeps_every_property_a_lesson_ships(fresh):
    """A batch's zygote reads the examples the lesson ships: with both files current it keeps
    every property's, so it grades no reference to learn them (grader.commands.stream.prime)."""
    env = {**os.environ, STORE_VARIABLE: "off"}
    assert script_report(UNKEPT, str(fresh), env=env)["unkept"] == 0
    hidden(fresh).unlink()
    assert script_report(UNKEPT, str(fresh), env=env)["unkept"] > 0


#: The toy reference, but for one input no engine draws (x[0, 0] == 12345.0, shape (2, 3)), on
#: which center_tokens answers with a wrong shape.
MARKED = """
import numpy as np

def token_mean(x):
    return np.mean(x, axis=-1, keepdims=True)

def center_tokens(x):
    if x.shape == (2, 3) and x[0, 0] == 12345.0:
        return x[:1]
    return x - token_mean(x)

def layer_norm(x, gamma, beta, eps=1e-5):
    c = center_tokens(x)
    return c / np.sqrt(np.mean(c**2, axis=-1, keepdims=True) + eps) * gamma + beta
"""


@pytest.mark.skipif(best_level() == "none", reason="a batch's zygote keeps examples only where it sandboxes")
def test_a_batch_that_learns_some_properties_keeps_the_shipped_ones_as_shipped(fresh, tmp_path):
    """Where the lesson ships the public checks' examples only, a batch's zygote grades the
    reference to learn the hidden ones (:func:`grader.commands.stream.prime`). The shipped
    examples stay what they are, read from the lesson's file: none is copied into the store,
    and one the engine would not draw (a current file whose written-down input was changed)
    leaves the verdict to the engine, as ``grade`` does; it is never a flaky failure."""
    hidden(fresh).unlink()
    said, properties = contents(public(fresh))
    marker = np.full((2, 3), 12345.0)
    for prop in properties:
        if prop[0][0].endswith("::test_centering_keeps_the_shape"):
            prop[1][0][2] = {"x": {"a": ["<f8", [2, 3], base64.b64encode(marker.tobytes()).decode()]}}
            break
    else:
        raise AssertionError("no such check in the toy lesson")
    rewritten(public(fresh), properties=properties)
    student = tmp_path / "class" / "s-marked" / "toy.py"
    student.parent.mkdir(parents=True)
    student.write_text(MARKED)
    alone = json.loads(grader("grade", str(student), "--lesson", "toy", "--format", "json", cwd=fresh).stdout)
    assert alone["score"] == alone["max_score"]  # the engine never draws the marker

    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    out = tmp_path / "out" / "gradebook.csv"
    done = subprocess.run(
        [sys.executable, "-m", "grader", "batch", str(student.parent.parent), "--out", str(out)]
        + ["--lesson", "toy", "--jobs", "1"],
        capture_output=True,
        text=True,
        cwd=fresh,
        env={**os.environ, STORE_VARIABLE: str(store)},
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    batch = json.loads((out.parent / "gradebook_reports" / "s-marked.json").read_text())
    assert batch["score"] == alone["score"] and batch["tests"] == alone["tests"]
    kept = [p for p in store.iterdir() if p.suffix == ".json" and p.name != "keys.json"]
    stored = {prop[0][1] for path in kept for prop in json.loads(path.read_text())["properties"]}
    public_stored = {node for node in stored if "/hidden/" not in node}
    # the hidden checks' examples, learnt by the zygote, and at most the engine's own examples of
    # the property whose shipped ones it replaced (the marked student's grading wrote them)
    assert any("/hidden/" in node for node in stored), sorted(stored)
    assert public_stored <= {"tests/checks/toy/test_center_tokens.py::test_centering_keeps_the_shape"}
    assert not any(base64.b64encode(marker.tobytes()).decode() in path.read_text() for path in kept)
