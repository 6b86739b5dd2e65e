"""Throughput of ``batch --cluster`` with 1 and 2 Dask workers.

    python benchmarks/cluster.py [--size 30] [--repeat 3] [--workers 1 2]

Builds the class of benchmarks/bench_batch.py (1/3 correct, 1/2 realistic bugs, 1/6 hostile),
starts a real ``dask scheduler`` and N ``dask worker`` processes (one thread each) on 127.0.0.1,
and grades the whole class with ``batch --cluster tcp://...`` into a fresh gradebook, ``--repeat``
times per N. Prints, per N, the median wall time of a batch, submissions per minute and the
worker-seconds one submission took (wall time x workers / submissions), the figure the README's
sizing for 100,000 submissions starts from. The workers are started before the first round and
kept: each round's time includes the batch's own start, the check of the workers and each
worker's grading process loading the checks once.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_batch import build_class  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_cluster(workers: int, logs: Path) -> tuple[str, list[subprocess.Popen]]:
    """(the scheduler's address, its processes) with ``workers`` workers of one thread."""
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    log = (logs / f"dask-{workers}.log").open("wb")
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1"]
            + ["--port", str(port), "--no-dashboard", "--no-show"],
            stdout=log,
            stderr=log,
        )
    ]
    for _ in range(workers):
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1"]
                + ["--host", "127.0.0.1", "--no-nanny", "--no-dashboard"],
                stdout=log,
                stderr=log,
            )
        )
    from distributed import Client

    with Client(address, timeout=60) as client:
        client.wait_for_workers(workers, timeout=120)
    return address, procs


def stop(procs: list[subprocess.Popen]) -> None:
    for proc in reversed(procs):
        proc.terminate()
    for proc in reversed(procs):
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def one_batch(klass: Path, out: Path, address: str) -> float:
    """Seconds for one batch of the whole class, graded from scratch."""
    shutil.rmtree(out.parent, ignore_errors=True)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "grader", "batch", "--lesson", "attention", str(klass)]
        + ["--out", str(out), "--cluster", address],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 75):  # 75: some left unfinished on a busy machine, still timed
        sys.exit(f"batch failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp:
        root = Path(tmp)
        klass, _ = build_class(root, args.size)
        size = sum(1 for p in klass.iterdir() if p.is_dir())
        print(f"class of {size} submissions; {os.cpu_count()} cores here; load {os.getloadavg()[0]:.1f}")
        for workers in args.workers:
            address, procs = start_cluster(workers, root)
            try:
                times, loads = [], []
                for _ in range(args.repeat):
                    loads.append(os.getloadavg()[0])  # the machine is shared: each round says how busy
                    times.append(one_batch(klass, root / f"out-{workers}" / "gradebook.csv", address))
            finally:
                stop(procs)
            wall = statistics.median(times)
            print(
                f"{workers} worker(s): median {wall:.1f} s per batch of {size} "
                f"({', '.join(f'{t:.1f} s at load {x:.1f}' for t, x in zip(times, loads, strict=True))}), {size / wall * 60:.0f} submissions/min, "
                f"{wall * workers / size:.2f} worker-seconds per submission"
            )


if __name__ == "__main__":
    main()
