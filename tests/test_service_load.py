"""The grading service under load, on loopback: a real ``serve`` (two grading processes), 10
client threads, each a student sending their share of the submissions (the reference, the
typical mistakes, a bug; each file distinct) and waiting for each report.

Every submission is graded exactly once (the queue's rows, the gradebook), every student sees
their own and no other's, and no request gets a 5xx. The clients are those of
``benchmarks/service.py``. By default 20 submissions; ``GRADER_LOAD_SUBMISSIONS=50`` runs the
issue's full load. No time is compared: every wait is a count of polls that only a service
that hangs for good runs out of.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3

import pytest

from benchmarks.service import KINDS, Service, run_clients

from . import support  # noqa: F401 - the suite's own store of examples, for the service's graders

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

CLIENTS = 10
#: Submissions in all (a multiple of CLIENTS: each student sends the same number).
SUBMISSIONS = int(os.environ.get("GRADER_LOAD_SUBMISSIONS", "20"))
#: Looks at one submission before its client gives up on it, 0.2 s apart: far more than a grade
#: takes at load 10, with every other submission queued before it.
POLLS = 3000


@pytest.fixture(scope="module")
def load(tmp_path_factory):
    """(the service's folder, the clients once all are done, the students' tokens)."""
    students = [f"student{n:02d}" for n in range(CLIENTS)]
    share = SUBMISSIONS // CLIENTS
    service = Service(tmp_path_factory.mktemp("load"), students, "--jobs", "2", "--per-minute", str(share))
    try:
        clients = run_clients(service, students, SUBMISSIONS, polls=POLLS, pause=0.2)
        yield service, clients
    finally:
        service.stop()


def test_the_load_is_what_the_issue_asks_for():
    assert SUBMISSIONS % CLIENTS == 0 and SUBMISSIONS >= 2 * CLIENTS


def test_every_submission_is_answered_and_graded_with_no_server_error(load):
    _, clients = load
    for client in clients:
        assert client.error is None, f"{client.student}: {client.error}"
    assert sum(len(c.sent) for c in clients) == SUBMISSIONS
    statuses = {status for c in clients for status in c.statuses}
    assert statuses <= {200, 202}, statuses  # no 5xx, nor any refusal
    scores: dict[str, set] = {}
    for client in clients:
        assert sorted(client.reports) == sorted(id_ for id_, _, _ in client.sent)
        for id_, kind, _ in client.sent:
            report = client.reports[id_]
            assert "score" in report and report["tests"], report
            scores.setdefault(kind, set()).add((report["score"], report["max_score"]))
    assert set(scores) == {kind for kind, _, _ in KINDS}
    assert all(len(found) == 1 for found in scores.values()), scores  # a file's comment changes nothing
    (right,), (typical,), (bug,) = scores["reference"], scores["typical"], scores["bug"]
    assert right[0] == right[1] and typical[0] < typical[1] and bug[0] < bug[1]


def test_each_submission_is_graded_once_and_each_student_has_their_latest_in_the_gradebook(load):
    service, clients = load
    with sqlite3.connect(service.data / "gradebook.sqlite") as db:
        rows = {
            row[0]: row[1:]
            for row in db.execute("SELECT id, student, state, claims, finishes, file_hash FROM submissions")
        }
        book = {row[0]: row[1:] for row in db.execute("SELECT student, file_hash, score, status FROM grades")}
    sent = {id_: (c.student, data) for c in clients for id_, _, data in c.sent}
    assert sorted(rows) == sorted(sent)
    assert len({file_hash for *_, file_hash in rows.values()}) == SUBMISSIONS  # all distinct files
    for id_, (student, state, claims, finishes, file_hash) in rows.items():
        assert (student, state, claims, finishes) == (sent[id_][0], "done", 1, 1), id_
        assert file_hash == hashlib.sha256(sent[id_][1]).hexdigest(), id_
    assert sorted(book) == sorted(c.student for c in clients)
    for client in clients:
        latest, _, data = client.sent[-1]
        file_hash, score, status = book[client.student]
        assert (file_hash, status) == (hashlib.sha256(data).hexdigest(), "graded")
        assert score == client.reports[latest]["score"]


def test_every_student_sees_their_own_submissions_and_no_other(load):
    service, clients = load
    for client in clients:
        token = service.tokens[client.student]
        status, listed = service.call("GET", "/api/submissions", token)
        assert status == 200
        assert sorted(s["id"] for s in listed["submissions"]) == sorted(id_ for id_, _, _ in client.sent)
        for other in clients:
            if other is not client:
                status, body = service.call("GET", f"/api/submissions/{other.sent[0][0]}", token)
                assert status == 404, body
                assert json.dumps(body).find(other.student) < 0
