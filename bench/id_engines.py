"""Which engine should refuse a second copy of a report id: one workload, every candidate.

Each candidate id store is filled to N stored ids (fast: no fsync, big transactions,
not timed) and then takes durable batches of 1000 fresh random 32-hex-digit ids, each
batch in one atomic write with the batch's log row (17 KB, the size of the daemon's
compact row), the question "is any of these stored already" answered by the engine:

- ``sqlite-pk``: SQLite, ``ids(key PRIMARY KEY, seq) WITHOUT ROWID``, WAL,
  ``synchronous=FULL``; the check is one ``SELECT ... WHERE key IN (...)``, and the
  primary key refuses a second copy (a plain ``INSERT``).
- ``sqlite-epoch``: SQLite with a key whose order follows arrival: ``(epoch, key)``,
  the epoch a coarse arrival counter (``--epoch-ids`` ids each). Inserts go to the
  current epoch's part of the tree, but a resend may come in any later epoch, so an
  exact check looks the ids up in every epoch (mode ``all``: the key then refuses
  nothing across epochs, the check does). Mode ``window`` looks in the last two epochs
  only: cheaper and NOT exactly once, measured to show what the locality is worth.
- ``sqlite-v7``: the same table as ``sqlite-pk`` for ids that carry a time-ordered
  prefix (a 48-bit millisecond clock, as in UUIDv7, then 80 random bits): the best case
  of "ids that follow arrival", which only cooperating clients give.
- ``rocksdb``: RocksDB through ``rocksdict`` (an LSM tree: O'Neil et al. 1996), bloom
  filters of 10 bits per key and the index pinned in memory, a 32 MB block cache for
  data blocks, ``WriteOptions.sync``; mode ``get`` checks with one
  MultiGet, mode ``may`` with ``key_may_exist`` per key (then ``get`` for the maybes).
  RocksDB has no insert-if-absent: a put overwrites, so the check under the one writer
  is what refuses the second copy, not the engine.
- ``lmdb``: LMDB through ``lmdb`` (a copy-on-write B+tree), ``sync=True``; the check is
  ``Cursor.getmulti`` inside the write transaction, and ``putmulti(overwrite=False)``
  refuses a second copy.
- ``daemon``: the aggregator's own ``SqliteStorage.submit`` of 1000 yes/no reports (its
  log row, tally and fsync included; the id check is ``IdIndex.claim`` plus entering the
  ids after the commit, timed by wrapping them).

Every engine but the daemon also times mode ``log``: the same commit with the log row
only, which is what the batch costs without any id store; the per-id overhead is the
batch's median minus that. For the daemon it is its index's own work: inline (the
median of the wrapped calls) plus its background thread's CPU per id over the fill.
Each engine runs in a process of its own (so memory, bytes written and reopen are its
own), all started by this one; the timed batches are interleaved round-robin across
engines and modes, the first engine rotating, so they share the machine's noise. Bytes
written are the process's ``write_bytes`` (``/proc/self/io``) per batch, background
threads included; CPU is the process's CPU time per batch, RocksDB's compaction threads
included.
After each fill the engine is closed and reopened in a fresh process, timed from opening
(the daemon: ``SqliteStorage``) to its first durable batch done; the timed batches run in
that process, so its resident memory, read after them, is not the fill's; the slope
between the two largest N is the memory per 10⁶ ids.

    python bench/id_engines.py                                # 10⁶ and 5·10⁶ ids, 8-10 min
    python bench/id_engines.py --ids 200000 1000000 --batches 50 --engines sqlite-pk lmdb
    python bench/id_engines.py --json figures.json --dir /work/scratch-engines

Needs the ``bench`` extra for RocksDB and LMDB (``pip install -e '.[bench]'``); an
engine whose library is missing is skipped with a one-line hint.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO, Any

import numpy as np

BATCH = 1000  # ids per durable batch
SURVEY = (1).to_bytes(4, "big")  # every key starts with its survey's number
FILL_CHUNK = 100_000  # ids per transaction while filling
EPOCH_IDS = 100_000  # ids per arrival epoch of sqlite-epoch (--epoch-ids)
BUDGET_US_PER_ID = 1.0  # check + insert beyond the commit's own fsync
BUDGET_MB_PER_MILLION = 10.0  # resident memory per 10⁶ stored ids
BUDGET_REOPEN_S = 2.0  # at 5·10⁶ ids
ENGINES = ["sqlite-pk", "sqlite-epoch", "sqlite-v7", "rocksdb", "lmdb", "daemon"]
LIBRARY = {"rocksdb": "rocksdict", "lmdb": "lmdb"}
HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


# --- ids -------------------------------------------------------------------------------


def random_ids(rng: np.random.Generator, count: int) -> np.ndarray[Any, np.dtype[np.uint8]]:
    """``count`` random 16-byte ids (the 32 hex digits a client sends, packed)."""
    return rng.integers(0, 256, size=(count, 16), dtype=np.uint8)


class V7Clock:
    """Time-ordered ids: a 48-bit millisecond counter, then 80 random bits (as UUIDv7).

    The counter starts at the wall clock and advances one millisecond per 1000 ids, as
    if the ids arrived at 10⁶ per second, so that a filled store holds the past.
    """

    def __init__(self) -> None:
        self.ms = int(time.time() * 1000) - 10**7

    def ids(self, rng: np.random.Generator, count: int) -> np.ndarray[Any, np.dtype[np.uint8]]:
        """``count`` ids in arrival order, continuing the previous call's."""
        out = random_ids(rng, count)
        stamps = self.ms + np.arange(count, dtype=np.uint64) // BATCH
        self.ms += -(-count // BATCH)
        for byte in range(6):
            out[:, byte] = (stamps >> np.uint64(8 * (5 - byte))) & np.uint64(0xFF)
        return out


def keys_of(ids: np.ndarray[Any, np.dtype[np.uint8]]) -> list[bytes]:
    """Each id's key: the survey's number, then the id."""
    rows = np.empty((len(ids), 20), dtype=np.uint8)
    rows[:, :4] = np.frombuffer(SURVEY, dtype=np.uint8)
    rows[:, 4:] = ids
    flat = rows.tobytes()
    return [flat[i : i + 20] for i in range(0, len(flat), 20)]


def log_row(ids: np.ndarray[Any, np.dtype[np.uint8]], rng: np.random.Generator) -> bytes:
    """A batch's log row: the daemon's compact hex layout (ids packed, a byte per bit)."""
    return b"\x02" + ids.tobytes() + rng.integers(0, 2, size=len(ids), dtype=np.uint8).tobytes()


# --- the engines, each in its own process ------------------------------------------------


@dataclass
class Timing:
    """One batch: seconds to check, to write, to commit; what it found already stored."""

    check: float
    write: float
    commit: float
    found: int = 0


class Engine:
    """An id store: filled without fsync, then durable batches (and the log-only commit)."""

    modes: tuple[str, ...] = ("log",)
    refuses = "yes"  # whether the engine itself refuses a second copy of a key

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.seq = 0  # log rows written
        self.stored = 0  # ids stored
        self.background = 0.0  # seconds of the daemon's background work (sealing...)

    def fill(self, keys: list[bytes], row: bytes) -> None:
        """Store ``keys`` (sorted) and one log row, without waiting for the disk."""
        raise NotImplementedError

    def batch(self, keys: list[bytes], row: bytes, mode: str) -> Timing:
        """One durable batch of new ``keys`` and its log row (mode ``log``: the row only)."""
        raise NotImplementedError

    def durable(self) -> None:
        """After filling: make everything durable and go back to durable commits."""

    def close(self) -> None:
        """Close the store."""

    def next_ids(self, rng: np.random.Generator, count: int) -> np.ndarray[Any, np.dtype[np.uint8]]:
        """Fresh ids as this engine's clients would send them."""
        return random_ids(rng, count)


def _placeholders(count: int) -> str:
    return ",".join("?" * count)


class SqlitePk(Engine):
    """``ids(key BLOB PRIMARY KEY, seq) WITHOUT ROWID`` and ``log``, WAL, synchronous=FULL."""

    modes: tuple[str, ...] = ("pk", "log")
    table = "CREATE TABLE IF NOT EXISTS ids (key BLOB PRIMARY KEY, seq INTEGER NOT NULL) "

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self.db = sqlite3.connect(folder / "ids.db", isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute("PRAGMA cache_size=-65536")  # 64 MB: bounded, whatever N
        self.db.execute(self.table + "WITHOUT ROWID")
        self.db.execute("CREATE TABLE IF NOT EXISTS log (seq INTEGER PRIMARY KEY, row BLOB)")
        (self.seq,) = self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM log").fetchone()

    def insert(self, keys: list[bytes]) -> None:
        """Insert new keys; the primary key raises IntegrityError on a stored one."""
        self.db.executemany("INSERT INTO ids VALUES (?, ?)", [(k, self.seq) for k in keys])

    def found(self, keys: list[bytes], mode: str) -> set[bytes]:
        """The keys stored already."""
        rows = self.db.execute(
            f"SELECT key FROM ids WHERE key IN ({_placeholders(len(keys))})", keys
        ).fetchall()
        return {bytes(r[0]) for r in rows}

    def fill(self, keys: list[bytes], row: bytes) -> None:
        """Store the sorted keys and a log row in one transaction, without fsync."""
        self.db.execute("PRAGMA synchronous=OFF")
        self.db.execute("BEGIN")
        self.seq += 1
        self.db.execute("INSERT INTO log VALUES (?, ?)", (self.seq, row))
        self.insert(keys)
        self.db.execute("COMMIT")
        self.stored += len(keys)

    def durable(self) -> None:
        """Make the fill durable and go back to durable commits."""
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.db.execute("PRAGMA synchronous=FULL")

    def batch(self, keys: list[bytes], row: bytes, mode: str) -> Timing:
        """One durable batch (see :meth:`Engine.batch`)."""
        t0 = time.perf_counter()
        self.db.execute("BEGIN IMMEDIATE")
        found: set[bytes] = set() if mode == "log" else self.found(keys, mode)
        t1 = time.perf_counter()
        self.seq += 1
        self.db.execute("INSERT INTO log VALUES (?, ?)", (self.seq, row))
        if mode != "log":
            self.insert([k for k in keys if k not in found])
        t2 = time.perf_counter()
        self.db.execute("COMMIT")
        t3 = time.perf_counter()
        self.stored += 0 if mode == "log" else len(keys) - len(found)
        return Timing(t1 - t0, t2 - t1, t3 - t2, len(found))

    def close(self) -> None:
        """Close the store."""
        self.db.close()


class SqliteV7(SqlitePk):
    """``sqlite-pk`` for ids that begin with a millisecond clock (cooperating clients)."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self.clock = V7Clock()
        (last,) = self.db.execute("SELECT MAX(key) FROM ids").fetchone()
        if last is not None:  # reopened: go on after the last stamp
            self.clock.ms = int.from_bytes(last[4:10], "big") + 1

    def next_ids(self, rng: np.random.Generator, count: int) -> np.ndarray[Any, np.dtype[np.uint8]]:
        """Fresh time-ordered ids."""
        return self.clock.ids(rng, count)


class SqliteEpoch(SqlitePk):
    """Key ``(epoch, key)``: inserts follow arrival; an exact check looks in every epoch."""

    modes: tuple[str, ...] = ("all", "window", "log")
    refuses = "no: the check across epochs does"
    table = (
        "CREATE TABLE IF NOT EXISTS ids (epoch INTEGER NOT NULL, key BLOB NOT NULL, "
        "seq INTEGER NOT NULL, PRIMARY KEY (epoch, key)) "
    )
    epoch_ids = EPOCH_IDS

    def insert(self, keys: list[bytes]) -> None:
        """Insert new keys into the current epoch; refused only within it."""
        epoch = self.stored // self.epoch_ids
        self.db.executemany(
            "INSERT INTO ids VALUES (?, ?, ?)", [(epoch, k, self.seq) for k in keys]
        )

    def found(self, keys: list[bytes], mode: str) -> set[bytes]:
        """The keys stored already: in every epoch, or (``window``) the last two."""
        last = self.stored // self.epoch_ids
        epochs = list(range(max(0, last - 1) if mode == "window" else 0, last + 1))
        rows = self.db.execute(
            f"SELECT key FROM ids WHERE epoch IN ({_placeholders(len(epochs))}) "
            f"AND key IN ({_placeholders(len(keys))})",
            [*epochs, *keys],
        ).fetchall()
        return {bytes(r[0]) for r in rows}


class Rocks(Engine):
    """RocksDB via rocksdict: bloom filters, pinned index/filter blocks, synced writes."""

    modes: tuple[str, ...] = ("get", "may", "log")
    refuses = "no: a put overwrites; the check under one writer refuses"

    def __init__(self, folder: Path) -> None:
        from rocksdict import (
            BlockBasedOptions,
            Cache,
            DBCompressionType,
            Options,
            Rdict,
            ReadOptions,
            WriteOptions,
        )

        super().__init__(folder)
        table = BlockBasedOptions()
        table.set_bloom_filter(10, False)  # full filters, about 1% false positives
        table.set_block_cache(Cache(32 * 2**20))  # data blocks only
        # Index and filter blocks stay pinned in the table readers (1.25 bytes of filter
        # per key, plus the index), not in the block cache: a file's whole filter block
        # (MBs) does not fit one shard of a sharded LRU cache, so there it is evicted
        # and read again at every lookup (10 ms per 1000 keys at 5·10⁶, not 0.9).
        table.set_cache_index_and_filter_blocks(False)
        table.set_format_version(5)
        options = Options(raw_mode=True)
        options.create_if_missing(True)
        options.set_block_based_table_factory(table)
        options.set_compression_type(DBCompressionType.none())  # random ids: incompressible
        options.set_max_background_jobs(2)
        options.set_write_buffer_size(32 * 2**20)
        options.set_level_compaction_dynamic_level_bytes(True)
        options.set_max_open_files(512)
        # Named again for the default column family: without it, rocksdict 0.3.29 opens an
        # existing database with the options of its OPTIONS file, where the filter policy
        # is not kept (filter_policy=nullptr), and every lookup then reads data blocks.
        self.db = Rdict(str(folder / "rocks"), options, column_families={"default": options})
        self.read = ReadOptions()
        self.synced = WriteOptions()
        self.synced.sync = True
        self.unsynced = WriteOptions()
        # A property at run time, which rocksdict's stub calls a method.
        setattr(self.unsynced, "disable_wal", True)  # noqa: B010
        self.write_options = self.synced
        last = self.db.get(b"\xff\xff\xff\xff", None, self.read)
        self.seq = 0 if last is None else int.from_bytes(last, "big")

    def _write(self, keys: list[bytes], row: bytes, options: Any) -> tuple[float, float]:
        from rocksdict import WriteBatch

        t0 = time.perf_counter()
        self.seq += 1
        value = self.seq.to_bytes(8, "big")
        wb = WriteBatch(raw_mode=True)
        for key in keys:
            wb.put(key, value)
        wb.put(b"\xff\xff\xff\xfe" + value, row)  # the log row, after every survey's ids
        wb.put(b"\xff\xff\xff\xff", value)  # the last log row's number
        t1 = time.perf_counter()
        self.db.write(wb, options)
        return t1 - t0, time.perf_counter() - t1

    def fill(self, keys: list[bytes], row: bytes) -> None:
        """Store the sorted keys and a log row in one transaction, without fsync."""
        self._write(keys, row, self.unsynced)
        self.stored += len(keys)

    def durable(self) -> None:
        """Make the fill durable and go back to durable commits."""
        self.db.flush(wait=True)  # what the WAL-less fill wrote, now in table files
        self.settle()

    def settle(self, seconds: float = 120.0) -> None:
        """Wait (bounded) until no compaction is pending or running."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            busy = self.db.property_int_value("rocksdb.compaction-pending") or 0
            running = self.db.property_int_value("rocksdb.num-running-compactions") or 0
            if not busy and not running:
                return
            time.sleep(0.2)

    def found(self, keys: list[bytes], mode: str) -> set[bytes]:
        """The keys stored already, by MultiGet or by key_may_exist then get."""
        if mode == "get":
            values = self.db.get(list[Any](keys), None, self.read) or []
            return {k for k, v in zip(keys, values, strict=True) if v is not None}
        maybe = [k for k in keys if self.db.key_may_exist(k, False, self.read)]
        if not maybe:
            return set()
        values = self.db.get(list[Any](maybe), None, self.read) or []
        return {k for k, v in zip(maybe, values, strict=True) if v is not None}

    def batch(self, keys: list[bytes], row: bytes, mode: str) -> Timing:
        """One durable batch (see :meth:`Engine.batch`)."""
        t0 = time.perf_counter()
        found = set() if mode == "log" else self.found(keys, mode)
        check = time.perf_counter() - t0
        new = [] if mode == "log" else [k for k in keys if k not in found]
        write, commit = self._write(new, row, self.synced)
        self.stored += len(new)
        return Timing(check, write, commit, len(found))

    def close(self) -> None:
        """Close the store."""
        self.db.close()


class Lmdb(Engine):
    """LMDB: ids and log in one environment, sync=True, putmulti(overwrite=False)."""

    modes: tuple[str, ...] = ("putmulti", "log")

    def __init__(self, folder: Path) -> None:
        import lmdb

        super().__init__(folder)
        self.env = lmdb.open(
            str(folder / "lmdb"), map_size=32 * 2**30, max_dbs=2, sync=True, readahead=False
        )
        self.ids = self.env.open_db(b"ids")
        self.log = self.env.open_db(b"log", integerkey=False)
        with self.env.begin() as txn:
            self.seq = txn.stat(self.log)["entries"]

    def _txn(self, keys: list[bytes], row: bytes, mode: str) -> Timing:
        t0 = time.perf_counter()
        with self.env.begin(write=True) as txn:
            found: set[bytes] = set()
            if mode not in ("log", "fill"):
                cursor = txn.cursor(self.ids)
                found = {k for k, _ in cursor.getmulti(keys)}
            t1 = time.perf_counter()
            self.seq += 1
            value = self.seq.to_bytes(8, "big")
            txn.put(value, row, db=self.log)
            if mode != "log":
                cursor = txn.cursor(self.ids)
                new = [(k, value) for k in keys if k not in found]
                _, added = cursor.putmulti(new, dupdata=False, overwrite=False)
                assert added == len(new)
                self.stored += added
            t2 = time.perf_counter()
        t3 = time.perf_counter()  # the with block committed
        return Timing(t1 - t0, t2 - t1, t3 - t2, len(found))

    def fill(self, keys: list[bytes], row: bytes) -> None:
        """Store the sorted keys and a log row in one transaction, without fsync."""
        self._txn(keys, row, "fill")

    def batch(self, keys: list[bytes], row: bytes, mode: str) -> Timing:
        """One durable batch (see :meth:`Engine.batch`)."""
        return self._txn(keys, row, mode)

    def close(self) -> None:
        """Close the store."""
        self.env.close()


def _yes(bits: Any, keep: Any) -> list[int]:
    return [int(bits[keep].sum())]


class Daemon(Engine):
    """The aggregator's own ``SqliteStorage``: submit of yes/no reports."""

    modes: tuple[str, ...] = ("submit",)
    refuses = "no: the daemon's index in memory, then the log row, refuses"

    def __init__(self, folder: Path) -> None:
        from deniable.aggregator.storage.sqlite import SqliteStorage
        from deniable.shared.wire.v1 import aggregator_pb2 as pb

        super().__init__(folder)
        self.pb = pb
        path = folder / "daemon.db"
        fresh = not path.exists()
        self.storage = SqliteStorage(str(path))
        self.mechanism = pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=0.5))
        if fresh:
            question = pb.Question(
                id="q1", text="Q?", binary=pb.BinaryQuestion(), mechanism=self.mechanism
            )
            self.storage.create_survey(pb.Survey(id="s1", title="T", questions=[question]))
        template = pb.Report(
            report_id="0" * 32,
            survey_id="s1",
            question_id="q1",
            mechanism=self.mechanism,
            bit=True,
        ).SerializeToString()
        assert len(template) < 128
        self.row = np.frombuffer(bytes([0x0A, len(template)]) + template, dtype=np.uint8)
        self.index_seconds = 0.0
        index = self.storage._index
        claim, enter = index.claim, index.enter

        def timed_claim(*args: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return claim(*args)
            finally:
                self.index_seconds += time.perf_counter() - t0

        def timed_enter(*args: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return enter(*args)
            finally:
                self.index_seconds += time.perf_counter() - t0

        index.claim = timed_claim  # type: ignore[method-assign, assignment]
        index.enter = timed_enter  # type: ignore[method-assign, assignment]
        maintenance = self.storage._maintenance
        run_once = maintenance.run_once

        def timed_run_once() -> None:  # its CPU time: it may wait for the storage lock
            t0 = time.thread_time()
            try:
                run_once()
            finally:
                self.background += time.thread_time() - t0

        maintenance.run_once = timed_run_once  # type: ignore[method-assign]

    def submission(self, ids: np.ndarray[Any, np.dtype[np.uint8]], rng: np.random.Generator) -> Any:
        """The Submission the service would hand to storage for these ids' reports."""
        from deniable.aggregator.storage import ReportGroup, Submission
        from deniable.aggregator.storage.codec import decode_batch

        frames = np.tile(self.row, (len(ids), 1))
        digits = frames[:, 4:36]
        digits[:, 0::2] = HEX[ids >> 4]
        digits[:, 1::2] = HEX[ids & 0x0F]
        frames[:, -1] = rng.integers(0, 2, size=len(ids), dtype=np.uint8)
        decoded = decode_batch(frames.tobytes(), len(ids))

        groups = [
            ReportGroup(
                g.template.survey_id, g.template.question_id, g.rows, partial(_yes, g.values)
            )
            for g in decoded.groups
        ]
        return Submission(
            decoded.report_ids, decoded.payloads, groups, decoded.encode, decoded.positions
        )

    def fill_ids(self, ids: np.ndarray[Any, np.dtype[np.uint8]], rng: np.random.Generator) -> None:
        """Submit ``ids`` in batches of 10,000 without fsync."""
        with self.storage._lock:
            self.storage._db.execute("PRAGMA synchronous=OFF")
        for start in range(0, len(ids), 10_000):
            outcome = self.storage.submit(self.submission(ids[start : start + 10_000], rng))
            self.stored += outcome.stored

    def durable(self) -> None:
        """Make the fill durable and go back to durable commits."""
        survey = self.storage._index.surveys["s1"]
        deadline = time.monotonic() + 60
        while survey.recent.count >= self.storage.segment_ids or survey.bloom.full:
            if time.monotonic() > deadline:
                break
            time.sleep(0.1)  # the background thread seals and grows
        with self.storage._lock:
            self.storage._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self.storage._db.execute("PRAGMA synchronous=FULL")

    def timed_submit(self, submission: Any) -> Timing:
        """Submit one prepared batch; the index's share is the check."""
        self.index_seconds = 0.0
        t0 = time.perf_counter()
        outcome = self.storage.submit(submission)
        total = time.perf_counter() - t0
        self.stored += outcome.stored
        return Timing(self.index_seconds, 0.0, total - self.index_seconds, outcome.already_stored)

    def close(self) -> None:
        """Close the store."""
        self.storage.close()


KINDS: dict[str, type[Engine]] = {
    "sqlite-pk": SqlitePk,
    "sqlite-epoch": SqliteEpoch,
    "sqlite-v7": SqliteV7,
    "rocksdb": Rocks,
    "lmdb": Lmdb,
    "daemon": Daemon,
}


# --- the child: one engine, driven by JSON lines on stdin --------------------------------


def memory() -> dict[str, float]:
    """This process's VmRSS, RssAnon and RssFile in MB."""
    out: dict[str, float] = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "RssAnon", "RssFile"):
            out[name] = int(value.split()[0]) / 1024
    return out


def written() -> int:
    """Bytes this process caused to be written to storage (``/proc/self/io``)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("write_bytes:"):
            return int(line.split()[1])
    return 0


def disk_size(folder: Path) -> int:
    """Bytes of the files under ``folder``."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


class Child:
    """One engine in this process: fills, timed batches, stats, answering on stdout."""

    def __init__(self, kind: str, folder: Path, epoch_ids: int, stored: int) -> None:
        self.kind, self.folder = kind, folder
        SqliteEpoch.epoch_ids = epoch_ids
        self.rng = np.random.default_rng()
        t0 = time.perf_counter()
        self.engine = KINDS[kind](folder)
        self.opened = time.perf_counter() - t0
        self.engine.stored = stored
        self.sent: list[bytes] = []  # the keys of the last timed batch, to resend

    def fill(self, to: int) -> dict[str, Any]:
        """Fill to ``to`` stored ids, then go back to durable commits."""
        t0, cpu0, io0 = time.perf_counter(), time.process_time(), written()
        engine = self.engine
        start_ids = engine.stored
        while engine.stored < to:
            count = min(FILL_CHUNK, to - engine.stored)
            ids = engine.next_ids(self.rng, count)
            if isinstance(engine, Daemon):
                engine.fill_ids(ids, self.rng)
            else:
                for start in range(0, count, FILL_CHUNK):
                    part = ids[start : start + FILL_CHUNK]
                    engine.fill(sorted(keys_of(part)), log_row(part[:BATCH], self.rng))
        filled = time.perf_counter() - t0
        engine.durable()
        count = max(1, engine.stored - start_ids)
        return {
            "fill_s": filled,
            "settle_s": time.perf_counter() - t0 - filled,
            "fill_cpu_us_per_id": 1e6 * (time.process_time() - cpu0) / count,
            "fill_bytes_per_id": (written() - io0) / count,
            "background_us_per_id": 1e6 * engine.background / count,
        }

    def run(self, mode: str, count: int) -> list[dict[str, float]]:
        """``count`` timed durable batches of fresh ids in ``mode``."""
        out = []
        for _ in range(count):
            ids = self.engine.next_ids(self.rng, BATCH)
            daemon = self.engine if isinstance(self.engine, Daemon) else None
            prepared = daemon.submission(ids, self.rng) if daemon else None
            keys = sorted(keys_of(ids))
            row = log_row(ids, self.rng)
            before_io, before_cpu = written(), time.process_time()
            t0 = time.perf_counter()
            if daemon:
                timing = daemon.timed_submit(prepared)
            else:
                timing = self.engine.batch(keys, row, mode)
                if mode != "log":
                    self.sent = keys
            total = time.perf_counter() - t0
            cpu, io = time.process_time() - before_cpu, written() - before_io
            if timing.found:
                raise SystemExit(f"{self.kind}: {timing.found} fresh ids found stored")
            out.append(
                {
                    "total": total,
                    "check": timing.check,
                    "write": timing.write,
                    "commit": timing.commit,
                    "cpu": cpu,
                    "io": io,
                }
            )
        if isinstance(self.engine, Daemon):
            self.sent_submission = prepared
        return out

    def resend(self) -> dict[str, Any]:
        """Send the last batch again: the check must find every id, and a copy be refused."""
        engine = self.engine
        if isinstance(engine, Daemon):
            timing = engine.timed_submit(self.sent_submission)
            return {"found": timing.found, "refused": timing.found == BATCH}
        mode = engine.modes[0]
        found = (
            {k for k, _ in engine.env.begin().cursor(engine.ids).getmulti(self.sent)}
            if isinstance(engine, Lmdb)
            else engine.found(self.sent, mode)  # type: ignore[attr-defined]
        )
        refused: bool | None = None
        if isinstance(engine, SqlitePk):
            try:
                engine.db.execute("BEGIN IMMEDIATE")
                engine.insert(self.sent[:1])
            except sqlite3.IntegrityError:
                refused = True
            else:
                refused = False
            engine.db.execute("ROLLBACK")
        elif isinstance(engine, Lmdb):
            with engine.env.begin(write=True) as txn:
                _, added = txn.cursor(engine.ids).putmulti(
                    [(k, b"x") for k in self.sent], dupdata=False, overwrite=False
                )
                txn.abort()
            refused = added == 0
        return {"found": len(found), "refused": refused}

    def stats(self) -> dict[str, Any]:
        """Memory, disk size and ids stored."""
        return {**memory(), "disk": disk_size(self.folder), "stored": self.engine.stored}

    def serve(self, inp: IO[str], out: IO[str]) -> None:
        """Answer one JSON line per command until ``close``."""
        for line in inp:
            command = json.loads(line)
            op = command["op"]
            answer: Any
            if op == "fill":
                answer = self.fill(command["to"])
            elif op == "run":
                answer = self.run(command["mode"], command["count"])
            elif op == "resend":
                answer = self.resend()
            elif op == "stats":
                answer = self.stats()
            elif op == "first":  # the first check after opening, for the reopen time
                t0 = time.perf_counter()
                self.run(self.engine.modes[0], 1)
                answer = {"open": self.opened, "first": time.perf_counter() - t0, **memory()}
            else:
                self.engine.close()
                out.write(json.dumps({"closed": True}) + "\n")
                out.flush()
                return
            out.write(json.dumps(answer) + "\n")
            out.flush()


# --- the parent: start the engines, interleave, summarise ---------------------------------


@dataclass
class Proc:
    """A child process running one engine."""

    kind: str
    process: subprocess.Popen[str]
    modes: tuple[str, ...]
    samples: dict[tuple[int, str], list[dict[str, float]]] = field(default_factory=dict)
    stats: dict[int, dict[str, Any]] = field(default_factory=dict)
    fills: dict[int, dict[str, Any]] = field(default_factory=dict)
    resend: dict[str, Any] = field(default_factory=dict)
    reopen: dict[int, dict[str, Any]] = field(default_factory=dict)

    def restart(self, folder: Path, epoch_ids: int) -> dict[str, Any]:
        """Close the engine, open it in a fresh process, time that until its first check."""
        stored = self.ask(op="stats")["stored"]
        self.ask(op="close")
        self.process.wait(timeout=120)
        self.process = spawn(self.kind, folder, epoch_ids, stored)
        answer: dict[str, Any] = self.ask(op="first")
        return answer

    def ask(self, **command: Any) -> Any:
        """Send one command and wait for its answer."""
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"{self.kind}: the engine's process ended (see above)")
        return json.loads(line)


def start(kind: str, folder: Path, epoch_ids: int) -> Proc:
    """Start a child process for ``kind`` on a new ``folder``."""
    return Proc(kind, spawn(kind, folder, epoch_ids, 0), KINDS[kind].modes)


def spawn(kind: str, folder: Path, epoch_ids: int, stored: int) -> subprocess.Popen[str]:
    """A child process for ``kind`` on ``folder``, which holds ``stored`` ids."""
    return subprocess.Popen(
        [
            sys.executable,
            __file__,
            *("--child", kind, "--dir", str(folder)),
            *("--epoch-ids", str(epoch_ids), "--stored", str(stored)),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def available(kinds: Sequence[str]) -> list[str]:
    """The engines whose library imports; a one-line hint for each that does not."""
    out = []
    for kind in kinds:
        library = LIBRARY.get(kind)
        if library is not None:
            try:
                __import__(library)
            except ImportError:
                print(f"skipping {kind}: no {library} (pip install -e '.[bench]')")
                continue
        out.append(kind)
    return out


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def rounds(procs: Sequence[Proc], batches: int, per_round: int) -> Iterator[tuple[Proc, str, int]]:
    """The (engine, mode, count) runs of one N, round-robin, the first engine rotating."""
    done = 0
    turn = 0
    while done < batches:
        count = min(per_round, batches - done)
        order = list(procs[turn % len(procs) :]) + list(procs[: turn % len(procs)])
        for proc in order:
            for mode in proc.modes:
                yield proc, mode, count
        done += count
        turn += 1


def summarise(procs: Sequence[Proc], sizes: Sequence[int]) -> dict[str, Any]:
    """Medians, p99, shares, memory slope and budget verdicts for every engine and mode."""
    baseline: dict[int, float] = {}
    for proc in procs:
        if proc.kind == "sqlite-pk":
            for n in sizes:
                baseline[n] = statistics.median(1e3 * s["total"] for s in proc.samples[(n, "log")])
    rows = []
    for proc in procs:
        slope = anon = None
        if len(sizes) >= 2:
            a, b = sorted(sizes)[-2:]
            slope = (proc.stats[b]["VmRSS"] - proc.stats[a]["VmRSS"]) / ((b - a) / 1e6)
            anon = (proc.stats[b]["RssAnon"] - proc.stats[a]["RssAnon"]) / ((b - a) / 1e6)
        for mode in proc.modes:
            for n in sizes:
                samples = proc.samples[(n, mode)]
                total = [1e3 * s["total"] for s in samples]
                row: dict[str, Any] = {
                    "engine": proc.kind,
                    "mode": mode,
                    "ids": n,
                    "median_ms": statistics.median(total),
                    "p99_ms": percentile(total, 99),
                    "check_ms": 1e3 * statistics.median(s["check"] for s in samples),
                    "write_ms": 1e3 * statistics.median(s["write"] for s in samples),
                    "commit_ms": 1e3 * statistics.median(s["commit"] for s in samples),
                    "cpu_ms": 1e3 * statistics.fmean(s["cpu"] for s in samples),
                    "kb_written": statistics.fmean(s["io"] for s in samples) / 1024,
                    "rss_mb": proc.stats[n]["VmRSS"],
                    "rss_file_mb": proc.stats[n].get("RssFile", 0.0),
                    "disk_mb": proc.stats[n]["disk"] / 2**20,
                    "fill_s": proc.fills[n]["fill_s"],
                    "refused_by_engine": KINDS[proc.kind].refuses,
                }
                row["fill_cpu_us_per_id"] = proc.fills[n]["fill_cpu_us_per_id"]
                row["fill_bytes_per_id"] = proc.fills[n]["fill_bytes_per_id"]
                row["reopen_s"] = proc.reopen[n]["open"] + proc.reopen[n]["first"]
                if mode == "submit":  # the index's own work: inline, and in the background
                    row["us_per_id"] = (
                        row["check_ms"] * 1e3 / BATCH + proc.fills[n]["background_us_per_id"]
                    )
                    row["us_per_id_beyond_sqlite_log"] = (
                        (row["median_ms"] - baseline[n]) * 1e3 / BATCH if n in baseline else None
                    )
                elif mode != "log":
                    base = statistics.median(s["total"] for s in proc.samples[(n, "log")])
                    row["us_per_id"] = (statistics.median(total) / 1e3 - base) * 1e6 / BATCH
                if mode != "log":
                    row["mb_per_million"] = slope
                    row["anon_mb_per_million"] = anon
                    row["exact"] = not (proc.kind == "sqlite-epoch" and mode == "window")
                rows.append(row)
    return {"rows": rows, "resend": {p.kind: p.resend for p in procs}}


def verdict(row: dict[str, Any]) -> str:
    """Whether a row fits the budget, and if not, why."""
    misses = []
    if row["us_per_id"] >= BUDGET_US_PER_ID:
        misses.append("time")
    if row.get("mb_per_million") is not None and row["mb_per_million"] > BUDGET_MB_PER_MILLION:
        misses.append("memory")
    if row.get("reopen_s") is not None and row["reopen_s"] > BUDGET_REOPEN_S:
        misses.append("reopen")
    if not row["exact"]:
        misses.append("not exactly once")
    if not row["refused_by_engine"].startswith("yes"):
        misses.append("engine does not refuse")
    return "fits" if not misses else "no: " + ", ".join(misses)


def report(summary: dict[str, Any], sizes: Sequence[int]) -> None:
    """Print the tables and the verdicts."""
    print(
        "\nms per durable batch of 1000 fresh ids: median and p99 of the batch; medians of its"
        "\ncheck, write and commit; cpu: the process's CPU time per batch, all threads; KB"
        "\nwritten per batch; µs per id beyond the same engine's log-only commit (the daemon:"
        "\nits index's work inline and in the background); RSS, RssFile and disk in MB"
    )
    print(
        f"{'engine':<13}{'mode':<9}{'ids':>10}{'median':>8}{'p99':>8}{'check':>7}"
        f"{'write':>7}{'commit':>7}{'cpu':>7}{'KB wr':>8}{'µs/id':>7}{'RSS':>7}{'file':>6}"
        f"{'disk':>7}"
    )
    for row in summary["rows"]:
        extra = f"{row['us_per_id']:>7.2f}" if "us_per_id" in row else f"{'':>7}"
        print(
            f"{row['engine']:<13}{row['mode']:<9}{row['ids']:>10,}{row['median_ms']:>8.2f}"
            f"{row['p99_ms']:>8.2f}{row['check_ms']:>7.2f}{row['write_ms']:>7.2f}"
            f"{row['commit_ms']:>7.2f}{row['cpu_ms']:>7.2f}{row['kb_written']:>8.0f}{extra}"
            f"{row['rss_mb']:>7.0f}{row['rss_file_mb']:>6.0f}{row['disk_mb']:>7.0f}"
        )
    print("\nfilling (no fsync, 100,000 ids a transaction; CPU and bytes written per id,")
    print("compaction or sealing until settled included)")
    seen = set()
    for row in summary["rows"]:
        if (row["engine"], row["ids"]) in seen:
            continue
        seen.add((row["engine"], row["ids"]))
        print(
            f"{row['engine']:<13}to {row['ids']:>10,}: {row['fill_s']:6.1f} s, "
            f"{row['fill_cpu_us_per_id']:5.2f} µs CPU and {row['fill_bytes_per_id']:6.0f} "
            "bytes written per id"
        )
    largest = max(sizes)
    print(
        f"\nbudget: < {BUDGET_US_PER_ID:g} µs per id beyond the commit, "
        f"≤ {BUDGET_MB_PER_MILLION:g} MB RSS per 10⁶ ids, reopen ≤ {BUDGET_REOPEN_S:g} s, "
        "exactly once, refused by the engine"
    )
    for row in summary["rows"]:
        if row["ids"] != largest or "us_per_id" not in row:
            continue
        slope = row.get("mb_per_million")
        reopen = row.get("reopen_s")
        anon = row.get("anon_mb_per_million")
        print(
            f"{row['engine'] + ' ' + row['mode']:<22}{verdict(row):<42} {row['us_per_id']:6.2f} "
            "µs/id"
            + (f", {slope:5.1f} MB/10⁶ (anonymous {anon:5.1f})" if slope is not None else "")
            + (f", reopen {reopen:5.2f} s" if reopen is not None else "")
            + f"; refused by the engine: {row['refused_by_engine']}"
        )
    for kind, resend in summary["resend"].items():
        print(f"resend of a stored batch to {kind}: {resend}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ids", type=int, nargs="+", default=[1_000_000, 5_000_000])
    parser.add_argument("--batches", type=int, default=100, help="timed batches per mode and N")
    parser.add_argument("--engines", nargs="+", choices=ENGINES, default=ENGINES)
    parser.add_argument("--epoch-ids", type=int, default=EPOCH_IDS, help="sqlite-epoch")
    parser.add_argument("--dir", help="scratch folder for the databases (default: a temp one)")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--max-seconds", type=float, default=1800.0, help="bound on the run")
    parser.add_argument("--keep", action="store_true", help="keep the databases")
    parser.add_argument("--child", choices=ENGINES, help=argparse.SUPPRESS)
    parser.add_argument("--stored", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        Child(args.child, Path(args.dir), args.epoch_ids, args.stored).serve(sys.stdin, sys.stdout)
        return 0
    sizes = sorted(set(args.ids))
    if any(not 0 < n <= 20_000_000 for n in sizes) or not 1 <= args.batches <= 2000:
        parser.error("--ids must be in 1..20000000 and --batches in 1..2000")
    if args.epoch_ids < BATCH:
        parser.error("--epoch-ids must be at least 1000")
    kinds = available(args.engines)
    deadline = time.monotonic() + args.max_seconds
    root = Path(tempfile.mkdtemp(prefix="deniable-id-engines-", dir=args.dir))
    print(
        f"{time.strftime('%Y-%m-%d')}: {', '.join(kinds)}; "
        f"ids {', '.join(f'{n:,}' for n in sizes)};"
        f" {args.batches} batches of {BATCH} per mode and N; SQLite {sqlite3.sqlite_version};"
        f" scratch {root}; load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    procs: list[Proc] = []
    try:
        for kind in kinds:
            (root / kind).mkdir()
            procs.append(start(kind, root / kind, args.epoch_ids))
        for n in sizes:
            for proc in procs:
                proc.fills[n] = proc.ask(op="fill", to=n)
                proc.reopen[n] = proc.restart(root / proc.kind, args.epoch_ids)
                print(
                    f"{proc.kind}: filled to {n:,} in {proc.fills[n]['fill_s']:.1f} s "
                    f"(+{proc.fills[n]['settle_s']:.1f} s to settle); reopened in "
                    f"{proc.reopen[n]['open'] + proc.reopen[n]['first']:.2f} s",
                    flush=True,
                )
            for proc, mode, count in rounds(procs, args.batches, 10):
                if time.monotonic() > deadline:
                    raise SystemExit("stopped: --max-seconds ran out")
                proc.samples.setdefault((n, mode), []).extend(
                    proc.ask(op="run", mode=mode, count=count)
                )
            for proc in procs:
                proc.stats[n] = proc.ask(op="stats")
        for proc in procs:
            proc.resend = proc.ask(op="resend")
            proc.ask(op="close")
            proc.process.wait(timeout=120)
        summary = summarise(procs, sizes)
        report(summary, sizes)
        if args.json:
            Path(args.json).write_text(json.dumps(summary, indent=1) + "\n")
    finally:
        for proc in procs:
            if proc.process.poll() is None:
                proc.process.kill()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
