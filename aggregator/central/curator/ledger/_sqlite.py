"""The ledger in a SQLite file: WAL, synchronous=FULL, every write one BEGIN IMMEDIATE."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from deniable.aggregator.central.curator._base import CuratorError
from deniable.aggregator.central.curator.ledger._model import LedgerUnavailableError
from deniable.aggregator.central.curator.ledger._schema import Db, migrate
from deniable.aggregator.central.curator.ledger._sql import SqlLedger

__all__ = ["BUSY_TIMEOUT_MS", "SqliteLedger"]

# How long a write waits for another process's transaction on the file before giving up.
# Longer than the aggregator's 10 s: a spend that waits is better than one refused as busy.
BUSY_TIMEOUT_MS = 60_000


class _SqliteDb:
    """:class:`~._schema.Db` over a sqlite3 connection."""

    for_update = ""  # BEGIN IMMEDIATE already holds the file's write lock

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        return self._connection.execute(sql, tuple(params)).fetchall()

    def run(self, sql: str, params: Sequence[object] = ()) -> int:
        return self._connection.execute(sql, tuple(params)).rowcount


class SqliteLedger(SqlLedger):
    """The default ledger: one file any number of processes share, one writer at a time.

    Durability as the aggregator's SQLite storage: the WAL journal with
    ``synchronous=FULL``, so an accepted spend survives a crash and a power loss. Each
    write is one ``BEGIN IMMEDIATE`` transaction, which holds the file's write lock from
    its first read, so two processes cannot both spend the last of a budget. One
    connection per ledger, shared by its threads under a lock.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.name = path
        self._lock = threading.Lock()
        try:
            if path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            self._connection = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        except (OSError, sqlite3.Error) as error:
            raise CuratorError(f"--db: cannot open the ledger {path} ({error})") from None
        try:
            self._connection.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            self._connection.execute("PRAGMA journal_mode=WAL")
            self._connection.execute("PRAGMA synchronous=FULL")
            self._connection.execute("PRAGMA foreign_keys=ON")
            with self._write() as db:
                migrate(db, "sqlite", path)
        except BaseException as error:
            self._connection.close()
            if isinstance(error, sqlite3.DatabaseError):
                raise CuratorError(
                    f"--db: {path} is not a usable ledger database ({error})"
                ) from None
            raise

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[Db]:
        with self._lock:
            try:
                self._connection.execute(begin)
            except sqlite3.OperationalError as error:
                raise self._unavailable(error) from None
            try:
                yield _SqliteDb(self._connection)
                self._connection.execute("COMMIT")
            except BaseException as error:
                if self._connection.in_transaction:
                    with contextlib.suppress(sqlite3.Error):  # the first error is reported
                        self._connection.execute("ROLLBACK")
                if isinstance(error, sqlite3.OperationalError):
                    raise self._unavailable(error) from None
                raise

    def _write(self) -> AbstractContextManager[Db]:
        return self._transaction("BEGIN IMMEDIATE")

    def _read(self) -> AbstractContextManager[Db]:
        return self._transaction("BEGIN")

    def _unavailable(self, error: sqlite3.Error) -> LedgerUnavailableError:
        return LedgerUnavailableError(
            f"--db: the ledger {self.path} is unavailable ({error}); nothing was changed, "
            "retry later"
        )

    def close(self) -> None:
        with self._lock:
            self._connection.close()
