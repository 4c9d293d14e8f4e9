"""Crash safety: kill -9 the daemon under load, restart it, retry, and lose or double nothing.

The harness is ``bench/fault_injection.py`` (run here with 2 cycles; the script runs more
and prints the figures of docs/reliability.md), so the suite and the script cannot drift.
"""

from __future__ import annotations

import signal
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import fault_client
import fault_injection
from fault_harness import (
    ADMIN_TOKEN,
    Config,
    Daemon,
    client_state,
    start_clients,
    start_daemon,
    stored_ids,
    verify,
    wait_all,
)

from deniable.client._remote import AggregatorClient


def test_acknowledged_reports_survive_kill_9_exactly_once(tmp_path: Path) -> None:
    config = Config(workdir=tmp_path, cycles=2, clients=2, batch=200, seed=20261121)
    summary = fault_injection.run(config)
    assert len(summary.cycles) == config.cycles
    for cycle in summary.cycles:
        for state in (cycle.at_kill, cycle.verification):  # before and after the restart
            assert state.lost == [], f"cycle {cycle.number}: acknowledged but not stored"
            assert state.lost_count == 0
            assert state.acknowledged > 0
            # Every acknowledged report is stored; nothing is counted twice.
            assert state.acknowledged <= state.stored
            assert state.tally_n == state.stored == state.log_reports
        after = cycle.verification
        assert (after.check_exit, after.check_n) == (0, after.stored)
        # Every unacknowledged batch was resent and acknowledged after the restart.
        assert after.acknowledged == cycle.at_kill.acknowledged + cycle.retried_reports
    first, last = summary.cycles
    assert last.verification.acknowledged > first.verification.acknowledged  # kept streaming
    assert summary.to_dict()["lost"] == summary.to_dict()["double_counted"] == 0


@pytest.fixture
def survey_daemon(tmp_path: Path) -> Iterator[tuple[Daemon, str]]:
    """A harness daemon (stopped with SIGTERM at the end) and its one yes/no survey."""
    daemon = start_daemon(tmp_path, f"sqlite:///{tmp_path / 'aggregator.db'}")
    try:
        with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN, attempts=1) as admin:
            survey_id = fault_client.create_survey(admin, "retry")
        yield daemon, survey_id
    finally:
        daemon.process.send_signal(signal.SIGTERM)
        daemon.process.wait(timeout=60)


@pytest.mark.parametrize("committed", [True, False], ids=["reply-lost", "never-arrived"])
def test_a_pending_batch_is_resent_with_its_ids_and_counted_once(
    survey_daemon: tuple[Daemon, str], tmp_path: Path, committed: bool
) -> None:
    daemon, survey_id = survey_daemon
    config = Config(workdir=tmp_path, clients=1)
    state = client_state(config, 0)
    state.mkdir()
    ids = [f"pending-{i:04d}" for i in range(150)]
    bits = [i % 3 == 0 for i in range(150)]
    fault_client.write_pending(state, ids, bits)
    if committed:  # the batch was stored but the daemon died before replying
        with AggregatorClient(daemon.address, attempts=1) as client:
            assert fault_client.send(client, survey_id, ids, bits).stored == len(ids)
    wait_all(start_clients(config, daemon, survey_id, cycle=1, retry_only=True), allowed={0})
    stored_now = 0 if committed else len(ids)
    assert fault_client.retried(state) == [
        {"reports": len(ids), "stored": stored_now, "already_stored": len(ids) - stored_now}
    ]
    assert fault_client.acked_ids(state) == ids
    assert fault_client.read_pending(state) is None
    log, tally_n = stored_ids(tmp_path / "aggregator.db", survey_id)
    assert sorted(log) == sorted(i.encode() for i in ids)  # once each
    assert tally_n == len(ids)


def test_the_harness_reports_losses_and_double_counts(
    survey_daemon: tuple[Daemon, str], tmp_path: Path
) -> None:
    daemon, survey_id = survey_daemon
    config = Config(workdir=tmp_path, clients=1)
    state = client_state(config, 0)
    state.mkdir()
    ids = [f"{i:032x}" for i in range(10)]
    with AggregatorClient(daemon.address, attempts=1) as client:
        assert fault_client.send(client, survey_id, ids, [True] * len(ids)).stored == len(ids)
    fault_client.append_fsynced(state / "acked", "".join(f"{i}\n" for i in ids))
    db = tmp_path / "aggregator.db"
    assert verify(config, db, survey_id, with_check=True).ok  # the control: all is well
    missing = "f" * 32  # acknowledged, but never stored
    fault_client.append_fsynced(state / "acked", f"{missing}\n")
    with sqlite3.connect(db) as connection:  # the log holds the batch twice
        connection.execute(
            "INSERT INTO log (survey_id, reports) SELECT survey_id, reports FROM log"
        )
    connection.close()
    result = verify(config, db, survey_id, with_check=True)
    assert (result.lost, result.lost_count) == ([missing], 1)
    assert (result.log_reports, result.stored, result.tally_n) == (20, 10, 10)
    assert result.double_counted == 10
    assert (result.check_exit, result.check_n) == (1, 20)
    assert not result.ok
