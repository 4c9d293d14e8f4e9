"""Log rows: the compact encoding round-trips, damage is refused, and v2 databases upgrade."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deniable.aggregator.storage import StorageError, Tally, open_storage
from deniable.aggregator.storage.codec._decode import decode_exact, decode_log, decode_vectorized
from deniable.aggregator.storage.codec._log_format import (
    COMPACT_HEX,
    COMPACT_UNIFORM,
    LogFormatError,
    compact_uniform,
    expand,
)
from deniable.aggregator.storage.sqlite import SCHEMA_VERSION
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.aggregator.storage.test_batch import listed
from tests.aggregator.storage.test_storage_contract import logged, recount, report, submit, survey

ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
HEX = "0123456789abcdef"


def request(ids: list[str], bits: list[bool], survey_id: str = "s1") -> bytes:
    mechanism = pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=0.25))
    return pb.SubmitReportsRequest(
        reports=[
            pb.Report(report_id=i, survey_id=survey_id, question_id="q", mechanism=mechanism, bit=b)
            for i, b in zip(ids, bits, strict=True)
        ]
    ).SerializeToString()


@st.composite
def uniform_requests(draw: st.DrawFn) -> bytes:
    length = draw(st.integers(1, 128))
    alphabet = draw(st.sampled_from([ID_ALPHABET, HEX, HEX + "A"]))  # clients send hex
    ids = draw(
        st.lists(
            st.text(alphabet, min_size=length, max_size=length),
            min_size=1,
            max_size=40,
            unique=True,
        )
    )
    bits = draw(st.lists(st.booleans(), min_size=len(ids), max_size=len(ids)))
    survey_id = draw(st.text("abcdef0123456789", min_size=1, max_size=40))
    return request(ids, bits, survey_id)


@settings(max_examples=200, deadline=None)
@given(uniform_requests(), st.data())
def test_compact_rows_round_trip(data: bytes, draw: st.DataObject) -> None:
    fast = decode_vectorized(data, 10_000)
    assert fast is not None
    exact = decode_exact(data, 10_000)
    count = len(fast.report_ids)
    rows = np.array(
        sorted(draw.draw(st.sets(st.integers(0, count - 1), min_size=1))), dtype=np.intp
    )
    row = fast.encode(rows)
    ids = [fast.report_ids[i] for i in rows]
    hex_ids = len(ids[0]) % 2 == 0 and all(set(i.decode()) <= set(HEX) for i in ids)
    assert row[0] == (COMPACT_HEX if hex_ids else COMPACT_UNIFORM)
    assert expand(row) == exact.encode(rows)  # the canonical row of the same reports
    assert listed(decode_log(row)) == listed(decode_log(exact.encode(rows)))
    assert listed(decode_log(row)) == (
        [fast.report_ids[i] for i in rows],
        [fast.payloads[i] for i in rows],
    )


def test_a_canonical_row_expands_to_itself() -> None:
    data = request(["a", "bb"], [True, False])
    assert expand(data) == data
    assert listed(decode_log(data)) == (
        [b"a", b"bb"],
        [report.SerializeToString()[len(report.report_id) + 2 :] for report in
         pb.SubmitReportsRequest.FromString(data).reports],
    )  # fmt: skip


GOOD = compact_uniform(b"\x12\x02s1(", 2, b"aabb", b"\x01\x00")
GOOD_HEX = compact_uniform(b"\x12\x02s1(", 4, b"\xab\xcd\x01\x23", b"\x01\x00", hex_packed=True)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (GOOD[:5], "truncated header"),
        (GOOD[:-1], f"{len(GOOD) - 1} bytes, the header implies {len(GOOD)}"),
        (GOOD + b"\x00", f"{len(GOOD) + 1} bytes, the header implies {len(GOOD)}"),
        (GOOD[:-1] + b"\x02", "a bit other than 0 or 1"),
        (compact_uniform(b"", 0, b"", b""), "bad header"),
        (GOOD_HEX[:-1], f"{len(GOOD_HEX) - 1} bytes, the header implies {len(GOOD_HEX)}"),
        (GOOD_HEX[:-1] + b"\x02", "a bit other than 0 or 1"),
        (compact_uniform(b"", 3, b"\xab\xcd", b"\x01", hex_packed=True), "bad header"),
    ],
    ids=["truncated", "short", "long", "bit-2", "id-length-0", "hex-short", "hex-bit-2", "odd"],
)
def test_damaged_compact_rows_are_refused(row: bytes, message: str) -> None:
    assert listed(decode_log(GOOD)) == ([b"aa", b"bb"], [b"\x12\x02s1(\x01", b"\x12\x02s1(\x00"])
    assert listed(decode_log(GOOD_HEX))[0] == [b"abcd", b"0123"]
    with pytest.raises(LogFormatError, match=message):
        decode_log(row)
    with pytest.raises(LogFormatError, match=message):
        expand(row)


def uniform_reports(count: int) -> list[pb.Report]:
    return [report(f"id{i:04d}", i % 3 == 0) for i in range(count)]


def test_the_sqlite_log_stores_uniform_batches_compactly(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    storage = open_storage(f"sqlite:///{path}")
    storage.create_survey(survey())
    submit(storage, uniform_reports(50))
    submit(storage, [report("odd", 1, "q2"), report("id0000", 1)])  # mixed: canonical
    assert logged(storage) == [*uniform_reports(50), report("odd", 1, "q2")]
    assert storage.tally("s1", "q1") == recount(storage, "s1", "q1") == Tally(50, (17,))
    storage.close()
    db = sqlite3.connect(path)
    firsts = [row[0] for (row,) in db.execute("SELECT reports FROM log ORDER BY seq")]
    db.close()
    assert firsts == [COMPACT_UNIFORM, 0x0A]
    reopened = open_storage(f"sqlite:///{path}")  # the id index is rebuilt from both rows
    assert submit(reopened, uniform_reports(50)).already_stored == 50
    assert logged(reopened) == [*uniform_reports(50), report("odd", 1, "q2")]
    reopened.close()


def test_hex_ids_are_stored_in_half_the_bytes(tmp_path: Path) -> None:
    """Ids as clients make them (32 lowercase hex digits) take 16 bytes in the log."""
    path = tmp_path / "x.db"
    storage = open_storage(f"sqlite:///{path}")
    storage.create_survey(survey())
    hexed = [report(f"{i * 7919:032x}", i % 2 == 0) for i in range(100)]
    submit(storage, hexed)
    submit(storage, [report(f"{0xABC0 + i:032X}", 1) for i in range(2)])  # upper case: not packed
    storage.close()
    db = sqlite3.connect(path)
    rows = [row for (row,) in db.execute("SELECT reports FROM log ORDER BY seq")]
    db.close()
    assert [row[0] for row in rows] == [COMPACT_HEX, COMPACT_UNIFORM]
    stem = len(hexed[0].SerializeToString()) - 34 - 1  # a report without its id field and bit
    assert len(rows[0]) == 11 + stem + 100 * (16 + 1)
    reopened = open_storage(f"sqlite:///{path}")  # the id index is rebuilt from the packed row
    assert submit(reopened, hexed).already_stored == 100
    assert logged(reopened)[:100] == hexed
    reopened.close()


def test_a_damaged_log_row_is_refused_at_start(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    storage = open_storage(f"sqlite:///{path}")
    storage.create_survey(survey())
    submit(storage, uniform_reports(10))
    storage.close()
    db = sqlite3.connect(path)
    db.execute("UPDATE log SET reports = substr(reports, 1, length(reports) - 1)")
    db.commit()
    db.close()
    with pytest.raises(StorageError, match=r"log row 1 of .* is damaged: compact log row"):
        open_storage(f"sqlite:///{path}")
    open_storage(f"sqlite:///{tmp_path / 'y.db'}").close()
    with pytest.raises(StorageError, match="is damaged"):  # the lock was released: same error
        open_storage(f"sqlite:///{path}")


@pytest.mark.parametrize("version", [2, 4])
def test_databases_of_versions_2_to_4_are_upgraded_by_their_number(
    tmp_path: Path, version: int
) -> None:
    """Their rows stay as they are: versions 3 and 5 only add row kinds (compact, hex).

    Version 4 added the enrollment tables, which the upgrade from 2 creates.
    """
    path = tmp_path / f"v{version}.db"
    storage = open_storage(f"sqlite:///{path}")
    storage.create_survey(survey())
    submit(storage, [report("a", 1), report("b", 0)])
    storage.close()
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {version}")
    db.commit()
    db.close()
    upgraded = open_storage(f"sqlite:///{path}")
    assert upgraded.tally("s1", "q1") == recount(upgraded, "s1", "q1") == Tally(2, (1,))
    assert submit(upgraded, [report("a", 1)]).already_stored == 1
    upgraded.close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,) == (7,)
    db.close()


def test_a_log_repeating_a_report_is_refused_at_start(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    storage = open_storage(f"sqlite:///{path}")
    storage.create_survey(survey())
    submit(storage, uniform_reports(3))
    storage.close()
    db = sqlite3.connect(path)
    db.execute("INSERT INTO log (survey_id, reports) SELECT survey_id, reports FROM log")
    db.commit()
    db.close()
    with pytest.raises(StorageError, match=r"log row 2 .* 'id0000' appears twice in the log"):
        open_storage(f"sqlite:///{path}")
