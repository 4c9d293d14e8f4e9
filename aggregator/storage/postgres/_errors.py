"""PostgreSQL transactions: a lost database is UNAVAILABLE, serialization conflicts are retried."""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections.abc import Callable, Generator, Iterator
from typing import TypeVar
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg.errors import DeadlockDetected, SerializationFailure
from psycopg.rows import TupleRow
from psycopg_pool import ConnectionPool, PoolTimeout

from deniable.shared.errors import Unavailable

__all__ = ["CONFLICT_ATTEMPTS", "DatabaseUnavailable", "Transactions", "one_line", "redacted"]

_logger = logging.getLogger("deniable.aggregator")
T = TypeVar("T")
Connection = psycopg.Connection[TupleRow]

CONFLICT_ATTEMPTS = 5  # serialization failures and deadlocks: tries before UNAVAILABLE
# While the database is known to be down, a call waits this long (seconds) for a pooled
# connection, not the pool's whole timeout: clients get UNAVAILABLE before their deadline.
DOWN_POOL_TIMEOUT = 0.5


class DatabaseUnavailable(Unavailable):
    """The PostgreSQL server cannot be reached or dropped the connection: retry later.

    The request's transaction did not commit (or, if the connection was lost during its
    COMMIT, may have): a retry with the same report ids stores each report once.
    """


def redacted(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def one_line(error: BaseException) -> str:
    """A driver error's message on one line (libpq's span several)."""
    return " ".join(str(error).split()) or type(error).__name__


def unavailable(url: str, error: BaseException) -> DatabaseUnavailable:
    """The UNAVAILABLE error for a lost database, naming it without its password."""
    return DatabaseUnavailable(
        f"the aggregator's database {redacted(url)!r} is unavailable ({one_line(error)}); "
        "the request was not completed and is safe to retry (a resent report counts once)"
    )


class Transactions:
    """Runs work in one transaction on a pooled connection, translating database failures.

    * A serialization failure or deadlock (SQLSTATE 40001, 40P01) rolls the transaction
      back and runs the work again, up to :data:`CONFLICT_ATTEMPTS` times.
    * Any other operational error (connection refused or lost, server shutting down, no
      pooled connection within the pool's timeout) rolls back what the transaction wrote
      and raises :class:`DatabaseUnavailable`. The pool's idle connections are checked
      first (a restarted server leaves them all dead), and work that may run twice
      (storing a batch, whose report ids make a second run count nothing twice; reads)
      runs once more on a fresh connection first.
    * Until a call succeeds again, calls wait at most :data:`DOWN_POOL_TIMEOUT` for a
      connection, so that during an outage clients get UNAVAILABLE at once rather than
      reaching their deadline.
    """

    def __init__(self, pool: ConnectionPool[Connection], url: str) -> None:
        self.pool = pool
        self.url = url
        self._pinned: Connection | None = None
        self.down = False  # the last call found the database unreachable

    @contextlib.contextmanager
    def pinned(self) -> Iterator[None]:
        """Every :meth:`run` inside uses one connection and one transaction, all or nothing.

        Each run's work is a savepoint of that transaction (``autocommit`` is ignored), and
        nothing is retried: the transaction commits when the block ends normally and is
        rolled back on any exception. For one caller at a time (``migrate``'s copy).
        """
        try:
            with self.pool.connection() as db, db.transaction():
                self._pinned = db
                try:
                    yield
                finally:
                    self._pinned = None
        except psycopg.OperationalError as error:
            raise unavailable(self.url, error) from None

    def run(
        self, work: Callable[[Connection], T], *, autocommit: bool = False, again: bool = True
    ) -> T:
        """``work(db)`` in a transaction (or, with ``autocommit``, as single statements).

        ``again=False`` for work that must not run twice when a connection is lost: if
        the loss came after its COMMIT reached the server, a second run would find its
        own rows (creating a survey, issuing tokens). Such work is UNAVAILABLE at once.
        """
        if self._pinned is not None:
            with self._pinned.transaction():
                return work(self._pinned)
        conflicts = 0
        stale_retried = False
        while True:
            try:
                with self.pool.connection(DOWN_POOL_TIMEOUT if self.down else None) as db:
                    if autocommit:
                        db.autocommit = True
                        try:
                            result = work(db)
                        finally:
                            if not db.closed:
                                db.autocommit = False
                    else:
                        with db.transaction():
                            result = work(db)
                self.down = False
                return result
            except (SerializationFailure, DeadlockDetected) as error:
                conflicts += 1
                if conflicts >= CONFLICT_ATTEMPTS:
                    raise unavailable(self.url, error) from None
                time.sleep(random.uniform(0, 0.01 * 2**conflicts))
            except psycopg.OperationalError as error:
                self.down = True
                self._check_pool()
                if isinstance(error, PoolTimeout) or stale_retried or not again:
                    raise unavailable(self.url, error) from None
                stale_retried = True
                _logger.warning(
                    "database connection failed; retrying once on a fresh connection",
                    extra={"db": redacted(self.url), "error": one_line(error)},
                )

    def stream(self, work: Callable[[Connection], Iterator[T]]) -> Generator[T, None, None]:
        """``work(db)``'s items, read in one ``REPEATABLE READ READ ONLY`` transaction.

        A pooled connection is held from the first item until the iterator is exhausted
        or closed (closing rolls the read-only transaction back and returns the
        connection). Every item comes from one snapshot, taken at the first query, so
        rows committed meanwhile are not seen. A lost database raises
        :class:`DatabaseUnavailable`; before the first item, a stale pooled connection is
        retried once on a fresh one, as :meth:`run` does for reads.
        """
        stale_retried = False
        started = False
        while True:
            try:
                with (
                    self.pool.connection(DOWN_POOL_TIMEOUT if self.down else None) as db,
                    db.transaction(),
                ):
                    db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                    for item in work(db):
                        started = True
                        self.down = False
                        yield item
                self.down = False
                return
            except psycopg.OperationalError as error:
                self.down = True
                self._check_pool()
                if isinstance(error, PoolTimeout) or stale_retried or started:
                    raise unavailable(self.url, error) from None
                stale_retried = True
                _logger.warning(
                    "database connection failed; retrying once on a fresh connection",
                    extra={"db": redacted(self.url), "error": one_line(error)},
                )

    def _check_pool(self) -> None:
        """Drop the pool's dead idle connections (it reconnects in the background)."""
        with contextlib.suppress(psycopg.Error):  # the pool may be closing: the caller
            self.pool.check()  # reports the first error
