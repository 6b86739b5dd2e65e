"""The grading service under load: throughput and latency, 10 clients x 50 submissions.

    python benchmarks/service.py [--clients 10] [--submissions 50] [--jobs 2]

Starts a real ``python -m grader serve`` on a free port of 127.0.0.1 (a fresh folder, one
student per client), then each client thread sends its share of the submissions (the lesson's
reference, the gallery's typical mistakes, a mistake of the catalog; each file made distinct by
a comment) one after the other, waiting for each report before the next. Prints the wall time,
the throughput (submissions graded per minute) and the medians of the latency (upload to
report) and of the upload's answer.

``tests/test_service_load.py`` runs the same clients, bounded, and checks what they get.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LESSON = "attention"
#: The kinds of file sent, in turn: right, the usual mistakes, one bug (beside the reference).
KINDS = (
    ("reference", ROOT / "solutions" / "attention.py", None),
    ("typical", ROOT / "examples" / "gallery" / "attention" / "typical-mistakes" / "attention.py", None),
    (
        "bug",
        ROOT / "solutions" / "attention.py",
        ROOT / "tests" / "catalog" / "attention" / "bugs" / "mask_in_place.py",
    ),
)
#: Seconds a request may take before it is called hung.
TIMEOUT = 300.0


def sources() -> list[tuple[str, bytes]]:
    """(kind, text) of each kind of file sent."""
    found = []
    for kind, base, override in KINDS:
        text = base.read_bytes()
        if override is not None:
            text += b"\n\n" + override.read_bytes()
        found.append((kind, text))
    return found


def plan(clients: int, submissions: int) -> list[list[tuple[str, bytes]]]:
    """Each client's files, the kinds in turn, each one distinct (a comment numbers it)."""
    kinds = sources()
    shares: list[list[tuple[str, bytes]]] = [[] for _ in range(clients)]
    for n in range(submissions):
        kind, text = kinds[n % len(kinds)]
        shares[n % clients].append((kind, text + b"\n# submission %d\n" % n))
    return shares


class Service:
    """A running ``serve`` in a folder of its own."""

    def __init__(self, data: Path, students: list[str], *extra: str):
        data.mkdir(parents=True, exist_ok=True)
        roster = data.parent / "roster.csv"
        with open(roster, "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows([("student",), *((s,) for s in students)])
        self.data = data / "service"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "grader", "serve", "--course", str(ROOT), "--lesson", LESSON]
            + [
                "--data",
                str(self.data),
                "--roster",
                str(roster),
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                *extra,
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        line = _first_line(self.proc, TIMEOUT)
        self.url = line.split(" at ")[1].split()[0].rstrip("/")
        with open(self.data / "tokens.csv", newline="", encoding="utf-8") as f:
            self.tokens = {row["student"]: row["token"] for row in csv.DictReader(f)}

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc.stdout.close()

    def call(self, method: str, path: str, token: str, body: bytes | None = None, headers=None):
        """(HTTP status, JSON body) of one request."""
        request = urllib.request.Request(
            self.url + path,
            data=body,
            method=method,
            headers={"Authorization": f"Bearer {token}", **(headers or {})},
        )
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read() or b"{}")

    def upload(self, token: str, data: bytes):
        boundary = "load-boundary-51c3"
        body = (
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="attention.py"\r\n'
                "Content-Type: text/x-python\r\n\r\n"
            ).encode()
            + data
            + f"\r\n--{boundary}--\r\n".encode()
        )
        return self.call(
            "POST",
            "/api/submissions",
            token,
            body,
            {"Content-Type": f"multipart/form-data; boundary={boundary}"},
        )


def _first_line(proc: subprocess.Popen, seconds: float) -> str:
    fd, read, deadline = proc.stdout.fileno(), b"", time.monotonic() + seconds
    while b"\n" not in read:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise RuntimeError("the service printed no address")
        chunk = os.read(fd, 4096)
        if not chunk:
            raise RuntimeError("the service ended before it served")
        read += chunk
    return read.decode().splitlines()[0]


class Client(threading.Thread):
    """One student sending their files in turn, waiting for each report (``polls`` looks at
    most, ``pause`` seconds apart); what it saw is kept for the caller to check."""

    def __init__(
        self, service: Service, student: str, files: list[tuple[str, bytes]], *, polls: int, pause: float
    ):
        super().__init__(daemon=True)
        self.service, self.student, self.files = service, student, files
        self.polls, self.pause = polls, pause
        self.sent: list[tuple[int, str, bytes]] = []  # (id, kind, file)
        self.reports: dict[int, dict] = {}
        self.statuses: list[int] = []  # every HTTP status answered
        self.latencies: list[float] = []  # upload to report, seconds
        self.answers: list[float] = []  # the upload's own answer, seconds
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            token = self.service.tokens[self.student]
            for kind, data in self.files:
                start = time.monotonic()
                status, body = self.service.upload(token, data)
                self.answers.append(time.monotonic() - start)
                self.statuses.append(status)
                if status != 202:
                    raise RuntimeError(f"{self.student}: upload answered {status}: {body}")
                self.sent.append((body["id"], kind, data))
                for _ in range(self.polls):
                    status, body = self.service.call("GET", f"/api/submissions/{body['id']}", token)
                    self.statuses.append(status)
                    if status != 200 or body.get("status") not in ("queued", "grading"):
                        break
                    time.sleep(self.pause)
                else:
                    raise RuntimeError(f"{self.student}: submission {self.sent[-1][0]} still not graded")
                self.reports[self.sent[-1][0]] = body
                self.latencies.append(time.monotonic() - start)
        except BaseException as err:  # noqa: BLE001 - handed to the caller, which reports it
            self.error = err


def run_clients(
    service: Service, students: list[str], submissions: int, *, polls: int, pause: float
) -> list[Client]:
    """Start one client per student, their shares of ``submissions`` files, and wait for all."""
    clients = [
        Client(service, student, share, polls=polls, pause=pause)
        for student, share in zip(students, plan(len(students), submissions), strict=True)
    ]
    for client in clients:
        client.start()
    for client in clients:
        client.join()
    return clients


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--submissions", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    students = [f"student{n:02d}" for n in range(args.clients)]
    per_student = -(-args.submissions // args.clients)
    with tempfile.TemporaryDirectory() as tmp:
        service = Service(Path(tmp), students, "--jobs", str(args.jobs), "--per-minute", str(per_student))
        try:
            start = time.monotonic()
            clients = run_clients(service, students, args.submissions, polls=100_000, pause=0.2)
            wall = time.monotonic() - start
        finally:
            service.stop()
    for client in clients:
        if client.error is not None:
            print(f"{client.student}: {client.error}", file=sys.stderr)
            return 1
    latencies = [s for c in clients for s in c.latencies]
    answers = [s for c in clients for s in c.answers]
    print(
        f"{args.clients} clients, {args.submissions} submissions, --jobs {args.jobs}, {os.cpu_count()} cores"
    )
    print(f"wall time:             {wall:.1f} s")
    print(f"throughput:            {len(latencies) / wall * 60:.1f} submissions graded a minute")
    print(f"latency (to report):   median {statistics.median(latencies):.1f} s, max {max(latencies):.1f} s")
    print(f"upload answered in:    median {statistics.median(answers) * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
