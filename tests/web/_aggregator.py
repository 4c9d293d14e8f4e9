"""A recording aggregator on 127.0.0.1:0 that speaks the web port's Connect protocol.

It serves the committed page as the daemon does (``/``, ``/s/ID``, ``/static/...`` with the
daemon's Content-Security-Policy) and answers ``GetSurvey``, ``ListSurveys`` and
``SubmitReports`` (unary, binary or JSON) from surveys a test sets, which may be what a real
daemon refuses to store (control characters, a question changed under the same id). It
records every report it receives, and can fail calls on demand.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

from deniable.aggregator.server.web import CSP
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.web._static import page_file

_STATUS = {"not_found": 404, "failed_precondition": 400, "invalid_argument": 400,
           "unavailable": 503, "already_exists": 409, "internal": 500}  # fmt: skip


@dataclass
class Recorder:
    """The surveys served and the reports received; set ``fail`` to fail calls."""

    surveys: dict[str, pb.Survey] = field(default_factory=dict)
    received: list[pb.Report] = field(default_factory=list)
    stored: dict[str, pb.Report] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    fail: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Method name to a Connect error (code, message) it answers with."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, survey: pb.Survey) -> None:
        """Serve ``survey`` (replacing one of the same id: a changed survey)."""
        with self.lock:
            self.surveys[survey.id] = survey

    def submitted(self) -> list[pb.Report]:
        """Every report received, resends included, in order."""
        with self.lock:
            return list(self.received)

    def answer(
        self, method: str, body: bytes, binary: bool
    ) -> tuple[int, Message | dict[str, str]]:
        """The status and the message (or Connect error) of one call."""
        with self.lock:
            self.calls.append(method)
            if method in self.fail:
                code, message = self.fail[method]
                return _STATUS.get(code, 500), {"code": code, "message": message}
            if method == "ListSurveys":
                open_ = [s for s in self.surveys.values() if s.state == pb.SURVEY_STATE_OPEN]
                return 200, pb.ListSurveysResponse(surveys=open_)
            if method == "GetSurvey":
                request = _parse(pb.GetSurveyRequest(), body, binary)
                if request.survey_id not in self.surveys:
                    message = f"survey {request.survey_id!r} not found"
                    return 404, {"code": "not_found", "message": message}
                return 200, self.surveys[request.survey_id]
            if method == "SubmitReports":
                submit = _parse(pb.SubmitReportsRequest(), body, binary)
                fresh = [r for r in submit.reports if r.report_id not in self.stored]
                self.received.extend(submit.reports)
                for report in fresh:
                    self.stored[report.report_id] = report
                stored = pb.SubmitReportsResponse(
                    stored=len(fresh), already_stored=len(submit.reports) - len(fresh)
                )
                return 200, stored
            return 404, {"code": "unimplemented", "message": f"no method {method}"}


def _parse(message: Any, body: bytes, binary: bool) -> Any:
    if binary:
        message.ParseFromString(body)
    else:
        json_format.Parse(body.decode("utf-8"), message)
    return message


def _handler(recorder: Recorder) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Content-Security-Policy", CSP)
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            found = page_file(self.path.split("?", 1)[0])
            if found is None:
                self._send(404, "text/plain", b"not found")
            else:
                self._send(200, *found)

        def do_POST(self) -> None:
            method = self.path.removeprefix("/deniable.v1.Aggregator/")
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            binary = self.headers.get("Content-Type", "") == "application/proto"
            status, answer = recorder.answer(method, body, binary)
            if isinstance(answer, dict):
                self._send(status, "application/json", json.dumps(answer).encode())
            elif binary:
                self._send(status, "application/proto", answer.SerializeToString())
            else:
                self._send(status, "application/json", json_format.MessageToJson(answer).encode())

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

    return Handler


@contextmanager
def recording_aggregator() -> Iterator[tuple[Recorder, str]]:
    """A recorder and its base URL (``http://127.0.0.1:PORT``), served until the block ends."""
    recorder = Recorder()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(recorder))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield recorder, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
