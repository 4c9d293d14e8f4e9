"""Callers that never send their request, idle connections, and bursts of big requests.

64 calls that open and never send a request, and 100 idle connections, must not hold the
workers other clients need; a burst of big requests beyond the in-flight byte cap is
refused with RESOURCE_EXHAUSTED, stores nothing, and is served once there is room.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Executor, Future
from pathlib import Path

import grpc
import pytest

from deniable.aggregator.server._lifecycle import RunningServer, ServerLimits, start_server
from deniable.aggregator.server._service import PreparedBatch
from deniable.aggregator.storage import SubmitOutcome, open_storage
from deniable.client._remote import AggregatorClient, RemoteError
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import ADMIN_TOKEN, binary_question

STALLED = 64
IDLE = 100
HANG_GUARD = 60.0  # seconds: only so that a starved server fails the test instead of hanging
SUBMIT = "/deniable.v1.Aggregator/SubmitReports"
OWN_CONNECTION = [("grpc.use_local_subchannel_pool", 1)]


def reports(survey: pb.Survey, prefix: str, n: int) -> list[pb.Report]:
    question = survey.questions[0]
    return [
        pb.Report(report_id=f"{prefix}{i:07d}", survey_id=survey.id, question_id=question.id,
                  mechanism=question.mechanism, bit=i % 2 == 0)
        for i in range(n)
    ]  # fmt: skip


def serve(tmp_path: Path, limits: ServerLimits) -> RunningServer:
    storage = open_storage(f"sqlite:///{tmp_path / 'agg.db'}")
    return start_server(storage, ADMIN_TOKEN, "127.0.0.1:0", limits=limits)


@pytest.fixture
def stalling(tmp_path: Path) -> Iterator[RunningServer]:
    running = serve(tmp_path, ServerLimits(workers=16))
    yield running
    running.stop(grace=0)


def test_calls_that_never_send_their_request_and_idle_connections_starve_nobody(
    stalling: RunningServer,
) -> None:
    release = threading.Event()

    def never() -> Iterator[bytes]:
        release.wait(HANG_GUARD)  # sends nothing until the end of the test
        return
        yield b""  # a generator that yields nothing

    channels = [  # each a connection of its own (a process's channels share one otherwise)
        grpc.insecure_channel(stalling.address, options=OWN_CONNECTION)
        for _ in range(STALLED // 16 + IDLE)
    ]
    try:
        stalled = []
        for index in range(STALLED):  # 16 calls per connection (its limit), on 4 connections
            call: grpc.StreamUnaryMultiCallable[bytes, pb.SubmitReportsResponse]
            call = channels[index // 16].stream_unary(
                SUBMIT, None, pb.SubmitReportsResponse.FromString
            )
            stalled.append(call.future(never()))
        for channel in channels[STALLED // 16 :]:
            grpc.channel_ready_future(channel).result(timeout=HANG_GUARD)  # idle, connected
        # Everyone else is served as usual: an admin call, batches, an estimate.
        with AggregatorClient(stalling.address, admin_token=ADMIN_TOKEN, attempts=1,
                              timeout=HANG_GUARD) as client:  # fmt: skip
            survey = client.create_survey("Stalled", [binary_question("q")])
            for k in range(32):  # more calls than there are workers
                assert client.submit_reports(reports(survey, f"b{k}-", 100)).stored == 100
            assert client.get_estimate(survey.id, "q").n == 3200
        assert not any(call.done() for call in stalled)  # they were stalled all along
    finally:
        release.set()
        for channel in channels:
            channel.close()


def test_a_burst_beyond_the_in_flight_byte_cap_is_refused_and_stores_nothing(
    tmp_path: Path,
) -> None:
    cap = 600_000
    limits = ServerLimits(workers=2, max_message_bytes=cap, max_inflight_bytes=cap)
    running = serve(tmp_path, limits)
    entered, release = threading.Event(), threading.Event()
    store = running.service.store_reports

    def held(
        prepared: PreparedBatch, executor: Executor, *, alone: bool = False
    ) -> Future[SubmitOutcome]:
        entered.set()

        def later() -> SubmitOutcome:
            release.wait(HANG_GUARD)  # the first big batch stays in flight until released
            return store(prepared, executor).result(HANG_GUARD)

        return executor.submit(later)

    try:
        with AggregatorClient(running.address, admin_token=ADMIN_TOKEN, attempts=1,
                              timeout=HANG_GUARD) as client:  # fmt: skip
            survey = client.create_survey("Burst", [binary_question("q")])
            first, second = reports(survey, "a", 9000), reports(survey, "b", 9000)
            size = pb.SubmitReportsRequest(reports=first).ByteSize()
            assert cap / 2 < size < cap  # one fits under the cap, two do not
            running.service.store_reports = held  # type: ignore[method-assign]
            outcome: list[pb.SubmitReportsResponse] = []
            sender = threading.Thread(target=lambda: outcome.append(client.submit_reports(first)))
            sender.start()
            assert entered.wait(HANG_GUARD)
            with pytest.raises(RemoteError) as refused:
                client.submit_reports(second)
            assert refused.value.code == "RESOURCE_EXHAUSTED"
            assert refused.value.details.startswith(
                f"SubmitReports: the aggregator is handling {size:,} bytes of requests, and "
                f"this one ({size:,} bytes) would take it past its limit of {cap:,} "
                "(--max-inflight-bytes); nothing done, retry later"
            )
            small = client.get_survey(survey.id)  # small requests still fit: served
            assert small.reports == 0  # the refused batch stored nothing
            release.set()
            sender.join(HANG_GUARD)
            assert outcome[0].stored == 9000
            running.service.store_reports = store  # type: ignore[method-assign]
            assert client.submit_reports(second).stored == 9000  # room again
            assert client.get_estimate(survey.id, "q").n == 18000
            assert running.admission is not None
            assert running.admission.held == 0
    finally:
        release.set()
        running.stop(grace=0)
