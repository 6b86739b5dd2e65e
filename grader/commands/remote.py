"""The grading service's client: send a file to ``serve`` and wait for its report.

``check --server URL --token TOKEN`` (:mod:`grader.commands.check`) uses it, with the standard
library alone (no web package needed on a student's machine). Every way the service can fail
to answer becomes :class:`ServiceError`, a sentence for the student.
"""

from __future__ import annotations

import functools
import json
import secrets
import time
import urllib.parse
from dataclasses import dataclass

from ..core.inert import one_line, student_strings
from ..core.results import Report
from ..core.service import well_formed
from ..formats.json_report import from_dict

#: Largest answer read from the service, in bytes (a report with its pictures is far smaller).
MAX_ANSWER = 32 << 20
#: Seconds one request may take before the service is called unreachable.
REQUEST_TIMEOUT = 30.0
#: Seconds between two looks at a submission being graded.
POLL = 0.5
#: Seconds the client waits for a report by default before it gives up (the submission stays queued).
WAIT = 600.0
#: The environment variables that stand for ``--server`` and ``--token``.
SERVER_VARIABLE = "GRADER_SERVER"
TOKEN_VARIABLE = "GRADER_TOKEN"


@functools.lru_cache(maxsize=1)
def _opener():
    """How the client opens its requests: as urllib's own, but following no redirect (urllib
    would send the token on to wherever it points, another host included; the redirect is
    answered as an error instead, see :func:`_refusal`). Made on first use: urllib's requests,
    HTTP and TLS are a tenth of the grader's own imports, and a practice ``check`` sends none."""
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, req, fp, code, msg, headers, newurl):
            return None

    return urllib.request.build_opener(NoRedirect())


class ServiceError(Exception):
    """The service could not be used; the message says why, in a sentence."""


class StillGrading(ServiceError):
    """The service holds the submission but had not graded it when the client stopped waiting."""


@dataclass(frozen=True)
class Remote:
    """Where the grading service is, and who asks."""

    server: str
    token: str
    wait: float = WAIT
    practice: bool = False
    """Whether a service that cannot be used leaves the checks to run here, for a practice score
    (the release named the service; nobody asked for it by name)."""
    timeout: float = REQUEST_TIMEOUT
    """Seconds one request may take, its answer read whole."""

    @property
    def base(self) -> str:
        return self.server.rstrip("/")


def in_clear(server: str) -> bool:
    """Whether a token sent to ``server`` crosses a network unencrypted: plain ``http://`` to a
    host other than this machine."""
    parts = urllib.parse.urlsplit(server)
    return parts.scheme == "http" and (parts.hostname or "") not in ("127.0.0.1", "::1", "localhost")


def _request(remote: Remote, method: str, path: str, body: bytes | None = None, headers=None) -> dict:
    """The JSON the service answers to one request; ServiceError for any other outcome."""
    import http.client
    import urllib.error
    import urllib.request

    opener = _opener()
    request = urllib.request.Request(
        remote.base + path,
        data=body,
        method=method,
        headers={"Authorization": f"Bearer {remote.token}", "Accept": "application/json", **(headers or {})},
    )
    try:
        with opener.open(request, timeout=remote.timeout) as answer:
            return _json(_read(answer, remote.timeout))
    except urllib.error.HTTPError as err:
        try:
            said = _json(_read(err, remote.timeout)).get("error", "")
        except ServiceError:
            said = ""
        raise ServiceError(_refusal(err.code, str(said), remote)) from None
    except http.client.HTTPException:  # a status line, headers or a body that HTTP does not allow
        raise ServiceError(
            f"the grading service at {one_line(remote.base)} answered something that is not HTTP; "
            "is the address right?"
        ) from None
    except (urllib.error.URLError, OSError) as err:
        why = getattr(err, "reason", err)
        raise ServiceError(
            f"could not reach the grading service at {one_line(remote.base)} ({one_line(str(why))}); "
            "check the address, or run check without --server for a practice score"
        ) from None


def _read(answer, seconds: float) -> bytes:
    """The body of ``answer``, at most ``MAX_ANSWER + 1`` bytes, read within ``seconds`` in all
    (the socket's timeout bounds each read alone: a service that trickles a byte at a time would
    hold the client for ever)."""
    deadline = time.monotonic() + seconds
    read = bytearray()
    while len(read) <= MAX_ANSWER:
        if time.monotonic() > deadline:
            raise ServiceError(
                f"the grading service took more than {seconds:g} s to send its answer; try again later"
            )
        chunk = answer.read1(min(1 << 16, MAX_ANSWER + 1 - len(read)))
        if not chunk:
            break
        read += chunk
    return bytes(read)


def _json(raw: bytes) -> dict:
    if len(raw) > MAX_ANSWER:
        raise ServiceError("the grading service answered with more than the client reads")
    try:
        body = student_strings(json.loads(raw))
    except (ValueError, RecursionError):  # RecursionError: nested deeper than Python reads
        raise ServiceError(
            "the grading service answered something that is not JSON; is the address right?"
        ) from None
    if not isinstance(body, dict):
        raise ServiceError("the grading service answered something that is not a JSON object")
    return body


def _refusal(status: int, said: str, remote: Remote) -> str:
    """The sentence for a request the service turned down."""
    said = one_line(said)
    if status == 401:
        return f"the grading service refused your token ({said or 'unauthorised'}); check the token you were given"
    if 300 <= status < 400:
        return (
            f"the grading service at {one_line(remote.base)} answered with a redirect (HTTP {status}), "
            "which the client does not follow with your token; give --server the address it moved to"
        )
    if status in (400, 408, 413, 429) and said:
        return f"the grading service turned the file down: {said}"
    return f"the grading service at {one_line(remote.base)} answered HTTP {status}" + (
        f": {said}" if said else ""
    )


def _multipart(field: str, filename: str, data: bytes) -> tuple[bytes, str]:
    """(body, content type) of a form with one file."""
    boundary = "grader-" + secrets.token_hex(16)
    head = (
        f"--{boundary}\r\n"
        f'Content-Disposition: form-data; name="{field}"; filename="{filename}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()
    return head + data + f"\r\n--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def submit(remote: Remote, filename: str, data: bytes) -> int:
    """Send ``data`` as ``filename``; the submission's id."""
    body, kind = _multipart("file", filename, data)
    answer = _request(remote, "POST", "/api/submissions", body, {"Content-Type": kind})
    id_ = answer.get("id")
    if not isinstance(id_, int) or isinstance(id_, bool):
        raise ServiceError("the grading service took the file but gave it no id")
    return id_


def report_of(remote: Remote, id_: int, *, clock=time.monotonic, sleep=time.sleep) -> Report:
    """The report of submission ``id_``, once graded (waiting at most ``remote.wait`` seconds)."""
    deadline = clock() + remote.wait
    while True:
        answer = _request(remote, "GET", f"/api/submissions/{id_}")
        if "tests" in answer:
            try:
                report = from_dict(answer)
            except (KeyError, TypeError, ValueError, AttributeError):
                report = None
            if report is None or not well_formed(report):
                raise ServiceError("the grading service's report could not be read")
            return report
        if answer.get("status") == "done":
            problem = one_line(str(answer.get("problem", ""))) or "no reason given"
            raise ServiceError(f"the grading service could not grade submission {id_}: {problem}")
        if clock() >= deadline:
            raise StillGrading(
                f"the grading service had not graded submission {id_} after {remote.wait:g} s "
                "(it is busy); run check again later to see it"
            )
        sleep(POLL)
