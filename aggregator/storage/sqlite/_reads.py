"""SQLite storage's reads: surveys with their counts, tallies and releases, the log by pages."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Generator

from deniable.aggregator.storage._base import Tally
from deniable.aggregator.storage.codec import expand
from deniable.aggregator.storage.sqlite._tokens import issued
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["LOG_PAGE", "SqliteReads"]

LOG_PAGE = 16  # log rows (stored batches) read per hold of the lock by Storage.log


class SqliteReads:
    """The reads of a SQLite database, under the storage's lock (a part of SqliteStorage).

    Holds no state of its own: the connection, its lock and the tallies and releases
    known in memory are the storage's.
    """

    _db: sqlite3.Connection
    _lock: threading.Lock
    _tallies: dict[tuple[str, str], Tally]
    _released: dict[tuple[str, str], Tally]

    def _with_count(self, spec: bytes, state: int, survey_id: str) -> pb.Survey:
        survey = pb.Survey.FromString(spec)
        survey.state = state  # type: ignore[assignment]
        row = self._db.execute(
            "SELECT COALESCE(SUM(n), 0) FROM tallies WHERE survey_id = ?", (survey_id,)
        ).fetchone()
        survey.reports = int(row[0])
        survey.tokens_issued = issued(self._db, survey_id)
        return survey

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
