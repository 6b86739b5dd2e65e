"""Hostile and odd submissions (tests/adversarial/) against the sandboxed grader.

Each case folder holds ``override.py`` (appended to the reference solution, see
:func:`tests.support.compose`) or a whole ``attention.py`` (or a whole file of another lesson of
the course, ``kv_cache.py``: the case is graded as that lesson), and ``case.json``:

``kind``
    ``tampering``: buggy functions plus code that tries to make the grader believe
    they are right; the score must not exceed that of ``twin`` (the same functions
    without the tampering: a folder under ``_twins/``, or ``reference``).
    ``robustness``: correct functions (the reference's) amid noise; full marks,
    unless ``expect`` says otherwise.
``why``
    one sentence: what the submission tries and what must happen.
``expect`` (optional)
    ``score`` (exact total), ``problem_contains``, ``lost`` (exercises that must
    lose points; every exercise not listed in ``lost`` or ``may_lose`` keeps full
    marks), ``may_lose``, ``feedback_contains`` ({exercise: fragment}, case-blind),
    ``never_shown`` (fragments that no visible check's feedback, no picture, diagnosis or
    problem of the report may hold: what only hidden checks send), ``diagnosis``
    ({exercise: the code of the likely mistake the report must name first})
    and ``max_cpu_seconds`` (how many more seconds of processor time the whole ``grade``
    command, its sandbox included, may use than grading the reference: a bound on work,
    such as a loop the grader must not keep up, that the machine's load does not move; a
    wait the grader must not sit through is pinned by the feedback that stopped it).
``exclusive`` (optional)
    graded alone, after the others: the case exhausts a resource the sandboxes of
    one machine share.
``neighbour`` (optional)
    an override in the case's folder: while the case loads, the submission it
    makes is graded by a second grader and must get full marks.

Overrides may use placeholders that the test fills in: ``{{MARKER}}`` (a string
unique to the case and this run, for file and process names), ``{{ROOT}}``,
``{{HOME}}``, ``{{HOST_TMP}}`` (a host folder of this test), ``{{SUBMISSION_DIR}}``,
``{{VICTIM}}``/``{{VICTIM_DIR}}`` (a host file and folder the test creates) and
``{{PORT}}`` (where the test listens on the host's loopback).

Every case is graded by ``python -m grader grade PATH --format json`` with a
``TMPDIR`` of its own, two at a time (plus one lane for the cases that mostly
sleep). Whatever the kind, the command must exit 0 with exactly one JSON document
on stdout and no traceback anywhere; isolation is ``namespaces``; no feedback
blames the grader; nothing is left in its TMPDIR; no process mentioning the case
(marker or TMPDIR, in argv or environment) survives; no file named with the
marker appears on the host; the watched host files are unchanged; no connection
reaches the listener; the grader's own peak memory stays under GRADER_RSS_LIMIT.

Weaknesses of the grader that a case reveals are kept, marked xfail(strict=True)
in KNOWN_WEAKNESSES with a diagnosis.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from grader.core.lesson import Course
from grader.sandbox.wardens import best_level

from .support import ATTENTION, PROCESSES, ROOT, compose

ADVERSARIAL = Path(__file__).parent / "adversarial"
CASES = sorted(p.name for p in ADVERSARIAL.iterdir() if (p / "case.json").is_file())
TWINS = sorted(f"_twins/{p.name}" for p in (ADVERSARIAL / "_twins").iterdir() if p.is_dir())

#: The grader process itself (not its workers) may not grow past this.
GRADER_RSS_LIMIT = 512 << 20
#: Seconds of processor time one ``grade`` command (with its sandbox) may use beyond grading the
#: reference (PACE), unless the case says otherwise. Processor time, not the wall clock: a
#: loaded machine makes each command wait longer but work no more.
DEFAULT_MAX_CPU_SECONDS = 45.0
#: The reference solution, graded first in the lane of the sleepers: what a submission costs now.
PACE = "_pace"
#: A grade command still running after this long is killed (and then fails its case): only a
#: net under a grader that hangs for good, far above what any case takes at load 10 on 2 cores.
#: No assertion compares times.
HUNG = 1800.0
#: Seconds each case takes here, roughly: the slow ones are started first.
ESTIMATE = {
    "enormous_return": 10,
    "wire_header_not_object": 5,
    "loop_ignoring_signals": 5,
    "reference_helper_bomb": 5,
    "os_exit_in_function": 4,
}
#: Cases that mostly sleep: graded in a lane of their own, beside the busy ones.
WAITING = ("callback_reply_never_read", "reply_pipe_closed_at_import")
GRADER_BUG = "probably a bug in the grader"

KNOWN_WEAKNESSES: dict[str, str] = {}


# ----------------------------------------------------------------------------- host side


def case_of(name: str) -> dict:
    return json.loads((ADVERSARIAL / name / "case.json").read_text())


#: The lessons a case may be a whole file of: every lesson of the course.
LESSONS = Course.at(ROOT).lessons


def lesson_of(name: str):
    """The lesson a case (or twin) is a file of: the one whose whole file its folder holds, else
    the first lesson."""
    return next((lesson for lesson in LESSONS if (ADVERSARIAL / name / lesson.filename).is_file()), ATTENTION)


def _fingerprint(path: Path):
    """What a watched host path looks like: absent, a folder's names, or a file's bytes and mode."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    if path.is_dir() and not path.is_symlink():
        return ("dir", info.st_mode, tuple(sorted(os.listdir(path))))
    digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
    return ("file", info.st_mode, info.st_size, info.st_mtime_ns, digest)


def _process_texts():
    """(pid, argv and environment as bytes) of every process we may read."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        text = b""
        for part in ("cmdline", "environ"):
            try:
                with open(f"/proc/{entry.name}/{part}", "rb") as f:
                    text += f.read() + b"\0"
            except OSError:
                pass
        yield int(entry.name), text


def processes_mentioning(*needles: str) -> list[tuple[int, str]]:
    wanted = [n.encode() for n in needles]
    me = os.getpid()
    found = []
    for pid, text in _process_texts():
        if pid != me and any(w in text for w in wanted):
            found.append((pid, text.split(b"\0")[0].decode(errors="replace")[:120]))
    return found


def _vm_hwm(pid: int) -> int:
    """Peak resident memory of ``pid`` in bytes (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _tree_cpu(pid: int, seen: dict) -> None:
    """Note in ``seen`` ((pid, start) -> seconds) the processor time of ``pid`` and of every
    process below it, each its own (not its children's), as far as /proc shows them now."""
    todo, ticks = [pid], os.sysconf("SC_CLK_TCK")
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                todo.extend(int(n) for n in f.read().split())
        except (OSError, ValueError):
            continue
        key = (pid, int(fields[19]))
        seen[key] = max(seen.get(key, 0.0), (int(fields[11]) + int(fields[12])) / ticks)


class Listener:
    """TCP and UDP on the host's loopback (IPv4, and IPv6 when available), recording all that arrives."""

    def __init__(self):
        self.events: list[tuple[str, str, bytes]] = []
        self.sockets: list[tuple[str, socket.socket]] = []
        for _ in range(20):
            tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            tcp.bind(("127.0.0.1", 0))
            self.port = tcp.getsockname()[1]
            udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                udp.bind(("127.0.0.1", self.port))
            except OSError:
                tcp.close()
                udp.close()
                continue
            tcp.listen(16)
            self.sockets += [("tcp", tcp), ("udp", udp)]
            break
        for kind, type_ in (("tcp6", socket.SOCK_STREAM), ("udp6", socket.SOCK_DGRAM)):
            try:
                s = socket.socket(socket.AF_INET6, type_)
                s.bind(("::1", self.port))
                if type_ == socket.SOCK_STREAM:
                    s.listen(16)
                self.sockets.append((kind, s))
            except OSError:
                pass
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        kinds = {s: k for k, s in self.sockets}
        while not self.stop.is_set():
            ready, _, _ = select.select(list(kinds), [], [], 0.2)
            for s in ready:
                try:
                    if kinds[s].startswith("tcp"):
                        conn, peer = s.accept()
                        conn.settimeout(0.5)
                        try:
                            data = conn.recv(256)
                        except OSError:
                            data = b""
                        conn.close()
                    else:
                        data, peer = s.recvfrom(256)
                except OSError:
                    continue
                self.events.append((kinds[s], str(peer), data))

    def close(self):
        self.stop.set()
        self.thread.join(timeout=5)
        for _, s in self.sockets:
            s.close()


@dataclass
class Graded:
    """One run of ``grade`` and what the host looked like afterwards."""

    name: str
    returncode: int
    stdout: str
    stderr: str
    cpu: float  # seconds of processor time: the command and every process below it (sampled)
    peak: int  # bytes, the grader process itself
    leftovers: list[str] = field(default_factory=list)
    survivors: list = field(default_factory=list)
    marker_files: list[str] = field(default_factory=list)
    host_changes: list[str] = field(default_factory=list)
    connections: list = field(default_factory=list)

    @property
    def report(self) -> dict:
        return json.loads(self.stdout)


class Bench:
    """The host-side set-up shared by all cases: folders, victims, the listener, the runs."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.token = f"{os.getpid()}x{time.time_ns() % 10**9}"
        (tmp / "built").mkdir()
        (tmp / "runs").mkdir()
        self.victim_dir = tmp / "victims"
        self.victim_dir.mkdir()
        self.victim = self.victim_dir / "victim.txt"
        self.victim.write_text("a host file no submission may touch\n")
        self.victim.chmod(0o644)
        self.listener = Listener()
        self.built: dict[str, Path] = {}
        self.watched = [
            ROOT / "README.md",
            ROOT / "results.json",
            ROOT / "gradebook.csv",
            self.victim,
            self.victim_dir,
            Path("/autograder"),
            Path("/results.json"),
            Path("/sandbox"),
            Path("/tmp/results.json"),
            Path.home() / "results.json",
            Path.home() / ".bashrc",
        ]

    def marker(self, name: str) -> str:
        return f"advmark-{name.replace('/', '-')}-{self.token}"

    def build(self, name: str, *, override: Path | None = None, whole: Path | None = None) -> Path:
        """dest/NAME.py for a case or twin (or another override, or a ``whole`` file of the first
        lesson), placeholders filled in."""
        source = ADVERSARIAL / name
        dest = self.tmp / "built" / name.replace("/", "-")
        if whole is not None:
            dest.mkdir(parents=True)
            shutil.copyfile(whole, dest / "attention.py")
        elif override is not None or (source / "override.py").is_file():
            compose(override or source / "override.py", dest)
        else:
            dest.mkdir(parents=True)
            lesson = lesson_of(name)
            shutil.copyfile(source / lesson.filename, dest / lesson.filename)
        values = {
            "MARKER": self.marker(name),
            "ROOT": ROOT,
            "HOME": Path.home(),
            "HOST_TMP": self.tmp,
            "SUBMISSION_DIR": dest,
            "VICTIM": self.victim,
            "VICTIM_DIR": self.victim_dir,
            "PORT": self.listener.port,
        }
        file = dest / (ATTENTION.filename if whole is not None else lesson_of(name).filename)
        text = file.read_text(encoding="utf-8")
        for key, value in values.items():
            text = text.replace("{{" + key + "}}", str(value))
        unknown = re.findall(r"\{\{[A-Z_]+\}\}", text)
        assert not unknown, f"{name}: unknown placeholders {unknown}"
        file.write_text(text, encoding="utf-8")
        self.built[name] = dest
        self.watched.append(dest)
        return dest

    def snapshot(self) -> dict:
        return {str(p): _fingerprint(p) for p in self.watched}

    def marker_files(self, marker: str) -> list[str]:
        found = []
        shallow = [Path("/tmp"), ROOT, Path.home(), *self.built.values()]
        deep = [self.tmp, Path("/autograder"), ADVERSARIAL]
        for base in shallow:
            try:
                found += [str(base / n) for n in os.listdir(base) if marker in n]
            except OSError:
                pass
        for base in deep:
            for folder, _, files in os.walk(base):
                found += [os.path.join(folder, n) for n in files if marker in n]
        return sorted(set(found))

    def grade(self, name: str, folder: Path) -> Graded:
        """Run ``grade`` on ``folder`` with a TMPDIR of its own, then inspect the host."""
        tmpdir = self.tmp / "runs" / name.replace("/", "-")
        tmpdir.mkdir()
        out, err = tmpdir.with_suffix(".out"), tmpdir.with_suffix(".err")
        marker = self.marker(name)
        before = self.snapshot()
        start = time.monotonic()
        peak, usage, cpu = 0, None, {}
        with open(out, "wb") as stdout, open(err, "wb") as stderr:
            proc = subprocess.Popen(
                [sys.executable, "-m", "grader", "grade", str(folder), "--format", "json"],
                cwd=ROOT,
                stdout=stdout,
                stderr=stderr,
                stdin=subprocess.DEVNULL,
                env=dict(os.environ, TMPDIR=str(tmpdir)),
            )
            while usage is None:
                peak = max(peak, _vm_hwm(proc.pid))
                _tree_cpu(proc.pid, cpu)
                if time.monotonic() - start > HUNG:
                    proc.kill()  # the grader we started, by its id
                pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    proc.returncode = os.waitstatus_to_exitcode(status)
                    usage = rusage
                else:
                    time.sleep(0.05)
        survivors = processes_mentioning(marker, f"{tmpdir}/", f"TMPDIR={tmpdir}\0")
        for pid, _ in survivors:  # started (indirectly) by this test: do not let them linger
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        after = self.snapshot()
        return Graded(
            name=name,
            returncode=proc.returncode,
            stdout=out.read_text(errors="replace"),
            stderr=err.read_text(errors="replace"),
            # what the command and the processes it waited for used, or, if more, the sum of what
            # each process of its tree was seen to use (a sandbox killed whole is waited for by none)
            cpu=max(usage.ru_utime + usage.ru_stime, sum(cpu.values())),
            peak=peak,
            leftovers=sorted(os.listdir(tmpdir)),
            survivors=survivors,
            marker_files=self.marker_files(marker),
            host_changes=[p for p in before if before[p] != after[p]],
        )

    def grade_with_neighbour(self, name: str) -> tuple[Graded, Graded]:
        """Grade ``name``; once its processes are up, grade its neighbour beside it."""
        marker = self.marker(name)
        neighbour_file = ADVERSARIAL / name / case_of(name)["neighbour"]
        with ThreadPoolExecutor(1) as pool:
            holder = pool.submit(self.grade, name, self.built[name])
            until = time.monotonic() + 8
            while time.monotonic() < until and len(processes_mentioning(marker)) < 200:
                time.sleep(0.1)
            built = self.build(f"{name}/neighbour", override=neighbour_file)
            neighbour = self.grade(f"{name}/neighbour", built)
            return holder.result(), neighbour


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict[str, Graded] | None:
    """Grade every case (and the twins they name), two at a time beside a lane for the sleepers;
    exclusive cases alone afterwards."""
    if best_level() != "namespaces":
        return None
    bench = Bench(tmp_path_factory.mktemp("adversarial"))
    try:
        twins = {case_of(n)["twin"] for n in CASES if case_of(n)["kind"] == "tampering"} - {"reference"}
        shared = [n for n in CASES if not case_of(n).get("exclusive")]
        alone = sorted(
            (n for n in CASES if case_of(n).get("exclusive")), key=lambda n: not case_of(n).get("neighbour")
        )
        for name in [*sorted(twins), *CASES]:
            bench.build(name)
        bench.build(PACE, whole=ATTENTION.solution)
        waiting = [PACE, *(n for n in WAITING if n in shared)]
        busy = sorted([*twins, *(n for n in shared if n not in WAITING)], key=lambda n: -ESTIMATE.get(n, 2))
        results: dict[str, Graded] = {}
        started = time.monotonic()
        with ThreadPoolExecutor(1) as lane, ThreadPoolExecutor(PROCESSES) as pool:
            sleepers = lane.map(lambda n: bench.grade(n, bench.built[n]), waiting)
            for graded in [*pool.map(lambda n: bench.grade(n, bench.built[n]), busy), *sleepers]:
                results[graded.name] = graded
        for name in alone:
            if case_of(name).get("neighbour"):
                holder, neighbour = bench.grade_with_neighbour(name)
                results[holder.name], results[neighbour.name] = holder, neighbour
            else:
                results[name] = bench.grade(name, bench.built[name])
        total = time.monotonic() - started
    finally:
        bench.listener.close()
    for graded in results.values():
        graded.connections = [e for e in bench.listener.events if bench.marker(graded.name).encode() in e[2]]
    results["_listener"] = bench.listener.events
    print(f"\n{'case':38} {'score':>5} {'twin':>5} {'cpu s':>6} {'MB':>6}  status")
    for name in sorted(n for n in results if not n.startswith("_")):
        graded = results[name]
        try:
            score = graded.report["score"]
        except ValueError:
            score = "?"
        case = case_of(name) if name in CASES else {}
        twin = case.get("twin", "")
        try:
            twin_score = 100 if twin == "reference" else results[twin].report["score"] if twin else ""
        except (KeyError, ValueError):
            twin_score = "?"
        status = "xfail" if name in KNOWN_WEAKNESSES else ""
        print(
            f"{name:38} {score:>5} {twin_score!s:>5} {graded.cpu:6.1f} {graded.peak / 2**20:6.0f}  {status}"
        )
    print(f"the reference, graded beside them (pace): {results[PACE].cpu:.1f} s of processor time")
    print(f"all grading: {total:.1f} s")
    return results


def _needs(outcomes):
    if outcomes is None:
        pytest.skip(f"the sandbox here is {best_level()!r}, not 'namespaces'")
    return outcomes


def _summary(report: dict) -> str:
    scores = {n: e["score"] for n, e in report["exercises"].items()}
    failing = sorted({t["feedback"].split("\n")[0][:160] for t in report["tests"] if t["status"] != "passed"})
    return f"{report['score']} {scores} problem={report['problem'][:200]!r} failing={failing[:4]}"


def assert_clean(graded: Graded, max_cpu: float = DEFAULT_MAX_CPU_SECONDS, pace: float = 0.0) -> dict:
    """What every run must satisfy, whatever the submission did; returns the report. ``pace``:
    the processor seconds grading the reference took (see DEFAULT_MAX_CPU_SECONDS)."""
    assert graded.returncode == 0, f"exit {graded.returncode}: {graded.stderr[-2000:]}"
    try:
        report = json.loads(graded.stdout)  # one document and nothing else
    except ValueError as err:
        raise AssertionError(f"stdout is not one JSON document ({err}): {graded.stdout[:500]!r}") from None
    assert isinstance(report, dict) and {"score", "max_score", "exercises", "tests", "problem"} <= set(report)
    assert "Traceback" not in graded.stdout and "Traceback" not in graded.stderr, graded.stderr[-2000:]
    assert report["isolation"] == "namespaces", f"isolation {report['isolation']!r}; {_summary(report)}"
    assert set(report["exercises"]) == set(lesson_of(graded.name.split("/")[0]).exercises)
    blamed = [t["name"] for t in report["tests"] if GRADER_BUG in t["feedback"]]
    assert not blamed and GRADER_BUG not in report["problem"], f"the grader blames itself: {_summary(report)}"
    assert graded.leftovers == [], f"left in its TMPDIR: {graded.leftovers[:5]} ({len(graded.leftovers)})"
    assert graded.survivors == [], f"processes survived grading: {graded.survivors[:5]}"
    assert graded.marker_files == [], f"files appeared on the host: {graded.marker_files}"
    assert graded.host_changes == [], f"host paths changed: {graded.host_changes}"
    assert graded.connections == [], f"reached the host's loopback: {graded.connections}"
    assert graded.peak < GRADER_RSS_LIMIT, f"the grader itself grew to {graded.peak / 2**20:.0f} MiB"
    assert graded.cpu - pace < max_cpu, (
        f"grading used {graded.cpu:.1f} s of processor time, {graded.cpu - pace:.1f} s more than "
        f"the reference (at most {max_cpu:g} more)"
    )
    return report


def _param(name: str):
    if name in KNOWN_WEAKNESSES:
        return pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=KNOWN_WEAKNESSES[name]))
    return name


# ----------------------------------------------------------------------------- the tests


def test_the_catalog_is_well_formed():
    assert len(CASES) >= 15
    for name in CASES:
        case = case_of(name)
        folder = ADVERSARIAL / name
        assert case["kind"] in ("tampering", "robustness"), name
        assert case["why"].strip() and case["why"].count(". ") == 0, f"{name}: 'why' is one sentence"
        wholes = [lesson.filename for lesson in LESSONS if (folder / lesson.filename).is_file()]
        assert (folder / "override.py").is_file() != bool(wholes) and len(wholes) <= 1, name
        source = next(folder.glob("*.py")).read_text()
        assert source.lstrip().startswith("#"), f"{name}: the file opens with a comment saying what it does"
        if case["kind"] == "tampering":
            assert case["twin"] == "reference" or case["twin"] in TWINS, name
        else:
            assert "twin" not in case, name
        unknown = set(case.get("expect", {})) - {
            "score",
            "problem_contains",
            "lost",
            "may_lose",
            "feedback_contains",
            "never_shown",
            "diagnosis",
            "max_cpu_seconds",
        }
        assert not unknown, f"{name}: unknown expectations {unknown}"
        assert set(case) <= {"kind", "twin", "why", "expect", "exclusive", "neighbour"}, name
    for twin in TWINS:
        assert (ADVERSARIAL / twin / "override.py").read_text().lstrip().startswith("#"), twin


def _decorator_names(function: ast.FunctionDef) -> set[str]:
    names = set()
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        names.add(target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", ""))
    return names


def test_no_visible_check_runs_on_fixed_inputs_alone():
    """What students can see of a check's inputs is worth nothing alone: every visible check
    draws its inputs (a fixed example may come first, never alone), so a file that is right only
    on inputs it saw cannot pass one (see the cases lesson_example_special_cased and
    fixed_inputs_special_cased)."""
    fixed = []
    for path in sorted(ATTENTION.checks.glob("test_*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and "graded" in _decorator_names(node):
                if "given" not in _decorator_names(node):
                    fixed.append(f"{path.name}::{node.name}")
    assert not fixed, f"checks on fixed inputs only: {fixed}"


def test_the_pace_is_the_reference_graded_cleanly(outcomes):
    """The time cases are measured against is that of a clean, full-marks grading."""
    report = assert_clean(_needs(outcomes)[PACE])
    assert report["score"] == report["max_score"], _summary(report)


@pytest.mark.parametrize("twin", TWINS)
def test_twin_is_an_honest_bug(outcomes, twin):
    """A twin is graded cleanly and does lose points: otherwise comparing with it proves nothing."""
    graded = _needs(outcomes).get(twin)
    if graded is None:
        pytest.skip("no tampering case names this twin")
    report = assert_clean(graded)
    assert 0 < report["score"] < report["max_score"], _summary(report)


@pytest.mark.parametrize("name", [_param(n) for n in CASES])
def test_case(outcomes, name):
    results = _needs(outcomes)
    case = case_of(name)
    expect = case.get("expect", {})
    graded = results[name]
    report = assert_clean(graded, expect.get("max_cpu_seconds", DEFAULT_MAX_CPU_SECONDS), results[PACE].cpu)
    exercises = report["exercises"]

    if case["kind"] == "tampering":
        assert not report["problem"], (
            f"a tampering case must load for its score to mean anything: {_summary(report)}"
        )
        twin = case["twin"]
        ceiling = 100 if twin == "reference" else assert_clean(results[twin])["score"]
        assert report["score"] <= ceiling, (
            f"tampering scored {report['score']} > twin's {ceiling}: {_summary(report)}"
        )
        return

    if "score" in expect:
        assert report["score"] == expect["score"], _summary(report)
    else:
        for exercise, got in exercises.items():
            if exercise in expect.get("lost", ()):
                assert got["score"] < got["max_score"], f"{exercise} kept its points: {_summary(report)}"
            elif exercise not in expect.get("may_lose", ()):
                assert got["score"] == got["max_score"], f"{exercise} lost points: {_summary(report)}"
    for fragment in expect.get("problem_contains", ()):
        assert fragment in report["problem"], _summary(report)
    for exercise, fragment in expect.get("feedback_contains", {}).items():
        feedback = [t["feedback"].lower() for t in report["tests"] if t["exercise"] == exercise]
        assert any(fragment.lower() in f for f in feedback), (fragment, _summary(report))
    shown = json.dumps(
        {**report, "tests": [t for t in report["tests"] if t["visibility"] != "hidden"]}, ensure_ascii=False
    ).lower()
    for fragment in expect.get("never_shown", ()):
        assert fragment.lower() not in shown, (fragment, _summary(report), report["pictures"])
    for exercise, code in expect.get("diagnosis", {}).items():
        named = [d["code"] for d in exercises[exercise]["diagnoses"]]
        assert named[:1] == [code], (exercise, named, _summary(report))
    if report["problem"]:
        assert report["score"] == 0

    if case.get("neighbour"):
        neighbour = assert_clean(results[f"{name}/neighbour"])
        assert neighbour["score"] == neighbour["max_score"] == 100, f"the neighbour: {_summary(neighbour)}"


def test_nothing_reached_the_listener(outcomes):
    """No case, whatever it sent, got a connection or a datagram through to the host's loopback."""
    events = _needs(outcomes)["_listener"]
    assert events == [], events[:5]
