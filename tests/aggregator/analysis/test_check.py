"""``deniable-aggregator check``: tallies recomputed from the log, corruption found, read-only."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from deniable.aggregator.analysis.check._tallies import check
from deniable.aggregator.server._lifecycle import start_server
from deniable.aggregator.storage import open_storage
from deniable.aggregator.storage.sqlite import SCHEMA_VERSION, SqliteReader
from deniable.client._remote import AggregatorClient
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.aggregator.analysis._check_data import (
    COUNT,
    EXTRA,
    FIRST_BATCH,
    SPECS,
    expected_sums,
    question,
    questions_of,
    reports,
    run_check,
)
from tests.conftest import ADMIN_TOKEN, RunCli


@dataclass
class Filled:
    db: Path
    survey: pb.Survey
    sent: dict[str, list[pb.Report]]  # distinct reports per question
    olh_support: list[int]  # from GetEstimate: hashed reports' supports need the hash


@pytest.fixture
def filled(tmp_path: Path) -> Filled:
    """A database with reports for every kind of question (a resend and a mixed batch too)."""
    db = tmp_path / "filled.db"
    running = start_server(open_storage(f"sqlite:///{db}"), ADMIN_TOKEN, "127.0.0.1:0")
    try:
        with AggregatorClient(running.address, admin_token=ADMIN_TOKEN, attempts=1) as client:
            survey = client.create_survey("All kinds", [question(q, s) for q, s in SPECS.items()])
            sent = {qid: reports(survey, qid, COUNT, seed) for seed, qid in enumerate(SPECS)}
            for batch in sent.values():
                client.submit_reports(batch[:FIRST_BATCH])
                client.submit_reports(batch[FIRST_BATCH // 2 :])  # half a resend: counted once
            extra = {qid: reports(survey, qid, EXTRA, 99) for qid in SPECS}
            client.submit_reports([r for batch in extra.values() for r in batch])  # mixed
            for qid in SPECS:
                sent[qid] += extra[qid]
                assert client.get_estimate(survey.id, qid).n == len(sent[qid])
            olh = [o.support for o in client.get_estimate(survey.id, "olh").options]
    finally:
        running.stop(grace=1.0)  # the database is quiescent from here on
    return Filled(db, survey, sent, olh)


def corrupt(db: Path, *statements: str) -> None:
    with sqlite3.connect(db) as connection:
        for statement in statements:
            connection.execute(statement)
    connection.close()


# --- a healthy database ----------------------------------------------------------------


def test_check_passes_and_recomputes_every_kind_of_tally(filled: Filled, run_cli: RunCli) -> None:
    code, document = run_check(run_cli, filled.db)
    assert code == 0
    assert document["ok"] is True
    (survey,) = document["surveys"]
    assert survey["survey_id"] == filled.survey.id
    assert survey["duplicate_reports"] == 0
    assert survey["distinct_reports"] == sum(len(sent) for sent in filled.sent.values())
    for qid, got in questions_of(document).items():
        want = filled.olh_support if qid == "olh" else expected_sums(qid, filled.sent[qid])
        assert got["ok"] is True, qid
        assert got["n_recomputed"] == got["n_stored"] == len(filled.sent[qid]), qid
        assert got["sums_recomputed"] == got["sums_stored"] == want, qid


def test_check_reads_without_writing_or_locking(filled: Filled, run_cli: RunCli) -> None:
    for leftover in ("-wal", "-shm", ".lock"):
        Path(f"{filled.db}{leftover}").unlink(missing_ok=True)
    before = (filled.db.read_bytes(), filled.db.stat().st_mtime_ns)
    done = run_cli("deniable-aggregator", "check", "--db", f"sqlite:///{filled.db}")
    assert done.returncode == 0, done.stderr
    assert (filled.db.read_bytes(), filled.db.stat().st_mtime_ns) == before
    assert not Path(f"{filled.db}.lock").exists()  # the daemon's lock file was never taken
    assert done.stdout.splitlines()[-1].startswith("OK: 1 survey, 6 questions")
    assert f"survey 1/1 {filled.survey.id}" in done.stderr  # progress goes to stderr


def test_the_database_can_come_from_the_environment(filled: Filled, run_cli: RunCli) -> None:
    done = run_cli(
        "deniable-aggregator", "check", env={"DENIABLE_AGGREGATOR_DB": f"sqlite:///{filled.db}"}
    )
    assert done.returncode == 0, done.stderr
    assert str(filled.db) in done.stdout


# --- corruption is found ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("statement", "field", "stored"),
    [
        ("UPDATE tallies SET n = n + 1 WHERE question_id = 'grr'", "n", COUNT + EXTRA + 1),
        (
            "UPDATE tallies SET sums = '[1, 2, 3, 4]' WHERE question_id = 'grr'",
            "sums",
            [1, 2, 3, 4],
        ),
    ],
    ids=["wrong-n", "wrong-sums"],
)
def test_a_corrupted_tally_is_named(
    filled: Filled, run_cli: RunCli, statement: str, field: str, stored: Any
) -> None:
    corrupt(filled.db, statement)
    code, document = run_check(run_cli, filled.db)
    assert code == 1
    assert document["ok"] is False
    got = questions_of(document)
    assert [qid for qid, q in got.items() if not q["ok"]] == ["grr"]
    grr = got["grr"]
    assert grr[f"{field}_stored"] == stored
    assert grr["n_recomputed"] == len(filled.sent["grr"])
    assert grr["sums_recomputed"] == expected_sums("grr", filled.sent["grr"])
    text = run_cli("deniable-aggregator", "check", "--db", f"sqlite:///{filled.db}")
    assert text.returncode == 1
    mismatches = [line for line in text.stdout.splitlines() if line.startswith("MISMATCH")]
    assert mismatches == [
        f"MISMATCH survey {filled.survey.id} question grr: n stored {grr['n_stored']}, "
        f"recomputed {grr['n_recomputed']}; sums stored {grr['sums_stored']}, "
        f"recomputed {grr['sums_recomputed']}"
    ]


def test_a_duplicated_log_row_is_found_even_with_matching_tallies(
    filled: Filled, run_cli: RunCli
) -> None:
    corrupt(filled.db, "INSERT INTO log (survey_id, reports) SELECT survey_id, reports FROM log "
                       "WHERE seq = (SELECT MIN(seq) FROM log)")  # fmt: skip
    code, document = run_check(run_cli, filled.db)
    assert code == 1
    (survey,) = document["surveys"]
    repeated = survey["duplicate_reports"]
    assert repeated == FIRST_BATCH  # the first log row: the first yes/no batch
    assert survey["duplicate_ids"][0].startswith("yesno-0-")
    assert not questions_of(document)["yesno"]["ok"]  # its n counts them twice
    # Make the tally agree with the doubled log: only the duplicate check is left to fail.
    fixed = questions_of(document)["yesno"]
    sums = json.dumps(fixed["sums_recomputed"])
    corrupt(
        filled.db,
        f"UPDATE tallies SET n = {fixed['n_recomputed']}, sums = '{sums}' "
        "WHERE question_id = 'yesno'",
    )
    code, document = run_check(run_cli, filled.db)
    assert code == 1
    assert all(q["ok"] for q in questions_of(document).values())
    assert document["surveys"][0]["duplicate_reports"] == repeated
    text = run_cli("deniable-aggregator", "check", "--db", f"sqlite:///{filled.db}").stdout
    assert f"MISMATCH survey {filled.survey.id}: {repeated} repeated report ids" in text


def test_a_damaged_log_row_is_named(filled: Filled, run_cli: RunCli) -> None:
    with sqlite3.connect(filled.db) as connection:
        (last,) = connection.execute("SELECT MAX(seq) FROM log").fetchone()
    connection.close()
    corrupt(
        filled.db, f"UPDATE log SET reports = X'0A05FFFF' WHERE seq = {last}"
    )  # the mixed batch
    code, document = run_check(run_cli, filled.db)
    assert code == 1
    (problem,) = document["surveys"][0]["problems"]
    assert problem.startswith(f"log row {last} cannot be decoded: ")
    for qid, got in questions_of(document).items():  # its reports no longer count
        assert (got["ok"], got["n_recomputed"]) == (False, len(filled.sent[qid]) - EXTRA), qid


def test_duplicates_are_found_in_several_passes_too(filled: Filled) -> None:
    corrupt(filled.db, "INSERT INTO log (survey_id, reports) SELECT survey_id, reports FROM log")
    with SqliteReader(str(filled.db)) as reader, reader.snapshot():
        one = check(reader)
        several = check(reader, ids_per_pass=50)  # 15 passes over the log
    total = sum(len(sent) for sent in filled.sent.values())
    assert [s.duplicates for s in one.surveys] == [s.duplicates for s in several.surveys]
    assert one.surveys[0].duplicates == total  # every report is in the log twice
    assert one.surveys[0].distinct_reports == total


# --- usage errors ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("sqlite:///{tmp}/missing.db", "no database file at '{tmp}/missing.db'"),
        (
            "sqlite:///{tmp}/not-a-db.txt",
            "cannot read SQLite database '{tmp}/not-a-db.txt': file is not a database",
        ),
        (
            "mysql://db.example/x",
            "unsupported database URL 'mysql://db.example/x' (scheme 'mysql'); "
            "use sqlite:///PATH or postgresql://USER@HOST:PORT/DBNAME",
        ),
        (
            "sqlite:///:memory:",
            "database URL 'sqlite:///:memory:' names no file; use sqlite:///PATH",
        ),
        (
            "sqlite:///{tmp}/newer.db",
            "'{tmp}/newer.db' has schema version 99, newer than this deniable's "
            f"{SCHEMA_VERSION}; upgrade deniable",
        ),
    ],
    ids=["missing", "not-sqlite", "mysql", "memory", "newer-schema"],
)
def test_usage_errors_exit_2_with_one_line(
    run_cli: RunCli, tmp_path: Path, url: str, message: str
) -> None:
    (tmp_path / "not-a-db.txt").write_text("hello\n")
    with sqlite3.connect(tmp_path / "newer.db") as connection:
        connection.execute("PRAGMA user_version = 99")
    connection.close()
    files = sorted(tmp_path.iterdir())
    done = run_cli("deniable-aggregator", "check", "--db", url.format(tmp=tmp_path), "--json")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [f"Error: {message.format(tmp=tmp_path)}"]
    assert sorted(tmp_path.iterdir()) == files  # nothing created, e.g. no empty database


def test_the_default_database_is_the_one_serve_uses(
    run_cli: RunCli, participant_home: Path
) -> None:
    done = run_cli("deniable-aggregator", "check")
    assert done.returncode == 2
    default = participant_home / "data" / "deniable" / "aggregator.db"
    assert done.stderr.splitlines() == [f"Error: no database file at '{default}'"]
    assert not default.exists()
