"""Several daemons on one PostgreSQL database: one logical aggregator, also under kill -9."""

from __future__ import annotations

import random
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from deniable.aggregator.server._lifecycle import RunningServer, start_server
from deniable.aggregator.storage import open_storage
from deniable.client._remote import AggregatorClient
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests._enrolled import stepped_without_enrollment
from tests.conftest import ADMIN_TOKEN, binary_question, start_daemon

THREADS = 4
ROUNDS = 6
BATCH = 200
KILL_ROUNDS = 6
POOL = 1_000  # distinct report ids the overlapping batches are drawn from


def _bit(report_id: str) -> bool:
    """A fixed answer per report id, so that a tally can be recomputed from the ids."""
    return sum(report_id.encode()) % 3 == 0


def _reports(survey: pb.Survey, qid: str, ids: list[str]) -> list[pb.Report]:
    mechanism = next(q.mechanism for q in survey.questions if q.id == qid)
    return [
        pb.Report(
            report_id=i, survey_id=survey.id, question_id=qid, mechanism=mechanism, bit=_bit(i)
        )
        for i in ids
    ]


@pytest.fixture
def pair(postgres_url: str) -> Iterator[tuple[RunningServer, RunningServer]]:
    """Two daemons (in this process, each with its own pool) on one new database."""
    first = start_server(open_storage(postgres_url), ADMIN_TOKEN, "127.0.0.1:0")
    second = start_server(open_storage(postgres_url), ADMIN_TOKEN, "127.0.0.1:0")
    yield first, second
    first.stop(grace=1.0)
    second.stop(grace=1.0)


def _tally(url: str, survey_id: str) -> tuple[int, int]:
    """The stored tally of question q1: (reports, yes reports)."""
    storage = open_storage(url)
    try:
        tally = storage.tally(survey_id, "q1")
    finally:
        storage.close()
    assert tally is not None
    return tally.n, tally.ones


def _same_estimate(a: AggregatorClient, b: AggregatorClient, survey_id: str, qid: str) -> None:
    one, two = a.get_estimate(survey_id, qid), b.get_estimate(survey_id, qid)
    assert one == two


def test_two_daemons_serve_one_aggregator(pair: tuple[RunningServer, RunningServer]) -> None:
    first, second = pair
    with (
        AggregatorClient(first.address, admin_token=ADMIN_TOKEN, attempts=1) as a,
        AggregatorClient(second.address, admin_token=ADMIN_TOKEN, attempts=1) as b,
    ):
        # Batches of 150 for one question: stepped without enrollment, as older releases
        # made them (made in the storage of the first daemon).
        survey = stepped_without_enrollment(first.storage, "Stepped", [binary_question("q1")], 100)
        assert b.get_survey(survey.id) == a.get_survey(survey.id)  # served by the other at once
        assert [s.id for s in b.list_surveys()] == [survey.id]
        batch = _reports(survey, "q1", [f"a{i}" for i in range(150)])
        assert a.submit_reports(batch) == pb.SubmitReportsResponse(stored=150)
        assert b.submit_reports(batch) == pb.SubmitReportsResponse(already_stored=150)
        assert a.get_survey(survey.id).reports == b.get_survey(survey.id).reports == 150
        # The release gate is one: released at 150 through A, frozen through B until 250.
        _same_estimate(a, b, survey.id, "q1")
        assert (b.get_estimate(survey.id, "q1").n, b.get_estimate(survey.id, "q1").stored) == (
            150,
            150,
        )
        b.submit_reports(_reports(survey, "q1", [f"b{i}" for i in range(99)]))
        frozen = a.get_estimate(survey.id, "q1")
        assert (frozen.n, frozen.stored, frozen.next_release_at) == (150, 249, 250)
        _same_estimate(a, b, survey.id, "q1")
        b.submit_reports(_reports(survey, "q1", ["b99"]))
        assert a.get_estimate(survey.id, "q1").n == 250
        _same_estimate(a, b, survey.id, "q1")
        assert b.close_survey(survey.id).state == pb.SURVEY_STATE_CLOSED
        assert a.get_survey(survey.id).state == pb.SURVEY_STATE_CLOSED


def test_overlapping_batches_sent_to_both_daemons_count_each_report_once(
    pair: tuple[RunningServer, RunningServer], postgres_url: str
) -> None:
    first, second = pair
    with AggregatorClient(first.address, admin_token=ADMIN_TOKEN, attempts=1) as admin:
        survey = admin.create_survey("Overlap", [binary_question("q1")])
    pool = [f"r{i:05d}" for i in range(POOL)]
    stored: list[int] = []
    errors: list[BaseException] = []

    def load(index: int) -> None:
        rng = random.Random(index)
        address = (first, second)[index % 2].address
        try:
            with AggregatorClient(address, attempts=1) as client:
                for _ in range(ROUNDS):  # random subsets in random order: they overlap
                    ids = rng.sample(pool, BATCH)
                    stored.append(client.submit_reports(_reports(survey, "q1", ids)).stored)
        except BaseException as error:  # reported by the main thread
            errors.append(error)

    threads = [threading.Thread(target=load, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    sent = {i for index in range(THREADS) for i in _sampled(pool, index)}
    assert sum(stored) == len(sent)  # each new report acknowledged as new exactly once
    assert _tally(postgres_url, survey.id) == (len(sent), sum(_bit(i) for i in sent))
    with (
        AggregatorClient(first.address, attempts=1) as a,
        AggregatorClient(second.address, attempts=1) as b,
    ):
        _same_estimate(a, b, survey.id, "q1")
        assert a.get_estimate(survey.id, "q1").n == len(sent)


def _sampled(pool: list[str], index: int) -> set[str]:
    """The ids thread ``index`` sent (its generator replayed)."""
    rng = random.Random(index)
    return {i for _ in range(ROUNDS) for i in rng.sample(pool, BATCH)}


def test_a_failover_client_loses_nothing_when_a_daemon_is_killed(
    postgres_url: str, tmp_path: Path
) -> None:
    for name in ("a", "b", "a2"):
        (tmp_path / name).mkdir()
    first = start_daemon(tmp_path / "a", postgres_url)
    second = start_daemon(tmp_path / "b", postgres_url)
    target = f"ipv4:{first.address},{second.address}"
    acknowledged: list[str] = []
    errors: list[BaseException] = []
    three_acked = threading.Event()

    def load(client: AggregatorClient, survey: pb.Survey) -> None:
        try:
            for round_ in range(KILL_ROUNDS):
                ids = [f"k{round_}-{i}" for i in range(BATCH)]
                response = client.submit_reports(_reports(survey, "q1", ids))
                assert response.stored + response.already_stored == len(ids)
                acknowledged.extend(ids)
                if round_ == 2:
                    three_acked.set()
                    first.process.wait(timeout=60)  # the rest is sent after the kill
        except BaseException as error:  # reported by the main thread
            errors.append(error)
            three_acked.set()

    try:
        with AggregatorClient(target, admin_token=ADMIN_TOKEN, backoff=0.05) as client:
            survey = client.create_survey("Faults", [binary_question("q1")])
            loader = threading.Thread(target=load, args=(client, survey))
            loader.start()
            assert three_acked.wait(timeout=60)
            first.process.send_signal(signal.SIGKILL)
            first.process.wait()
            loader.join()
            assert errors == []
            assert len(acknowledged) == KILL_ROUNDS * BATCH
            assert client.get_survey(survey.id).reports == len(acknowledged)
        first = start_daemon(tmp_path / "a2", postgres_url)  # restarted: sees everything
        with AggregatorClient(first.address, attempts=1) as again:
            resent = again.submit_reports(_reports(survey, "q1", acknowledged))
        assert (resent.stored, resent.already_stored) == (0, len(acknowledged))
        counted = (len(acknowledged), sum(_bit(i) for i in acknowledged))
        assert _tally(postgres_url, survey.id) == counted  # none lost, none twice
    finally:
        first.stop()
        second.stop()
