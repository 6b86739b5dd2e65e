"""The grader's speed against the cost of merely starting Python, side by side in one run.

    python benchmarks/speed.py [--repeat 5] [--size 30] [--rounds 1] [--no-nbgrader] [--json]
                               [--baseline DIR]

Everything is measured in this one run, interleaved, so that whatever else the machine does hits
every figure alike; each figure is a median, and each is also given as a ratio to the *import
floor*, ``python -c "import numpy, hypothesis, pytest"`` measured in the same rounds:

* ``check`` (in the checker's process) and ``grade --format json`` (sandboxed) on the first
  lesson's reference, its stub (the release's untouched ``exercises/attention.py``) and the
  gallery's typical-mistakes file: wall time and processor time (user + system of the command and
  every process it started, its sandbox included, counted by a control group: see
  ``benchmarks/processor.py``), each command a fresh process;
* ``batch`` of a class of ``--size`` students (a third each: the reference, the typical mistakes,
  the stub; every file made unique by a comment), into a fresh gradebook each round, with the
  batch's own default jobs: wall time per submission and submissions per minute;
* ``check`` and ``grade`` of the reference where the lesson ships its examples (a copy of the
  course after ``grader examples``), and ``grade`` with no store of examples on the machine, with
  and without them: a first run on a fresh machine (a Gradescope container, a CI runner);
* nbgrader's ``autograde`` of the same class as notebooks (the release's notebook filled with the
  same code), against ``batch`` of the code nbgrader's notebooks hold; both totals compared.

The targets of issue #16 (as ratios to the floor) are printed beside the figures.

``--baseline DIR`` (another checkout of the grader, e.g. ``git worktree add DIR main``) also
times every single command and the batch with DIR's code, each right after this code's in the
same rounds, and prints both side by side with their ratio: a change measured against the code
before it under the very same load.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import csv
import importlib.util
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.processor import Clock  # noqa: E402
from tests.support import ATTENTION  # noqa: E402

#: Times every command of the run (see benchmarks/processor.py); closed as the run ends.
CLOCK = Clock()

TYPICAL = ATTENTION.gallery / "typical-mistakes" / ATTENTION.filename
STUB = ATTENTION.stubs
FILES = {"reference": ATTENTION.solution, "stub": STUB, "typical": TYPICAL}
FLOOR = "import floor"
#: name -> argv after ``python``: the commands timed one after another in each round.
COMMANDS: dict[str, list[str]] = {FLOOR: ["-c", "import numpy, hypothesis, pytest"]}
for _kind, _path in FILES.items():
    COMMANDS[f"check {_kind}"] = ["-m", "grader", "check", str(_path), "--lesson", ATTENTION.name]
for _kind, _path in FILES.items():
    COMMANDS[f"grade {_kind}"] = [
        "-m",
        "grader",
        "grade",
        str(_path),
        "--format",
        "json",
        "--lesson",
        ATTENTION.name,
    ]
#: The same reference graded where its examples ship with the lesson (``grader examples`` run in
#: a copy of the course, :mod:`grader.engine.shipped`), and, for ``grade``, with no store of
#: examples on the machine (a Gradescope container, a CI runner): figures whose argv names the
#: copy (filled in by :func:`shipped_course`) and whose environment turns the store off.
SHIPPED_COPY = "@SHIPPED@"
NO_STORE = {"GRADER_REPLAY_STORE": "off"}
COMMANDS["check reference, shipped"] = [
    *COMMANDS["check reference"][:-2],
    "--course",
    SHIPPED_COPY,
    "--lesson",
    ATTENTION.name,
]
COMMANDS["grade ref, no store"] = COMMANDS["grade reference"]
COMMANDS["grade ref, shipped"] = [*COMMANDS["grade reference"], "--course", SHIPPED_COPY]
EXTRA_ENV = {"grade ref, no store": NO_STORE, "grade ref, shipped": NO_STORE}
#: Issue #16's targets: (figure, bound as a ratio to the floor's same figure).
TARGETS = {
    ("check reference", "cpu"): 1.5,
    ("grade reference", "wall"): 2.5,
    ("batch per submission", "wall"): 0.6,
}


@dataclass(frozen=True)
class Timed:
    wall: float  # seconds
    cpu: float  # seconds of user + system time of the command and every process it started


#: nbgrader runs ``alembic`` by name: this Python's own scripts come first on the PATH.
TOOLS = {
    **os.environ,
    "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
}


def timed(argv: list[str], cwd: Path = ROOT, env: dict | None = None, check: bool = False) -> Timed:
    """Run ``argv`` to its end; its wall and processor time."""
    env = TOOLS if env is None else env
    done = CLOCK.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL)
    if check and done.returncode != 0:
        sys.exit(f"{' '.join(str(a) for a in argv[:5])} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return Timed(done.wall, done.cpu)


def compiled(tree: Path) -> None:
    """Write the bytecode of ``tree``'s grader, checks and references now. The timed commands run
    with ``PYTHONDONTWRITEBYTECODE`` (nothing written while measuring), and so does every command
    on a machine whose environment sets it: without this, each would compile the grader again
    (a tenth of a second), and a checkout whose bytecode the test suite happened to write would be
    timed against one without."""
    for folder in ("grader", "tests/checks", "solutions"):
        if (tree / folder).is_dir():
            compileall.compile_dir(tree / folder, quiet=2, workers=1)


def shipped_course(tmp: Path) -> Path:
    """A copy of the course's first lesson with its examples written beside its checks."""
    copy = tmp / "shipped-course"
    for name in ("tests/__init__.py", "tests/checks/__init__.py", "pyproject.toml"):
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        (copy / name).write_bytes((ROOT / name).read_bytes())
    for folder in (ATTENTION.checks, ATTENTION.solution.parent, ATTENTION.stubs.parent):
        shutil.copytree(folder, copy / folder.relative_to(ROOT), ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run(
        [sys.executable, "-m", "grader", "examples", "--course", str(copy), "--lesson", ATTENTION.name],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        sys.exit(f"grader examples failed: {done.stderr}")
    compiled(copy)
    return copy


def median(values: list[Timed]) -> Timed:
    return Timed(statistics.median(t.wall for t in values), statistics.median(t.cpu for t in values))


# ----------------------------------------------------------------------------- the class


def plan(size: int) -> list[tuple[str, str]]:
    """(student id, kind) for a class of ``size``: reference, typical mistakes and stub in turn."""
    kinds = list(FILES)
    return [(f"{kinds[i % 3]}-{i:03d}", kinds[i % 3]) for i in range(size)]


def build_class(folder: Path, size: int) -> Path:
    """One folder per student holding the lesson's file, each made unique by a comment."""
    for student, kind in plan(size):
        dest = folder / student / ATTENTION.filename
        dest.parent.mkdir(parents=True)
        dest.write_text(FILES[kind].read_text(encoding="utf-8") + f"\n# {student}\n", encoding="utf-8")
    return folder


def batch(klass: Path, out: Path, cwd: Path = ROOT) -> tuple[Timed, dict[str, float]]:
    """``grader batch`` (the grader of ``cwd``) into a fresh gradebook: its time and each
    student's total."""
    out.parent.mkdir(parents=True)
    took = timed(
        [sys.executable, "-m", "grader", "batch", str(klass), "--out", str(out), "--lesson", ATTENTION.name],
        cwd=cwd,
        check=True,
    )
    with out.open(newline="", encoding="utf-8") as f:
        return took, {row["student"]: float(row["score"] or "nan") for row in csv.DictReader(f)}


# ----------------------------------------------------------------------------- nbgrader


def build_course(tmp: Path, size: int) -> tuple[Path, Path]:
    """(nbgrader course with the class submitted, folder of the code its notebooks hold)."""
    from grader.commands import nbgrader_course
    from grader.formats.notebook import write_notebook
    from tests.test_nbgrader import compose_notebook

    course, klass = tmp / "course", tmp / "nbclass"
    with contextlib.redirect_stdout(io.StringIO()):  # its "wrote ..., next: ..." lines
        written = nbgrader_course.main(lessons=(ATTENTION,), out_dir=course, assignment=ATTENTION.name)
    if written != 0:
        sys.exit("could not write the nbgrader course")
    timed([sys.executable, "-m", "nbgrader", "generate_assignment", ATTENTION.name], cwd=course, check=True)
    release = json.loads((course / "release" / ATTENTION.name / f"{ATTENTION.name}.ipynb").read_text("utf-8"))
    for student, kind in plan(size):
        notebook = {
            "reference": lambda: compose_notebook(release, None),
            "typical": lambda: compose_notebook(release, TYPICAL),
            "stub": lambda: release,
        }[kind]()
        write_notebook(notebook, course / "submitted" / student / ATTENTION.name / f"{ATTENTION.name}.ipynb")
    with contextlib.redirect_stdout(io.StringIO()):
        collected = nbgrader_course.collect(
            lesson=ATTENTION, course_dir=course, out_dir=klass, assignment=ATTENTION.name, code=True
        )
    if collected != 0:
        sys.exit("could not extract the notebooks' code")
    return course, klass


def autograde(course: Path, index: int) -> tuple[Timed, dict[str, float]]:
    command = [sys.executable, "-m", "nbgrader", "autograde", ATTENTION.name]
    took = timed(command + (["--force"] if index else []), cwd=course, check=True)
    out = course / f"grades{index}.csv"
    timed([sys.executable, "-m", "nbgrader", "export", "--to", str(out)], cwd=course, check=True)
    with out.open(newline="") as f:
        return took, {row["student_id"]: float(row["score"]) for row in csv.DictReader(f)}


# ----------------------------------------------------------------------------- the run


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=5, help="rounds of the single commands (default 5)")
    parser.add_argument("--size", type=int, default=30, help="students in the class (default 30)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of the class-sized runs (default 1)")
    parser.add_argument("--no-nbgrader", action="store_true", help="leave nbgrader's autograde out")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON as well")
    parser.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="another checkout of the grader, timed beside this one in the same rounds",
    )
    args = parser.parse_args()
    base = args.baseline.resolve() if args.baseline is not None else None
    if base is not None and not (base / "grader" / "__main__.py").is_file():
        sys.exit(f"{base} holds no grader (grader/__main__.py)")
    nbgrader = not args.no_nbgrader and importlib.util.find_spec("nbgrader") is not None
    env = {**TOOLS, "PYTHONDONTWRITEBYTECODE": "1"}

    for tree in (ROOT, base) if base is not None else (ROOT,):
        compiled(tree)
    runs: dict[str, list[Timed]] = {name: [] for name in COMMANDS}
    base_runs: dict[str, list[Timed]] = {name: [] for name in COMMANDS if name != FLOOR}
    tmp_all = tempfile.TemporaryDirectory(prefix="bench_speed_")
    copy = shipped_course(Path(tmp_all.name))
    commands = {
        name: [str(copy) if a == SHIPPED_COPY else a for a in argv] for name, argv in COMMANDS.items()
    }
    envs = {name: {**env, **EXTRA_ENV.get(name, {})} for name in COMMANDS}
    for name, argv in commands.items():  # a warm-up each: file cache, the sandbox's first start
        timed([sys.executable, *argv], env=envs[name])
        if base is not None:
            timed([sys.executable, *argv], cwd=base, env=envs[name])
    floor_batch: list[Timed] = []
    batch_runs: list[Timed] = []
    base_batch_runs: list[Timed] = []
    nb_runs: list[Timed] = []
    nb_batch_runs: list[Timed] = []
    totals_equal = None
    with tempfile.TemporaryDirectory(prefix="bench_speed_") as tmp:
        tmp = Path(tmp)
        klass = build_class(tmp / "class", args.size)
        course, nbclass = build_course(tmp, args.size) if nbgrader else (None, None)
        for i in range(max(args.repeat, args.rounds)):
            if i < args.repeat:
                for name, argv in commands.items():
                    runs[name].append(timed([sys.executable, *argv], env=envs[name]))
                    if base is not None and name in base_runs:
                        base_runs[name].append(timed([sys.executable, *argv], cwd=base, env=envs[name]))
            if i < args.rounds:
                floor_batch.append(timed([sys.executable, *COMMANDS[FLOOR]], env=env))
                took, scores = batch(klass, tmp / f"batch{i}" / "gradebook.csv")
                batch_runs.append(took)
                if base is not None:
                    took, base_scores = batch(klass, tmp / f"basebatch{i}" / "gradebook.csv", cwd=base)
                    base_batch_runs.append(took)
                    if base_scores != scores:
                        print(f"batch totals differ from the baseline's: {scores} != {base_scores}")
                if nbgrader:
                    took, nb_scores = autograde(course, i)
                    nb_runs.append(took)
                    took, ours = batch(nbclass, tmp / f"nbbatch{i}" / "gradebook.csv")
                    nb_batch_runs.append(took)
                    totals_equal = sorted(s for s in nb_scores if nb_scores[s] != ours.get(s))

    medians = {name: median(values) for name, values in runs.items()}
    floor = medians[FLOOR]
    figures: dict[str, dict] = {}
    print(f"({CLOCK.describe()})")
    print(f"Single commands, each a fresh process: medians of {args.repeat} interleaved rounds")
    print(f"  {'':<26}{'wall':>9}{'x floor':>9}{'cpu':>9}{'x floor':>9}")
    for name, m in medians.items():
        figures[name] = {
            "wall": m.wall,
            "cpu": m.cpu,
            "wall_x_floor": m.wall / floor.wall,
            "cpu_x_floor": m.cpu / floor.cpu,
        }
        print(f"  {name:<26}{m.wall:8.2f}s{m.wall / floor.wall:8.2f}x{m.cpu:8.2f}s{m.cpu / floor.cpu:8.2f}x")
    whole = median(batch_runs)
    per = Timed(whole.wall / args.size, whole.cpu / args.size)
    floor_b = median(floor_batch)
    figures["batch per submission"] = {
        "wall": per.wall,
        "cpu": per.cpu,
        "wall_x_floor": per.wall / floor.wall,
        "cpu_x_floor": per.cpu / floor.cpu,
        "per_minute": 60 / per.wall,
    }
    print(f"\nbatch of {args.size} (reference, typical mistakes, stub in thirds), median of {args.rounds}:")
    print(
        f"  {whole.wall:7.1f} s wall, {whole.cpu:7.1f} s cpu; per submission {per.wall:.2f} s wall "
        f"(x{per.wall / floor.wall:.2f} floor), {per.cpu:.2f} s cpu; {60 / per.wall:.0f} submissions a minute"
        f"  [floor beside it: {floor_b.wall:.2f} s]"
    )
    if base is not None:
        print(f"\nBeside the baseline ({base}), timed in the same rounds (this / baseline):")
        print(f"  {'':<26}{'wall':>9}{'baseline':>10}{'ratio':>8}{'cpu':>9}{'baseline':>10}{'ratio':>8}")
        pairs = {name: (medians[name], median(values)) for name, values in base_runs.items()}
        if base_batch_runs:
            theirs = median(base_batch_runs)
            pairs["batch, whole class"] = (whole, theirs)
        for name, (m, b) in pairs.items():
            figures.setdefault("baseline", {})[name] = {"wall": b.wall, "cpu": b.cpu}
            print(
                f"  {name:<26}{m.wall:8.2f}s{b.wall:9.2f}s{m.wall / b.wall:7.2f}x"
                f"{m.cpu:8.2f}s{b.cpu:9.2f}s{m.cpu / b.cpu:7.2f}x"
            )
    if nbgrader:
        nb, ours = median(nb_runs), median(nb_batch_runs)
        figures["nbgrader"] = {
            "autograde_wall": nb.wall,
            "batch_wall": ours.wall,
            "ratio": nb.wall / ours.wall,
            "totals_differ": totals_equal,
        }
        print(f"\nnbgrader autograde of the same {args.size} notebooks against batch of their code:")
        print(
            f"  autograde {nb.wall:7.1f} s ({nb.wall / args.size:.2f} s each)   batch {ours.wall:7.1f} s "
            f"({ours.wall / args.size:.2f} s each)   x{nb.wall / ours.wall:.1f} faster"
        )
        print(f"  totals equal: {'yes' if not totals_equal else 'NO: ' + ', '.join(totals_equal)}")
    print("\nTargets (issue #16), as ratios to the import floor:")
    for (name, kind), bound in TARGETS.items():
        value = figures[name][f"{kind}_x_floor"]
        print(f"  {name} {kind}: x{value:.2f} (target <= x{bound})  {'met' if value <= bound else 'NOT met'}")
    if nbgrader:
        ratio = figures["nbgrader"]["ratio"]
        print(
            f"  nbgrader autograde / batch: x{ratio:.1f} (target >= x10)  {'met' if ratio >= 10 else 'NOT met'}"
        )
    if args.json:
        print(json.dumps(figures, indent=2))
    tmp_all.cleanup()
    return 1 if totals_equal else 0


if __name__ == "__main__":
    with CLOCK:
        sys.exit(main())
