"""A recording fake aggregator: a real gRPC server on 127.0.0.1:0 that serves given surveys."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import grpc

from deniable.shared.wire.v1 import aggregator_pb2 as pb
from deniable.shared.wire.v1 import aggregator_pb2_grpc as pb_grpc

Metadata = tuple[tuple[str, str | bytes], ...]


@dataclass(frozen=True)
class Call:
    """One RPC as the server received it: method, request bytes and invocation metadata."""

    method: str
    request: bytes
    metadata: Metadata


@dataclass
class RecordingAggregator:
    """Serves ``surveys`` as they are (even ones a real aggregator would reject) and records.

    ``fail_submits`` makes that many SubmitReports calls fail with UNAVAILABLE first;
    ``submit_error`` makes every SubmitReports fail with that status and message.
    """

    surveys: dict[str, pb.Survey]
    fail_submits: int = 0
    submit_error: tuple[grpc.StatusCode, str] | None = None
    calls: list[Call] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _record(self, method: str, request: object, context: grpc.ServicerContext) -> None:
        metadata = tuple((key, value) for key, value in context.invocation_metadata())
        with self._lock:
            self.calls.append(Call(method, request.SerializeToString(), metadata))  # type: ignore[attr-defined]

    def GetSurvey(  # noqa: N802 - the RPC's name
        self, request: pb.GetSurveyRequest, context: grpc.ServicerContext
    ) -> pb.Survey:
        self._record("GetSurvey", request, context)
        if request.survey_id not in self.surveys:
            context.abort(grpc.StatusCode.NOT_FOUND, f"unknown survey {request.survey_id!r}")
        return self.surveys[request.survey_id]

    def SubmitReports(  # noqa: N802 - the RPC's name
        self, request: pb.SubmitReportsRequest, context: grpc.ServicerContext
    ) -> pb.SubmitReportsResponse:
        self._record("SubmitReports", request, context)
        with self._lock:
            failing = self.fail_submits > 0
            self.fail_submits -= failing
        if failing:
            context.abort(grpc.StatusCode.UNAVAILABLE, "recording aggregator: try again")
        if self.submit_error is not None:
            context.abort(*self.submit_error)
        return pb.SubmitReportsResponse(stored=len(request.reports))

    def ListSurveys(  # noqa: N802 - the RPC's name
        self, request: pb.ListSurveysRequest, context: grpc.ServicerContext
    ) -> pb.ListSurveysResponse:
        self._record("ListSurveys", request, context)
        return pb.ListSurveysResponse(surveys=list(self.surveys.values()))

    def __getattr__(self, method: str) -> Any:
        """Every other RPC of the service: UNIMPLEMENTED."""
        if not method[:1].isupper():
            raise AttributeError(method)

        def unimplemented(request: object, context: grpc.ServicerContext) -> None:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, f"{method} is not recorded")

        return unimplemented

    def of(self, method: str) -> list[Call]:
        """The calls of one method, in order."""
        with self._lock:
            return [call for call in self.calls if call.method == method]

    def submitted(self) -> list[pb.SubmitReportsRequest]:
        """Every SubmitReports request received (failed ones included)."""
        return [pb.SubmitReportsRequest.FromString(c.request) for c in self.of("SubmitReports")]


@contextmanager
def recording_aggregator(surveys: Sequence[pb.Survey]) -> Iterator[tuple[RecordingAggregator, str]]:
    """Run a :class:`RecordingAggregator` on 127.0.0.1 with an OS-chosen port."""
    servicer = RecordingAggregator({survey.id: survey for survey in surveys})
    server = grpc.server(ThreadPoolExecutor(max_workers=4))
    pb_grpc.add_AggregatorServicer_to_server(cast(Any, servicer), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield servicer, f"127.0.0.1:{port}"
    finally:
        server.stop(grace=None)


def open_survey(survey_id: str, *questions: pb.Question) -> pb.Survey:
    """An open survey with ``questions``, as an aggregator would send it."""
    return pb.Survey(
        id=survey_id, title="Recorded", state=pb.SURVEY_STATE_OPEN, questions=questions
    )
