"""SQLite storage: an append-only batch log, WAL, synchronous=FULL, a transaction per batch."""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

import numpy as np
from numpy.typing import NDArray

from deniable.aggregator.storage._base import (
    Selection,
    Storage,
    StorageError,
    Submission,
    SubmitOutcome,
    Tally,
)
from deniable.aggregator.storage._group_commit import GroupCommitter
from deniable.aggregator.storage._id_index import Claim, IdIndex
from deniable.aggregator.storage._ids import warm_up
from deniable.aggregator.storage._lock import exclusive_lock
from deniable.aggregator.storage._log_format import expand
from deniable.aggregator.storage._migrate import migrate
from deniable.aggregator.storage._sqlite_tokens import (
    Binding,
    PendingBindings,
    bind,
    insert_tokens,
    issued,
    store_bindings,
)
from deniable.aggregator.storage._wal import preallocate_wal, wal_target_size
from deniable.shared.errors import FailedPrecondition, InvalidArgument
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["SqliteStorage"]

_logger = logging.getLogger("deniable.aggregator")

_ALL = np.s_[:]  # every row of a group: a view, not a copy


class SqliteStorage(Storage):
    """The embedded default backend, for one aggregator process per database file.

    Layout: each committed batch appends one row per survey to ``log`` holding the new
    reports (compact for a uniform yes/no batch, else a serialized
    ``SubmitReportsRequest``; see :mod:`aggregator._log_format`), and bumps the running
    ``tallies`` in the same transaction. Rows are appended in key order, so a commit
    writes a few sequential pages however random the clients' report ids are.

    Enrollment: ``tokens`` holds the SHA-256 hash of each issued token, and
    ``token_answers`` binds each (token, question) to its one report, written in the
    batch's transaction (see :mod:`aggregator.storage._sqlite_tokens`).

    Idempotency: the ids of each open survey's stored reports (with their payloads) are
    kept in memory (:class:`IdIndex`), rebuilt from the log at start; ids claimed by a
    batch that is not committed are removed again. A lock file (``PATH.lock``) keeps a
    second aggregator from using the same database.

    Durability: the WAL journal with ``synchronous=FULL`` fsyncs the log at every commit,
    so an acknowledged batch survives a process crash and a power loss. (``NORMAL`` would
    be faster but can lose the last commits on power loss, which would break the promise
    that an acknowledged report is never lost.) One connection serves all threads under a
    lock, as SQLite admits one writer at a time anyway; batches that arrive during a
    commit share the next one (:class:`GroupCommitter`).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._lockfile: IO[bytes] | None = None
        if path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self._lockfile = exclusive_lock(f"{path}.lock")
        try:
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._db.execute("PRAGMA busy_timeout=10000")
            migrate(self._db)
            self._preallocate_wal()
            self._index = IdIndex()
            warm_up()
            self._load_index()
            self._tallies: dict[tuple[str, str], Tally] = {}
            self._committer = GroupCommitter(self._commit_locked, self._lock)
        except sqlite3.DatabaseError as error:
            self._release_lockfile()
            raise StorageError(f"cannot open SQLite database {path!r}: {error}") from None
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

    def _load_index(self) -> None:
        """Enter the report ids and payloads of every open survey, read back from the log."""
        from deniable.aggregator.storage._decode import decode_log

        for (survey_id,) in self._db.execute(
            "SELECT id FROM surveys WHERE state = ?", (pb.SURVEY_STATE_OPEN,)
        ):
            self._index.open(survey_id)
        for seq, survey_id, reports in self._db.execute(
            "SELECT log.seq, log.survey_id, log.reports FROM log "
            "JOIN surveys ON surveys.id = log.survey_id WHERE surveys.state = ? ORDER BY log.seq",
            (pb.SURVEY_STATE_OPEN,),
        ):
            try:
                self._index.load(survey_id, *decode_log(reports))
            except (ValueError, InvalidArgument) as error:  # LogFormatError is a ValueError
                raise StorageError(f"log row {seq} of {self.path!r} is damaged: {error}") from None

    def _with_count(self, spec: bytes, state: int, survey_id: str) -> pb.Survey:
        survey = pb.Survey.FromString(spec)
        survey.state = state  # type: ignore[assignment]
        row = self._db.execute(
            "SELECT COALESCE(SUM(n), 0) FROM tallies WHERE survey_id = ?", (survey_id,)
        ).fetchone()
        survey.reports = int(row[0])
        survey.tokens_issued = issued(self._db, survey_id)
        return survey

    def create_survey(self, survey: pb.Survey) -> None:
        """Store a new open survey and a zero tally per question."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
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
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._index.open(survey.id)

    def get_survey(self, survey_id: str) -> pb.Survey | None:
        """The survey with its state and report count, or None."""
        with self._lock:
            row = self._db.execute(
                "SELECT spec, state FROM surveys WHERE id = ?", (survey_id,)
            ).fetchone()
            return None if row is None else self._with_count(row[0], row[1], survey_id)

    def list_surveys(self, include_closed: bool) -> list[pb.Survey]:
        """Surveys in creation order, open ones only unless ``include_closed``."""
        with self._lock:
            rows = self._db.execute(
                "SELECT id, spec, state FROM surveys WHERE state = ? OR ? ORDER BY seq",
                (pb.SURVEY_STATE_OPEN, include_closed),
            ).fetchall()
            return [self._with_count(spec, state, sid) for sid, spec, state in rows]

    def close_survey(self, survey_id: str) -> pb.Survey | None:
        """Mark the survey closed (closing twice is a no-op) and forget its id index."""
        with self._lock:
            self._db.execute(
                "UPDATE surveys SET state = ? WHERE id = ?", (pb.SURVEY_STATE_CLOSED, survey_id)
            )
            self._index.forget(survey_id)
        return self.get_survey(survey_id)

    def issue_tokens(self, survey_id: str, hashes: Sequence[bytes]) -> None:
        """Store the hashes of an open survey's new tokens in one durable transaction."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                insert_tokens(self._db, survey_id, hashes)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def submit(self, submission: Submission) -> SubmitOutcome:
        """Append the new reports to the log and bump tallies in one durable transaction.

        Batches submitted concurrently while a commit runs are committed together in the
        next transaction (group commit): each batch is still all or nothing, and the
        reply still waits for the fsync, but concurrent batches share it.
        """
        return self._committer.submit(submission)

    def _commit_locked(
        self, submissions: Sequence[Submission]
    ) -> list[SubmitOutcome | BaseException]:
        """Claim each batch's ids, then store every claimed batch in one transaction.

        A batch refused while claiming (a closed survey, a conflicting id, or for a batch
        with an enrollment token a conflicting binding) gets its own error and takes no
        part in the transaction; if the transaction fails, every batch in it gets that
        error and nothing of them stays claimed.
        """
        results: list[SubmitOutcome | BaseException] = []
        claims: list[tuple[int, Submission, Claim, list[Binding]]] = []
        pending = PendingBindings()
        for position, submission in enumerate(submissions):
            try:
                bindings = self._bind_locked(submission, pending)
                claim = self._index.claim(submission)
            except Exception as error:
                results.append(error)
                continue
            pending.add(bindings)
            claims.append((position, submission, claim, bindings))
            results.append(RuntimeError("not committed"))  # replaced below
        if not claims:
            return results
        tallies: dict[tuple[str, str], Tally] = {}
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for _, submission, claim, bindings in claims:
                    self._append_locked(submission, claim.fresh, tallies)
                    store_bindings(self._db, bindings)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        except BaseException:
            for _, _, claim, _ in reversed(claims):  # none of these is stored: forget them,
                self._index.release(claim)  # latest first, as the index requires
            raise
        self._tallies.update(tallies)  # only once committed
        for position, _, claim, _ in claims:
            results[position] = SubmitOutcome(claim.stored, claim.total - claim.stored)
        return results

    def _bind_locked(self, submission: Submission, pending: PendingBindings) -> list[Binding]:
        """A token batch's new (token, question) bindings, checked before its ids are claimed.

        Checked first, so that a different report for an answered question is refused as
        such (naming the question) even when it reuses the first report's id.
        """
        if submission.token_hash is None:
            return []
        for group in submission.groups:
            if group.survey_id not in self._index:
                first = submission.positions[int(group.rows[0])]
                raise FailedPrecondition(f"reports[{first}]: survey {group.survey_id!r} is closed")
        return bind(self._db, submission, pending)

    def _append_locked(
        self,
        submission: Submission,
        fresh: NDArray[np.bool_] | None,
        tallies: dict[tuple[str, str], Tally],
    ) -> None:
        """Write the new reports' log rows and tallies; enter the tallies in ``tallies``."""
        by_survey: dict[str, list[NDArray[np.intp]]] = {}
        for group in submission.groups:
            keep: Selection
            if fresh is None:
                keep, rows = _ALL, group.rows
            else:
                keep = fresh[group.rows]
                rows = group.rows[keep]
                if not len(rows):
                    continue
            by_survey.setdefault(group.survey_id, []).append(rows)
            key = (group.survey_id, group.question_id)
            old = tallies.get(key) or self._tallies.get(key) or self._read_tally(key)
            new = tallies[key] = Tally(old.n + len(rows), _add(old.sums, group.tally(keep)))
            self._db.execute(
                "UPDATE tallies SET n = ?, sums = ? WHERE survey_id = ? AND question_id = ?",
                (new.n, json.dumps(new.sums), *key),
            )
        for survey_id, parts in by_survey.items():
            rows = parts[0] if len(parts) == 1 else np.sort(np.concatenate(parts))
            self._db.execute(
                "INSERT INTO log (survey_id, reports) VALUES (?, ?)",
                (survey_id, submission.encode(rows)),
            )

    def _read_tally(self, key: tuple[str, str]) -> Tally:
        n, sums = self._db.execute(
            "SELECT n, sums FROM tallies WHERE survey_id = ? AND question_id = ?", key
        ).fetchone()
        return Tally(n=n, sums=tuple(json.loads(sums)))

    def tally(self, survey_id: str, question_id: str) -> Tally | None:
        """O(1): one indexed row, whatever the number of reports."""
        with self._lock:
            row = self._db.execute(
                "SELECT n, sums FROM tallies WHERE survey_id = ? AND question_id = ?",
                (survey_id, question_id),
            ).fetchone()
        return None if row is None else Tally(n=row[0], sums=tuple(json.loads(row[1])))

    def log(self, survey_id: str) -> Iterator[bytes]:
        """The survey's log rows in commit order (read in one snapshot)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT reports FROM log WHERE survey_id = ? ORDER BY seq", (survey_id,)
            ).fetchall()
        return iter([expand(reports) for (reports,) in rows])

    def close(self) -> None:
        """Close the connection and release the lock file (closing twice is allowed)."""
        with self._lock:
            self._db.close()
            self._release_lockfile()


def _add(sums: tuple[int, ...], delta: list[int]) -> tuple[int, ...]:
    """Element-wise sum of two tallies' sums, the shorter padded with zeros."""
    if len(sums) < len(delta):
        sums = sums + (0,) * (len(delta) - len(sums))
    return tuple(total + (delta[i] if i < len(delta) else 0) for i, total in enumerate(sums))
