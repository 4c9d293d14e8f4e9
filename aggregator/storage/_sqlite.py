"""SQLite storage: an append-only batch log, WAL, synchronous=FULL, a transaction per batch."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

import numpy as np
from numpy.typing import NDArray

from aggregator._errors import AlreadyExists, FailedPrecondition, InvalidArgument
from aggregator._log_format import LogFormatError, expand
from aggregator.storage._base import (
    Selection,
    Storage,
    StorageError,
    Submission,
    SubmitOutcome,
    Tally,
)
from aggregator.storage._lock import exclusive_lock
from aggregator.storage._migrate import migrate
from shared.deniable.v1 import aggregator_pb2 as pb

__all__ = ["SqliteStorage"]

_ALL = np.s_[:]  # every row of a group: a view, not a copy


class SqliteStorage(Storage):
    """The embedded default backend, for one aggregator process per database file.

    Layout: each committed batch appends one row per survey to ``log`` holding the new
    reports (compact for a uniform yes/no batch, else a serialized
    ``SubmitReportsRequest``; see :mod:`aggregator._log_format`), and bumps the running
    ``tallies`` in the same transaction. Rows are appended in key order, so a commit writes a few
    sequential pages however random the clients' report ids are.

    Idempotency: the ids of each open survey's stored reports (with their payloads) are
    kept in memory, rebuilt from the log at start, and updated only after a commit. That
    costs about 100 bytes of memory per stored report of an open survey; a lock file
    (``PATH.lock``) keeps a second aggregator from using the same database.

    Durability: the WAL journal with ``synchronous=FULL`` fsyncs the log at every commit,
    so an acknowledged batch survives a process crash and a power loss. (``NORMAL`` would be
    faster but can lose the last commits on power loss, which would break the promise that
    an acknowledged report is never lost.) One connection serves all threads under a lock:
    SQLite admits one writer at a time anyway.
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
            self._index = self._load_index()
            self._tallies: dict[tuple[str, str], Tally] = {}
        except sqlite3.DatabaseError as error:
            self._release_lockfile()
            raise StorageError(f"cannot open SQLite database {path!r}: {error}") from None
        except StorageError:
            self._release_lockfile()
            raise

    def _release_lockfile(self) -> None:
        if self._lockfile is not None:
            self._lockfile.close()
            self._lockfile = None

    def _load_index(self) -> dict[str, dict[bytes, bytes]]:
        """Report ids and payloads of every open survey, read back from the log."""
        from aggregator._batch import decode_log

        index: dict[str, dict[bytes, bytes]] = {
            survey_id: {}
            for (survey_id,) in self._db.execute(
                "SELECT id FROM surveys WHERE state = ?", (pb.SURVEY_STATE_OPEN,)
            )
        }
        for seq, survey_id, reports in self._db.execute(
            "SELECT log.seq, log.survey_id, log.reports FROM log "
            "JOIN surveys ON surveys.id = log.survey_id WHERE surveys.state = ? ORDER BY log.seq",
            (pb.SURVEY_STATE_OPEN,),
        ):
            try:
                ids, payloads = decode_log(reports)
            except (LogFormatError, InvalidArgument) as error:
                raise StorageError(f"log row {seq} of {self.path!r} is damaged: {error}") from None
            index[survey_id].update(zip(ids, payloads, strict=True))
        return index

    def _with_count(self, spec: bytes, state: int, survey_id: str) -> pb.Survey:
        survey = pb.Survey.FromString(spec)
        survey.state = state  # type: ignore[assignment]
        row = self._db.execute(
            "SELECT COALESCE(SUM(n), 0) FROM tallies WHERE survey_id = ?", (survey_id,)
        ).fetchone()
        survey.reports = int(row[0])
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
            self._index[survey.id] = {}

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
            self._index.pop(survey_id, None)
        return self.get_survey(survey_id)

    def submit(self, submission: Submission) -> SubmitOutcome:
        """Append the new reports to the log and bump tallies in one durable transaction."""
        with self._lock:
            added: list[tuple[dict[bytes, bytes], Sequence[bytes]]] = []
            try:
                fresh = self._claim_locked(submission, added)
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    tallies = self._append_locked(submission, fresh)
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
            except BaseException:
                for index, claimed in added:  # nothing of the batch is stored: forget it
                    for report_id in claimed:
                        del index[report_id]
                raise
            self._tallies.update(tallies)  # only once committed
        total = len(submission.report_ids)
        stored = total if fresh is None else int(np.count_nonzero(fresh))
        return SubmitOutcome(stored=stored, already_stored=total - stored)

    def _claim_locked(
        self, submission: Submission, added: list[tuple[dict[bytes, bytes], Sequence[bytes]]]
    ) -> NDArray[np.bool_] | None:
        """Enter the batch's new ids in the index (listed in ``added``); which reports are new.

        One ``setdefault`` per id both looks it up and claims it. The ids of a submission
        are distinct, so when the index grew by the number of ids, every report is new
        (the common case, answered without looking at each id again). Otherwise a report
        is new exactly when the index now holds its own payload object: a stored payload
        comes from an earlier decode, never the same object. The caller removes the
        claimed ids again if the batch is not committed.

        Returns:
            None if every report is new, else a mask of the new ones.

        Raises:
            FailedPrecondition: a survey is closed.
            AlreadyExists: an id is stored with a different payload.
        """
        ids, payloads = submission.report_ids, submission.payloads
        fresh: NDArray[np.bool_] | None = None
        for group in submission.groups:
            index = self._index.get(group.survey_id)
            if index is None:
                first = submission.positions[int(group.rows[0])]
                raise FailedPrecondition(f"reports[{first}]: survey {group.survey_id!r} is closed")
            whole = len(group.rows) == len(ids)  # rows are distinct: all of them, in order
            rows = range(len(ids)) if whole else group.rows.tolist()
            mine = payloads if whole else [payloads[row] for row in rows]
            theirs = ids if whole else [ids[row] for row in rows]
            before = len(index)
            held = list(map(index.setdefault, theirs, mine))
            if len(index) - before == len(theirs):
                added.append((index, theirs))
                continue
            added.append((index, [i for i, h, m in zip(theirs, held, mine, strict=True) if h is m]))
            if fresh is None:
                fresh = np.ones(len(ids), dtype=bool)
            for row, payload in zip(rows, held, strict=True):
                if payload is payloads[row]:
                    continue
                if payload != payloads[row]:
                    raise AlreadyExists(
                        f"reports[{submission.positions[row]}].report_id: "
                        f"{ids[row].decode()!r} is already stored in survey "
                        f"{group.survey_id!r} with different content"
                    )
                fresh[row] = False
        return fresh

    def _append_locked(
        self, submission: Submission, fresh: NDArray[np.bool_] | None
    ) -> dict[tuple[str, str], Tally]:
        """Write the new reports' log rows and tallies; the tallies to cache after commit."""
        by_survey: dict[str, list[NDArray[np.intp]]] = {}
        tallies: dict[tuple[str, str], Tally] = {}
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
        return tallies

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
