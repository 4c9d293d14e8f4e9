"""PostgreSQL storage: ids made unique by the database, per-batch tally rows summed on read."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import psycopg
from numpy.typing import NDArray
from psycopg.rows import TupleRow
from psycopg_pool import ConnectionPool

from deniable.aggregator.storage._base import (
    ReportGroup,
    Selection,
    Storage,
    StorageError,
    Submission,
    SubmitOutcome,
    Tally,
)
from deniable.aggregator.storage._log_format import expand
from deniable.shared.errors import AlreadyExists, FailedPrecondition, NotFound
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["MIGRATIONS", "PostgresStorage", "redacted"]

# Each migration runs once, in order, in one transaction with the schema_version bump.
# Version 1: the tables of the SQLite schema that this backend uses, except that
# `report_ids` holds every stored (survey, report id) with its payload's SHA-256, so that
# the primary key makes a report id count once whichever daemon receives it, and that
# `tallies` holds one row per (question, batch): batch 0 is written when the survey is
# created, every commit adds its own row, and a read sums them (no hot row to update).
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE surveys (
        id TEXT PRIMARY KEY,
        seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
        state INTEGER NOT NULL,
        spec BYTEA NOT NULL
    );
    CREATE TABLE tallies (
        survey_id TEXT NOT NULL REFERENCES surveys(id),
        question_id TEXT NOT NULL,
        batch BIGINT NOT NULL,
        n BIGINT NOT NULL,
        sums BIGINT[] NOT NULL,
        PRIMARY KEY (survey_id, question_id, batch)
    );
    CREATE SEQUENCE tally_batches;
    CREATE TABLE releases (
        survey_id TEXT NOT NULL REFERENCES surveys(id),
        question_id TEXT NOT NULL,
        n BIGINT NOT NULL,
        sums BIGINT[] NOT NULL,
        PRIMARY KEY (survey_id, question_id)
    );
    CREATE TABLE log (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        survey_id TEXT NOT NULL REFERENCES surveys(id),
        reports BYTEA NOT NULL
    );
    CREATE INDEX log_by_survey ON log (survey_id, seq);
    CREATE TABLE report_ids (
        survey_id TEXT NOT NULL REFERENCES surveys(id),
        report_id TEXT NOT NULL,
        payload_digest BYTEA NOT NULL,
        PRIMARY KEY (survey_id, report_id)
    );
    CREATE TABLE tokens (
        hash BYTEA PRIMARY KEY,
        survey_id TEXT NOT NULL REFERENCES surveys(id)
    );
    CREATE TABLE token_counts (
        survey_id TEXT PRIMARY KEY REFERENCES surveys(id),
        issued BIGINT NOT NULL
    );
    CREATE TABLE token_answers (
        token_hash BYTEA NOT NULL REFERENCES tokens(hash),
        question_id TEXT NOT NULL,
        survey_id TEXT NOT NULL REFERENCES surveys(id),
        report_id TEXT NOT NULL,
        payload_digest BYTEA NOT NULL,
        PRIMARY KEY (token_hash, question_id),
        UNIQUE (survey_id, report_id)
    );
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)
Connection = psycopg.Connection[TupleRow]
_MIGRATION_LOCK = 0x64656E69  # pg_advisory_xact_lock key: one daemon migrates at a time


def redacted(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def migrate(db: Connection) -> None:
    """Bring the schema to :data:`SCHEMA_VERSION` in one transaction (daemons take turns).

    Raises:
        StorageError: the database was written by a newer version of deniable.
    """
    with db.transaction():
        db.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        row = db.execute("SELECT version FROM schema_version").fetchone()
        version = 0 if row is None else int(row[0])
        if version > SCHEMA_VERSION:
            raise StorageError(
                f"the database has schema version {version}, newer than this aggregator's "
                f"{SCHEMA_VERSION}; upgrade deniable"
            )
        for statement in MIGRATIONS[version:]:
            db.execute(statement.encode())
        if row is None:
            db.execute("INSERT INTO schema_version (version) VALUES (%s)", (SCHEMA_VERSION,))
        else:
            db.execute("UPDATE schema_version SET version = %s", (SCHEMA_VERSION,))


class PostgresStorage(Storage):
    """A backend that any number of daemons can share (work in progress).

    Every batch is one transaction. Its report ids go in with one multi-row
    ``INSERT ... ON CONFLICT DO NOTHING``: the primary key of ``report_ids`` decides which
    are new, so a report is counted once whichever daemon receives it and however often
    it is resent (a concurrent insert of the same id waits for the first to commit).
    Each batch adds one tally row per question it touches; reads sum them.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        try:
            with psycopg.connect(url, connect_timeout=10) as db:
                migrate(db)
        except psycopg.Error as error:
            raise StorageError(
                f"cannot open PostgreSQL database {redacted(url)!r}: {error}"
            ) from None
        self._pool = ConnectionPool(url, min_size=1, max_size=8, open=True)

    def _survey(self, db: Connection, row: TupleRow) -> pb.Survey:
        survey_id, spec, state = row
        survey = pb.Survey.FromString(bytes(spec))
        survey.state = state
        counts = db.execute(
            "SELECT COALESCE(SUM(n), 0), "
            "(SELECT issued FROM token_counts WHERE survey_id = %s) "
            "FROM tallies WHERE survey_id = %s",
            (survey_id, survey_id),
        ).fetchone()
        assert counts is not None
        survey.reports = int(counts[0])
        survey.tokens_issued = int(counts[1] or 0)
        return survey

    def create_survey(self, survey: pb.Survey) -> None:
        """Store a new open survey and a zero tally row (batch 0) per question."""
        with self._pool.connection() as db, db.transaction():
            db.execute(
                "INSERT INTO surveys (id, state, spec) VALUES (%s, %s, %s)",
                (survey.id, pb.SURVEY_STATE_OPEN, survey.SerializeToString()),
            )
            with db.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO tallies (survey_id, question_id, batch, n, sums) "
                    "VALUES (%s, %s, 0, 0, '{}')",
                    [(survey.id, q.id) for q in survey.questions],
                )

    def get_survey(self, survey_id: str) -> pb.Survey | None:
        """The survey with its state, report count and tokens issued, or None."""
        with self._pool.connection() as db, db.transaction():
            row = db.execute(
                "SELECT id, spec, state FROM surveys WHERE id = %s", (survey_id,)
            ).fetchone()
            return None if row is None else self._survey(db, row)

    def list_surveys(self, include_closed: bool) -> list[pb.Survey]:
        """Surveys in creation order, open ones only unless ``include_closed``."""
        with self._pool.connection() as db, db.transaction():
            rows = db.execute(
                "SELECT id, spec, state FROM surveys WHERE state = %s OR %s ORDER BY seq",
                (pb.SURVEY_STATE_OPEN, include_closed),
            ).fetchall()
            return [self._survey(db, row) for row in rows]

    def close_survey(self, survey_id: str) -> pb.Survey | None:
        """Mark the survey closed (closing twice is a no-op)."""
        with self._pool.connection() as db, db.transaction():
            db.execute(
                "UPDATE surveys SET state = %s WHERE id = %s",
                (pb.SURVEY_STATE_CLOSED, survey_id),
            )
        return self.get_survey(survey_id)

    def issue_tokens(self, survey_id: str, hashes: Sequence[bytes]) -> None:
        """Store the hashes of an open survey's new tokens, and count them, in one transaction."""
        with self._pool.connection() as db, db.transaction():
            row = db.execute(
                "SELECT state FROM surveys WHERE id = %s FOR SHARE", (survey_id,)
            ).fetchone()
            if row is None:
                raise NotFound(f"survey_id: unknown survey {survey_id!r}")
            if row[0] != pb.SURVEY_STATE_OPEN:
                raise FailedPrecondition(f"survey_id: survey {survey_id!r} is closed")
            db.execute(
                "INSERT INTO tokens (hash, survey_id) SELECT unnest(%s::bytea[]), %s",
                (list(hashes), survey_id),
            )
            db.execute(
                "INSERT INTO token_counts (survey_id, issued) VALUES (%s, %s) "
                "ON CONFLICT (survey_id) DO UPDATE "
                "SET issued = token_counts.issued + excluded.issued",
                (survey_id, len(hashes)),
            )

    def submit(self, submission: Submission) -> SubmitOutcome:
        """Store the new reports, their log rows and tally rows in one transaction."""
        if submission.token_hash is not None:
            raise NotImplementedError("enrollment tokens are not supported on PostgreSQL yet")
        with self._pool.connection() as db, db.transaction():
            self._check_open(db, submission)
            fresh = self._claim(db, submission)
            for group in sorted(submission.groups, key=lambda g: (g.survey_id, g.question_id)):
                self._add_tally(db, group, fresh)
            by_survey: dict[str, list[NDArray[np.intp]]] = {}
            for group in submission.groups:
                by_survey.setdefault(group.survey_id, []).append(group.rows[fresh[group.rows]])
            for survey_id, parts in by_survey.items():
                rows = np.sort(np.concatenate(parts))
                if len(rows):
                    db.execute(
                        "INSERT INTO log (survey_id, reports) VALUES (%s, %s)",
                        (survey_id, submission.encode(rows)),
                    )
        stored = int(np.count_nonzero(fresh))
        return SubmitOutcome(stored, len(submission.report_ids) - stored)

    def _check_open(self, db: Connection, submission: Submission) -> None:
        """Refuse a batch with a report for a closed (or unknown) survey; hold them open."""
        surveys = sorted({group.survey_id for group in submission.groups})
        rows = db.execute(
            "SELECT id FROM surveys WHERE id = ANY(%s) AND state = %s FOR SHARE",
            (surveys, pb.SURVEY_STATE_OPEN),
        ).fetchall()
        open_ = {row[0] for row in rows}
        for group in submission.groups:
            if group.survey_id not in open_:
                first = submission.positions[int(group.rows[0])]
                raise FailedPrecondition(f"reports[{first}]: survey {group.survey_id!r} is closed")

    def _claim(self, db: Connection, submission: Submission) -> NDArray[np.bool_]:
        """Insert the batch's ids in one statement; which rows are new.

        Raises:
            AlreadyExists: an id is stored in its survey with a different payload.
        """
        count = len(submission.report_ids)
        surveys = [""] * count
        for group in submission.groups:
            for row in group.rows.tolist():
                surveys[row] = group.survey_id
        ids = [rid.decode("ascii") for rid in submission.report_ids]
        digests = [hashlib.sha256(payload).digest() for payload in submission.payloads]
        inserted = db.execute(
            "INSERT INTO report_ids (survey_id, report_id, payload_digest) "
            "SELECT * FROM unnest(%s::text[], %s::text[], %s::bytea[]) "
            "ON CONFLICT DO NOTHING RETURNING survey_id, report_id",
            (surveys, ids, digests),
        ).fetchall()
        new = {(row[0], row[1]) for row in inserted}
        fresh = np.fromiter(((s, r) in new for s, r in zip(surveys, ids, strict=True)), bool, count)
        old = np.flatnonzero(~fresh)
        if len(old):
            stored = dict(
                ((row[0], row[1]), bytes(row[2]))
                for row in db.execute(
                    "SELECT r.survey_id, r.report_id, r.payload_digest FROM report_ids r "
                    "JOIN unnest(%s::text[], %s::text[]) AS k(s, i) "
                    "ON r.survey_id = k.s AND r.report_id = k.i",
                    ([surveys[i] for i in old], [ids[i] for i in old]),
                )
            )
            for i in old.tolist():
                if stored[surveys[i], ids[i]] != digests[i]:
                    raise AlreadyExists(
                        f"reports[{submission.positions[i]}].report_id: {ids[i]!r} is already "
                        f"stored in survey {surveys[i]!r} with a different report"
                    )
        return fresh

    def _add_tally(self, db: Connection, group: ReportGroup, fresh: NDArray[np.bool_]) -> None:
        """Add the group's new reports as one tally row; store a release when one is due."""
        mask: NDArray[np.bool_] = fresh[group.rows]
        count = int(np.count_nonzero(mask))
        keep: Selection = mask
        if not count:
            return
        key = (group.survey_id, group.question_id)
        delta = group.tally(keep)
        if group.releases is not None:  # serialize the question's batches: lock batch 0
            db.execute(
                "SELECT 1 FROM tallies WHERE survey_id = %s AND question_id = %s AND batch = 0 "
                "FOR UPDATE",
                key,
            )
            old = self._sum(db, key)
        db.execute(
            "INSERT INTO tallies (survey_id, question_id, batch, n, sums) "
            "VALUES (%s, %s, nextval('tally_batches'), %s, %s)",
            (*key, count, delta),
        )
        if group.releases is not None:
            new = Tally(old.n + count, _add(old.sums, delta))
            last = self._released(db, key)
            if group.releases.due(last.n, new.n):
                db.execute(
                    "INSERT INTO releases (survey_id, question_id, n, sums) "
                    "VALUES (%s, %s, %s, %s) ON CONFLICT (survey_id, question_id) "
                    "DO UPDATE SET n = excluded.n, sums = excluded.sums",
                    (*key, new.n, list(new.sums)),
                )

    def _sum(self, db: Connection, key: tuple[str, str]) -> Tally:
        total = Tally(0)
        rows = db.execute(
            "SELECT n, sums FROM tallies WHERE survey_id = %s AND question_id = %s", key
        ).fetchall()
        for n, sums in rows:
            total = Tally(total.n + int(n), _add(total.sums, [int(s) for s in sums]))
        return total

    def _released(self, db: Connection, key: tuple[str, str]) -> Tally:
        row = db.execute(
            "SELECT n, sums FROM releases WHERE survey_id = %s AND question_id = %s", key
        ).fetchone()
        return Tally(0) if row is None else Tally(int(row[0]), tuple(int(s) for s in row[1]))

    def _known(self, db: Connection, key: tuple[str, str]) -> bool:
        return (
            db.execute(
                "SELECT 1 FROM tallies WHERE survey_id = %s AND question_id = %s AND batch = 0",
                key,
            ).fetchone()
            is not None
        )

    def tally(self, survey_id: str, question_id: str) -> Tally | None:
        """The sum of the question's tally rows (one per batch), or None if unknown."""
        key = (survey_id, question_id)
        with self._pool.connection() as db, db.transaction():
            return self._sum(db, key) if self._known(db, key) else None

    def released(self, survey_id: str, question_id: str) -> Tally | None:
        """The tally last released (``Tally(0)`` before the first), or None if unknown."""
        key = (survey_id, question_id)
        with self._pool.connection() as db, db.transaction():
            return self._released(db, key) if self._known(db, key) else None

    def log(self, survey_id: str) -> Iterator[bytes]:
        """The survey's log rows in commit order (read in one snapshot)."""
        with self._pool.connection() as db:
            rows = db.execute(
                "SELECT reports FROM log WHERE survey_id = %s ORDER BY seq", (survey_id,)
            ).fetchall()
        return iter([expand(bytes(reports)) for (reports,) in rows])

    def close(self) -> None:
        """Close the connection pool (closing twice is allowed)."""
        self._pool.close()

    # --- used by `deniable-aggregator migrate` (see ._copy); kept last for easy merges ---

    def restore_bindings(self, bindings: Sequence[tuple[bytes, str, str, str, bytes]]) -> None:
        """Store enrollment bindings copied from another database, in one transaction."""
        from deniable.aggregator.storage._postgres_copy import insert_bindings

        with self._pool.connection() as db, db.transaction():
            insert_bindings(db, bindings)

    def single_transaction(self) -> AbstractContextManager[None]:
        """Every call made inside runs in one transaction, committed when the block ends."""
        from deniable.aggregator.storage._postgres_copy import pinned

        return pinned(self)


def _add(sums: tuple[int, ...], delta: Sequence[int]) -> tuple[int, ...]:
    """Element-wise sum of two tallies' sums, the shorter padded with zeros."""
    width = max(len(sums), len(delta))
    return tuple(
        (sums[i] if i < len(sums) else 0) + (delta[i] if i < len(delta) else 0)
        for i in range(width)
    )
