"""The grading service attacked as a hostile student would: over real HTTP against the real
``python -m grader serve`` process (started once for the module), and ``check --server``'s
client fed a hostile service. Each test pins a weakness that was found and mended.

Nothing here compares times: every wait is a net that only a service that hangs for good reaches.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import sqlite3
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from grader.commands import remote
from grader.core.service import LISTED

from .support import TOY
from .test_service import PER_MINUTE, Server, _roster

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

#: Seconds the module's service lets an upload take to arrive (the default is a minute).
UPLOAD_SECONDS = 2
#: A net under a wait for the service: far above what it takes at load 10.
NET = 120.0


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("attacks")
    roster = _roster(tmp / "roster.csv", ["mallory", "oscar"])
    started = Server(
        tmp / "data", roster, "--per-minute", str(PER_MINUTE), "--upload-seconds", str(UPLOAD_SECONDS)
    )
    yield started
    started.stop()


def _submissions(server: Server) -> int:
    """How many submissions the service's queue holds."""
    with contextlib.closing(sqlite3.connect(server.data / "gradebook.sqlite")) as db:
        return db.execute("SELECT COUNT(*) FROM submissions").fetchone()[0]


def _health(server: Server) -> bool:
    try:
        return server.call("GET", "/health")[0] == 200
    except OSError:
        return False


def test_an_upload_that_never_ends_is_dropped_and_stalls_nobody_meanwhile(server):
    """A body that never ends held its memory (the bytes sent so far) for as long as its sender
    liked: a student opening a few a minute grew the service without bound. It is dropped once
    the time an upload may take is over; meanwhile the others are served."""
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    slow = socket.create_connection((host, int(port)), timeout=NET)
    try:
        slow.sendall(
            (
                "POST /api/submissions HTTP/1.1\r\nHost: grader\r\n"
                f"Authorization: Bearer {server.tokens()['mallory']}\r\n"
                "Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000\r\n\r\n--b\r\n"
            ).encode()
        )
        assert any(_health(server) for _ in range(20))  # answered while the slow one is open
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = slow.recv(4096)  # the net: a service that never drops it times this out
            if not chunk:
                break
            answer += chunk
    finally:
        slow.close()
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert _health(server)


def test_a_connection_that_never_finishes_its_request_is_closed(server):
    """A client sending its request's head a byte now and then, with no token at all, kept its
    connection for ever (uvicorn limits no such time): enough of them took every file descriptor
    of the service. The head must arrive within the time a request may take."""
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    slow = socket.create_connection((host, int(port)), timeout=NET)
    closed = False
    try:
        slow.sendall(b"GET /health HTTP/1.1\r\nHost: grader\r\nX-Slow: ")
        assert any(_health(server) for _ in range(20))  # answered while the slow one is open
        deadline = time.monotonic() + NET  # the net: a service that keeps it open for good
        while not closed and time.monotonic() < deadline:
            try:
                slow.sendall(b"a")
                if select.select([slow], [], [], 0.2)[0]:
                    closed = slow.recv(4096) == b""
            except OSError:  # reset: closed too
                closed = True
    finally:
        slow.close()
    assert closed


def test_a_students_list_shows_their_latest_submissions_alone(server):
    """The list read every report its student ever had, on the service's one event loop: a
    student sending at the rate limit all day had each request for their list read thousands of
    reports, holding every other request up. It shows the latest ones alone."""
    with sqlite3.connect(server.data / "gradebook.sqlite") as db:  # a long day of submissions
        db.executemany(
            "INSERT INTO submissions (student, state, file, file_hash, received_at, report) "
            "VALUES ('oscar', 'done', '', '', '', ?)",
            [(json.dumps({"score": n, "max_score": 86}),) for n in range(LISTED + 5)],
        )
    status, body, _ = server.call("GET", "/api/submissions", server.tokens()["oscar"])
    assert status == 200
    assert [s["score"] for s in body["submissions"]] == list(range(5, LISTED + 5))


# check --server fed a hostile service: a sentence, never a traceback


#: What a hostile (or mistaken) service answers, by what it is.
REPORT = {
    "score": 1,
    "max_score": 2,
    "tests": [
        {
            "name": "t",
            "exercise": "e",
            "score": 1,
            "max_score": 2,
            "status": "passed",
            "visibility": "visible",
        }
    ],
}
ANSWERS = {
    "not HTTP": b"HELLO\r\n\r\n",
    "JSON nested too deep": b"[" * 100_000 + b"]" * 100_000,
    "exercises not a mapping": json.dumps({**REPORT, "exercises": []}).encode(),
    "a score that is text": json.dumps({**REPORT, "tests": [{**REPORT["tests"][0], "score": "1"}]}).encode(),
    "a score that is not a number": json.dumps({**REPORT, "tests": [{**REPORT["tests"][0], "score": "?"}]})
    .replace('"?"', "NaN")
    .encode(),
    "a name that is a list": json.dumps(
        {**REPORT, "tests": [{**REPORT["tests"][0], "exercise": [1]}]}
    ).encode(),
}


class HostileService(ThreadingHTTPServer):
    daemon_threads = True
    answer = b""
    """What it answers to every GET (a report's request)."""


#: What the hostile service answers to trickle a byte at a time, for ever.
TRICKLE = b"trickle"


@pytest.fixture(scope="module")
def hostile():
    """A service whose every report is its ``answer`` (whatever it is); a submission's id is 1."""

    class Hostile(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self._send(b'{"id": 1}')

        def do_GET(self):
            self._send(self.server.answer)

        def _send(self, body: bytes):
            if body == TRICKLE:
                self.send_response(200)
                self.send_header("Content-Length", str(1 << 30))
                self.end_headers()
                while not stop.is_set():  # until the client hangs up
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    stop.wait(0.05)
                return
            if not body.startswith((b"{", b"[")):
                self.wfile.write(body)  # not even a status line
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    stop = threading.Event()
    service = HostileService(("127.0.0.1", 0), Hostile)
    threading.Thread(target=service.serve_forever, daemon=True).start()
    yield service
    stop.set()
    service.shutdown()
    service.server_close()


@pytest.mark.parametrize("what", list(ANSWERS))
def test_check_server_says_in_a_sentence_what_a_hostile_service_answered(hostile, what):
    """Answers that are not HTTP, JSON nested deeper than Python reads, and reports whose fields
    have odd types each ended ``check --server`` in a traceback (in the client, or when the
    report was printed); each is now a :class:`remote.ServiceError`, printed as a sentence."""
    hostile.answer = ANSWERS[what]
    service = remote.Remote(f"http://127.0.0.1:{hostile.server_address[1]}", "grader_token", wait=NET)
    with pytest.raises(remote.ServiceError) as raised:
        remote.report_of(service, 1, sleep=time.sleep)
    assert "grading service" in str(raised.value)


def test_check_server_stops_reading_a_service_that_trickles_its_answer(hostile):
    """The client's timeout bounded each read of the socket, not the answer: a service sending a
    byte now and then held ``check --server`` for ever. The whole answer now has a time limit."""
    hostile.answer = TRICKLE
    service = remote.Remote(f"http://127.0.0.1:{hostile.server_address[1]}", "grader_token", NET, timeout=1.0)
    outcome: list[BaseException] = []

    def ask():
        try:
            remote.report_of(service, 1, sleep=time.sleep)
        except BaseException as err:  # noqa: BLE001 - handed to the test's thread
            outcome.append(err)

    asking = threading.Thread(target=ask, daemon=True)
    asking.start()
    asking.join(NET)  # the net: a client that reads for ever is still at it
    assert not asking.is_alive() and outcome
    assert isinstance(outcome[0], remote.ServiceError) and "to send its answer" in str(outcome[0])


def test_a_sender_hanging_up_mid_upload_leaves_no_traceback_in_the_log(server):
    """A client that hangs up halfway through its upload made the service log a traceback
    ("Exception in ASGI application"), as a bug of its own; nothing is queued for it either."""
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    before = server.log.read_text(errors="replace")
    queued = _submissions(server)
    gone = socket.create_connection((host, int(port)), timeout=NET)
    gone.sendall(
        (
            "POST /api/submissions HTTP/1.1\r\nHost: grader\r\n"
            f"Authorization: Bearer {server.tokens()['oscar']}\r\n"
            "Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000\r\n\r\n--b\r\n"
        ).encode()
    )
    assert any(_health(server) for _ in range(20))  # the upload has begun: its head was read
    gone.close()
    for _ in range(30):  # the service notices the hang-up as it reads on: a few tries to log it
        assert _health(server)
        time.sleep(0.1)
    said = server.log.read_text(errors="replace")[len(before) :]
    assert "Traceback" not in said and "Exception" not in said, said[-3000:]
    assert _submissions(server) == queued


def test_a_flood_of_connections_from_one_address_stalls_no_other_student(tmp_path):
    """One client opening connections faster than the time limit on a request's head closed them
    took every file descriptor of the service: a classmate's upload was refused as "could not be
    read (Too many open files)" (their file blamed, with the service's own path in the message),
    and each connection the service could not take wrote a traceback to its log. Now one address
    holds at most ``PER_ADDRESS`` connections and all of them half the descriptors; the others
    are closed as they open, and the service takes waiting connections a few at a time."""
    roster = _roster(tmp_path / "roster.csv", ["alice", "mallory"])
    server = Server(tmp_path / "data", roster, "--upload-seconds", "5", files=256)
    host, port = server.url.split("//")[1].rsplit(":", 1)
    opened, held, done = [0], [], threading.Event()

    def flood():  # from another address of the loopback: the classmate's stays 127.0.0.1
        for _ in range(6000):  # bounded in count; each attempt at most its timeout
            if done.is_set():
                break
            try:
                held.append(
                    socket.create_connection((host, int(port)), timeout=2, source_address=("127.0.0.2", 0))
                )
                opened[0] += 1
            except OSError:
                time.sleep(0.01)
            if len(held) > 400:
                held.pop(0).close()

    flooding = threading.Thread(target=flood, daemon=True)
    flooding.start()
    try:
        deadline = time.monotonic() + NET
        while opened[0] < 600 and flooding.is_alive() and time.monotonic() < deadline:
            time.sleep(
                0.05
            )  # well past the service's 256 descriptors, many times the 32 one address may hold
        assert opened[0] >= 600, opened
        token = server.tokens()["alice"]
        answers = [server.upload(token, TOY.solution.read_bytes())[:2] for _ in range(3)]
        assert [status for status, _ in answers] == [202] * 3, answers
    finally:
        done.set()
        flooding.join(NET)
        for connection in held:
            connection.close()
    try:
        for _, body in answers:
            report = server.report(token, body["id"])
            assert report["score"] == report["max_score"] > 0, report
        assert server.call("GET", "/health")[0] == 200
    finally:
        server.stop()
    log = server.log.read_text(errors="replace")
    assert "Too many open files" not in log and "Traceback" not in log, log[-2000:]


def test_the_cap_counts_an_ipv6_client_by_its_network():
    """Found by helper-39: every IPv6 client has a /64 of addresses, one per connection if it
    likes, so a cap per address held nothing there; it counts the /64. An IPv4 client reaching
    a dual-stack socket counts as its IPv4 address."""
    from grader.commands.serve import client_key

    assert client_key("2001:db8::1") == client_key("2001:db8::ffff:1") != client_key("2001:db8:0:1::1")
    assert client_key("::ffff:10.0.0.1") == client_key("10.0.0.1") == "10.0.0.1"
    assert client_key("127.0.0.1") != client_key("127.0.0.2")
