"""A read-only view of a PostgreSQL database in one snapshot, safe while daemons serve it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType

import psycopg
from psycopg import IsolationLevel

from deniable.aggregator.storage._base import StorageError, Tally
from deniable.aggregator.storage.postgres._errors import redacted
from deniable.aggregator.storage.postgres._schema import SCHEMA_VERSION

__all__ = ["PostgresReader"]

_TABLES = ("surveys", "tallies", "log")
_FETCH = 64  # log rows fetched at a time from the server-side cursor (one batch each)
_TOKENS = 10_000  # token hashes or bindings fetched at a time


class PostgresReader:
    """Reads surveys, tallies, releases, the report log and enrollment, writing nothing.

    Read inside :meth:`snapshot`: one ``REPEATABLE READ READ ONLY`` transaction, so every
    read sees the database as of its first query, whatever the daemons commit meanwhile,
    and the transaction can take no write lock. The log is streamed through a server-side
    cursor, a few rows at a time, so memory does not grow with the log.

    ``tallies`` holds one row per (question, batch); a question's tally is their sum.
    """

    def __init__(self, url: str) -> None:
        self.url = redacted(url)  # what messages and --json show: never the password
        self.name = self.url
        try:
            self._db = psycopg.connect(url, connect_timeout=10, autocommit=True)
        except psycopg.Error as error:
            raise StorageError(
                f"cannot open PostgreSQL database {self.name!r}: {_reason(error)}"
            ) from None
        self._db.isolation_level = IsolationLevel.REPEATABLE_READ
        self._db.read_only = True
        try:
            with self._db.transaction():
                self._check_schema()
        except psycopg.Error as error:
            self._db.close()
            raise StorageError(f"cannot read PostgreSQL database {self.name!r}: {error}") from None
        except StorageError:
            self._db.close()
            raise

    def _check_schema(self) -> None:
        found = self._db.execute(
            "SELECT name FROM unnest(%s::text[]) AS name WHERE to_regclass(name) IS NOT NULL",
            (["schema_version", *_TABLES],),
        ).fetchall()
        tables = {name for (name,) in found}
        if "schema_version" not in tables:
            raise StorageError(
                f"{self.name!r} is not a deniable aggregator database (no schema_version table)"
            )
        row = self._db.execute("SELECT max(version) FROM schema_version").fetchone()
        version = 0 if row is None or row[0] is None else int(row[0])
        if version > SCHEMA_VERSION:
            raise StorageError(
                f"{self.name!r} has schema version {version}, newer than this deniable's "
                f"{SCHEMA_VERSION}; upgrade deniable"
            )
        missing = [table for table in _TABLES if table not in tables]
        if version == 0 or missing:
            what = f"missing tables {', '.join(missing)}" if missing else "no schema version"
            raise StorageError(f"{self.name!r} is not a deniable aggregator database ({what})")

    def __enter__(self) -> PostgresReader:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (closing twice is allowed)."""
        self._db.close()

    @contextmanager
    def snapshot(self) -> Iterator[PostgresReader]:
        """One read-only repeatable-read transaction: every read inside sees one state.

        Raises:
            StorageError: the database cannot be read (for example the server went away).
        """
        try:
            with self._db.transaction(force_rollback=True):
                self._db.execute("SELECT 1 FROM surveys LIMIT 1")  # takes the snapshot now
                yield self
        except psycopg.Error as error:
            raise StorageError(f"cannot read PostgreSQL database {self.name!r}: {error}") from None

    def surveys(self) -> list[tuple[str, int, bytes]]:
        """Every survey's id, state and stored ``Survey`` message, in creation order."""
        rows = self._db.execute("SELECT id, state, spec FROM surveys ORDER BY seq").fetchall()
        return [(str(survey_id), int(state), bytes(spec)) for survey_id, state, spec in rows]

    def tallies(self) -> dict[tuple[str, str], Tally]:
        """Every question's tally: the sum of its rows (one per batch that touched it)."""
        counts = {
            (str(survey_id), str(question_id)): int(n)
            for survey_id, question_id, n in self._db.execute(
                "SELECT survey_id, question_id, sum(n) FROM tallies GROUP BY 1, 2"
            )
        }
        sums: dict[tuple[str, str], dict[int, int]] = {key: {} for key in counts}
        for survey_id, question_id, index, total in self._db.execute(
            "SELECT t.survey_id, t.question_id, u.i, sum(u.v) FROM tallies t "
            "CROSS JOIN LATERAL unnest(t.sums) WITH ORDINALITY AS u(v, i) GROUP BY 1, 2, 3"
        ):
            sums[str(survey_id), str(question_id)][int(index)] = int(total)
        return {key: Tally(n, _dense(sums[key])) for key, n in counts.items()}

    def releases(self) -> dict[tuple[str, str], Tally]:
        """Every stored release of a stepped question."""
        return {
            (str(survey_id), str(question_id)): Tally(int(n), tuple(int(s) for s in sums))
            for survey_id, question_id, n, sums in self._db.execute(
                "SELECT survey_id, question_id, n, sums FROM releases"
            )
        }

    def log(self, survey_id: str) -> Iterator[tuple[int, bytes]]:
        """The survey's log rows (sequence number, stored bytes) in commit order, streamed."""
        with self._db.cursor(name="deniable_log") as cursor:
            cursor.itersize = _FETCH
            cursor.execute(
                "SELECT seq, reports FROM log WHERE survey_id = %s ORDER BY seq", (survey_id,)
            )
            for seq, reports in cursor:
                yield int(seq), bytes(reports)

    def token_hashes(self, survey_id: str) -> Iterator[bytes]:
        """The hashes of the survey's issued enrollment tokens, streamed."""
        with self._db.cursor(name="deniable_tokens") as cursor:
            cursor.itersize = _TOKENS
            cursor.execute(
                "SELECT hash FROM tokens WHERE survey_id = %s ORDER BY hash", (survey_id,)
            )
            for (token,) in cursor:
                yield bytes(token)

    def bindings(self, survey_id: str) -> Iterator[tuple[bytes, str, str, str, bytes]]:
        """Each (token, question) of the survey bound to its report, streamed.

        As (token hash, question id, survey id, report id, SHA-256 of the report's payload).
        """
        with self._db.cursor(name="deniable_bindings") as cursor:
            cursor.itersize = _TOKENS
            cursor.execute(
                "SELECT token_hash, question_id, survey_id, report_id, payload_digest "
                "FROM token_answers WHERE survey_id = %s ORDER BY token_hash, question_id",
                (survey_id,),
            )
            for token, question_id, survey, report_id, digest in cursor:
                yield bytes(token), str(question_id), str(survey), str(report_id), bytes(digest)


def _dense(sums: dict[int, int]) -> tuple[int, ...]:
    """Sums by 1-based position as a tuple, a missing position counting as zero."""
    return tuple(sums.get(i, 0) for i in range(1, max(sums, default=0) + 1))


def _reason(error: psycopg.Error) -> str:
    """The first line of libpq's message (it never holds the password)."""
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
