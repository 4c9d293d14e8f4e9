"""SQLite storage: an append-only batch log, WAL, synchronous=FULL, a transaction per batch."""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Generator, Sequence
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import IO, Any

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
from deniable.aggregator.storage._committer import Committer
from deniable.aggregator.storage._filter import patterns
from deniable.aggregator.storage._fingerprint import Hasher, use_default
from deniable.aggregator.storage._group_read import read_groups
from deniable.aggregator.storage._id_index import Claim, GroupClaim, IdIndex
from deniable.aggregator.storage._lock import exclusive_lock
from deniable.aggregator.storage._log_format import expand
from deniable.aggregator.storage._maintenance import DamagedLogError, Maintenance, load_survey
from deniable.aggregator.storage._migrate import fingerprint_key, migrate
from deniable.aggregator.storage._segments import delete_segments
from deniable.aggregator.storage._sqlite_tokens import (
    Binding,
    PendingBindings,
    bind,
    insert_tokens,
    issued,
    store_bindings,
)
from deniable.aggregator.storage._survey_ids import SEGMENT_IDS, SurveyIds
from deniable.aggregator.storage._tally_change import TallyChange
from deniable.aggregator.storage._transaction import rollback, storage_error, transaction
from deniable.aggregator.storage._wal import preallocate_wal, wal_target_size
from deniable.shared.errors import FailedPrecondition
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["LOG_PAGE", "SqliteStorage"]

_logger = logging.getLogger("deniable.aggregator")

_ALL = np.s_[:]  # every row of a group: a view, not a copy
LOG_PAGE = 16  # log rows (stored batches) read per hold of the lock by Storage.log
COMMIT_REPORTS = 50_000  # reports of the batches committed together, at most (one at least)


class SqliteStorage(Storage):
    """The embedded default backend, for one aggregator process per database file.

    Layout: each committed batch appends one row per survey to ``log`` holding the new
    reports (compact for a uniform yes/no batch, else a serialized
    ``SubmitReportsRequest``; see :mod:`._log_format`), and bumps the running ``tallies``
    in the same transaction. Rows are appended in key order, so a commit writes a few
    sequential pages however random the clients' report ids are.

    Idempotency is decided inside the batch's transaction, against the log: which ids an
    open survey holds is answered by an index derived from the log (:mod:`._id_index`),
    made of filters in memory and of sealed segments of sorted fingerprints in the
    database, which a background thread writes (:mod:`._maintenance`). Every candidate
    match is confirmed by reading the log row and comparing the id and payload byte for
    byte. A lock file (``PATH.lock``) keeps a second aggregator from using the database.

    Enrollment: ``tokens`` holds the SHA-256 hash of each issued token, and
    ``token_answers`` binds each (token, question) to its one report, written in the
    batch's transaction (see :mod:`._sqlite_tokens`).

    Durability: the WAL journal with ``synchronous=FULL`` fsyncs the log at every commit,
    so an acknowledged batch survives a process crash and a power loss. One connection
    serves all threads under a lock, as SQLite admits one writer at a time anyway; batches
    that arrive during a commit share the next one (:class:`GroupCommitter`).
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

    def _commit_locked(
        self, submissions: Sequence[Submission]
    ) -> list[SubmitOutcome | BaseException]:
        """Sort each batch's reports into new and stored, then store them in one transaction.

        A batch refused while its reports are sorted (a closed survey, a conflicting id,
        or for a batch with an enrollment token a conflicting binding) gets its own error
        and takes no part in the transaction; if the transaction fails, every batch in it
        gets that error and none of its ids is entered in the index.
        """
        reads, unreadable = read_groups(submissions)
        errors, claimed, group, bindings = self._claim_locked(submissions, unreadable)
        results: list[SubmitOutcome | BaseException] = [RuntimeError("not committed")] * len(
            submissions
        )
        for position, error in errors.items():
            results[position] = error
        accepted: list[tuple[int, int, Claim]] = []
        for place, (position, claim) in enumerate(zip(claimed, group.claims, strict=True)):
            if isinstance(claim, Claim):
                accepted.append((place, position, claim))
            else:
                results[position] = claim
        if not accepted:
            return results
        changes: dict[tuple[str, str], TallyChange] = {}
        released: dict[tuple[str, str], Tally] = {}
        seqs: list[dict[str, int] | None] = [None] * len(claimed)
        self._db.execute("BEGIN IMMEDIATE")
        try:
            for place, position, claim in accepted:
                seqs[place] = self._append_locked(claim, changes, released, reads, position)
                store_bindings(self._db, bindings[position])
            tallies = {key: change.tally() for key, change in changes.items()}
            self._write_tallies(tallies, released)
            self._db.execute("COMMIT")
        except BaseException as error:  # nothing of the group is stored nor entered
            rollback(self._db)
            raise storage_error(error) from None
        try:
            self._index.enter(group, seqs)
        except Exception:  # committed all the same: refuse batches from now on instead
            _logger.exception("entering report ids failed; restart the daemon")
            self._index.broken = True
        self._maintenance.committed(group.parts)
        self._tallies.update(tallies)  # only once committed
        self._released.update(released)
        for _, position, claim in accepted:
            results[position] = SubmitOutcome(claim.stored, claim.total - claim.stored)
        return results

    def _claim_locked(
        self, submissions: Sequence[Submission], refused: dict[int, BaseException]
    ) -> tuple[dict[int, BaseException], list[int], GroupClaim, dict[int, list[Binding]]]:
        """Sort the group's batches into new and stored reports; token batches' bindings.

        Returns the batches refused by their bindings, the positions of the others (in
        order), their group claim, and each one's new bindings. A token batch's bindings
        are checked first (so that another report for an answered question is refused as
        such), in order, each seeing the earlier batches'. If the id claim then refuses a
        token batch, the batches after it were checked against bindings that will not be
        stored: both steps run again without it. ``refused``: batches refused already
        (for a value), left out.
        """
        refused = dict(refused)  # and the token batches the id claim refuses
        while True:
            errors = dict(refused)
            pending = PendingBindings()
            bindings: dict[int, list[Binding]] = {}
            for position, submission in enumerate(submissions):
                if position in errors:
                    continue
                try:
                    bindings[position] = self._bind_locked(submission, pending)
                except Exception as error:
                    errors[position] = error
                    continue
                pending.add(bindings[position])
            claimed = [position for position in range(len(submissions)) if position not in errors]
            group = self._index.claim(self._db, [submissions[p] for p in claimed])
            unbound = {
                position: claim
                for position, claim in zip(claimed, group.claims, strict=True)
                if isinstance(claim, BaseException) and bindings[position]
            }
            if not unbound:
                return errors, claimed, group, bindings
            refused.update(unbound)

    def maintain(self) -> None:
        """Do the background work that is due now, in this thread (tests use it)."""
        self._maintenance.run_once()

    def _bind_locked(self, submission: Submission, pending: PendingBindings) -> list[Binding]:
        """A token batch's new (token, question) bindings, checked before its ids are sorted.

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
        claim: Claim,
        changes: dict[tuple[str, str], TallyChange],
        released: dict[tuple[str, str], Tally],
        reads: dict[tuple[int, int], Any],
        position: int,
    ) -> dict[str, int]:
        """Write a batch's log rows; add its reports to the group's tally changes.

        A release due after this batch is the tally then (computed at once, in memory).
        ``reads``: the reports of unread groups (:func:`read_groups`), by (batch at
        ``position``, group). Returns each survey's new log row.
        """
        submission, fresh = claim.submission, claim.fresh
        seqs: dict[str, int] = {}
        for index, group in enumerate(submission.groups):
            keep: Selection
            if fresh is None:
                keep, count = _ALL, len(group.rows)
            else:
                keep = fresh[group.rows]
                count = int(np.count_nonzero(keep))
                if not count:
                    continue
            key = (group.survey_id, group.question_id)
            change = changes.get(key)
            if change is None:
                change = changes[key] = TallyChange(self._tallies.get(key) or self._read_tally(key))
            change.add(group, keep, count, reads.get((position, index)))
            if group.releases is not None:
                last = released.get(key) or self._released.get(key) or self._read_released(key)
                if group.releases.due(last.n, change.n):
                    released[key] = change.tally()
        for survey_id in claim.rows:
            rows: NDArray[np.intp] = claim.new_rows(survey_id)
            if len(rows):
                cursor = self._db.execute(
                    "INSERT INTO log (survey_id, reports) VALUES (?, ?)",
                    (survey_id, submission.encode(rows)),
                )
                assert cursor.lastrowid is not None
                seqs[survey_id] = cursor.lastrowid
        return seqs

    def _write_tallies(
        self, tallies: dict[tuple[str, str], Tally], released: dict[tuple[str, str], Tally]
    ) -> None:
        """One row per question the group changed: its tally, and its release if one is due.

        A release is the tally after the batch that reached its point, or after a later
        batch of the same commit; either way a tally the question has at a commit.
        """
        self._db.executemany(
            "UPDATE tallies SET n = ?, sums = ? WHERE survey_id = ? AND question_id = ?",
            [(new.n, json.dumps(new.sums), *key) for key, new in tallies.items()],
        )
        if released:
            self._db.executemany(
                "INSERT OR REPLACE INTO releases (survey_id, question_id, n, sums) "
                "VALUES (?, ?, ?, ?)",
                [(*key, new.n, json.dumps(new.sums)) for key, new in released.items()],
            )

    def _read_tally(self, key: tuple[str, str]) -> Tally:
        n, sums = self._db.execute(
            "SELECT n, sums FROM tallies WHERE survey_id = ? AND question_id = ?", key
        ).fetchone()
        return Tally(n=n, sums=tuple(json.loads(sums)))

    def _read_released(self, key: tuple[str, str]) -> Tally:
        row = self._db.execute(
            "SELECT n, sums FROM releases WHERE survey_id = ? AND question_id = ?", key
        ).fetchone()
        return Tally(0) if row is None else Tally(n=row[0], sums=tuple(json.loads(row[1])))

    def released(self, survey_id: str, question_id: str) -> Tally | None:
        """The tally last released (``Tally(0)`` before the first).

        From memory once a commit (or a read) has known it: an estimate does not wait for a
        commit in progress. Else one indexed row.
        """
        key = (survey_id, question_id)
        known = self._released.get(key)
        if known is not None:
            return known
        with self._lock:
            exists = self._db.execute(
                "SELECT 1 FROM tallies WHERE survey_id = ? AND question_id = ?", key
            ).fetchone()
            if exists is None:
                return None
            return self._released.setdefault(key, self._read_released(key))

    def tally(self, survey_id: str, question_id: str) -> Tally | None:
        """O(1) whatever the number of reports: the tally as of the last commit.

        From memory once a commit (or a read) has known it, so an estimate does not wait
        for a commit in progress; else one indexed row.
        """
        key = (survey_id, question_id)
        known = self._tallies.get(key)
        if known is not None:
            return known
        with self._lock:
            row = self._db.execute(
                "SELECT n, sums FROM tallies WHERE survey_id = ? AND question_id = ?", key
            ).fetchone()
            if row is None:
                return None
            return self._tallies.setdefault(key, Tally(n=row[0], sums=tuple(json.loads(row[1]))))

    def log(self, survey_id: str) -> Generator[bytes, None, None]:
        """The survey's log rows in commit order, up to the last one when reading began.

        Read by ``seq`` a page of :data:`LOG_PAGE` rows at a time, under the lock for
        the page's query only: commits go on between pages, and their rows (after the
        bound) are left for the next reader.
        """
        with self._lock:
            (last,) = self._db.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM log WHERE survey_id = ?", (survey_id,)
            ).fetchone()
        after = 0
        while after < last:
            with self._lock:
                page = self._db.execute(
                    "SELECT seq, reports FROM log WHERE survey_id = ? AND seq > ? AND seq <= ? "
                    "ORDER BY seq LIMIT ?",
                    (survey_id, after, last, LOG_PAGE),
                ).fetchall()
            if not page:
                return
            after = page[-1][0]
            for _, reports in page:
                yield expand(reports)

    def close(self) -> None:
        """Commit what is queued, stop the background work, close the connection and lock."""
        self._committer.close()
        self._maintenance.close()
        with self._lock:
            self._db.close()
            self._release_lockfile()

    # --- used by `deniable-aggregator migrate` (see ._copy); kept last for easy merges ---

    def restore_bindings(self, bindings: Sequence[Binding]) -> None:
        """Store enrollment bindings copied from another database, in one transaction."""
        with self._lock, transaction(self._db):
            store_bindings(self._db, bindings)

    def unsynced(self) -> None:
        """Commit without fsync from now on: for a staging copy, synced once when complete."""
        with self._lock:
            self._db.execute("PRAGMA synchronous=OFF")
