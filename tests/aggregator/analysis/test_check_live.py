"""``deniable-aggregator check`` beside a serving daemon: one snapshot, no lock, no write."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from deniable.aggregator.analysis.check._tallies import check
from deniable.aggregator.server._lifecycle import RunningServer
from deniable.aggregator.storage import Tally
from deniable.aggregator.storage.sqlite import SqliteReader
from deniable.client._remote import AggregatorClient
from tests.aggregator.analysis._check_data import (
    SPECS,
    question,
    questions_of,
    reports,
    run_check,
)
from tests.conftest import ADMIN_TOKEN, Daemon, RunCli


class CommitBetweenReads:
    """A log source that has the server commit a batch right after the tallies are read."""

    def __init__(self, reader: SqliteReader, commit: Callable[[], None]) -> None:
        self.reader = reader
        self.commit = commit

    def surveys(self) -> list[tuple[str, int, bytes]]:
        return self.reader.surveys()

    def tallies(self) -> dict[tuple[str, str], Tally]:
        tallies = self.reader.tallies()
        self.commit()
        return tallies

    def releases(self) -> dict[tuple[str, str], Tally]:
        return self.reader.releases()

    def log(self, survey_id: str) -> Iterator[tuple[int, bytes]]:
        return self.reader.log(survey_id)


def test_tallies_and_log_are_read_in_one_snapshot(
    server: RunningServer, admin: AggregatorClient, anonymous: AggregatorClient, tmp_path: Path
) -> None:
    survey = admin.create_survey("Snapshot", [question("yesno", SPECS["yesno"])])
    first = reports(survey, "yesno", 50, 1)
    anonymous.submit_reports(first)
    later = iter([reports(survey, "yesno", 30, seed) for seed in (2, 3)])

    def commit() -> None:
        assert anonymous.submit_reports(next(later)).stored == 30

    with SqliteReader(str(tmp_path / "aggregator.db")) as reader:
        with reader.snapshot():
            inside = check(CommitBetweenReads(reader, commit))
        outside = check(CommitBetweenReads(reader, commit))  # control: no snapshot
    assert inside.ok
    assert inside.surveys[0].questions[0].recomputed.n == len(first)
    # Without one snapshot the commit lands between the two reads: a false mismatch.
    (question_check,) = outside.surveys[0].questions
    assert question_check.stored is not None
    assert (question_check.stored.n, question_check.recomputed.n) == (80, 110)
    assert not outside.ok


def test_check_runs_while_the_daemon_commits_batches(daemon: Daemon, run_cli: RunCli) -> None:
    db = Path(daemon.db_url.removeprefix("sqlite:///"))
    with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN, attempts=1) as client:
        survey = client.create_survey("Busy", [question("yesno", SPECS["yesno"])])
    stop = threading.Event()
    stored: list[int] = []

    def stream() -> None:
        with AggregatorClient(daemon.address, attempts=1) as client:
            for seed in range(2000):  # bounded; stopped once the checks are done
                if stop.is_set():
                    return
                stored.append(client.submit_reports(reports(survey, "yesno", 100, seed)).stored)

    thread = threading.Thread(target=stream, daemon=True)
    thread.start()
    try:
        for _ in range(1000):  # hang guard: wait for the first commit
            if stored or not thread.is_alive():
                break
            time.sleep(0.01)
        results = [run_check(run_cli, db) for _ in range(2)]
    finally:
        stop.set()
        thread.join(timeout=60)
    assert stored, "no batch was committed"
    for code, document in results:
        got = questions_of(document)["yesno"]
        assert (code, got["ok"]) == (0, True)
        assert got["n_stored"] == got["n_recomputed"] > 0
    # The daemon kept its lock and its database: it still commits, and counts everything.
    with AggregatorClient(daemon.address, attempts=1) as client:
        assert client.submit_reports(reports(survey, "yesno", 10, 9999)).stored == 10
        assert client.get_estimate(survey.id, "yesno").n == sum(stored) + 10
