"""The grading service (``serve``) and its client (``check --server``), against the real server
process: ``python -m grader serve`` started once for the module on a free port of 127.0.0.1
(a second one, killed with -9 and started again, for the queue's recovery).

Nothing here compares times: every wait is a net (:data:`NET`) that only a service that hangs
for good reaches.
"""

from __future__ import annotations

import csv
import json
import os
import select
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from grader.commands.remote import in_clear
from grader.core.lesson import Lesson
from grader.core.service import MAX_UPLOAD, RateLimit, Refused, student_of, submission_id, token_hash
from grader.core.service import upload_suffix as suffix_of

from .support import ATTENTION, ON_TOY, ROOT, TOY, TOY_BUGGY, python
from .test_github_actions import run_step

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

#: The service's workings are the grader's, not a lesson's: the module's service grades the toy
#: lesson, and so does every command here that names one.
LESSON = TOY.name
#: The toy gallery's buggy file: it loses points.
TYPICAL = TOY_BUGGY
#: A second service grades the attention lesson, for the tests of what only that lesson has: the
#: likely mistakes a report names, and its pictures (the toy lesson has neither).
ATTENTION_TYPICAL = ATTENTION.gallery / "typical-mistakes" / ATTENTION.filename
#: A file that defines none of the lesson's functions: graded at once, every check failing.
NOTHING = b"x = 1\n"
#: Submissions a student may send in a minute on the module's service.
PER_MINUTE = 3
#: A net under a wait for the service (start, a grade): far above what it takes at load 10.
NET = 300.0
#: A roster id a page would run if it wrote it as HTML.
MARKUP = "<img src=x onerror=alert(1)>"
#: The module service's students (each test sends from its own, the rate limit being per student),
#: and FORMULA.
STUDENTS = ("alice", "bob", "carol", "dave", "gina", "hana", "ivy", "jo", "kim", MARKUP)
#: A roster id a spreadsheet would run as a formula if written as it is.
FORMULA = "=HYPERLINK(1)"


def on(lesson: Lesson) -> tuple[str, ...]:
    """The options that point a command at ``lesson``."""
    return ("--course", str(lesson.root), "--lesson", lesson.name)


class Server:
    """A running ``python -m grader serve`` of ``lesson`` and what it was started with."""

    def __init__(
        self,
        data: Path,
        roster: Path,
        *extra: str,
        lesson: Lesson = TOY,
        cwd: Path = ROOT,
        files: int | None = None,
    ):
        """``data`` is given on the command line relative to ``cwd`` where it lies below it;
        ``files``: the most file descriptors the service may open (its hard limit too)."""
        self.data, self.roster, self.extra, self.lesson = data, roster, extra, lesson
        given = data.relative_to(cwd) if data.is_relative_to(cwd) else data
        # what it logs goes to a file: a pipe nobody reads would stop it once full
        self.log = data.with_name(data.name + "-serve.log")
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "grader", "serve", *on(lesson)]
                + [
                    "--data",
                    str(given),
                    "--roster",
                    str(roster),
                    "--host",
                    "127.0.0.1",
                    "--port",
                    "0",
                    *extra,
                ],
                cwd=cwd,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
                preexec_fn=None if files is None else _files_limit(files),
            )
        try:
            line = _line_within(self.proc, NET)
        except AssertionError as err:
            raise AssertionError(f"{err}: {self.log.read_text(errors='replace')[-3000:]}") from None
        assert "serving" in line, line + self.log.read_text(errors="replace")[-3000:]
        self.url = line.split(" at ")[1].split()[0].rstrip("/")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc.stdout.close()

    def tokens(self) -> dict[str, str]:
        with open(self.data / "tokens.csv", newline="", encoding="utf-8") as f:
            return {row["student"]: row["token"] for row in csv.DictReader(f)}

    def call(self, method: str, path: str, token: str | None = None, body=None, headers=None):
        """(HTTP status, JSON body, headers) of one request."""
        sent = dict(headers or {})
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        request = urllib.request.Request(self.url + path, data=body, method=method, headers=sent)
        try:
            with urllib.request.urlopen(request, timeout=NET) as answer:
                return answer.status, json.loads(answer.read()), answer.headers
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read()), err.headers

    def upload(self, token: str, data: bytes, filename: str | None = None):
        filename = self.lesson.filename if filename is None else filename
        boundary = "test-boundary-7d1a"
        body = (
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
                "Content-Type: text/x-python\r\n\r\n"
            ).encode()
            + data
            + f"\r\n--{boundary}--\r\n".encode()
        )
        kind = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
        return self.call("POST", "/api/submissions", token, body, kind)

    def report(self, token: str, id_: int) -> dict:
        """The report of submission ``id_``, once graded."""
        deadline = time.monotonic() + NET
        while time.monotonic() < deadline:
            status, body, _ = self.call("GET", f"/api/submissions/{id_}", token)
            assert status == 200, body
            if body.get("status") not in ("queued", "grading"):
                return body
            time.sleep(0.2)
        raise AssertionError(f"submission {id_} was not graded within the net")


def _files_limit(files: int):
    def limit():
        import resource

        resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))

    return limit


def _line_within(proc: subprocess.Popen, seconds: float) -> str:
    """The first line ``proc`` prints, read within ``seconds`` (a net)."""
    fd = proc.stdout.fileno()
    read = b""
    deadline = time.monotonic() + seconds
    while b"\n" not in read:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise AssertionError("the service printed no address within the net")
        chunk = os.read(fd, 4096)
        if not chunk:
            raise AssertionError("the service ended before it printed its address")
        read += chunk
    return read.decode().splitlines()[0]


def _roster(path: Path, students: list[str]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([("student", "name"), *((s, s.upper()) for s in students)])
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The module's service, of the toy lesson."""
    tmp = tmp_path_factory.mktemp("service")
    roster = _roster(tmp / "roster.csv", [*STUDENTS, FORMULA])
    started = Server(tmp / "data", roster, "--per-minute", str(PER_MINUTE))
    yield started
    started.stop()


@pytest.fixture(scope="module")
def attention_server(tmp_path_factory):
    """A service of the attention lesson, for the tests of its likely mistakes and pictures."""
    tmp = tmp_path_factory.mktemp("attention-service")
    roster = _roster(tmp / "roster.csv", ["alice", "gina", "ivy", "kim"])
    started = Server(tmp / "data", roster, "--per-minute", str(PER_MINUTE), lesson=ATTENTION)
    yield started
    started.stop()


# the rules, as plain functions


def test_a_token_is_found_by_its_hash_alone():
    pairs = [("alice", token_hash("secret-a")), ("bob", token_hash("secret-b"))]
    assert student_of("secret-b", pairs) == "bob"
    assert student_of("secret-c", pairs) is None
    assert student_of(None, pairs) is None
    assert student_of(token_hash("secret-a"), pairs) is None  # the stored hash is no token


def test_the_rate_limit_is_a_sliding_minute():
    now = [0.0]
    limit = RateLimit(2, clock=lambda: now[0])
    assert limit.take("a") == 0 and limit.take("a") == 0
    assert limit.take("a") > 0  # a third within the minute
    assert limit.take("b") == 0  # another student has their own
    now[0] = 60.5
    assert limit.take("a") == 0


@pytest.mark.parametrize("text", ["0", "-1", "1e3", "abc", "١", "9" * 20, ""])
def test_a_submission_id_is_a_positive_whole_number(text):
    with pytest.raises(Refused) as refused:
        submission_id(text)
    assert refused.value.status == 404


def test_the_senders_file_name_decides_the_suffix_only():
    assert suffix_of(b"x = 1", "../../etc/passwd.ipynb") == ".ipynb"
    assert suffix_of(b"{}", "whatever") == ".ipynb"
    assert suffix_of(b"x = 1", None) == ".py"


def test_a_token_is_said_to_cross_the_network_in_clear_over_http_to_another_machine():
    assert in_clear("http://grader.example.edu:8000")
    assert not in_clear("https://grader.example.edu")
    assert not in_clear("http://127.0.0.1:8000") and not in_clear("http://localhost/")


# the real service


def test_health_answers_without_a_token(server):
    status, body, _ = server.call("GET", "/health")
    assert (status, body) == (200, {"status": "ok", "lesson": LESSON})


def test_tokens_are_written_once_for_the_owner_only_and_stored_hashed(server):
    tokens = server.tokens()
    assert set(tokens) == {*STUDENTS, "'" + FORMULA}  # a formula made text
    assert len(set(tokens.values())) == len(tokens)
    assert stat.S_IMODE((server.data / "tokens.csv").stat().st_mode) == 0o600
    with sqlite3.connect(server.data / "gradebook.sqlite") as db:
        stored = dict(db.execute("SELECT student, token_hash FROM students"))
    assert stored["alice"] == token_hash(tokens["alice"])
    assert tokens["alice"] not in json.dumps(stored)


@pytest.mark.parametrize("token", [None, "", "not-a-token", "Basic x"])
def test_a_missing_or_bad_token_gets_401(server, token):
    headers = {"Authorization": token} if token in ("", "Basic x") else None
    sent = "not-a-token" if token == "not-a-token" else None
    for method, path in (
        ("GET", "/api/submissions"),
        ("GET", "/api/submissions/1"),
        ("POST", "/api/submissions"),
    ):
        status, body, answered = server.call(method, path, sent, b"" if method == "POST" else None, headers)
        assert status == 401 and "token" in body["error"], (method, path, body)
        assert answered["WWW-Authenticate"] == "Bearer"


def test_the_service_gives_the_same_score_and_mistakes_as_grade_public_here(attention_server):
    server = attention_server  # the attention lesson: the likely mistakes are its diagnoses
    token = server.tokens()["alice"]
    for file in (ATTENTION.solution, ATTENTION_TYPICAL):
        status, body, _ = server.upload(token, file.read_bytes())
        assert status == 202 and body["status"] == "queued"
        served = server.report(token, body["id"])
        local = python("grade", "--public", "--format", "json", *on(ATTENTION), str(file))
        assert local.returncode == 0, local.stderr
        here = json.loads(local.stdout)
        assert (served["score"], served["max_score"]) == (here["score"], here["max_score"]), file
        assert served["exercises"] == here["exercises"], file
        assert [t["name"] for t in served["tests"]] == [t["name"] for t in here["tests"]]
        assert all(t["visibility"] == "visible" for t in served["tests"])
        assert served["submission"] == "attention.py"  # no path of the server's
    assert served["score"] < served["max_score"]  # the typical mistakes lose points
    assert any(e["diagnoses"] for e in served["exercises"].values())  # and are named


def test_a_data_folder_given_relative_to_where_it_started_serves(tmp_path):
    """``--data`` is taken from the folder the command was started in, as every path the grader
    takes; given that way, every submission once failed ("... is not an absolute path")."""
    roster = _roster(tmp_path / "roster.csv", ["alice"])
    started = Server(tmp_path / "data", roster, cwd=tmp_path)
    try:
        status, body, _ = started.upload(started.tokens()["alice"], TOY.solution.read_bytes())
        assert status == 202, body
        report = started.report(started.tokens()["alice"], body["id"])
        assert not report.get("problem") and report["score"] == report["max_score"], report
    finally:
        started.stop()


def test_a_student_sees_only_their_own_submissions(server):
    alice, bob = server.tokens()["alice"], server.tokens()["bob"]
    status, body, _ = server.upload(alice, NOTHING)
    assert status == 202
    mine = body["id"]
    assert server.call("GET", f"/api/submissions/{mine}", bob)[0] == 404
    assert server.call("GET", "/api/submissions/999999", alice)[0] == 404
    assert server.call("GET", "/api/submissions/abc", alice)[0] == 404
    listed = server.call("GET", "/api/submissions", bob)[1]["submissions"]
    assert mine not in [s["id"] for s in listed]
    assert mine in [s["id"] for s in server.call("GET", "/api/submissions", alice)[1]["submissions"]]


def test_a_file_too_large_gets_413_and_is_not_queued(server):
    token = server.tokens()["dave"]
    status, body, _ = server.upload(token, b"#" * (MAX_UPLOAD + 1))
    assert status == 413 and "too large" in body["error"]
    assert server.call("GET", "/api/submissions", token)[1]["submissions"] == []


def test_a_request_that_is_not_an_upload_gets_400(server):
    token = server.tokens()["dave"]
    status, body, _ = server.call("POST", "/api/submissions", token, b"x = 1", {"Content-Type": "text/plain"})
    assert status == 400 and "multipart" in body["error"]
    status, body, _ = server.upload(token, b"")
    assert status == 400 and "empty" in body["error"]


def test_a_notebook_is_graded_as_its_code_and_a_broken_one_is_turned_down(server):
    token = server.tokens()["hana"]
    cell = {
        "cell_type": "code",
        "metadata": {},
        "source": NOTHING.decode(),
        "outputs": [],
        "execution_count": None,
    }
    notebook = json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()
    status, body, _ = server.upload(token, notebook, filename="my work.ipynb")
    assert status == 202
    graded = server.report(token, body["id"])
    assert graded["score"] == 0 and graded["submission"] == "toy.ipynb"
    status, body, _ = server.upload(token, b'{"cells": [', filename="toy.ipynb")
    assert status == 400 and "notebook" in body["error"] and str(server.data) not in body["error"]
    assert len(server.call("GET", "/api/submissions", token)[1]["submissions"]) == 1


def test_too_many_submissions_in_a_minute_get_429(server):
    token = server.tokens()["carol"]
    for _ in range(PER_MINUTE):
        assert server.upload(token, NOTHING)[0] == 202
    status, body, answered = server.upload(token, NOTHING)
    assert status == 429 and "too many" in body["error"]
    assert int(answered["Retry-After"]) >= 1
    assert server.upload(server.tokens()["bob"], NOTHING)[0] == 202  # another student is not held


def test_the_senders_file_name_is_never_a_path(server):
    token = server.tokens()["bob"]
    status, body, _ = server.upload(token, NOTHING, filename="../../../escaped.py")
    assert status == 202
    server.report(token, body["id"])
    assert not list(server.data.parent.rglob("escaped.py"))
    with sqlite3.connect(server.data / "gradebook.sqlite") as db:
        (file,) = db.execute("SELECT file FROM submissions WHERE id = ?", (body["id"],)).fetchone()
    assert Path(file).name == TOY.filename and Path(file).parent.parent == server.data / "submissions"


def test_check_server_prints_what_check_public_prints_here(attention_server):
    server = attention_server  # the attention lesson: the likely mistake printed is its diagnosis
    token = server.tokens()["gina"]  # a student with submissions left this minute
    remote = python(
        "check",
        "--server",
        server.url,
        *on(ATTENTION),
        str(ATTENTION_TYPICAL),
        env={**os.environ, "GRADER_TOKEN": token},
    )
    local = python("check", "--public", *on(ATTENTION), str(ATTENTION_TYPICAL))
    assert remote.returncode == local.returncode == 1, remote.stderr

    def body(text: str) -> list[str]:  # without the heading, the isolation and the command to run again
        lines = text.splitlines()[1:]
        return [
            line for line in lines if not line.startswith("Isolation:") and "python -m grader" not in line
        ]

    assert body(remote.stdout) == body(local.stdout)
    assert "likely mistake" in remote.stdout and "Total                61/86" in remote.stdout


def test_check_server_says_in_a_sentence_when_the_service_cannot_be_used(server):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    for url, token, said in ((closed, "x", "could not reach"), (server.url, "wrong", "refused your token")):
        run = python("check", "--server", url, "--token", token, *ON_TOY, str(TYPICAL))
        assert run.returncode == 2, run.stderr
        assert said in run.stderr and "Traceback" not in run.stderr + run.stdout
        assert len(run.stderr.strip().splitlines()) == 1
    run = python(
        "check",
        "--server",
        server.url,
        *ON_TOY,
        str(TYPICAL),
        env={**os.environ, "GRADER_TOKEN": ""},
    )
    assert run.returncode == 2 and "token" in run.stderr


def test_check_server_follows_no_redirect_with_the_token():
    """A service that answers with a redirect (moved, or a hostile one) never gets the token sent
    on to where it points, another host perhaps: urllib would send it there."""
    seen: list[str] = []

    class Elsewhere(BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append(self.headers.get("Authorization", ""))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"id": 1, "status": "done", "problem": "reached"}')  # ends the client

        do_POST = do_GET

        def log_message(self, *args):
            pass

    elsewhere = ThreadingHTTPServer(("127.0.0.1", 0), Elsewhere)

    class Moved(Elsewhere):
        def do_POST(self):
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.1:{elsewhere.server_address[1]}{self.path}")
            self.send_header("Content-Length", "0")
            self.end_headers()

    moved = ThreadingHTTPServer(("127.0.0.1", 0), Moved)
    for server in (elsewhere, moved):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{moved.server_address[1]}"
        run = python("check", "--server", url, "--token", "grader_secret", *ON_TOY, str(TYPICAL))
    finally:
        for server in (elsewhere, moved):
            server.shutdown()
            server.server_close()
    assert seen == []
    assert run.returncode == 2 and "redirect" in run.stderr, run.stderr


def test_the_commands_that_grade_run_without_the_web_packages():
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, grader.cli, grader.commands.check, grader.commands.grade; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('starlette', 'uvicorn', 'multipart')))",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=NET,
    )
    assert run.stdout.strip() == "[]", run.stderr


def test_a_link_where_the_tokens_go_is_refused_not_followed(tmp_path):
    (tmp_path / "data").mkdir()
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("kept\n", encoding="utf-8")
    (tmp_path / "data" / "tokens.csv").symlink_to(elsewhere)
    roster = _roster(tmp_path / "roster.csv", ["kim"])
    proc = subprocess.Popen(
        [sys.executable, "-m", "grader", "serve", *ON_TOY, "--data", str(tmp_path / "data")]
        + ["--roster", str(roster), "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    started = proc.stdout.readline().decode()  # its address once serving; nothing once refused
    if started:
        os.killpg(proc.pid, signal.SIGTERM)
    said = proc.stderr.read().decode()
    proc.wait()
    proc.stdout.close()
    proc.stderr.close()
    assert not started and proc.returncode == 2, said
    assert "tokens" in said and "Traceback" not in said, said
    assert elsewhere.read_text(encoding="utf-8") == "kept\n"


def test_serve_without_the_web_packages_says_what_to_install(tmp_path):
    script = (
        "import sys; sys.modules['starlette'] = None; from grader.cli import main; "
        f"sys.exit(main(['serve', *{list(ON_TOY)!r}, '--data', sys.argv[1]]))"
    )
    run = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "data")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=NET,
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert "pip install -e '.[server]'" in run.stderr and "starlette" in run.stderr


def test_killed_with_9_the_service_grades_every_queued_submission_once_after_a_restart(tmp_path):
    roster = _roster(tmp_path / "roster.csv", ["erin"])
    first = Server(tmp_path / "data", roster, "--per-minute", "20")
    token = first.tokens()["erin"]
    ids = [first.upload(token, NOTHING + b"# %d\n" % n)[1]["id"] for n in range(8)]
    database = tmp_path / "data" / "gradebook.sqlite"
    deadline = time.monotonic() + NET
    while first.call("GET", f"/api/submissions/{ids[0]}", token)[1].get("status") in ("queued", "grading"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    first.proc.kill()  # -9 once the first is graded: no goodbye, the one being graded is left so
    first.proc.wait()
    first.stop()
    scratch = tmp_path / "data" / "scratch"  # the grading's temporary files, in the service's folder
    assert scratch.is_dir()
    leftover = scratch / "left-by-the-killed-service"
    leftover.mkdir()
    with sqlite3.connect(database) as db:
        before = dict(db.execute("SELECT id, state FROM submissions"))
        graded = dict(db.execute("SELECT id, graded_at FROM submissions WHERE state = 'done'"))
    assert set(before.values()) - {"done"}, before  # the kill left some to grade
    assert graded, before  # and some graded, which must not be graded again

    again = Server(tmp_path / "data", _roster(tmp_path / "roster2.csv", ["erin", "frank"]))
    try:
        assert again.tokens()["erin"] == token  # a known student keeps their token
        assert not leftover.exists()  # removed at the start: nothing piles up, even after kill -9
        assert "frank" in again.tokens()
        for id_ in ids:
            assert "score" in again.report(token, id_)
        assert again.call("GET", "/api/submissions", again.tokens()["frank"])[0] == 200
    finally:
        again.stop()
    with sqlite3.connect(database) as db:
        after = {
            row[0]: row[1:] for row in db.execute("SELECT id, state, finishes, graded_at FROM submissions")
        }
    assert sorted(after) == sorted(ids)
    assert all(state == "done" and finishes == 1 for state, finishes, _ in after.values()), after
    assert all(after[id_][2] == when for id_, when in graded.items())  # done before: never graded again


# the pages, in a real headless Chromium


class Browser:
    """A headless Chromium driven through its DevTools protocol (one page)."""

    def __init__(self, profile: Path):
        websocket = pytest.importorskip("websocket")
        found = (shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome"))
        chromium = next((b for b in found if b), None)
        if chromium is None:
            pytest.skip("no headless Chromium here (Debian: apt-get install chromium; .ci/run installs it)")
        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}"]
            + ["--remote-debugging-port=0", "--remote-allow-origins=*", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        endpoint = ""
        while not endpoint:  # Chromium says where it listens; a Chromium that ends says nothing more
            line = self.proc.stderr.readline().decode(errors="replace")
            assert line, "Chromium ended before it listened"
            if "DevTools listening on " in line:
                endpoint = line.split("DevTools listening on ")[1].strip()
        # the rest of what it logs is read and dropped: a full pipe would stop it
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()
        port = endpoint.split(":")[2].split("/")[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=NET) as answer:
            page = next(t for t in json.load(answer) if t["type"] == "page")
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=NET, suppress_origin=True)
        self.next_id = 0

    def send(self, method: str, **params) -> dict:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self.next_id:
                assert "error" not in message, message
                return message["result"]

    def run(self, expression: str):
        """The value of a JavaScript expression in the page (a promise is awaited)."""
        answer = self.send("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        assert "exceptionDetails" not in answer, answer
        return answer["result"].get("value")

    def open(self, url: str) -> None:
        self.send("Page.navigate", url=url)
        self.until("document.readyState === 'complete' && !!document.getElementById('token')")

    def until(self, expression: str):
        """The expression's value once it is true (within the net)."""
        deadline = time.monotonic() + NET
        while not (value := self.run(expression)):
            assert time.monotonic() < deadline, f"never true: {expression}"
            time.sleep(0.2)
        return value

    def choose_file(self, selector: str, path: Path) -> None:
        root = self.send("DOM.getDocument")["root"]["nodeId"]
        node = self.send("DOM.querySelector", nodeId=root, selector=selector)["nodeId"]
        self.send("DOM.setFileInputFiles", files=[str(path)], nodeId=node)

    def close(self) -> None:
        self.ws.close()
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.proc.stderr.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    started = Browser(tmp_path_factory.mktemp("chromium"))
    yield started
    started.close()


def test_a_student_hands_in_on_the_page_and_sees_the_report_with_its_pictures(attention_server, browser):
    server = attention_server  # the attention lesson: the pictures and likely mistakes are its own
    browser.open(server.url + "/")
    browser.run(f"document.getElementById('token').value = {json.dumps(server.tokens()['ivy'])}")
    browser.choose_file("#file", ATTENTION_TYPICAL)
    browser.run("document.getElementById('send').click()")
    status = browser.until(
        "(t => /graded|could not|error|token/i.test(t) && t)(document.getElementById('status').textContent)"
    )
    assert status.endswith("graded: 61/86"), status
    frame = "document.getElementById('report')"
    assert browser.run(
        f"{frame}.hasAttribute('sandbox') && {frame}.sandbox.length === 0"
    )  # nothing runs there
    # shown: the status says "graded" as the report is being put in its frame
    browser.until(f"{frame}.getBoundingClientRect().height > 100")
    report = browser.run(f"{frame}.srcdoc")
    assert "wrong-scale" in report and "<svg" in report  # the likely mistake and the pictures
    browser.until("document.querySelectorAll('#submissions tbody tr').length === 1")
    assert "61/86" in browser.run("document.querySelector('#submissions tbody tr').textContent")


def test_the_instructor_sees_the_class_and_exports_it_and_no_name_runs_as_html(server, browser):
    jo = server.tokens()["jo"]
    server.report(jo, server.upload(jo, NOTHING)[1]["id"])
    browser.open(server.url + "/instructor")
    token = (server.data / "instructor_token.txt").read_text(encoding="utf-8").strip()
    assert stat.S_IMODE((server.data / "instructor_token.txt").stat().st_mode) == 0o600
    browser.run(f"document.getElementById('token').value = {json.dumps(token)}")
    browser.run("document.getElementById('load').click()")
    browser.until("/students/.test(document.getElementById('status').textContent)")
    rows = browser.run(
        "[...document.querySelectorAll('#class tbody tr')].map(r => [...r.cells].map(c => c.textContent))"
    )
    by_student = {row[0]: row for row in rows}
    assert set(by_student) == {*STUDENTS, FORMULA}
    assert by_student["jo"][1:] == ["1", "graded", "0/12"] and by_student[MARKUP][2] == "no submission"
    assert browser.run("document.querySelectorAll('img').length") == 0  # the name stayed text
    browser.run("document.getElementById('layout').value = 'canvas'")
    browser.run("document.getElementById('export').click()")
    csv_text = browser.until("document.getElementById('csv').textContent")
    assert csv_text.startswith("Student,ID,SIS User ID,SIS Login ID,Section,toy")
    assert "jo,,,jo,,0" in csv_text.splitlines()
    assert server.call("GET", "/api/class", server.tokens()["alice"])[0] == 403  # a student's token


# a release that names the service


def _release(server: Server, out: Path, typical: Path) -> Path:
    """The release of the server's lesson, its instructor naming that service, ``typical``
    handed in."""
    done = python("release", str(out), *on(server.lesson), "--server", server.url)
    assert done.returncode == 0, done.stderr
    shutil.copy(typical, out / "exercises" / server.lesson.filename)
    return out


@pytest.fixture(scope="module")
def release(server, tmp_path_factory):
    """The release of the toy lesson, its instructor naming the module's service."""
    return _release(server, tmp_path_factory.mktemp("release") / "toy-exercises", TYPICAL)


@pytest.fixture(scope="module")
def attention_release(attention_server, tmp_path_factory):
    """The release of the attention lesson, its instructor naming the attention service."""
    out = tmp_path_factory.mktemp("attention-release") / "attention-exercises"
    return _release(attention_server, out, ATTENTION_TYPICAL)


def test_the_releases_check_grades_through_its_service_given_a_token(attention_server, attention_release):
    # the attention lesson: the likely mistake printed is its diagnosis
    server, release = attention_server, attention_release
    token = server.tokens()["kim"]
    clean = {k: v for k, v in os.environ.items() if k not in ("GRADER_SERVER", "GRADER_TOKEN")}
    done = subprocess.run(
        [sys.executable, "-m", "grader", "check"],
        cwd=release,
        capture_output=True,
        text=True,
        timeout=NET,
        env={**clean, "GRADER_TOKEN": token},
    )
    assert done.returncode == 1, done.stderr
    assert "the grading service's checks (the official visible grade)" in done.stdout
    assert "Total                61/86" in done.stdout and "likely mistake" in done.stdout
    assert "practice score" not in done.stdout + done.stderr
    assert token not in done.stdout + done.stderr


def test_the_releases_workflow_grades_through_the_service_with_the_secret(server, release, tmp_path):
    token = server.tokens()["kim"]
    done, summary, outputs = run_step(release, "grade", tmp_path / "a", secrets={"GRADER_TOKEN": token})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "graded by the course's grading service" in done.stderr
    # the service's visible grade: layer_norm graded on the reference's center_tokens
    assert summary.startswith("## toy: 9/12\n") and "practice score" not in summary
    said = done.stdout + done.stderr + summary + json.dumps(outputs)
    assert token not in said  # the secret is never printed
    # without the secret: the public checks run there, a practice grade, said as such
    done, summary, _ = run_step(release, "grade", tmp_path / "b")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "no token was given" in done.stderr and "practice score" in summary
    # checked without the reference: layer_norm runs the student's own center_tokens
    assert summary.startswith("## toy: 5/12\n")


def test_a_student_is_told_to_submit_again_never_to_run_the_batch_again():
    """A grading process that gives no report says what the batch's user should do ("run the
    batch again"); the service says it to the student who sent the file, in their terms."""
    pytest.importorskip("uvicorn")
    from grader.commands import batch, stream
    from grader.commands.serve import told_to_the_student

    killed = (
        "its process for this submission was killed by signal 9 (SIGKILL); run the batch again to grade it"
    )
    for message in (stream.CHANGED, batch._ours("grading this submission", OSError("disk full")), killed):
        told = told_to_the_student(message)
        assert "run the batch" not in told and told.endswith("this is not your fault: submit again"), told
        assert told.split(";")[0] == message.split(";")[0]
    busy = "unfinished, the machine was too busy: grading took longer than 600 s and was stopped"
    assert told_to_the_student(busy) == busy
