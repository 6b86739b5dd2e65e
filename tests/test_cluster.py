"""``batch --cluster``: a class graded on real Dask scheduler and worker processes (loopback)
gives the gradebook and the reports a local batch gives; a worker killed mid-batch costs nothing;
a worker whose lesson differs is refused in words; without ``--cluster`` no Dask is imported.

Every test grades the toy lesson (tests/courses/toy): what is tested is how a class is graded
on a cluster, not a lesson."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .support import (
    ON_TOY,
    ROOT,
    TOY,
    TOY_BATCH,
    TOY_BUGGY,
    TOY_COURSE,
    compose,
    from_a_terminal,
    graded_count,
    net,
    python,
)

distributed = pytest.importorskip("distributed")

SIZE = 6
#: A bug of the toy lesson: layer_norm forgets to shift by beta.
NO_BETA = "def layer_norm(x, gamma, beta, eps=1e-5):\n    return center_tokens(x) / np.sqrt(token_mean(center_tokens(x) ** 2) + eps) * gamma\n"


def make_class(root: Path) -> Path:
    """Six students of the toy lesson: the reference, two mistakes of its gallery, the stub, a
    syntax error, a bug of layer_norm (it forgets beta)."""
    klass = root / "class"
    students = [
        ("ada", TOY.solution),
        ("bob", TOY_BUGGY),
        ("carl", TOY.stubs),
        ("eve", TOY.gallery / "forgets-eps" / TOY.filename),
    ]
    for student, source in students:
        (klass / student).mkdir(parents=True)
        shutil.copy(source, klass / student / TOY.filename)
    (klass / "dan").mkdir()
    (klass / "dan" / TOY.filename).write_text("def center_tokens(x:\n", encoding="utf-8")
    (root / "no_beta.py").write_text(NO_BETA, encoding="utf-8")
    compose(root / "no_beta.py", klass / "fay", TOY)
    return klass


def batch(klass: Path, out: Path, *extra: str, **kwargs) -> subprocess.CompletedProcess:
    return python("batch", *ON_TOY, str(klass), "--out", str(out), *extra, timeout=net(SIZE), **kwargs)


def read_csv(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def reports(out: Path) -> dict[str, object]:
    """Each student's JSON report (text where there is none), by file name."""
    folder = out.with_name(out.stem + "_reports")
    found = {}
    for path in sorted(folder.iterdir()):
        if path.suffix == ".json":
            found[path.name] = json.loads(path.read_text(encoding="utf-8"))
        elif path.suffix == ".txt":
            found[path.name] = path.read_text(encoding="utf-8")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def patched_course(root: Path) -> Path:
    """A copy of the course whose lesson gives one check another number of points."""
    course = root / "patched-course"
    shutil.copytree(TOY_COURSE, course, ignore=shutil.ignore_patterns("__pycache__"))
    check = course / "tests" / "checks" / "toy" / "test_center_tokens.py"
    text = check.read_text(encoding="utf-8")
    assert '@graded("center_tokens", points=2)' in text
    check.write_text(
        text.replace('@graded("center_tokens", points=2)', '@graded("center_tokens", points=4)', 1)
    )
    return course


class Cluster:
    """A scheduler and its workers, each a process of its own on 127.0.0.1."""

    def __init__(self, root: Path):
        self.root = root
        self.port = free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen] = []
        self.workers: dict[str, tuple[subprocess.Popen, str]] = {}  # name -> (process, address)
        self.start(
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1"]
            + ["--port", str(self.port), "--no-dashboard", "--no-show"]
        )

    def start(self, command: list[str], env: dict | None = None, name: str = "") -> subprocess.Popen:
        log = (self.root / f"{name or 'scheduler'}.log").open("wb")
        proc = subprocess.Popen(command, stdout=log, stderr=log, cwd=self.root, env=env)
        self.procs.append(proc)
        return proc

    def worker(self, name: str, env: dict | None = None) -> str:
        port = free_port()
        proc = self.start(
            [sys.executable, "-m", "distributed.cli.dask_worker", self.address, "--name", name]
            + ["--host", "127.0.0.1", "--worker-port", str(port), "--nthreads", "1", "--no-nanny"]
            + ["--no-dashboard"],
            env={**os.environ, **(env or {})},
            name=name,
        )
        self.workers[name] = (proc, f"tcp://127.0.0.1:{port}")
        return self.workers[name][1]

    def wait_for(self, count: int) -> None:
        with distributed.Client(self.address, timeout=60) as client:
            client.wait_for_workers(count, timeout=120)

    def close(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=5)  # a worker whose scheduler went first may wait for it: no more
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    """The class, its local batch's gradebook, and a cluster of two workers that grade as the
    driver would and one whose lesson differs."""
    root = tmp_path_factory.mktemp("cluster")
    klass = make_class(root)
    local = root / "local" / "gradebook.csv"
    # the local batch, run in a process that then says which modules it imported
    code = (
        "import sys; from grader.cli import main; "
        f"toy = {list(ON_TOY)!r}; "
        f"codes = [main(['grade', *toy, {str(klass / 'dan' / TOY.filename)!r}]),"
        f" main(['batch', *toy, {str(klass)!r}, '--out', {str(local)!r}])]; "
        "print('BATCH', codes[1], 'IMPORTED', sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))"
    )
    plain = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=net(SIZE + 1)
    )
    cluster = Cluster(root)
    try:
        cluster.worker("good-1")
        cluster.worker("good-2")
        cluster.worker("patched", env={"GRADER_COURSE": str(patched_course(root))})
        cluster.wait_for(3)
        yield klass, local, plain, cluster
    finally:
        cluster.close()


def test_without_cluster_neither_batch_nor_grade_imports_dask(place):
    _, local, plain, _ = place
    assert plain.returncode == 0, plain.stderr
    assert "BATCH 0 IMPORTED []" in plain.stdout
    assert len(read_csv(local)) == SIZE


def test_a_class_graded_on_a_cluster_is_the_class_graded_here(place, tmp_path):
    """One worker is killed with -9 mid-batch (after the second grade), and the one whose
    lesson differs is refused; the gradebook and the reports are still the local batch's."""
    klass, local, _, cluster = place
    out = tmp_path / "gradebook.csv"
    proc = subprocess.Popen(
        [*TOY_BATCH, str(klass), "--out", str(out), "--cluster", cluster.address],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    victim, _ = cluster.workers["good-1"]
    lines = []
    try:
        for line in proc.stderr:  # a line per submission graded: the worker is killed after the second
            lines.append(line)
            if sum(x.startswith("[") for x in lines) == 2:
                assert victim.poll() is None
                victim.send_signal(signal.SIGKILL)
                break
        rest, _ = proc.communicate(timeout=net(SIZE))
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = "".join(lines) + rest
    assert proc.returncode == 0, stderr
    assert victim.wait(timeout=10) == -signal.SIGKILL
    assert read_csv(out) == read_csv(local)  # one row per student, in order, the same grades
    assert reports(out) == reports(local)
    # the worker whose lesson differs graded nothing, and said why in one sentence naming it
    refused = [line for line in stderr.splitlines() if "refuses" in line]
    assert len(refused) == 1, stderr
    assert cluster.workers["patched"][1] in refused[0] and "suite hash" in refused[0]
    assert "Traceback" not in stderr
    # resumed: a second run grades only what changed
    again = batch(klass, out, "--cluster", cluster.address)
    assert again.returncode == 0, again.stderr
    assert f"0 to grade, {SIZE} unchanged" in again.stderr
    shutil.copy(TOY.solution, klass / "carl" / TOY.filename)
    try:
        changed = batch(klass, out, "--cluster", cluster.address)
    finally:
        shutil.copy(TOY.stubs, klass / "carl" / TOY.filename)
    assert changed.returncode == 0, changed.stderr
    assert f"1 to grade, {SIZE - 1} unchanged" in changed.stderr
    carl = {row["student"]: row for row in read_csv(out)}["carl"]
    assert carl["score"] == carl["max_score"]


def test_an_embedded_local_cluster_grades_the_same(place, tmp_path):
    klass, local, _, _ = place
    pair = tmp_path / "pair"
    for student in ("ada", "eve"):
        shutil.copytree(klass / student, pair / student)
    out = tmp_path / "gradebook.csv"
    done = batch(pair, out, "--cluster", "local:2")
    assert done.returncode == 0, done.stderr
    assert read_csv(out) == [row for row in read_csv(local) if row["student"] in ("ada", "eve")]


def test_a_cluster_address_that_is_none_is_said_in_words(tmp_path):
    klass = tmp_path / "class"
    klass.mkdir()
    done = batch(klass, tmp_path / "g.csv", "--cluster", "udp://somewhere")
    assert done.returncode == 2
    assert "no cluster address" in done.stderr and "Traceback" not in done.stderr


def test_without_dask_the_cluster_option_says_what_to_install(tmp_path):
    klass = tmp_path / "class"
    (klass / "ada").mkdir(parents=True)
    shutil.copy(TOY.solution, klass / "ada" / TOY.filename)
    code = (
        "import sys; sys.modules['dask'] = sys.modules['distributed'] = None; "
        "from grader.cli import main; "
        f"sys.exit(main(['batch', *{list(ON_TOY)!r}, {str(klass)!r}, '--out', "
        f"{str(tmp_path / 'g.csv')!r}, '--cluster', 'local:1']))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "pip install -e '.[cluster]'" in done.stderr
    assert not (tmp_path / "g.csv").exists()


def test_the_service_grades_its_queue_on_the_cluster(place, tmp_path):
    """``serve --cluster``: what students hand in is graded on the cluster's workers (the one
    whose lesson differs refused, in words), with the reports ``grade --public`` gives here."""
    from .test_service import Server, _roster

    _, _, _, cluster = place
    server = Server(  # the later --course and --lesson are those served
        tmp_path / "data", _roster(tmp_path / "roster.csv", ["ada"]), "--cluster", cluster.address, *ON_TOY
    )
    try:
        token = server.tokens()["ada"]
        served = {}
        for file in (TOY.solution, TOY_BUGGY):
            status, body, _ = server.upload(token, file.read_bytes())
            assert status == 202, body
            served[file] = server.report(token, body["id"])
    finally:
        server.stop()
    log = server.log.read_text(encoding="utf-8", errors="replace")
    assert f"grading on the cluster at {cluster.address}" in log, log[-3000:]
    assert "worker" in log and "refuses" in log and "differs" in log, log[-3000:]
    assert served[TOY.solution]["score"] == served[TOY.solution]["max_score"]
    local = python("grade", "--public", "--format", "json", *ON_TOY, str(TOY_BUGGY))
    assert local.returncode == 0, local.stderr[-2000:]
    here = json.loads(local.stdout)
    assert (served[TOY_BUGGY]["score"], served[TOY_BUGGY]["exercises"]) == (here["score"], here["exercises"])
    assert [t["feedback"] for t in served[TOY_BUGGY]["tests"]] == [t["feedback"] for t in here["tests"]]


def test_a_cluster_batch_stopped_with_ctrl_c_resumes_and_writes_the_lms_layout(place, tmp_path):
    """Interrupts, resume, an LMS layout and the class report hold on a cluster as in a local
    batch (the toy lesson: the batch's workings, not a lesson's, are tested)."""
    _, _, _, cluster = place
    klass = tmp_path / "class"
    size = 6
    for i in range(size):
        (klass / f"s{i}").mkdir(parents=True)
        shutil.copy(TOY.solution if i % 2 else TOY_BUGGY, klass / f"s{i}" / "toy.py")
    out = tmp_path / "grades" / "moodle.csv"
    command = [
        *TOY_BATCH,
        str(klass),
        "--out",
        str(out),
        "--csv-format",
        "moodle",
        "--cluster",
        cluster.address,
    ]
    proc = from_a_terminal(command, cwd=tmp_path)
    database = out.with_suffix(".sqlite")
    try:
        while graded_count(database) < 1 and proc.poll() is None:  # a count, however long it takes
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=net(size))
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "Traceback" not in err, err[-3000:]
    kept = graded_count(database)
    assert 1 <= kept < size, kept
    again = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=net(size))
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"{size - kept} to grade, {kept} unchanged" in again.stderr
    with out.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["Username", "toy"]
    scores = dict(rows[1:])
    assert sorted(scores) == [f"s{i}" for i in range(size)]
    top = max(int(score) for score in scores.values())
    assert {s for s, score in scores.items() if int(score) == top} == {f"s{i}" for i in range(size) if i % 2}
    assert out.with_name("moodle_class_report.html").is_file()
