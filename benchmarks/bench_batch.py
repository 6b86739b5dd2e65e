"""Batch grading speed and the cost of isolation, side by side in one run.

    python benchmarks/bench_batch.py [--size 60] [--repeat 3]

Builds a class of generated submissions (correct ones, realistic bugs from
tests/catalog, hostile ones from tests/scenarios and tests/adversarial), then:

* grades the whole class with ``batch`` as an instructor would (sandboxed,
  two jobs): submissions per minute;
* grades only the correct submissions twice, sandboxed and in-process
  (``--isolation none``): the ratio of the two wall times is what isolation
  costs. Medians of ``--repeat`` runs, interleaved.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support import ATTENTION, compose  # noqa: E402

CATALOG = ATTENTION.catalog
HOSTILE_DIRS = [ROOT / "tests" / "scenarios", ROOT / "tests" / "adversarial"]


def build_class(root: Path, size: int) -> tuple[Path, Path]:
    """(whole class, correct-only class) with ``size`` submissions: 1/3 correct, 1/2 buggy, 1/6 hostile."""
    klass, correct = root / "class", root / "correct"
    alternatives = [ATTENTION.solution, *sorted((CATALOG / "correct").glob("*.py"))]
    bugs = sorted((CATALOG / "bugs").glob("*.py"))
    hostile = [
        d / ("override.py" if (d / "override.py").exists() else "attention.py")
        for base in HOSTILE_DIRS
        if base.is_dir()
        for d in sorted(base.iterdir())
        if d.is_dir()
        and not d.name.startswith("_")
        and ((d / "override.py").exists() or (d / "attention.py").exists())
    ]
    n_correct, n_hostile = size // 3, size // 6
    n_buggy = size - n_correct - n_hostile
    plan = (
        [("correct", alternatives[i % len(alternatives)], i) for i in range(n_correct)]
        + [("buggy", bugs[i % len(bugs)], i) for i in range(n_buggy)]
        + [("hostile", hostile[i % len(hostile)], i) for i in range(n_hostile)]
    )
    for kind, source, i in plan:
        student = f"{kind}-{i:03d}-{source.parent.name if source.name in ('override.py', 'attention.py') else source.stem}"
        dest = klass / student
        if source == ATTENTION.solution or source.name == "attention.py":
            dest.mkdir(parents=True)
            shutil.copy(source, dest / "attention.py")
        else:
            compose(source, dest)
        with (dest / "attention.py").open("a") as f:
            f.write(f"\n# submission {student}\n")  # every file differs, as real ones do
        if kind == "correct":
            shutil.copytree(dest, correct / student)
    return klass, correct


def batch(klass: Path, out: Path, *extra: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grader",
            "batch",
            "--lesson",
            "attention",
            str(klass),
            "--out",
            str(out),
            "--jobs",
            "2",
            *extra,
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=60, help="submissions in the class (default 60)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of the isolation comparison (default 3)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        klass, correct = build_class(tmp, args.size)
        n_correct = len(list(correct.iterdir()))
        whole = batch(klass, tmp / "class.csv")
        rate = args.size / whole * 60
        sandboxed, inside = [], []
        for i in range(args.repeat):
            sandboxed.append(batch(correct, tmp / f"s{i}.csv", "--isolation", "auto"))
            inside.append(batch(correct, tmp / f"n{i}.csv", "--isolation", "none"))
        s, n = statistics.median(sandboxed), statistics.median(inside)
        print(f"Batch of {args.size} submissions (correct, buggy and hostile), 2 jobs, sandboxed:")
        print(f"  {whole:6.1f} s   {rate:5.1f} submissions per minute")
        print(f"Isolation cost on the {n_correct} correct submissions (median of {args.repeat}):")
        print(f"  sandboxed {s:6.1f} s   in-process {n:6.1f} s   ratio x{s / n:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
