"""Enrollment below the RPCs: decoding a batch's token, and the SQLite schema upgrade 3 -> 4."""

from __future__ import annotations

import secrets
import sqlite3
from pathlib import Path

import numpy as np

from deniable.aggregator.storage import Tally, open_storage
from deniable.aggregator.storage.codec import decode_batch, frame
from deniable.aggregator.storage.codec._log_format import COMPACT_UNIFORM, varint
from deniable.aggregator.storage.sqlite import SCHEMA_VERSION
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.aggregator.storage.test_storage_contract import enrolled, report, submit, survey

V4_TABLES = {"tokens", "token_counts", "token_answers"}
V6_TABLES = {"meta", "id_segments", "id_chunks"}  # the on-disk id index
V7_TABLES = {"releases"}


def uniform(count: int) -> list[pb.Report]:
    """A batch the fast path takes: one question, ids of one length, canonical encoding."""
    return [report(f"r{i:04d}", i % 3 == 0) for i in range(count)]


def token_field(token: str) -> bytes:
    return pb.SubmitReportsRequest(enrollment_token=token).SerializeToString()


def test_a_uniform_batch_without_token_takes_the_fast_path() -> None:
    data = pb.SubmitReportsRequest(reports=uniform(40)).SerializeToString()
    batch = decode_batch(data, 10_000)
    assert batch.enrollment_token == ""
    assert batch.encode(np.arange(40))[0] == COMPACT_UNIFORM


def _placements(reports: list[pb.Report], token: str) -> list[bytes]:
    records = [frame(r.SerializeToString(deterministic=True)) for r in reports]
    field = token_field(token)
    return [
        b"".join(records) + field,
        field + b"".join(records),
        b"".join(records[:7]) + field + b"".join(records[7:]),
    ]


def test_the_token_is_extracted_wherever_it_sits_and_never_logged() -> None:
    reports = uniform(40)
    plain = decode_batch(pb.SubmitReportsRequest(reports=reports).SerializeToString(), 10_000)
    token = secrets.token_urlsafe(24)
    for data in _placements(reports, token):
        batch = decode_batch(data, 10_000)
        assert batch.enrollment_token == token
        assert list(batch.report_ids) == list(plain.report_ids)
        assert list(batch.payloads) == list(plain.payloads)
        logged = batch.encode(np.arange(40))
        assert token.encode() not in logged
        assert list(pb.SubmitReportsRequest.FromString(logged).reports) == reports


def test_a_token_shaped_like_a_report_record_is_not_taken_for_one() -> None:
    """A token field exactly one record long makes the request a whole number of records."""
    reports = uniform(40)
    size = len(frame(reports[0].SerializeToString(deterministic=True)))
    length = next(n for n in range(size) if 1 + len(varint(n)) + n == size)
    token = secrets.token_urlsafe(length)[:length]
    for data in _placements(reports, token):
        assert len(data) % size == 0
        batch = decode_batch(data, 10_000)
        assert (batch.enrollment_token, batch.size) == (token, 40)


def _v3_database(path: Path) -> None:
    """A database as version 3 left it: these tables, this data, user_version 3."""
    storage = open_storage(f"sqlite:///{path}")
    storage.create_survey(survey())
    submit(storage, [report("a", 1), report("b", 0, "q2")])
    storage.close()
    db = sqlite3.connect(path)
    for table in V4_TABLES | V6_TABLES | V7_TABLES:
        db.execute(f"DROP TABLE {table}")
    db.execute("PRAGMA user_version = 3")
    db.commit()
    db.close()


def _dump(path: Path) -> dict[str, list[object]]:
    """Each table's rows."""
    db = sqlite3.connect(path)
    tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    rows = {table: db.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall() for table in tables}
    db.close()
    return rows


def test_a_version_3_database_is_upgraded_by_adding_the_enrollment_tables(tmp_path: Path) -> None:
    path = tmp_path / "v3.db"
    _v3_database(path)
    before = _dump(path)
    assert set(before) == {"surveys", "tallies", "log"}
    assert all(before.values())
    upgraded = open_storage(f"sqlite:///{path}")
    try:
        assert upgraded.tally("s1", "q1") == Tally(1, (1,))
        assert submit(upgraded, [report("a", 1)]).already_stored == 1
        old = upgraded.get_survey("s1")
        assert old is not None
        assert (old.tokens_issued, old.enrollment_required, old.min_reports) == (0, False, 0)
    finally:
        upgraded.close()
    after = _dump(path)
    assert set(after) == set(before) | V4_TABLES | V6_TABLES | V7_TABLES
    assert {table: after[table] for table in before} == before  # only tables were added
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    db.close()
    reopened = open_storage(f"sqlite:///{path}")  # and enrollment works in it
    try:
        reopened.create_survey(enrolled("s9"))
        reopened.issue_tokens("s9", [b"h" * 32])
        got = reopened.get_survey("s9")
        assert got is not None
        assert got.tokens_issued == 1
    finally:
        reopened.close()
