"""ExportReports against a real server on 127.0.0.1:0: every stored report once, streamed."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

import grpc
import pytest

from deniable.aggregator.server import _servicer, _streaming
from deniable.aggregator.server._export import CHUNK_BYTES, MAX_EXPORTS, export_chunks
from deniable.aggregator.server._lifecycle import RunningServer, ServerLimits, start_server
from deniable.aggregator.storage import open_storage
from deniable.client._remote import AggregatorClient, RemoteError
from deniable.shared.errors import ResourceExhausted, Unavailable
from deniable.shared.questions import categorical_mechanism
from deniable.shared.transport import MAX_MESSAGE_BYTES
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import ADMIN_TOKEN, binary_question

Code = grpc.StatusCode
HANG_GUARD = 60.0  # seconds: only a guard against a hang, never a speed limit
EXPORT = "/deniable.v1.Aggregator/ExportReports"


@pytest.fixture(params=["sqlite", "postgres"])
def running(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunningServer]:
    """A real aggregator on a fresh database of each backend."""
    if request.param == "postgres":
        url = str(request.getfixturevalue("postgres_url"))
    else:
        url = f"sqlite:///{tmp_path / 'aggregator.db'}"
    server = start_server(open_storage(url), ADMIN_TOKEN, "127.0.0.1:0")
    yield server
    server.stop(grace=1.0)


@pytest.fixture
def operator(running: RunningServer) -> Iterator[AggregatorClient]:
    with AggregatorClient(running.address, admin_token=ADMIN_TOKEN, attempts=1) as client:
        yield client


def choice_question() -> pb.Question:
    return pb.Question(
        id="colour",
        text="Colour?",
        categorical=pb.CategoricalQuestion(options=["red", "green", "blue"]),
        mechanism=categorical_mechanism("grr", 3, alpha=0.5).to_message(),
    )


def new_survey(client: AggregatorClient, title: str = "Export") -> pb.Survey:
    return client.create_survey(title, [binary_question("q"), choice_question()])


def yes_no(survey: pb.Survey, prefix: str, count: int, width: int = 0) -> list[pb.Report]:
    """``count`` yes/no reports, ids ``prefix`` + a number padded to ``width`` digits."""
    mechanism = survey.questions[0].mechanism
    return [
        pb.Report(
            report_id=f"{prefix}{i:0{width}d}",
            survey_id=survey.id,
            question_id="q",
            mechanism=mechanism,
            bit=i % 3 == 0,
        )
        for i in range(count)
    ]


def choices(survey: pb.Survey, prefix: str, count: int) -> list[pb.Report]:
    mechanism = survey.questions[1].mechanism
    return [
        pb.Report(
            report_id=f"{prefix}{i}",
            survey_id=survey.id,
            question_id="colour",
            mechanism=mechanism,
            option_fixed=i % 3,
        )
        for i in range(count)
    ]


def exported(client: AggregatorClient, survey_id: str) -> list[pb.Report]:
    return [report for chunk in client.export_reports(survey_id) for report in chunk.reports]


def test_every_stored_report_once_in_commit_order(operator: AggregatorClient) -> None:
    survey, other = new_survey(operator), new_survey(operator, "Other")
    first = yes_no(survey, "a", 5)  # a compact row
    mixed = [*choices(survey, "c", 3), *yes_no(survey, "m", 2)]  # a canonical row
    resent = [*first[:3], *yes_no(survey, "n", 2)]  # only the two new reports are stored
    repeated = [*choices(survey, "d", 2), choices(survey, "d", 1)[0]]  # a repeat inside
    spanning = [*yes_no(other, "o", 2), *yes_no(survey, "s", 1)]  # two surveys' rows
    for batch in (first, mixed, resent, repeated, spanning):
        operator.submit_reports(batch)
    operator.submit_reports(first)  # stores nothing: no row
    expected = [*first, *mixed, *resent[3:], *repeated[:2], spanning[2]]
    assert exported(operator, survey.id) == expected
    assert exported(operator, other.id) == spanning[:2]
    assert operator.get_survey(survey.id).reports == len(expected)


def test_an_empty_survey_streams_nothing_and_a_closed_one_exports(
    operator: AggregatorClient,
) -> None:
    survey = new_survey(operator)
    assert list(operator.export_reports(survey.id)) == []
    reports = [*yes_no(survey, "r", 4), *choices(survey, "c", 2)]
    operator.submit_reports(reports)
    operator.close_survey(survey.id)
    assert exported(operator, survey.id) == reports


def test_unknown_surveys_are_not_found_before_any_message(operator: AggregatorClient) -> None:
    for survey_id in ("0123456789abcdef", "", "NOT-AN-ID", "x" * 10_000):
        stream = operator.export_reports(survey_id)
        with pytest.raises(RemoteError) as caught:
            next(stream)
        assert caught.value.status == Code.NOT_FOUND
        assert "survey_id: unknown survey" in caught.value.details


def test_the_admin_token_is_required_as_for_the_other_admin_calls(
    running: RunningServer, operator: AggregatorClient
) -> None:
    survey = new_survey(operator)
    operator.submit_reports(yes_no(survey, "r", 3))
    for token in (None, "wrong-token", ADMIN_TOKEN + "x"):
        with AggregatorClient(running.address, admin_token=token, attempts=1) as client:
            with pytest.raises(RemoteError) as closing:
                client.close_survey(survey.id)
            with pytest.raises(RemoteError) as exporting:
                list(client.export_reports(survey.id))
            assert exporting.value.status == closing.value.status == Code.UNAUTHENTICATED
            assert exporting.value.details == closing.value.details
    assert len(exported(operator, survey.id)) == 3


def test_bytes_that_are_not_a_request_are_invalid(
    running: RunningServer, operator: AggregatorClient
) -> None:
    survey = new_survey(operator)
    operator.submit_reports(yes_no(survey, "r", 3))
    valid = pb.ExportReportsRequest(survey_id=survey.id).SerializeToString()
    admin = (("authorization", f"Bearer {ADMIN_TOKEN}"),)
    with grpc.insecure_channel(running.address) as channel:
        export: grpc.UnaryStreamMultiCallable[bytes, bytes] = channel.unary_stream(EXPORT)
        for garbage in (b"\xff\xff\xff", valid[:-3], b"\x0a\x80"):
            with pytest.raises(grpc.RpcError) as caught:
                list(export(garbage, timeout=HANG_GUARD, metadata=admin))
            assert caught.value.code() == Code.INVALID_ARGUMENT
            assert "request: not a valid deniable.v1.ExportReportsRequest" in str(
                caught.value.details()
            )
        chunks = list(export(valid, timeout=HANG_GUARD, metadata=admin))  # raw bytes: the wire
    assert len(pb.ExportReportsResponse.FromString(b"".join(chunks)).reports) == 3
    assert operator.get_survey(survey.id).reports == 3  # nothing changed


# --- streaming: chunks, the executor, cancellation (SQLite only: the same servicer) -----


def test_chunks_are_whole_batches_of_about_one_mebibyte(admin: AggregatorClient) -> None:
    survey = new_survey(admin)
    small = [yes_no(survey, f"b{b:02d}-", 1000, 32) for b in range(30)]  # ~78 KB each
    big = yes_no(survey, "x" * 120, 10_000, 8)  # longer than a chunk: alone
    batches = [*small[:20], big, *small[20:]]
    for batch in batches:
        admin.submit_reports(batch)
    chunks = list(admin.export_reports(survey.id))
    assert [r for chunk in chunks for r in chunk.reports] == [r for b in batches for r in b]
    sizes = [chunk.ByteSize() for chunk in chunks]
    (alone,) = [i for i, chunk in enumerate(chunks) if chunk.reports[0] == big[0]]
    assert list(chunks[alone].reports) == big
    assert sizes[alone] > CHUNK_BYTES
    batch_bytes = pb.ExportReportsResponse(reports=small[0]).ByteSize()  # all alike
    for i, size in enumerate(sizes):
        if alone not in (i, i + 1) and i + 1 < len(sizes):
            assert CHUNK_BYTES - batch_bytes < size <= CHUNK_BYTES  # cut when one more won't fit
    assert sizes[-1] <= CHUNK_BYTES


def test_a_batch_over_8_mib_reaches_an_admin_client_or_is_named(tmp_path: Path) -> None:
    """A daemon that took a larger batch sends it whole; one with a smaller limit says so."""
    url = f"sqlite:///{tmp_path / 'aggregator.db'}"
    roomy = ServerLimits(max_message_bytes=16 << 20, max_inflight_bytes=16 << 20, max_batch=60_000)
    first = start_server(open_storage(url), ADMIN_TOKEN, "127.0.0.1:0", limits=roomy)
    try:
        with AggregatorClient(first.address, admin_token=ADMIN_TOKEN, attempts=1) as admin:
            survey = new_survey(admin)
            batch = yes_no(survey, "x" * 120, 60_000, 8)  # ~10 MB: beyond the client's 8 MiB
            options = [("grpc.max_send_message_length", 16 << 20)]
            with grpc.insecure_channel(first.address, options=options) as channel:
                submit: grpc.UnaryUnaryMultiCallable[bytes, bytes]
                submit = channel.unary_unary("/deniable.v1.Aggregator/SubmitReports")
                submit(pb.SubmitReportsRequest(reports=batch).SerializeToString(), timeout=60)
            (chunk,) = admin.export_reports(survey.id)
            assert chunk.ByteSize() > MAX_MESSAGE_BYTES
            assert list(chunk.reports) == batch
    finally:
        first.stop(grace=1.0)
    second = start_server(open_storage(url), ADMIN_TOKEN, "127.0.0.1:0")  # the default
    try:
        with AggregatorClient(second.address, admin_token=ADMIN_TOKEN, attempts=1) as admin:
            with pytest.raises(RemoteError) as caught:
                list(admin.export_reports(survey.id))
            assert caught.value.status == Code.RESOURCE_EXHAUSTED
            default = ServerLimits().max_message_bytes
            assert f"({default:,}, --max-message-bytes)" in caught.value.details
    finally:
        second.stop(grace=1.0)


class Spy:
    """Wraps ``Storage.log``: the threads that read it, the rows read, when it closed.

    ``fail_at``: the first read raises UNAVAILABLE instead of yielding this row.
    ``hold_at``: before yielding this row, wait until ``release`` is set.
    """

    def __init__(self, server: RunningServer, fail_at: int = -1, hold_at: int = -1) -> None:
        self.log = server.storage.log
        self.fail_at, self.hold_at = fail_at, hold_at
        self.release = threading.Event()
        self.threads: set[str] = set()
        self.rows = 0
        self.closed = threading.Event()

    def __call__(self, survey_id: str) -> Generator[bytes, None, None]:
        try:
            for number, row in enumerate(self.log(survey_id)):
                self.threads.add(threading.current_thread().name)
                if number == self.fail_at:
                    self.fail_at = -1  # once
                    raise Unavailable("the database went away (test)")
                if number == self.hold_at:
                    assert self.release.wait(HANG_GUARD), "never released"
                self.rows += 1
                yield row
        finally:
            self.closed.set()


def spied(server: RunningServer, monkeypatch: pytest.MonkeyPatch, **options: int) -> Spy:
    spy = Spy(server, **options)
    monkeypatch.setattr(server.storage, "log", spy)
    return spy


def fill(admin: AggregatorClient, batches: int = 40) -> pb.Survey:
    """A survey of ``batches`` stored batches of 1000 yes/no reports (~78 KB each)."""
    survey = new_survey(admin)
    for b in range(batches):
        admin.submit_reports(yes_no(survey, f"b{b:02d}-", 1000, 32))
    return survey


@pytest.mark.parametrize("how", ["close", "disconnect"])
def test_reading_stops_when_the_client_leaves(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    with AggregatorClient(server.address, admin_token=ADMIN_TOKEN, attempts=1) as admin:
        survey = fill(admin)
        spy = spied(server, monkeypatch, hold_at=20)  # in the second chunk (13 rows each)
        sending = _streaming.send_stream

        async def watched(context: Any, executor: Executor, messages: Iterator[bytes]) -> None:
            try:
                await sending(context, executor, messages)
            except asyncio.CancelledError:
                spy.release.set()  # the read held at row 20 goes on only now
                raise

        monkeypatch.setattr(_servicer, "send_stream", watched)
        stream = admin.export_reports(survey.id)
        per_chunk = len(next(stream).reports) // 1000
        assert 10 < per_chunk < 20
        if how == "close":
            stream.close()  # type: ignore[attr-defined]
    assert spy.closed.wait(HANG_GUARD)
    assert per_chunk < spy.rows <= 2 * per_chunk + 1  # at most the read in progress ended
    assert spy.threads
    assert all(name.startswith("rpc") for name in spy.threads)  # workers, not the loop
    with AggregatorClient(server.address, admin_token=ADMIN_TOKEN, attempts=1) as admin:
        assert len(exported(admin, survey.id)) == 40_000  # and the server still serves


def test_a_storage_failure_mid_stream_ends_it_with_its_status(
    server: RunningServer, admin: AggregatorClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    survey = fill(admin)
    spied(server, monkeypatch, fail_at=30)
    received: list[pb.ExportReportsResponse] = []
    with pytest.raises(RemoteError) as caught:
        received.extend(admin.export_reports(survey.id))
    assert caught.value.status == Code.UNAVAILABLE
    assert caught.value.details == "the database went away (test)"
    assert [len(chunk.reports) for chunk in received] == [13_000, 13_000]  # not retried


def test_a_failure_before_the_first_message_is_retried(
    server: RunningServer, admin: AggregatorClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    survey = fill(admin, 2)
    spied(server, monkeypatch, fail_at=0)
    naps: list[float] = []
    with AggregatorClient(
        server.address, admin_token=ADMIN_TOKEN, attempts=2, sleep=naps.append
    ) as retrying:
        assert len(exported(retrying, survey.id)) == 2000
    assert naps == [0.25]


def test_chunks_of_stored_batches() -> None:
    closed: list[bool] = []

    def rows(sizes: list[int]) -> Generator[bytes, None, None]:
        try:
            yield from (bytes([i]) * size for i, size in enumerate(sizes))
        finally:
            closed.append(True)

    joined: Callable[[list[int], int], list[bytes]] = lambda sizes, limit: list(  # noqa: E731
        export_chunks(rows(sizes), "s", chunk_bytes=limit)
    )
    assert [len(c) for c in joined([3, 3, 3, 9, 1], 6)] == [6, 3, 9, 1]
    assert joined([], 6) == []
    assert b"".join(joined([2, 5, 1], 4)) == b"\x00\x00" + b"\x01" * 5 + b"\x02"
    with pytest.raises(ResourceExhausted, match=r"stored batch of 9 bytes.*\(8, --max-message"):
        list(export_chunks(rows([1, 9]), "s", max_message_bytes=8))
    partial = export_chunks(rows([4, 4, 4]), "s", chunk_bytes=4)
    assert next(partial) == b"\x00" * 4
    partial.close()
    assert closed == [True] * 5  # every reader closed, also when left early


def test_at_most_four_exports_read_at_once_and_the_next_is_refused(
    running: RunningServer, operator: AggregatorClient
) -> None:
    survey = new_survey(operator)
    operator.submit_reports(yes_no(survey, "r", 10))
    service = running.service
    held = [service.export_reports(survey.id) for _ in range(MAX_EXPORTS)]
    for chunks in held:  # each is reading (on PostgreSQL with a pooled connection)
        assert len(pb.ExportReportsResponse.FromString(next(chunks)).reports) == 10
    refused = service.export_reports(survey.id)
    with pytest.raises(ResourceExhausted, match=f"{MAX_EXPORTS} exports are running"):
        next(refused)
    operator.submit_reports(yes_no(survey, "s", 5))  # storing goes on meanwhile
    assert operator.get_estimate(survey.id, "q").n == 15
    held.pop().close()
    again = b"".join(service.export_reports(survey.id))  # a slot is free: it runs, whole
    assert len(pb.ExportReportsResponse.FromString(again).reports) == 15
    for chunks in held:
        chunks.close()
    assert len(exported(operator, survey.id)) == 15
