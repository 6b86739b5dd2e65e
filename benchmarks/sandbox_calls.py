"""What one sandboxed call of a student's function costs, side by side with another checkout.

    python benchmarks/sandbox_calls.py [--calls 400] [--rounds 5] [--grades 5] [--baseline DIR]

A round opens the first lesson's reference in a sandbox (namespaces, as ``grade`` does) in a
fresh process, warms it up, then times ``--calls`` calls of two kinds:

* ``plain``: ``apply_causal_mask`` of a small array, one frame each way;
* ``callbacks``: ``mha_forward`` with the other exercises replaced by the reference, so every
  call also asks the trusted side five times (a frame each way per question);

and reports, per call: the wall time, the processor time of the trusted process, of the keeper
and of the worker (read from /proc), their sum, and each one's time split into its own code
(``user``: Python, mostly) and the kernel's (``sys``: system calls, signals, switches).
``--baseline DIR`` (another checkout, e.g. ``git worktree add --detach DIR main``) runs the same
rounds with DIR's code, each right after this code's, so that whatever else the machine does
hits both alike. ``--grades N`` also times N interleaved runs of ``grade --format json`` of the
reference and of the gallery's typical mistakes with each checkout (wall, and processor time of
the command and every process it started, the sandbox included, where a control group can count
it: ``benchmarks/processor.py``). Every figure is a median.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))

from benchmarks.processor import Clock  # noqa: E402

#: Times each ``grade`` of ``--grades`` (see benchmarks/processor.py); closed as the run ends.
CLOCK = Clock()
KINDS = ("plain", "callbacks")
GRADED = {
    "reference": "solutions/attention.py",
    "typical mistakes": "examples/gallery/attention/typical-mistakes/attention.py",
}


def _arguments(kind: str):
    """The call of ``kind``: (exercise, arguments, replace)."""
    import numpy as np

    rng = np.random.default_rng(0)
    if kind == "plain":
        return "apply_causal_mask", {"scores": rng.standard_normal((2, 4, 6, 6))}, None
    d, heads = 8, 2
    weights = {f"W_{w}": rng.standard_normal((d, d)) for w in "qkvo"}
    arguments = {"x": rng.standard_normal((2, 5, d)), **weights, "n_heads": heads}
    return "mha_forward", arguments, ("apply_causal_mask", "split_heads", "merge_heads")


def _usage(clock) -> float:
    reading = clock.read() if clock is not None else None
    return reading.cpu if reading is not None else float("nan")


def _user_system(pid: int) -> tuple[float, float]:
    """Seconds process ``pid`` (0: this one) ran its own code and in the kernel (/proc's utime
    and stime, whole clock ticks: read over many calls)."""
    if not pid:
        times = os.times()
        return times.user, times.system
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as f:
        return int(f.read().rsplit(b")", 1)[1].split()[1])


def measure(root: Path, calls: int) -> dict:
    """In this process, with ``root``'s grader: per-call figures of each kind of call."""
    sys.path.insert(0, str(root))
    from grader.core.intake import open_submission
    from grader.core.lesson import Course
    from grader.core.settings import Isolation
    from grader.engine.submission import reference_of
    from grader.sandbox.clock import KeptUsage
    from grader.sandbox.session import Sandboxed

    lesson = Course.at(root).lesson("attention")
    intake = open_submission(lesson.solution, lesson.filename)
    box = Sandboxed(intake, helpers=reference_of(lesson), level=Isolation.NAMESPACES, lesson=lesson)
    figures = {}
    try:
        assert not box.problem, box.problem
        for kind in KINDS:
            name, arguments, replace = _arguments(kind)
            for _ in range(20):  # warm up: the worker's namespaces, the reference's answers
                assert box.call(name, name, arguments, replace=replace).ok
            walls = []
            pids = {"trusted": 0, "keeper": _parent(box.worker_pid), "worker": box.worker_pid}
            split = {who: _user_system(pid) for who, pid in pids.items()}
            keeper_clock = KeptUsage(pids["keeper"])  # off the calls' way now, but counted as ever
            keeper, worker = _usage(keeper_clock), _usage(box.worker_clock)
            cpu, began = time.process_time(), time.perf_counter()
            for _ in range(calls):
                start = time.perf_counter()
                box.call(name, name, arguments, replace=replace)
                walls.append(time.perf_counter() - start)
            wall, cpu = time.perf_counter() - began, time.process_time() - cpu
            keeper, worker = _usage(keeper_clock) - keeper, _usage(box.worker_clock) - worker
            keeper_clock.close()
            split = {
                who: [b - a for a, b in zip(split[who], _user_system(pid), strict=True)]
                for who, pid in pids.items()
            }
            figures[kind] = {
                "wall": statistics.median(walls),
                "trusted": cpu / calls,
                "keeper": keeper / calls,
                "worker": worker / calls,
                "total": (cpu + keeper + worker) / calls,
                "mean wall": wall / calls,
                # where the processor time went: each process's own code, or the kernel's
                **{f"{who} user": s[0] / calls for who, s in split.items()},
                **{f"{who} sys": s[1] / calls for who, s in split.items()},
            }
    finally:
        box.close()
    return figures


def _child(root: Path, calls: int) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(root), "--calls", str(calls)],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def _grade(root: Path, path: str) -> tuple[float, float]:
    """Wall and processor seconds of one ``grade`` in a fresh process (its sandbox included where
    a control group can count it: ``benchmarks/processor.py``)."""
    took = CLOCK.run([sys.executable, "-m", "grader", "grade", path, "--format", "json"], cwd=root)
    return took.wall, took.cpu


def _codes(baseline: Path | None) -> dict[str, Path]:
    return {"this": HERE, **({"baseline": baseline.resolve()} if baseline else {})}


def compare_calls(codes: dict[str, Path], calls: int, rounds: int) -> dict:
    runs: dict = {code: {kind: [] for kind in KINDS} for code in codes}
    for _ in range(rounds):
        for code, root in codes.items():
            for kind, figures in _child(root, calls).items():
                runs[code][kind].append(figures)
    return {
        code: {
            kind: {key: statistics.median(f[key] for f in figures) for key in figures[0]}
            for kind, figures in kinds.items()
        }
        for code, kinds in runs.items()
    }


def compare_grades(codes: dict[str, Path], rounds: int) -> dict:
    runs: dict = {code: {what: [] for what in GRADED} for code in codes}
    for root in codes.values():  # a warm-up each: file cache, bytecode
        _grade(root, GRADED["reference"])
    for _ in range(rounds):
        for what, path in GRADED.items():
            for code, root in codes.items():
                runs[code][what].append(_grade(root, path))
    return {
        code: {
            what: {
                "wall": statistics.median(w for w, _ in times),
                "cpu": statistics.median(c for _, c in times),
            }
            for what, times in whats.items()
        }
        for code, whats in runs.items()
    }


def _print_calls(result: dict) -> None:
    codes = list(result)
    for kind in KINDS:
        print(f"\n{kind}: per call, in microseconds (median of rounds)")
        keys = list(result[codes[0]][kind])
        print(
            f"  {'':<14}"
            + "".join(f"{code:>12}" for code in codes)
            + ("       ratio" if len(codes) > 1 else "")
        )
        for key in keys:
            values = [result[code][kind][key] * 1e6 for code in codes]
            ratio = f"{values[0] / values[1]:>12.2f}" if len(values) > 1 and values[1] else ""
            print(f"  {key:<14}" + "".join(f"{v:>12.1f}" for v in values) + ratio)


def _print_grades(result: dict) -> None:
    codes = list(result)
    print("\ngrade --format json, in seconds (median of rounds)")
    for what in GRADED:
        for key in ("wall", "cpu"):
            values = [result[code][what][key] for code in codes]
            ratio = f"{values[0] / values[1]:>8.2f}" if len(values) > 1 else ""
            label = f"{what} {key}"
            print(
                f"  {label:<22}"
                + "".join(f"{code} {v:>6.3f}  " for code, v in zip(codes, values, strict=True))
                + ratio
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--grades", type=int, default=0, help="interleaved runs of grade (0: none)")
    parser.add_argument("--baseline", type=Path)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.calls)))
        return
    codes = _codes(args.baseline)
    result = {"calls": compare_calls(codes, args.calls, args.rounds)}
    if args.grades:
        result["grades"] = compare_grades(codes, args.grades)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    _print_calls(result["calls"])
    if args.grades:
        print(f"({CLOCK.describe()})")
        _print_grades(result["grades"])


if __name__ == "__main__":
    with CLOCK:
        main()
