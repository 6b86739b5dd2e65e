"""nbgrader's autograde against ``grader batch`` on the same class, side by side in one run.

    python benchmarks/bench_nbgrader.py [--size 24] [--repeat 1]

Needs nbgrader (``pip install -e '.[nbgrader]'``). Builds a course with
``grader.nbgrader_course``, generates the student release, then a class of
``--size`` notebooks: correct ones (the reference and the catalog's correct
alternatives), buggy ones (tests/catalog/bugs) and untouched releases, each
composed as reference + override as tests.support.compose does for files
(see tests/test_nbgrader.compose_notebook). The same code, extracted with
``grader.notebook.notebook_source``, goes to one folder per student as
``attention.py`` (``grader.nbgrader_course.collect(..., code=True)``). Then, interleaved when repeated:

* ``nbgrader autograde`` of every notebook (one kernel per notebook, the checks
  run by the test cells in the student's kernel), then ``nbgrader export``;
* ``python -m grader batch`` over the folders (its defaults: one job per core,
  the best sandbox available), into a fresh gradebook.

Prints both wall times (medians), their ratio, and whether every student's
total is the same in nbgrader's export and in the batch gradebook.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.commands import nbgrader_course  # noqa: E402
from grader.formats.notebook import write_notebook  # noqa: E402
from tests.support import ATTENTION  # noqa: E402
from tests.test_nbgrader import compose_notebook  # noqa: E402

CATALOG = ATTENTION.catalog
ASSIGNMENT = "attention"


def run(command: list[str], cwd: Path) -> float:
    """Wall time of one command; stops the benchmark with its stderr if it fails."""
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(command[:4])} failed:\n{done.stderr[-3000:]}")
    return elapsed


def plan(size: int) -> list[tuple[str, Path | None]]:
    """(student id, override or None) for a class of ``size``: 1/3 correct, 1/8 untouched, the rest buggy."""
    correct = [None, *sorted((CATALOG / "correct").glob("*.py"))]
    bugs = sorted((CATALOG / "bugs").glob("*.py"))
    n_correct, n_untouched = size // 3, max(1, size // 8)
    n_buggy = size - n_correct - n_untouched
    students = []
    for i in range(n_correct):
        override = correct[i % len(correct)]
        students.append((f"correct-{i:02d}-{override.stem if override else 'reference'}", override))
    for i in range(n_buggy):
        students.append((f"buggy-{i:02d}-{bugs[i % len(bugs)].stem}", bugs[i % len(bugs)]))
    students += [(f"untouched-{i:02d}", "untouched") for i in range(n_untouched)]
    return students


def build(tmp: Path, size: int) -> tuple[Path, Path, list[str]]:
    """(course folder, batch class folder, student ids)."""
    course, klass = tmp / "course", tmp / "class"
    if nbgrader_course.main(lessons=(ATTENTION,), out_dir=course, assignment=ASSIGNMENT) != 0:
        sys.exit("could not write the course")
    run([sys.executable, "-m", "nbgrader", "generate_assignment", ASSIGNMENT], course)
    release = json.loads((course / "release" / ASSIGNMENT / "attention.ipynb").read_text(encoding="utf-8"))
    students = []
    for student, override in plan(size):
        notebook = release if override == "untouched" else compose_notebook(release, override)
        write_notebook(notebook, course / "submitted" / student / ASSIGNMENT / "attention.ipynb")
        students.append(student)
    if (
        nbgrader_course.collect(
            lesson=ATTENTION, course_dir=course, out_dir=klass, assignment=ASSIGNMENT, code=True
        )
        != 0
    ):
        sys.exit("could not extract the notebooks")
    return course, klass, students


def nbgrader_round(course: Path, index: int) -> tuple[float, dict[str, float]]:
    """Autograde every submission (again, with --force, after the first round); export."""
    command = [sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT]
    if index:
        command.append("--force")
    elapsed = run(command, course)
    out = course / f"grades{index}.csv"
    run([sys.executable, "-m", "nbgrader", "export", "--to", str(out)], course)
    with out.open(newline="") as f:
        return elapsed, {row["student_id"]: float(row["score"]) for row in csv.DictReader(f)}


def batch_round(klass: Path, tmp: Path, index: int) -> tuple[float, dict[str, float], Path]:
    """Grade the whole class into a fresh gradebook (a reused one would skip unchanged files)."""
    out = tmp / f"batch{index}" / "gradebook.csv"
    out.parent.mkdir()
    elapsed = run(
        [sys.executable, "-m", "grader", "batch", "--lesson", "attention", str(klass), "--out", str(out)],
        ROOT,
    )
    with out.open(newline="") as f:
        scores = {row["student"]: float(row["score"]) for row in csv.DictReader(f)}
    return elapsed, scores, out.parent / "gradebook_reports"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--size", type=int, default=24, help="notebooks in the class (default 24, at least 20)"
    )
    parser.add_argument("--repeat", type=int, default=1, help="interleaved rounds of both (default 1)")
    args = parser.parse_args()
    if importlib.util.find_spec("nbgrader") is None:
        sys.exit("nbgrader is not installed: pip install -e '.[nbgrader]'")
    with tempfile.TemporaryDirectory(prefix="bench_nbgrader_") as tmp:
        tmp = Path(tmp)
        course, klass, students = build(tmp, args.size)
        nb_times, batch_times = [], []
        nb_scores: dict[str, float] = {}
        batch_scores: dict[str, float] = {}
        for i in range(args.repeat):
            elapsed, nb_scores = nbgrader_round(course, i)
            nb_times.append(elapsed)
            elapsed, batch_scores, reports = batch_round(klass, tmp, i)
            batch_times.append(elapsed)
        nb, bt = statistics.median(nb_times), statistics.median(batch_times)
        differ = [s for s in students if nb_scores.get(s) != batch_scores.get(s)]
        kinds = {k: sum(s.startswith(k) for s in students) for k in ("correct", "buggy", "untouched")}
        print(
            f"{len(students)} notebooks ({kinds['correct']} correct, {kinds['buggy']} buggy, "
            f"{kinds['untouched']} untouched), median of {args.repeat} round(s):"
        )
        print(f"  nbgrader autograde          {nb:7.1f} s   {nb / len(students):5.2f} s per notebook")
        print(f"  grader batch (same code)    {bt:7.1f} s   {bt / len(students):5.2f} s per notebook")
        print(f"  ratio nbgrader / batch      x{nb / bt:.2f}")
        if differ:
            print(f"  totals equal: NO, {len(differ)} differ:")
            for s in differ:
                print(f"    {s}: nbgrader {nb_scores.get(s)}, batch {batch_scores.get(s)}")
                report = reports / f"{s}.txt"
                if report.exists():  # why batch disagrees, in its own words
                    head = report.read_text(encoding="utf-8").splitlines()[:8]
                    print("\n".join(f"      | {line}" for line in head))
        else:
            print(f"  totals equal: yes, for all {len(students)} students")
        return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
