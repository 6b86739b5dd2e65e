"""The store of examples (grader.engine.store): a second process replays what a first one's engine
drew, with the same report; a change to what decides the examples is a new key; and a store file
that this user did not make private (a link, a FIFO, a huge file, someone else's, one others may
write) or of the wrong shape is ignored whole: the run draws under the engine, as without it.

Each grading is a process of its own (the store is what outlives one); the toy lesson, sandboxed.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from grader.core.settings import STORE_VARIABLE, resolve
from grader.sandbox.wardens import best_level

from .support import (
    ON_TOY,
    STALE_STORE_SECONDS,
    TOY,
    TOY_BUGGY,
    TOY_COURSE,
    python,
    script_report,
    sweep_stores,
)

pytestmark = pytest.mark.skipif(best_level() == "none", reason="the store serves sandboxed grading only")

#: Grades one file of a lesson in a process of its own and prints what replay did and the report.
GRADE = """
import json, sys
from pathlib import Path
from grader.core.lesson import Course
from grader.core.settings import resolve
from grader.engine import replay
from grader.engine.run import run_checks
from grader.formats.json_report import to_dict
course, name, path, command = sys.argv[1:5]
lesson = Course.at(Path(course)).lesson(name)
settings = resolve(command, lesson_exercises=lesson.exercises, lesson_name=name)
report = to_dict(run_checks(Path(path), lesson=lesson, settings=settings))
print(json.dumps({"counts": replay.COUNTS, "report": report}, sort_keys=True))
"""


def graded(store, path: Path = TOY.solution, *, course: Path = TOY_COURSE, command: str = "grade") -> dict:
    env = {**os.environ, STORE_VARIABLE: str(store)}
    return script_report(GRADE, str(course), "toy", str(path), command, env=env)


def kept_files(store: Path) -> list[Path]:
    return sorted(p for p in store.glob("*.json") if p.name != "keys.json")


@pytest.fixture(scope="module")
def filled(tmp_path_factory) -> tuple[Path, dict]:
    """A store filled by one grade of the reference, and what that grade reported."""
    store = tmp_path_factory.mktemp("filled") / "store"
    first = graded(store)
    assert first["counts"]["replayed"] == 0 and first["counts"]["engine"] > 0
    return store, first


def test_a_second_process_replays_what_the_first_kept_with_the_same_report(filled, tmp_path):
    store, first = filled
    (kept,) = kept_files(store)
    assert stat.S_IMODE(store.stat().st_mode) == 0o700 and stat.S_IMODE(kept.stat().st_mode) == 0o600
    again = graded(store)
    assert again["counts"]["engine"] == 0 and again["counts"]["replayed"] == first["counts"]["engine"]
    assert again["counts"]["read"] > 0  # arguments read as written down, not drawn
    assert again["report"] == first["report"]
    # a submission that fails: its passing properties replay, the failing ones run under the
    # engine (with the replayed calls answered from the tape), and the report is the engine's
    alone = graded(tmp_path / "empty", TOY_BUGGY)
    replayed = graded(store, TOY_BUGGY)
    assert alone["counts"]["replayed"] == 0
    assert replayed["counts"]["replayed"] > 0 and replayed["report"] == alone["report"]


def test_checking_in_the_students_own_process_neither_reads_nor_writes_the_store(filled, tmp_path):
    store, _ = filled
    here = graded(store, command="check")  # isolation none: the student's code in this process
    assert here["counts"] == {"replayed": 0, "engine": 0, "answered": 0, "read": 0}  # replay off there
    fresh = tmp_path / "fresh"
    graded(fresh, command="check")
    assert not fresh.exists()


def test_a_changed_check_is_a_new_key_and_an_unchanged_course_reuses_its_key(filled, tmp_path):
    course = tmp_path / "toy"
    shutil.copytree(TOY_COURSE, course, ignore=shutil.ignore_patterns("__pycache__"))
    store = tmp_path / "store"
    graded(store, course=course)
    memo = (store / "keys.json").read_text()
    again = graded(store, course=course)
    assert again["counts"]["engine"] == 0 and (store / "keys.json").read_text() == memo
    strategies = course / "tests" / "checks" / "toy" / "strategies.py"
    strategies.write_text(strategies.read_text() + "\n# a comment changes no example, but the key\n")
    changed = graded(store, course=course)
    assert changed["counts"]["replayed"] == 0 and changed["counts"]["engine"] > 0
    assert len(kept_files(store)) == 2
    # a new file among the checks is seen too, without any file that was read changing
    (course / "tests" / "checks" / "toy" / "helpers.py").write_text("SIZE = 3\n")
    assert graded(store, course=course)["counts"]["replayed"] == 0


def test_arguments_written_down_that_do_not_read_back_are_drawn_from_their_choices(filled, tmp_path):
    """An example whose written arguments cannot be read (here an array of Python objects, which
    would be pointers, a class from outside the lesson's checks, a float of seven bytes, an axis
    longer than memory) is drawn from its choices, as without them: the same report, nothing said."""
    source, first = filled
    store = tmp_path / "store"
    shutil.copytree(source, store)
    (kept,) = kept_files(store)
    bad = [
        {"x": {"a": ["|O", [1], "AAAAAAAAAAA="]}},
        {"x": {"c": ["grader.core.results:CallOutcome", []]}},
        {"x": {"f": "00000000000000  "}},  # seven bytes where a float has eight
        {"x": {"a": ["<f8", [2**64], ""]}},
    ]
    kept.write_bytes(
        _edited(
            kept, lambda examples: [[c, stop, bad[i % len(bad)]] for i, (c, stop, _) in enumerate(examples)]
        )
    )
    os.chmod(kept, 0o600)
    again = graded(store)
    assert again["counts"]["read"] == 0 and again["counts"]["engine"] == 0 and again["counts"]["replayed"] > 0
    assert again["report"] == first["report"] and "Traceback" not in again["stderr"]


#: A toy check that draws part of its input from ``st.data()`` as it runs (before any call).
DRAWS_AS_IT_RUNS = '''
"""A check that draws a shift as it runs."""

from hypothesis import given
from hypothesis import strategies as st

from grader import expect
from grader.marks import graded

from .strategies import tokens


@graded("center_tokens", points=1)
@given(x=tokens(), data=st.data())
def test_a_shift_drawn_as_the_check_runs(student, x, data):
    """Adding one number to every value of the tokens changes nothing once they are centered."""
    shift = data.draw(st.floats(-3, 3), label="shift")
    expect.close(
        student.center_tokens(x + shift), student.center_tokens(x), name="center_tokens", rtol=1e-9, atol=1e-9
    )
'''


def test_a_property_that_draws_as_it_runs_has_its_other_arguments_written_down(tmp_path):
    """A property with an ``st.data()`` argument has its other arguments written down with how
    many choices they took (the check draws the rest as it runs, from a fresh data object): read
    back, its examples give the engine's reports, for a right file and a wrong one."""
    course = tmp_path / "toy"
    shutil.copytree(TOY_COURSE, course, ignore=shutil.ignore_patterns("__pycache__"))
    (course / "tests" / "checks" / "toy" / "test_drawn_as_it_runs.py").write_text(DRAWS_AS_IT_RUNS)
    store = tmp_path / "store"
    first = graded(store, course=course)
    (kept,) = kept_files(store)
    (examples,) = [p[1] for p in json.loads(kept.read_text())["properties"] if "shift_drawn" in p[0][1]]
    ran = [(choices, down) for choices, stop, down in examples if stop is None]
    assert len(ran) >= 10 and all(down is not None and set(down) == {"x", "data"} for _, down in ran)
    assert all(0 < down["data"]["h"] < len(choices) for choices, down in ran)  # the shift: drawn later
    again = graded(store, course=course)
    assert again["counts"]["engine"] == 0 and again["counts"]["read"] >= len(examples)
    assert again["report"] == first["report"]
    for path in (TOY_BUGGY,):
        alone = graded(tmp_path / f"empty-{path.parent.name}", path, course=course)
        assert alone["counts"]["read"] == 0
        assert graded(store, path, course=course)["report"] == alone["report"]


@pytest.fixture(scope="module")
def large_only(tmp_path_factory) -> Path:
    """A toy file right on a property's smallest examples only: what cutting the kept examples
    to each property's first would let through."""
    path = tmp_path_factory.mktemp("large-only") / TOY.filename
    path.write_text(
        TOY.solution.read_text()
        + "\n\n_right = center_tokens\n\n\ndef center_tokens(x):\n"
        + "    return _right(x) if x.size <= 2 else _right(x) * 1.5\n"
    )
    return path


def _edited(kept: Path, edit) -> bytes:
    """The text of the store file ``kept`` with each property's examples made ``edit(examples)``."""
    whole = json.loads(kept.read_text())
    for prop in whole["properties"]:
        prop[1] = edit(prop[1])
    return json.dumps(whole).encode()


def _poisoned(kept: Path) -> bytes:
    """The kept examples of ``kept`` cut to each property's first: of the right shape, and what
    would let a buggy file through if the store were believed."""
    return _edited(kept, lambda examples: examples[:1])


def _planted(store: Path, name: str, how: str, data: bytes, elsewhere: Path) -> None:
    target = store / name
    target.unlink()
    if how == "a link to a private file":
        (elsewhere / "real.json").write_bytes(data)
        os.chmod(elsewhere / "real.json", 0o600)
        target.symlink_to(elsewhere / "real.json")
    elif how == "a FIFO":
        os.mkfifo(target, 0o600)
    elif how == "64 GiB":
        with open(target, "wb") as f:
            f.truncate(64 << 30)
        os.chmod(target, 0o600)
    else:
        target.write_bytes(data)
        os.chmod(target, 0o600)
        if how == "writable by others":
            os.chmod(target, 0o666)
        elif how == "another user's":
            os.chown(target, 65534, 65534)


PLANTED = ["a link to a private file", "a FIFO", "64 GiB", "writable by others", "another user's"]


@pytest.mark.parametrize("how", PLANTED)
def test_a_store_file_not_made_private_by_this_user_is_not_believed(filled, large_only, tmp_path, how):
    if how == "another user's" and os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    source, _ = filled
    store = tmp_path / "store"
    shutil.copytree(source, store)
    (kept,) = kept_files(store)
    alone = graded(tmp_path / "empty", large_only)
    _planted(store, kept.name, how, _poisoned(kept), tmp_path)
    planted = graded(store, large_only)
    assert planted["counts"]["replayed"] == 0
    assert planted["report"] == alone["report"]


def test_the_store_is_the_grading_sides_own_state_so_a_poisoned_private_file_would_be_believed(
    filled, large_only, tmp_path
):
    """What the checks above defend: the same poisoned content, in a file this user made private,
    is replayed and lets the buggy file through. So the store must be as private as the grader's
    own files, and is."""
    source, _ = filled
    store = tmp_path / "store"
    shutil.copytree(source, store)
    (kept,) = kept_files(store)
    alone = graded(tmp_path / "empty", large_only)
    kept.write_bytes(_poisoned(kept))
    believed = graded(store, large_only)
    assert believed["counts"]["replayed"] > 0
    assert believed["report"]["score"] > alone["report"]["score"]


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"{",
        b"[]",
        b'{"format": 2, "properties": [[["k"], [[[{"a": 1}], null, null]]]]}',
        b"\xff\xfe",
        b"[" * 100000,
    ],
    ids=["empty", "cut", "a list", "a choice of the wrong kind", "not UTF-8", "deeply nested"],
)
def test_a_store_file_of_the_wrong_shape_is_ignored_whole_in_words(filled, tmp_path, content):
    source, _ = filled
    store = tmp_path / "store"
    shutil.copytree(source, store)
    (kept,) = kept_files(store)
    kept.write_bytes(content)
    os.chmod(kept, 0o600)
    out = graded(store)
    assert out["counts"]["replayed"] == 0 and out["report"]["score"] == filled[1]["report"]["score"]
    assert "Traceback" not in out["stderr"]
    assert kept_files(store)  # rewritten from what the engine drew
    assert graded(store)["counts"]["engine"] == 0


def test_a_store_folder_someone_else_may_enter_is_left_alone(tmp_path):
    """A folder others may enter is never made private (it may be one they use: /tmp, say), nor
    used; nor is a folder that is a link."""
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o1777)
    out = graded(shared)
    assert out["counts"]["replayed"] == 0 and out["report"]["score"] == out["report"]["max_score"]
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777 and not kept_files(shared)
    mine = tmp_path / "mine"
    graded(mine)
    assert stat.S_IMODE(mine.stat().st_mode) == 0o700 and kept_files(mine)
    link = tmp_path / "link"
    link.symlink_to(mine)
    assert graded(link)["counts"]["replayed"] == 0  # a folder that is a link is not used


def test_where_the_store_is_resolved_once(tmp_path):
    ada = tmp_path / "home" / "ada"
    ada.mkdir(parents=True)
    home = {"HOME": str(ada)}
    assert resolve("grade", environ=home).store == f"{ada}/.cache/grader/replay"
    assert (
        resolve("grade", environ={**home, "XDG_CACHE_HOME": str(tmp_path / "cache")}).store
        == f"{tmp_path}/cache/grader/replay"
    )
    assert (
        resolve("grade", environ={**home, "XDG_CACHE_HOME": "relative"}).store
        == f"{ada}/.cache/grader/replay"
    )
    assert resolve("grade", environ={**home, STORE_VARIABLE: "off"}).store is None
    assert resolve("grade", environ={**home, STORE_VARIABLE: "/srv/kept"}).store == "/srv/kept"
    assert resolve("grade", environ={**home, "GRADER_REPLAY": "off"}).store is None


def test_a_home_that_is_not_there_is_not_made(tmp_path):
    """With $HOME naming no folder, the grader (as root, say) made it, folder by folder, to keep
    its examples in: anywhere on the machine a variable named. No store then; a grade all the same."""
    gone = tmp_path / "nowhere" / "home"
    env = {k: v for k, v in os.environ.items() if k not in (STORE_VARIABLE, "XDG_CACHE_HOME")}
    assert resolve("grade", environ={**env, "HOME": str(gone)}).store is None
    assert resolve("grade", environ={**env, "XDG_CACHE_HOME": str(gone / ".cache")}).store is None
    done = python("grade", str(TOY.solution), *ON_TOY, env={**env, "HOME": str(gone)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert not (tmp_path / "nowhere").exists()


def test_no_store_where_the_students_code_runs_as_the_graders_own_user(tmp_path, monkeypatch):
    """At the process level as an ordinary user the student's code could write the store: none is
    opened there (as root the student runs as a user of its own, and the store is used). The
    ordinary user is played by a patched ``geteuid`` that owns the folder."""
    from dataclasses import replace

    from grader.core.settings import Isolation
    from grader.engine import store

    if os.geteuid() != 0:
        pytest.skip("root plays the ordinary user by giving it the folder")
    kept = tmp_path / "kept"
    asked = resolve("grade", environ={STORE_VARIABLE: str(kept)})
    store._OPENED.clear()
    assert store.open_store(TOY, replace(asked, level=Isolation.PROCESS)) is not None  # as root
    store._OPENED.clear()
    os.chown(kept, 1000, 1000)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert store.open_store(TOY, replace(asked, level=Isolation.NAMESPACES)) is not None  # the folder is its
    store._OPENED.clear()
    assert store.open_store(TOY, replace(asked, level=Isolation.PROCESS)) is None
    assert store.open_store(TOY, replace(asked, level=Isolation.NONE)) is None
    store._OPENED.clear()


def _holds_for_a_file_wrong_on_long_inputs_only(store: Path, course: Path, tmp_path: Path) -> None:
    """A toy file wrong only for five tokens or more (what old examples of at most four would let
    through) gets from ``store`` the report the engine gives it alone."""
    wrong = tmp_path / "wrong" / TOY.filename
    wrong.parent.mkdir()
    wrong.write_text(
        TOY.solution.read_text()
        + "\n\n_right = center_tokens\n\n\ndef center_tokens(x):\n"
        + "    return _right(x) if x.shape[-2] < 5 else x\n"
    )
    alone = graded(tmp_path / "none", wrong, course=course)
    assert alone["report"]["score"] < alone["report"]["max_score"]
    assert graded(store, wrong, course=course)["report"] == alone["report"]


def _course_with_a_library(tmp_path: Path) -> Path:
    """The toy course with its strategies in ``lib/``, a folder pytest's own setting puts on the
    path (no import of the checks names it as a course file)."""
    course = tmp_path / "toy"
    shutil.copytree(TOY_COURSE, course, ignore=shutil.ignore_patterns("__pycache__"))
    (course / "lib").mkdir()
    strategies = course / "tests" / "checks" / "toy" / "strategies.py"
    (course / "lib" / "toy_inputs.py").write_text(strategies.read_text())
    strategies.write_text("from toy_inputs import VALUES, layers, tokens  # noqa: F401\n")
    (course / "pytest.ini").write_text("[pytest]\npythonpath = lib\n")
    return course


def test_a_module_the_checks_reach_through_the_path_is_in_the_key(tmp_path):
    """A file the checks import through a folder a pytest setting (or a conftest) put on the path
    is in the key: a change to it is a new file of examples, never the old ones replayed (here
    they would let through a file that is wrong only on the longer inputs the change allows)."""
    course = _course_with_a_library(tmp_path)
    store = tmp_path / "store"
    graded(store, course=course)
    assert graded(store, course=course)["counts"]["engine"] == 0
    library = course / "lib" / "toy_inputs.py"
    library.write_text(library.read_text().replace("st.integers(1, 4)", "st.integers(1, 6)"))
    assert graded(store, course=course)["counts"]["replayed"] == 0  # a new key
    _holds_for_a_file_wrong_on_long_inputs_only(store, course, tmp_path)


def test_examples_on_disk_that_the_engine_would_not_draw_never_change_a_grade(filled, tmp_path, large_only):
    """A check file changed in place with its size, times and inode put back (as ``touch -r`` or
    ``cp -p`` leave it) is a new key all the same (its change time moved); and a store file
    edited by hand (each example's choices cut short, or reversed) is replayed only while its
    examples fit: every report is the engine's alone (the rule for an example from disk that
    fails where the engine passes is in tests/test_replay.py)."""
    course = tmp_path / "toy"
    shutil.copytree(TOY_COURSE, course, ignore=shutil.ignore_patterns("__pycache__"))
    store = tmp_path / "store"
    graded(store, course=course)
    strategies = course / "tests" / "checks" / "toy" / "strategies.py"
    before = strategies.stat()
    with open(strategies, "r+") as f:  # the same inode, the same size
        f.write(strategies.read_text().replace("st.integers(1, 4)", "st.integers(1, 6)"))
    os.utime(strategies, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert strategies.stat().st_size == before.st_size and strategies.stat().st_ino == before.st_ino
    assert graded(store, course=course)["counts"]["replayed"] == 0  # a new key
    source, _ = filled
    by_hand = tmp_path / "by-hand"
    shutil.copytree(source, by_hand)
    (kept,) = kept_files(by_hand)
    kept.write_bytes(
        _edited(
            kept,
            lambda examples: (  # choices changed, and no arguments written down: the choices are drawn
                [[choices[: len(choices) // 2], stop, None] for choices, stop, _ in examples[:3]]
                + [[list(reversed(choices)), stop, None] for choices, stop, _ in examples[3:]]
            ),
        )
    )
    os.chmod(kept, 0o600)
    for path in (TOY.solution, large_only, TOY_BUGGY):
        alone = graded(tmp_path / "none", path)
        assert graded(by_hand, path)["report"] == alone["report"], path.name


def test_a_store_whose_folder_is_swapped_for_a_link_after_it_was_opened_writes_nowhere_else(tmp_path):
    """The store is reached once, one name at a time without following a link, and used through
    that descriptor: a process that renames the folder and puts a link in its place (a student's,
    at the process level, where a folder on the way is writable) moves nothing. A folder on the
    way that others may write to (and is not sticky) is refused outright."""
    from dataclasses import replace

    from grader.core.settings import Isolation
    from grader.engine import replay, store

    public = tmp_path / "public"
    public.mkdir()
    os.chmod(public, 0o777)
    asked = replace(
        resolve("grade", environ={STORE_VARIABLE: str(public / "kept")}), level=Isolation.NAMESPACES
    )
    store._OPENED.clear()
    assert store.open_store(TOY, asked) is None and not (public / "kept").exists()
    os.chmod(public, 0o755)
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o700)
    for i in range(70):
        (victim / f"{i:040x}.json").write_text("{}")
    store._OPENED.clear()
    opened = store.open_store(TOY, asked)
    assert opened is not None
    opened.begin()  # as a run does once its checks are collected (not what an earlier run of this process read)
    (public / "kept").rename(public / "moved")
    (public / "kept").symlink_to(victim)
    replay.forget()
    replay.adopt_items((((str(TOY.checks), "x", 1, 1), ((("a",), None),)),))
    try:
        assert opened.save() == 1
    finally:
        replay.forget()
        store._OPENED.clear()
    assert len(list(victim.iterdir())) == 70  # nothing written or removed there
    assert (public / "moved" / opened.file).is_file()


@pytest.mark.parametrize("cut", ["no example", "only examples the engine stopped"])
def test_a_kept_property_with_no_example_that_ran_is_not_believed(filled, tmp_path, cut):
    """A property kept with no example that ran would pass without calling anything: such a
    file, private or not, is ignored whole, and the stubs score what they score alone."""
    source, _ = filled
    store = tmp_path / "store"
    shutil.copytree(source, store)
    (kept,) = kept_files(store)
    kept.write_bytes(_edited(kept, lambda examples: [] if cut == "no example" else [[[], "StopTest"]]))
    os.chmod(kept, 0o600)
    out = graded(store, TOY.stubs)
    assert out["counts"]["replayed"] == 0 and out["report"]["score"] == 0
    assert "were not used" in out["stderr"]


def test_a_digest_is_remembered_only_if_computing_it_again_gives_it(tmp_path):
    """A file saved while its digest was being computed is not paired with what it held before:
    the remembered key would then stay stale until the file changed again."""
    from grader.engine import store

    path = tmp_path / "checks.py"
    path.write_text("old")
    read = []

    def compute(probed):
        probed[str(path)] = True
        read.append(path.read_text())
        if len(read) == 1:
            path.write_text("new")  # saved just after the first computation read it
        return read[-1]

    memo: dict = {}
    assert store._remembered(memo, "lesson", [str(path)], compute)[0] == "old"
    assert "lesson" not in memo
    assert store._remembered(memo, "lesson", [str(path)], compute)[0] == "new"
    assert memo["lesson"]["digest"] == "new"
    assert (
        store._remembered(memo, "lesson", [str(path)], compute)[0] == "new" and len(read) == 4
    )  # remembered: not computed again


def test_nothing_is_kept_while_the_checks_read_a_course_file_the_key_does_not_take_in(tmp_path):
    """Checks that read a data file of the course (or import a module while drawing) depend on
    something the key does not take in: nothing is written, so a change to it can never let
    old examples through."""
    course = tmp_path / "toy"
    shutil.copytree(TOY_COURSE, course, ignore=shutil.ignore_patterns("__pycache__"))
    (course / "data").mkdir()
    (course / "data" / "limits.json").write_text('{"longest": 4}')
    strategies = course / "tests" / "checks" / "toy" / "strategies.py"
    strategies.write_text(
        strategies.read_text()
        .replace("import numpy as np\n", "import json\nfrom pathlib import Path\n\nimport numpy as np\n", 1)
        .replace(
            "draw(st.integers(1, 4))",
            "draw(st.integers(1, json.loads((Path(__file__).parents[3] / 'data' / 'limits.json')"
            ".read_text())['longest']))",
        )
    )
    store = tmp_path / "store"
    first = graded(store, course=course)
    assert first["report"]["score"] == first["report"]["max_score"] and not kept_files(store)
    assert graded(store, course=course)["counts"]["replayed"] == 0
    (course / "data" / "limits.json").write_text('{"longest": 6}')
    _holds_for_a_file_wrong_on_long_inputs_only(store, course, tmp_path)


def test_the_grader_imports_nothing_from_the_folder_it_was_started_in(tmp_path):
    """``python -m`` puts the working folder first on the path; a file there named as a module
    the grader or numpy imports later (a student's, left in a shared folder) must never run."""
    for name in ("resource", "ctypes", "sqlite3"):
        (tmp_path / f"{name}.py").write_text(
            f"open({str(tmp_path / ('ran-' + name))!r}, 'w').close()\nraise ImportError('planted')\n"
        )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "grader",
            "grade",
            *("--course", str(TOY_COURSE), "--lesson", "toy"),
            str(TOY.solution),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, STORE_VARIABLE: "off"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert not list(tmp_path.glob("ran-*"))


def test_what_a_writer_killed_midway_left_is_removed_once_old(filled, tmp_path):
    """A grader killed while writing leaves its temporary file: the next write removes it once it
    is an hour old (a younger one may be another writer's, busy); nothing not named so is touched."""
    source, _ = filled
    store = tmp_path / "store"
    shutil.copytree(source, store)
    for kept in kept_files(store):
        kept.unlink()  # so that the next grade writes
    old, young, other = (
        store / ".writing-0123456789abcdef",
        store / ".writing-fedcba9876543210",
        store / ".writing-x",
    )
    for path in (old, young, other):
        path.write_text("{")
        os.chmod(path, 0o600)
    hours_ago = os.stat(old).st_mtime - 7200
    os.utime(old, (hours_ago, hours_ago))
    os.utime(other, (hours_ago, hours_ago))
    graded(store)
    assert kept_files(store) and not old.exists() and young.exists() and other.exists()


#: Grades the toy reference in this process, then says whether files opened now are noted.
GRADE_THEN_READ = GRADE.replace(
    "print(json.dumps(",
    "from grader.engine import store\n"
    "print(json.dumps({'recording': store._OPENED_FILES is not None, 'stores': len(store._OPENED)}))\n"
    "print(json.dumps(",
)


def test_what_the_process_opens_after_a_run_is_no_longer_noted(tmp_path):
    """The store notes the files a run opens (:meth:`Store.untaken`) while the run lasts: a
    notebook's kernel or a long-lived process grading again does not keep noting every file it
    opens afterwards, and a store saved later does not read what another run opened."""
    done = subprocess.run(
        [sys.executable, "-c", GRADE_THEN_READ, str(TOY_COURSE), "toy", str(TOY.solution), "grade"],
        capture_output=True,
        text=True,
        env={**os.environ, STORE_VARIABLE: str(tmp_path / "store")},
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    after = json.loads(lines[-2])
    assert after["stores"] == 1  # a store was used, so the run noted what it opened
    assert after["recording"] is False
    assert kept_files(tmp_path / "store")  # and it was saved, with what it noted


def test_the_suite_sweeps_the_stale_stores_of_its_earlier_runs_and_nothing_else(tmp_path):
    """Each run of this suite keeps its examples in a folder of its own in the temporary folder
    (tests/support.py) and left it there: 15 MB a run, 300 MB on the development machine in a
    day. A run now removes this user's stale ones; its own, a recent one (a run going on beside
    it), a link of that name (never followed) and anything else stay."""
    now = 1_000_000_000.0
    old = now - STALE_STORE_SECONDS - 60
    prefix = "grader-suite-store-7-"
    made = {}
    for name, when in (("stale", old), ("recent", now - 60), ("mine", old)):
        folder = tmp_path / f"{prefix}{name}"
        (folder / "kept").mkdir(parents=True)
        (folder / "kept" / "examples.json").write_text("{}", encoding="utf-8")
        os.utime(folder, (when, when))
        made[name] = folder
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "precious").mkdir(parents=True)
    os.utime(elsewhere, (old, old))  # stale too: only the link's own kind keeps it
    link = tmp_path / f"{prefix}link"
    link.symlink_to(elsewhere, target_is_directory=True)
    os.utime(link, (old, old), follow_symlinks=False)
    other = tmp_path / "grader-other-stale"
    other.mkdir()
    os.utime(other, (old, old))

    removed = sweep_stores(tmp_path, prefix, made["mine"].name, now)

    assert removed == [made["stale"].name]
    assert not made["stale"].exists()
    assert made["recent"].is_dir() and made["mine"].is_dir() and other.is_dir()
    assert link.is_symlink() and (elsewhere / "precious").is_dir()
