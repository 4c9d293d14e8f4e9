"""Keeping the id index small and the log short: sealing, filter growth and checkpoints.

Three kinds of work run beside the batches, in one background thread of a file database
(inline for ``:memory:`` and in tests that ask for it):

- **sealing**: once an open survey has ``segment_ids`` recent ids, they are sorted and
  written as a segment (:mod:`._segments`), and forgotten from memory but for the
  segment's filter. The sorting happens outside the storage lock; the write is one short
  transaction under it.
- **filter growth**: once a survey holds more ids than its filter's capacity, a filter of
  twice the size is built from the segments' fingerprints and the recent ones, outside
  the lock, by this thread alone; the ids entered meanwhile are added when it replaces
  the old one, under the lock.

Both are jobs of :mod:`._jobs`, taken, built and installed in three steps.
- **checkpoints**: every ``CHECKPOINT_EVERY`` commits, a second connection copies the
  write-ahead log into the database (``PRAGMA wal_checkpoint(PASSIVE)``), so that the
  commit that crosses SQLite's automatic threshold rarely has to.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

from deniable.aggregator.storage.codec import ReportIds, decode_log, repeated_rows
from deniable.aggregator.storage.sqlite._transaction import StorageFull, storage_error, transaction
from deniable.aggregator.storage.sqlite.index import _survey_ids
from deniable.aggregator.storage.sqlite.index._id_index import IdIndex
from deniable.aggregator.storage.sqlite.index._jobs import Growth, Seal, fill
from deniable.aggregator.storage.sqlite.index._segments import (
    load_segments,
    prepare_segment,
    segment_prints,
    write_segment,
)
from deniable.aggregator.storage.sqlite.index._survey_ids import SEGMENT_CAPACITY, SurveyIds

__all__ = ["CHECKPOINT_EVERY", "DamagedLogError", "Maintenance", "load_survey"]

_logger = logging.getLogger("deniable.aggregator")

CHECKPOINT_EVERY = 64  # commits between two background checkpoints
DEFER = 0.0003  # seconds the thread waits before work that takes the storage lock
_IDLE_WAKE = 1.0  # seconds: the thread also looks for work this often


class DamagedLogError(ValueError):
    """A log row cannot be read back, or repeats a report id."""

    def __init__(self, seq: int, message: str) -> None:
        super().__init__(message)
        self.seq = seq


def load_survey(
    db: sqlite3.Connection, index: IdIndex, survey_id: str, segment_ids: int
) -> SurveyIds:
    """Rebuild an open survey's index from the database, sealing a long tail as it goes.

    Raises:
        DamagedLogError: a log row after the last segment does not decode or repeats an id.
    """
    (reports,) = db.execute(
        "SELECT COALESCE(SUM(n), 0) FROM tallies WHERE survey_id = ?", (survey_id,)
    ).fetchone()
    survey = index.surveys[survey_id] = SurveyIds(
        max(_survey_ids.INITIAL_CAPACITY, int(reports) + int(reports) // 4)
    )
    for segment, bloom in load_segments(db, survey_id, SEGMENT_CAPACITY):
        survey.segments.add(segment, bloom)
        survey.bloom.add(segment_prints(db, segment))
    cursor = db.execute(
        "SELECT seq, reports FROM log WHERE survey_id = ? AND seq > ? ORDER BY seq",
        (survey_id, survey.segments.last_seq),
    )
    for seq, row in cursor.fetchall():
        ids, prints = _row_prints(index, seq, bytes(row))
        repeated = index.first_stored(db, survey_id, ids, prints)
        if repeated is not None:
            raise DamagedLogError(seq, f"report id {repeated.decode()!r} appears twice in the log")
        survey.enter(prints, seq)
        if survey.recent.count >= segment_ids:
            with transaction(db):
                sealed = prepare_segment(
                    survey.recent.prints[: survey.recent.count],
                    survey.recent.seqs[: survey.recent.count],
                    SEGMENT_CAPACITY,
                )
                segment = write_segment(db, survey_id, sealed)
            survey.segments.add(segment, sealed.bloom)
            survey.recent.drop_through(segment.last_seq)
    return survey


def _row_prints(index: IdIndex, seq: int, row: bytes) -> tuple[ReportIds, NDArray[np.uint64]]:
    """A log row's ids and their fingerprints, in row order."""
    try:
        ids, _ = decode_log(row)
    except ValueError as error:  # LogFormatError
        raise DamagedLogError(seq, str(error)) from None
    except Exception as error:  # InvalidArgument from a damaged canonical row
        raise DamagedLogError(seq, str(error)) from None
    prints = np.empty(len(ids), dtype=np.uint64)
    for group in ids.groups:
        prints[group.rows] = group.prints_for(index.hasher)
        if repeated_rows(group.ids, prints[group.rows]):
            raise DamagedLogError(seq, "a report id appears twice in the row")
    return ids, prints


class Maintenance:
    """Runs sealing, filter growth and checkpoints in a background thread (or inline)."""

    def __init__(
        self,
        db: sqlite3.Connection,
        lock: threading.Lock,
        index: IdIndex,
        segment_ids: int,
        background: bool,
    ) -> None:
        self._db, self._lock, self._index = db, lock, index
        self._segment_ids = segment_ids
        self._commits = self._checkpointed = 0
        self._working = threading.Lock()  # one run at a time: the thread's, or a caller's
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._due_inline = False
        self._reader: sqlite3.Connection | None = None
        self._thread: threading.Thread | None = None
        if background:
            (path,) = [row[2] for row in db.execute("PRAGMA database_list") if row[1] == "main"]
            self._reader = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            self._reader.execute("PRAGMA busy_timeout=10000")
            self._reader.execute("PRAGMA cache_size=-256")  # it streams: 256 KiB of cache
            self._thread = threading.Thread(target=self._run, name="deniable-storage", daemon=True)
            self._thread.start()

    def committed(self, surveys: Iterable[str]) -> None:
        """After a commit (its ids entered), under the storage lock: start what is due.

        ``surveys`` are those the commit added ids to.
        """
        self._commits += 1
        if self._thread is None:
            self._due_inline = True
        elif self._due(surveys):
            self._wake.set()

    def after_commit(self) -> None:
        """Called after the storage lock is released: inline work, when there is no thread."""
        if self._thread is None and self._due_inline:
            self._due_inline = False
            self.run_once()

    def _due(self, surveys: Iterable[str]) -> bool:
        if self._commits >= self._checkpointed + CHECKPOINT_EVERY:
            return True
        for survey_id in surveys:
            survey = self._index.surveys.get(survey_id)
            if survey is not None and (
                survey.recent.count >= self._segment_ids or survey.bloom.full
            ):
                return True
        return False

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(_IDLE_WAKE)
            self._wake.clear()
            if self._stop.is_set():
                break
            time.sleep(DEFER)  # let the batch's reply go out before taking the interpreter
            try:
                self.run_once()
            except Exception as error:  # keep serving: the work is retried at the next wake
                if isinstance(storage_error(error), StorageFull):
                    _logger.warning("background storage maintenance postponed: disk full")
                else:
                    _logger.exception("background storage maintenance failed")

    def run_once(self) -> None:
        """Enter the committed ids, then do every other piece of work that is due."""
        with self._working:
            self._run_once()

    def _run_once(self) -> None:
        with self._lock:
            surveys = list(self._index.surveys.items())
        sealed = False
        for survey_id, survey in surveys:
            if survey.recent.count >= self._segment_ids:
                sealed |= self._run_job(self.seal(survey_id))
            if survey.bloom.full:
                self._run_job(self.grow(survey_id))
        due = self._commits >= self._checkpointed + CHECKPOINT_EVERY
        if self._reader is not None and (due or sealed):  # a segment adds ~600 pages
            self._checkpointed = self._commits
            self._reader.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    def seal(self, survey_id: str) -> Seal | None:
        """Take a seal of the survey's recent ids (under the lock): build, then install it."""
        with self._lock:
            return Seal.take(self._index, survey_id)

    def grow(self, survey_id: str) -> Growth | None:
        """Take a growth of the survey's filter (under the lock): build, then install it."""
        with self._lock:
            return Growth.take(self._index, survey_id)

    def build(self, job: Seal | Growth) -> None:
        """Build a job: without the lock, but for reading through the storage's connection.

        A growth reads segments through the thread's own connection; without a thread
        (inline), through the storage's, one segment at a time under the lock.
        """
        if isinstance(job, Seal):
            job.build()
        elif self._reader is not None:
            job.build(self._reader)
        else:
            fill(self._db, job.grown, job.segments, job.recent, self._lock)

    def install(self, job: Seal | Growth) -> bool:
        """Install a built job under the lock; False if it no longer applies."""
        with self._lock:
            if isinstance(job, Seal):
                return job.install(self._db, self._index)
            installed = job.install(self._index)
        if not installed:
            self._wake.set()  # sealed meanwhile: grow again from a new snapshot
        return installed

    def _run_job(self, job: Seal | Growth | None) -> bool:
        if job is None:
            return False
        self.build(job)
        return self.install(job)

    def close(self) -> None:
        """Stop the thread (after the work in hand) and close its connection."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._reader is not None:
            self._reader.close()
            self._reader = None
