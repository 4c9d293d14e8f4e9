"""SQLite storage: an append-only batch log, WAL, synchronous=FULL, a transaction per batch."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Sequence
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import IO

from deniable.aggregator.storage._base import (
    Storage,
    StorageError,
    Submission,
    SubmitOutcome,
    Tally,
)
from deniable.aggregator.storage.codec import Hasher, use_default
from deniable.aggregator.storage.sqlite._commit import SqliteCommits
from deniable.aggregator.storage.sqlite._committer import Committer
from deniable.aggregator.storage.sqlite._lock import exclusive_lock
from deniable.aggregator.storage.sqlite._schema import fingerprint_key, migrate
from deniable.aggregator.storage.sqlite._tokens import (
    Binding,
    insert_tokens,
    store_bindings,
)
from deniable.aggregator.storage.sqlite._transaction import transaction
from deniable.aggregator.storage.sqlite._wal import preallocate_wal, wal_target_size
from deniable.aggregator.storage.sqlite.index import (
    SEGMENT_IDS,
    DamagedLogError,
    IdIndex,
    Maintenance,
    SurveyIds,
    delete_segments,
    load_survey,
    patterns,
)
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["SqliteStorage"]

_logger = logging.getLogger("deniable.aggregator")

COMMIT_REPORTS = 50_000  # reports of the batches committed together, at most (one at least)


class SqliteStorage(SqliteCommits, Storage):
    """The embedded default backend, for one aggregator process per database file.

    Layout: each committed batch appends one row per survey to ``log`` holding the new
    reports (compact for a uniform yes/no batch, else a serialized
    ``SubmitReportsRequest``; see :mod:`..codec._log_format`), and bumps the running ``tallies``
    in the same transaction. Rows are appended in key order, so a commit writes a few
    sequential pages however random the clients' report ids are.

    Idempotency is decided inside the batch's transaction, against the log: which ids an
    open survey holds is answered by an index derived from the log (:mod:`.index`),
    made of filters in memory and of sealed segments of sorted fingerprints in the
    database, which a background thread writes (:mod:`.index._maintenance`). Every candidate
    match is confirmed by reading the log row and comparing the id and payload byte for
    byte. A lock file (``PATH.lock``) keeps a second aggregator from using the database.

    Enrollment: ``tokens`` holds the SHA-256 hash of each issued token, and
    ``token_answers`` binds each (token, question) to its one report, written in the
    batch's transaction (see :mod:`._tokens`).

    Durability: the WAL journal with ``synchronous=FULL`` fsyncs the log at every commit,
    so an acknowledged batch survives a process crash and a power loss. One connection
    serves all threads under a lock, as SQLite admits one writer at a time anyway; batches
    that arrive during a commit share the next one (:class:`._committer.Committer`); the
    commit itself is :class:`._commit.SqliteCommits`, the reads :class:`._reads.SqliteReads`.
    """

    reads_values = True  # a commit reads each question's values of all its batches at once

    def __init__(
        self, path: str, *, segment_ids: int = SEGMENT_IDS, background: bool = True
    ) -> None:
        self.path = path
        self.segment_ids = segment_ids
        self._lock = threading.Lock()
        self._lockfile: IO[bytes] | None = None
        file_backed = path != ":memory:"
        if file_backed:
            try:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise StorageError(
                    f"cannot create the database's folder {str(Path(path).parent)!r}: "
                    f"{error.strerror or error}"
                ) from None
            self._lockfile = exclusive_lock(f"{path}.lock")
        try:
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._db.execute("PRAGMA busy_timeout=10000")
            migrate(self._db)
            self._preallocate_wal()
            patterns()  # the filters' bit patterns, built once per process
            self._index = IdIndex(Hasher(fingerprint_key(self._db)))
            use_default(self._index.hasher)  # the decoder then fingerprints with our key
            for (survey_id,) in self._db.execute(
                "SELECT id FROM surveys WHERE state = ? ORDER BY seq", (pb.SURVEY_STATE_OPEN,)
            ).fetchall():
                load_survey(self._db, self._index, survey_id, segment_ids)
            self._tallies: dict[tuple[str, str], Tally] = {}
            self._released: dict[tuple[str, str], Tally] = {}
            self._maintenance = Maintenance(
                self._db, self._lock, self._index, segment_ids, background and file_backed
            )
            self._committer: Committer[Submission, SubmitOutcome] = Committer(
                self._commit_group,
                name="deniable-commit",
                weight=lambda submission: len(submission.report_ids),
                max_weight=COMMIT_REPORTS,
                after=self._maintenance.after_commit,
            )
        except sqlite3.DatabaseError as error:
            self._release_lockfile()
            raise StorageError(f"cannot open SQLite database {path!r}: {error}") from None
        except DamagedLogError as error:
            self._release_lockfile()
            raise StorageError(f"log row {error.seq} of {path!r} is damaged: {error}") from None
        except StorageError:
            self._release_lockfile()
            raise

    def _preallocate_wal(self) -> None:
        """Zero-fill the log's first pass, so commits overwrite blocks (see :mod:`._wal`)."""
        wal = f"{self.path}-wal"
        if self.path != ":memory:" and Path(wal).exists():
            try:
                preallocate_wal(wal, wal_target_size(self._db))
            except OSError as error:  # e.g. a full disk: no reason not to start; commits
                # fail with their own error if the disk stays full
                _logger.warning("cannot preallocate the write-ahead log %s: %s", wal, error)

    def _release_lockfile(self) -> None:
        if self._lockfile is not None:
            self._lockfile.close()
            self._lockfile = None

    def create_survey(self, survey: pb.Survey) -> None:
        """Store a new open survey and a zero tally per question."""
        with self._lock:
            with transaction(self._db):
                (seq,) = self._db.execute(
                    "SELECT COALESCE(MAX(seq), 0) + 1 FROM surveys"
                ).fetchone()
                self._db.execute(
                    "INSERT INTO surveys (id, seq, state, spec) VALUES (?, ?, ?, ?)",
                    (survey.id, seq, pb.SURVEY_STATE_OPEN, survey.SerializeToString()),
                )
                self._db.executemany(
                    "INSERT INTO tallies (survey_id, question_id) VALUES (?, ?)",
                    [(survey.id, q.id) for q in survey.questions],
                )
            self._index.surveys[survey.id] = SurveyIds()

    def close_survey(self, survey_id: str) -> pb.Survey | None:
        """Mark the survey closed (closing twice is a no-op) and drop its id index."""
        with self._lock:
            with transaction(self._db):
                self._db.execute(
                    "UPDATE surveys SET state = ? WHERE id = ?",
                    (pb.SURVEY_STATE_CLOSED, survey_id),
                )
                delete_segments(self._db, survey_id)
            self._index.surveys.pop(survey_id, None)
        return self.get_survey(survey_id)

    def issue_tokens(self, survey_id: str, hashes: Sequence[bytes]) -> None:
        """Store the hashes of an open survey's new tokens in one durable transaction."""
        with self._lock, transaction(self._db):
            insert_tokens(self._db, survey_id, hashes)

    def submit(self, submission: Submission) -> SubmitOutcome:
        """Append the new reports to the log and bump tallies in one durable transaction.

        Batches submitted concurrently while a commit runs are committed together in the
        next transaction (group commit, by the committer thread): each batch is still all
        or nothing, and the reply still waits for the fsync, but concurrent batches share
        it.
        """
        return self._committer.submit_or_commit(submission).result()

    def submit_async(
        self, submission: Submission, executor: Executor, *, alone: bool = False
    ) -> Future[SubmitOutcome]:
        """Queue the batch for the committer thread; its future resolves once durable.

        ``alone``: if nothing is being committed or queued either, commit it in the
        calling thread at once (no hand-over to the thread and back).
        """
        if alone:
            return self._committer.submit_or_commit(submission)
        return self._committer.submit(submission)

    def _commit_group(
        self, submissions: Sequence[Submission]
    ) -> list[SubmitOutcome | BaseException]:
        with self._lock:
            return self._commit_locked(submissions)

    def disk_path(self) -> str | None:
        """The database file's folder (None for an in-memory database)."""
        return None if self.path == ":memory:" else str(Path(self.path).resolve().parent)

    def maintain(self) -> None:
        """Do the background work that is due now, in this thread (tests use it)."""
        self._maintenance.run_once()

    def close(self) -> None:
        """Commit what is queued, stop the background work, close the connection and lock."""
        self._committer.close()
        self._maintenance.close()
        with self._lock:
            self._db.close()
            self._release_lockfile()

    # --- used by `deniable-aggregator migrate` (see storage._copy); kept last for easy merges ---

    def restore_bindings(self, bindings: Sequence[Binding]) -> None:
        """Store enrollment bindings copied from another database, in one transaction."""
        with self._lock, transaction(self._db):
            store_bindings(self._db, bindings)

    def unsynced(self) -> None:
        """Commit without fsync from now on: for a staging copy, synced once when complete."""
        with self._lock:
            self._db.execute("PRAGMA synchronous=OFF")
