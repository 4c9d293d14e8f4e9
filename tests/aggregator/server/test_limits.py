"""Server limits: batch and message size, concurrent calls, deadlines, keepalive, validation."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, NoReturn, cast

import grpc
import pytest

from deniable.aggregator.server._admission import Admission
from deniable.aggregator.server._lifecycle import RunningServer, start_server
from deniable.aggregator.server._limits import LimitError, ServerLimits
from deniable.aggregator.server._service import AggregatorService
from deniable.aggregator.server._servicer import AggregatorServicer
from deniable.aggregator.storage import Submission, SubmitOutcome
from deniable.aggregator.storage.sqlite import SqliteStorage
from deniable.client._remote import AggregatorClient, RemoteError
from deniable.shared.transport import CHANNEL_KEEPALIVE, MAX_MESSAGE_BYTES
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import ADMIN_TOKEN, binary_question

Code = grpc.StatusCode
HANG_GUARD = 30.0  # seconds; only so that a broken server fails the test instead of hanging


class GatedStorage(SqliteStorage):
    """SQLite storage whose ``submit`` holds each call until the test opens ``gate``."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.gate = threading.Event()
        self.entered = threading.Semaphore(0)  # released as each submit starts waiting
        self.finished = threading.Semaphore(0)  # released as each submit returns
        self.seen: list[bytes] = []  # the report ids of every submit that reached storage

    def submit_async(
        self, submission: Submission, executor: Executor, *, alone: bool = False
    ) -> Future[SubmitOutcome]:
        return executor.submit(self.submit, submission)  # on a worker, like PostgreSQL's

    def submit(self, submission: Submission) -> SubmitOutcome:
        self.seen.extend(submission.report_ids)
        self.entered.release()
        assert self.gate.wait(HANG_GUARD)
        try:
            return super().submit(submission)
        finally:
            self.finished.release()


def serve(tmp_path: Path, limits: ServerLimits, *, gated: bool = False) -> RunningServer:
    path = str(tmp_path / "limits.db")
    storage = GatedStorage(path) if gated else SqliteStorage(path)
    return start_server(storage, ADMIN_TOKEN, "127.0.0.1:0", limits=limits)


@pytest.fixture
def running(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunningServer]:
    limits, gated = request.param
    server = serve(tmp_path, limits, gated=gated)
    yield server
    if isinstance(server.storage, GatedStorage):
        server.storage.gate.set()
    server.stop(grace=1.0)


def new_survey(running: RunningServer) -> pb.Survey:
    """Created in process, so that no RPC counts against the limits under test."""
    request = pb.CreateSurveyRequest(title="Limits", questions=[binary_question("q")])
    return running.service.create_survey(request)


def batch(
    survey: pb.Survey, prefix: str, count: int = 3, id_length: int = 8
) -> pb.SubmitReportsRequest:
    question = survey.questions[0]
    return pb.SubmitReportsRequest(
        reports=[
            pb.Report(
                report_id=f"{prefix}{i}".ljust(id_length, "x"), survey_id=survey.id,
                question_id="q", mechanism=question.mechanism, bit=i % 2 == 0,
            )
            for i in range(count)
        ]
    )  # fmt: skip


def stored(running: RunningServer, survey: pb.Survey) -> int:
    found = running.storage.get_survey(survey.id)
    assert found is not None
    return found.reports


def ids(request: pb.SubmitReportsRequest) -> set[bytes]:
    return {report.report_id.encode() for report in request.reports}


# --- size limits -------------------------------------------------------------------------


@pytest.mark.parametrize("running", [(ServerLimits(max_batch=5), False)], indirect=True)
def test_batch_over_max_batch_is_refused_and_stores_nothing(running: RunningServer) -> None:
    survey = new_survey(running)
    assert running.service.max_batch == 5
    with AggregatorClient(running.address, attempts=1) as client:
        with pytest.raises(RemoteError) as caught:
            client.submit_reports(batch(survey, "big", 6).reports)
        assert caught.value.status == Code.RESOURCE_EXHAUSTED
        assert "batch of 6 exceeds the limit of 5" in caught.value.details
        assert stored(running, survey) == 0
        assert client.submit_reports(batch(survey, "ok", 5).reports).stored == 5
    assert stored(running, survey) == 5


@pytest.mark.parametrize("running", [(ServerLimits(max_message_bytes=4096), False)], indirect=True)
def test_message_over_max_message_bytes_is_refused_and_stores_nothing(
    running: RunningServer,
) -> None:
    survey = new_survey(running)
    big = batch(survey, "big", 40, id_length=100)
    assert big.ByteSize() > 4096
    with AggregatorClient(running.address, attempts=1) as client:
        with pytest.raises(RemoteError) as caught:
            client.submit_reports(big.reports)
        assert caught.value.status == Code.RESOURCE_EXHAUSTED
        assert stored(running, survey) == 0
        small = batch(survey, "small", 3)
        assert small.ByteSize() < 4096
        assert client.submit_reports(small.reports).stored == 3
    assert stored(running, survey) == 3


# --- concurrency and deadlines -------------------------------------------------------------


@pytest.mark.parametrize(
    "running", [(ServerLimits(workers=2, max_concurrent_rpcs=2), True)], indirect=True
)
def test_calls_beyond_max_concurrent_rpcs_are_refused(running: RunningServer) -> None:
    storage = cast(GatedStorage, running.storage)
    survey = new_survey(running)
    held = [batch(survey, prefix) for prefix in ("a", "b")]
    extra = batch(survey, "c")
    with AggregatorClient(running.address, attempts=1) as client:
        calls = []
        for request in held:
            calls.append(client.stub.SubmitReports.future(request, timeout=HANG_GUARD))
            assert storage.entered.acquire(timeout=HANG_GUARD)  # in flight, holding a slot
        with pytest.raises(grpc.RpcError) as caught:
            client.stub.SubmitReports(extra, timeout=HANG_GUARD)
        assert cast(grpc.Call, caught.value).code() == Code.RESOURCE_EXHAUSTED
        storage.gate.set()
        assert [call.result(timeout=HANG_GUARD).stored for call in calls] == [3, 3]
    assert stored(running, survey) == 6
    assert not ids(extra) & set(storage.seen)


@pytest.mark.parametrize(
    "running", [(ServerLimits(workers=1, max_concurrent_rpcs=8), True)], indirect=True
)
def test_call_whose_deadline_expired_in_the_queue_is_not_stored(running: RunningServer) -> None:
    storage = cast(GatedStorage, running.storage)
    survey = new_survey(running)
    first, late = batch(survey, "first"), batch(survey, "late")
    with AggregatorClient(running.address, attempts=1) as client:
        blocking = client.stub.SubmitReports.future(first, timeout=HANG_GUARD)
        assert storage.entered.acquire(timeout=HANG_GUARD)  # the only worker is busy
        queued = client.stub.SubmitReports.future(late, timeout=0.5)
        assert cast(grpc.Call, queued.exception(timeout=HANG_GUARD)).code() == (
            Code.DEADLINE_EXCEEDED
        )
        storage.gate.set()
        assert blocking.result(timeout=HANG_GUARD).stored == 3
        # One worker takes calls in order: this one runs after the expired call's turn.
        client.stub.GetSurvey(pb.GetSurveyRequest(survey_id=survey.id), timeout=HANG_GUARD)
    assert stored(running, survey) == 3
    assert not ids(late) & set(storage.seen)


@pytest.mark.parametrize("running", [(ServerLimits(), True)], indirect=True)
def test_deadline_passing_during_the_commit_still_commits(running: RunningServer) -> None:
    storage = cast(GatedStorage, running.storage)
    survey = new_survey(running)
    request = batch(survey, "slow")
    with AggregatorClient(running.address, attempts=1) as client:
        call = client.stub.SubmitReports.future(request, timeout=1.0)
        assert storage.entered.acquire(timeout=HANG_GUARD)  # the handler runs...
        error = cast(grpc.Call, call.exception(timeout=HANG_GUARD))
        assert error.code() == Code.DEADLINE_EXCEEDED  # ...past the client's deadline
        storage.gate.set()
        assert storage.finished.acquire(timeout=HANG_GUARD)
        assert stored(running, survey) == 3
        retry = client.submit_reports(request.reports)  # the client's retry, same ids
        assert (retry.stored, retry.already_stored) == (0, 3)
    assert stored(running, survey) == 3


class AbortedError(Exception):
    pass


class ExpiredContext:
    """The part of ``grpc.ServicerContext`` the servicer uses, with a chosen time left."""

    def __init__(self, remaining: float) -> None:
        self.remaining = remaining
        self.code: grpc.StatusCode | None = None
        self.details = ""

    def time_remaining(self) -> float:
        return self.remaining

    async def abort(self, code: grpc.StatusCode, details: str) -> NoReturn:
        self.code, self.details = code, details
        raise AbortedError(details)


@pytest.mark.parametrize("remaining", [0.0, 0.001])
def test_servicer_skips_a_call_whose_deadline_has_passed(tmp_path: Path, remaining: float) -> None:
    storage = SqliteStorage(str(tmp_path / "servicer.db"))
    service = AggregatorService(storage)
    executor = ThreadPoolExecutor(max_workers=1)
    servicer = AggregatorServicer(service, executor, Admission(1 << 20))
    submit = servicer.handler("SubmitReports", pb.SubmitReportsRequest)
    get_survey = servicer.handler("GetSurvey", pb.GetSurveyRequest)
    survey = service.create_survey(
        pb.CreateSurveyRequest(title="Deadline", questions=[binary_question("q")])
    )
    data = batch(survey, "d").SerializeToString()
    context = ExpiredContext(remaining)
    with pytest.raises(AbortedError):
        asyncio.run(submit(data, cast(Any, context)))
    assert context.code == Code.DEADLINE_EXCEEDED
    assert "SubmitReports" in context.details
    assert "nothing done" in context.details
    assert storage.get_survey(survey.id).reports == 0  # type: ignore[union-attr]
    request = pb.GetSurveyRequest(survey_id=survey.id).SerializeToString()
    with pytest.raises(AbortedError):
        asyncio.run(get_survey(request, cast(Any, context)))
    assert asyncio.run(submit(data, cast(Any, ExpiredContext(5.0)))).stored == 3
    assert storage.get_survey(survey.id).reports == 3  # type: ignore[union-attr]
    executor.shutdown()
    storage.close()


# --- validation and keepalive --------------------------------------------------------------


@pytest.mark.parametrize(
    "field", ["max_message_bytes", "max_batch", "max_concurrent_rpcs", "workers",
              "keepalive_time_ms", "min_ping_interval_ms", "max_connection_idle_ms",
              "max_inflight_bytes", "max_connections", "calls_per_connection",
              "stream_window_bytes"],
)  # fmt: skip
@pytest.mark.parametrize("value", [0, -1, 2**31])
def test_limits_out_of_range_name_the_field_and_value(field: str, value: int) -> None:
    with pytest.raises(LimitError) as caught:
        ServerLimits(**{field: value})
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}: ")
    assert f"got {value}" in str(caught.value)


@pytest.mark.parametrize("value", [True, 1.5, "8"])
def test_limits_must_be_integers(value: object) -> None:
    with pytest.raises(LimitError, match=rf"^workers: must be an integer, got {value!r}"):
        ServerLimits(workers=value)  # type: ignore[arg-type]


def test_tiny_messages_and_impolite_ping_policies_are_refused() -> None:
    with pytest.raises(LimitError, match="max_message_bytes: must be at least 1024, got 1000"):
        ServerLimits(max_message_bytes=1000)
    with pytest.raises(LimitError, match=r"min_ping_interval_ms: 30001 .* too_many_pings"):
        ServerLimits(min_ping_interval_ms=30_001)
    with pytest.raises(LimitError, match="stream_window_bytes: must be at least 1024, got 100"):
        ServerLimits(stream_window_bytes=100)
    with pytest.raises(LimitError, match=r"max_inflight_bytes: .* largest message, 8388608 "):
        ServerLimits(max_message_bytes=8 << 20, max_inflight_bytes=4 << 20)


def test_server_accepts_the_pings_our_clients_send() -> None:
    """The server never answers deniable's own keepalive pings with GOAWAY too_many_pings."""
    client = dict(CHANNEL_KEEPALIVE)
    server = dict(ServerLimits().channel_options())
    assert (
        server["grpc.http2.min_ping_interval_without_data_ms"] <= client["grpc.keepalive_time_ms"]
    )
    if client["grpc.keepalive_permit_without_calls"]:  # pings between calls must be allowed
        assert server["grpc.keepalive_permit_without_calls"] == 1
    assert server["grpc.http2.max_ping_strikes"] >= 1
    assert client["grpc.keepalive_timeout_ms"] < client["grpc.keepalive_time_ms"]
    # The client accepts at least what the server may send (8 MiB against 4 MiB), so a
    # reply the server may send is never refused by our client.
    assert server["grpc.max_send_message_length"] <= MAX_MESSAGE_BYTES
