"""Speed and power of the grader, measured side by side in one run.

    python benchmarks/bench_grader.py [--repeat 7] [--power 5,8,20]

Speed: wall time of whole commands, each in a fresh process as a student or
CI would run it, on the reference and on a buggy submission, interleaved so
that machine noise hits all of them alike. Reported as medians and ratios.

Power: grades every catalog entry (tests/catalog) with the given numbers of
examples per property and counts the bugs caught, the correct alternatives
given full marks and the submissions that do no real work held to 0 in every
exercise (with the points each exercise still gave them).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support import ATTENTION, KV_CACHE, compose, grade_folders  # noqa: E402
from tests.test_catalog import catalog, exercise_of  # noqa: E402

BUGS, CORRECT, TRIVIAL = (catalog(ATTENTION, kind) for kind in ("bugs", "correct", "trivial"))

BUGGY = ATTENTION.gallery / "typical-mistakes" / "attention.py"
KV_BUGGY = KV_CACHE.gallery / "typical-mistakes" / "kv_cache.py"
COMMANDS = {
    "check --public  reference": ["check", "--public", str(ATTENTION.solution)],
    "check           reference": ["check", str(ATTENTION.solution)],
    "grade --json    reference": ["grade", str(ATTENTION.solution), "--format", "json"],
    "check --public  buggy": ["check", "--public", str(BUGGY)],
    "grade --json    buggy": ["grade", str(BUGGY), "--format", "json"],
    # the second lesson, kv_cache
    "check --public  kv_cache reference": ["check", "--public", str(KV_CACHE.solution)],
    "grade --json    kv_cache reference": ["grade", str(KV_CACHE.solution), "--format", "json"],
    "check --public  kv_cache buggy": ["check", "--public", str(KV_BUGGY)],
    "grade --json    kv_cache buggy": ["grade", str(KV_BUGGY), "--format", "json"],
}


def wall(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "grader", *args], cwd=ROOT, capture_output=True, check=False)
    return time.perf_counter() - start


def speed(repeat: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for args in COMMANDS.values():  # one warm-up each (file cache, .pyc)
        wall(args)
    for _ in range(repeat):
        for name, args in COMMANDS.items():
            times[name].append(wall(args))
    return {name: statistics.median(ts) for name, ts in times.items()}


def power(examples: int) -> dict:
    """Bugs caught, correct alternatives at 100 and do-nothing submissions at 0 (each out of
    its section's size), and the points each exercise gave the do-nothing ones in all, at
    ``examples`` per property."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        folders = {
            f"{e.parent.name}-{e.stem}": compose(e, tmp / "src" / f"{e.parent.name}-{e.stem}").parent
            for e in BUGS + CORRECT + TRIVIAL
        }
        reports = grade_folders(folders, tmp / "graded", max_examples=examples)
    caught = 0
    for bug in BUGS:
        exercise = reports[f"bugs-{bug.stem}"]["exercises"][exercise_of(bug)]
        caught += exercise["score"] < exercise["max_score"]
    trivial = [reports[f"trivial-{t.stem}"] for t in TRIVIAL]
    return {
        "bugs_caught": caught,
        "bugs": len(BUGS),
        "correct_full": sum(reports[f"correct-{c.stem}"]["score"] == 100 for c in CORRECT),
        "correct": len(CORRECT),
        "trivial_zero": sum(r["score"] == 0 for r in trivial),
        "trivial": len(trivial),
        "trivial_points": {
            name: sum(r["exercises"][name]["score"] for r in trivial) for name in ATTENTION.exercises
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=7, help="timed runs per command (default 7)")
    parser.add_argument(
        "--power", default="20", help="comma-separated examples per property (default 20; '' for none)"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    medians = speed(args.repeat)
    figures = {"median_seconds": medians, "power": {}}
    print(f"Speed: median wall time of {args.repeat} runs, each a fresh process")
    base = medians["check --public  reference"]
    for name, seconds in medians.items():
        print(f"  {name:<37} {seconds:6.2f} s   x{seconds / base:.2f} of check --public on the reference")
    print(
        f"  buggy / reference, grade: x{medians['grade --json    buggy'] / medians['grade --json    reference']:.2f}"
    )
    print("Power: catalog entries graded with N examples per property")
    for n in (int(x) for x in args.power.split(",") if x.strip()):
        found = figures["power"][n] = power(n)
        print(
            f"  N={n:<4} bugs caught {found['bugs_caught']}/{found['bugs']}   "
            f"correct alternatives at 100: {found['correct_full']}/{found['correct']}   "
            f"no real work at 0: {found['trivial_zero']}/{found['trivial']} "
            f"(points left: {found['trivial_points']})"
        )
    if args.json:
        print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
