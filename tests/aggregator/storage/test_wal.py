"""The preallocated write-ahead log: commits overwrite it, and zeros never read as data."""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from deniable.aggregator.storage import Storage, open_storage
from deniable.aggregator.storage.sqlite import SqliteStorage
from deniable.aggregator.storage.sqlite import _storage as sqlite_module
from deniable.aggregator.storage.sqlite._wal import preallocate_wal, wal_target_size
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.aggregator.storage.test_storage_contract import logged, recount, report, submit, survey

ROOT = Path(__file__).resolve().parents[3]


def batch(start: int, count: int) -> list[pb.Report]:
    return [report(f"r{i:08d}", i % 3 == 0) for i in range(start, start + count)]


def assert_stores_a_batch(storage: Storage) -> None:
    """A new survey on ``storage`` takes a batch of 10 reports; the storage is closed after."""
    try:
        storage.create_survey(survey())
        assert submit(storage, batch(0, 10)).stored == 10
    finally:
        storage.close()


def test_the_log_is_zero_filled_to_its_working_size_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    storage = open_storage(f"sqlite:///{path}")
    try:
        assert isinstance(storage, SqliteStorage)
        target = wal_target_size(storage._db)
        wal = Path(f"{path}-wal")
        assert wal.stat().st_size == target  # 1000 frames of 4096 + 24 bytes, plus room
        assert target == 32 + 1000 * (4096 + 24) + (4 << 20)
        storage.create_survey(survey())
        for start in range(0, 4000, 1000):
            submit(storage, batch(start, 1000))
        assert wal.stat().st_size == target  # the commits wrote over the zeros
    finally:
        storage.close()
    assert not Path(f"{path}-wal").exists()  # SQLite removes the log on a clean close


def test_only_bytes_past_the_end_are_written(tmp_path: Path) -> None:
    wal = tmp_path / "x-wal"
    wal.write_bytes(b"frames!")
    assert preallocate_wal(str(wal), 100) == 93
    assert wal.read_bytes() == b"frames!" + bytes(93)
    assert preallocate_wal(str(wal), 50) == 0  # never shrinks, never rewrites
    assert wal.stat().st_size == 100


_CRASH = """
import os, sys
sys.path.insert(0, {root!r})
from deniable.aggregator.storage import Storage, open_storage
from tests.aggregator.storage.test_wal import batch
from tests.aggregator.storage.test_storage_contract import submit, survey
storage = open_storage("sqlite:///" + {path!r})
if {reports}:
    storage.create_survey(survey())
    for start in range(0, {reports}, 500):
        submit(storage, batch(start, 500))
os._exit(0)  # no close: the log stays, with its committed frames and the zeros after them
"""


def crash_after(path: Path, reports: int) -> None:
    code = _CRASH.format(root=str(ROOT), path=str(path), reports=reports)
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_a_crash_leaves_a_log_that_recovers_exactly(tmp_path: Path) -> None:
    """Committed frames followed by zeros: recovery reads the frames and stops at the zeros."""
    path = tmp_path / "c.db"
    crash_after(path, 3000)
    wal = Path(f"{path}-wal")
    assert wal.stat().st_size > 3 * 1000  # the log survived the crash, zeros included
    storage = open_storage(f"sqlite:///{path}")
    try:
        assert recount(storage, "s1", "q1") == storage.tally("s1", "q1")
        assert len(logged(storage)) == 3000
        assert [r.report_id for r in logged(storage)] == [f"r{i:08d}" for i in range(3000)]
    finally:
        storage.close()


def test_a_log_of_zeros_alone_reads_as_empty(tmp_path: Path) -> None:
    """A crash right after the zeros were written and before any commit."""
    path = tmp_path / "z.db"
    open_storage(f"sqlite:///{path}").close()  # schema committed and checkpointed
    crash_after(path, 0)
    assert not any(Path(f"{path}-wal").read_bytes())
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert_stores_a_batch(open_storage(f"sqlite:///{path}"))


def test_a_copy_of_a_crashed_database_reads_the_same(tmp_path: Path) -> None:
    """What `check` and backups see: the database and its log copied while not open."""
    path = tmp_path / "d.db"
    crash_after(path, 1000)
    copy = tmp_path / "copy"
    copy.mkdir()
    for suffix in ("", "-wal"):
        shutil.copy(f"{path}{suffix}", copy / f"d.db{suffix}")
    with sqlite3.connect(copy / "d.db") as db:
        assert db.execute("SELECT n FROM tallies WHERE question_id = 'q1'").fetchone() == (1000,)
    assert os.path.getsize(copy / "d.db-wal") > 0


def test_a_log_that_cannot_be_extended_is_logged_not_fatal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A full disk at start: the daemon still opens its database and says why commits may fail."""

    def full_disk(path: str, size: int) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sqlite_module, "preallocate_wal", full_disk)
    with caplog.at_level(logging.WARNING, logger="deniable.aggregator"):
        storage = open_storage(f"sqlite:///{tmp_path / 'f.db'}")
    assert_stores_a_batch(storage)
    assert "cannot preallocate the write-ahead log" in caplog.text
    assert "No space left on device" in caplog.text
