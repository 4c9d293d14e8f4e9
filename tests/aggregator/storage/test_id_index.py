"""The report-id index: exact through sealing, reopening, filter growth and fingerprint clashes."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deniable.aggregator.storage import StorageError, Tally
from deniable.aggregator.storage.codec import Hasher
from deniable.aggregator.storage.sqlite import SqliteStorage
from deniable.aggregator.storage.sqlite.index import _survey_ids
from deniable.shared.errors import AlreadyExists
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.aggregator.storage.test_storage_contract import logged, recount, report, submit, survey

ROOT = Path(__file__).resolve().parents[3]
WAIT = 60.0  # seconds: a bound on a hang, never reached when the code works


def batch(start: int, count: int, bit: int = 1, question: str = "q1") -> list[pb.Report]:
    return [
        report(f"{i * 7919:032x}", (i + bit) % 2, question) for i in range(start, start + count)
    ]


def segments(path: Path) -> list[tuple[str, int, int]]:
    db = sqlite3.connect(path)
    try:
        return db.execute(
            "SELECT survey_id, last_seq, count FROM id_segments ORDER BY 1, 2"
        ).fetchall()
    finally:
        db.close()


def open_small(path: Path, segment_ids: int = 100) -> SqliteStorage:
    """A storage that seals every ``segment_ids`` ids, inline (no thread)."""
    return SqliteStorage(str(path), segment_ids=segment_ids, background=False)


def test_ids_stay_exact_through_sealing_and_reopening(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    storage = open_small(path)
    storage.create_survey(survey())
    for start in range(0, 740, 37):
        assert submit(storage, batch(start, 37)).stored == 37
    sealed = segments(path)
    assert [row[2] for row in sealed] == [111, 111, 111, 111, 111, 111]  # 3 batches each
    assert storage._index.surveys["s1"].recent.count == 740 - 666
    for start in (0, 111, 703):  # a sealed batch, one at a segment's edge, a recent one
        again = submit(storage, batch(start, 37))
        assert (again.stored, again.already_stored) == (0, 37)
    with pytest.raises(AlreadyExists, match=r"reports\[1\].report_id: '0+1eef' is already"):
        submit(storage, [report("fresh", 1), *batch(1, 1, bit=0)])  # sealed, other content
    storage.close()
    reopened = open_small(path)
    try:
        assert segments(path) == sealed
        assert reopened._index.surveys["s1"].recent.count == 74
        assert submit(reopened, batch(500, 300)).already_stored == 240
        with pytest.raises(AlreadyExists):
            submit(reopened, batch(20, 1, bit=0))
        assert reopened.tally("s1", "q1") == recount(reopened, "s1", "q1") == Tally(800, (400,))
    finally:
        reopened.close()


def test_equal_fingerprints_never_merge_two_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every id gets the same fingerprint: every lookup is a match, and ids still decide."""

    def clash(self: Hasher, ids: np.ndarray) -> np.ndarray:
        return np.full(len(ids), 12345, dtype=np.uint64)

    monkeypatch.setattr(Hasher, "__call__", clash)
    path = tmp_path / "x.db"
    storage = open_small(path, segment_ids=50)
    storage.create_survey(survey())
    for start in range(0, 200, 20):
        assert submit(storage, batch(start, 20)).stored == 20
    assert submit(storage, batch(10, 30)).stored == 0  # 30 resends across two segments
    with pytest.raises(AlreadyExists):
        submit(storage, batch(199, 1, bit=0))
    assert submit(storage, batch(200, 5)).stored == 5
    storage.close()
    reopened = open_small(path, segment_ids=50)
    try:
        assert submit(reopened, batch(0, 210)).already_stored == 205
        assert reopened.tally("s1", "q1") == recount(reopened, "s1", "q1") == Tally(210, (105,))
    finally:
        reopened.close()


def test_the_filter_grows_and_keeps_every_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_survey_ids, "INITIAL_CAPACITY", 64)
    storage = open_small(tmp_path / "x.db", segment_ids=300)
    try:
        storage.create_survey(survey())
        ids = storage._index.surveys["s1"]
        capacities = [ids.bloom.capacity]
        for start in range(0, 1000, 100):
            submit(storage, batch(start, 100))
            capacities.append(ids.bloom.capacity)
        assert capacities[0] == 64
        assert capacities[-1] >= 1000
        assert len(set(capacities)) >= 4
        assert len(ids.bloom.maybe(np.array([ids.recent.prints[0]]))) == 1
        assert submit(storage, batch(0, 1000)).already_stored == 1000
    finally:
        storage.close()


def test_a_database_of_the_previous_version_is_sealed_when_opened(tmp_path: Path) -> None:
    """A version-5 database (no id index on disk): its log is read once and sealed."""
    path = tmp_path / "v5.db"
    storage = open_small(path, segment_ids=10**9)
    storage.create_survey(survey())
    for start in range(0, 500, 50):
        submit(storage, batch(start, 50))
    storage.close()
    db = sqlite3.connect(path)
    for table in ("meta", "id_segments", "id_chunks"):
        db.execute(f"DROP TABLE {table}")
    db.execute("PRAGMA user_version = 5")
    db.commit()
    db.close()
    upgraded = open_small(path, segment_ids=120)
    try:
        assert [row[2] for row in segments(path)] == [150, 150, 150]
        assert upgraded._index.surveys["s1"].recent.count == 50
        assert submit(upgraded, batch(0, 510)).already_stored == 500
    finally:
        upgraded.close()


def test_closing_a_survey_deletes_its_segments(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    storage = open_small(path, segment_ids=30)
    storage.create_survey(survey())
    storage.create_survey(survey("s2", ("q1",)))
    submit(storage, batch(0, 40))
    submit(storage, [report(f"b{i}", 1, survey_id="s2") for i in range(40)])
    assert {row[0] for row in segments(path)} == {"s1", "s2"}
    storage.close_survey("s1")
    assert {row[0] for row in segments(path)} == {"s2"}
    assert [r.report_id for r in logged(storage)][:2] == [f"{0:032x}", f"{7919:032x}"]
    storage.close()


_CRASH = """
import os, sys
sys.path.insert(0, {root!r})
from deniable.aggregator.storage.sqlite.index import _jobs as _index_jobs
from deniable.aggregator.storage.sqlite import SqliteStorage
from tests.aggregator.storage.test_id_index import batch
from tests.aggregator.storage.test_storage_contract import submit, survey
real = _index_jobs.write_segment
def crash(db, survey_id, sealed):
    real(db, survey_id, sealed)
    os._exit(3)  # the segment is written but its transaction never commits
_index_jobs.write_segment = crash
storage = SqliteStorage({path!r}, segment_ids=100, background=False)
storage.create_survey(survey())
for start in range(0, 300, 50):
    submit(storage, batch(start, 50))
"""


def test_a_crash_while_sealing_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    code = _CRASH.format(root=str(ROOT), path=str(path))
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=False, timeout=WAIT)
    assert done.returncode == 3
    assert segments(path) == []
    storage = open_small(path, segment_ids=1000)
    try:
        assert storage._index.surveys["s1"].recent.count == 100
        assert submit(storage, batch(0, 120)).already_stored == 100
        assert storage.tally("s1", "q1") == recount(storage, "s1", "q1") == Tally(120, (60,))
    finally:
        storage.close()


def test_a_background_thread_seals_while_batches_arrive(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    storage = SqliteStorage(str(path), segment_ids=200)
    storage.create_survey(survey())
    errors: list[BaseException] = []

    def send(first: int) -> None:
        try:
            for start in range(first, first + 1000, 50):
                submit(storage, batch(start, 50))
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=send, args=(first,)) for first in (0, 1000, 2000)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    assert errors == []
    storage.close()  # waits for the sealing in hand
    assert sum(row[2] for row in segments(path)) >= 2000
    reopened = SqliteStorage(str(path), segment_ids=200)
    try:
        assert submit(reopened, batch(0, 3000)).already_stored == 3000
        assert reopened.tally("s1", "q1") == recount(reopened, "s1", "q1")
    finally:
        reopened.close()


def test_a_damaged_segment_list_is_an_error_not_a_silent_loss(tmp_path: Path) -> None:
    """A log row repeated after the last segment is found when the survey is loaded."""
    path = tmp_path / "x.db"
    storage = open_small(path, segment_ids=100)
    storage.create_survey(survey())
    for start in range(0, 150, 50):
        submit(storage, batch(start, 50))
    storage.close()
    db = sqlite3.connect(path)
    db.execute(
        "INSERT INTO log (survey_id, reports) SELECT survey_id, reports FROM log WHERE seq = 1"
    )
    db.commit()
    db.close()
    with pytest.raises(StorageError, match=r"log row 4 of .* is damaged: report id '0+' appears"):
        open_small(path)


class FailingCommit:
    """A connection whose next ``COMMIT`` fails, as a full disk would make it."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.fail = True

    def execute(self, sql: str, parameters: Any = ()) -> sqlite3.Cursor:
        if sql == "COMMIT" and self.fail:
            self.fail = False
            raise sqlite3.OperationalError("database or disk is full")
        return self.db.execute(sql, parameters)

    def __getattr__(self, name: str) -> object:
        return getattr(self.db, name)


@pytest.mark.parametrize("background", [True, False], ids=["thread", "inline"])
def test_ids_entered_while_a_commit_fails_are_forgotten(tmp_path: Path, background: bool) -> None:
    """A batch's ids are entered only once its COMMIT succeeded; a failed COMMIT leaves none."""
    storage = SqliteStorage(str(tmp_path / "x.db"), segment_ids=100, background=background)
    try:
        storage.create_survey(survey())
        submit(storage, batch(0, 60))
        real = storage._db
        storage._db = FailingCommit(real)  # type: ignore[assignment]
        with pytest.raises(sqlite3.OperationalError, match="disk is full"):
            submit(storage, batch(60, 30))
        storage._db = real
        ids = storage._index.surveys["s1"]
        assert ids.recent.count == 60
        assert storage.tally("s1", "q1") == Tally(60, (30,))
        assert submit(storage, batch(50, 40)).stored == 30  # 60..89 are new after all
        assert storage.tally("s1", "q1") == recount(storage, "s1", "q1") == Tally(90, (45,))
    finally:
        storage.close()


@pytest.mark.parametrize("background", [True, False], ids=["thread", "inline"])
def test_a_failure_to_enter_committed_ids_acknowledges_then_refuses(
    tmp_path: Path, background: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A committed batch is acknowledged even if its ids cannot be entered; then refusal.

    Later batches are refused until a restart rebuilds the index from the database,
    which then knows every id.
    """
    path = tmp_path / "x.db"
    storage = SqliteStorage(str(path), segment_ids=100, background=background)
    try:
        storage.create_survey(survey())
        submit(storage, batch(0, 20))

        def fail(*args: object, **kwargs: object) -> None:
            raise MemoryError("no room for the ids")

        monkeypatch.setattr(_survey_ids.SurveyIds, "enter", fail)
        assert submit(storage, batch(20, 30)).stored == 30  # committed: acknowledged
        monkeypatch.undo()
        with pytest.raises(StorageError, match="restart the daemon"):
            submit(storage, batch(50, 10))
        assert storage.tally("s1", "q1") == Tally(50, (25,))
    finally:
        storage.close()
    reopened = open_small(path)
    try:
        again = submit(reopened, batch(0, 60))
        assert (again.stored, again.already_stored) == (10, 50)
        assert reopened.tally("s1", "q1") == recount(reopened, "s1", "q1") == Tally(60, (30,))
    finally:
        reopened.close()
