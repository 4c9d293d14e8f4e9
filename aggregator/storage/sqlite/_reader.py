"""A read-only view of a SQLite database, safe to open while a daemon serves it."""

from __future__ import annotations

import json
import sqlite3
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

from deniable.aggregator.storage._base import StorageError, Tally
from deniable.aggregator.storage.sqlite._schema import SCHEMA_VERSION

__all__ = ["OLDEST_READABLE", "SqliteReader", "sqlite_path"]

OLDEST_READABLE = 2  # version 2 introduced the batch log; version 1 must be upgraded first
_TABLES = ("surveys", "tallies", "log")
_FETCH = 64  # log rows fetched at a time (a row holds one committed batch)
_TOKENS = 10_000  # token hashes or bindings fetched at a time


def sqlite_path(url: str) -> str:
    """The file a ``sqlite:///PATH`` URL names.

    Raises:
        ValueError: another scheme, or ``sqlite:///:memory:`` (nothing to read).
    """
    if not url.startswith("sqlite:///"):
        scheme = url.split(":", 1)[0] if ":" in url else url
        raise ValueError(
            f"unsupported database URL {url!r} (scheme {scheme!r}); use sqlite:///PATH"
        )
    path = url.removeprefix("sqlite:///")
    if not path or path == ":memory:":
        raise ValueError(f"database URL {url!r} names no file; use sqlite:///PATH")
    return path


class SqliteReader:
    """Reads surveys, tallies and the report log without writing or locking anything.

    The connection is opened with ``mode=ro`` and ``query_only``: it never writes the
    database, never checkpoints the WAL (a read-only connection cannot), and never takes
    the daemon's lock file (``PATH.lock``), so it runs beside a serving daemon. SQLite may
    create the empty ``-wal``/``-shm`` companion files any WAL reader needs to coordinate
    with the writer; the database file itself is left untouched.

    Read inside :meth:`snapshot` so that everything comes from one WAL snapshot: commits
    the daemon makes meanwhile are invisible until the snapshot ends.

    Only the ``surveys``, ``tallies``, ``log`` and (if present) ``releases`` tables are
    read, so any schema version
    from :data:`OLDEST_READABLE` up to this code's ``SCHEMA_VERSION`` is accepted.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.name = path  # what messages show
        self.url = f"sqlite:///{path}"
        if not Path(path).is_file():
            raise StorageError(f"no database file at {path!r}")
        uri = f"file:{urllib.parse.quote(str(Path(path).absolute()))}?mode=ro"
        try:
            self._db = sqlite3.connect(uri, uri=True, isolation_level=None)
        except sqlite3.Error as error:
            raise StorageError(f"cannot open SQLite database {path!r}: {error}") from None
        try:
            self._db.execute("PRAGMA query_only = ON")
            self._db.execute("PRAGMA busy_timeout = 10000")
            self._check_schema()
        except sqlite3.Error as error:
            self._db.close()
            raise StorageError(f"cannot read SQLite database {path!r}: {error}") from None
        except StorageError:
            self._db.close()
            raise

    def _check_schema(self) -> None:
        (version,) = self._db.execute("PRAGMA user_version").fetchone()
        if version > SCHEMA_VERSION:
            raise StorageError(
                f"{self.path!r} has schema version {version}, newer than this deniable's "
                f"{SCHEMA_VERSION}; upgrade deniable"
            )
        tables = {
            name
            for (name,) in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        missing = [table for table in _TABLES if table not in tables]
        if version == 0 or (missing and version >= OLDEST_READABLE):
            what = f"missing tables {', '.join(missing)}" if missing else "no schema version"
            raise StorageError(f"{self.path!r} is not a deniable aggregator database ({what})")
        if version < OLDEST_READABLE:
            raise StorageError(
                f"{self.path!r} has schema version {version}, older than the batch log "
                f"(version {OLDEST_READABLE}); start `deniable-aggregator serve` on it once "
                "to upgrade it"
            )

    def __enter__(self) -> SqliteReader:
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
    def snapshot(self) -> Iterator[SqliteReader]:
        """A read transaction: every read inside sees the same committed state.

        Raises:
            StorageError: the database cannot be read (damaged, or locked for longer than
                the busy timeout while a crashed writer's WAL is recovered).
        """
        try:
            self._db.execute("BEGIN")
            # A deferred transaction takes its snapshot at the first read: read now.
            self._db.execute("SELECT COUNT(*) FROM surveys").fetchone()
        except sqlite3.Error as error:
            raise StorageError(f"cannot read SQLite database {self.path!r}: {error}") from None
        try:
            yield self
        except sqlite3.Error as error:
            raise StorageError(f"cannot read SQLite database {self.path!r}: {error}") from None
        finally:
            self._db.execute("ROLLBACK")  # nothing was written: just end the read

    def surveys(self) -> list[tuple[str, int, bytes]]:
        """Every survey's id, state and stored ``Survey`` message, in creation order."""
        rows = self._db.execute("SELECT id, state, spec FROM surveys ORDER BY seq").fetchall()
        return [(survey_id, state, bytes(spec)) for survey_id, state, spec in rows]

    def tallies(self) -> dict[tuple[str, str], Tally]:
        """Every stored running tally, by (survey id, question id)."""
        return {
            (survey_id, question_id): Tally(n=n, sums=tuple(json.loads(sums)))
            for survey_id, question_id, n, sums in self._db.execute(
                "SELECT survey_id, question_id, n, sums FROM tallies"
            )
        }

    def releases(self) -> dict[tuple[str, str], Tally]:
        """Every stored release of a stepped question (none before schema version 7)."""
        exists = self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'releases'"
        ).fetchone()
        if exists is None:
            return {}
        return {
            (survey_id, question_id): Tally(n=n, sums=tuple(json.loads(sums)))
            for survey_id, question_id, n, sums in self._db.execute(
                "SELECT survey_id, question_id, n, sums FROM releases"
            )
        }

    def log(self, survey_id: str) -> Iterator[tuple[int, bytes]]:
        """The survey's log rows (sequence number, stored bytes) in commit order, streamed."""
        cursor = self._db.execute(
            "SELECT seq, reports FROM log WHERE survey_id = ? ORDER BY seq", (survey_id,)
        )
        try:
            while rows := cursor.fetchmany(_FETCH):
                for seq, reports in rows:
                    yield seq, bytes(reports)
        finally:
            cursor.close()

    def _has(self, table: str) -> bool:
        return (
            self._db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
            ).fetchone()
            is not None
        )

    def token_hashes(self, survey_id: str) -> Iterator[bytes]:
        """The hashes of the survey's issued enrollment tokens (none before version 4)."""
        if not self._has("tokens"):
            return
        cursor = self._db.execute(
            "SELECT hash FROM tokens WHERE survey_id = ? ORDER BY hash", (survey_id,)
        )
        try:
            while rows := cursor.fetchmany(_TOKENS):
                for (token,) in rows:
                    yield bytes(token)
        finally:
            cursor.close()

    def bindings(self, survey_id: str) -> Iterator[tuple[bytes, str, str, str, bytes]]:
        """Each (token, question) of the survey bound to its report, streamed.

        As (token hash, question id, survey id, report id, SHA-256 of the report's payload).
        """
        if not self._has("token_answers"):
            return
        cursor = self._db.execute(
            "SELECT token_hash, question_id, survey_id, report_id, payload_digest "
            "FROM token_answers WHERE survey_id = ? ORDER BY token_hash, question_id",
            (survey_id,),
        )
        try:
            while rows := cursor.fetchmany(_TOKENS):
                for token, question_id, survey, report_id, digest in rows:
                    yield bytes(token), str(question_id), str(survey), str(report_id), bytes(digest)
        finally:
            cursor.close()
