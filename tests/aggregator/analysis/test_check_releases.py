"""``deniable-aggregator check`` on stepped surveys: each release must be the tally of a commit."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from deniable.aggregator.server._lifecycle import start_server
from deniable.aggregator.storage import open_storage
from deniable.client._remote import AggregatorClient
from tests._enrolled import stepped_without_enrollment
from tests.aggregator.analysis._check_data import run_check
from tests.aggregator.server.test_release_gate import reports
from tests.conftest import ADMIN_TOKEN, RunCli, binary_question


def _stepped_database(db: Path) -> str:
    """Reports in batches of 7 to a survey released every 10: released at 14, 21 stored."""
    running = start_server(open_storage(f"sqlite:///{db}"), ADMIN_TOKEN, "127.0.0.1:0")
    try:
        with AggregatorClient(running.address, admin_token=ADMIN_TOKEN, attempts=1) as client:
            # Batches of 7 for one question: not enrolled, as older releases made them.
            questions = [binary_question("q1")]
            survey = stepped_without_enrollment(running.storage, "Stepped", questions, 10)
            sent = reports(survey, "q1", 21, "r")
            for start in (0, 7, 14):
                client.submit_reports(sent[start : start + 7])
            estimate = client.get_estimate(survey.id, "q1")
            assert (estimate.n, estimate.stored) == (14, 21)
    finally:
        running.stop(grace=1.0)
    return survey.id


def test_check_passes_with_releases_and_finds_one_no_commit_had(
    tmp_path: Path, run_cli: RunCli
) -> None:
    db = tmp_path / "stepped.db"
    survey_id = _stepped_database(db)
    code, document = run_check(run_cli, db)
    assert code == 0, document
    assert document["ok"] is True
    with sqlite3.connect(db) as connection:
        connection.execute("UPDATE releases SET n = 15")  # between two commits: never a tally
    connection.close()
    code, document = run_check(run_cli, db)
    assert code == 1
    (survey,) = document["surveys"]
    assert survey["survey_id"] == survey_id
    assert survey["problems"] == [
        "released tally of question 'q1' (15 reports) is the tally of no commit in the log"
    ]
