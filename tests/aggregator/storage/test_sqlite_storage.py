"""What only the SQLite backend does: schema versions, upgrades, and refusing bad files."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from deniable.aggregator.storage import StorageError, Tally, open_storage
from deniable.aggregator.storage.sqlite import SCHEMA_VERSION, SqliteStorage
from deniable.shared.errors import AlreadyExists
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.aggregator.storage.test_storage_contract import logged, recount, report, submit, survey

HANG_GUARD = 30.0  # seconds: only so that a broken lock fails the test instead of hanging

V1_SCHEMA = """
CREATE TABLE surveys (id TEXT PRIMARY KEY, seq INTEGER NOT NULL, state INTEGER NOT NULL,
                      spec BLOB NOT NULL);
CREATE TABLE tallies (survey_id TEXT NOT NULL REFERENCES surveys(id), question_id TEXT NOT NULL,
                      n INTEGER NOT NULL DEFAULT 0, ones INTEGER NOT NULL DEFAULT 0,
                      PRIMARY KEY (survey_id, question_id));
CREATE TABLE reports (report_id TEXT PRIMARY KEY, survey_id TEXT NOT NULL,
                      question_id TEXT NOT NULL, bit INTEGER NOT NULL, payload BLOB NOT NULL);
"""


def write_v1(path: Path) -> None:
    """A database as the first release wrote it: one row per report."""
    db = sqlite3.connect(path)
    db.executescript(V1_SCHEMA)
    for seq, survey_id in enumerate(["s1", "s2"], start=1):
        spec = survey(survey_id).SerializeToString()
        db.execute("INSERT INTO surveys VALUES (?, ?, ?, ?)", (survey_id, seq, 1, spec))
        db.executemany(
            "INSERT INTO tallies (survey_id, question_id) VALUES (?, ?)",
            [(survey_id, "q1"), (survey_id, "q2")],
        )
    reports = [report("a", 1), report("b", 0), report("c", 1, "q2"), report("d", 1, survey_id="s2")]
    for r in reports:
        db.execute(
            "INSERT INTO reports VALUES (?, ?, ?, ?, ?)",
            (r.report_id, r.survey_id, r.question_id, int(r.bit),
             r.SerializeToString(deterministic=True)),
        )  # fmt: skip
        db.execute(
            "UPDATE tallies SET n = n + 1, ones = ones + ? WHERE survey_id = ? AND question_id = ?",
            (int(r.bit), r.survey_id, r.question_id),
        )
    db.commit()
    db.close()


def test_a_version_1_database_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    write_v1(path)
    storage = open_storage(f"sqlite:///{path}")
    try:
        assert storage.tally("s1", "q1") == Tally(n=2, sums=(1,))
        assert storage.tally("s1", "q2") == Tally(n=1, sums=(1,))
        assert storage.tally("s2", "q2") == Tally(n=0)
        assert [r.report_id for r in logged(storage)] == ["a", "b", "c"]
        assert recount(storage, "s1", "q1") == storage.tally("s1", "q1")
        assert submit(storage, [report("a", 1), report("e", 0)]).already_stored == 1
        with pytest.raises(AlreadyExists):
            submit(storage, [report("b", 1)])
        survey_now = storage.get_survey("s1")
        assert survey_now is not None
        assert survey_now.reports == 4
    finally:
        storage.close()
    db = sqlite3.connect(path)
    tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    db.close()
    assert tables == {
        *("surveys", "tallies", "log", "tokens", "token_counts", "token_answers"),
        *("meta", "id_segments", "id_chunks", "releases"),
    }


def test_a_database_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    open_storage(f"sqlite:///{path}").close()
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.commit()
    db.close()
    with pytest.raises(StorageError, match=f"schema version {SCHEMA_VERSION + 1}, newer"):
        open_storage(f"sqlite:///{path}")
    open_storage(f"sqlite:///{tmp_path / 'other.db'}").close()  # the lock was released


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StorageError, match="cannot open SQLite database"):
        open_storage(f"sqlite:///{path}")
    assert path.read_bytes() == b"this is not a database" * 100


def test_closing_a_survey_frees_its_ids_but_keeps_its_log(tmp_path: Path) -> None:
    storage = SqliteStorage(str(tmp_path / "x.db"))
    storage.create_survey(survey())
    submit(storage, [report("a", 1)])
    storage.maintain()  # the new id is entered in the index
    assert storage._index.surveys["s1"].count == 1
    storage.close_survey("s1")
    assert "s1" not in storage._index
    assert [r.report_id for r in logged(storage)] == ["a"]
    assert storage.get_survey("s1") == pb.Survey(
        id="s1",
        title="T",
        questions=survey().questions,
        state=pb.SURVEY_STATE_CLOSED,
        reports=1,
    )
    storage.close()


def test_a_tally_is_read_while_a_commit_holds_the_database(tmp_path: Path) -> None:
    """An estimate gets the tally of the last commit without waiting for the one running."""
    storage = SqliteStorage(str(tmp_path / "x.db"))
    try:
        storage.create_survey(survey())
        submit(storage, [report("a", 1), report("b", 0)])
        got: list[Tally | None] = []
        with storage._lock:  # as a commit in progress holds it
            reader = threading.Thread(target=lambda: got.append(storage.tally("s1", "q1")))
            reader.start()
            reader.join(HANG_GUARD)
            assert got == [Tally(2, (1,))]
        assert storage.tally("s1", "q2") == Tally(0)  # never committed to: read from the row
        assert storage.tally("s1", "nope") is None
        assert storage.released("s1", "q1") == Tally(0)
        assert storage.released("s1", "nope") is None
    finally:
        storage.close()
