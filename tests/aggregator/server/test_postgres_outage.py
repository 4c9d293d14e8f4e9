"""A PostgreSQL outage: UNAVAILABLE while it lasts, nothing half-written, recovery by itself."""

from __future__ import annotations

import logging
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import TypeVar

import grpc
import psycopg
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from deniable.aggregator.server._lifecycle import start_server
from deniable.aggregator.storage import Tally
from deniable.aggregator.storage.postgres import PostgresStorage
from deniable.client._remote import AggregatorClient, RemoteError
from deniable.shared.errors import Unavailable
from deniable.shared.privacy import ReleaseSteps
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests._postgres import Cluster, require_server
from tests.aggregator.storage.test_storage_contract import report, submission, survey
from tests.conftest import ADMIN_TOKEN, RunCli, binary_question

T = TypeVar("T")
RECOVERY_S = 60.0  # bound on waiting for the pool to reconnect after a restart


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """A cluster of this module's own: its tests stop and start the server."""
    own = Cluster(require_server())
    try:
        own.start()
        yield own
    finally:
        own.stop()


@pytest.fixture
def url(cluster: Cluster) -> str:
    """A new database, its URL with a password (trust authentication ignores it)."""
    name = f"t{uuid.uuid4().hex}"
    with psycopg.connect(cluster.url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    return f"postgresql://postgres:s3cret@127.0.0.1:{cluster.port}/{name}"


def redacted(url: str) -> str:
    return url.replace(":s3cret@", "@")


def eventually(call: Callable[[], T]) -> T:
    """``call()`` once it stops raising UNAVAILABLE (polled, bounded)."""
    deadline = time.monotonic() + RECOVERY_S
    while True:
        try:
            return call()
        except (Unavailable, RemoteError) as error:
            if isinstance(error, RemoteError) and error.code != "UNAVAILABLE":
                raise
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def stored_ids(url: str) -> int:
    with psycopg.connect(url.replace(":s3cret@", "@")) as db:
        row = db.execute("SELECT count(*) FROM report_ids").fetchone()
    assert row is not None
    return int(row[0])


def test_an_outage_is_unavailable_stores_nothing_and_passes(cluster: Cluster, url: str) -> None:
    storage = PostgresStorage(url, pool_timeout=1.0)
    try:
        storage.create_survey(survey())
        before = [report(f"a{i}", i % 2) for i in range(10)]
        assert storage.submit(submission(before)).stored == 10
        during = [report(f"b{i}", 1) for i in range(5)]
        cluster.stop_server()
        try:
            for call in (
                lambda: storage.submit(submission(during)),
                lambda: storage.tally("s1", "q1"),
                lambda: storage.get_survey("s1"),
            ):
                with pytest.raises(Unavailable) as lost:
                    call()
                message = str(lost.value)
                assert f"database {redacted(url)!r} is unavailable" in message
                assert "safe to retry" in message
                assert "s3cret" not in message
        finally:
            cluster.start_server()
        assert stored_ids(url) == 10  # nothing of the batch sent during the outage
        again = eventually(lambda: storage.submit(submission(during)))  # the same storage
        assert (again.stored, again.already_stored) == (5, 0)
        resent = storage.submit(submission(before))
        assert (resent.stored, resent.already_stored) == (0, 10)
        assert storage.tally("s1", "q1") == Tally(15, (10,))
    finally:
        storage.close()


def test_an_outage_during_a_read_of_the_log_is_unavailable(cluster: Cluster, url: str) -> None:
    storage = PostgresStorage(url, pool_timeout=1.0)
    try:
        storage.create_survey(survey())
        for b in range(40):  # more than two pages of the log's cursor
            storage.submit(submission([report(f"b{b}-{i}", i % 2) for i in range(3)]))
        reading = storage.log("s1")
        assert next(reading)
        cluster.stop_server()
        try:
            for read in (lambda: list(reading), lambda: next(storage.log("s1"))):
                with pytest.raises(Unavailable) as lost:
                    read()
                assert f"database {redacted(url)!r} is unavailable" in str(lost.value)
        finally:
            cluster.start_server()
        assert len(eventually(lambda: list(storage.log("s1")))) == 40  # the same storage
    finally:
        storage.close()


def test_a_connection_lost_mid_batch_rolls_it_back(url: str) -> None:
    """The server ends the batch's connection inside its transaction (after the ids went in).

    Once: the batch runs again on a fresh connection and is stored once. Twice: the call
    is UNAVAILABLE and nothing of it is stored.
    """
    storage = PostgresStorage(url, pool_timeout=1.0)
    steps = ReleaseSteps(first=2, step=2)  # a stepped question: the transactional path
    try:
        storage.create_survey(survey())
        for kills, stored in ((2, 0), (1, 3)):
            left = [kills]
            batch = submission([report("x", 1), report("y", 0), report("z", 1)], steps)
            group = batch.groups[0]

            def tally(keep: object, group: object = group, left: list[int] = left) -> list[int]:
                if left[0]:
                    left[0] -= 1
                    with psycopg.connect(redacted(url), autocommit=True) as admin:
                        admin.execute(
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                            "WHERE datname = current_database() AND state = 'idle in transaction'"
                        )
                return [1]

            broken = replace(batch, groups=[replace(group, tally=tally)])
            if stored:
                assert storage.submit(broken).stored == stored
            else:
                with pytest.raises(Unavailable, match="is unavailable"):
                    storage.submit(broken)
            assert left == [0]
            assert stored_ids(url) == stored
        assert storage.tally("s1", "q1") == Tally(3, (1,))  # the tally function's [1]
    finally:
        storage.close()


def health_becomes(address: str, status: int) -> None:
    """Poll the daemon's health service (both names) until it reports ``status`` (bounded)."""
    deadline = time.monotonic() + RECOVERY_S
    with grpc.insecure_channel(address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        while True:
            answers = {
                health.Check(health_pb2.HealthCheckRequest(service=name), timeout=10).status
                for name in ("", "deniable.v1.Aggregator")
            }
            if answers == {status}:
                return
            assert time.monotonic() < deadline, f"health stayed {answers}, not {status}"
            time.sleep(0.1)


def test_a_daemon_answers_unavailable_while_postgres_is_down_then_serves(
    cluster: Cluster, url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """And its health service says NOT_SERVING meanwhile, SERVING again after.

    With the default 5 s pool timeout, a client whose deadline is shorter still gets
    UNAVAILABLE, not DEADLINE_EXCEEDED: once a call finds the database down, calls wait
    only briefly for a connection.
    """
    running = start_server(PostgresStorage(url), ADMIN_TOKEN, "127.0.0.1:0", health_check_s=0.2)
    serving, not_serving = (
        health_pb2.HealthCheckResponse.SERVING,
        health_pb2.HealthCheckResponse.NOT_SERVING,
    )
    try:
        health_becomes(running.address, serving)
        with AggregatorClient(
            running.address, admin_token=ADMIN_TOKEN, attempts=1, timeout=3.0
        ) as client:
            created = client.create_survey("Outage", [binary_question("q1")])

            def batch(prefix: str, count: int) -> list[pb.Report]:
                return [
                    pb.Report(
                        report_id=f"{prefix}{i:04d}",
                        survey_id=created.id,
                        question_id="q1",
                        mechanism=created.questions[0].mechanism,
                        bit=bool(i % 2),
                    )
                    for i in range(count)
                ]

            acknowledged = client.submit_reports(batch("a", 100))
            assert acknowledged.stored == 100
            cluster.stop_server()
            try:
                with (
                    caplog.at_level(logging.INFO, logger="deniable.aggregator"),
                    pytest.raises(RemoteError) as refused,
                ):
                    client.submit_reports(batch("b", 50))
                assert refused.value.code == "UNAVAILABLE"
                assert f"database {redacted(url)!r} is unavailable" in refused.value.details
                assert "s3cret" not in refused.value.details
                assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
                health_becomes(running.address, not_serving)
            finally:
                cluster.start_server()
            health_becomes(running.address, serving)
            later = eventually(lambda: client.submit_reports(batch("b", 50)))
            assert (later.stored, later.already_stored) == (50, 0)
            resent = client.submit_reports(batch("a", 100))  # e.g. its reply was lost
            assert (resent.stored, resent.already_stored) == (0, 100)
            assert client.get_survey(created.id).reports == 150
    finally:
        running.stop(grace=1.0)


def test_serve_with_postgres_unreachable_is_one_line_naming_the_url(run_script: RunCli) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"postgresql://alice:s3cret@127.0.0.1:{port}/survey"
    done = run_script("deniable-aggregator", "serve", "--db", url, "--listen", "127.0.0.1:0")
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(
        f"Error: cannot open PostgreSQL database 'postgresql://alice@127.0.0.1:{port}/survey': "
    )
    assert "s3cret" not in done.stderr


def test_conflicts_and_lost_connections_are_retried_a_bounded_number_of_times(
    url: str,
) -> None:
    from psycopg.errors import DeadlockDetected, SerializationFailure
    from psycopg_pool import ConnectionPool

    from deniable.aggregator.storage.postgres._errors import CONFLICT_ATTEMPTS, Transactions

    calls: list[int] = []

    def conflicts(failures: int, error: type[Exception]) -> Callable[[object], str]:
        def work(db: object) -> str:
            calls.append(1)
            if len(calls) <= failures:
                raise error("conflict" if error is not ValueError else "not retried")
            return "done"

        return work

    with ConnectionPool(redacted(url), min_size=1, max_size=1, open=True) as pool:
        transactions = Transactions(pool, url)
        assert transactions.run(conflicts(2, DeadlockDetected)) == "done"
        assert len(calls) == 3
        calls.clear()
        with pytest.raises(Unavailable, match=r"is unavailable \(conflict\).*safe to retry"):
            transactions.run(conflicts(99, SerializationFailure))
        assert len(calls) == CONFLICT_ATTEMPTS
        calls.clear()
        with pytest.raises(ValueError, match="not retried"):  # other errors pass through
            transactions.run(conflicts(99, ValueError))
        assert len(calls) == 1
        calls.clear()  # a lost connection: work that may run twice runs once more
        assert transactions.run(conflicts(1, psycopg.OperationalError)) == "done"
        assert len(calls) == 2
        calls.clear()  # work that must not (it may have committed) is UNAVAILABLE at once
        with pytest.raises(Unavailable, match="safe to retry"):
            transactions.run(conflicts(1, psycopg.OperationalError), again=False)
        assert len(calls) == 1
