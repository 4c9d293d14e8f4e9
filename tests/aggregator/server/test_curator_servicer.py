"""The Curator servicer in-process: statuses for a lost ledger, a bad token, a bad query."""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import grpc
import pytest

from deniable.aggregator.central import curator
from deniable.aggregator.central.curator.engine import open_engine
from deniable.aggregator.central.curator.ledger import LedgerUnavailableError, open_ledger
from deniable.aggregator.server.curator import CuratorClient, RunningCurator, start_curator
from deniable.shared.transport import RemoteError
from deniable.shared.wire.v1 import curator_pb2 as pb

ADMIN = "curator-admin-token-0123456789"


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[RunningCurator, str]]:
    data = tmp_path / "staff.csv"
    data.write_text("name,age\nann,34\nbob,29\n")
    dataset = curator.Dataset("staff", open_engine(str(data)), curator.PrivacyUnit(), "add-remove")
    ledger = open_ledger(f"sqlite:///{tmp_path / 'curator.db'}")
    curator.register_dataset(ledger, dataset, 1.0, None)
    token = ledger.issue_token("staff", "alice", Fraction(1), Fraction(0))
    server = start_curator(curator.CuratorService(dataset, ledger), ADMIN, "127.0.0.1:0")
    yield server, token
    server.stop(grace=0)


def _count(epsilon: float, where: str = "") -> pb.QueryRequest:
    return pb.QueryRequest(
        options=pb.QueryOptions(epsilon=epsilon, where=where), count=pb.CountQuery()
    )


def test_a_lost_ledger_is_unavailable_not_an_unknown_error(
    running: tuple[RunningCurator, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, token = running

    def lost(token: str) -> None:
        raise LedgerUnavailableError("the custodian's database is unreachable")

    monkeypatch.setattr(server.service.ledger, "authenticate", lost)
    with CuratorClient(server.address, token) as client, pytest.raises(RemoteError) as failed:
        client.query(_count(0.5))
    assert failed.value.status == grpc.StatusCode.UNAVAILABLE


def test_statuses_name_what_is_wrong(running: tuple[RunningCurator, str]) -> None:
    server, token = running
    with CuratorClient(server.address, "dnc_" + "x" * 43) as stranger:
        with pytest.raises(RemoteError) as refused:
            stranger.query(_count(0.5))
        assert refused.value.status == grpc.StatusCode.UNAUTHENTICATED
    with CuratorClient(server.address, token) as client:
        with pytest.raises(RemoteError) as bad:
            client.query(_count(0.5, "lower(name) = 'ann'"))
        assert bad.value.status == grpc.StatusCode.INVALID_ARGUMENT
        assert "lower" in bad.value.details
        with pytest.raises(RemoteError) as unknown:
            client.get_release("r-000000000000")
        assert unknown.value.status == grpc.StatusCode.NOT_FOUND
        with pytest.raises(RemoteError) as admin_only:
            client.issue_token("mallory", 1.0)
        assert admin_only.value.status == grpc.StatusCode.UNAUTHENTICATED
        assert client.query(_count(1.0)).charge.epsilon == "1"
        with pytest.raises(RemoteError) as spent:
            client.query(_count(0.5))
        assert spent.value.status == grpc.StatusCode.FAILED_PRECONDITION
        assert "nothing was spent" in spent.value.details
